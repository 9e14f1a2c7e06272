// RUN: lamina-opt %s -p 'schedule{vector_bits=256 vector_registers=16 cores=2}' | filecheck %s
// RUN: lamina-opt %s -p 'schedule{vector_bits=512 vector_registers=32 cores=1}' | filecheck %s --check-prefix=AVX512
// RUN: lamina-opt %s -p 'schedule{default=false}' | filecheck %s --check-prefix=OFF

// The default schedule of a matmul as lower-te emits it (fill a row of C,
// then for k, for j: C[i, j] += A[i, k] * B[k, j]): a register-blocked
// micro-kernel. AVX2 (8 lanes, 16 ymm): 6 rows x 2 vectors (16 columns) of
// accumulators (12 + 2 B vectors + 1 broadcast); the column blocks go
// outermost, the row blocks stay parallel (2 column blocks are too few for 2
// cores), and the 6 rows are jammed into the reduction loop, each in its own
// vectorized loop. B is read in place: 2 row blocks share its panel, too few
// to pay for a copy (`pack_min_row_blocks`: 8 at 256 bits); with 32
// (@matmul_tall) the 8x16 panel is packed per column block.

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

  loop.func @matmul_tall(%a: memref<192x8xf32>, %b: memref<8x32xf32>, %c: memref<192x32xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c192 = arith.constant 192 : index
    %c32 = arith.constant 32 : index
    %zero = arith.constant 0.0 : f32
    loop.for %i = %c0 to %c192 step %c1 kind(parallel) {
      loop.for %j = %c0 to %c32 step %c1 kind(vectorized) {
        loop.store %zero, %c[%i, %j] : memref<192x32xf32>
      }
      loop.for %k = %c0 to %c8 step %c1 {
        loop.for %j2 = %c0 to %c32 step %c1 kind(vectorized) {
          %x = loop.load %a[%i, %k] : memref<192x8xf32>
          %y = loop.load %b[%k, %j2] : memref<8x32xf32>
          %p = arith.mulf %x, %y : f32
          %acc = loop.load %c[%i, %j2] : memref<192x32xf32>
          %s = arith.addf %acc, %p : f32
          loop.store %s, %c[%i, %j2] : memref<192x32xf32>
        }
      }
    }
    loop.return
  }

  // An elementwise nest is left as lower-te emitted it.
  loop.func @relu(%x: memref<4x32xf32>, %y: memref<4x32xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c32 = arith.constant 32 : index
    %zero = arith.constant 0.0 : f32
    loop.for %i = %c0 to %c4 step %c1 {
      loop.for %j = %c0 to %c32 step %c1 kind(vectorized) {
        %v = loop.load %x[%i, %j] : memref<4x32xf32>
        %r = arith.maximumf %v, %zero : f32
        loop.store %r, %y[%i, %j] : memref<4x32xf32>
      }
    }
    loop.return
  }
  // An external function (a declaration) has nothing to schedule: kept as is.
  loop.func private @ext(memref<4xf32>)
}

// CHECK-LABEL: loop.func @matmul(
// CHECK-NOT:     loop.alloc
// CHECK:         loop.for %jo = %c0 to %c32 step %c16 {
// CHECK-NEXT:      loop.for %io = %c0 to %c12 step %c6 kind(parallel) {
// CHECK-COUNT-6:     arith.addi %io, %c{{[0-9]+}} : index
// CHECK-COUNT-6:     loop.store %zero, %c[
// CHECK:             loop.for %k = %c0 to %c8 step %c1 {
// CHECK-NEXT:          loop.for %j2i = %c0 to %c16 step %c1 kind(vectorized) {
// CHECK:                 loop.load %b[%k, %{{.*}}] : memref<8x32xf32>
// CHECK-NEXT:            arith.mulf
// CHECK-NEXT:            loop.load %c[
// CHECK-NEXT:            arith.addf
// CHECK-NEXT:            loop.store {{.*}}, %c[
// CHECK-NEXT:          }
// CHECK-COUNT-5:       loop.store {{.*}}, %c[
// CHECK-NOT:     loop.alloc
// CHECK:         loop.return

// CHECK-LABEL: loop.func @matmul_tall(
// CHECK:         loop.for %jo = %c0 to %c32 step %c16 {
// CHECK-NEXT:      %[[PANEL:.*]] = loop.alloc {scope = "local"} : memref<8x16xf32>
// CHECK-NEXT:      loop.for %p0 = %c0 to %c8 step %c1 {
// CHECK-NEXT:        loop.for %p1 = %c0 to %c16 step %c1 kind(vectorized) {
// CHECK-NEXT:          %[[COL:.*]] = arith.addi %jo, %p1 : index
// CHECK-NEXT:          %[[V:.*]] = loop.load %b[%p0, %[[COL]]] : memref<8x32xf32>
// CHECK-NEXT:          loop.store %[[V]], %[[PANEL]][%p0, %p1] : memref<8x16xf32>
// CHECK:           loop.for %io = %c0 to %c192 step %c6 kind(parallel) {
// CHECK:               loop.load %[[PANEL]][%k, %j2i] : memref<8x16xf32>
// CHECK:           loop.free %[[PANEL]] : memref<8x16xf32>

// CHECK-LABEL: loop.func @relu(
// CHECK-NEXT:    %c0 = arith.constant 0 : index
// CHECK:         loop.for %i = %c0 to %c4 step %c1 {
// CHECK-NEXT:      loop.for %j = %c0 to %c32 step %c1 kind(vectorized) {

// AVX-512 (16 lanes, 32 zmm) on one core: blocks of 6 rows x 2 zmm (at
// most 10 rows fit; 6 divides 12), the whole row: no column loop, no packing.
// AVX512-LABEL: loop.func @matmul(
// AVX512:         loop.for %io = %c0 to %c12 step %c6 kind(parallel) {
// AVX512-COUNT-6:   arith.addi %io
// AVX512-NEXT:      loop.for %j = %c0 to %c32 step %c1 kind(vectorized) {
// AVX512-COUNT-6:     loop.store %zero
// AVX512:           loop.for %k = %c0 to %c8 step %c1 {
// AVX512-NOT:       loop.alloc

// OFF-LABEL: loop.func @matmul(
// OFF:         loop.for %i = %c0 to %c12 step %c1 kind(parallel) {
// OFF-NEXT:      loop.for %j = %c0 to %c32 step %c1 kind(vectorized) {

// CHECK-LABEL: loop.func private @ext(memref<4xf32>)
// OFF-LABEL: loop.func private @ext(memref<4xf32>)
