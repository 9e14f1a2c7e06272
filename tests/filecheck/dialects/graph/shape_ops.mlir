// RUN: lamina-opt %s | lamina-opt | filecheck %s
// RUN: lamina-opt %s --print-op-generic | lamina-opt | filecheck %s

// Reductions, reshape, transpose, concat, broadcast_to, cast, layout_transform.

// CHECK-LABEL: graph.func @reductions(%x: tensor<2x3x4xf32>) -> tensor<f32> {
// CHECK-NEXT:  %0 = graph.reduce_sum %x {axes = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:  %1 = graph.reduce_mean %x {axes = array<i64: 0, -1>, keepdims} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
// CHECK-NEXT:  %2 = graph.reduce_max %x : (tensor<2x3x4xf32>) -> tensor<f32>
// CHECK-NEXT:  %3 = graph.reduce_sum %x {keepdims} : (tensor<2x3x4xf32>) -> tensor<1x1x1xf32>
// CHECK-NEXT:  %4 = graph.reduce_max %x {axes = array<i64: -2>} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:  graph.return %2 : tensor<f32>
graph.func @reductions(%x: tensor<2x3x4xf32>) -> tensor<f32> {
  %0 = graph.reduce_sum %x {axes = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  %1 = graph.reduce_mean %x {axes = array<i64: 0, -1>, keepdims} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
  %2 = graph.reduce_max %x : (tensor<2x3x4xf32>) -> tensor<f32>
  %3 = graph.reduce_sum %x {keepdims} : (tensor<2x3x4xf32>) -> tensor<1x1x1xf32>
  %4 = graph.reduce_max %x {axes = array<i64: -2>} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  graph.return %2 : tensor<f32>
}

// CHECK-LABEL: graph.func @reshape_transpose(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
// CHECK-NEXT:  %0 = graph.reshape %x : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
// CHECK-NEXT:  %1 = graph.reshape %0 : (tensor<6x4xf32>) -> tensor<24xf32>
// CHECK-NEXT:  %2 = graph.reshape %1 : (tensor<24xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:  %3 = graph.transpose %2 {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT:  graph.return %3 : tensor<4x2x3xf32>
graph.func @reshape_transpose(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %0 = graph.reshape %x : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %1 = graph.reshape %0 : (tensor<6x4xf32>) -> tensor<24xf32>
  %2 = graph.reshape %1 : (tensor<24xf32>) -> tensor<2x3x4xf32>
  %3 = graph.transpose %2 {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  graph.return %3 : tensor<4x2x3xf32>
}

// CHECK-LABEL: graph.func @concat_broadcast_cast(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>, %v: tensor<3xf32>) -> tensor<4x2x3xi32> {
// CHECK-NEXT:  %0 = graph.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
// CHECK-NEXT:  %1 = graph.concat %a, %a, %a : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<6x3xf32>
// CHECK-NEXT:  %2 = graph.concat %a, %b {axis = -1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
// CHECK-NEXT:  %3 = graph.broadcast_to %v : (tensor<3xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT:  %4 = graph.broadcast_to %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  %5 = graph.cast %3 : (tensor<4x2x3xf32>) -> tensor<4x2x3xi32>
// CHECK-NEXT:  %6 = graph.cast %5 : (tensor<4x2x3xi32>) -> tensor<4x2x3xf16>
// CHECK-NEXT:  graph.return %5 : tensor<4x2x3xi32>
graph.func @concat_broadcast_cast(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>, %v: tensor<3xf32>) -> tensor<4x2x3xi32> {
  %0 = graph.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
  %1 = graph.concat %a, %a, %a : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<6x3xf32>
  %2 = graph.concat %a, %b {axis = -1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
  %3 = graph.broadcast_to %v : (tensor<3xf32>) -> tensor<4x2x3xf32>
  %4 = graph.broadcast_to %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %5 = graph.cast %3 : (tensor<4x2x3xf32>) -> tensor<4x2x3xi32>
  %6 = graph.cast %5 : (tensor<4x2x3xi32>) -> tensor<4x2x3xf16>
  graph.return %5 : tensor<4x2x3xi32>
}

// CHECK-LABEL: graph.func @layout_transform(%x: tensor<1x20x7x7xf32>, %y: tensor<20xi32>) -> tensor<1x3x7x7x8xf32> {
// CHECK-NEXT:  %0 = graph.layout_transform %x {constraint = #lamina.constraint<affine_map<(d0, d1, d2, d3) -> (d0, (d1 floordiv 8), d2, d3, (d1 mod 8))>, 0.000000e+00 : f32>} : (tensor<1x20x7x7xf32>) -> tensor<1x3x7x7x8xf32>
// CHECK-NEXT:  %1 = graph.layout_transform %y {constraint = #lamina.constraint<affine_map<(d0) -> ((d0 floordiv 4), (d0 mod 4))>, #lamina.undef>} : (tensor<20xi32>) -> tensor<5x4xi32>
// CHECK-NEXT:  %2 = graph.layout_transform %y {constraint = #lamina.constraint<affine_map<(d0) -> ((d0 + 2))>, 0 : i32>} : (tensor<20xi32>) -> tensor<22xi32>
// CHECK-NEXT:  %3 = graph.layout_transform %x {constraint = #lamina.constraint<affine_map<(d0, d1, d2, d3) -> (d0, d2, d3, d1)>, #lamina.undef>} : (tensor<1x20x7x7xf32>) -> tensor<1x7x7x20xf32>
// CHECK-NEXT:  graph.return %0 : tensor<1x3x7x7x8xf32>
graph.func @layout_transform(%x: tensor<1x20x7x7xf32>, %y: tensor<20xi32>) -> tensor<1x3x7x7x8xf32> {
  %0 = graph.layout_transform %x {constraint = #lamina.constraint<affine_map<(d0, d1, d2, d3) -> (d0, d1 floordiv 8, d2, d3, d1 mod 8)>, 0.000000e+00 : f32>} : (tensor<1x20x7x7xf32>) -> tensor<1x3x7x7x8xf32>
  %1 = graph.layout_transform %y {constraint = #lamina.constraint<affine_map<(d0) -> (d0 floordiv 4, d0 mod 4)>, #lamina.undef>} : (tensor<20xi32>) -> tensor<5x4xi32>
  %2 = graph.layout_transform %y {constraint = #lamina.constraint<affine_map<(d0) -> (d0 + 2)>, 0 : i32>} : (tensor<20xi32>) -> tensor<22xi32>
  %3 = graph.layout_transform %x {constraint = #lamina.constraint<affine_map<(d0, d1, d2, d3) -> (d0, d2, d3, d1)>, #lamina.undef>} : (tensor<1x20x7x7xf32>) -> tensor<1x7x7x20xf32>
  graph.return %0 : tensor<1x3x7x7x8xf32>
}
