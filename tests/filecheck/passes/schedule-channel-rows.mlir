// RUN: lamina-opt %s -p 'schedule{vector_bits=256 vector_registers=16 cores=2}' | filecheck %s

// A pointwise NCHW convolution as lower-te emits it: for o { for h { fill
// out[o, h, :]; for c { for w: out[o, h, w] += x[c, h, w] * wt[o, c] } } }.
// Rows h read different input rows (no register reuse), but rows o all read
// the same input vector x[c, h, w]: the default schedule interchanges o
// inside h, keeps the parallel kind outermost, and register-blocks 4 output
// channels x 2 vectors (AVX2: 8 accumulators + 2 input vectors + 1
// broadcast weight; 6 rows would leave 2 of the 8 channels unblocked),
// each channel in its own vectorized loop inside the reduction loop.

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @pointwise(%x: memref<4x2x16xf32>, %wt: memref<8x4xf32>, %out: memref<8x2x16xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %zero = arith.constant 0.0 : f32
    loop.for %o = %c0 to %c8 step %c1 kind(parallel) {
      loop.for %h = %c0 to %c2 step %c1 {
        loop.for %w = %c0 to %c16 step %c1 kind(vectorized) {
          loop.store %zero, %out[%o, %h, %w] : memref<8x2x16xf32>
        }
        loop.for %c = %c0 to %c4 step %c1 {
          loop.for %w2 = %c0 to %c16 step %c1 kind(vectorized) {
            %v = loop.load %x[%c, %h, %w2] : memref<4x2x16xf32>
            %k = loop.load %wt[%o, %c] : memref<8x4xf32>
            %p = arith.mulf %v, %k : f32
            %acc = loop.load %out[%o, %h, %w2] : memref<8x2x16xf32>
            %s = arith.addf %acc, %p : f32
            loop.store %s, %out[%o, %h, %w2] : memref<8x2x16xf32>
          }
        }
      }
    }
    loop.return
  }
}

// CHECK-LABEL: loop.func @pointwise(
// CHECK:         loop.for %h = %c0 to %c2 step %c1 kind(parallel) {
// CHECK-NEXT:      loop.for %oo = %c0 to %c8 step %c4 {
// CHECK-COUNT-4:     arith.addi %oo, %c{{[0-9]+}} : index
// CHECK-COUNT-4:     loop.store %zero, %out[
// CHECK:             loop.for %c = %c0 to %c4 step %c1 {
// CHECK-NEXT:          loop.for %w2 = %c0 to %c16 step %c1 kind(vectorized) {
// CHECK-NEXT:            %v = loop.load %x[%c, %h, %w2]
// CHECK-NEXT:            %k = loop.load %wt[%o, %c]
// CHECK-NEXT:            arith.mulf
// CHECK-NEXT:            loop.load %out[
// CHECK-NEXT:            arith.addf
// CHECK-NEXT:            loop.store {{.*}}, %out[
// CHECK-NEXT:          }
// CHECK-COUNT-3:       loop.store {{.*}}, %out[