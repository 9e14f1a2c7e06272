// RUN: lamina-opt %s -p schedule-split-borders | filecheck %s

// After splitting, a window reduction read in place keeps one vectorized
// loop over its lanes per piece, around its taps, which become `unrolled`;
// the loop zeroing the same accumulators is fused into it
// (schedule/border_split.py, `lanes_outside_taps`). @depthwise: 3 taps of
// a row window, split into [0, 1), [1, 5), [5, 6). @wide: 5x5 = 25 taps,
// more than 9: the window's rows stay a serial loop around the lane loop,
// its columns inside. @copy: a padded copy (the store moves with the guarded
// row) and @dense: a reduction without a guard keep their loops.

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  // CHECK-LABEL: loop.func @depthwise
  // CHECK:       loop.for %o = %c0 to %c1 step %c1 {
  // CHECK-NEXT:    loop.for %l = %c0 to %c16 step %c1 kind(vectorized) {
  // CHECK-NEXT:      loop.store %zero, %y[%o, %l]
  // CHECK-NEXT:      loop.for %k = %c0 to %c3 step %c1 kind(unrolled) {
  // CHECK:             %v = loop.load %x[%p1, %l]
  // CHECK:             loop.store %n, %y[%o, %l]
  // CHECK-NEXT:      }
  // CHECK-NEXT:    }
  // CHECK-NEXT:  }
  // CHECK-NEXT:  loop.for %o_1 = %c1 to %c5 step %c1 {
  // CHECK-NEXT:    loop.for %l_1 = %c0 to %c16 step %c1 kind(vectorized) {
  // CHECK-NEXT:      loop.store %zero, %y[%o_1, %l_1]
  // CHECK-NEXT:      loop.for %k_1 = %c0 to %c3 step %c1 kind(unrolled) {
  // CHECK:       loop.for %o_2 = %c5 to %c6 step %c1 {
  // CHECK-NEXT:    loop.for %l_2 = %c0 to %c16 step %c1 kind(vectorized) {
  // CHECK-NEXT:      loop.store %zero, %y[%o_2, %l_2]
  // CHECK-NEXT:      loop.for %k_2 = %c0 to %c3 step %c1 kind(unrolled) {
  // CHECK-NOT:   kind(vectorized)
  // CHECK:       loop.return
  loop.func @depthwise(%x: memref<6x16xf32>, %w: memref<3x16xf32>, %y: memref<6x16xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c5 = arith.constant 5 : index
    %c6 = arith.constant 6 : index
    %c16 = arith.constant 16 : index
    %m1 = arith.constant -1 : index
    %zero = arith.constant 0.0 : f32
    loop.for %o = %c0 to %c6 step %c1 {
      loop.for %l = %c0 to %c16 step %c1 kind(vectorized) {
        loop.store %zero, %y[%o, %l] : memref<6x16xf32>
      }
      loop.for %k = %c0 to %c3 step %c1 {
        loop.for %l2 = %c0 to %c16 step %c1 kind(vectorized) {
          %s = arith.addi %o, %k : index
          %p = arith.addi %s, %m1 : index
          %lo = arith.cmpi sge, %p, %c0 : index
          %p0 = arith.select %lo, %p, %c0 : index
          %hi = arith.cmpi slt, %p, %c6 : index
          %p1 = arith.select %hi, %p0, %c5 : index
          %in = arith.andi %lo, %hi : i1
          %v = loop.load %x[%p1, %l2] : memref<6x16xf32>
          %g = arith.select %in, %v, %zero : f32
          %wk = loop.load %w[%k, %l2] : memref<3x16xf32>
          %m = arith.mulf %g, %wk : f32
          %a = loop.load %y[%o, %l2] : memref<6x16xf32>
          %n = arith.addf %a, %m : f32
          loop.store %n, %y[%o, %l2] : memref<6x16xf32>
        }
      }
    }
    loop.return
  }

  // CHECK-LABEL: loop.func @wide
  // CHECK:       loop.for %o = %c0 to %c2 step %c1 {
  // CHECK-NEXT:    loop.for %l = %c0 to %c16 step %c1 kind(vectorized) {
  // CHECK-NEXT:      loop.store %zero, %y[%o, %l]
  // CHECK-NEXT:    }
  // CHECK-NEXT:    loop.for %kh = %c0 to %c5 step %c1 {
  // CHECK-NEXT:      loop.for %l2 = %c0 to %c16 step %c1 kind(vectorized) {
  // CHECK-NEXT:        loop.for %kw = %c0 to %c5 step %c1 kind(unrolled) {
  loop.func @wide(%x: memref<8x5x16xf32>, %w: memref<5x5x16xf32>, %y: memref<8x16xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c5 = arith.constant 5 : index
    %c7 = arith.constant 7 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %m2 = arith.constant -2 : index
    %zero = arith.constant 0.0 : f32
    loop.for %o = %c0 to %c8 step %c1 {
      loop.for %l = %c0 to %c16 step %c1 kind(vectorized) {
        loop.store %zero, %y[%o, %l] : memref<8x16xf32>
      }
      loop.for %kh = %c0 to %c5 step %c1 {
        loop.for %kw = %c0 to %c5 step %c1 {
          loop.for %l2 = %c0 to %c16 step %c1 kind(vectorized) {
            %s = arith.addi %o, %kh : index
            %p = arith.addi %s, %m2 : index
            %lo = arith.cmpi sge, %p, %c0 : index
            %p0 = arith.select %lo, %p, %c0 : index
            %hi = arith.cmpi slt, %p, %c8 : index
            %p1 = arith.select %hi, %p0, %c7 : index
            %in = arith.andi %lo, %hi : i1
            %v = loop.load %x[%p1, %kw, %l2] : memref<8x5x16xf32>
            %g = arith.select %in, %v, %zero : f32
            %wk = loop.load %w[%kh, %kw, %l2] : memref<5x5x16xf32>
            %m = arith.mulf %g, %wk : f32
            %a = loop.load %y[%o, %l2] : memref<8x16xf32>
            %n = arith.addf %a, %m : f32
            loop.store %n, %y[%o, %l2] : memref<8x16xf32>
          }
        }
      }
    }
    loop.return
  }

  // CHECK-LABEL: loop.func @copy
  // CHECK:       loop.for %h = %c0 to %c8 step %c1 {
  // CHECK-NEXT:    loop.for %l = %c0 to %c16 step %c1 kind(vectorized) {
  // CHECK-NOT:   kind(unrolled)
  // CHECK:       loop.return
  loop.func @copy(%x: memref<6x16xf32>, %y: memref<8x16xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %m1 = arith.constant -1 : index
    %zero = arith.constant 0.0 : f32
    loop.for %h = %c0 to %c8 step %c1 {
      loop.for %l = %c0 to %c16 step %c1 kind(vectorized) {
        %p = arith.addi %h, %m1 : index
        %lo = arith.cmpi sge, %p, %c0 : index
        %p0 = arith.select %lo, %p, %c0 : index
        %v = loop.load %x[%p0, %l] : memref<6x16xf32>
        %g = arith.select %lo, %v, %zero : f32
        loop.store %g, %y[%h, %l] : memref<8x16xf32>
      }
    }
    loop.return
  }

  // CHECK-LABEL: loop.func @dense
  // CHECK:       loop.for %k = %c0 to %c3 step %c1 {
  // CHECK-NEXT:    loop.for %l = %c0 to %c16 step %c1 kind(vectorized) {
  // CHECK-NOT:   kind(unrolled)
  // CHECK:       loop.return
  loop.func @dense(%x: memref<3x16xf32>, %y: memref<16xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c16 = arith.constant 16 : index
    loop.for %k = %c0 to %c3 step %c1 {
      loop.for %l = %c0 to %c16 step %c1 kind(vectorized) {
        %v = loop.load %x[%k, %l] : memref<3x16xf32>
        %a = loop.load %y[%l] : memref<16xf32>
        %n = arith.addf %a, %v : f32
        loop.store %n, %y[%l] : memref<16xf32>
      }
    }
    loop.return
  }
}
