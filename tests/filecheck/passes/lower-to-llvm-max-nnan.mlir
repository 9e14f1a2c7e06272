// RUN: lamina-opt %s -p lower-to-llvm | filecheck %s

// A `maximumf` of two variables marked `fastmath<nnan>` (a blocked max pool's
// tree of taps, which checks NaN once per window: kernels/nn.py,
// `_max_pool_taps`) is `select(x > acc, x, acc)` alone, one `maxps`; without
// the flag it keeps the NaN check of `x`.
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @taps(%a: memref<8xf32>, %b: memref<8xf32>, %c: memref<8xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    loop.for %i = %c0 to %c8 step %c1 kind(vectorized) {
      %x = loop.load %a[%i] : memref<8xf32>
      %y = loop.load %b[%i] : memref<8xf32>
      %m = arith.maximumf %x, %y fastmath<nnan> : f32
      %n = arith.maximumf %m, %y : f32
      loop.store %n, %c[%i] : memref<8xf32>
    }
    loop.return
  }
}
// CHECK-LABEL: llvm.func @taps(
// CHECK:         %[[X:.*]] = llvm.load %{{.*}} : !llvm.ptr -> f32
// CHECK:         %[[Y:.*]] = llvm.load %{{.*}} : !llvm.ptr -> f32
// CHECK-NEXT:    %[[W:.*]] = llvm.fcmp "ogt" %[[Y]], %[[X]] : f32
// CHECK-NEXT:    %[[M:.*]] = llvm.select %[[W]], %[[Y]], %[[X]] : i1, f32
// CHECK-NEXT:    %[[W2:.*]] = llvm.fcmp "ogt" %[[Y]], %[[M]] : f32
// CHECK-NEXT:    %[[M2:.*]] = llvm.select %[[W2]], %[[Y]], %[[M]] : i1, f32
// CHECK-NEXT:    %[[NAN:.*]] = llvm.fcmp "uno" %[[Y]], %[[Y]] : f32
// CHECK-NEXT:    %{{.*}} = llvm.select %[[NAN]], %[[Y]], %[[M2]] : i1, f32
// CHECK-NOT:     llvm.intr.maximum
