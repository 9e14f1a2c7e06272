// RUN: lamina-opt %s -p 'schedule-register-block{vector_bits=256 vector_registers=16 cores=2 block_rows_outside_columns=1}' | filecheck %s
// RUN: lamina-opt %s -p 'schedule-register-block{vector_bits=256 vector_registers=16 cores=2}' | filecheck %s --check-prefix=DEFAULT
// RUN: not lamina-opt %s -p 'schedule-register-block{block_rows_outside_columns=2}' 2>&1 | filecheck %s --check-prefix=BAD

// The loop order of a register block whose row is longer than one block
// (`block_rows_outside_columns`, a tuning knob): by default the column-block
// loop goes outermost (each panel of B shared by every row block); with the
// knob at 1 the row blocks run outermost, still parallel, and each visits
// both column blocks (its 6 rows of A reused across them), B read in place.
// The 5 tail rows (17 = 2 x 6 + 5) become one block of their own, the
// column loop swapped outside their rows so that they are register-blocked
// like the others.

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @matmul_tail(%a: memref<17x8xf32>, %b: memref<8x32xf32>, %c: memref<17x32xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c17 = arith.constant 17 : index
    %c32 = arith.constant 32 : index
    %zero = arith.constant 0.0 : f32
    loop.for %i = %c0 to %c17 step %c1 kind(parallel) {
      loop.for %j = %c0 to %c32 step %c1 kind(vectorized) {
        loop.store %zero, %c[%i, %j] : memref<17x32xf32>
      }
      loop.for %k = %c0 to %c8 step %c1 {
        loop.for %j2 = %c0 to %c32 step %c1 kind(vectorized) {
          %x = loop.load %a[%i, %k] : memref<17x8xf32>
          %y = loop.load %b[%k, %j2] : memref<8x32xf32>
          %p = arith.mulf %x, %y : f32
          %acc = loop.load %c[%i, %j2] : memref<17x32xf32>
          %s = arith.addf %acc, %p : f32
          loop.store %s, %c[%i, %j2] : memref<17x32xf32>
        }
      }
    }
    loop.return
  }
}

// CHECK-LABEL: loop.func @matmul_tail
// CHECK:       loop.for %io = %c0 to %c12 step %c6 kind(parallel) {
// CHECK-NEXT:    arith.addi %io, %c0
// CHECK-COUNT-5: arith.addi %io
// CHECK-NEXT:    loop.for %jo = %c0 to %c32 step %c16 {
// CHECK-COUNT-6:   loop.for {{.*}} to %c16 step %c1 kind(vectorized) {
// CHECK:           loop.for %k = %c0 to %c8 step %c1 {
// CHECK-COUNT-6:     loop.for {{.*}} to %c16 step %c1 kind(vectorized) {
// CHECK:       loop.for %jo_1 = %c0 to %c32 step %c16 {
// CHECK-NEXT:    loop.for %io_1 = %c12 to %c17 step %c5 {
// CHECK-COUNT-5:   loop.for {{.*}} to %c16 step %c1 kind(vectorized) {
// CHECK:           loop.for %k_1 = %c0 to %c8 step %c1 {
// CHECK-COUNT-5:     loop.for {{.*}} to %c16 step %c1 kind(vectorized) {

// DEFAULT-LABEL: loop.func @matmul_tail
// DEFAULT:       loop.for %jo = %c0 to %c32 step %c16 {
// DEFAULT-NEXT:    loop.for %io = %c0 to %c12 step %c6 kind(parallel) {

// BAD: block_rows_outside_columns must be 0 (off) or 1 (on), got 2
