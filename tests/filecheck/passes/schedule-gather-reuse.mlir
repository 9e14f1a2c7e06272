// RUN: lamina-opt %s -p schedule-gather-reuse | filecheck %s
// RUN: lamina-opt %s -p schedule | filecheck %s

// A copy out of a channel-blocked layout writes along w but reads with a
// stride of 16 elements (a gather per vector). `schedule` splits the channel
// loop by that period and moves its inner part just outside the vectorized
// loop, so the 16 gathers that share the same cache lines run back to back.
// A copy whose strided index already varies in the loop just outside the
// vectorized one, and a nest that reads what it writes, keep their order.

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  // CHECK-LABEL: loop.func @unblock
  // CHECK:       loop.for %[[CO:.*]] = %{{.*}} to %{{.*}} step %c16 kind(parallel) {
  // CHECK-NEXT:    loop.for %[[H:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
  // CHECK-NEXT:      loop.for %[[CI:.*]] = %{{.*}} to %c16{{.*}} step %{{.*}} {
  // CHECK-NEXT:        %[[C:.*]] = arith.addi %[[CO]], %[[CI]] : index
  // CHECK-NEXT:        loop.for %[[W:.*]] = {{.*}} kind(vectorized) {
  // CHECK:               loop.load %in[%{{.*}}, %[[H]], %[[W]], %{{.*}}] : memref<4x8x32x16xf32>
  // CHECK:               loop.store %{{.*}}, %out[%[[C]], %[[H]], %[[W]]] : memref<64x8x32xf32>
  loop.func @unblock(%in: memref<4x8x32x16xf32>, %out: memref<64x8x32xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    loop.for %c = %c0 to %c64 step %c1 kind(parallel) {
      loop.for %h = %c0 to %c8 step %c1 {
        loop.for %w = %c0 to %c32 step %c1 kind(vectorized) {
          %cb = arith.divui %c, %c16 : index
          %ci = arith.remui %c, %c16 : index
          %v = loop.load %in[%cb, %h, %w, %ci] : memref<4x8x32x16xf32>
          loop.store %v, %out[%c, %h, %w] : memref<64x8x32xf32>
        }
      }
    }
    loop.return
  }

  // CHECK-LABEL: loop.func @adjacent
  // CHECK:       loop.for %[[A:.*]] = {{.*}} {
  // CHECK-NEXT:    loop.for %[[B:.*]] = {{.*}} {
  // CHECK-NEXT:      loop.for %[[D:.*]] = {{.*}} kind(vectorized) {
  // CHECK-NEXT:        loop.load %in[%[[A]], %[[D]], %[[B]]]
  loop.func @adjacent(%in: memref<4x32x16xf32>, %out: memref<4x16x32xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    loop.for %a = %c0 to %c4 step %c1 {
      loop.for %b = %c0 to %c16 step %c1 {
        loop.for %d = %c0 to %c32 step %c1 kind(vectorized) {
          %v = loop.load %in[%a, %d, %b] : memref<4x32x16xf32>
          loop.store %v, %out[%a, %b, %d] : memref<4x16x32xf32>
        }
      }
    }
    loop.return
  }

  // CHECK-LABEL: loop.func @in_place
  // CHECK:       loop.for %{{.*}} = %c0 to %c64 step %c1 {
  // CHECK-NOT:   step %c16
  // CHECK:       loop.return
  loop.func @in_place(%buf: memref<64x32x32xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    loop.for %c = %c0 to %c64 step %c1 {
      loop.for %h = %c0 to %c8 step %c1 {
        loop.for %w = %c0 to %c32 step %c1 kind(vectorized) {
          %ci = arith.remui %c, %c16 : index
          %v = loop.load %buf[%h, %w, %ci] : memref<64x32x32xf32>
          loop.store %v, %buf[%c, %h, %w] : memref<64x32x32xf32>
        }
      }
    }
    loop.return
  }
}
