// RUN: lamina-opt %s -p schedule-sink-epilogues | filecheck %s
// RUN: lamina-opt %s -p 'schedule-sink-epilogues{epilogue_jam_max_ops=1000}' | filecheck %s --check-prefix=JAM

// Epilogue sinking alone (one rule of `schedule`). @blocked is a 4x8 matmul
// as `schedule-register-block` leaves it (column blocks of NR = 4 outermost,
// row blocks of MR = 2, the rows jammed) followed by its bias+relu epilogue
// over the rows: the epilogue is tiled like the matmul and runs in each
// block right after the block's reduction, its two rows jammed into one
// vectorized loop. @tail_block has a block of 2 rows and, inside the same
// column block, a tail block of its 5th row (as `schedule-register-block`
// leaves M mod MR rows): each gets its part of the epilogue.
// @long_swish is like @tail_block (blocks of 6 rows, a tail row) with a
// SiLU epilogue (x * sigmoid(x), as `lower-te` emits it: 39 operations,
// its `math.exp` counting 30, longer than `epilogue_jam_max_ops`): it is
// sunk the same way, but the 6-row block keeps a loop over its rows that
// jams 3 of them per step (`epilogue_step_vectors`), so the sigmoid is
// emitted 3 times for the block shape and once for the tail row, not once
// per row; with `epilogue_jam_max_ops` raised every row is jammed (JAM).
// @row_tail (rows 0-3 blocked, row 4 elsewhere) and
// @neighbour (the epilogue reads the next column, which a later block
// writes) keep their epilogue where it was.

// CHECK-LABEL: loop.func @blocked
// CHECK:       loop.for %jo = %c0 to %c8 step %c4 kind(parallel) {
// CHECK-NEXT:    loop.for %io = %c0 to %c4 step %c2 {
// CHECK:           loop.for %k = %c0 to %c3 step %c1 {
// CHECK:           }
// CHECK:           loop.for %[[JJ:.*]] = %c0 to %c4 step %c1 kind(vectorized) {
// CHECK-NEXT:        %[[J:.*]] = arith.addi %jo, %[[JJ]] : index
// CHECK:             %[[V0:.*]] = loop.load %c[%[[I0:.*]], %[[J]]] : memref<4x8xf32>
// CHECK:             %[[V1:.*]] = loop.load %c[%[[I1:.*]], %[[J]]] : memref<4x8xf32>
// CHECK:             arith.maximumf
// CHECK:             arith.maximumf
// CHECK:             loop.store %{{.*}}, %c[%[[I0]], %[[J]]] : memref<4x8xf32>
// CHECK:             loop.store %{{.*}}, %c[%[[I1]], %[[J]]] : memref<4x8xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:  }
// CHECK-NEXT:  loop.return

// CHECK-LABEL: loop.func @tail_block
// CHECK:       loop.for %jo = %c0 to %c8 step %c4 kind(parallel) {
// CHECK-NEXT:    loop.for %io = %c0 to %c4 step %c2 {
// CHECK:           loop.for %{{.*}} = %c0 to %c4 step %c1 kind(vectorized) {
// CHECK-COUNT-2:     arith.maximumf
// CHECK:         loop.for %it = %c4 to %c5 step %c1 {
// CHECK:           loop.store %zero, %c[%it, %{{.*}}] : memref<5x8xf32>
// CHECK:           loop.for %{{.*}} = %c0 to %c4 step %c1 kind(vectorized) {
// CHECK:             arith.maximumf
// CHECK-NOT:     arith.maximumf
// CHECK:       loop.return

// CHECK-LABEL: loop.func @long_swish
// CHECK:       loop.for %jo = %c0 to %c8 step %c4 kind(parallel) {
// CHECK-NEXT:    loop.for %io = %c0 to %c6 step %c6 {
// CHECK:           loop.for %[[R:.*]] = %c0 to %c6 step %c3 {
// CHECK-NEXT:        %[[R0:.*]] = arith.addi %[[R]], %c0 : index
// CHECK-NEXT:        %[[R1:.*]] = arith.addi %[[R]], %c1 : index
// CHECK-NEXT:        %[[R2:.*]] = arith.addi %[[R]], %c2 : index
// CHECK-NEXT:        %[[I0:.*]] = arith.addi %io, %[[R0]] : index
// CHECK-NEXT:        %[[I1:.*]] = arith.addi %io, %[[R1]] : index
// CHECK-NEXT:        %[[I2:.*]] = arith.addi %io, %[[R2]] : index
// CHECK-NEXT:        loop.for %{{.*}} = %c0 to %c4 step %c1 kind(vectorized) {
// CHECK:               loop.load %c[%[[I0]], %{{.*}}] : memref<7x8xf32>
// CHECK:               loop.load %c[%[[I1]], %{{.*}}] : memref<7x8xf32>
// CHECK:               loop.load %c[%[[I2]], %{{.*}}] : memref<7x8xf32>
// CHECK-COUNT-3:       math.exp
// CHECK-NOT:           math.exp
// CHECK:               loop.store %{{.*}}, %c[%[[I2]], %{{.*}}] : memref<7x8xf32>
// CHECK:         loop.for %it = %c6 to %c7 step %c1 {
// CHECK:           loop.for %{{.*}} = %c0 to %c4 step %c1 kind(vectorized) {
// CHECK:             math.exp
// CHECK-NOT:     math.exp
// CHECK:       loop.return

