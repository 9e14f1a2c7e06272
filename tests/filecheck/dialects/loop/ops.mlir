// RUN: lamina-opt %s | lamina-opt | filecheck %s
// RUN: lamina-opt %s --print-op-generic | lamina-opt | filecheck %s

// Every loop op round-trips in its pretty and its generic form.

builtin.module {
  // A 4x8 by 8x16 matmul: a parallel outer loop and an iter_args reduction.
  loop.func @matmul(%a: memref<4x8xf32> {device = #lamina.device<"cpu", 0>}, %b: memref<8x16xf32>, %c: memref<4x16xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %zero = arith.constant 0.0 : f32
    loop.for %i = %c0 to %c4 step %c1 kind(parallel) {
      loop.for %j = %c0 to %c16 step %c1 {
        %r = loop.for %k = %c0 to %c8 step %c1 iter_args(%acc = %zero) -> (f32) {
          %x = loop.load %a[%i, %k] : memref<4x8xf32>
          %y = loop.load %b[%k, %j] : memref<8x16xf32>
          %p = arith.mulf %x, %y : f32
          %s = arith.addf %acc, %p : f32
          loop.yield %s : f32
        }
        loop.store %r, %c[%i, %j] : memref<4x16xf32>
      }
    }
    loop.return
  }

  // CHECK-LABEL: loop.func @matmul
  // CHECK-SAME:    (%[[A:.*]]: memref<4x8xf32> {device = #lamina.device<"cpu", 0>}, %[[B:.*]]: memref<8x16xf32>, %[[C:.*]]: memref<4x16xf32>) {
  // CHECK:         %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
  // CHECK-NEXT:    loop.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} kind(parallel) {
  // CHECK-NEXT:      loop.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
  // CHECK-NEXT:        %[[R:.*]] = loop.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %[[ZERO]]) -> (f32) {
  // CHECK-NEXT:          %[[X:.*]] = loop.load %[[A]][%[[I]], %[[K]]] : memref<4x8xf32>
  // CHECK-NEXT:          %[[Y:.*]] = loop.load %[[B]][%[[K]], %[[J]]] : memref<8x16xf32>
  // CHECK-NEXT:          %[[P:.*]] = arith.mulf %[[X]], %[[Y]] : f32
  // CHECK-NEXT:          %[[S:.*]] = arith.addf %[[ACC]], %[[P]] : f32
  // CHECK-NEXT:          loop.yield %[[S]] : f32
  // CHECK-NEXT:        }
  // CHECK-NEXT:        loop.store %[[R]], %[[C]][%[[I]], %[[J]]] : memref<4x16xf32>
  // CHECK-NEXT:      }
  // CHECK-NEXT:    }
  // CHECK-NEXT:    loop.return
  // CHECK-NEXT:  }

  // Every loop kind; serial is the default and is not printed.
  loop.func @kinds(%x: memref<16xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    loop.for %i = %c0 to %c16 step %c1 kind(vectorized) {
      %v = loop.load %x[%i] : memref<16xf32>
      loop.store %v, %x[%i] : memref<16xf32>
    }
    loop.for %i = %c0 to %c16 step %c1 kind(unrolled) {
    }
    loop.for %i = %c0 to %c16 step %c1 kind(serial) {
    }
    "loop.for"(%c0, %c16, %c1) <{kind = #loop<kind parallel>}> ({
    ^bb0(%j: index):
      "loop.yield"() : () -> ()
    }) : (index, index, index) -> ()
    "loop.for"(%c0, %c16, %c1) ({
    ^bb0(%j: index):
      "loop.yield"() : () -> ()
    }) {kind = #loop<kind unrolled>} : (index, index, index) -> ()
    loop.for %i = %c0 to %c16 step %c1 {
    } {kind = "vectorized"}
    "loop.for"(%c0, %c16, %c1) <{kind = "parallel"}> ({
    ^bb0(%j: index):
      "loop.yield"() : () -> ()
    }) : (index, index, index) -> ()
    loop.return
  }

  // CHECK-LABEL: loop.func @kinds
  // CHECK:         loop.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} kind(vectorized) {
  // CHECK:         loop.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} kind(unrolled) {
  // CHECK-NEXT:    }
  // CHECK-NEXT:    loop.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
  // CHECK-NEXT:    }
  // CHECK-NEXT:    loop.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} kind(parallel) {
  // CHECK-NEXT:    }
  // CHECK-NEXT:    loop.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} kind(unrolled) {
  // CHECK-NEXT:    }
  // CHECK-NEXT:    loop.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} kind(vectorized) {
  // CHECK-NEXT:    }
  // CHECK-NEXT:    loop.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} kind(parallel) {
  // CHECK-NEXT:    }
  // CHECK-NEXT:    loop.return

  // Two loop-carried values of different types.
  loop.func @two_iter_args(%x: memref<8xf64>) -> f64 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %z = arith.constant 0.0 : f64
    %n = arith.constant 0 : i32
    %sum, %cnt = loop.for %i = %c0 to %c8 step %c1 iter_args(%s = %z, %k = %n) -> (f64, i32) {
      %v = loop.load %x[%i] : memref<8xf64>
      %s2 = arith.addf %s, %v : f64
      %one = arith.constant 1 : i32
      %k2 = arith.addi %k, %one : i32
      loop.yield %s2, %k2 : f64, i32
    }
    loop.return %sum : f64
  }

  // CHECK-LABEL: loop.func @two_iter_args(%{{.*}}: memref<8xf64>) -> f64 {
  // CHECK:         %[[SUM:.*]], %{{.*}} = loop.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (f64, i32) {
  // CHECK:           loop.yield %{{.*}}, %{{.*}} : f64, i32
  // CHECK-NEXT:    }
  // CHECK-NEXT:    loop.return %[[SUM]] : f64

  // if/else with and without results; assume; undef stored into padding.
  loop.func @guards(%x: memref<10xf32>, %y: memref<2x8xf32>, %i: index) {
    %c0 = arith.constant 0 : index
    %c10 = arith.constant 10 : index
    %ok = arith.cmpi slt, %i, %c10 : index
    loop.assume %ok
    %zero = arith.constant 0.0 : f32
    %v = loop.if %ok -> (f32) {
      %l = loop.load %x[%i] : memref<10xf32>
      loop.yield %l : f32
    } else {
      loop.yield %zero : f32
    }
    loop.store %v, %y[%c0, %c0] : memref<2x8xf32>
    loop.if %ok {
      loop.store %zero, %x[%i] : memref<10xf32>
    }
    loop.if %ok {
      loop.store %zero, %x[%i] : memref<10xf32>
    } else {
      %u = loop.undef : f32
      loop.store %u, %y[%c0, %c0] : memref<2x8xf32>
    }
    %pad = loop.undef : f32
    %guarded = arith.select %ok, %zero, %pad : f32
    loop.store %guarded, %y[%c0, %c0] : memref<2x8xf32>
    loop.return
  }

  // CHECK-LABEL: loop.func @guards
  // CHECK:         %[[OK:.*]] = arith.cmpi slt, %{{.*}}, %{{.*}} : index
  // CHECK-NEXT:    loop.assume %[[OK]]
  // CHECK:         %[[V:.*]] = loop.if %[[OK]] -> (f32) {
  // CHECK-NEXT:      %[[L:.*]] = loop.load %{{.*}}[%{{.*}}] : memref<10xf32>
  // CHECK-NEXT:      loop.yield %[[L]] : f32
  // CHECK-NEXT:    } else {
  // CHECK-NEXT:      loop.yield %{{.*}} : f32
  // CHECK-NEXT:    }
  // CHECK-NEXT:    loop.store %[[V]], %{{.*}}[%{{.*}}, %{{.*}}] : memref<2x8xf32>
  // CHECK-NEXT:    loop.if %[[OK]] {
  // CHECK-NEXT:      loop.store
  // CHECK-NEXT:    }
  // CHECK-NEXT:    loop.if %[[OK]] {
  // CHECK-NEXT:      loop.store
  // CHECK-NEXT:    } else {
  // CHECK-NEXT:      %[[U:.*]] = loop.undef : f32
  // CHECK-NEXT:      loop.store %[[U]], %{{.*}}[%{{.*}}, %{{.*}}] : memref<2x8xf32>
  // CHECK-NEXT:    }
  // CHECK-NEXT:    %[[PAD:.*]] = loop.undef : f32
  // CHECK-NEXT:    %[[G:.*]] = arith.select %[[OK]], %{{.*}}, %[[PAD]] : f32
  // CHECK-NEXT:    loop.store %[[G]], %{{.*}}[%{{.*}}, %{{.*}}] : memref<2x8xf32>
  // CHECK-NEXT:    loop.return

  // Buffers: a padded layout allocation with a constraint, local scratch, a
  // cross-device copy, calls of a loop.func and of external symbols, free.
  loop.func @buffers(%x: memref<10xf32> {lamina.constraint = #lamina.constraint<affine_map<(d0) -> (d0)>, 0.0 : f32>}) {
    %p = loop.alloc {device = #lamina.device<"cpu", 0>, constraint = #lamina.constraint<affine_map<(d0) -> (d0 floordiv 8, d0 mod 8)>, 0.0 : f32>} : memref<2x8xf32>
    %s = loop.alloc {scope = "local"} : memref<4xf32>
    %g = loop.alloc {device = #lamina.device<"gpu", 0>, scope = "global"} : memref<2x8xf32>
    loop.copy %p, %g {src = #lamina.device<"cpu", 0>, dst = #lamina.device<"gpu", 0>} : memref<2x8xf32> to memref<2x8xf32>
    loop.call @kernel(%p, %s) : (memref<2x8xf32>, memref<4xf32>) -> ()
    loop.call @ext(%x) : (memref<10xf32>) -> ()
    %n = loop.call @cblas_like(%x) : (memref<10xf32>) -> i32
    loop.free %s : memref<4xf32>
    loop.free %g : memref<2x8xf32>
    loop.free %p : memref<2x8xf32>
    loop.return
  }
  loop.func @kernel(%a: memref<2x8xf32>, %b: memref<4xf32>) {
    loop.return
  }
  loop.func private @ext(memref<10xf32>)

  // CHECK-LABEL: loop.func @buffers
  // CHECK-SAME:    (%[[X:.*]]: memref<10xf32> {lamina.constraint = #lamina.constraint<affine_map<(d0) -> (d0)>, 0.000000e+00 : f32>}) {
  // CHECK-NEXT:    %[[P:.*]] = loop.alloc {device = #lamina.device<"cpu", 0>, constraint = #lamina.constraint<affine_map<(d0) -> ((d0 floordiv 8), (d0 mod 8))>, 0.000000e+00 : f32>} : memref<2x8xf32>
  // CHECK-NEXT:    %[[S:.*]] = loop.alloc {scope = "local"} : memref<4xf32>
  // CHECK-NEXT:    %[[G:.*]] = loop.alloc {device = #lamina.device<"gpu", 0>{{.*}}} : memref<2x8xf32>
  // CHECK-NEXT:    loop.copy %[[P]], %[[G]] {src = #lamina.device<"cpu", 0>, dst = #lamina.device<"gpu", 0>} : memref<2x8xf32> to memref<2x8xf32>
  // CHECK-NEXT:    loop.call @kernel(%[[P]], %[[S]]) : (memref<2x8xf32>, memref<4xf32>) -> ()
  // CHECK-NEXT:    loop.call @ext(%[[X]]) : (memref<10xf32>) -> ()
  // CHECK-NEXT:    %{{.*}} = loop.call @cblas_like(%[[X]]) : (memref<10xf32>) -> i32
  // CHECK-NEXT:    loop.free %[[S]] : memref<4xf32>
  // CHECK-NEXT:    loop.free %[[G]] : memref<2x8xf32>
  // CHECK-NEXT:    loop.free %[[P]] : memref<2x8xf32>
  // CHECK-NEXT:    loop.return
  // CHECK:       loop.func @kernel(%{{.*}}: memref<2x8xf32>, %{{.*}}: memref<4xf32>) {
  // CHECK:       loop.func private @ext(memref<10xf32>) -> ()

  // A declaration keeps its argument attributes in `attributes {...}`.
  loop.func private @ext_placed(memref<4xf32>) attributes {arg_attrs = [{device = #lamina.device<"gpu", 1>}]}
  // CHECK-LABEL: loop.func private @ext_placed(memref<4xf32>) -> () attributes {arg_attrs = [{device = #lamina.device<"gpu", 1>}]}

  // A reshape sees a contiguous buffer in another shape of as many elements (no copy).
  loop.func @reshape(%a: memref<1x8x7x7x8xf32>) {
    %c0 = arith.constant 0 : index
    %c48 = arith.constant 48 : index
    %flat = loop.reshape %a : memref<1x8x7x7x8xf32> to memref<1x8x1x49x8xf32>
    %v = loop.load %flat[%c0, %c0, %c0, %c48, %c0] : memref<1x8x1x49x8xf32>
    loop.return
  }
  // CHECK-LABEL: loop.func @reshape
  // CHECK:         %[[F:.*]] = loop.reshape %{{.*}} : memref<1x8x7x7x8xf32> to memref<1x8x1x49x8xf32>
  // CHECK-NEXT:    %{{.*}} = loop.load %[[F]][

  // A prefetch hint for one element's cache line (locality 2: into L2).
  loop.func @prefetch(%a: memref<4x8xf32>) {
    %c1 = arith.constant 1 : index
    loop.prefetch %a[%c1, %c1] {locality = 2 : i32} : memref<4x8xf32>
    loop.return
  }
  // CHECK-LABEL: loop.func @prefetch
  // CHECK:         loop.prefetch %{{.*}}[%{{.*}}, %{{.*}}] {locality = 2 : i32} : memref<4x8xf32>
}
