// RUN: %python -c "import sys; from lamina.tuning.testing import write_model_record; write_model_record(sys.argv[1], sys.argv[2], {'conv2d#0': {'conv_channel_block': 8}, 'conv2d#1': {'conv_winograd': 0}})" %s %t.jsonl
// RUN: lamina-opt %s -p 'apply-model-records{records="%t.jsonl"}' | filecheck %s
// RUN: lamina-opt %s -p 'apply-model-records{records="%t.jsonl"},plan-layouts' | filecheck %s --check-prefix=PLAN
// RUN: lamina-opt %s -p 'plan-layouts' | filecheck %s --check-prefix=DEFAULT

// A model record's per-convolution knobs (`"conv2d#N": {...}`, N counting the
// model's convolutions in order) go on that convolution as its own
// `lamina.knobs`, which `plan-layouts` reads there over the module's: the
// first convolution is blocked by 8 channels, the second (3x3, stride 1,
// constant weights: Winograd by default) keeps the direct kernel. Without
// the record both are blocked by one vector's worth and both use Winograd.

// CHECK:       graph.conv2d {{.*}}lamina.knobs = {conv_channel_block = 8 : i64}
// CHECK:       graph.conv2d {{.*}}lamina.knobs = {conv_winograd = 0 : i64}
// CHECK-NOT:   builtin.module attributes {{{.*}}lamina.knobs

// PLAN:        graph.conv2d {{.*}}lamina.algorithm = "winograd"{{.*}}data_layout = "NCHW8c"{{.*}} -> tensor<1x2x8x8x8xf32>
// PLAN:        graph.conv2d
// PLAN-NOT:      lamina.algorithm
// PLAN-SAME:     data_layout = "NCHW16c"{{.*}} -> tensor<1x1x8x8x16xf32>

// DEFAULT:     graph.conv2d {{.*}}lamina.algorithm = "winograd"{{.*}}data_layout = "NCHW16c"{{.*}} -> tensor<1x1x8x8x16xf32>
// DEFAULT:     graph.conv2d {{.*}}lamina.algorithm = "winograd"{{.*}}data_layout = "NCHW16c"{{.*}} -> tensor<1x1x8x8x16xf32>

builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @main(%x: tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32> {
    %w0 = graph.constant dense<0.5> : tensor<16x16x3x3xf32>
    %w1 = graph.constant dense<0.25> : tensor<16x16x3x3xf32>
    %y = graph.conv2d %x, %w0 {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x8x8xf32>
    %z = graph.conv2d %y, %w1 {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x8x8xf32>
    graph.return %z : tensor<1x16x8x8xf32>
  }
}
