// RUN: lamina-opt %s --split-input-file --verify-diagnostics -p lift-lambdas | filecheck %s

// lift-lambdas is the ingestion -> optimization transition: it runs only in ingestion.
// expected-error @+1 {{pass 'lift-lambdas' cannot run in phase 'optimization' (it runs in: ingestion)}}
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
    graph.return %x : tensor<4xf32>
  }
}
// CHECK: error: pass 'lift-lambdas' cannot run in phase 'optimization' (it runs in: ingestion)
