// RUN: lamina-opt %s -p 'schedule{cores=2}' | filecheck %s
// RUN: lamina-opt %s -p 'schedule{cores=1}' | filecheck %s --check-prefix=ONE
// RUN: lamina-opt %s -p 'schedule-fold-storage,schedule-parallel{cores=2}' | filecheck %s --check-prefix=ONE

// `share_rows_before_folding` (schedule/parallel.py, a step of `schedule`): a
// parallel loop of few iterations (4 rows of Winograd tile positions) holding a
// serial loop (4 columns) whose stages write and read a local temporary per
// position. With two cores `schedule` marks the inner loop parallel before
// storage folding, so the temporary keeps one slice per position and the 16
// positions are shared (`lower-to-llvm` collapses the two loops). With one core,
// or with folding first (the rule passes one by one), the column dimension is
// folded away and the column loop stays serial: 4 iterations for two threads.
// A temporary larger than the L2 cache (@large_slices: 8 MiB unfolded) stays
// folded with two cores as well.

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @tile_positions(%x: memref<4x4x8x16xf32>, %y: memref<4x4x16xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %zero = arith.constant 0.000000e+00 : f32
    %v = loop.alloc {scope = "local"} : memref<4x4x8x16xf32>
    loop.for %a = %c0 to %c4 step %c1 kind(parallel) {
      loop.for %b = %c0 to %c4 step %c1 {
        loop.for %t = %c0 to %c8 step %c1 {
          loop.for %l = %c0 to %c16 step %c1 kind(vectorized) {
            %e = loop.load %x[%a, %b, %t, %l] : memref<4x4x8x16xf32>
            %d = arith.addf %e, %e : f32
            loop.store %d, %v[%a, %b, %t, %l] : memref<4x4x8x16xf32>
          }
        }
        loop.for %l2 = %c0 to %c16 step %c1 kind(vectorized) {
          %s = loop.for %t2 = %c0 to %c8 step %c1 iter_args(%acc = %zero) -> (f32) {
            %e2 = loop.load %v[%a, %b, %t2, %l2] : memref<4x4x8x16xf32>
            %m = arith.addf %acc, %e2 : f32
            loop.yield %m : f32
          }
          loop.store %s, %y[%a, %b, %l2] : memref<4x4x16xf32>
        }
      }
    }
    loop.free %v : memref<4x4x8x16xf32>
    loop.return
  }
  loop.func @large_slices(%x: memref<4x4x8192x16xf32>, %y: memref<4x4x16xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8192 : index
    %c16 = arith.constant 16 : index
    %zero = arith.constant 0.000000e+00 : f32
    %v = loop.alloc {scope = "local"} : memref<4x4x8192x16xf32>
    loop.for %a = %c0 to %c4 step %c1 kind(parallel) {
      loop.for %b = %c0 to %c4 step %c1 {
        loop.for %t = %c0 to %c8 step %c1 {
          loop.for %l = %c0 to %c16 step %c1 kind(vectorized) {
            %e = loop.load %x[%a, %b, %t, %l] : memref<4x4x8192x16xf32>
            %d = arith.addf %e, %e : f32
            loop.store %d, %v[%a, %b, %t, %l] : memref<4x4x8192x16xf32>
          }
        }
        loop.for %l2 = %c0 to %c16 step %c1 kind(vectorized) {
          %s = loop.for %t2 = %c0 to %c8 step %c1 iter_args(%acc = %zero) -> (f32) {
            %e2 = loop.load %v[%a, %b, %t2, %l2] : memref<4x4x8192x16xf32>
            %m = arith.addf %acc, %e2 : f32
            loop.yield %m : f32
          }
          loop.store %s, %y[%a, %b, %l2] : memref<4x4x16xf32>
        }
      }
    }
    loop.free %v : memref<4x4x8192x16xf32>
    loop.return
  }
}

// CHECK-LABEL: loop.func @tile_positions
// CHECK:         %v = loop.alloc {scope = "local"} : memref<4x4x8x16xf32>
// CHECK:         loop.for %a = %c0 to %c4 step %c1 kind(parallel) {
// CHECK-NEXT:      loop.for %b = %c0 to %c4 step %c1 kind(parallel) {
// CHECK:             loop.store %d, %v[%a, %b, %t, %l] : memref<4x4x8x16xf32>
// CHECK:               loop.load %v[%a, %b, %t2, %l2] : memref<4x4x8x16xf32>

// ONE-LABEL: loop.func @tile_positions
// ONE:         %v = loop.alloc {scope = "local"} : memref<4x8x16xf32>
// ONE:         loop.for %a = %c0 to %c4 step %c1 kind(parallel) {
// ONE-NEXT:      loop.for %b = %c0 to %c4 step %c1 {
// ONE:             loop.store %d, %v[%a, %t, %l] : memref<4x8x16xf32>
// ONE-LABEL: loop.func @large_slices

// CHECK-LABEL: loop.func @large_slices
// CHECK:         %v = loop.alloc {scope = "local"} : memref<4x8192x16xf32>
// CHECK:         loop.for %a = %c0 to %c4 step %c1 kind(parallel) {
// CHECK-NEXT:      loop.for %b = %c0 to %c4 step %c1 {
