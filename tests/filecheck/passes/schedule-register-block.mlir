// RUN: lamina-opt %s -p 'schedule-register-block{vector_bits=256 vector_registers=16 cores=2}' | filecheck %s
// RUN: sed 's/attributes {lamina.phase/attributes {lamina.targets = {cpu = #lamina.target<"cpu", {isa = "avx2", cores = 2 : i64}>}, lamina.phase/' %s | lamina-opt -p schedule-register-block | filecheck %s
// RUN: lamina-opt %s -p 'schedule-register-block{vector_bits=256 vector_registers=16 cores=2 pack_min_row_blocks=2}' | filecheck %s --check-prefix=PACK
// RUN: lamina-opt %s -p 'schedule-register-block{vector_bits=256 vector_registers=16 cores=2 block_rows=2 block_vector_choices=1}' | filecheck %s --check-prefix=KNOBS
// RUN: sed 's/attributes {lamina.phase/attributes {lamina.targets = {cpu = #lamina.target<"cpu", {vector_bits = 256 : i64, vector_registers = 16 : i64, cores = 2 : i64, block_rows = 2 : i64}>}, lamina.phase/' %s | lamina-opt -p schedule-register-block | filecheck %s --check-prefix=TARGET
// RUN: not lamina-opt %s -p 'schedule-register-block{block_vector_choices=0}' 2>&1 | filecheck %s --check-prefix=BAD

// Register blocking alone (one rule of `schedule`): a matmul as lower-te
// emits it becomes a micro-kernel. AVX2 (8 lanes, 16 ymm; given as facts, or
// as the target `cpu{isa=avx2}`): 6 rows x 2 vectors (16 columns) of
// accumulators, the block of BLIS's Haswell/Zen kernel (12 accumulators + 2
// B vectors + 1 broadcast = 15 registers); the column blocks go outermost,
// the row blocks stay parallel (2 column blocks are too few for 2 cores).
// The 6 rows are jammed into the reduction loop but each keeps its own
// vectorized loop, so that LLVM emits each row's broadcast right before its
// two FMAs instead of hoisting all six (which spills accumulators at 16
// registers). B is read in place: 2 row blocks share its panel, fewer than
// `pack_min_row_blocks` (8 at 256 bits); with that knob at 2 the 8x16 panel is packed
// per column block. `block_rows` and `block_vector_choices` force a 2 x 8
// block (then 4 column blocks: enough for 2 cores, so they run in parallel),
// from a pass option or a target option alike; an impossible knob value is
// a diagnostic.

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @matmul(%a: memref<12x8xf32>, %b: memref<8x32xf32>, %c: memref<12x32xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c12 = arith.constant 12 : index
    %c32 = arith.constant 32 : index
    %zero = arith.constant 0.0 : f32
    loop.for %i = %c0 to %c12 step %c1 kind(parallel) {
      loop.for %j = %c0 to %c32 step %c1 kind(vectorized) {
        loop.store %zero, %c[%i, %j] : memref<12x32xf32>
      }
      loop.for %k = %c0 to %c8 step %c1 {
        loop.for %j2 = %c0 to %c32 step %c1 kind(vectorized) {
          %x = loop.load %a[%i, %k] : memref<12x8xf32>
          %y = loop.load %b[%k, %j2] : memref<8x32xf32>
          %p = arith.mulf %x, %y : f32
          %acc = loop.load %c[%i, %j2] : memref<12x32xf32>
          %s = arith.addf %acc, %p : f32
          loop.store %s, %c[%i, %j2] : memref<12x32xf32>
        }
      }
    }
    loop.return
  }


  // 17 rows: two blocks of 6, then the 5 tail rows as one block of 5 (the
  // original nest there accumulated in memory), inside the same column
  // block (on its panel and its threads).
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


  // 37 columns: no vector count divides them. Columns [0, 32) are blocked as
  // usual; a copy of the nest after it computes columns [32, 37) as rows of
  // one short vector (before, the whole nest accumulated in memory).
  loop.func @matmul_column_tail(%a: memref<12x8xf32>, %b: memref<8x37xf32>, %c: memref<12x37xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c12 = arith.constant 12 : index
    %c37 = arith.constant 37 : index
    %zero = arith.constant 0.0 : f32
    loop.for %i = %c0 to %c12 step %c1 kind(parallel) {
      loop.for %j = %c0 to %c37 step %c1 kind(vectorized) {
        loop.store %zero, %c[%i, %j] : memref<12x37xf32>
      }
      loop.for %k = %c0 to %c8 step %c1 {
        loop.for %j2 = %c0 to %c37 step %c1 kind(vectorized) {
          %x = loop.load %a[%i, %k] : memref<12x8xf32>
          %y = loop.load %b[%k, %j2] : memref<8x37xf32>
          %p = arith.mulf %x, %y : f32
          %acc = loop.load %c[%i, %j2] : memref<12x37xf32>
          %s = arith.addf %acc, %p : f32
          loop.store %s, %c[%i, %j2] : memref<12x37xf32>
        }
      }
    }
    loop.return
  }

}

