// RUN: lamina-opt %s -p check-bounds | filecheck %s
// RUN: lamina-opt %s -p check-bounds,check-bounds | filecheck %s
// RUN: lamina-opt %s -p check-bounds,lower-to-llvm | filecheck %s --check-prefix=LLVM

// check-bounds guards every loop.load / loop.store with `index <u extent`
// per dimension (a negative index fails the unsigned compare too). The else
// branch calls @__lamina_error_<k>, whose message (kernel, buffer, shape,
// indices as {0}, {1}) is in the module attribute lamina.error_messages.
// Running it twice equals running it once.

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @shift(%a: memref<4x8xf32>, %out: memref<4x8xf32>, %s: memref<f32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    loop.for %i = %c0 to %c4 step %c1 {
      loop.for %j = %c0 to %c8 step %c1 {
        %k = arith.addi %j, %c1 : index
        %v = loop.load %a[%i, %k] : memref<4x8xf32>
        loop.store %v, %out[%i, %j] : memref<4x8xf32>
      }
    }
    %x = loop.load %s[] : memref<f32>
    loop.return
  }
}

// CHECK:       builtin.module attributes {lamina.phase = #lamina.phase<lowering>, lamina.error_messages = {
// CHECK-SAME:    __lamina_error_0 = "kernel @shift: index ({0}, {1}) is out of bounds of buffer %a of shape 4x8 in loop.load (--check-bounds)",
// CHECK-SAME:    __lamina_error_1 = "kernel @shift: index ({0}, {1}) is out of bounds of buffer %out of shape 4x8 in loop.store (--check-bounds)"}} {
// CHECK:           %[[K:.*]] = arith.addi %[[J:.*]], %{{.*}} : index
// CHECK-NEXT:      %[[E0:.*]] = arith.constant 4 : index
// CHECK-NEXT:      %[[C0:.*]] = arith.cmpi ult, %[[I:.*]], %[[E0]] : index
// CHECK-NEXT:      %[[E1:.*]] = arith.constant 8 : index
// CHECK-NEXT:      %[[C1:.*]] = arith.cmpi ult, %[[K]], %[[E1]] : index
// CHECK-NEXT:      %[[OK:.*]] = arith.andi %[[C0]], %[[C1]] : i1
// CHECK-NEXT:      %[[V:.*]] = loop.if %[[OK]] -> (f32) {
// CHECK-NEXT:        %[[L:.*]] = loop.load %{{.*}}[%[[I]], %[[K]]] {lamina.bounds_checked} : memref<4x8xf32>
// CHECK-NEXT:        loop.yield %[[L]] : f32
// CHECK-NEXT:      } else {
// CHECK-NEXT:        loop.call @__lamina_error_0(%[[I]], %[[K]]) : (index, index) -> ()
// CHECK-NEXT:        %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:        loop.yield %[[Z]] : f32
// CHECK-NEXT:      }
// CHECK:           loop.if %{{.*}} {
// CHECK-NEXT:        loop.store %[[V]], %{{.*}}[%[[I]], %[[J]]] {lamina.bounds_checked} : memref<4x8xf32>
// CHECK-NEXT:      } else {
// CHECK-NEXT:        loop.call @__lamina_error_1(%[[I]], %[[J]]) : (index, index) -> ()
// CHECK-NEXT:      }
// A 0-d buffer has no index to check.
// CHECK:         %{{.*}} = loop.load %{{.*}}[] : memref<f32>

// After lower-to-llvm each error call records its message and indices and returns.
// LLVM:       llvm.mlir.global internal constant @lamina_error_message_{{[0-9]}}("kernel @shift: index ({0}, {1}) is out of bounds of buffer %a
// LLVM:       llvm.mlir.global weak @lamina_error(0 : i64)
// LLVM:       llvm.mlir.global weak @lamina_error_values(dense<0> : tensor<4xi64>)
// LLVM-NOT:   __lamina_error_
// LLVM:       %[[VALS:.*]] = llvm.mlir.addressof @lamina_error_values : !llvm.ptr
// LLVM-NEXT:  %[[SLOT0:.*]] = llvm.getelementptr %[[VALS]][0] : (!llvm.ptr) -> !llvm.ptr, i64
// LLVM-NEXT:  llvm.store %{{.*}}, %[[SLOT0]] : i64, !llvm.ptr
// LLVM-NEXT:  %[[SLOT1:.*]] = llvm.getelementptr %[[VALS]][1] : (!llvm.ptr) -> !llvm.ptr, i64
// LLVM-NEXT:  llvm.store %{{.*}}, %[[SLOT1]] : i64, !llvm.ptr
// LLVM-NEXT:  llvm.inline_asm has_side_effects "", "~{memory}" : () -> ()
// LLVM-NEXT:  %[[MSG:.*]] = llvm.mlir.addressof @lamina_error_message_{{[0-9]}} : !llvm.ptr
// LLVM-NEXT:  %[[ADDR:.*]] = llvm.ptrtoint %[[MSG]] : !llvm.ptr to i64
// LLVM-NEXT:  %[[FLAG:.*]] = llvm.mlir.addressof @lamina_error : !llvm.ptr
// LLVM-NEXT:  llvm.store %[[ADDR]], %[[FLAG]] : i64, !llvm.ptr
// LLVM-NEXT:  llvm.return
