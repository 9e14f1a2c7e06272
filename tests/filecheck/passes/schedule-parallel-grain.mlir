// RUN: lamina-opt %s --split-input-file -p 'schedule-parallel{cores=2 parallel_grain_work=5000}' | filecheck %s
// RUN: lamina-opt %s --split-input-file -p 'schedule-parallel{cores=2}' | filecheck %s --check-prefix=SHARED
// RUN: lamina-opt %s --split-input-file -p 'schedule-parallel{cores=2 parallel_grain_work=5000},lower-to-llvm' | filecheck %s --check-prefix=LLVM

// `serial_below_grain`: a kernel whose whole nest reads fewer than
// `parallel_grain_work` tensor elements runs its parallel loops on the calling
// thread (a region shorter than twice its fork/join cost is slower shared).
// @small (16 rows x 16 x 16 reads: 4096) becomes serial at a grain of 5000,
// its rows collapsed with the blocks by `share_rows` included; @large (64 rows:
// 16384) keeps its region. The default grain (0) keeps both (SHARED), and
// lower-to-llvm then outlines @large's region only (LLVM).

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @small(%x: memref<16x16x16xf32>, %y: memref<16x16x16xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    loop.for %c = %c0 to %c16 step %c1 kind(parallel) {
      loop.for %h = %c0 to %c16 step %c1 {
        loop.for %w = %c0 to %c16 step %c1 kind(vectorized) {
          %v = loop.load %x[%c, %h, %w] : memref<16x16x16xf32>
          loop.store %v, %y[%c, %h, %w] : memref<16x16x16xf32>
        }
      }
    }
    loop.return
  }

  loop.func @large(%x: memref<64x16x16xf32>, %y: memref<64x16x16xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %c64 = arith.constant 64 : index
    loop.for %c = %c0 to %c64 step %c1 kind(parallel) {
      loop.for %h = %c0 to %c16 step %c1 {
        loop.for %w = %c0 to %c16 step %c1 kind(vectorized) {
          %v = loop.load %x[%c, %h, %w] : memref<64x16x16xf32>
          loop.store %v, %y[%c, %h, %w] : memref<64x16x16xf32>
        }
      }
    }
    loop.return
  }
}
// CHECK-LABEL: loop.func @small
// CHECK-NOT:     kind(parallel)
// CHECK-LABEL: loop.func @large
// CHECK:         loop.for %c = %c0 to %c64 step %c1 kind(parallel) {
// CHECK-NEXT:      loop.for %h = %c0 to %c16 step %c1 {

// SHARED-LABEL: loop.func @small
// SHARED:         loop.for %c = %c0 to %c16 step %c1 kind(parallel) {
// SHARED-NEXT:      loop.for %h = %c0 to %c16 step %c1 kind(parallel) {
// SHARED-LABEL: loop.func @large
// SHARED:         loop.for %c = %c0 to %c64 step %c1 kind(parallel) {

// LLVM-LABEL:   llvm.func @small(
// LLVM-NOT:     llvm.call @GOMP_parallel
// LLVM-LABEL:   llvm.func @large(
// LLVM:         llvm.call @GOMP_parallel
