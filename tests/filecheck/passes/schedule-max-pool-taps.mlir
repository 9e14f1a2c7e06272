// RUN: lamina-opt %s -p legalize,lower-te,schedule,simplify | filecheck %s

// A max pool on a channel-blocked input (`NCHW{c}c`) is one expression per
// output (kernels/nn.py, `_max_pool_taps`): its window's taps read in place,
// a balanced tree of `maximumf fastmath<nnan>` (one `maxps` each after
// `lower-to-llvm`) and one NaN check per window (an unordered compare per
// pair of taps, or-ed), no accumulator in memory. The nest runs rows, then
// columns, then the vectorized lanes. @s2: SqueezeNet's 3x3 stride 2;
// @s1_pad: GoogLeNet's 3x3 stride 1 with padding, whose border taps are
// guarded (`select(inside, x, -inf)`).
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @s2(%x: tensor<1x4x111x111x16xf32>) -> tensor<1x4x55x55x16xf32> {
    %0 = graph.max_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>} : (tensor<1x4x111x111x16xf32>) -> tensor<1x4x55x55x16xf32>
    graph.return %0 : tensor<1x4x55x55x16xf32>
  }
  graph.func @s1_pad(%x: tensor<1x2x14x14x8xf32>) -> tensor<1x2x14x14x8xf32> {
    %0 = graph.max_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x2x14x14x8xf32>) -> tensor<1x2x14x14x8xf32>
    graph.return %0 : tensor<1x2x14x14x8xf32>
  }
}

// CHECK-LABEL: loop.func private @te_max_pool2d_1x4x55x55x16xf32_loop(
// CHECK:         loop.for %[[C:.*]] = %{{.*}} to %{{.*}} step %{{.*}} kind(parallel) {
// CHECK-NEXT:      loop.for %[[H:.*]] = %{{.*}} to %{{.*}} step %{{.*}} kind(parallel) {
// CHECK-NEXT:        loop.for %[[W:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:          loop.for %[[L:.*]] = %{{.*}} to %{{.*}} step %{{.*}} kind(vectorized) {
// CHECK-COUNT-9:         loop.load %in0[%{{.*}}, %[[C]], %{{.*}}, %{{.*}}, %[[L]]] : memref<1x4x111x111x16xf32>
// CHECK-COUNT-5:         arith.cmpf uno
// CHECK-COUNT-4:         arith.ori
// CHECK-COUNT-8:         arith.maximumf %{{.*}}, %{{.*}} fastmath<nnan> : f32
// CHECK:                 %[[NAN:.*]] = arith.constant 0x7fc00000 : f32
// CHECK-NEXT:            %[[R:.*]] = arith.select %{{.*}}, %[[NAN]], %{{.*}} : f32
// CHECK-NEXT:            loop.store %[[R]], %out0[%{{.*}}, %[[C]], %[[H]], %[[W]], %[[L]]] : memref<1x4x55x55x16xf32>
// CHECK-NEXT:          }
// CHECK-NOT:       loop.load %out0

// CHECK-LABEL: loop.func private @te_max_pool2d_1x2x14x14x8xf32_loop(
// CHECK:         loop.for %{{.*}} kind(vectorized) {
// CHECK-COUNT-8:   arith.select %{{.*}}, %{{.*}}, %{{.*}} : f32
// CHECK-COUNT-8:   arith.maximumf %{{.*}}, %{{.*}} fastmath<nnan> : f32
// CHECK:           arith.select %{{.*}}, %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:      loop.store
