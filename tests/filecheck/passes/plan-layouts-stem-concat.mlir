// RUN: lamina-opt %s -p plan-layouts | filecheck %s

// DenseNet's head (8 lanes from the module's cpu target options; every image
// counts as large for a pointwise convolution, `conv_nchw_pointwise_min_pixels`):
// stem -> bias -> relu -> max pool -> concatenations of whole channel blocks
// (the first dense layer's of the pool alone, the second's of the pool and the
// first layer's output) -> batch norm (mul, add) -> relu -> 1x1 convolution.
// The stem reads its input as `NCHW1c` and is produced blocked, the pool and the
// concatenations stay blocked, and the first 1x1 convolution, whose input comes
// from the stem's blocked result through seven ops, is blocked too: no layout
// transform of an activation anywhere.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>, lamina.targets = {cpu = #lamina.target<"cpu", {vector_bits = 256 : i64, conv_nchw_pointwise_min_pixels = 16 : i64}>}} {
  graph.func @dense_head(%x: tensor<1x3x16x16xf32>, %w0: tensor<8x3x7x7xf32>, %b0: tensor<8x1x1xf32>, %s1: tensor<8x1x1xf32>, %t1: tensor<8x1x1xf32>, %w1: tensor<16x8x1x1xf32>, %w2: tensor<8x16x3x3xf32>, %s2: tensor<16x1x1xf32>, %t2: tensor<16x1x1xf32>, %w3: tensor<16x16x1x1xf32>) -> tensor<1x16x4x4xf32> {
    %0 = graph.conv2d %x, %w0 {padding = array<i64: 3, 3, 3, 3>, strides = array<i64: 2, 2>} : (tensor<1x3x16x16xf32>, tensor<8x3x7x7xf32>) -> tensor<1x8x8x8xf32>
    %1 = graph.add %0, %b0 : (tensor<1x8x8x8xf32>, tensor<8x1x1xf32>) -> tensor<1x8x8x8xf32>
    %2 = graph.relu %1 : (tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
    %3 = graph.max_pool2d %2 {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x8x8x8xf32>) -> tensor<1x8x4x4xf32>
    %4 = graph.concat %3 {axis = 1 : i64} : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
    %5 = graph.mul %4, %s1 : (tensor<1x8x4x4xf32>, tensor<8x1x1xf32>) -> tensor<1x8x4x4xf32>
    %6 = graph.add %5, %t1 : (tensor<1x8x4x4xf32>, tensor<8x1x1xf32>) -> tensor<1x8x4x4xf32>
    %7 = graph.relu %6 : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
    %8 = graph.conv2d %7, %w1 : (tensor<1x8x4x4xf32>, tensor<16x8x1x1xf32>) -> tensor<1x16x4x4xf32>
    %9 = graph.conv2d %8, %w2 {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x16x4x4xf32>, tensor<8x16x3x3xf32>) -> tensor<1x8x4x4xf32>
    %10 = graph.concat %3, %9 {axis = 1 : i64} : (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x16x4x4xf32>
    %11 = graph.mul %10, %s2 : (tensor<1x16x4x4xf32>, tensor<16x1x1xf32>) -> tensor<1x16x4x4xf32>
    %12 = graph.add %11, %t2 : (tensor<1x16x4x4xf32>, tensor<16x1x1xf32>) -> tensor<1x16x4x4xf32>
    %13 = graph.relu %12 : (tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
    %14 = graph.conv2d %13, %w3 : (tensor<1x16x4x4xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x4x4xf32>
    graph.return %14 : tensor<1x16x4x4xf32>
  }

  // A concatenation that is not of whole blocks (4 + 8 channels) would not stay
  // blocked: the stem stays NCHW, as before.
  graph.func @partial_block_concat(%x: tensor<1x3x16x16xf32>, %w0: tensor<8x3x7x7xf32>, %y: tensor<1x4x4x4xf32>, %w1: tensor<16x12x1x1xf32>) -> tensor<1x16x4x4xf32> {
    %0 = graph.conv2d %x, %w0 {padding = array<i64: 3, 3, 3, 3>, strides = array<i64: 2, 2>} : (tensor<1x3x16x16xf32>, tensor<8x3x7x7xf32>) -> tensor<1x8x8x8xf32>
    %1 = graph.max_pool2d %0 {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x8x8x8xf32>) -> tensor<1x8x4x4xf32>
    %2 = graph.concat %1, %y {axis = 1 : i64} : (tensor<1x8x4x4xf32>, tensor<1x4x4x4xf32>) -> tensor<1x12x4x4xf32>
    %3 = graph.conv2d %2, %w1 : (tensor<1x12x4x4xf32>, tensor<16x12x1x1xf32>) -> tensor<1x16x4x4xf32>
    graph.return %3 : tensor<1x16x4x4xf32>
  }
}

// CHECK-LABEL: graph.func @dense_head
// CHECK:         graph.reshape %x {{.*}}: (tensor<1x3x16x16xf32>) -> tensor<1x3x16x16x1xf32>
// CHECK:         %[[STEM:.*]] = graph.conv2d {{.*}}data_layout = "NCHW1c"{{.*}} -> tensor<1x1x8x8x8xf32>
// CHECK-NOT:     tensor<1x8x8x8xf32>
// CHECK:         %[[POOL:.*]] = graph.max_pool2d {{.*}} : (tensor<1x1x8x8x8xf32>) -> tensor<1x1x4x4x8xf32>
// CHECK-NOT:     tensor<1x8x4x4xf32>
// CHECK:         graph.concat %[[POOL]] {{.*}} : (tensor<1x1x4x4x8xf32>) -> tensor<1x1x4x4x8xf32>
// CHECK-NOT:     tensor<1x8x4x4xf32>
// CHECK:         graph.conv2d {{.*}}data_layout = "NCHW8c"{{.*}} : (tensor<1x1x4x4x8xf32>, tensor<2x1x1x1x8x8xf32>) -> tensor<1x2x4x4x8xf32>
// CHECK-NOT:     tensor<1x16x4x4xf32>
// CHECK:         graph.concat %[[POOL]], {{.*}} : (tensor<1x1x4x4x8xf32>, tensor<1x1x4x4x8xf32>) -> tensor<1x2x4x4x8xf32>
// CHECK-NOT:     tensor<1x16x4x4xf32>
// CHECK:         %[[LAST:.*]] = graph.conv2d {{.*}}data_layout = "NCHW8c"{{.*}} -> tensor<1x2x4x4x8xf32>
// CHECK-NEXT:    %[[OUT:.*]] = graph.layout_transform %[[LAST]] {{.*}} -> tensor<1x16x4x4xf32>
// CHECK-NEXT:    graph.return %[[OUT]]

// CHECK-LABEL: graph.func @partial_block_concat
// CHECK-NEXT:    graph.conv2d %x, %w0 {{.*}} -> tensor<1x8x8x8xf32>
// CHECK-NEXT:    graph.max_pool2d {{.*}} -> tensor<1x8x4x4xf32>
