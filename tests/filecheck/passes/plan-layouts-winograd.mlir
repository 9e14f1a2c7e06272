// RUN: lamina-opt %s --split-input-file -p 'plan-layouts{block=8}' | filecheck %s
// RUN: lamina-opt %s --split-input-file -p 'plan-layouts{block=8 winograd=false}' | filecheck %s --check-prefix=OFF

// A 3x3 stride-1 convolution with a 14x14 output (the smallest Winograd
// pays for, passes/plan_layouts.py) is computed by Winograd F(2x2, 3x3):
// plan-layouts records the choice on the blocked op, legalize builds it.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @wino(%x: tensor<1x16x14x14xf32>, %w: tensor<16x16x3x3xf32>) -> tensor<1x16x14x14xf32> {
    %0 = graph.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x16x14x14xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x14x14xf32>
    graph.return %0 : tensor<1x16x14x14xf32>
  }
}

// CHECK-LABEL: graph.func @wino
// CHECK:         graph.conv2d {{.*}}lamina.algorithm = "winograd"{{.*}}data_layout = "NCHW8c", kernel_layout = "OIHW8i8o"
// OFF-LABEL:   graph.func @wino
// OFF-NOT:       lamina.algorithm = "winograd"

// -----

// Below 14x14 outputs, with a stride, or where the user chose the direct
// algorithm, the convolution stays direct.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @direct(%x: tensor<1x16x12x12xf32>, %w: tensor<16x16x3x3xf32>) -> (tensor<1x16x12x12xf32>, tensor<1x16x16x16xf32>) {
    %0 = graph.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x16x12x12xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x12x12xf32>
    %1 = graph.conv2d %x, %w {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x16x12x12xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x6x6xf32>
    %2 = graph.conv2d %x, %w {padding = array<i64: 3, 3, 3, 3>, lamina.algorithm = "direct"} : (tensor<1x16x12x12xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x16x16xf32>
    graph.return %0, %2 : tensor<1x16x12x12xf32>, tensor<1x16x16x16xf32>
  }
}

// CHECK-LABEL: graph.func @direct
// CHECK-NOT:     lamina.algorithm = "winograd"
// CHECK:         graph.conv2d {{.*}}lamina.algorithm = "direct"
// CHECK-NOT:     lamina.algorithm = "winograd"
