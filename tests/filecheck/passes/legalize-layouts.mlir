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
