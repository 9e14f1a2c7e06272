// RUN: lamina-opt %s --split-input-file -p 'schedule-parallel{cores=2 parallel_rows_first=1}' | filecheck %s
// RUN: lamina-opt %s --split-input-file -p 'schedule-parallel{cores=2 parallel_rows_first=0}' | filecheck %s --check-prefix=BLOCKS
// RUN: lamina-opt %s --split-input-file -p 'schedule-parallel{cores=2 parallel_rows_first=1},lower-to-llvm' | filecheck %s --check-prefix=LLVM

// `share_rows` with `parallel_rows_first`: a parallel loop of 2 blocks holding
// 64 rows shares blocks x rows; @pointwise reads 64 KiB indexed by the row only
// (a pointwise convolution's input) and 8 KiB indexed by the block only (its
// weights), so the threads split the rows (`lamina.rows_first`: each thread
// reads half of the input, and all of the weights). @depthwise reads the input
// at both indices and 64 KiB of weights by the block: blocks first, as before.
// Off (BLOCKS), neither is marked. Lowered (LLVM), the collapsed loop's flat
// index is rows x blocks (`udiv` by the 2 blocks) and a chunk runs block by
// block, its rows inner; a thread alone takes all 128 iterations as one chunk.

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @pointwise(%x: memref<64x16x16xf32>, %w: memref<2x16x16xf32>, %y: memref<2x64x16xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c16 = arith.constant 16 : index
    %c64 = arith.constant 64 : index
    loop.for %b = %c0 to %c2 step %c1 kind(parallel) {
      loop.for %h = %c0 to %c64 step %c1 {
        loop.for %v = %c0 to %c16 step %c1 kind(vectorized) {
          %a = loop.load %x[%h, %c0, %v] : memref<64x16x16xf32>
          %k = loop.load %w[%b, %c0, %v] : memref<2x16x16xf32>
          %p = arith.mulf %a, %k : f32
          loop.store %p, %y[%b, %h, %v] : memref<2x64x16xf32>
        }
      }
    }
    loop.return
  }

  loop.func @depthwise(%x: memref<2x64x16xf32>, %w: memref<2x512x16xf32>, %y: memref<2x64x16xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c16 = arith.constant 16 : index
    %c64 = arith.constant 64 : index
    loop.for %b = %c0 to %c2 step %c1 kind(parallel) {
      loop.for %h = %c0 to %c64 step %c1 {
        loop.for %v = %c0 to %c16 step %c1 kind(vectorized) {
          %a = loop.load %x[%b, %h, %v] : memref<2x64x16xf32>
          %k = loop.load %w[%b, %c0, %v] : memref<2x512x16xf32>
          %p = arith.mulf %a, %k : f32
          loop.store %p, %y[%b, %h, %v] : memref<2x64x16xf32>
        }
      }
    }
    loop.return
  }
}
// CHECK-LABEL: loop.func @pointwise
// CHECK:         loop.for %b = %c0 to %c2 step %c1 kind(parallel) {
// CHECK-NEXT:      loop.for %h = %c0 to %c64 step %c1 kind(parallel) {
// CHECK:         } {lamina.rows_first}
// CHECK-LABEL: loop.func @depthwise
// CHECK:         loop.for %b = %c0 to %c2 step %c1 kind(parallel) {
// CHECK-NEXT:      loop.for %h = %c0 to %c64 step %c1 kind(parallel) {
// CHECK-NOT:     lamina.rows_first
// CHECK:         loop.return

// BLOCKS-NOT:    lamina.rows_first

// LLVM-LABEL:   llvm.func internal @pointwise_par0(
// LLVM:           ^bb1(%b: i64):
// LLVM:             %[[LOW:.*]] = llvm.sub %{{.*}}, %b : i64
// LLVM-NEXT:        %{{.*}} = llvm.udiv %[[LOW]], %{{.*}} : i64
// LLVM:           ^bb3(%row: i64):
// LLVM-LABEL:   llvm.func internal @pointwise_par0_omp(
// LLVM:           %[[N:.*]] = llvm.call @omp_get_num_threads()
// LLVM:           %[[ALONE:.*]] = llvm.icmp "eq"
// LLVM:           llvm.select %[[ALONE]]
// LLVM-LABEL:   llvm.func internal @depthwise_par0(
// LLVM-NOT:       %row
// LLVM:           llvm.return
