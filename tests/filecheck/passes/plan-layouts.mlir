// RUN: lamina-opt %s --split-input-file -p 'plan-layouts{block=8}' | filecheck %s
// RUN: lamina-opt %s --split-input-file -p 'plan-layouts{block=8},plan-layouts{block=8}' | filecheck %s
// RUN: lamina-opt %s --split-input-file -p 'plan-layouts{enable=false}' | filecheck %s --check-prefix=OFF

// conv -> bias -> relu -> conv stays blocked (NCHW8c): one transform in (data
// padded from 3 to 8 channels with 0), constant weights and bias hoisted into
// blocked constants, the elementwise ops computed on the blocked tensors, one
// cropping transform out. Each blocked op records the constraint it
// guarantees, with its logical shape.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @chain(%x: tensor<1x3x6x6xf32>) -> tensor<1x12x4x4xf32> {
    %w1 = graph.constant dense<0.5> : tensor<12x3x3x3xf32>
    %b1 = graph.constant dense<0.25> : tensor<1x12x1x1xf32>
    %w2 = graph.constant dense<1.0> : tensor<12x12x3x3xf32>
    %0 = graph.conv2d %x, %w1 {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x3x6x6xf32>, tensor<12x3x3x3xf32>) -> tensor<1x12x6x6xf32>
    %1 = graph.add %0, %b1 : (tensor<1x12x6x6xf32>, tensor<1x12x1x1xf32>) -> tensor<1x12x6x6xf32>
    %2 = graph.relu %1 : (tensor<1x12x6x6xf32>) -> tensor<1x12x6x6xf32>
    %3 = graph.conv2d %2, %w2 : (tensor<1x12x6x6xf32>, tensor<12x12x3x3xf32>) -> tensor<1x12x4x4xf32>
    graph.return %3 : tensor<1x12x4x4xf32>
  }
}

// CHECK-LABEL: graph.func @chain
// CHECK-NEXT:    %[[XB:.*]] = graph.layout_transform %x {constraint = #lamina.constraint<affine_map<(d0, d1, d2, d3) -> (d0, (d1 floordiv 8), d2, d3, (d1 mod 8))>, 0.000000e+00 : f32>} : (tensor<1x3x6x6xf32>) -> tensor<1x1x6x6x8xf32>
// CHECK-NEXT:    %[[W1:.*]] = graph.constant {{.*}} : tensor<2x1x3x3x8x8xf32>
// CHECK-NEXT:    %[[C1:.*]] = graph.conv2d %[[XB]], %[[W1]] {lamina.algorithm = "winograd", lamina.constraint = #lamina.constraint<{{.*}}, 0.000000e+00 : f32, logical = array<i64: 1, 12, 6, 6>>, {{.*}}data_layout = "NCHW8c", kernel_layout = "OIHW8i8o"} : (tensor<1x1x6x6x8xf32>, tensor<2x1x3x3x8x8xf32>) -> tensor<1x2x6x6x8xf32>
// The bias pads with 0 past channel 12: the sum's padding stays 0.
// CHECK-NEXT:    %[[B:.*]] = graph.constant dense<{{.*}}2.500000e-01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00]]]]]> : tensor<1x2x1x1x8xf32>
// CHECK-NEXT:    %[[ADD:.*]] = graph.add %[[C1]], %[[B]] {lamina.constraint = #lamina.constraint<{{.*}}, 0.000000e+00 : f32, logical = array<i64: 1, 12, 6, 6>>} : (tensor<1x2x6x6x8xf32>, tensor<1x2x1x1x8xf32>) -> tensor<1x2x6x6x8xf32>
// CHECK-NEXT:    %[[RELU:.*]] = graph.relu %[[ADD]] {lamina.constraint = #lamina.constraint<{{.*}}, 0.000000e+00 : f32, logical = array<i64: 1, 12, 6, 6>>} : (tensor<1x2x6x6x8xf32>) -> tensor<1x2x6x6x8xf32>
// CHECK-NEXT:    %[[W2:.*]] = graph.constant {{.*}} : tensor<2x2x3x3x8x8xf32>
// CHECK-NEXT:    %[[C2:.*]] = graph.conv2d %[[RELU]], %[[W2]] {{.*}} -> tensor<1x2x4x4x8xf32>
// CHECK-NEXT:    %[[OUT:.*]] = graph.layout_transform %[[C2]] {constraint = #lamina.constraint<affine_map<(d0, d1, d2, d3, d4) -> (d0, ((d1 * 8) + d4), d2, d3)>, #lamina.undef>, crop} : (tensor<1x2x4x4x8xf32>) -> tensor<1x12x4x4xf32>
// CHECK-NEXT:    graph.return %[[OUT]] : tensor<1x12x4x4xf32>

