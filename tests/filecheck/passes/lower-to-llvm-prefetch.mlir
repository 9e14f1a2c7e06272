// RUN: lamina-opt %s -p lower-to-llvm | filecheck %s

// `loop.prefetch` (written by `schedule`'s weight prefetch,
// schedule/weight_prefetch.py) is the element's address and one
// `llvm.prefetch` (read, its locality, data cache): `prefetcht1` for
// locality 2 on x86, which never faults.

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @hint(%w: memref<4x8x8xf32>, %i: index) {
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    loop.prefetch %w[%i, %c2, %c0] {locality = 2 : i32} : memref<4x8x8xf32>
    loop.return
  }
}

// CHECK-LABEL: llvm.func @hint(
// CHECK:         llvm.getelementptr inbounds %w[
// CHECK:         %[[P:.*]] = llvm.getelementptr inbounds %{{[0-9]+}}[
// CHECK-NEXT:    %[[RW:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT:    %[[LOC:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK-NEXT:    %[[DATA:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT:    llvm.call_intrinsic "llvm.prefetch.p0"(%[[P]], %[[RW]], %[[LOC]], %[[DATA]]) : (!llvm.ptr, i32, i32, i32) -> ()
// CHECK-NOT:     loop.prefetch
