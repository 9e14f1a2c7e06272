// RUN: lamina-opt %s -p 'plan-layouts{block=8}' --mlir-elide-elementsattrs-if-larger 64 | filecheck %s

// Grouped convolutions (1 < groups < channels) are blocked when their group
// width g divides the block or is a multiple of it. Blocks of whole groups
// (g = 2 here, 4 groups in one block of 8) read their own input block through
// a block-diagonal weight: input lane `(o floordiv g) * g mod 8 + j` of output
// channel o, zero between groups, hoisted to a constant. Groups of 16 are
// runs of two blocks: the standard `OIHW8i8o` weight of the per-group input
// channels (a parameter, transformed per call). A channel count that does not
// fill the last block (20 in groups of 4) pads it with a zero group. A narrow
// group whose weight is a parameter, and a width of 12 (neither), stay NCHW.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @whole_groups(%x: tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32> {
    %w = graph.constant dense<[[[[1.0]], [[2.0]]], [[[3.0]], [[4.0]]], [[[5.0]], [[6.0]]], [[[7.0]], [[8.0]]], [[[9.0]], [[10.0]]], [[[11.0]], [[12.0]]], [[[13.0]], [[14.0]]], [[[15.0]], [[16.0]]]]> : tensor<8x2x1x1xf32>
    %0 = graph.conv2d %x, %w {groups = 4 : i64} : (tensor<1x8x4x4xf32>, tensor<8x2x1x1xf32>) -> tensor<1x8x4x4xf32>
    %1 = graph.relu %0 : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
    graph.return %1 : tensor<1x8x4x4xf32>
  }
  graph.func @runs_of_blocks(%x: tensor<1x32x6x6xf32>, %w: tensor<32x16x3x3xf32>) -> tensor<1x32x3x3xf32> {
    %0 = graph.conv2d %x, %w {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, groups = 2 : i64} : (tensor<1x32x6x6xf32>, tensor<32x16x3x3xf32>) -> tensor<1x32x3x3xf32>
    graph.return %0 : tensor<1x32x3x3xf32>
  }
  graph.func @padded(%x: tensor<1x20x4x4xf32>) -> tensor<1x20x4x4xf32> {
    %w = graph.constant dense<0.5> : tensor<20x4x3x3xf32>
    %0 = graph.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>, groups = 5 : i64} : (tensor<1x20x4x4xf32>, tensor<20x4x3x3xf32>) -> tensor<1x20x4x4xf32>
    graph.return %0 : tensor<1x20x4x4xf32>
  }
  graph.func @narrow_parameter(%x: tensor<1x16x4x4xf32>, %w: tensor<16x4x3x3xf32>) -> tensor<1x16x4x4xf32> {
    %0 = graph.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>, groups = 4 : i64} : (tensor<1x16x4x4xf32>, tensor<16x4x3x3xf32>) -> tensor<1x16x4x4xf32>
    graph.return %0 : tensor<1x16x4x4xf32>
  }
  graph.func @width_12(%x: tensor<1x24x4x4xf32>) -> tensor<1x24x4x4xf32> {
    %w = graph.constant dense<0.5> : tensor<24x12x3x3xf32>
    %0 = graph.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>, groups = 2 : i64} : (tensor<1x24x4x4xf32>, tensor<24x12x3x3xf32>) -> tensor<1x24x4x4xf32>
    graph.return %0 : tensor<1x24x4x4xf32>
  }
}

// CHECK-LABEL: graph.func @whole_groups
// CHECK:         %[[X:.*]] = graph.layout_transform %x {{.*}} -> tensor<1x1x4x4x8xf32>
// CHECK-NEXT:    %[[W:.*]] = graph.constant dense<{{\[\[\[\[\[\[}}1.000000e+00, 3.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00], [2.000000e+00, 4.000000e+00, 0.000000e+00, {{.*}}], [0.000000e+00, 0.000000e+00, 5.000000e+00, 7.000000e+00, {{.*}}], {{.*}}, [0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 1.400000e+01, 1.600000e+01]]]]]]> : tensor<1x1x1x1x8x8xf32>
// CHECK-NEXT:    %[[C:.*]] = graph.conv2d %[[X]], %[[W]] {{{.*}}groups = 4 : i64, data_layout = "NCHW8c", kernel_layout = "OIHW8i8o"} : (tensor<1x1x4x4x8xf32>, tensor<1x1x1x1x8x8xf32>) -> tensor<1x1x4x4x8xf32>
// CHECK-NEXT:    graph.relu %[[C]]

// CHECK-LABEL: graph.func @runs_of_blocks
// CHECK:         %[[W:.*]] = graph.layout_transform %w {constraint = #lamina.constraint<affine_map<(d0, d1, d2, d3) -> ((d0 floordiv 8), (d1 floordiv 8), d2, d3, (d1 mod 8), (d0 mod 8))>, 0.000000e+00 : f32>} : (tensor<32x16x3x3xf32>) -> tensor<4x2x3x3x8x8xf32>
// CHECK-NEXT:    graph.conv2d %{{.*}}, %[[W]] {{{.*}}groups = 2 : i64, data_layout = "NCHW8c", kernel_layout = "OIHW8i8o"} : (tensor<1x4x6x6x8xf32>, tensor<4x2x3x3x8x8xf32>) -> tensor<1x4x3x3x8xf32>

// CHECK-LABEL: graph.func @padded
// CHECK:         graph.conv2d {{.*}}groups = 5 : i64, data_layout = "NCHW8c", kernel_layout = "OIHW8i8o"} : (tensor<1x3x4x4x8xf32>, tensor<3x1x3x3x8x8xf32>) -> tensor<1x3x4x4x8xf32>
// CHECK:         graph.layout_transform {{.*}}crop} : (tensor<1x3x4x4x8xf32>) -> tensor<1x20x4x4xf32>

// CHECK-LABEL: graph.func @narrow_parameter
// CHECK-NEXT:    graph.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>, groups = 4 : i64} : (tensor<1x16x4x4xf32>, tensor<16x4x3x3xf32>) -> tensor<1x16x4x4xf32>

// CHECK-LABEL: graph.func @width_12
// CHECK-NOT:     layout_transform
// CHECK:         graph.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>, groups = 2 : i64} : (tensor<1x24x4x4xf32>, tensor<24x12x3x3xf32>) -> tensor<1x24x4x4xf32>
