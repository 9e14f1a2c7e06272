// RUN: lamina-opt %s | lamina-opt | filecheck %s
// RUN: lamina-opt %s --print-op-generic | lamina-opt | filecheck %s

// layout_transform with padding (3 channels in a block of 8), its cropping
// inverse, a constraint with a recorded logical shape, and a blocked conv2d.

// CHECK-LABEL: graph.func @layouts(%x: tensor<1x3x4x4xf32>, %w: tensor<1x1x3x3x8x8xf32>) -> (tensor<1x3x2x2xf32> {lamina.constraint = #lamina.constraint<affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, #lamina.undef, logical = array<i64: 1, 3, 2, 2>>}) {
// CHECK-NEXT:    %0 = graph.layout_transform %x {constraint = #lamina.constraint<affine_map<(d0, d1, d2, d3) -> (d0, (d1 floordiv 8), d2, d3, (d1 mod 8))>, 0.000000e+00 : f32>} : (tensor<1x3x4x4xf32>) -> tensor<1x1x4x4x8xf32>
// CHECK-NEXT:    %1 = graph.conv2d %0, %w {data_layout = "NCHW8c", kernel_layout = "OIHW8i8o"} : (tensor<1x1x4x4x8xf32>, tensor<1x1x3x3x8x8xf32>) -> tensor<1x1x2x2x8xf32>
// CHECK-NEXT:    %2 = graph.layout_transform %1 {constraint = #lamina.constraint<affine_map<(d0, d1, d2, d3, d4) -> (d0, ((d1 * 8) + d4), d2, d3)>, #lamina.undef>, crop} : (tensor<1x1x2x2x8xf32>) -> tensor<1x3x2x2xf32>
// CHECK-NEXT:    graph.return %2 : tensor<1x3x2x2xf32>
graph.func @layouts(%x: tensor<1x3x4x4xf32>, %w: tensor<1x1x3x3x8x8xf32>) -> (tensor<1x3x2x2xf32> {lamina.constraint = #lamina.constraint<affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, #lamina.undef, logical = array<i64: 1, 3, 2, 2>>}) {
  %0 = graph.layout_transform %x {constraint = #lamina.constraint<affine_map<(d0, d1, d2, d3) -> (d0, d1 floordiv 8, d2, d3, d1 mod 8)>, 0.0 : f32>} : (tensor<1x3x4x4xf32>) -> tensor<1x1x4x4x8xf32>
  %1 = graph.conv2d %0, %w {data_layout = "NCHW8c", kernel_layout = "OIHW8i8o"} : (tensor<1x1x4x4x8xf32>, tensor<1x1x3x3x8x8xf32>) -> tensor<1x1x2x2x8xf32>
  %2 = graph.layout_transform %1 {constraint = #lamina.constraint<affine_map<(d0, d1, d2, d3, d4) -> (d0, d1 * 8 + d4, d2, d3)>, #lamina.undef>, crop} : (tensor<1x1x2x2x8xf32>) -> tensor<1x3x2x2xf32>
  graph.return %2 : tensor<1x3x2x2xf32>
}

// The algorithm a blocked conv2d is computed by (docs/performance.md).
// CHECK-LABEL: graph.func @winograd
// CHECK-NEXT:    %0 = graph.conv2d %x, %w {lamina.algorithm = "winograd", padding = array<i64: 1, 1, 1, 1>, data_layout = "NCHW8c", kernel_layout = "OIHW8i8o"} : (tensor<1x1x4x4x8xf32>, tensor<1x1x3x3x8x8xf32>) -> tensor<1x1x4x4x8xf32>
graph.func @winograd(%x: tensor<1x1x4x4x8xf32>, %w: tensor<1x1x3x3x8x8xf32>) -> tensor<1x1x4x4x8xf32> {
  %0 = graph.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>, data_layout = "NCHW8c", kernel_layout = "OIHW8i8o", lamina.algorithm = "winograd"} : (tensor<1x1x4x4x8xf32>, tensor<1x1x3x3x8x8xf32>) -> tensor<1x1x4x4x8xf32>
  graph.return %0 : tensor<1x1x4x4x8xf32>
}

// Padding before the data: a positive offset in the forward map (one slot
// before 14 elements, one after, in tiles of 4), the inverse's negative offset
// with `crop`, and a symmetric halo (a plain result declared longer than its
// image pads after the data too).
// CHECK-LABEL: graph.func @left_padding
// CHECK-NEXT:    %0 = graph.layout_transform %x {constraint = #lamina.constraint<affine_map<(d0) -> (((d0 + 1) floordiv 4), ((d0 + 1) mod 4))>, 0.000000e+00 : f32>} : (tensor<14xf32>) -> tensor<4x4xf32>
// CHECK-NEXT:    %1 = graph.layout_transform %0 {constraint = #lamina.constraint<affine_map<(d0, d1) -> ((((d0 * 4) + d1) + -1))>, #lamina.undef>, crop} : (tensor<4x4xf32>) -> tensor<14xf32>
// CHECK-NEXT:    %2 = graph.layout_transform %h {constraint = #lamina.constraint<affine_map<(d0, d1) -> ((d0 + 1), (d1 + 2))>, #lamina.undef>} : (tensor<4x5xf32>) -> tensor<6x9xf32>
// CHECK-NEXT:    %3 = graph.layout_transform %2 {constraint = #lamina.constraint<affine_map<(d0, d1) -> ((d0 + -1), (d1 + -2))>, #lamina.undef>, crop} : (tensor<6x9xf32>) -> tensor<4x5xf32>
graph.func @left_padding(%x: tensor<14xf32>, %h: tensor<4x5xf32>) -> (tensor<14xf32>, tensor<4x5xf32>) {
  %0 = graph.layout_transform %x {constraint = #lamina.constraint<affine_map<(d0) -> ((d0 + 1) floordiv 4, (d0 + 1) mod 4)>, 0.0 : f32>} : (tensor<14xf32>) -> tensor<4x4xf32>
  %1 = graph.layout_transform %0 {constraint = #lamina.constraint<affine_map<(d0, d1) -> (d0 * 4 + d1 - 1)>, #lamina.undef>, crop} : (tensor<4x4xf32>) -> tensor<14xf32>
  %2 = graph.layout_transform %h {constraint = #lamina.constraint<affine_map<(d0, d1) -> (d0 + 1, d1 + 2)>, #lamina.undef>} : (tensor<4x5xf32>) -> tensor<6x9xf32>
  %3 = graph.layout_transform %2 {constraint = #lamina.constraint<affine_map<(d0, d1) -> (d0 - 1, d1 - 2)>, #lamina.undef>, crop} : (tensor<6x9xf32>) -> tensor<4x5xf32>
  graph.return %1, %3 : tensor<14xf32>, tensor<4x5xf32>
}

// Blocked grouped conv2ds (`OIHW8i8o`, groups > 1): blocks holding whole
// groups of 4 (one input block per output block, 6 groups in 3 blocks), and
// groups of 16 (runs of 2 input blocks per output block, 2 groups).
// CHECK-LABEL: graph.func @blocked_grouped
// CHECK-NEXT:    %0 = graph.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>, groups = 6 : i64, data_layout = "NCHW8c", kernel_layout = "OIHW8i8o"} : (tensor<1x3x8x8x8xf32>, tensor<3x1x3x3x8x8xf32>) -> tensor<1x3x8x8x8xf32>
// CHECK-NEXT:    %1 = graph.conv2d %y, %v {strides = array<i64: 2, 2>, groups = 2 : i64, data_layout = "NCHW8c", kernel_layout = "OIHW8i8o"} : (tensor<1x4x8x8x8xf32>, tensor<4x2x1x1x8x8xf32>) -> tensor<1x4x4x4x8xf32>
graph.func @blocked_grouped(%x: tensor<1x3x8x8x8xf32>, %w: tensor<3x1x3x3x8x8xf32>, %y: tensor<1x4x8x8x8xf32>, %v: tensor<4x2x1x1x8x8xf32>) -> (tensor<1x3x8x8x8xf32>, tensor<1x4x4x4x8xf32>) {
  %0 = graph.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>, groups = 6 : i64, data_layout = "NCHW8c", kernel_layout = "OIHW8i8o"} : (tensor<1x3x8x8x8xf32>, tensor<3x1x3x3x8x8xf32>) -> tensor<1x3x8x8x8xf32>
  %1 = graph.conv2d %y, %v {strides = array<i64: 2, 2>, groups = 2 : i64, data_layout = "NCHW8c", kernel_layout = "OIHW8i8o"} : (tensor<1x4x8x8x8xf32>, tensor<4x2x1x1x8x8xf32>) -> tensor<1x4x4x4x8xf32>
  graph.return %0, %1 : tensor<1x3x8x8x8xf32>, tensor<1x4x4x4x8xf32>
}

// A blocked depthwise conv2d (one filter per channel, `OIHW1i8o`; groups is
// the logical channel count), and pools on channel-blocked data (the block
// dimension is carried through).
// CHECK-LABEL: graph.func @blocked_depthwise
// CHECK-NEXT:    %0 = graph.conv2d %x, %w {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, groups = 12 : i64, data_layout = "NCHW8c", kernel_layout = "OIHW1i8o"} : (tensor<1x2x8x8x8xf32>, tensor<2x1x3x3x1x8xf32>) -> tensor<1x2x4x4x8xf32>
// CHECK-NEXT:    %1 = graph.max_pool2d %0 {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x2x4x4x8xf32>) -> tensor<1x2x2x2x8xf32>
// CHECK-NEXT:    %2 = graph.avg_pool2d %1 {kernel = array<i64: 2, 2>} : (tensor<1x2x2x2x8xf32>) -> tensor<1x2x1x1x8xf32>
// CHECK-NEXT:    %3 = graph.global_avg_pool2d %0 : (tensor<1x2x4x4x8xf32>) -> tensor<1x2x1x1x8xf32>
graph.func @blocked_depthwise(%x: tensor<1x2x8x8x8xf32>, %w: tensor<2x1x3x3x1x8xf32>) -> tensor<1x2x1x1x8xf32> {
  %0 = graph.conv2d %x, %w {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, groups = 12 : i64, data_layout = "NCHW8c", kernel_layout = "OIHW1i8o"} : (tensor<1x2x8x8x8xf32>, tensor<2x1x3x3x1x8xf32>) -> tensor<1x2x4x4x8xf32>
  %1 = graph.max_pool2d %0 {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x2x4x4x8xf32>) -> tensor<1x2x2x2x8xf32>
  %2 = graph.avg_pool2d %1 {kernel = array<i64: 2, 2>} : (tensor<1x2x2x2x8xf32>) -> tensor<1x2x1x1x8xf32>
  %3 = graph.global_avg_pool2d %0 : (tensor<1x2x4x4x8xf32>) -> tensor<1x2x1x1x8xf32>
  graph.return %3 : tensor<1x2x1x1x8xf32>
}
