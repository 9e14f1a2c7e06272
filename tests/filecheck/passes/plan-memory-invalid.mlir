// RUN: lamina-opt %s -p plan-memory --split-input-file --verify-diagnostics | filecheck %s

// plan-memory plans buffers of the lowering phase; before legalize there are none.
// expected-error @+1 {{pass 'plan-memory' cannot run in phase 'optimization' (it runs in: lowering); run 'legalize' first}}
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %y = graph.exp %x : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %y : tensor<4xf32>
  }
}
// CHECK: pass 'plan-memory' cannot run in phase 'optimization' (it runs in: lowering); run 'legalize' first

// -----

// expected-error @+1 {{pass 'plan-memory' cannot run in phase 'build' (it runs in: lowering)}}
builtin.module attributes {lamina.phase = #lamina.phase<build>} {
}
// CHECK: pass 'plan-memory' cannot run in phase 'build'
