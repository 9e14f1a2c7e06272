// RUN: lamina-opt %s | lamina-opt | filecheck %s
// RUN: lamina-opt %s --print-op-generic | lamina-opt | filecheck %s

// matmul, conv2d, pooling, softmax, layer_norm.

// CHECK-LABEL: graph.func @matmul(%a: tensor<4x8xf32>, %b: tensor<8x5xf32>, %v: tensor<8xf32>, %ba: tensor<3x1x4x8xf32>, %bb: tensor<2x8x5xf32>) -> tensor<3x2x4x5xf32> {
// CHECK-NEXT:  %0 = graph.matmul %a, %b : (tensor<4x8xf32>, tensor<8x5xf32>) -> tensor<4x5xf32>
// CHECK-NEXT:  %1 = graph.matmul %v, %b : (tensor<8xf32>, tensor<8x5xf32>) -> tensor<5xf32>
// CHECK-NEXT:  %2 = graph.matmul %a, %v : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4xf32>
// CHECK-NEXT:  %3 = graph.matmul %v, %v : (tensor<8xf32>, tensor<8xf32>) -> tensor<f32>
// CHECK-NEXT:  %4 = graph.matmul %ba, %bb : (tensor<3x1x4x8xf32>, tensor<2x8x5xf32>) -> tensor<3x2x4x5xf32>
// CHECK-NEXT:  %5 = graph.matmul %v, %bb : (tensor<8xf32>, tensor<2x8x5xf32>) -> tensor<2x5xf32>
// CHECK-NEXT:  graph.return %4 : tensor<3x2x4x5xf32>
graph.func @matmul(%a: tensor<4x8xf32>, %b: tensor<8x5xf32>, %v: tensor<8xf32>, %ba: tensor<3x1x4x8xf32>, %bb: tensor<2x8x5xf32>) -> tensor<3x2x4x5xf32> {
  %0 = graph.matmul %a, %b : (tensor<4x8xf32>, tensor<8x5xf32>) -> tensor<4x5xf32>
  %1 = graph.matmul %v, %b : (tensor<8xf32>, tensor<8x5xf32>) -> tensor<5xf32>
  %2 = graph.matmul %a, %v : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4xf32>
  %3 = graph.matmul %v, %v : (tensor<8xf32>, tensor<8xf32>) -> tensor<f32>
  %4 = graph.matmul %ba, %bb : (tensor<3x1x4x8xf32>, tensor<2x8x5xf32>) -> tensor<3x2x4x5xf32>
  %5 = graph.matmul %v, %bb : (tensor<8xf32>, tensor<2x8x5xf32>) -> tensor<2x5xf32>
  graph.return %4 : tensor<3x2x4x5xf32>
}

