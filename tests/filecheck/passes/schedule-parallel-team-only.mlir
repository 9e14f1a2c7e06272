// RUN: lamina-opt %s --split-input-file -p 'schedule-parallel{cores=2}' | filecheck %s
// RUN: lamina-opt %s --split-input-file -p 'schedule{cores=2}' | filecheck %s
// RUN: lamina-opt %s --split-input-file -p 'schedule-parallel{cores=1}' | filecheck %s --check-prefix=SERIAL
// RUN: lamina-opt %s --split-input-file -p 'schedule-parallel{cores=2 parallel_team_min_work=1000000}' | filecheck %s --check-prefix=SERIAL
// RUN: lamina-opt %s --split-input-file -p 'schedule-parallel{cores=2},lower-to-llvm' | filecheck %s --check-prefix=LLVM

// A spatial nest that `lower-te` left serial (below `parallel_min_work`) but
// that reads at least `parallel_team_min_work` (2**15) tensor elements, a read
// gathered by the vectorized loop counting `parallel_gather_reads` (8), is
// shared with the workers of a call's thread team only: its loop becomes
// `parallel` and `lamina.team_only`, and `lower-to-llvm` asks libgomp for one
// thread (`GOMP_parallel(fn, data, 1, 0)`), which the call team ignores.
//
// @unblock (NCHW16c -> NCHW, 16x16x16: 4096 gathered reads, 32768) is
// shared (its 16 channels collapsed with the rows, `share_rows`; `schedule`
// first moves the rows outside, `schedule-gather-reuse`); @copy, the
// same size read contiguously (4096), is not; @accumulate (not spatial) is not. With one core, or a threshold above the nest's work,
// nothing changes (SERIAL).

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @unblock(%x: memref<1x16x16x16xf32>, %y: memref<16x16x16xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    loop.for %c = %c0 to %c16 step %c1 {
      loop.for %h = %c0 to %c16 step %c1 {
        loop.for %w = %c0 to %c16 step %c1 kind(vectorized) {
          %v = loop.load %x[%c0, %h, %w, %c] : memref<1x16x16x16xf32>
          loop.store %v, %y[%c, %h, %w] : memref<16x16x16xf32>
        }
      }
    }
    loop.return
  }

  loop.func @copy(%x: memref<16x16x16xf32>, %y: memref<16x16x16xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    loop.for %c = %c0 to %c16 step %c1 {
      loop.for %h = %c0 to %c16 step %c1 {
        loop.for %w = %c0 to %c16 step %c1 kind(vectorized) {
          %v = loop.load %x[%c, %h, %w] : memref<16x16x16xf32>
          loop.store %v, %y[%c, %h, %w] : memref<16x16x16xf32>
        }
      }
    }
    loop.return
  }

  loop.func @accumulate(%x: memref<16x16x16xf32>, %y: memref<16x16xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    loop.for %c = %c0 to %c16 step %c1 {
      loop.for %h = %c0 to %c16 step %c1 {
        loop.for %w = %c0 to %c16 step %c1 kind(vectorized) {
          %v = loop.load %x[%c, %h, %w] : memref<16x16x16xf32>
          %a = loop.load %y[%h, %w] : memref<16x16xf32>
          %b = loop.load %x[%h, %c, %w] : memref<16x16x16xf32>
          %d = loop.load %x[%w, %h, %c] : memref<16x16x16xf32>
          %s0 = arith.addf %a, %v : f32
          %s1 = arith.addf %s0, %b : f32
          %s = arith.addf %s1, %d : f32
          loop.store %s, %y[%h, %w] : memref<16x16xf32>
        }
      }
    }
    loop.return
  }
}
// CHECK-LABEL: loop.func @unblock
// CHECK:         loop.for %{{[ch]}} = %c0 to %c16 step %c1 kind(parallel) {
// CHECK-NEXT:      loop.for %{{[ch]}} = %c0 to %c16 step %c1 kind(parallel) {
// CHECK:         } {lamina.team_only}
// CHECK-LABEL: loop.func @copy
// CHECK-NOT:     kind(parallel)
// CHECK-LABEL: loop.func @accumulate
// CHECK-NOT:     kind(parallel)
// CHECK-NOT:     lamina.team_only
// SERIAL-NOT:    kind(parallel)
// SERIAL-NOT:    lamina.team_only
// LLVM-LABEL:  llvm.func @unblock(
// LLVM:          %[[FN:.*]] = llvm.mlir.addressof @unblock_par0_omp : !llvm.ptr
// LLVM-NEXT:     %[[ZERO:.*]] = llvm.mlir.constant(0 : i32) : i32
// LLVM-NEXT:     %[[ONE:.*]] = llvm.mlir.constant(1 : i32) : i32
// LLVM-NEXT:     llvm.call @GOMP_parallel(%[[FN]], %{{.*}}, %[[ONE]], %[[ZERO]]) {lamina.iterations = 256 : i64}
// LLVM-LABEL:  llvm.func @copy(
// LLVM-NOT:      GOMP_parallel
// LLVM:          llvm.return

// -----