// OFF-LABEL: graph.func @chain
// OFF-NOT:     graph.layout_transform
// OFF:         graph.conv2d %x, %w1 {padding = array<i64: 1, 1, 1, 1>} :

// -----

// Back-to-back inverse transforms fold away: a value blocked then cropped is
// the value itself, so the exp reads %x and the second blocking is the only
// transform left. A function result known to be blocked records its
// constraint (with the logical shape) in res_attrs.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @fold(%x: tensor<1x3x2x2xf32>) -> (tensor<1x3x2x2xf32>, tensor<1x1x2x2x8xf32>) {
    %b = graph.layout_transform %x {constraint = #lamina.constraint<affine_map<(d0, d1, d2, d3) -> (d0, d1 floordiv 8, d2, d3, d1 mod 8)>, 0.0 : f32>} : (tensor<1x3x2x2xf32>) -> tensor<1x1x2x2x8xf32>
    %l = graph.layout_transform %b {constraint = #lamina.constraint<affine_map<(d0, d1, d2, d3, d4) -> (d0, d1 * 8 + d4, d2, d3)>, #lamina.undef>, crop} : (tensor<1x1x2x2x8xf32>) -> tensor<1x3x2x2xf32>
    %e = graph.exp %l : (tensor<1x3x2x2xf32>) -> tensor<1x3x2x2xf32>
    %r = graph.layout_transform %l {constraint = #lamina.constraint<affine_map<(d0, d1, d2, d3) -> (d0, d1 floordiv 8, d2, d3, d1 mod 8)>, 0.0 : f32>} : (tensor<1x3x2x2xf32>) -> tensor<1x1x2x2x8xf32>
    graph.return %e, %r : tensor<1x3x2x2xf32>, tensor<1x1x2x2x8xf32>
  }
}

// CHECK-LABEL: graph.func @fold
// CHECK-SAME:    -> (tensor<1x3x2x2xf32>, tensor<1x1x2x2x8xf32> {lamina.constraint = #lamina.constraint<affine_map<(d0, d1, d2, d3) -> (d0, (d1 floordiv 8), d2, d3, (d1 mod 8))>, 0.000000e+00 : f32, logical = array<i64: 1, 3, 2, 2>>})
// CHECK-NEXT:    %[[E:.*]] = graph.exp %x :
// CHECK-NEXT:    %[[B:.*]] = graph.layout_transform %x
// CHECK-NEXT:    graph.return %[[E]], %[[B]]

// OFF-LABEL: graph.func @fold
// OFF-COUNT-3: graph.layout_transform

// -----

// A cropped blocked value re-blocked with the same map is the blocked value
// itself: its padding already holds the 0 the re-blocking would write.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @refold(%x: tensor<1x3x2x2xf32>) -> tensor<1x1x2x2x8xf32> {
    %b = graph.layout_transform %x {constraint = #lamina.constraint<affine_map<(d0, d1, d2, d3) -> (d0, d1 floordiv 8, d2, d3, d1 mod 8)>, 0.0 : f32>} : (tensor<1x3x2x2xf32>) -> tensor<1x1x2x2x8xf32>
    %n = graph.neg %b : (tensor<1x1x2x2x8xf32>) -> tensor<1x1x2x2x8xf32>
    %l = graph.layout_transform %n {constraint = #lamina.constraint<affine_map<(d0, d1, d2, d3, d4) -> (d0, d1 * 8 + d4, d2, d3)>, #lamina.undef>, crop} : (tensor<1x1x2x2x8xf32>) -> tensor<1x3x2x2xf32>
    %r = graph.layout_transform %l {constraint = #lamina.constraint<affine_map<(d0, d1, d2, d3) -> (d0, d1 floordiv 8, d2, d3, d1 mod 8)>, #lamina.undef>} : (tensor<1x3x2x2xf32>) -> tensor<1x1x2x2x8xf32>
    graph.return %r : tensor<1x1x2x2x8xf32>
  }
}

// CHECK-LABEL: graph.func @refold
// CHECK-NEXT:    %[[B:.*]] = graph.layout_transform %x
// CHECK-NEXT:    %[[N:.*]] = graph.neg %[[B]]
// CHECK-NEXT:    graph.return %[[N]] : tensor<1x1x2x2x8xf32>

// -----

// The same folds for padding before the data: the inverse of `(d0 + 1)
// floordiv 4, (d0 + 1) mod 4` is `d0 * 4 + d1 - 1` (however it is written),
// so the round trip is %x and the re-padding of the cropped neg is the neg.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @fold_left(%x: tensor<14xf32>) -> (tensor<14xf32>, tensor<4x4xf32>) {
    %b = graph.layout_transform %x {constraint = #lamina.constraint<affine_map<(d0) -> ((d0 + 1) floordiv 4, (d0 + 1) mod 4)>, 0.0 : f32>} : (tensor<14xf32>) -> tensor<4x4xf32>
    %l = graph.layout_transform %b {constraint = #lamina.constraint<affine_map<(d0, d1) -> (d1 + d0 * 4 - 1)>, #lamina.undef>, crop} : (tensor<4x4xf32>) -> tensor<14xf32>
    %n = graph.neg %b : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %c = graph.layout_transform %n {constraint = #lamina.constraint<affine_map<(d0, d1) -> (d0 * 4 + d1 - 1)>, #lamina.undef>, crop} : (tensor<4x4xf32>) -> tensor<14xf32>
    %r = graph.layout_transform %c {constraint = #lamina.constraint<affine_map<(d0) -> ((d0 + 1) floordiv 4, (d0 + 1) mod 4)>, #lamina.undef>} : (tensor<14xf32>) -> tensor<4x4xf32>
    graph.return %l, %r : tensor<14xf32>, tensor<4x4xf32>
  }
}

// CHECK-LABEL: graph.func @fold_left
// CHECK-NEXT:    %[[B:.*]] = graph.layout_transform %x
// CHECK-NEXT:    %[[N:.*]] = graph.neg %[[B]] {lamina.constraint = #lamina.constraint<affine_map<(d0) -> (((d0 + 1) floordiv 4), ((d0 + 1) mod 4))>, 0.000000e+00 : f32, logical = array<i64: 14>>}
// CHECK-NEXT:    graph.return %x, %[[N]] : tensor<14xf32>, tensor<4x4xf32>

// OFF-LABEL: graph.func @fold_left
// OFF-COUNT-4: graph.layout_transform

// -----

// A bias of lower rank (`12x1x1` against an NCHW result: numpy broadcasting
// aligns it to `1x12x1x1`) is reshaped to the result's rank and moved into
// the blocked layout too; a constant one becomes a blocked constant, and a
// parameter one is transformed at run time. Either way the add and relu stay
// blocked and the crop moves to the end (so fuse-ops can fuse them into the
// convolution).
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @low_rank_bias(%x: tensor<1x8x4x4xf32>, %w: tensor<8x8x3x3xf32>, %p: tensor<8x1x1xf32>) -> tensor<1x8x4x4xf32> {
    %b = graph.constant dense<0.25> : tensor<8x1x1xf32>
    %0 = graph.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x8x4x4xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x4x4xf32>
    %1 = graph.add %0, %b : (tensor<1x8x4x4xf32>, tensor<8x1x1xf32>) -> tensor<1x8x4x4xf32>
    %2 = graph.add %1, %p : (tensor<1x8x4x4xf32>, tensor<8x1x1xf32>) -> tensor<1x8x4x4xf32>
    %3 = graph.relu %2 : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
    graph.return %3 : tensor<1x8x4x4xf32>
  }
}

// CHECK-LABEL: graph.func @low_rank_bias
// CHECK:         %[[C:.*]] = graph.conv2d {{.*}} -> tensor<1x1x4x4x8xf32>
// CHECK-NEXT:    %[[B:.*]] = graph.constant dense<2.500000e-01> : tensor<1x1x1x1x8xf32>
// CHECK-NEXT:    %[[A:.*]] = graph.add %[[C]], %[[B]] {lamina.constraint = {{.*}}} : (tensor<1x1x4x4x8xf32>, tensor<1x1x1x1x8xf32>) -> tensor<1x1x4x4x8xf32>
// CHECK-NEXT:    %[[R:.*]] = graph.reshape %p : (tensor<8x1x1xf32>) -> tensor<1x8x1x1xf32>
// CHECK-NEXT:    %[[P:.*]] = graph.layout_transform %[[R]] {{.*}} : (tensor<1x8x1x1xf32>) -> tensor<1x1x1x1x8xf32>
// CHECK-NEXT:    %[[A2:.*]] = graph.add %[[A]], %[[P]] {lamina.constraint = {{.*}}} : (tensor<1x1x4x4x8xf32>, tensor<1x1x1x1x8xf32>) -> tensor<1x1x4x4x8xf32>
// CHECK-NEXT:    %[[RELU:.*]] = graph.relu %[[A2]] {lamina.constraint = {{.*}}}
// CHECK-NEXT:    %[[OUT:.*]] = graph.layout_transform %[[RELU]] {{.*}} : (tensor<1x1x4x4x8xf32>) -> tensor<1x8x4x4xf32>
// CHECK-NEXT:    graph.return %[[OUT]]

// OFF-LABEL: graph.func @low_rank_bias
// OFF-NOT:     graph.layout_transform
