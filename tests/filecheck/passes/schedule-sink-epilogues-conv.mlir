// RUN: lamina-opt %s -p schedule-sink-epilogues | filecheck %s
// RUN: lamina-opt %s -p 'schedule-sink-epilogues{epilogue_step_vectors=1}' | filecheck %s --check-prefix=STEP1

// Epilogue sinking into a channel-blocked convolution's register blocks
// (one rule of `schedule`). @rows is a 1x1 convolution as
// `schedule-register-block`, stage fusion and write-through leave it: its
// register blocks (output columns io .. io+1, one vector of output
// channels) span the whole row, so there is no column-block loop; the bias
// + relu epilogue after them walks the row column by column. It is split by
// the block's 2 columns and fused into the block loop: each block gets its
// bias and relu right after its reduction, the 2 columns jammed into one
// vectorized loop. @interior blocks only columns 1-2 of 4 (a depthwise
// convolution's border columns are split off): its epilogue, over all 4
// columns, stays where it was. @long_rows is @rows with a bias + SiLU
// epilogue (its `math.exp` makes it longer than `epilogue_jam_max_ops`):
// sunk the same way; its block's 2 columns hold fewer vectors than
// `epilogue_step_vectors` (3), so both are jammed (two sigmoids), but with
// one vector per step (STEP1) they stay a loop in the block, the sigmoid
// emitted once. @row_tail_block is a row of 5 columns in blocks of 2 and a
// tail block of the last column (what `schedule-register-block` leaves when
// the width is not a multiple of MR; AVX2's 14-wide rows in blocks of 4), each
// block's rows filled by a loop of their own: the epilogue is split where
// the tail starts, and each part joins its block.

// CHECK-LABEL: loop.func @rows
// CHECK:       loop.for %oh = %c0 to %c4 step %c1 kind(parallel) {
// CHECK-NEXT:    loop.for %io = %c0 to %c4 step %c2 {
// CHECK:           loop.for %k = %c0 to %c16 step %c1 {
// CHECK:             loop.store %n1
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:      %[[I0:.*]] = arith.addi %io, %c0 : index
// CHECK-NEXT:      %[[I1:.*]] = arith.addi %io, %c1 : index
// CHECK-NEXT:      loop.for %{{.*}} = %c0 to %c16 step %c1 kind(vectorized) {
// CHECK:             %[[V0:.*]] = loop.load %out[%oh, %[[I0]], %[[L:.*]]] : memref<4x4x16xf32>
// CHECK:             %[[V1:.*]] = loop.load %out[%oh, %[[I1]], %[[L]]] : memref<4x4x16xf32>
// CHECK:             arith.maximumf
// CHECK:             arith.maximumf
// CHECK:             loop.store %{{.*}}, %out[%oh, %[[I0]], %[[L]]] : memref<4x4x16xf32>
// CHECK:             loop.store %{{.*}}, %out[%oh, %[[I1]], %[[L]]] : memref<4x4x16xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:  }
// CHECK-NEXT:  loop.return

// CHECK-LABEL: loop.func @long_rows
// CHECK:       loop.for %io = %c0 to %c4 step %c2 {
// CHECK:         loop.for %k = %c0 to %c16 step %c1 {
// CHECK:         loop.for %{{.*}} = %c0 to %c16 step %c1 kind(vectorized) {
// CHECK-COUNT-2:   math.exp
// CHECK-NOT:     math.exp
// CHECK:       loop.return

// STEP1-LABEL: loop.func @long_rows
// STEP1:       loop.for %oh = %c0 to %c4 step %c1 kind(parallel) {
// STEP1-NEXT:    loop.for %io = %c0 to %c4 step %c2 {
// STEP1:           loop.for %k = %c0 to %c16 step %c1 {
// STEP1:           loop.for %[[R:.*]] = %c0 to %c2 step %c1 {
// STEP1-NEXT:        %[[I:.*]] = arith.addi %io, %[[R]] : index
// STEP1-NEXT:        loop.for %{{.*}} = %c0 to %c16 step %c1 kind(vectorized) {
// STEP1:               loop.load %out[%oh, %[[I]], %{{.*}}] : memref<4x4x16xf32>
// STEP1:               math.exp
// STEP1-NOT:           math.exp
// STEP1:               loop.store %{{.*}}, %out[%oh, %[[I]], %{{.*}}] : memref<4x4x16xf32>
// STEP1-NEXT:        }
// STEP1-NEXT:      }
// STEP1-NEXT:    }
// STEP1-NEXT:  }
// STEP1-NEXT:  loop.return