// A layout transform into NCHW16c of 58 channels: three whole channel blocks,
// then the tail block (split by `schedule-split-borders`). The three blocks are
// too few for two cores (`parallel_min_iterations_per_core` = 2): they are
// collapsed with the rows (`share_rows`); the tail's loop of one iteration
// hands the marking to its rows (28, collapsed with the columns).

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @block(%x: memref<1x58x28x28xf32>, %y: memref<1x4x28x28x16xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c16 = arith.constant 16 : index
    %c28 = arith.constant 28 : index
    %c48 = arith.constant 48 : index
    %c58 = arith.constant 58 : index
    %f0 = arith.constant 0.000000e+00 : f32
    loop.for %b = %c0 to %c3 step %c1 {
      loop.for %h = %c0 to %c28 step %c1 {
        loop.for %w = %c0 to %c28 step %c1 {
          loop.for %l = %c0 to %c16 step %c1 kind(vectorized) {
            %m = arith.muli %b, %c16 : index
            %ch = arith.addi %m, %l : index
            %v = loop.load %x[%c0, %ch, %h, %w] : memref<1x58x28x28xf32>
            loop.store %v, %y[%c0, %b, %h, %w, %l] : memref<1x4x28x28x16xf32>
          }
        }
      }
    }
    loop.for %t = %c3 to %c4 step %c1 {
      loop.for %h2 = %c0 to %c28 step %c1 {
        loop.for %w2 = %c0 to %c28 step %c1 {
          loop.for %l2 = %c0 to %c16 step %c1 kind(vectorized) {
            %ch2 = arith.addi %c48, %l2 : index
            %in = arith.cmpi slt, %ch2, %c58 : index
            %i = arith.select %in, %ch2, %c0 : index
            %v2 = loop.load %x[%c0, %i, %h2, %w2] : memref<1x58x28x28xf32>
            %z = arith.select %in, %v2, %f0 : f32
            loop.store %z, %y[%c0, %t, %h2, %w2, %l2] : memref<1x4x28x28x16xf32>
          }
        }
      }
    }
    loop.return
  }
}
// CHECK-LABEL: loop.func @block
// CHECK:         loop.for %b = %c0 to %c3 step %c1 kind(parallel) {
// CHECK-NEXT:      loop.for %h = %c0 to %c28 step %c1 kind(parallel) {
// CHECK:         } {lamina.team_only}
// CHECK:         loop.for %t = %c3 to %c4 step %c1 {
// CHECK-NEXT:      loop.for %h2 = %c0 to %c28 step %c1 kind(parallel) {
// CHECK-NEXT:        loop.for %w2 = %c0 to %c28 step %c1 kind(parallel) {
// CHECK:           } {lamina.team_only}
// SERIAL-NOT:    kind(parallel)
// LLVM-LABEL:  llvm.func @block(
// LLVM:          %[[ONE:.*]] = llvm.mlir.constant(1 : i32) : i32
// LLVM-NEXT:     llvm.call @GOMP_parallel(%{{.*}}, %{{.*}}, %[[ONE]], %{{.*}}) {lamina.iterations = 84 : i64}
// LLVM:          %[[ONE2:.*]] = llvm.mlir.constant(1 : i32) : i32
// LLVM-NEXT:     llvm.call @GOMP_parallel(%{{.*}}, %{{.*}}, %[[ONE2]], %{{.*}}) {lamina.iterations = 784 : i64}

// -----

// A layout transform out of NCHW16c walks the channels in blocks of 16: each
// iteration of the loop of step 16 writes channels `io + ii`, `ii` an inner
// loop from 0 to 16, so the iterations write disjoint blocks
// (`_disjoint_blocks`) and the nest (1024 x 7 x 7 gathered reads) is shared.
// @overlap writes `io + ii` with `ii` up to 32: blocks overlap, it stays serial.

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @unblock_channels(%x: memref<64x7x7x16xf32>, %y: memref<1024x7x7xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c7 = arith.constant 7 : index
    %c16 = arith.constant 16 : index
    %c1024 = arith.constant 1024 : index
    loop.for %io = %c0 to %c1024 step %c16 {
      loop.for %h = %c0 to %c7 step %c1 {
        loop.for %ii = %c0 to %c16 step %c1 {
          %i = arith.addi %io, %ii : index
          loop.for %w = %c0 to %c7 step %c1 kind(vectorized) {
            %b = arith.divui %io, %c16 : index
            %v = loop.load %x[%b, %h, %w, %ii] : memref<64x7x7x16xf32>
            loop.store %v, %y[%i, %h, %w] : memref<1024x7x7xf32>
          }
        }
      }
    }
    loop.return
  }

  loop.func @overlap(%x: memref<64x7x7x16xf32>, %y: memref<1040x7x7xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c7 = arith.constant 7 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    %c1024 = arith.constant 1024 : index
    loop.for %io = %c0 to %c1024 step %c16 {
      loop.for %h = %c0 to %c7 step %c1 {
        loop.for %ii = %c0 to %c32 step %c1 {
          %i = arith.addi %io, %ii : index
          loop.for %w = %c0 to %c7 step %c1 kind(vectorized) {
            %b = arith.divui %io, %c16 : index
            %v = loop.load %x[%b, %h, %w, %c0] : memref<64x7x7x16xf32>
            loop.store %v, %y[%i, %h, %w] : memref<1040x7x7xf32>
          }
        }
      }
    }
    loop.return
  }
}
// CHECK-LABEL: loop.func @unblock_channels
// CHECK:         loop.for %io = %c0 to %c1024 step %c16 kind(parallel) {
// CHECK:         } {lamina.team_only}
// CHECK-LABEL: loop.func @overlap
// CHECK-NOT:     kind(parallel)
// CHECK-NOT:     lamina.team_only
// SERIAL-NOT:    kind(parallel)
// LLVM-LABEL:  llvm.func @unblock_channels(
// LLVM:          %[[ONE:.*]] = llvm.mlir.constant(1 : i32) : i32
// LLVM-NEXT:     llvm.call @GOMP_parallel(%{{.*}}, %{{.*}}, %[[ONE]], %{{.*}}) {lamina.iterations = 64 : i64}
