// RUN: lamina-opt %s --target cblas --compile-to lowering | filecheck %s
// RUN: lamina-run %s --target cblas --random-inputs --seed 1 | filecheck %s --check-prefix=OUT
// RUN: lamina-run %s --random-inputs --seed 1 | filecheck %s --check-prefix=OUT
// RUN: lamina-opt %s --target cblas --compile-to optimization | lamina-run - --random-inputs --seed 1 | filecheck %s --check-prefix=OUT
// RUN: lamina-opt %s --target cblas --compile-to optimization | lamina-opt - --compile-to lowering | filecheck %s

// A dense layer on the cblas target: the matmul and its bias add become one
// kernel calling OpenBLAS's sgemm; the targets are recorded in the module,
// so its text (here after phase optimization) compiles again without --target, and gives the numbers the
// cpu target gives.

graph.func @main(%x: tensor<8x32xf32>, %w: tensor<32x16xf32>, %b: tensor<16xf32>) -> tensor<8x16xf32> {
  %m = graph.matmul %x, %w : (tensor<8x32xf32>, tensor<32x16xf32>) -> tensor<8x16xf32>
  %y = graph.add %m, %b : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  %r = graph.relu %y : (tensor<8x16xf32>) -> tensor<8x16xf32>
  graph.return %r : tensor<8x16xf32>
}
// CHECK:      builtin.module attributes {lamina.targets = {cpu = [#lamina.target<"cpu">, #lamina.target<"cblas">]}
// CHECK:        loop.call @__cblas_sgemm_8x32x16_bias16(%x, %w, %b, %{{.*}})
// CHECK:        loop.call @{{.*}}relu
// CHECK:      loop.func private @__cblas_sgemm_8x32x16_bias16(
// CHECK:        loop.call @scipy_cblas_sgemm(

// OUT: out0: float32[8, 16] min=0 max=11.341{{[0-9]*}} mean=1.841{{[0-9]*}}
