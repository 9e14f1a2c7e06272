// RUN: lamina-opt %s -p legalize | filecheck %s

// A channel-blocked depthwise conv2d (`OIHW1i8o` filters, stride 2, padded)
// reads its input as whole vectors of 8 channels (the lanes are the last,
// spatial-independent dimension) and reduces over the 3x3 window only. On
// this 6x6 image, with one interior output column of three, it reads a
// zero-padded copy; on the 32x32 image of @in_place it reads the input
// itself, a tap in the halo being a guarded read of a clamped position
// (`schedule` later splits off the guard-free interior; the choice is
// `depthwise_in_place_percent`, here 25, its default with 16 vector
// registers; with 32 it is 0 and the 6x6 image is read in place too, see
// legalize-depthwise-in-place.mlir). A global average pool on `NCHW8c` sums
// over H and W with the block innermost. A max pool on `NCHW8c` always reads
// in place (@pool): a tap in the halo is -inf (its window's taps one
// expression, schedule-max-pool-taps.mlir).
builtin.module attributes {lamina.phase = #lamina.phase<optimization>, lamina.targets = {cpu = #lamina.target<"cpu", {depthwise_in_place_percent = 25 : i64}>}} {
  graph.func @depthwise(%x: tensor<1x2x6x6x8xf32>, %w: tensor<2x1x3x3x1x8xf32>) -> (tensor<1x2x3x3x8xf32>, tensor<1x2x1x1x8xf32>) {
    %0 = graph.conv2d %x, %w {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, groups = 16 : i64, data_layout = "NCHW8c", kernel_layout = "OIHW1i8o"} : (tensor<1x2x6x6x8xf32>, tensor<2x1x3x3x1x8xf32>) -> tensor<1x2x3x3x8xf32>
    %1 = graph.global_avg_pool2d %x : (tensor<1x2x6x6x8xf32>) -> tensor<1x2x1x1x8xf32>
    graph.return %0, %1 : tensor<1x2x3x3x8xf32>, tensor<1x2x1x1x8xf32>
  }
  graph.func @in_place(%x: tensor<1x2x32x32x8xf32>, %w: tensor<2x1x3x3x1x8xf32>) -> tensor<1x2x32x32x8xf32> {
    %0 = graph.conv2d %x, %w {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, groups = 16 : i64, data_layout = "NCHW8c", kernel_layout = "OIHW1i8o"} : (tensor<1x2x32x32x8xf32>, tensor<2x1x3x3x1x8xf32>) -> tensor<1x2x32x32x8xf32>
    graph.return %0 : tensor<1x2x32x32x8xf32>
  }
  graph.func @pool(%x: tensor<1x2x8x8x8xf32>) -> tensor<1x2x4x4x8xf32> {
    %0 = graph.max_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x2x8x8x8xf32>) -> tensor<1x2x4x4x8xf32>
    graph.return %0 : tensor<1x2x4x4x8xf32>
  }
}

// CHECK-LABEL: te.func private @te_conv2d_1x2x3x3x8xf32(%in0: tensor<1x2x6x6x8xf32>, %in1: tensor<2x1x3x3x1x8xf32>) -> tensor<1x2x3x3x8xf32> {
// CHECK:         %[[P:.*]] = te.compute [1, 2, 7, 7, 8] (%i0, %i1, %i2, %i3, %i4) {
// CHECK:           te.read %in0[%i0, %i1, %{{.*}}, %{{.*}}, %i4] : tensor<1x2x6x6x8xf32>
// CHECK:         te.compute [1, 2, 3, 3, 8] reduce [3, 3] combiner(sum) (%[[N:.*]], %[[K:.*]], %[[OH:.*]], %[[OW:.*]], %[[J:.*]], %[[KH:.*]], %[[KW:.*]]) {
// CHECK:           %[[X:.*]] = te.read %[[P]][%[[N]], %[[K]], %{{.*}}, %{{.*}}, %[[J]]] : tensor<1x2x7x7x8xf32>
// CHECK:           %[[W:.*]] = te.read %in1[%[[K]], %{{.*}}, %[[KH]], %[[KW]], %{{.*}}, %[[J]]] : tensor<2x1x3x3x1x8xf32>
// CHECK:           %[[M:.*]] = arith.mulf %[[X]], %[[W]] : f32
// CHECK-NEXT:      te.yield %[[M]] : f32

// CHECK-LABEL: te.func private @te_global_avg_pool2d_1x2x1x1x8xf32(%in0: tensor<1x2x6x6x8xf32>) -> tensor<1x2x1x1x8xf32> {
// CHECK:         te.compute [1, 2, 8] reduce [6, 6] combiner(sum) (%[[A:.*]], %[[B:.*]], %[[C:.*]], %[[H:.*]], %[[V:.*]]) {
// CHECK-NEXT:      te.read %in0[%[[A]], %[[B]], %[[H]], %[[V]], %[[C]]] : tensor<1x2x6x6x8xf32>
// CHECK:         arith.divf %{{.*}}, %{{.*}} : f32

// CHECK-LABEL: te.func private @te_conv2d_1x2x32x32x8xf32(%in0: tensor<1x2x32x32x8xf32>, %in1: tensor<2x1x3x3x1x8xf32>) -> tensor<1x2x32x32x8xf32> {
// CHECK-NOT:     te.compute [1, 2, 34, 34, 8]
// CHECK:         te.compute [1, 2, 32, 32, 8] reduce [3, 3] combiner(sum) (%[[N:.*]], %[[K:.*]], %[[OH:.*]], %[[OW:.*]], %[[J:.*]], %[[KH:.*]], %[[KW:.*]]) {
// CHECK:           %[[H:.*]] = arith.cmpi sge, %{{.*}}, %{{.*}} : index
// CHECK:           %[[HC:.*]] = arith.select %[[H]], %{{.*}}, %{{.*}} : index
// CHECK:           %[[HH:.*]] = arith.cmpi slt, %{{.*}}, %{{.*}} : index
// CHECK:           %[[HCC:.*]] = arith.select %[[HH]], %[[HC]], %{{.*}} : index
// CHECK:           %[[X:.*]] = te.read %in0[%[[N]], %[[K]], %[[HCC]], %{{.*}}, %[[J]]] : tensor<1x2x32x32x8xf32>
// CHECK:           %[[G:.*]] = arith.select %{{.*}}, %[[X]], %{{.*}} : f32
// CHECK:           %[[W:.*]] = te.read %in1[%[[K]], %{{.*}}, %[[KH]], %[[KW]], %{{.*}}, %[[J]]] : tensor<2x1x3x3x1x8xf32>
// CHECK:           %[[M:.*]] = arith.mulf %[[G]], %[[W]] : f32

// CHECK-LABEL: te.func private @te_max_pool2d_1x2x4x4x8xf32(%in0: tensor<1x2x8x8x8xf32>) -> tensor<1x2x4x4x8xf32> {
// CHECK-NOT:     te.compute [1, 2, 9, 9, 8]
// CHECK:         te.compute [1, 2, 4, 4, 8] (
// CHECK:           %[[X:.*]] = te.read %in0[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : tensor<1x2x8x8x8xf32>
// CHECK:           %[[NINF:.*]] = arith.constant 0xff800000 : f32
// CHECK:           arith.select %{{.*}}, %[[X]], %[[NINF]] : f32
