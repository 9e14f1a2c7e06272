// RUN: lamina-opt %s | lamina-opt | filecheck %s
// RUN: lamina-opt %s --print-op-generic | lamina-opt | filecheck %s

// Every te op round-trips in its pretty and its generic form.

builtin.module {
  // matmul: a sum reduction over k.
  te.func @matmul(%a: tensor<64x784xf32>, %b: tensor<784x512xf32>) -> tensor<64x512xf32> {
    %c = te.compute [64, 512] reduce [784] combiner(sum) (%i, %j, %k) {
      %x = te.read %a[%i, %k] : tensor<64x784xf32>
      %y = te.read %b[%k, %j] : tensor<784x512xf32>
      %p = arith.mulf %x, %y : f32
      te.yield %p : f32
    } : tensor<64x512xf32>
    te.return %c : tensor<64x512xf32>
  }

  // CHECK-LABEL: te.func @matmul
  // CHECK-SAME:    (%[[A:.*]]: tensor<64x784xf32>, %[[B:.*]]: tensor<784x512xf32>) -> tensor<64x512xf32> {
  // CHECK-NEXT:    %[[C:.*]] = te.compute [64, 512] reduce [784] combiner(sum) (%[[I:.*]], %[[J:.*]], %[[K:.*]]) {
  // CHECK-NEXT:      %[[X:.*]] = te.read %[[A]][%[[I]], %[[K]]] : tensor<64x784xf32>
  // CHECK-NEXT:      %[[Y:.*]] = te.read %[[B]][%[[K]], %[[J]]] : tensor<784x512xf32>
  // CHECK-NEXT:      %[[P:.*]] = arith.mulf %[[X]], %[[Y]] : f32
  // CHECK-NEXT:      te.yield %[[P]] : f32
  // CHECK-NEXT:    } : tensor<64x512xf32>
  // CHECK-NEXT:    te.return %[[C]] : tensor<64x512xf32>
  // CHECK-NEXT:  }

  // relu: element-wise, with a constant at the top level of the function.
  te.func @relu(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
    %zero = arith.constant 0.0 : f32
    %r = te.compute [4, 8] (%i, %j) {
      %v = te.read %x[%i, %j] : tensor<4x8xf32>
      %m = arith.maximumf %v, %zero : f32
      te.yield %m : f32
    } : tensor<4x8xf32>
    te.return %r : tensor<4x8xf32>
  }

  // CHECK-LABEL: te.func @relu
  // CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
  // CHECK-NEXT:    %{{.*}} = te.compute [4, 8] (%[[I:.*]], %[[J:.*]]) {
  // CHECK-NEXT:      %[[V:.*]] = te.read %{{.*}}[%[[I]], %[[J]]] : tensor<4x8xf32>
  // CHECK-NEXT:      %[[M:.*]] = arith.maximumf %[[V]], %[[ZERO]] : f32
  // CHECK-NEXT:      te.yield %[[M]] : f32
  // CHECK-NEXT:    } : tensor<4x8xf32>

  // A two-compute DAG: exp, then a max reduction to a rank-0 tensor with an
  // explicit init, then a padded 2x8 layout whose padding is te.undef.
  te.func @dag(%a: tensor<10xf32>) -> (tensor<f32>, tensor<2x8xf32>) {
    %e = te.compute [10] (%i) {
      %x = te.read %a[%i] : tensor<10xf32>
      %y = math.exp %x : f32
      te.yield %y : f32
    } : tensor<10xf32>
    %m = te.compute [] reduce [10] combiner(max) init(-1.0 : f32) (%k) {
      %x = te.read %e[%k] : tensor<10xf32>
      te.yield %x : f32
    } : tensor<f32>
    %p = te.compute [2, 8] (%o, %l) {
      %c8 = arith.constant 8 : index
      %c9 = arith.constant 9 : index
      %row = arith.muli %o, %c8 : index
      %n = arith.addi %row, %l : index
      %in = arith.cmpi ule, %n, %c9 : index
      %safe = arith.minui %n, %c9 : index
      %x = te.read %e[%safe] : tensor<10xf32>
      %u = te.undef : f32
      %v = arith.select %in, %x, %u : f32
      te.yield %v : f32
    } {constraint = #lamina.constraint<affine_map<(d0) -> (d0 floordiv 8, d0 mod 8)>, #lamina.undef>} : tensor<2x8xf32>
    te.return %m, %p : tensor<f32>, tensor<2x8xf32>
  }

  // CHECK-LABEL: te.func @dag
  // CHECK-SAME:    -> (tensor<f32>, tensor<2x8xf32>) {
  // CHECK-NEXT:    %[[E:.*]] = te.compute [10] (%{{.*}}) {
  // CHECK:           math.exp
  // CHECK:         } : tensor<10xf32>
  // CHECK-NEXT:    %[[M:.*]] = te.compute [] reduce [10] combiner(max) init(-1.000000e+00 : f32) (%[[K:.*]]) {
  // CHECK-NEXT:      %[[X:.*]] = te.read %[[E]][%[[K]]] : tensor<10xf32>
  // CHECK-NEXT:      te.yield %[[X]] : f32
  // CHECK-NEXT:    } : tensor<f32>
  // CHECK-NEXT:    %[[P:.*]] = te.compute [2, 8] (%{{.*}}, %{{.*}}) {
  // CHECK:           %[[U:.*]] = te.undef : f32
  // CHECK-NEXT:      %[[V:.*]] = arith.select %{{.*}}, %{{.*}}, %[[U]] : f32
  // CHECK-NEXT:      te.yield %[[V]] : f32
  // CHECK-NEXT:    } {constraint = #lamina.constraint<affine_map<(d0) -> ((d0 floordiv 8), (d0 mod 8))>, #lamina.undef>} : tensor<2x8xf32>
  // CHECK-NEXT:    te.return %[[M]], %[[P]] : tensor<f32>, tensor<2x8xf32>

  // Integer reductions with every combiner, and a two-axis reduction.
  te.func @int_reductions(%a: tensor<4x6xi32>) -> (tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<i32>) {
    %s = te.compute [4] reduce [6] combiner(prod) (%i, %k) {
      %x = te.read %a[%i, %k] : tensor<4x6xi32>
      te.yield %x : i32
    } : tensor<4xi32>
    %mn = te.compute [4] reduce [6] combiner(min) (%i, %k) {
      %x = te.read %a[%i, %k] : tensor<4x6xi32>
      te.yield %x : i32
    } : tensor<4xi32>
    %mx = te.compute [4] reduce [6] combiner(max) init(7 : i32) (%i, %k) {
      %x = te.read %a[%i, %k] : tensor<4x6xi32>
      te.yield %x : i32
    } : tensor<4xi32>
    %all = te.compute [] reduce [4, 6] combiner(sum) (%k0, %k1) {
      %x = te.read %a[%k0, %k1] : tensor<4x6xi32>
      te.yield %x : i32
    } : tensor<i32>
    te.return %s, %mn, %mx, %all : tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<i32>
  }

  // CHECK-LABEL: te.func @int_reductions
  // CHECK:         te.compute [4] reduce [6] combiner(prod) (%{{.*}}, %{{.*}}) {
  // CHECK:         te.compute [4] reduce [6] combiner(min) (%{{.*}}, %{{.*}}) {
  // CHECK:         te.compute [4] reduce [6] combiner(max) init(7 : i32) (%{{.*}}, %{{.*}}) {
  // CHECK:         te.compute [] reduce [4, 6] combiner(sum) (%[[K0:.*]], %[[K1:.*]]) {
  // CHECK-NEXT:      te.read %{{.*}}[%[[K0]], %[[K1]]] : tensor<4x6xi32>

  // An external te.func declaration.
  te.func private @decl(tensor<4xf32>) -> tensor<4xf32>
  // CHECK-LABEL: te.func private @decl(tensor<4xf32>) -> tensor<4xf32>
}
