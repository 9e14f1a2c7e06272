// RUN: lamina-opt %s -p 'schedule-register-block{vector_bits=256 vector_registers=16 cores=1}' | filecheck %s
// RUN: lamina-opt %s -p 'schedule-register-block{vector_bits=256 vector_registers=16 cores=1 block_jam_max_reduction=0}' | filecheck %s --check-prefix=APART

// A matmul with a short reduction (K = 32, attention's Q.K^T per head) on 16
// vector registers (AVX2): at most `block_jam_max_reduction` steps, its
// register block is the one of `block_broadcast_registers` = 0 (4 x 16,
// the rows jammed into one vectorized fill and one vectorized reduction
// body), so that LLVM zeroes the accumulators in registers instead of
// storing zeros and loading them back. With the knob at 0 the rows keep
// their own vectorized loops (6 x 16, one broadcast register).

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @qk(%q: memref<128x32xf32>, %kt: memref<32x128xf32>, %s: memref<128x128xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %c128 = arith.constant 128 : index
    %zero = arith.constant 0.0 : f32
    loop.for %i = %c0 to %c128 step %c1 kind(parallel) {
      loop.for %j = %c0 to %c128 step %c1 kind(vectorized) {
        loop.store %zero, %s[%i, %j] : memref<128x128xf32>
      }
      loop.for %k = %c0 to %c32 step %c1 {
        loop.for %j2 = %c0 to %c128 step %c1 kind(vectorized) {
          %x = loop.load %q[%i, %k] : memref<128x32xf32>
          %y = loop.load %kt[%k, %j2] : memref<32x128xf32>
          %m = arith.mulf %x, %y : f32
          %acc = loop.load %s[%i, %j2] : memref<128x128xf32>
          %r = arith.addf %acc, %m : f32
          loop.store %r, %s[%i, %j2] : memref<128x128xf32>
        }
      }
    }
    loop.return
  }
}

// CHECK-LABEL: loop.func @qk
// CHECK:         loop.for %io = %c0 to %c128 step %c4
// CHECK:           loop.for {{.*}} to %c16 step %c1 kind(vectorized) {
// CHECK-COUNT-4:     loop.store %zero
// CHECK:           loop.for %k = %c0 to %c32 step %c1 {
// CHECK-NEXT:        loop.for {{.*}} to %c16 step %c1 kind(vectorized) {
// CHECK-COUNT-4:       loop.load %q
// CHECK-NOT:       loop.for {{.*}} kind(vectorized)
// CHECK:           loop.return

// APART-LABEL: loop.func @qk
// APART:         loop.for %io = %c0 to %c126 step %c6
// APART-COUNT-6:   loop.for {{.*}} to %c16 step %c1 kind(vectorized) {
// APART:           loop.for %k = %c0 to %c32 step %c1 {
// APART-COUNT-6:     loop.for {{.*}} to %c16 step %c1 kind(vectorized) {
