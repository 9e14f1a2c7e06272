// RUN: lamina-opt %s --compile-to lowering | filecheck %s

// The non-local use of docs/layouts.md: two separately compiled kernels. @producer writes
// a blocked tensor whose 5 padded channels hold 0 (its result records the
// constraint). @consumer only sees its parameter's constraint, yet its
// blocked conv2d reduces over all 8 channel slots without a predicate:
// legalize emits the mask `c < 3` from the logical shape, simplify drops it
// because the padding holds 0. With #lamina.undef padding (@consumer_undef)
// the mask stays.

graph.func @producer(%x: tensor<1x3x4x4xf32>) -> tensor<1x1x4x4x8xf32> {
  %b = graph.layout_transform %x {constraint = #lamina.constraint<affine_map<(d0, d1, d2, d3) -> (d0, d1 floordiv 8, d2, d3, d1 mod 8)>, 0.0 : f32>} : (tensor<1x3x4x4xf32>) -> tensor<1x1x4x4x8xf32>
  graph.return %b : tensor<1x1x4x4x8xf32>
}

graph.func @consumer(%b: tensor<1x1x4x4x8xf32> {lamina.constraint = #lamina.constraint<affine_map<(d0, d1, d2, d3) -> (d0, d1 floordiv 8, d2, d3, d1 mod 8)>, 0.0 : f32, logical = array<i64: 1, 3, 4, 4>>}, %w: tensor<1x1x3x3x8x8xf32>) -> tensor<1x1x2x2x8xf32> {
  %y = graph.conv2d %b, %w {data_layout = "NCHW8c", kernel_layout = "OIHW8i8o"} : (tensor<1x1x4x4x8xf32>, tensor<1x1x3x3x8x8xf32>) -> tensor<1x1x2x2x8xf32>
  graph.return %y : tensor<1x1x2x2x8xf32>
}

graph.func @consumer_undef(%b: tensor<1x1x4x4x8xf32> {lamina.constraint = #lamina.constraint<affine_map<(d0, d1, d2, d3) -> (d0, d1 floordiv 8, d2, d3, d1 mod 8)>, #lamina.undef, logical = array<i64: 1, 3, 4, 4>>}, %w: tensor<1x1x3x3x8x8xf32>) -> tensor<1x1x2x2x8xf32> {
  %y = graph.conv2d %b, %w {data_layout = "NCHW8c", kernel_layout = "OIHW8i8o"} : (tensor<1x1x4x4x8xf32>, tensor<1x1x3x3x8x8xf32>) -> tensor<1x1x2x2x8xf32>
  graph.return %y : tensor<1x1x2x2x8xf32>
}

// Padding before the data: 5 channels at slots 2..6 of the block. legalize
// masks 2 <= c < 7; with 0 padding simplify drops both guards, with undef
// padding both stay.
graph.func @consumer_left(%b: tensor<1x1x4x4x8xf32> {lamina.constraint = #lamina.constraint<affine_map<(d0, d1, d2, d3) -> (d0, (d1 + 2) floordiv 8, d2, d3, (d1 + 2) mod 8)>, 0.0 : f32, logical = array<i64: 1, 5, 4, 4>>}, %w: tensor<1x1x3x3x8x8xf32>) -> tensor<1x1x2x2x8xf32> {
  %y = graph.conv2d %b, %w {data_layout = "NCHW8c", kernel_layout = "OIHW8i8o"} : (tensor<1x1x4x4x8xf32>, tensor<1x1x3x3x8x8xf32>) -> tensor<1x1x2x2x8xf32>
  graph.return %y : tensor<1x1x2x2x8xf32>
}

graph.func @consumer_left_undef(%b: tensor<1x1x4x4x8xf32> {lamina.constraint = #lamina.constraint<affine_map<(d0, d1, d2, d3) -> (d0, (d1 + 2) floordiv 8, d2, d3, (d1 + 2) mod 8)>, #lamina.undef, logical = array<i64: 1, 5, 4, 4>>}, %w: tensor<1x1x3x3x8x8xf32>) -> tensor<1x1x2x2x8xf32> {
  %y = graph.conv2d %b, %w {data_layout = "NCHW8c", kernel_layout = "OIHW8i8o"} : (tensor<1x1x4x4x8xf32>, tensor<1x1x3x3x8x8xf32>) -> tensor<1x1x2x2x8xf32>
  graph.return %y : tensor<1x1x2x2x8xf32>
}

// The producer's kernel records what it guarantees on its output buffer.
// CHECK-LABEL: loop.func private @te_layout_transform_1x1x4x4x8xf32_loop
// CHECK-SAME:    %out0: memref<1x1x4x4x8xf32> {{{.*}}lamina.constraint = #lamina.constraint<{{.*}}, 0.000000e+00 : f32, logical = array<i64: 1, 3, 4, 4>>}

// CHECK-LABEL: loop.func private @te_conv2d_1x1x2x2x8xf32_loop
// CHECK-SAME:    %in0: memref<1x1x4x4x8xf32> {{{.*}}lamina.constraint = #lamina.constraint<{{.*}}, 0.000000e+00 : f32, logical = array<i64: 1, 3, 4, 4>>{{.*}}}
// CHECK-NOT:     arith.select
// CHECK:         %[[X:.*]] = loop.load %in0
// CHECK:         %[[W:.*]] = loop.load %in1
// CHECK-NEXT:    %[[P:.*]] = arith.mulf %[[X]], %[[W]] : f32
// CHECK-NOT:     arith.select
// CHECK:         loop.return

// CHECK-LABEL: loop.func private @te_conv2d_1x1x2x2x8xf32_1_loop
// CHECK-SAME:    #lamina.undef
// CHECK:         %[[M:.*]] = arith.cmpi slt
// CHECK:         arith.select %[[M]]

// CHECK-LABEL: loop.func private @te_conv2d_1x1x2x2x8xf32_2_loop
// CHECK-SAME:    logical = array<i64: 1, 5, 4, 4>
// CHECK-NOT:     arith.cmpi
// CHECK-NOT:     arith.select
// CHECK:         loop.return

// CHECK-LABEL: loop.func private @te_conv2d_1x1x2x2x8xf32_3_loop
// CHECK-SAME:    #lamina.undef
// CHECK:         %[[FIRST:.*]] = arith.cmpi sge
// CHECK:         %[[END:.*]] = arith.cmpi slt
// CHECK:         %[[IN:.*]] = arith.andi %[[FIRST]], %[[END]] : i1
// CHECK:         arith.select %[[IN]]
