// RUN: lamina-opt %s -p lower-te --split-input-file --verify-diagnostics | filecheck %s

// A tensor constant in a te.func has no buffer to be read from.
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  te.func @tensor_constant(%a: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{'arith.constant' op lower-te cannot lower a tensor constant inside a te.func (pass it as a parameter, e.g. from a graph.constant)}}
    %w = arith.constant dense<1.0> : tensor<4xf32>
    %c = te.compute [4] (%i) {
      %x = te.read %a[%i] : tensor<4xf32>
      %y = te.read %w[%i] : tensor<4xf32>
      %s = arith.addf %x, %y : f32
      te.yield %s : f32
    } : tensor<4xf32>
    te.return %c : tensor<4xf32>
  }
}
// CHECK: lower-te cannot lower a tensor constant inside a te.func

// -----

// Reads must sit directly in the compute region, not inside another region op.
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  te.func @nested(%a: tensor<4xf32>, %p: tensor<4xi1>) -> tensor<4xf32> {
    %c = te.compute [4] (%i) {
      %b = te.read %p[%i] : tensor<4xi1>
      %v = scf.if %b -> (f32) {
        // expected-error @+1 {{'te.read' op lower-te cannot lower a te op nested in another op}}
        %x = te.read %a[%i] : tensor<4xf32>
        scf.yield %x : f32
      } else {
        %z = arith.constant 0.0 : f32
        scf.yield %z : f32
      }
      te.yield %v : f32
    } : tensor<4xf32>
    te.return %c : tensor<4xf32>
  }
}
// CHECK: 'te.read' op lower-te cannot lower a te op nested in another op

// -----

// lower-te runs in phase lowering only: legalize must come first.
// expected-error @+1 {{pass 'lower-te' cannot run in phase 'optimization' (it runs in: lowering); run 'legalize' first}}
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  te.func @early(%a: tensor<4xf32>) -> tensor<4xf32> {
    te.return %a : tensor<4xf32>
  }
}
// CHECK: pass 'lower-te' cannot run in phase 'optimization'
