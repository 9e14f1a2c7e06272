// RUN: lamina-opt %s -p simplify | filecheck %s
// RUN: lamina-opt %s -p simplify,simplify | filecheck %s

// simplify: guards decided by loop bounds, assumes and buffer constraints go;
// undef stores are not written.

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  // A guard that the loop bounds decide: i < 8 always holds for i in [0, 8).
  // CHECK-LABEL: loop.func @bounds
  // CHECK-NOT:     arith.cmpi
  // CHECK-NOT:     arith.select
  // CHECK:         %[[V:.*]] = loop.load %{{.*}}[%[[I:.*]]] : memref<8xf32>
  // CHECK-NEXT:    loop.store %[[V]], %{{.*}}[%[[I]]] : memref<8xf32>
  loop.func @bounds(%a: memref<8xf32>, %b: memref<8xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %zero = arith.constant 0.0 : f32
    loop.for %i = %c0 to %c8 step %c1 {
      %in = arith.cmpi slt, %i, %c8 : index
      %v = loop.load %a[%i] : memref<8xf32>
      %s = arith.select %in, %v, %zero : f32
      loop.store %s, %b[%i] : memref<8xf32>
    }
    loop.return
  }

  // `loop.assume` narrows a range; `loop.if` on a decided condition is inlined
  // (or dropped), and `i floordiv 8` of i < 8 is 0.
  // CHECK-LABEL: loop.func @assume_and_if
  // CHECK-NOT:     loop.if
  // CHECK-NOT:     arith.divui
  // CHECK:         loop.assume
  // CHECK-NEXT:    %[[Q:.*]] = arith.constant 0 : index
  // CHECK-NEXT:    loop.store %{{.*}}, %{{.*}}[%[[Q]]] : memref<4xf32>
  // CHECK-NOT:     loop.store
  loop.func @assume_and_if(%n: index, %a: memref<4xf32>) {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %one = arith.constant 1.0 : f32
    %lt = arith.cmpi slt, %n, %c4 : index
    %ge = arith.cmpi sge, %n, %c0 : index
    %ok = arith.andi %lt, %ge : i1
    loop.assume %ok
    %q = arith.divui %n, %c8 : index
    %small = arith.cmpi slt, %n, %c8 : index
    loop.if %small {
      loop.store %one, %a[%q] : memref<4xf32>
    }
    %big = arith.cmpi sge, %n, %c4 : index
    loop.if %big {
      loop.store %one, %a[%n] : memref<4xf32>
    }
    loop.return
  }

  // Padding whose value is #lamina.undef is not written: the guard select
  // with an undef side is its other side, and a store of undef disappears.
  // CHECK-LABEL: loop.func @undef_padding
  // CHECK-NOT:     loop.undef
  // CHECK:         %[[X:.*]] = loop.load %{{.*}}[%{{.*}}] : memref<3xf32>
  // CHECK-NEXT:    loop.store %[[X]], %{{.*}}[%{{.*}}] : memref<8xf32>
  // CHECK-NOT:     loop.store
  loop.func @undef_padding(%a: memref<3xf32>, %b: memref<8xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c8 = arith.constant 8 : index
    loop.for %i = %c0 to %c8 step %c1 {
      %in = arith.cmpi slt, %i, %c3 : index
      %j = arith.select %in, %i, %c2 : index
      %x = loop.load %a[%j] : memref<3xf32>
      %u = loop.undef : f32
      %s = arith.select %in, %x, %u : f32
      loop.store %s, %b[%i] : memref<8xf32>
    }
    %u2 = loop.undef : f32
    loop.store %u2, %b[%c0] : memref<8xf32>
    loop.return
  }

  // A reduction over a blocked tensor (3 logical channels padded to a block of
  // 8) masks the padded channels. The constraint says they hold 0.0, so
  // x * w there is already 0: the mask goes.
  // CHECK-LABEL: loop.func @reduce_padded_with_constraint
  // CHECK:         loop.for
  // CHECK-NOT:     arith.select
  // CHECK:         %[[X:.*]] = loop.load %{{.*}}[%c0{{.*}}, %c0{{.*}}, %{{.*}}] : memref<1x1x8xf32>
  // CHECK:         %[[P:.*]] = arith.mulf %[[X]], %{{.*}} : f32
  // CHECK-NEXT:    %[[S:.*]] = arith.addf %{{.*}}, %[[P]] : f32
  loop.func @reduce_padded_with_constraint(%x: memref<1x1x8xf32> {lamina.constraint = #lamina.constraint<affine_map<(d0, d1) -> (d0, d1 floordiv 8, d1 mod 8)>, 0.0 : f32, logical = array<i64: 1, 3>>}, %w: memref<8xf32>, %out: memref<1xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c8 = arith.constant 8 : index
    %zero = arith.constant 0.0 : f32
    %r = loop.for %k = %c0 to %c8 step %c1 iter_args(%acc = %zero) -> (f32) {
      %c = arith.cmpi slt, %k, %c3 : index
      %xv = loop.load %x[%c0, %c0, %k] : memref<1x1x8xf32>
      %wv = loop.load %w[%k] : memref<8xf32>
      %p = arith.mulf %xv, %wv : f32
      %m = arith.select %c, %p, %zero : f32
      %s = arith.addf %acc, %m : f32
      loop.yield %s : f32
    }
    loop.store %r, %out[%c0] : memref<1xf32>
    loop.return
  }

  // The same kernel without a constraint on %x keeps its mask: nothing says
  // what the padded channels hold.
  // CHECK-LABEL: loop.func @reduce_padded_without_constraint
  // CHECK:         %[[C:.*]] = arith.cmpi slt
  // CHECK:         arith.select %[[C]]
  loop.func @reduce_padded_without_constraint(%x: memref<1x1x8xf32>, %w: memref<8xf32>, %out: memref<1xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c8 = arith.constant 8 : index
    %zero = arith.constant 0.0 : f32
    %r = loop.for %k = %c0 to %c8 step %c1 iter_args(%acc = %zero) -> (f32) {
      %c = arith.cmpi slt, %k, %c3 : index
      %xv = loop.load %x[%c0, %c0, %k] : memref<1x1x8xf32>
      %wv = loop.load %w[%k] : memref<8xf32>
      %p = arith.mulf %xv, %wv : f32
      %m = arith.select %c, %p, %zero : f32
      %s = arith.addf %acc, %m : f32
      loop.yield %s : f32
    }
    loop.store %r, %out[%c0] : memref<1xf32>
    loop.return
  }

  // A constraint whose padding is undef does not help either.
  // CHECK-LABEL: loop.func @reduce_padded_undef_constraint
  // CHECK:         arith.select
  loop.func @reduce_padded_undef_constraint(%x: memref<1x1x8xf32> {lamina.constraint = #lamina.constraint<affine_map<(d0, d1) -> (d0, d1 floordiv 8, d1 mod 8)>, #lamina.undef, logical = array<i64: 1, 3>>}, %out: memref<1xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c8 = arith.constant 8 : index
    %zero = arith.constant 0.0 : f32
    %r = loop.for %k = %c0 to %c8 step %c1 iter_args(%acc = %zero) -> (f32) {
      %c = arith.cmpi slt, %k, %c3 : index
      %xv = loop.load %x[%c0, %c0, %k] : memref<1x1x8xf32>
      %m = arith.select %c, %xv, %zero : f32
      %s = arith.addf %acc, %m : f32
      loop.yield %s : f32
    }
    loop.store %r, %out[%c0] : memref<1xf32>
    loop.return
  }
  // Padding at both ends: 14 elements in tiles of 4 from slot 1, so the flat
  // slot 4*i + j is padding when it is 0 or 15 (padding 0.0). A reduction over
  // all 16 slots masks 1 <= 4*i + j < 15; both guards fall: each slot they
  // exclude already holds 0.
  // CHECK-LABEL: loop.func @reduce_left_padded_with_constraint
  // CHECK-NOT:     arith.cmpi
  // CHECK-NOT:     arith.select
  // CHECK:         %[[X:.*]] = loop.load %x[%{{.*}}, %{{.*}}] : memref<4x4xf32>
  // CHECK-NEXT:    %{{.*}} = arith.addf %{{.*}}, %[[X]] : f32
  loop.func @reduce_left_padded_with_constraint(%x: memref<4x4xf32> {lamina.constraint = #lamina.constraint<affine_map<(d0) -> ((d0 + 1) floordiv 4, (d0 + 1) mod 4)>, 0.0 : f32, logical = array<i64: 14>>}, %out: memref<1xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c15 = arith.constant 15 : index
    %zero = arith.constant 0.0 : f32
    %r = loop.for %i = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> (f32) {
      %r2 = loop.for %j = %c0 to %c4 step %c1 iter_args(%acc2 = %acc) -> (f32) {
        %i4 = arith.muli %i, %c4 : index
        %flat = arith.addi %i4, %j : index
        %after = arith.cmpi sge, %flat, %c1 : index
        %before = arith.cmpi slt, %flat, %c15 : index
        %ok = arith.andi %after, %before : i1
        %xv = loop.load %x[%i, %j] : memref<4x4xf32>
        %m = arith.select %ok, %xv, %zero : f32
        %s = arith.addf %acc2, %m : f32
        loop.yield %s : f32
      }
      loop.yield %r2 : f32
    }
    loop.store %r, %out[%c0] : memref<1xf32>
    loop.return
  }

  // A guard that excludes data is kept: slot 1 holds x[0], not the pad.
  // CHECK-LABEL: loop.func @reduce_left_padded_guard_excludes_data
  // CHECK:         %[[C:.*]] = arith.cmpi sge
  // CHECK:         arith.select %[[C]]
  loop.func @reduce_left_padded_guard_excludes_data(%x: memref<4x4xf32> {lamina.constraint = #lamina.constraint<affine_map<(d0) -> ((d0 + 1) floordiv 4, (d0 + 1) mod 4)>, 0.0 : f32, logical = array<i64: 14>>}, %out: memref<1xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %zero = arith.constant 0.0 : f32
    %r = loop.for %i = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> (f32) {
      %r2 = loop.for %j = %c0 to %c4 step %c1 iter_args(%acc2 = %acc) -> (f32) {
        %i4 = arith.muli %i, %c4 : index
        %flat = arith.addi %i4, %j : index
        %after = arith.cmpi sge, %flat, %c2 : index
        %xv = loop.load %x[%i, %j] : memref<4x4xf32>
        %m = arith.select %after, %xv, %zero : f32
        %s = arith.addf %acc2, %m : f32
        loop.yield %s : f32
      }
      loop.yield %r2 : f32
    }
    loop.store %r, %out[%c0] : memref<1xf32>
    loop.return
  }

  // Div/mod of a flat position split by the constant: (784*i + j) / 784 = i
  // (j < 784), (784*i + j) / 28 % 28 = (j / 28) % 28 = j / 28, and
  // (784*i + j) % 28 = j % 28; the load is affine in i again.
  // CHECK-LABEL: loop.func @reshape_indices
  // CHECK:         loop.for %[[I:.*]] = {{.*}} {
  // CHECK-NEXT:      loop.for %[[J:.*]] = {{.*}} {
  // CHECK-NOT:         arith.muli
  // CHECK-DAG:         %[[H:.*]] = arith.divui %[[J]], %[[C28:.*]] : index
  // CHECK-DAG:         %[[W:.*]] = arith.remui %[[J]], %[[C28]] : index
  // CHECK:             loop.load %{{.*}}[%[[I]], %{{.*}}, %[[H]], %[[W]]] : memref<4x1x28x28xf32>
  loop.func @reshape_indices(%a: memref<4x1x28x28xf32>, %b: memref<4x784xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c28 = arith.constant 28 : index
    %c784 = arith.constant 784 : index
    loop.for %i = %c0 to %c4 step %c1 {
      loop.for %j = %c0 to %c784 step %c1 {
        %m = arith.muli %i, %c784 : index
        %p = arith.addi %m, %j : index
        %n = arith.divui %p, %c784 : index
        %q = arith.divui %p, %c28 : index
        %h = arith.remui %q, %c28 : index
        %w = arith.remui %p, %c28 : index
        %v = loop.load %a[%n, %c0, %h, %w] : memref<4x1x28x28xf32>
        loop.store %v, %b[%i, %j] : memref<4x784xf32>
      }
    }
    loop.return
  }

  // A loop variable stepping by 32 is a multiple of 32: the column index
  // jo + jj of a split loop reads a panel `P[(jo + jj) / 32, k, (jo + jj) % 32]`
  // as `P[jo / 32, k, jj]` (a matmul's pre-packed rhs after `schedule`).
  // CHECK-LABEL: loop.func @column_blocks
  // CHECK:         loop.for %[[JO:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
  // CHECK-NEXT:      loop.for %[[JJ:.*]] = {{.*}} {
  // CHECK:             %[[JB:.*]] = arith.divui %[[JO]], %{{.*}} : index
  // CHECK-NOT:         arith.remui
  // CHECK:             loop.load %{{.*}}[%[[JB]], %[[JJ]]] : memref<4x32xf32>
  loop.func @column_blocks(%p: memref<4x32xf32>, %out: memref<128xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %c128 = arith.constant 128 : index
    loop.for %jo = %c0 to %c128 step %c32 {
      loop.for %jj = %c0 to %c32 step %c1 {
        %j = arith.addi %jo, %jj : index
        %b = arith.divui %j, %c32 : index
        %r = arith.remui %j, %c32 : index
        %v = loop.load %p[%b, %r] : memref<4x32xf32>
        loop.store %v, %out[%j] : memref<128xf32>
      }
    }
    loop.return
  }

  // A coarser stride than the position's own: a channel shuffle of 2 groups
  // of 58 channels at 28x28 reads channel `(784*c + w) / 1568` and the
  // group's slot `(784*c + w) % 1568`; with 0 <= w < 784 they are `c / 2`
  // and `784 * (c % 2) + w`, so the vectorized `w` reads consecutive
  // addresses (before: a gather per element).
  // CHECK-LABEL: loop.func @shuffle_stride
  // CHECK:         loop.for %[[C:.*]] = {{.*}} {
  // CHECK-NEXT:      loop.for %[[W:.*]] = {{.*}} {
  // CHECK-DAG:         %[[G:.*]] = arith.divui %[[C]], %{{.*}} : index
  // CHECK-DAG:         %[[R:.*]] = arith.remui %[[C]], %{{.*}} : index
  // CHECK:             loop.load %{{.*}}[%[[G]], %{{.*}}] : memref<58x1568xf32>
  loop.func @shuffle_stride(%a: memref<58x1568xf32>, %out: memref<116x784xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c116 = arith.constant 116 : index
    %c784 = arith.constant 784 : index
    %c1568 = arith.constant 1568 : index
    loop.for %c = %c0 to %c116 step %c1 {
      loop.for %w = %c0 to %c784 step %c1 {
        %m = arith.muli %c, %c784 : index
        %p = arith.addi %m, %w : index
        %g = arith.divui %p, %c1568 : index
        %r = arith.remui %p, %c1568 : index
        %v = loop.load %a[%g, %r] : memref<58x1568xf32>
        loop.store %v, %out[%c, %w] : memref<116x784xf32>
      }
    }
    loop.return
  }

  // Not split: in 8*i - j the rest -j may be negative (the identity needs
  // 0 <= rest), and in i % 3 nothing is a multiple of 3. (A constant goes
  // into the rest modulo c: 8*i + j - 3 would split as i - 1 + (j + 5) / 8.)
  // CHECK-LABEL: loop.func @divmod_kept
  // CHECK:         arith.floordivsi %{{.*}}, %{{.*}} : index
  // CHECK:         arith.remui %{{.*}}, %{{.*}} : index
  loop.func @divmod_kept(%a: memref<64xf32>, %b: memref<8xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c8 = arith.constant 8 : index
    loop.for %i = %c1 to %c8 step %c1 {
      loop.for %j = %c0 to %c8 step %c1 {
        %m = arith.muli %i, %c8 : index
        %p = arith.subi %m, %j : index
        %n = arith.floordivsi %p, %c8 : index
        %w = arith.remui %i, %c3 : index
        %v = loop.load %a[%n] : memref<64xf32>
        loop.store %v, %b[%w] : memref<8xf32>
      }
    }
    loop.return
  }
}
