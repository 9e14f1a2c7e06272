// RUN: not lamina-opt %s --split-input-file --compile-to build 2>&1 | filecheck %s

// An op claimed by a target is lowered by that target: the claim puts the
// target in use. A target that does not exist, or that cannot lower what
// the op claims, is named at the op.

graph.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %r = graph.relu %a {lamina.codegen = "cblsa"} : (tensor<4xf32>) -> tensor<4xf32>
  graph.return %r : tensor<4xf32>
}
// CHECK: claimed-by-unknown.mlir:[[# @LINE - 3]]:3: error: 'graph.relu' op is claimed by unknown target 'cblsa' (did you mean 'cblas'?)

// -----

graph.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %r = graph.relu %a {lamina.codegen = "cblas"} : (tensor<4xf32>) -> tensor<4xf32>
  graph.return %r : tensor<4xf32>
}
// CHECK: claimed-by-unknown.mlir:[[# @LINE - 3]]:3: error: target 'cblas' claimed 'graph.relu' but did not lower it
// CHECK: note: in hook pass 'lower-claimed' of target 'cblas' (hook point lowering)
