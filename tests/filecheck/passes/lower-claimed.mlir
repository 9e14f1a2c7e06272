// RUN: lamina-opt %s --split-input-file --verify-diagnostics -p 'lower-claimed{target=cblas}' | filecheck %s
// RUN: not lamina-opt %s --split-input-file -p 'lower-claimed{target=cblas}' 2>&1 | filecheck %s --check-prefix=ERR

// cblas lowers what it claimed to a kernel calling OpenBLAS's GEMM
// (scipy-openblas32, whose symbols carry the prefix `scipy_`): row-major,
// no transposes, lda = K, ldb = ldc = N. A bias add is fused: the kernel
// fills C with the broadcast bias, then calls GEMM with beta = 1.
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  graph.func @dense(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> attributes {force_pure} {
    %m = graph.matmul %x, %w {lamina.codegen = "cblas"} : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
    %r = graph.add %m, %b {lamina.codegen = "cblas"} : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
    graph.return %r : tensor<4x16xf32>
  }
}
// CHECK-LABEL: graph.func @dense
// CHECK-NEXT:    %[[R:.*]] = graph.call_loop @__cblas_sgemm_4x8x16_bias16(%x, %w, %b)
// CHECK-NEXT:    graph.return %[[R]]
// CHECK:       loop.func private @__cblas_sgemm_4x8x16_bias16(%a: memref<4x8xf32>, %b: memref<8x16xf32>, %bias: memref<16xf32>, %c: memref<4x16xf32>)
// CHECK:         loop.for %[[I:.*]] = {{.*}} {
// CHECK:           loop.for %[[J:.*]] = {{.*}} {
// CHECK-NEXT:        %[[V:.*]] = loop.load %bias[%[[J]]] : memref<16xf32>
// CHECK-NEXT:        loop.store %[[V]], %c[%[[I]], %[[J]]] : memref<4x16xf32>
// CHECK-DAG:     %[[ROW:.*]] = arith.constant 101 : i32
// CHECK-DAG:     %[[NT:.*]] = arith.constant 111 : i32
// CHECK-DAG:     %[[M:.*]] = arith.constant 4 : i32
// CHECK-DAG:     %[[N:.*]] = arith.constant 16 : i32
// CHECK-DAG:     %[[K:.*]] = arith.constant 8 : i32
// CHECK-DAG:     %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK:         loop.call @scipy_cblas_sgemm(%[[ROW]], %[[NT]], %[[NT]], %[[M]], %[[N]], %[[K]], %[[ONE]], %a, %[[K]], %b, %[[N]], %[[ONE]], %c, %[[N]])
// CHECK-NEXT:    loop.return

// -----

// Batches: a strided batched GEMM (dgemm for f64); a batch sharing one B
// is one GEMM over the stacked rows of A (M = 2·3); a batch sharing one A
// is a strided batch with stride 0 for A.
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  graph.func @batched(%a: tensor<2x3x4xf64>, %b: tensor<2x4x5xf64>, %s: tensor<4x5xf64>, %t: tensor<3x4xf64>) -> (tensor<2x3x5xf64>, tensor<2x3x5xf64>, tensor<2x3x5xf64>) attributes {force_pure} {
    %0 = graph.matmul %a, %b {lamina.codegen = "cblas"} : (tensor<2x3x4xf64>, tensor<2x4x5xf64>) -> tensor<2x3x5xf64>
    %1 = graph.matmul %a, %s {lamina.codegen = "cblas"} : (tensor<2x3x4xf64>, tensor<4x5xf64>) -> tensor<2x3x5xf64>
    %2 = graph.matmul %t, %b {lamina.codegen = "cblas"} : (tensor<3x4xf64>, tensor<2x4x5xf64>) -> tensor<2x3x5xf64>
    graph.return %0, %1, %2 : tensor<2x3x5xf64>, tensor<2x3x5xf64>, tensor<2x3x5xf64>
  }
}
// CHECK-LABEL: graph.func @batched
// CHECK-NEXT:    graph.call_loop @__cblas_dgemm_batch2_3x4x5(%a, %b)
// CHECK-NEXT:    graph.call_loop @__cblas_dgemm_6x4x5(%a, %s)
// CHECK-NEXT:    graph.call_loop @__cblas_dgemm_batch2_3x4x5_shared_a(%t, %b)
// CHECK:       loop.func private @__cblas_dgemm_batch2_3x4x5(
// CHECK:         loop.call @scipy_cblas_dgemm_batch_strided({{.*}}) : (i32, i32, i32, i32, i32, i32, f64, memref<2x3x4xf64>, i32, i32, memref<2x4x5xf64>, i32, i32, f64, memref<2x3x5xf64>, i32, i32, i32) -> ()
// CHECK:       loop.func private @__cblas_dgemm_6x4x5(
// CHECK-DAG:     %[[M6:.*]] = arith.constant 6 : i32
// CHECK:         loop.call @scipy_cblas_dgemm(%{{.*}}, %{{.*}}, %{{.*}}, %[[M6]],
// CHECK:       loop.func private @__cblas_dgemm_batch2_3x4x5_shared_a(
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK:         loop.call @scipy_cblas_dgemm_batch_strided(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %a, %{{.*}}, %[[ZERO]], %b,

// -----

// An op claimed by cblas that cblas cannot lower is an error at the op,
// naming the target.
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  graph.func @relu(%x: tensor<4xf32>) -> tensor<4xf32> attributes {force_pure} {
    // expected-error @+1 {{target 'cblas' claimed 'graph.relu' but did not lower it}}
    %r = graph.relu %x {lamina.codegen = "cblas"} : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %r : tensor<4xf32>
  }
}
// ERR: lower-claimed.mlir:[[# @LINE - 4]]:5: error: target 'cblas' claimed 'graph.relu' but did not lower it
