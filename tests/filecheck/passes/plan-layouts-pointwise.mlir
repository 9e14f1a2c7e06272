// RUN: lamina-opt %s -p plan-layouts | filecheck %s

// The target's policy (8 lanes, from the module's cpu target options): a
// pointwise convolution on an NCHW parameter stays NCHW (a matrix product
// that `schedule` blocks over output channels, no transform); one after a
// blocked convolution is blocked too (its input is blocked already). The
// image counts as large (`conv_nchw_pointwise_min_pixels`; smaller ones are
// blocked: plan-layouts-networks.mlir).
builtin.module attributes {lamina.phase = #lamina.phase<optimization>, lamina.targets = {cpu = #lamina.target<"cpu", {vector_bits = 256 : i64, conv_nchw_pointwise_min_pixels = 16 : i64}>}} {
  graph.func @pointwise(%x: tensor<1x8x4x4xf32>, %w1: tensor<8x8x1x1xf32>, %w2: tensor<8x8x3x3xf32>, %w3: tensor<8x8x1x1xf32>) -> tensor<1x8x4x4xf32> {
    %0 = graph.conv2d %x, %w1 : (tensor<1x8x4x4xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x4x4xf32>
    %1 = graph.conv2d %0, %w2 {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x8x4x4xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x4x4xf32>
    %2 = graph.relu %1 : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
    %3 = graph.conv2d %2, %w3 : (tensor<1x8x4x4xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x4x4xf32>
    graph.return %3 : tensor<1x8x4x4xf32>
  }
}

// CHECK-LABEL: graph.func @pointwise
// CHECK-NEXT:    %[[P:.*]] = graph.conv2d %x, %w1 : (tensor<1x8x4x4xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x4x4xf32>
// CHECK:         graph.conv2d {{.*}}data_layout = "NCHW8c"{{.*}} -> tensor<1x1x4x4x8xf32>
// CHECK:         graph.relu
// CHECK:         graph.conv2d {{.*}}data_layout = "NCHW8c"{{.*}} : (tensor<1x1x4x4x8xf32>, tensor<1x1x1x1x8x8xf32>) -> tensor<1x1x4x4x8xf32>
