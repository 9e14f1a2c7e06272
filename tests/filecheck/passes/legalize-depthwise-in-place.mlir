// RUN: lamina-opt %s --split-input-file -p legalize | filecheck %s

// With 32 vector registers (AVX-512) `depthwise_in_place_percent` is 0: a
// blocked depthwise conv2d reads its input in place however small its image
// and wide its window -- here a 6x6 image, stride 2, one interior output
// column of three -- each tap outside the image a guarded read of a clamped
// position, no zero-padded copy (measured, docs/performance.md "Depthwise
// convolution": 5x5 at 7x7 40 -> 30 us, 3x3 at 7x7 18 -> 11 us). With 16
// registers (AVX2) the default is 25 and the same conv2d reads a padded copy
// (the second module; legalize-depthwise.mlir has the copy's shape).
builtin.module attributes {lamina.phase = #lamina.phase<optimization>, lamina.targets = {cpu = #lamina.target<"cpu", {vector_bits = 512 : i64, vector_registers = 32 : i64}>}} {
  graph.func @depthwise(%x: tensor<1x2x6x6x16xf32>, %w: tensor<2x1x3x3x1x16xf32>) -> tensor<1x2x3x3x16xf32> {
    %0 = graph.conv2d %x, %w {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, groups = 32 : i64, data_layout = "NCHW16c", kernel_layout = "OIHW1i16o"} : (tensor<1x2x6x6x16xf32>, tensor<2x1x3x3x1x16xf32>) -> tensor<1x2x3x3x16xf32>
    graph.return %0 : tensor<1x2x3x3x16xf32>
  }
}

// CHECK-LABEL: te.func private @te_conv2d_1x2x3x3x16xf32(%in0: tensor<1x2x6x6x16xf32>, %in1: tensor<2x1x3x3x1x16xf32>) -> tensor<1x2x3x3x16xf32> {
// CHECK-NEXT:    te.compute [1, 2, 3, 3, 16] reduce [3, 3] combiner(sum) (%[[N:.*]], %[[K:.*]], %[[OH:.*]], %[[OW:.*]], %[[J:.*]], %[[KH:.*]], %[[KW:.*]]) {
// CHECK:           %[[ROW:.*]] = arith.select %{{.*}}, %{{.*}}, %{{.*}} : index
// CHECK:           %[[COL:.*]] = arith.select %{{.*}}, %{{.*}}, %{{.*}} : index
// CHECK:           %[[X:.*]] = te.read %in0[%[[N]], %[[K]], %[[ROW]], %[[COL]], %[[J]]] : tensor<1x2x6x6x16xf32>
// CHECK:           %[[G:.*]] = arith.select %{{.*}}, %[[X]], %{{.*}} : f32
// CHECK:           %[[W:.*]] = te.read %in1[%[[K]], %{{.*}}, %[[KH]], %[[KW]], %{{.*}}, %[[J]]] : tensor<2x1x3x3x1x16xf32>
// CHECK:           arith.mulf %[[G]], %[[W]] : f32
// CHECK:         } : tensor<1x2x3x3x16xf32>
// CHECK-NEXT:    te.return

// -----

builtin.module attributes {lamina.phase = #lamina.phase<optimization>, lamina.targets = {cpu = #lamina.target<"cpu", {isa = "avx2"}>}} {
  graph.func @depthwise(%x: tensor<1x4x6x6x8xf32>, %w: tensor<4x1x3x3x1x8xf32>) -> tensor<1x4x3x3x8xf32> {
    %0 = graph.conv2d %x, %w {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, groups = 32 : i64, data_layout = "NCHW8c", kernel_layout = "OIHW1i8o"} : (tensor<1x4x6x6x8xf32>, tensor<4x1x3x3x1x8xf32>) -> tensor<1x4x3x3x8xf32>
    graph.return %0 : tensor<1x4x3x3x8xf32>
  }
}

// CHECK-LABEL: te.func private @te_conv2d_1x4x3x3x8xf32(%in0: tensor<1x4x6x6x8xf32>, %in1: tensor<4x1x3x3x1x8xf32>) -> tensor<1x4x3x3x8xf32> {
// CHECK-NEXT:    %[[P:.*]] = te.compute [1, 4, 7, 7, 8]
// CHECK:         te.compute [1, 4, 3, 3, 8] reduce [3, 3] combiner(sum)
// CHECK:           te.read %[[P]]
