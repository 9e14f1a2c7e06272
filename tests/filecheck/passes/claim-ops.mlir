// RUN: lamina-opt %s --split-input-file -p 'claim-ops{target=cblas}' | filecheck %s
// RUN: not lamina-opt %s --split-input-file --load-plugin %S/../targets/Inputs/hook_targets.py -p 'claim-ops{target=cblas},claim-ops{target=rival}' 2>&1 | filecheck %s --check-prefix=CONFLICT

// cblas claims an f32/f64 matmul it can call GEMM for, and the bias add that
// follows it; the claim is written into the IR.
graph.func @dense(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %m = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %r = graph.add %m, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  graph.return %r : tensor<4x16xf32>
}
// CHECK-LABEL: graph.func @dense
// CHECK-NEXT:    graph.matmul {{.*}} {lamina.codegen = "cblas"}
// CHECK-NEXT:    graph.add {{.*}} {lamina.codegen = "cblas"}

// CONFLICT: claim-ops.mlir:[[# @LINE - 8]]:3: error: 'graph.matmul' is already claimed by target 'cblas'; target 'rival' cannot claim it too (the later claim is refused)

// -----

// Not claimed: integer matmuls (no GEMM), a batch broadcast GEMM cannot
// stride over, an add whose matmul has another use, and an add of two
// unclaimed values.
graph.func @kept(%a: tensor<2x3xi32>, %b: tensor<3x4xi32>, %c: tensor<2x1x3x4xf32>, %d: tensor<5x4x2xf32>, %x: tensor<2x3xf32>, %w: tensor<3x4xf32>, %bias: tensor<4xf32>) -> (tensor<2x4xi32>, tensor<2x5x3x2xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {
  %0 = graph.matmul %a, %b : (tensor<2x3xi32>, tensor<3x4xi32>) -> tensor<2x4xi32>
  %1 = graph.matmul %c, %d : (tensor<2x1x3x4xf32>, tensor<5x4x2xf32>) -> tensor<2x5x3x2xf32>
  %2 = graph.matmul %x, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %3 = graph.add %2, %bias : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  graph.return %0, %1, %2, %3 : tensor<2x4xi32>, tensor<2x5x3x2xf32>, tensor<2x4xf32>, tensor<2x4xf32>
}
// CHECK-LABEL: graph.func @kept
// CHECK-NEXT:    graph.matmul %{{[^{]*}} : (tensor<2x3xi32>
// CHECK-NEXT:    graph.matmul %{{[^{]*}} : (tensor<2x1x3x4xf32>
// CHECK-NEXT:    graph.matmul {{.*}} {lamina.codegen = "cblas"}
// CHECK-NEXT:    graph.add %{{[^{]*}} : (tensor<2x4xf32>, tensor<4xf32>)