// CHECK-LABEL: graph.func @conv2d(%x: tensor<1x3x32x32xf32>, %w: tensor<16x3x3x3xf32>, %wg: tensor<16x4x3x3xf32>, %wd: tensor<16x1x3x3xf32>) -> tensor<1x16x16x16xf32> {
// CHECK-NEXT:  %0 = graph.conv2d %x, %w : (tensor<1x3x32x32xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x30x30xf32>
// CHECK-NEXT:  %1 = graph.conv2d %x, %w {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x3x32x32xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x16x16xf32>
// CHECK-NEXT:  %2 = graph.conv2d %1, %wg {groups = 4 : i64, dilation = array<i64: 2, 2>, padding = array<i64: 2, 2, 2, 2>} : (tensor<1x16x16x16xf32>, tensor<16x4x3x3xf32>) -> tensor<1x16x16x16xf32>
// CHECK-NEXT:  %3 = graph.conv2d %2, %wd {groups = 16 : i64, padding = array<i64: 0, 1, 2, 1>, strides = array<i64: 1, 2>} : (tensor<1x16x16x16xf32>, tensor<16x1x3x3xf32>) -> tensor<1x16x16x8xf32>
// CHECK-NEXT:  graph.return %2 : tensor<1x16x16x16xf32>
graph.func @conv2d(%x: tensor<1x3x32x32xf32>, %w: tensor<16x3x3x3xf32>, %wg: tensor<16x4x3x3xf32>, %wd: tensor<16x1x3x3xf32>) -> tensor<1x16x16x16xf32> {
  %0 = graph.conv2d %x, %w : (tensor<1x3x32x32xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x30x30xf32>
  %1 = graph.conv2d %x, %w {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x3x32x32xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x16x16xf32>
  %2 = graph.conv2d %1, %wg {groups = 4 : i64, dilation = array<i64: 2, 2>, padding = array<i64: 2, 2, 2, 2>} : (tensor<1x16x16x16xf32>, tensor<16x4x3x3xf32>) -> tensor<1x16x16x16xf32>
  %3 = graph.conv2d %2, %wd {groups = 16 : i64, padding = array<i64: 0, 1, 2, 1>, strides = array<i64: 1, 2>} : (tensor<1x16x16x16xf32>, tensor<16x1x3x3xf32>) -> tensor<1x16x16x8xf32>
  graph.return %2 : tensor<1x16x16x16xf32>
}

// CHECK-LABEL: graph.func @conv2d_layouts(%x: tensor<2x9x9x4xf32>, %w: tensor<3x3x4x8xf32>) -> tensor<2x4x4x8xf32> {
// CHECK-NEXT:  %0 = graph.conv2d %x, %w {data_layout = "NHWC", kernel_layout = "HWIO", strides = array<i64: 2, 2>} : (tensor<2x9x9x4xf32>, tensor<3x3x4x8xf32>) -> tensor<2x4x4x8xf32>
// CHECK-NEXT:  graph.return %0 : tensor<2x4x4x8xf32>
graph.func @conv2d_layouts(%x: tensor<2x9x9x4xf32>, %w: tensor<3x3x4x8xf32>) -> tensor<2x4x4x8xf32> {
  %0 = graph.conv2d %x, %w {data_layout = "NHWC", kernel_layout = "HWIO", strides = array<i64: 2, 2>} : (tensor<2x9x9x4xf32>, tensor<3x3x4x8xf32>) -> tensor<2x4x4x8xf32>
  graph.return %0 : tensor<2x4x4x8xf32>
}

// CHECK-LABEL: graph.func @pooling(%x: tensor<1x8x15x15xf32>) -> tensor<1x8x1x1xf32> {
// CHECK-NEXT:  %0 = graph.max_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x8x15x15xf32>) -> tensor<1x8x8x8xf32>
// CHECK-NEXT:  %1 = graph.avg_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x8x15x15xf32>) -> tensor<1x8x7x7xf32>
// CHECK-NEXT:  %2 = graph.avg_pool2d %x {kernel = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x8x15x15xf32>) -> tensor<1x8x15x15xf32>
// CHECK-NEXT:  %3 = graph.max_pool2d %x {kernel = array<i64: 2, 3>} : (tensor<1x8x15x15xf32>) -> tensor<1x8x14x13xf32>
// CHECK-NEXT:  %4 = graph.global_avg_pool2d %0 : (tensor<1x8x8x8xf32>) -> tensor<1x8x1x1xf32>
// CHECK-NEXT:  graph.return %4 : tensor<1x8x1x1xf32>
graph.func @pooling(%x: tensor<1x8x15x15xf32>) -> tensor<1x8x1x1xf32> {
  %0 = graph.max_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x8x15x15xf32>) -> tensor<1x8x8x8xf32>
  %1 = graph.avg_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x8x15x15xf32>) -> tensor<1x8x7x7xf32>
  %2 = graph.avg_pool2d %x {kernel = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x8x15x15xf32>) -> tensor<1x8x15x15xf32>
  %3 = graph.max_pool2d %x {kernel = array<i64: 2, 3>} : (tensor<1x8x15x15xf32>) -> tensor<1x8x14x13xf32>
  %4 = graph.global_avg_pool2d %0 : (tensor<1x8x8x8xf32>) -> tensor<1x8x1x1xf32>
  graph.return %4 : tensor<1x8x1x1xf32>
}

// CHECK-LABEL: graph.func @normalization(%x: tensor<2x4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>, %g2: tensor<4x8xf32>, %b2: tensor<4x8xf32>) -> tensor<2x4x8xf32> {
// CHECK-NEXT:  %0 = graph.softmax %x {axis = -1 : i64} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT:  %1 = graph.softmax %0 {axis = 1 : i64} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT:  %2 = graph.softmax %1 : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT:  %3 = graph.layer_norm %2, %g, %b {axis = -1 : i64, epsilon = 1.000000e-05 : f32} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT:  %4 = graph.layer_norm %3, %g2, %b2 {axis = 1 : i64} : (tensor<2x4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT:  %5 = graph.layer_norm %4, %g, %b : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT:  graph.return %5 : tensor<2x4x8xf32>
graph.func @normalization(%x: tensor<2x4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>, %g2: tensor<4x8xf32>, %b2: tensor<4x8xf32>) -> tensor<2x4x8xf32> {
  %0 = graph.softmax %x {axis = -1 : i64} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %1 = graph.softmax %0 {axis = 1 : i64} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %2 = graph.softmax %1 : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %3 = graph.layer_norm %2, %g, %b {axis = -1 : i64, epsilon = 1.000000e-05 : f32} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %4 = graph.layer_norm %3, %g2, %b2 {axis = 1 : i64} : (tensor<2x4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  %5 = graph.layer_norm %4, %g, %b : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  graph.return %5 : tensor<2x4x8xf32>
}
