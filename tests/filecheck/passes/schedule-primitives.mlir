// RUN: lamina-opt %s -p schedule | filecheck %s

// Each schedule primitive, requested with a `lamina.schedule` directive on
// its loop (a function with directives gets no default schedule).

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  // split(4) of 10 iterations: 2 blocks of 4, then a tail loop over [8, 10).
  // CHECK-LABEL: loop.func @split(
  // CHECK:         loop.for %io = %c0 to %c8 step %c4 kind(parallel) {
  // CHECK-NEXT:      loop.for %ii = %c0 to %c4 step %c1 {
  // CHECK-NEXT:        %i = arith.addi %io, %ii : index
  // CHECK-NEXT:        loop.store %one, %x[%i] : memref<10xf32>
  // CHECK:         loop.for %i_1 = %c8 to %c10 step %c1 {
  // CHECK-NEXT:      loop.store %one, %x[%i_1] : memref<10xf32>
  // CHECK-NOT:     lamina.schedule
  loop.func @split(%x: memref<10xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c10 = arith.constant 10 : index
    %one = arith.constant 1.0 : f32
    loop.for %i = %c0 to %c10 step %c1 kind(parallel) {
      loop.store %one, %x[%i] : memref<10xf32>
    } {lamina.schedule = "split(4)"}
    loop.return
  }

  // interchange: the j loop goes outside the i loop.
  // CHECK-LABEL: loop.func @interchange(
  // CHECK:         loop.for %j = %c0 to %c3 step %c1 {
  // CHECK-NEXT:      loop.for %i = %c0 to %c2 step %c1 {
  // CHECK-NEXT:        loop.store %one, %x[%i, %j] : memref<2x3xf32>
  loop.func @interchange(%x: memref<2x3xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %one = arith.constant 1.0 : f32
    loop.for %i = %c0 to %c2 step %c1 {
      loop.for %j = %c0 to %c3 step %c1 {
        loop.store %one, %x[%i, %j] : memref<2x3xf32>
      }
    } {lamina.schedule = "interchange"}
    loop.return
  }

  // fuse: the second loop's body joins the first's, on the first's iv.
  // CHECK-LABEL: loop.func @fuse(
  // CHECK:         loop.for %i = %c0 to %c4 step %c1 {
  // CHECK-NEXT:      loop.store %one, %x[%i] : memref<4xf32>
  // CHECK-NEXT:      %v = loop.load %x[%i] : memref<4xf32>
  // CHECK-NEXT:      loop.store %v, %y[%i] : memref<4xf32>
  // CHECK-NEXT:    }
  // CHECK-NEXT:    loop.return
  loop.func @fuse(%x: memref<4xf32>, %y: memref<4xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %one = arith.constant 1.0 : f32
    loop.for %i = %c0 to %c4 step %c1 {
      loop.store %one, %x[%i] : memref<4xf32>
    } {lamina.schedule = "fuse"}
    loop.for %j = %c0 to %c4 step %c1 {
      %v = loop.load %x[%j] : memref<4xf32>
      loop.store %v, %y[%j] : memref<4xf32>
    }
    loop.return
  }

  // unroll: a reduction's iter_args flow from copy to copy.
  // CHECK-LABEL: loop.func @unroll(
  // CHECK-NOT:     loop.for
  // CHECK:         %v = loop.load %x[%c0] : memref<3xf32>
  // CHECK-NEXT:    %s = arith.addf %zero, %v : f32
  // CHECK-NEXT:    %v_1 = loop.load %x[%c1] : memref<3xf32>
  // CHECK-NEXT:    %s_1 = arith.addf %s, %v_1 : f32
  // CHECK-NEXT:    %v_2 = loop.load %x[%c2] : memref<3xf32>
  // CHECK-NEXT:    %s_2 = arith.addf %s_1, %v_2 : f32
  // CHECK-NEXT:    loop.return %s_2 : f32
  loop.func @unroll(%x: memref<3xf32>) -> f32 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %zero = arith.constant 0.0 : f32
    %r = loop.for %i = %c0 to %c3 step %c1 iter_args(%acc = %zero) -> (f32) {
      %v = loop.load %x[%i] : memref<3xf32>
      %s = arith.addf %acc, %v : f32
      loop.yield %s : f32
    } {lamina.schedule = "unroll"}
    loop.return %r : f32
  }

  // unroll_and_jam: two rows jammed into the inner loop; the load of %b
  // is the same in both copies and is emitted once.
  // CHECK-LABEL: loop.func @unroll_and_jam(
  // CHECK:         loop.for %j = %c0 to %c8 step %c1 kind(vectorized) {
  // CHECK-NEXT:      %v = loop.load %b[%j] : memref<8xf32>
  // CHECK-NEXT:      loop.store %v, %y[%c0, %j] : memref<2x8xf32>
  // CHECK-NEXT:      loop.store %v, %y[%c1, %j] : memref<2x8xf32>
  // CHECK-NEXT:    }
  // CHECK-NEXT:    loop.return
  loop.func @unroll_and_jam(%b: memref<8xf32>, %y: memref<2x8xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c8 = arith.constant 8 : index
    loop.for %i = %c0 to %c2 step %c1 {
      loop.for %j = %c0 to %c8 step %c1 kind(vectorized) {
        %v = loop.load %b[%j] : memref<8xf32>
        loop.store %v, %y[%i, %j] : memref<2x8xf32>
      }
    } {lamina.schedule = "unroll_and_jam"}
    loop.return
  }

  // vectorize and parallel set the loop's kind.
  // CHECK-LABEL: loop.func @kinds(
  // CHECK:         loop.for %i = %c0 to %c4 step %c1 kind(parallel) {
  // CHECK-NEXT:      loop.for %j = %c0 to %c4 step %c1 kind(vectorized) {
  loop.func @kinds(%x: memref<4x4xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %one = arith.constant 1.0 : f32
    loop.for %i = %c0 to %c4 step %c1 {
      loop.for %j = %c0 to %c4 step %c1 {
        loop.store %one, %x[%i, %j] : memref<4x4xf32>
      } {lamina.schedule = "vectorize"}
    } {lamina.schedule = "parallel"}
    loop.return
  }

  // pack(0): the 4x2 tile of argument 0 the nest reads (rows k, columns
  // %o .. %o+1) is copied into a local buffer first and read from there.
  // CHECK-LABEL: loop.func @pack(
  // CHECK:         %[[T:.*]] = loop.alloc {scope = "local"} : memref<4x2xf32>
  // CHECK-NEXT:    loop.for %p0 = %c0 to %c4 step %c1 {
  // CHECK-NEXT:      loop.for %p1 = %c0 to %c2 step %c1 kind(vectorized) {
  // CHECK-NEXT:        %[[IDX:.*]] = arith.addi %o, %p1 : index
  // CHECK-NEXT:        %[[V:.*]] = loop.load %b[%p0, %[[IDX]]] : memref<4x8xf32>
  // CHECK-NEXT:        loop.store %[[V]], %[[T]][%p0, %p1] : memref<4x2xf32>
  // CHECK:         loop.for %k = %c0 to %c4 step %c1 {
  // CHECK-NEXT:      loop.for %j = %c0 to %c2 step %c1 {
  // CHECK-NEXT:        %col = arith.addi %o, %j : index
  // CHECK-NEXT:        %{{.*}} = loop.load %[[T]][%k, %j] : memref<4x2xf32>
  // CHECK:         loop.free %[[T]] : memref<4x2xf32>
  loop.func @pack(%b: memref<4x8xf32>, %y: memref<2xf32>, %o: index) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    loop.for %k = %c0 to %c4 step %c1 {
      loop.for %j = %c0 to %c2 step %c1 {
        %col = arith.addi %o, %j : index
        %v = loop.load %b[%k, %col] : memref<4x8xf32>
        %acc = loop.load %y[%j] : memref<2xf32>
        %s = arith.addf %acc, %v : f32
        loop.store %s, %y[%j] : memref<2xf32>
      }
    } {lamina.schedule = "pack(0)"}
    loop.return
  }

  // pack with a window index (origin + j + k, as a convolution reads): the
  // tile spans 2 + 4 - 1 columns and the local index drops the origin.
  // CHECK-LABEL: loop.func @pack_window(
  // CHECK:         %[[T:.*]] = loop.alloc {scope = "local"} : memref<5xf32>
  // CHECK:         loop.for %k = %c0 to %c4 step %c1 {
  // CHECK-NEXT:      loop.for %j = %c0 to %c2 step %c1 {
  // CHECK-NEXT:        %col = arith.addi %o, %j : index
  // CHECK-NEXT:        %win = arith.addi %col, %k : index
  // CHECK-NEXT:        %[[L:.*]] = arith.addi %j, %k : index
  // CHECK-NEXT:        %{{.*}} = loop.load %[[T]][%[[L]]] : memref<5xf32>
  loop.func @pack_window(%b: memref<16xf32>, %y: memref<2xf32>, %o: index) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    loop.for %k = %c0 to %c4 step %c1 {
      loop.for %j = %c0 to %c2 step %c1 {
        %col = arith.addi %o, %j : index
        %win = arith.addi %col, %k : index
        %v = loop.load %b[%win] : memref<16xf32>
        %acc = loop.load %y[%j] : memref<2xf32>
        %s = arith.addf %acc, %v : f32
        loop.store %s, %y[%j] : memref<2xf32>
      }
    } {lamina.schedule = "pack(0)"}
    loop.return
  }
  // pack of an operand read down a column (`b[o + j, 2*h + k]`, j vectorized:
  // attention's Kᵀ): the tile puts the vectorized dimension last, so the copy
  // transposes it once and the nest reads it contiguously. `2*h`, computed in
  // the body from values outside the nest, is hoisted before it, and with
  // `o` forms the tile origin.
  // CHECK-LABEL: loop.func @pack_transposed(
  // CHECK:         %[[H2:.*]] = arith.muli %h, %c2 : index
  // CHECK-NEXT:    %[[T:.*]] = loop.alloc {scope = "local"} : memref<3x4xf32>
  // CHECK-NEXT:    loop.for %p0 = %c0 to %c3 step %c1 {
  // CHECK-NEXT:      loop.for %p1 = %c0 to %c4 step %c1 kind(vectorized) {
  // CHECK-NEXT:        %[[R:.*]] = arith.addi %o, %p1 : index
  // CHECK-NEXT:        %[[C:.*]] = arith.addi %[[H2]], %p0 : index
  // CHECK-NEXT:        %[[V:.*]] = loop.load %b[%[[R]], %[[C]]] : memref<8x8xf32>
  // CHECK-NEXT:        loop.store %[[V]], %[[T]][%p0, %p1] : memref<3x4xf32>
  // CHECK:         loop.for %k = %c0 to %c3 step %c1 {
  // CHECK-NEXT:      loop.for %j = %c0 to %c4 step %c1 kind(vectorized) {
  // CHECK:             loop.load %[[T]][%k, %j] : memref<3x4xf32>
  // CHECK:         loop.free %[[T]] : memref<3x4xf32>
  loop.func @pack_transposed(%b: memref<8x8xf32>, %y: memref<4xf32>, %o: index, %h: index) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    loop.for %k = %c0 to %c3 step %c1 {
      loop.for %j = %c0 to %c4 step %c1 kind(vectorized) {
        %row = arith.addi %o, %j : index
        %head = arith.muli %h, %c2 : index
        %col = arith.addi %head, %k : index
        %v = loop.load %b[%row, %col] : memref<8x8xf32>
        %acc = loop.load %y[%j] : memref<4xf32>
        %s = arith.addf %acc, %v : f32
        loop.store %s, %y[%j] : memref<4xf32>
      }
    } {lamina.schedule = "pack(0)"}
    loop.return
  }

  // Two outside parts of one index (`2*h + (o + j)`: a head's offset and a
  // column block's) make one origin, emitted once before the nest.
  // CHECK-LABEL: loop.func @pack_two_origins(
  // CHECK:         %[[H2:.*]] = arith.muli %h, %c2 : index
  // CHECK-NEXT:    %[[ORG:.*]] = arith.addi %[[H2]], %o : index
  // CHECK-NEXT:    %[[T:.*]] = loop.alloc {scope = "local"} : memref<3x4xf32>
  // CHECK:             arith.addi %[[ORG]], %p1 : index
  // CHECK:         loop.for %k = %c0 to %c3 step %c1 {
  // CHECK:             loop.load %[[T]][%k, %j] : memref<3x4xf32>
  loop.func @pack_two_origins(%b: memref<8x16xf32>, %y: memref<4xf32>, %o: index, %h: index) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    loop.for %k = %c0 to %c3 step %c1 {
      loop.for %j = %c0 to %c4 step %c1 kind(vectorized) {
        %head = arith.muli %h, %c2 : index
        %oj = arith.addi %o, %j : index
        %col = arith.addi %head, %oj : index
        %v = loop.load %b[%k, %col] : memref<8x16xf32>
        %acc = loop.load %y[%j] : memref<4xf32>
        %s = arith.addf %acc, %v : f32
        loop.store %s, %y[%j] : memref<4xf32>
      }
    } {lamina.schedule = "pack(0)"}
    loop.return
  }
}
