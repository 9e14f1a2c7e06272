// RUN: lamina-opt %s -p lower-to-llvm | filecheck %s

// A clamp by a constant (relu's `maximumf(x, 0)`, relu6's `minimumf(., 6)`)
// becomes a compare and a select, which x86 codegen turns into one
// `maxps`/`minps` (`llvm.maximum` needs a NaN check of `x` besides: three
// vector ops). A NaN `x` still comes through (`0 > x` is false). A maximum
// of two variables (a max pool's `max(acc, x)`), or by a NaN constant, is
// `select(x > acc, x, acc)` with a NaN check of `x` (`llvm.maximum` also
// orders -0 and +0: five vector ops).
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @relu6(%a: memref<8xf32>, %b: memref<8xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %zero = arith.constant 0.0 : f32
    %six = arith.constant 6.0 : f32
    %nan = arith.constant 0x7FC00000 : f32
    loop.for %i = %c0 to %c8 step %c1 kind(vectorized) {
      %x = loop.load %a[%i] : memref<8xf32>
      %lo = arith.maximumf %x, %zero : f32
      %hi = arith.minimumf %six, %lo : f32
      %both = arith.maximumf %hi, %x : f32
      %n = arith.maximumf %both, %nan : f32
      loop.store %n, %b[%i] : memref<8xf32>
    }
    loop.return
  }
}
// CHECK-LABEL: llvm.func @relu6(
// CHECK-DAG:     %[[ZERO:.*]] = llvm.mlir.constant(0.000000e+00 : f32) : f32
// CHECK-DAG:     %[[SIX:.*]] = llvm.mlir.constant(6.000000e+00 : f32) : f32
// CHECK:         %[[X:.*]] = llvm.load
// CHECK-NEXT:    %[[BELOW:.*]] = llvm.fcmp "ogt" %[[ZERO]], %[[X]] : f32
// CHECK-NEXT:    %[[LO:.*]] = llvm.select %[[BELOW]], %[[ZERO]], %[[X]] : i1, f32
// CHECK-NEXT:    %[[ABOVE:.*]] = llvm.fcmp "olt" %[[SIX]], %[[LO]] : f32
// CHECK-NEXT:    %[[HI:.*]] = llvm.select %[[ABOVE]], %[[SIX]], %[[LO]] : i1, f32
// CHECK-NEXT:    %[[WINS:.*]] = llvm.fcmp "ogt" %[[X]], %[[HI]] : f32
// CHECK-NEXT:    %[[BEST:.*]] = llvm.select %[[WINS]], %[[X]], %[[HI]] : i1, f32
// CHECK-NEXT:    %[[NAN:.*]] = llvm.fcmp "uno" %[[X]], %[[X]] : f32
// CHECK-NEXT:    %[[BOTH:.*]] = llvm.select %[[NAN]], %[[X]], %[[BEST]] : i1, f32
// CHECK-NEXT:    llvm.fcmp "ogt" %{{.*}}, %[[BOTH]] : f32
// CHECK-NOT:     llvm.call_intrinsic "llvm.maximum
// CHECK:         llvm.return
