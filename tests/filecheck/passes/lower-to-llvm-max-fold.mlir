// RUN: lamina-opt %s -p lower-to-llvm | filecheck %s

// A max folded along an innermost serial loop of at least 8 steps (a
// softmax's row max) stays `llvm.maximum`: LLVM's loop vectorizer reads that
// fold as a max reduction and keeps partial maxima in vector lanes, where the
// select form (`lower-to-llvm-clamps.mlir`) is no reduction it knows and
// stays a scalar chain of compares. A short fold (a max pool's 3 taps) and a
// fold inside a vectorized loop keep the select form.
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @row_max(%a: memref<4x128xf32>, %b: memref<4xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c128 = arith.constant 128 : index
    %init = arith.constant 0xff800000 : f32
    loop.for %i = %c0 to %c4 step %c1 {
      %m = loop.for %k = %c0 to %c128 step %c1 iter_args(%acc = %init) -> (f32) {
        %x = loop.load %a[%i, %k] : memref<4x128xf32>
        %n = arith.maximumf %acc, %x : f32
        loop.yield %n : f32
      }
      loop.store %m, %b[%i] : memref<4xf32>
    }
    loop.return
  }
  loop.func @window_max(%a: memref<3x16xf32>, %b: memref<16xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c16 = arith.constant 16 : index
    %init = arith.constant 0xff800000 : f32
    loop.for %c = %c0 to %c16 step %c1 kind(vectorized) {
      %m = loop.for %k = %c0 to %c3 step %c1 iter_args(%acc = %init) -> (f32) {
        %x = loop.load %a[%k, %c] : memref<3x16xf32>
        %n = arith.maximumf %acc, %x : f32
        loop.yield %n : f32
      }
      loop.store %m, %b[%c] : memref<16xf32>
    }
    loop.return
  }
}
// CHECK-LABEL: llvm.func @row_max(
// CHECK:         llvm.load
// CHECK-NEXT:    llvm.call_intrinsic "llvm.maximum.f32"
// CHECK-NOT:     llvm.fcmp "uno"
// CHECK:         llvm.return
// CHECK-LABEL: llvm.func @window_max(
// CHECK-NOT:     llvm.call_intrinsic "llvm.maximum
// CHECK:         %[[X:.*]] = llvm.load
// CHECK-NEXT:    %[[WINS:.*]] = llvm.fcmp "ogt" %[[X]], %{{.*}} : f32
// CHECK-NEXT:    llvm.select %[[WINS]]
// CHECK-NEXT:    llvm.fcmp "uno" %[[X]], %[[X]] : f32
// CHECK:         llvm.return
