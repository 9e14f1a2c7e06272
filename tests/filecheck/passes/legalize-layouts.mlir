// RUN: lamina-opt %s -p legalize | filecheck %s

// legalize turns each layout_transform shape into a gather te.compute whose
// result carries the constraint (with the operand's logical shape), and
// copies the constraints known at a kernel's inputs into its arg_attrs.

builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @shapes(%x: tensor<1x3x2x2xf32>, %m: tensor<6x10xf32>, %v: tensor<5xf32>, %b: tensor<1x1x2x2x8xf32>) -> (tensor<1x1x2x2x8xf32>, tensor<1x1x2x2x8xf32>, tensor<3x6x4xf32>, tensor<10xf32>, tensor<1x3x2x2xf32>) {
    // Blocked and padded: 3 channels pad up to a block of 8, padding holds 0.
    %blocked = graph.layout_transform %x {constraint = #lamina.constraint<affine_map<(d0, d1, d2, d3) -> (d0, d1 floordiv 8, d2, d3, d1 mod 8)>, 0.0 : f32>} : (tensor<1x3x2x2xf32>) -> tensor<1x1x2x2x8xf32>
    // The same with undefined padding: te.undef fills it.
    %undef = graph.layout_transform %x {constraint = #lamina.constraint<affine_map<(d0, d1, d2, d3) -> (d0, d1 floordiv 8, d2, d3, d1 mod 8)>, #lamina.undef>} : (tensor<1x3x2x2xf32>) -> tensor<1x1x2x2x8xf32>
    // Packed matmul operand: columns in panels of 4 (10 columns pad to 12).
    %packed = graph.layout_transform %m {constraint = #lamina.constraint<affine_map<(d0, d1) -> (d1 floordiv 4, d0, d1 mod 4)>, 0.0 : f32>} : (tensor<6x10xf32>) -> tensor<3x6x4xf32>
    // Strided: every other slot is padding.
    %strided = graph.layout_transform %v {constraint = #lamina.constraint<affine_map<(d0) -> (d0 * 2)>, -1.0 : f32>} : (tensor<5xf32>) -> tensor<9xf32>
    %s = graph.layout_transform %v {constraint = #lamina.constraint<affine_map<(d0) -> (d0 * 2)>, -1.0 : f32>} : (tensor<5xf32>) -> tensor<9xf32>
    %t = graph.layout_transform %s {constraint = #lamina.constraint<affine_map<(d0) -> (d0 + 1)>, 0.0 : f32>} : (tensor<9xf32>) -> tensor<10xf32>
    // The inverse of the blocked layout, cropped back to the 3 logical channels.
    %back = graph.layout_transform %b {constraint = #lamina.constraint<affine_map<(d0, d1, d2, d3, d4) -> (d0, d1 * 8 + d4, d2, d3)>, #lamina.undef>, crop} : (tensor<1x1x2x2x8xf32>) -> tensor<1x3x2x2xf32>
    graph.return %blocked, %undef, %packed, %t, %back : tensor<1x1x2x2x8xf32>, tensor<1x1x2x2x8xf32>, tensor<3x6x4xf32>, tensor<10xf32>, tensor<1x3x2x2xf32>
  }

  // A kernel behind a constrained function boundary learns the constraint.
  graph.func @boundary(%b: tensor<1x1x2x2x8xf32> {lamina.constraint = #lamina.constraint<affine_map<(d0, d1, d2, d3) -> (d0, d1 floordiv 8, d2, d3, d1 mod 8)>, 0.0 : f32, logical = array<i64: 1, 3, 2, 2>>}) -> tensor<1x1x2x2x8xf32> {
    %r = graph.relu %b : (tensor<1x1x2x2x8xf32>) -> tensor<1x1x2x2x8xf32>
    graph.return %r : tensor<1x1x2x2x8xf32>
  }

  // Padding before the data: 14 elements in tiles of 4 from slot 1 (slot 0
  // and slot 15 are padding), and the inverse that crops both ends.
  graph.func @left_padding(%x: tensor<14xf32>, %p: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<14xf32>) {
    %b = graph.layout_transform %x {constraint = #lamina.constraint<affine_map<(d0) -> ((d0 + 1) floordiv 4, (d0 + 1) mod 4)>, 0.0 : f32>} : (tensor<14xf32>) -> tensor<4x4xf32>
    %l = graph.layout_transform %p {constraint = #lamina.constraint<affine_map<(d0, d1) -> (d0 * 4 + d1 - 1)>, #lamina.undef>, crop} : (tensor<4x4xf32>) -> tensor<14xf32>
    graph.return %b, %l : tensor<4x4xf32>, tensor<14xf32>
  }
}

// CHECK-LABEL: te.func private @te_layout_transform_1x1x2x2x8xf32(%in0: tensor<1x3x2x2xf32>) -> tensor<1x1x2x2x8xf32> {
// CHECK:         %[[C:.*]] = arith.cmpi slt, %{{.*}}, %{{.*}} : index
// CHECK:         %[[X:.*]] = te.read %in0[
// CHECK-NEXT:    %[[PAD:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    %[[V:.*]] = arith.select %[[C]], %[[X]], %[[PAD]] : f32
// CHECK-NEXT:    te.yield %[[V]] : f32
// CHECK-NEXT:  } {constraint = #lamina.constraint<affine_map<(d0, d1, d2, d3) -> (d0, (d1 floordiv 8), d2, d3, (d1 mod 8))>, 0.000000e+00 : f32, logical = array<i64: 1, 3, 2, 2>>} : tensor<1x1x2x2x8xf32>

// CHECK-LABEL: te.func private @te_layout_transform_1x1x2x2x8xf32_1(%in0: tensor<1x3x2x2xf32>) -> tensor<1x1x2x2x8xf32> {
// CHECK:         %[[U:.*]] = te.undef : f32
// CHECK-NEXT:    %{{.*}} = arith.select %{{.*}}, %{{.*}}, %[[U]] : f32
// CHECK:         } {constraint = #lamina.constraint<{{.*}}, #lamina.undef, logical = array<i64: 1, 3, 2, 2>>}

// CHECK-LABEL: te.func private @te_layout_transform_3x6x4xf32(%in0: tensor<6x10xf32>) -> tensor<3x6x4xf32> {
// CHECK:         %[[COL:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK-NEXT:    %{{.*}} = arith.constant 10 : index
// CHECK-NEXT:    %{{.*}} = arith.cmpi slt, %[[COL]], %{{.*}} : index
// CHECK:         } {constraint = #lamina.constraint<affine_map<(d0, d1) -> ((d1 floordiv 4), d0, (d1 mod 4))>, 0.000000e+00 : f32, logical = array<i64: 6, 10>>} : tensor<3x6x4xf32>

// Strided: an element lands only on even slots (i mod 2 == 0).
// CHECK-LABEL: te.func private @te_layout_transform_9xf32(%in0: tensor<5xf32>) -> tensor<9xf32> {
// CHECK:         %[[R:.*]] = arith.remui %{{.*}}, %{{.*}} : index
// CHECK:         arith.cmpi eq, %[[R]], %{{.*}} : index
// CHECK:         arith.divui
// CHECK:         arith.constant -1.000000e+00 : f32

// Front padding: slot 0 is padding (i >= 1). The input is the strided
// tensor, whose constraint the kernel learns.
// CHECK-LABEL: te.func private @te_layout_transform_10xf32(%in0: tensor<9xf32> {lamina.constraint = #lamina.constraint<affine_map<(d0) -> ((d0 * 2))>, -1.000000e+00 : f32, logical = array<i64: 5>>}) -> tensor<10xf32> {
// CHECK:         arith.cmpi sge, %{{.*}}, %{{.*}} : index

// The inverse with crop reads channel i as block i / 8, lane i mod 8; its
// result is logical again (no constraint).
// CHECK-LABEL: te.func private @te_layout_transform_1x3x2x2xf32(%in0: tensor<1x1x2x2x8xf32>) -> tensor<1x3x2x2xf32> {
// CHECK:         %[[BLK:.*]] = arith.divui %{{.*}}, %{{.*}} : index
// CHECK-NEXT:    %[[LANE:.*]] = arith.remui %{{.*}}, %{{.*}} : index
// CHECK-NEXT:    %{{.*}} = te.read %in0[%{{.*}}, %[[BLK]], %{{.*}}, %{{.*}}, %[[LANE]]] : tensor<1x1x2x2x8xf32>
// CHECK-NOT:     arith.select
// CHECK:         } : tensor<1x3x2x2xf32>

// CHECK-LABEL: te.func private @te_relu_1x1x2x2x8xf32(%in0: tensor<1x1x2x2x8xf32> {lamina.constraint = #lamina.constraint<affine_map<(d0, d1, d2, d3) -> (d0, (d1 floordiv 8), d2, d3, (d1 mod 8))>, 0.000000e+00 : f32, logical = array<i64: 1, 3, 2, 2>>}) -> tensor<1x1x2x2x8xf32>

// The forward transform: slot (i, j) holds x[4*i + j - 1] when 1 <= 4*i + j
// < 15, else the pad.
// CHECK-LABEL: te.func private @te_layout_transform_4x4xf32(%in0: tensor<14xf32>) -> tensor<4x4xf32> {
// CHECK:         %[[P:.*]] = arith.addi %{{.*}}, %i1 : index
// CHECK-NEXT:    %[[ONE:.*]] = arith.constant 1 : index
// CHECK-NEXT:    %[[AFTER:.*]] = arith.cmpi sge, %[[P]], %[[ONE]] : index
// CHECK-NEXT:    %[[MINUS:.*]] = arith.constant -1 : index
// CHECK-NEXT:    %[[Q:.*]] = arith.addi %[[P]], %[[MINUS]] : index
// CHECK:         %[[BEFORE:.*]] = arith.cmpi slt, %{{.*}}, %{{.*}} : index
// CHECK-NEXT:    %[[OK:.*]] = arith.andi %[[AFTER]], %[[BEFORE]] : i1
// CHECK:         %[[X:.*]] = te.read %in0[%{{.*}}] : tensor<14xf32>
// CHECK-NEXT:    %[[PAD:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    arith.select %[[OK]], %[[X]], %[[PAD]] : f32
// CHECK:         } {constraint = #lamina.constraint<affine_map<(d0) -> (((d0 + 1) floordiv 4), ((d0 + 1) mod 4))>, 0.000000e+00 : f32, logical = array<i64: 14>>} : tensor<4x4xf32>

// The inverse: element q is at physical sum q + 1 (block (q + 1) / 4, lane
// (q + 1) mod 4); the leading padding is never read, nothing is guarded.
// CHECK-LABEL: te.func private @te_layout_transform_14xf32(%in0: tensor<4x4xf32>) -> tensor<14xf32> {
// CHECK-NEXT:    %0 = te.compute [14] (%i0) {
// CHECK-NEXT:      %[[ONE:.*]] = arith.constant 1 : index
// CHECK-NEXT:      %[[S:.*]] = arith.addi %i0, %[[ONE]] : index
// CHECK-NEXT:      %[[FOUR:.*]] = arith.constant 4 : index
// CHECK-NEXT:      %[[B:.*]] = arith.divui %[[S]], %[[FOUR]] : index
// CHECK-NEXT:      %[[L:.*]] = arith.remui %[[S]], %[[FOUR]] : index
// CHECK-NEXT:      %[[V:.*]] = te.read %in0[%[[B]], %[[L]]] : tensor<4x4xf32>
// CHECK-NEXT:      te.yield %[[V]] : f32
// CHECK-NEXT:    } : tensor<14xf32>
