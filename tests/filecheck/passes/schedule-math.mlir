// RUN: lamina-opt %s -p schedule | filecheck %s
// RUN: lamina-opt %s -p 'schedule{polynomial_math=false}' | filecheck %s --check-prefix=LIBM

// f32 exp and tanh become arithmetic (a polynomial and an exponent built
// in the float's bits), so the vectorizer is not stopped by a libm call.

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @sigmoidish(%x: memref<64xf32>, %y: memref<64xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    loop.for %i = %c0 to %c64 step %c1 kind(vectorized) {
      %v = loop.load %x[%i] : memref<64xf32>
      %e = math.exp %v : f32
      %t = math.tanh %e : f32
      loop.store %t, %y[%i] : memref<64xf32>
    }
    loop.return
  }
  // f64 keeps libm's exp.
  loop.func @double(%x: memref<4xf64>, %y: memref<4xf64>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    loop.for %i = %c0 to %c4 step %c1 {
      %v = loop.load %x[%i] : memref<4xf64>
      %e = math.exp %v : f64
      loop.store %e, %y[%i] : memref<4xf64>
    }
    loop.return
  }
}

// CHECK-LABEL: loop.func @sigmoidish(
// CHECK:         arith.maximumf %v
// CHECK:         math.floor
// The exponent becomes an integer without fptosi (scalarized by the x86
// backend): n + 1.5 * 2^23, its bits, minus the magic number's bits.
// CHECK-NOT:     arith.fptosi
// CHECK:         arith.addf {{.*}}, %{{.*}} : f32
// CHECK:         arith.bitcast {{.*}} : f32 to i32
// CHECK-NEXT:    %{{.*}} = arith.constant 1262485504 : i32
// CHECK-NEXT:    arith.subi
// CHECK:         arith.shli
// CHECK:         arith.bitcast {{.*}} : i32 to f32
// CHECK:         math.absf
// CHECK:         math.copysign
// CHECK:         arith.select
// CHECK-NOT:     math.exp
// CHECK-NOT:     math.tanh
// CHECK-LABEL: loop.func @double(
// CHECK:         math.exp %v : f64

// LIBM: math.exp %v : f32
// LIBM: math.tanh %e : f32