// JAM-LABEL:   loop.func @long_swish
// JAM:         loop.for %io = %c0 to %c6 step %c6 {
// JAM-COUNT-6:   math.exp
// JAM:         loop.for %it = %c6 to %c7 step %c1 {
// JAM:           math.exp
// JAM-NOT:     math.exp
// JAM:         loop.return

// CHECK-LABEL: loop.func @row_tail
// CHECK:       loop.for %i = %c0 to %c5 step %c1 kind(parallel) {
// CHECK-LABEL: loop.func @neighbour
// CHECK:       loop.for %i = %c0 to %c4 step %c1 kind(parallel) {
// CHECK-NEXT:    loop.for %{{.*}} = %c0 to %c8 step %c1 kind(vectorized) {
// CHECK-NEXT:      arith.addi

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @blocked(%a: memref<4x3xf32>, %b: memref<3x8xf32>, %bias: memref<8xf32>, %c: memref<4x8xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %zero = arith.constant 0.0 : f32
    loop.for %jo = %c0 to %c8 step %c4 kind(parallel) {
      loop.for %io = %c0 to %c4 step %c2 {
        %i0 = arith.addi %io, %c0 : index
        %i1 = arith.addi %io, %c1 : index
        loop.for %jj = %c0 to %c4 step %c1 kind(vectorized) {
          %j = arith.addi %jo, %jj : index
          loop.store %zero, %c[%i0, %j] : memref<4x8xf32>
          loop.store %zero, %c[%i1, %j] : memref<4x8xf32>
        }
        loop.for %k = %c0 to %c3 step %c1 {
          loop.for %jj2 = %c0 to %c4 step %c1 kind(vectorized) {
            %j2 = arith.addi %jo, %jj2 : index
            %a0 = loop.load %a[%i0, %k] : memref<4x3xf32>
            %a1 = loop.load %a[%i1, %k] : memref<4x3xf32>
            %bv = loop.load %b[%k, %j2] : memref<3x8xf32>
            %p0 = arith.mulf %a0, %bv : f32
            %p1 = arith.mulf %a1, %bv : f32
            %s0 = loop.load %c[%i0, %j2] : memref<4x8xf32>
            %s1 = loop.load %c[%i1, %j2] : memref<4x8xf32>
            %n0 = arith.addf %s0, %p0 : f32
            %n1 = arith.addf %s1, %p1 : f32
            loop.store %n0, %c[%i0, %j2] : memref<4x8xf32>
            loop.store %n1, %c[%i1, %j2] : memref<4x8xf32>
          }
        }
      }
    }
    loop.for %i = %c0 to %c4 step %c1 kind(parallel) {
      loop.for %j = %c0 to %c8 step %c1 kind(vectorized) {
        %v = loop.load %c[%i, %j] : memref<4x8xf32>
        %bb = loop.load %bias[%j] : memref<8xf32>
        %t = arith.addf %v, %bb : f32
        %r = arith.maximumf %t, %zero : f32
        loop.store %r, %c[%i, %j] : memref<4x8xf32>
      }
    }
    loop.return
  }

  loop.func @tail_block(%c: memref<5x8xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c5 = arith.constant 5 : index
    %c8 = arith.constant 8 : index
    %zero = arith.constant 0.0 : f32
    loop.for %jo = %c0 to %c8 step %c4 kind(parallel) {
      loop.for %io = %c0 to %c4 step %c2 {
        %i0 = arith.addi %io, %c0 : index
        %i1 = arith.addi %io, %c1 : index
        loop.for %jj = %c0 to %c4 step %c1 kind(vectorized) {
          %j = arith.addi %jo, %jj : index
          loop.store %zero, %c[%i0, %j] : memref<5x8xf32>
          loop.store %zero, %c[%i1, %j] : memref<5x8xf32>
        }
      }
      loop.for %it = %c4 to %c5 step %c1 {
        loop.for %jt = %c0 to %c4 step %c1 kind(vectorized) {
          %j = arith.addi %jo, %jt : index
          loop.store %zero, %c[%it, %j] : memref<5x8xf32>
        }
      }
    }
    loop.for %i = %c0 to %c5 step %c1 kind(parallel) {
      loop.for %j = %c0 to %c8 step %c1 kind(vectorized) {
        %v = loop.load %c[%i, %j] : memref<5x8xf32>
        %r = arith.maximumf %v, %zero : f32
        loop.store %r, %c[%i, %j] : memref<5x8xf32>
      }
    }
    loop.return
  }

  loop.func @long_swish(%c: memref<7x8xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c5 = arith.constant 5 : index
    %c6 = arith.constant 6 : index
    %c7 = arith.constant 7 : index
    %c8 = arith.constant 8 : index
    %zero = arith.constant 0.0 : f32
    %one = arith.constant 1.0 : f32
    %min = arith.constant -87.0 : f32
    %max = arith.constant 88.0 : f32
    loop.for %jo = %c0 to %c8 step %c4 kind(parallel) {
      loop.for %io = %c0 to %c6 step %c6 {
        %i0 = arith.addi %io, %c0 : index
        %i1 = arith.addi %io, %c1 : index
        %i2 = arith.addi %io, %c2 : index
        %i3 = arith.addi %io, %c3 : index
        %i4 = arith.addi %io, %c4 : index
        %i5 = arith.addi %io, %c5 : index
        loop.for %jj = %c0 to %c4 step %c1 kind(vectorized) {
          %j = arith.addi %jo, %jj : index
          loop.store %zero, %c[%i0, %j] : memref<7x8xf32>
          loop.store %zero, %c[%i1, %j] : memref<7x8xf32>
          loop.store %zero, %c[%i2, %j] : memref<7x8xf32>
          loop.store %zero, %c[%i3, %j] : memref<7x8xf32>
          loop.store %zero, %c[%i4, %j] : memref<7x8xf32>
          loop.store %zero, %c[%i5, %j] : memref<7x8xf32>
        }
      }
      loop.for %it = %c6 to %c7 step %c1 {
        loop.for %jt = %c0 to %c4 step %c1 kind(vectorized) {
          %j = arith.addi %jo, %jt : index
          loop.store %zero, %c[%it, %j] : memref<7x8xf32>
        }
      }
    }
    loop.for %i = %c0 to %c7 step %c1 kind(parallel) {
      loop.for %j = %c0 to %c8 step %c1 kind(vectorized) {
        %v = loop.load %c[%i, %j] : memref<7x8xf32>
        %n = arith.negf %v : f32
        %lo = arith.maximumf %n, %min : f32
        %x = arith.minimumf %lo, %max : f32
        %e = math.exp %x : f32
        %d = arith.addf %one, %e : f32
        %s = arith.divf %one, %d : f32
        %r = arith.mulf %v, %s : f32
        loop.store %r, %c[%i, %j] : memref<7x8xf32>
      }
    }
    loop.return
  }

  loop.func @row_tail(%a: memref<5x3xf32>, %b: memref<3x8xf32>, %c: memref<5x8xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c5 = arith.constant 5 : index
    %c8 = arith.constant 8 : index
    %zero = arith.constant 0.0 : f32
    loop.for %jo = %c0 to %c8 step %c4 kind(parallel) {
      loop.for %io = %c0 to %c4 step %c2 {
        %i0 = arith.addi %io, %c0 : index
        %i1 = arith.addi %io, %c1 : index
        loop.for %jj = %c0 to %c4 step %c1 kind(vectorized) {
          %j = arith.addi %jo, %jj : index
          loop.store %zero, %c[%i0, %j] : memref<5x8xf32>
          loop.store %zero, %c[%i1, %j] : memref<5x8xf32>
        }
      }
    }
    loop.for %i = %c0 to %c5 step %c1 kind(parallel) {
      loop.for %j = %c0 to %c8 step %c1 kind(vectorized) {
        %v = loop.load %c[%i, %j] : memref<5x8xf32>
        %r = arith.maximumf %v, %zero : f32
        loop.store %r, %c[%i, %j] : memref<5x8xf32>
      }
    }
    loop.return
  }

  loop.func @neighbour(%c: memref<4x9xf32>, %d: memref<4x8xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %zero = arith.constant 0.0 : f32
    loop.for %jo = %c0 to %c8 step %c4 kind(parallel) {
      loop.for %io = %c0 to %c4 step %c2 {
        %i0 = arith.addi %io, %c0 : index
        loop.for %jj = %c0 to %c4 step %c1 kind(vectorized) {
          %j = arith.addi %jo, %jj : index
          loop.store %zero, %c[%i0, %j] : memref<4x9xf32>
        }
      }
    }
    loop.for %i = %c0 to %c4 step %c1 kind(parallel) {
      loop.for %j = %c0 to %c8 step %c1 kind(vectorized) {
        %n = arith.addi %j, %c1 : index
        %v = loop.load %c[%i, %n] : memref<4x9xf32>
        loop.store %v, %d[%i, %j] : memref<4x8xf32>
      }
    }
    loop.return
  }
}
