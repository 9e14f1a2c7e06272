// RUN: lamina-opt %s -p profile-kernels | filecheck %s
// RUN: lamina-opt %s -p profile-kernels,profile-kernels | filecheck %s

// profile-kernels surrounds each call of a kernel (an internal function
// defined in the module) from an entry (a non-internal function) with clock
// reads that add its time and one call to the call's slot of
// @lamina_profile (two i64 per slot). @lamina_profile_table names each
// slot's kernel, its parallel regions (GOMP_parallel calls, through the
// functions it calls), their fewest iterations and the call's source ops
// (file:line:col here; an imported model's node names). Calls of declarations
// (@free) and calls made inside kernels are not timed; twice equals once.

builtin.module attributes {lamina.phase = #lamina.phase<build>} {
  llvm.func @GOMP_parallel(!llvm.ptr, !llvm.ptr, i32, i32)
  llvm.func @free(!llvm.ptr)
  llvm.func @main(%a: !llvm.ptr) attributes {lamina.results = 1 : i64} {
    llvm.call @conv(%a) : (!llvm.ptr) -> ()
    llvm.call @relu(%a) : (!llvm.ptr) -> ()
    llvm.call @conv(%a) : (!llvm.ptr) -> ()
    llvm.call @free(%a) : (!llvm.ptr) -> ()
    llvm.return
  }
  llvm.func internal @conv(%a: !llvm.ptr) {
    %fn = llvm.mlir.addressof @conv_par0_omp : !llvm.ptr
    %zero = llvm.mlir.constant(0 : i32) : i32
    llvm.call @GOMP_parallel(%fn, %a, %zero, %zero) {lamina.iterations = 9 : i64} : (!llvm.ptr, !llvm.ptr, i32, i32) -> ()
    llvm.call @relu(%a) : (!llvm.ptr) -> ()
    llvm.return
  }
  llvm.func internal @conv_par0_omp(%ctx: !llvm.ptr) {
    llvm.return
  }
  llvm.func internal @relu(%a: !llvm.ptr) {
    llvm.return
  }
}

// CHECK-LABEL: llvm.func @main(
// CHECK-NEXT:    %[[T0:.*]] = llvm.call @lamina_profile_now() : () -> i64
// CHECK-NEXT:    llvm.call @conv(%{{.*}}) : (!llvm.ptr) -> ()
// CHECK-NEXT:    %[[BASE:.*]] = llvm.mlir.addressof @lamina_profile : !llvm.ptr
// CHECK-NEXT:    %[[SLOT:.*]] = llvm.getelementptr %[[BASE]][0] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:    llvm.call @lamina_profile_add(%[[SLOT]], %[[T0]]) : (!llvm.ptr, i64) -> ()
// CHECK-NEXT:    %[[T1:.*]] = llvm.call @lamina_profile_now() : () -> i64
// CHECK-NEXT:    llvm.call @relu(%{{.*}}) : (!llvm.ptr) -> ()
// CHECK:         llvm.getelementptr %{{.*}}[2] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK:         llvm.call @conv(%{{.*}}) : (!llvm.ptr) -> ()
// CHECK:         llvm.getelementptr %{{.*}}[4] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:    llvm.call @lamina_profile_add(
// CHECK-NEXT:    llvm.call @free(%{{.*}}) : (!llvm.ptr) -> ()
// CHECK-NEXT:    llvm.return
// CHECK-LABEL: llvm.func internal @conv(
// CHECK-NOT:     lamina_profile
// CHECK:         llvm.return
// CHECK:       llvm.mlir.global weak @lamina_profile(dense<0> : tensor<6xi64>) {{.*}} : !llvm.array<6 x i64>
// CHECK-NEXT:  llvm.mlir.global weak constant @lamina_profile_table("conv\091\099\09profile-kernels.mlir:17:5\0Arelu\090\090\09profile-kernels.mlir:18:5\0Aconv\091\099\09profile-kernels.mlir:19:5\0A\00")
// CHECK:       llvm.func @clock_gettime(i32, !llvm.ptr) -> i32
// CHECK:       llvm.func internal @lamina_profile_now() -> i64 attributes {passthrough = ["alwaysinline"]}
// CHECK:         llvm.call @clock_gettime(
// CHECK:       llvm.func internal @lamina_profile_add({{.*}}) attributes {passthrough = ["alwaysinline"]}
// CHECK-NOT:   lamina_profile_now() -> i64
