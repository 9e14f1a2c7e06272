// RUN: lamina-opt %s --compile-to optimization | filecheck %s --check-prefix=OPT
// RUN: lamina-opt %s --compile-to lowering | filecheck %s --check-prefix=LOW
// RUN: lamina-opt %s --compile-to build | filecheck %s --check-prefix=BUILD
// RUN: lamina-opt %s --compile-to lowering | lamina-opt --compile-to build | filecheck %s --check-prefix=BUILD
// RUN: not lamina-opt %s --compile-to bogus 2>&1 | filecheck %s --check-prefix=BAD

// --compile-to PHASE runs the default pipeline up to the end of PHASE; a
// module that is already further along continues from its own phase.

graph.func @main(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %c = graph.matmul %a, %b : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %d = graph.relu %c : (tensor<2x4xf32>) -> tensor<2x4xf32>
  graph.return %d : tensor<2x4xf32>
}

// OPT:       builtin.module attributes {lamina.phase = #lamina.phase<optimization>}
// OPT:       graph.call_te @te_fused_matmul_relu_2x4xf32
// OPT:       te.func private @te_fused_matmul_relu_2x4xf32

// LOW:       builtin.module attributes {lamina.phase = #lamina.phase<lowering>}
// LOW-NOT:   graph.
// LOW:       loop.func @main
// LOW-NOT:   llvm.

// BUILD:     builtin.module attributes {lamina.phase = #lamina.phase<build>}
// BUILD-NOT: graph.
// BUILD:     llvm.func @main

// BAD: lamina-opt: error: argument --compile-to: invalid choice: 'bogus'
