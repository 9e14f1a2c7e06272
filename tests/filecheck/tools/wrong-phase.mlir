// RUN: lamina-opt %s --split-input-file --verify-diagnostics -p legalize | filecheck %s
// RUN: not lamina-opt %s -p legalize 2>&1 | filecheck %s --check-prefix=STDERR

// A pass outside its phases is refused, at the module, naming the pass, the
// current phase, the phases it runs in and the transition to run first.

// expected-error @+1 {{pass 'legalize' cannot run in phase 'ingestion' (it runs in: optimization); run 'lift-lambdas' first}}
graph.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  graph.return %a : tensor<4xf32>
}
// CHECK: wrong-phase.mlir:[[# @LINE - 3]]:1: error: pass 'legalize' cannot run in phase 'ingestion'
// STDERR: wrong-phase.mlir:8:1: error: pass 'legalize' cannot run in phase 'ingestion' (it runs in: optimization); run 'lift-lambdas' first

// -----

// Phases only move forward.
// expected-error @+1 {{pass 'legalize' cannot run in phase 'build' (it runs in: optimization); phases only move forward}}
module attributes {lamina.phase = #lamina.phase<build>} {
}
// CHECK: wrong-phase.mlir:[[# @LINE - 2]]:1: error: pass 'legalize' cannot run in phase 'build'
