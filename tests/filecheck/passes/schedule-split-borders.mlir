// RUN: lamina-opt %s -p schedule-split-borders | filecheck %s
// RUN: lamina-opt %s -p schedule-split-borders,simplify | filecheck %s --check-prefix=SIMPLE

// Border splitting alone (one rule of `schedule`). @window is a 1-D window
// of 3 taps with a halo of 1 read in place: output 0 and output 7 read
// outside the input, the others never do. The output loop becomes [0, 1),
// [1, 7) and [7, 8); after `simplify` the interior has neither guard nor
// clamp. @stride2 is the same window at stride 2 (interior [1, 4)).
// @copy guards a copy (no tap inside the loop): not split. @stepped has a
// step of 2: not split.

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @window(%x: memref<8xf32>, %w: memref<3xf32>, %y: memref<8xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c7 = arith.constant 7 : index
    %c8 = arith.constant 8 : index
    %m1 = arith.constant -1 : index
    %zero = arith.constant 0.0 : f32
    loop.for %o = %c0 to %c8 step %c1 {
      loop.store %zero, %y[%o] : memref<8xf32>
      loop.for %k = %c0 to %c3 step %c1 {
        %s = arith.addi %o, %k : index
        %p = arith.addi %s, %m1 : index
        %lo = arith.cmpi sge, %p, %c0 : index
        %p0 = arith.select %lo, %p, %c0 : index
        %hi = arith.cmpi slt, %p, %c8 : index
        %p1 = arith.select %hi, %p0, %c7 : index
        %in = arith.andi %lo, %hi : i1
        %v = loop.load %x[%p1] : memref<8xf32>
        %g = arith.select %in, %v, %zero : f32
        %wk = loop.load %w[%k] : memref<3xf32>
        %m = arith.mulf %g, %wk : f32
        %a = loop.load %y[%o] : memref<8xf32>
        %n = arith.addf %a, %m : f32
        loop.store %n, %y[%o] : memref<8xf32>
      }
    }
    loop.return
  }

  loop.func @stride2(%x: memref<8xf32>, %y: memref<4xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c7 = arith.constant 7 : index
    %c8 = arith.constant 8 : index
    %m1 = arith.constant -1 : index
    %zero = arith.constant 0.0 : f32
    loop.for %o = %c0 to %c4 step %c1 {
      loop.store %zero, %y[%o] : memref<4xf32>
      loop.for %k = %c0 to %c3 step %c1 {
        %o2 = arith.muli %o, %c2 : index
        %s = arith.addi %o2, %k : index
        %p = arith.addi %s, %m1 : index
        %lo = arith.cmpi sge, %p, %c0 : index
        %p0 = arith.select %lo, %p, %c0 : index
        %v = loop.load %x[%p0] : memref<8xf32>
        %g = arith.select %lo, %v, %zero : f32
        %a = loop.load %y[%o] : memref<4xf32>
        %n = arith.addf %a, %g : f32
        loop.store %n, %y[%o] : memref<4xf32>
      }
    }
    loop.return
  }

  loop.func @copy(%x: memref<8xf32>, %y: memref<10xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c10 = arith.constant 10 : index
    %m1 = arith.constant -1 : index
    %zero = arith.constant 0.0 : f32
    loop.for %i = %c0 to %c10 step %c1 {
      %p = arith.addi %i, %m1 : index
      %lo = arith.cmpi sge, %p, %c0 : index
      %p0 = arith.select %lo, %p, %c0 : index
      %v = loop.load %x[%p0] : memref<8xf32>
      %g = arith.select %lo, %v, %zero : f32
      loop.store %g, %y[%i] : memref<10xf32>
    }
    loop.return
  }

  loop.func @stepped(%x: memref<8xf32>, %y: memref<8xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c8 = arith.constant 8 : index
    %m1 = arith.constant -1 : index
    %zero = arith.constant 0.0 : f32
    loop.for %o = %c0 to %c8 step %c2 {
      loop.for %k = %c0 to %c3 step %c1 {
        %s = arith.addi %o, %k : index
        %p = arith.addi %s, %m1 : index
        %lo = arith.cmpi sge, %p, %c0 : index
        %p0 = arith.select %lo, %p, %c0 : index
        %v = loop.load %x[%p0] : memref<8xf32>
        %g = arith.select %lo, %v, %zero : f32
        loop.store %g, %y[%o] : memref<8xf32>
      }
    }
    loop.return
  }
}

// CHECK-LABEL: loop.func @window
// CHECK:         loop.for %{{.*}} = %c0 to %c1 step %c1 {
// CHECK:           arith.cmpi sge
// CHECK:         loop.for %{{.*}} = %c1 to %c7 step %c1 {
// CHECK:         loop.for %{{.*}} = %c7 to %c8 step %c1 {
// CHECK-LABEL: loop.func @stride2
// CHECK:         loop.for %{{.*}} = %c0 to %c1 step %c1 {
// CHECK:         loop.for %{{.*}} = %c1 to %c4 step %c1 {
// CHECK-LABEL: loop.func @copy
// CHECK-COUNT-1: loop.for
// CHECK-NOT:     loop.for
// CHECK-LABEL: loop.func @stepped
// CHECK:         loop.for %{{.*}} = %c0 to %c8 step %c2 {
// CHECK-NOT:     loop.for %{{.*}} = %c0 to %c8 step %c2 {

// SIMPLE-LABEL: loop.func @window
// SIMPLE:         loop.for %[[O0:.*]] = %c0 to %c1 step %c1 {
// SIMPLE:           arith.select
// SIMPLE:         loop.for %[[O:.*]] = %c1 to %c7 step %c1 {
// SIMPLE-NEXT:      loop.store
// SIMPLE-NEXT:      loop.for %[[K:.*]] = %c0 to %c3 step %c1 {
// SIMPLE-NOT:         arith.select
// SIMPLE-NOT:         arith.cmpi
// SIMPLE:             loop.store
// SIMPLE-NEXT:      }
// SIMPLE-NEXT:    }
// SIMPLE-NEXT:    loop.for %{{.*}} = %c7 to %c8 step %c1 {
// SIMPLE:           arith.select
// SIMPLE-LABEL: loop.func @stride2
// SIMPLE:         loop.for %{{.*}} = %c0 to %c1 step %c1 {
// SIMPLE:         loop.for %{{.*}} = %c1 to %c4 step %c1 {
// SIMPLE-NOT:       arith.select
// SIMPLE:         loop.return