// CHECK-LABEL: loop.func @row_tail_block
// CHECK:       loop.for %oh = %c0 to %c4 step %c1 kind(parallel) {
// CHECK-NEXT:    loop.for %io = %c0 to %c4 step %c2 {
// CHECK:           loop.for %k = %c0 to %c16 step %c1 {
// CHECK:           loop.for %{{.*}} = %c0 to %c16 step %c1 kind(vectorized) {
// CHECK-COUNT-2:     arith.maximumf
// CHECK:           }
// CHECK-NEXT:    }
// CHECK-NEXT:    loop.for %it = %c4 to %c5 step %c1 {
// CHECK:           loop.for %kt = %c0 to %c16 step %c1 {
// CHECK:           loop.for %{{.*}} = %c0 to %c16 step %c1 kind(vectorized) {
// CHECK:             arith.maximumf
// CHECK-NOT:         arith.maximumf
// CHECK:           }
// CHECK-NEXT:    }
// CHECK-NEXT:  }
// CHECK-NEXT:  loop.return

// CHECK-LABEL: loop.func @interior
// CHECK:       loop.for %io = %c1 to %c3 step %c2 {
// CHECK-NOT:     arith.maximumf
// CHECK:       loop.for %ow = %c0 to %c4 step %c1 {
// CHECK-NEXT:    loop.for %l3 = %c0 to %c16 step %c1 kind(vectorized) {
// CHECK-NEXT:      loop.load %out[%ow, %l3]

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @rows(%x: memref<4x4x16xf32>, %w: memref<16x16xf32>, %bias: memref<16xf32>, %out: memref<4x4x16xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c16 = arith.constant 16 : index
    %zero = arith.constant 0.0 : f32
    loop.for %oh = %c0 to %c4 step %c1 kind(parallel) {
      loop.for %io = %c0 to %c4 step %c2 {
        %i0 = arith.addi %io, %c0 : index
        %i1 = arith.addi %io, %c1 : index
        loop.for %l = %c0 to %c16 step %c1 kind(vectorized) {
          loop.store %zero, %out[%oh, %i0, %l] : memref<4x4x16xf32>
          loop.store %zero, %out[%oh, %i1, %l] : memref<4x4x16xf32>
        }
        loop.for %k = %c0 to %c16 step %c1 {
          loop.for %l2 = %c0 to %c16 step %c1 kind(vectorized) {
            %x0 = loop.load %x[%oh, %i0, %k] : memref<4x4x16xf32>
            %x1 = loop.load %x[%oh, %i1, %k] : memref<4x4x16xf32>
            %wv = loop.load %w[%k, %l2] : memref<16x16xf32>
            %p0 = arith.mulf %x0, %wv : f32
            %p1 = arith.mulf %x1, %wv : f32
            %s0 = loop.load %out[%oh, %i0, %l2] : memref<4x4x16xf32>
            %s1 = loop.load %out[%oh, %i1, %l2] : memref<4x4x16xf32>
            %n0 = arith.addf %s0, %p0 : f32
            %n1 = arith.addf %s1, %p1 : f32
            loop.store %n0, %out[%oh, %i0, %l2] : memref<4x4x16xf32>
            loop.store %n1, %out[%oh, %i1, %l2] : memref<4x4x16xf32>
          }
        }
      }
      loop.for %ow = %c0 to %c4 step %c1 {
        loop.for %l3 = %c0 to %c16 step %c1 kind(vectorized) {
          %v = loop.load %out[%oh, %ow, %l3] : memref<4x4x16xf32>
          %bb = loop.load %bias[%l3] : memref<16xf32>
          %t = arith.addf %v, %bb : f32
          %r = arith.maximumf %t, %zero : f32
          loop.store %r, %out[%oh, %ow, %l3] : memref<4x4x16xf32>
        }
      }
    }
    loop.return
  }

  loop.func @long_rows(%x: memref<4x4x16xf32>, %w: memref<16x16xf32>, %bias: memref<16xf32>, %out: memref<4x4x16xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c16 = arith.constant 16 : index
    %zero = arith.constant 0.0 : f32
    %one = arith.constant 1.0 : f32
    %min = arith.constant -87.0 : f32
    %max = arith.constant 88.0 : f32
    loop.for %oh = %c0 to %c4 step %c1 kind(parallel) {
      loop.for %io = %c0 to %c4 step %c2 {
        %i0 = arith.addi %io, %c0 : index
        %i1 = arith.addi %io, %c1 : index
        loop.for %l = %c0 to %c16 step %c1 kind(vectorized) {
          loop.store %zero, %out[%oh, %i0, %l] : memref<4x4x16xf32>
          loop.store %zero, %out[%oh, %i1, %l] : memref<4x4x16xf32>
        }
        loop.for %k = %c0 to %c16 step %c1 {
          loop.for %l2 = %c0 to %c16 step %c1 kind(vectorized) {
            %x0 = loop.load %x[%oh, %i0, %k] : memref<4x4x16xf32>
            %x1 = loop.load %x[%oh, %i1, %k] : memref<4x4x16xf32>
            %wv = loop.load %w[%k, %l2] : memref<16x16xf32>
            %p0 = arith.mulf %x0, %wv : f32
            %p1 = arith.mulf %x1, %wv : f32
            %s0 = loop.load %out[%oh, %i0, %l2] : memref<4x4x16xf32>
            %s1 = loop.load %out[%oh, %i1, %l2] : memref<4x4x16xf32>
            %n0 = arith.addf %s0, %p0 : f32
            %n1 = arith.addf %s1, %p1 : f32
            loop.store %n0, %out[%oh, %i0, %l2] : memref<4x4x16xf32>
            loop.store %n1, %out[%oh, %i1, %l2] : memref<4x4x16xf32>
          }
        }
      }
      loop.for %ow = %c0 to %c4 step %c1 {
        loop.for %l3 = %c0 to %c16 step %c1 kind(vectorized) {
          %v = loop.load %out[%oh, %ow, %l3] : memref<4x4x16xf32>
          %bb = loop.load %bias[%l3] : memref<16xf32>
          %t = arith.addf %v, %bb : f32
          %n = arith.negf %t : f32
          %lo = arith.maximumf %n, %min : f32
          %cl = arith.minimumf %lo, %max : f32
          %e = math.exp %cl : f32
          %d = arith.addf %one, %e : f32
          %s = arith.divf %one, %d : f32
          %r = arith.mulf %t, %s : f32
          loop.store %r, %out[%oh, %ow, %l3] : memref<4x4x16xf32>
        }
      }
    }
    loop.return
  }

  loop.func @row_tail_block(%x: memref<4x5x16xf32>, %w: memref<16x16xf32>, %bias: memref<16xf32>, %out: memref<4x5x16xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c5 = arith.constant 5 : index
    %c16 = arith.constant 16 : index
    %zero = arith.constant 0.0 : f32
    loop.for %oh = %c0 to %c4 step %c1 kind(parallel) {
      loop.for %io = %c0 to %c4 step %c2 {
        %i0 = arith.addi %io, %c0 : index
        %i1 = arith.addi %io, %c1 : index
        loop.for %l = %c0 to %c16 step %c1 kind(vectorized) {
          loop.store %zero, %out[%oh, %i0, %l] : memref<4x5x16xf32>
        }
        loop.for %lb = %c0 to %c16 step %c1 kind(vectorized) {
          loop.store %zero, %out[%oh, %i1, %lb] : memref<4x5x16xf32>
        }
        loop.for %k = %c0 to %c16 step %c1 {
          loop.for %l2 = %c0 to %c16 step %c1 kind(vectorized) {
            %x0 = loop.load %x[%oh, %i0, %k] : memref<4x5x16xf32>
            %x1 = loop.load %x[%oh, %i1, %k] : memref<4x5x16xf32>
            %wv = loop.load %w[%k, %l2] : memref<16x16xf32>
            %p0 = arith.mulf %x0, %wv : f32
            %p1 = arith.mulf %x1, %wv : f32
            %s0 = loop.load %out[%oh, %i0, %l2] : memref<4x5x16xf32>
            %s1 = loop.load %out[%oh, %i1, %l2] : memref<4x5x16xf32>
            %n0 = arith.addf %s0, %p0 : f32
            %n1 = arith.addf %s1, %p1 : f32
            loop.store %n0, %out[%oh, %i0, %l2] : memref<4x5x16xf32>
            loop.store %n1, %out[%oh, %i1, %l2] : memref<4x5x16xf32>
          }
        }
      }
      loop.for %it = %c4 to %c5 step %c1 {
        %t0 = arith.addi %it, %c0 : index
        loop.for %lt = %c0 to %c16 step %c1 kind(vectorized) {
          loop.store %zero, %out[%oh, %t0, %lt] : memref<4x5x16xf32>
        }
        loop.for %kt = %c0 to %c16 step %c1 {
          loop.for %lt2 = %c0 to %c16 step %c1 kind(vectorized) {
            %xt = loop.load %x[%oh, %t0, %kt] : memref<4x5x16xf32>
            %wt = loop.load %w[%kt, %lt2] : memref<16x16xf32>
            %pt = arith.mulf %xt, %wt : f32
            %st = loop.load %out[%oh, %t0, %lt2] : memref<4x5x16xf32>
            %nt = arith.addf %st, %pt : f32
            loop.store %nt, %out[%oh, %t0, %lt2] : memref<4x5x16xf32>
          }
        }
      }
      loop.for %ow = %c0 to %c5 step %c1 {
        loop.for %l3 = %c0 to %c16 step %c1 kind(vectorized) {
          %v = loop.load %out[%oh, %ow, %l3] : memref<4x5x16xf32>
          %bb = loop.load %bias[%l3] : memref<16xf32>
          %t = arith.addf %v, %bb : f32
          %r = arith.maximumf %t, %zero : f32
          loop.store %r, %out[%oh, %ow, %l3] : memref<4x5x16xf32>
        }
      }
    }
    loop.return
  }

  loop.func @interior(%x: memref<4x16xf32>, %w: memref<16x16xf32>, %out: memref<4x16xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c16 = arith.constant 16 : index
    %zero = arith.constant 0.0 : f32
    loop.for %io = %c1 to %c3 step %c2 {
      %i0 = arith.addi %io, %c0 : index
      %i1 = arith.addi %io, %c1 : index
      loop.for %l = %c0 to %c16 step %c1 kind(vectorized) {
        loop.store %zero, %out[%i0, %l] : memref<4x16xf32>
        loop.store %zero, %out[%i1, %l] : memref<4x16xf32>
      }
      loop.for %k = %c0 to %c16 step %c1 {
        loop.for %l2 = %c0 to %c16 step %c1 kind(vectorized) {
          %x0 = loop.load %x[%i0, %k] : memref<4x16xf32>
          %x1 = loop.load %x[%i1, %k] : memref<4x16xf32>
          %wv = loop.load %w[%k, %l2] : memref<16x16xf32>
          %p0 = arith.mulf %x0, %wv : f32
          %p1 = arith.mulf %x1, %wv : f32
          %s0 = loop.load %out[%i0, %l2] : memref<4x16xf32>
          %s1 = loop.load %out[%i1, %l2] : memref<4x16xf32>
          %n0 = arith.addf %s0, %p0 : f32
          %n1 = arith.addf %s1, %p1 : f32
          loop.store %n0, %out[%i0, %l2] : memref<4x16xf32>
          loop.store %n1, %out[%i1, %l2] : memref<4x16xf32>
        }
      }
    }
    loop.for %ow = %c0 to %c4 step %c1 {
      loop.for %l3 = %c0 to %c16 step %c1 kind(vectorized) {
        %v = loop.load %out[%ow, %l3] : memref<4x16xf32>
        %r = arith.maximumf %v, %zero : f32
        loop.store %r, %out[%ow, %l3] : memref<4x16xf32>
      }
    }
    loop.return
  }
}
