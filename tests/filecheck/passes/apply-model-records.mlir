// RUN: %python -c "import sys; from lamina.tuning.testing import write_model_record; write_model_record(sys.argv[1], sys.argv[2], {'conv_channel_block': 8})" %s %t.jsonl
// RUN: lamina-opt %s -p 'apply-model-records{records="%t.jsonl"}' | filecheck %s
// RUN: lamina-opt %s -p 'apply-model-records{records="%t.jsonl"},plan-layouts' | filecheck %s --check-prefix=PLAN
// RUN: lamina-opt %s -p 'plan-layouts' | filecheck %s --check-prefix=DEFAULT
// RUN: echo '{"kernel": "%t", "scope": "graph"}' > %t.bad.jsonl
// RUN: not lamina-opt %s -p 'apply-model-records{records="%t.bad.jsonl"}' 2>&1 | filecheck %s --check-prefix=BAD

// A model with a record of scope "model" for this CPU gets the record's
// graph-level knobs as the module's `lamina.knobs`, which `plan-layouts`
// reads: with the recorded `conv_channel_block = 8` the convolution is
// blocked by 8 channels (NCHW8c) instead of one vector's worth. A malformed
// records file is an error naming the line.

// CHECK:      builtin.module attributes {{{.*}}lamina.knobs = {conv_channel_block = 8 : i64}}

// PLAN:       graph.conv2d {{.*}}data_layout = "NCHW8c"{{.*}} -> tensor<1x2x8x8x8xf32>

// DEFAULT-NOT: lamina.knobs
// DEFAULT:     graph.conv2d {{.*}}data_layout = "NCHW16c"{{.*}} -> tensor<1x1x8x8x16xf32>

// BAD: error: {{.*}}apply-model-records: {{.*}}.bad.jsonl:1: 'kernel' must be a 64-digit kernel key

builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @main(%x: tensor<1x16x8x8xf32>, %w: tensor<16x16x3x3xf32>) -> tensor<1x16x8x8xf32> {
    %y = graph.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x8x8xf32>
    graph.return %y : tensor<1x16x8x8xf32>
  }
}
