// RUN: lamina-opt %s -p schedule-vector-math | filecheck %s

// Vector math alone (one rule of `schedule`): f32 `math.exp`,
// `math.tanh` and `math.erf` become polynomials (arithmetic LLVM vectorizes, instead of a
// libm call per element); an f64 `exp` keeps its call.

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
  // erf: a polynomial below 0.9375, 1 - exp(log-erfc polynomial) above,
  // selected per lane (gelu's erf was one `erff` call per element).
  loop.func @erf(%x: memref<64xf32>, %y: memref<64xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    loop.for %i = %c0 to %c64 step %c1 kind(vectorized) {
      %v = loop.load %x[%i] : memref<64xf32>
      %e = math.erf %v : f32
      loop.store %e, %y[%i] : memref<64xf32>
    }
    loop.return
  }
  // A sigmoid's exponent, clamped to [-87, 88] by lower-te: its 2^n is one
  // normal number, so the exp adds no clamp of its own and scales once, and
  // rounds n by adding 1.5 * 2^23, whose bits shifted left by 23 are the
  // scale's exponent field (no floor).
  loop.func @clamped(%x: memref<64xf32>, %y: memref<64xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %lo = arith.constant -8.700000e+01 : f32
    %hi = arith.constant 8.800000e+01 : f32
    loop.for %i = %c0 to %c64 step %c1 kind(vectorized) {
      %v = loop.load %x[%i] : memref<64xf32>
      %a = arith.maximumf %v, %lo : f32
      %b = arith.minimumf %a, %hi : f32
      %e = math.exp %b : f32
      loop.store %e, %y[%i] : memref<64xf32>
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
// CHECK:         arith.bitcast {{.*}} : f32 to i32
// CHECK:         math.absf
// CHECK:         math.copysign
// CHECK-NOT:     math.exp
// CHECK-NOT:     math.tanh
// CHECK-LABEL: loop.func @erf(
// CHECK:         %[[ABS:.*]] = math.absf %v : f32
// CHECK:         arith.minimumf %[[ABS]]
// CHECK:         math.floor
// CHECK:         math.copysign {{.*}}, %v : f32
// CHECK:         %[[SMALL:.*]] = arith.cmpf olt, %[[ABS]]
// CHECK:         arith.select %[[SMALL]]
// CHECK-NOT:     math.erf
// CHECK-LABEL: loop.func @clamped(
// CHECK:         %[[B:.*]] = arith.minimumf %a, %hi : f32
// CHECK-NOT:     arith.maximumf
// CHECK:         arith.constant 0x4B400000 : f32
// CHECK-NEXT:    %[[SHIFTED:.*]] = arith.addf
// CHECK-NEXT:    arith.constant 0x4B400000 : f32
// CHECK-NEXT:    arith.subf %[[SHIFTED]]
// CHECK-NOT:     math.floor
// CHECK:         %[[BITS:.*]] = arith.bitcast %[[SHIFTED]] : f32 to i32
// CHECK:         %[[FIELD:.*]] = arith.shli %[[BITS]]
// CHECK:         arith.constant 1065353216 : i32
// CHECK-NEXT:    %[[SCALE:.*]] = arith.addi %[[FIELD]]
// CHECK-NEXT:    arith.bitcast %[[SCALE]] : i32 to f32
// CHECK-NEXT:    arith.mulf
// CHECK-NEXT:    loop.store
// CHECK-LABEL: loop.func @double(
// CHECK:         math.exp %v : f64
