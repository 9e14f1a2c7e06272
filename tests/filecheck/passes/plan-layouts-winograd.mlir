// RUN: lamina-opt %s --split-input-file -p 'plan-layouts{block=8}' | filecheck %s
// RUN: lamina-opt %s --split-input-file -p 'plan-layouts{block=8 winograd=false}' | filecheck %s --check-prefix=OFF

// A 3x3 stride-1 convolution with a 14x14 output (the smallest Winograd
// pays for when the weights are a parameter, passes/plan_layouts.py) is
// computed by Winograd F(2x2, 3x3): plan-layouts records the choice on the
// blocked op, legalize builds it.
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

// Below 14x14 outputs (with the weights a parameter), with a stride, or
// where the user chose the direct algorithm, the convolution stays direct.
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

// -----

// Constant weights are transformed at compile time: Winograd at any size. As
// a parameter, weights whose transform (16*C*K elements) would not fit L2
// keep the direct kernel (here 16 * 256 * 256 * 4 bytes = 4 MiB).
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @sizes(%x: tensor<1x16x4x4xf32>, %y: tensor<1x256x14x14xf32>, %w: tensor<256x256x3x3xf32>) -> (tensor<1x16x4x4xf32>, tensor<1x256x14x14xf32>) {
    %c = graph.constant dense<1.0> : tensor<16x16x3x3xf32>
    %0 = graph.conv2d %x, %c {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x16x4x4xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x4x4xf32>
    %1 = graph.conv2d %y, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x256x14x14xf32>, tensor<256x256x3x3xf32>) -> tensor<1x256x14x14xf32>
    graph.return %0, %1 : tensor<1x16x4x4xf32>, tensor<1x256x14x14xf32>
  }
}

// CHECK-LABEL: graph.func @sizes
// CHECK:         graph.conv2d {{.*}}lamina.algorithm = "winograd"{{.*}} -> tensor<1x2x4x4x8xf32>
// CHECK:         graph.conv2d
// CHECK-NOT:       lamina.algorithm
// CHECK-SAME:      -> tensor<1x32x14x14x8xf32>