// CHECK:       loop.for %jo = %c0 to %c32 step %c16 {
// CHECK-NEXT:    loop.for %io = %c0 to %c12 step %c6 kind(parallel) {
// CHECK-COUNT-6:   arith.addi %io
// CHECK-COUNT-6:   loop.store %zero, %c
// CHECK:           loop.for %k = %c0 to %c8 step %c1 {
// CHECK-NEXT:        loop.for %j2i = %c0 to %c16 step %c1 kind(vectorized) {
// CHECK-NEXT:          %j2 = arith.addi %jo, %j2i : index
// CHECK-NEXT:          %x = loop.load %a[%i, %k] : memref<12x8xf32>
// CHECK-NEXT:          %y = loop.load %b[%k, %j2] : memref<8x32xf32>
// CHECK-NEXT:          %p = arith.mulf %x, %y : f32
// CHECK-NEXT:          %acc = loop.load %c[%i, %j2] : memref<12x32xf32>
// CHECK-NEXT:          %s = arith.addf %acc, %p : f32
// CHECK-NEXT:          loop.store %s, %c[%i, %j2] : memref<12x32xf32>
// CHECK-NEXT:        }
// CHECK-COUNT-5:     loop.for %{{.*}} = %c0 to %c16 step %c1 kind(vectorized) {
// CHECK:             loop.store %s_5, %c[%i_5, %j2_5] : memref<12x32xf32>
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NOT:     loop.alloc

// CHECK-LABEL: loop.func @matmul_tail(
// CHECK:         loop.for %jo = %c0 to %c32 step %c16 {
// CHECK-NEXT:      loop.for %io = %c0 to %c12 step %c6 kind(parallel) {
// CHECK:             loop.for %k = %c0 to %c8 step %c1 {
// CHECK:           loop.for %io_1 = %c12 to %c17 step %c5 {
// CHECK-COUNT-5:     loop.store %zero, %c
// CHECK:             loop.for %k_1 = %c0 to %c8 step %c1 {
// CHECK-COUNT-5:       loop.for %{{.*}} = %c0 to %c16 step %c1 kind(vectorized) {
// CHECK-NOT:     loop.for %jo_1

// PACK:       loop.for %jo = %c0 to %c32 step %c16 {
// PACK-NEXT:    %[[P:.*]] = loop.alloc {scope = "local"} : memref<8x16xf32>
// PACK:         loop.for %io = %c0 to %c12 step %c6 kind(parallel) {
// PACK:           loop.load %[[P]]

// KNOBS:      loop.for %jo = %c0 to %c32 step %c8 kind(parallel) {
// KNOBS-NEXT:   loop.for %io = %c0 to %c12 step %c2 {
// KNOBS:          loop.for %ji = %c0 to %c8 step %c1 kind(vectorized) {

// TARGET:     loop.for %jo = %c0 to %c32 step %c16 {
// TARGET-NEXT:  loop.for %io = %c0 to %c12 step %c2 kind(parallel) {

// BAD: error: 'builtin.module' op schedule-register-block: block_vector_choices must be a non-empty list of positive integers, got (0,)

// CHECK-LABEL: loop.func @matmul_column_tail(
// CHECK:         loop.for %jo = %c0 to %c32 step %c16 {
// CHECK-NEXT:      loop.for %io = %c0 to %c12 step %c6 kind(parallel) {
// CHECK:         loop.for %io_1 = %c0 to %c12 step %c12 {
// CHECK-COUNT-12:  loop.for %{{.*}} = %c32 to %c37 step %c1 kind(vectorized) {
// CHECK:           loop.for %k_1 = %c0 to %c8 step %c1 {
