// RUN: lamina-opt %s -p legalize,lower-te,schedule,simplify | filecheck %s

// A max pool on a plain `NCHW` input (DenseNet's and ResNet's stem pool, 3x3
// stride 2 with padding 1) is one expression per output too (kernels/nn.py,
// `_max_pool_taps`), vectorized along the output columns. The guards of the
// left padding column depend on the column alone; `schedule`
// (schedule/border_split.py, `_unrolled_window_lanes`) peels that column off
// the vectorized loop, so the interior reads its nine taps as strided loads
// with no column guard (the row's guards are uniform along the vector).
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @stem(%x: tensor<1x8x112x112xf32>) -> tensor<1x8x56x56xf32> {
    %0 = graph.max_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x8x112x112xf32>) -> tensor<1x8x56x56xf32>
    graph.return %0 : tensor<1x8x56x56xf32>
  }
}

// CHECK-LABEL: loop.func private @te_max_pool2d_1x8x56x56xf32_loop(
// CHECK:         loop.for %{{.*}} kind(parallel) {
// CHECK-NEXT:      loop.for %[[H:.*]] = %{{.*}} to %{{.*}} step %{{.*}} kind(parallel) {
// CHECK-NEXT:        loop.for %{{.*}} = %c0 to %c1 step %c1 kind(vectorized) {
// CHECK:               loop.store
// CHECK-NEXT:        }
// CHECK-NEXT:        loop.for %[[W:.*]] = %c1 to %c56 step %c1 kind(vectorized) {
// CHECK-NOT:           arith.cmpi {{.*}}%[[W]]
// CHECK-COUNT-9:       loop.load %in0
// CHECK-COUNT-8:       arith.maximumf %{{.*}}, %{{.*}} fastmath<nnan> : f32
// CHECK:               loop.store %{{.*}}, %out0[%{{.*}}, %{{.*}}, %[[H]], %[[W]]] : memref<1x8x56x56xf32>
// CHECK-NEXT:        }
