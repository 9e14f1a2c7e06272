// RUN: lamina-opt %s -p lower-graph --split-input-file --verify-diagnostics | filecheck %s

// Invoking a function value that is not a closure built in the same function
// (here a parameter of a function nobody calls) has no static callee.
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  graph.func @apply(%f: !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, %x: tensor<4xf32>) -> tensor<4xf32> attributes {force_pure} {
    // expected-error @+1 {{'graph.invoke' op cannot resolve the callee statically: the function value is parameter #0 of @apply, and no graph.call in the module calls @apply, so the value would come from outside the program (an entry function cannot take a function value)}}
    %y = graph.invoke %f(%x) : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, tensor<4xf32>) -> tensor<4xf32>
    graph.return %y : tensor<4xf32>
  }
}
// CHECK: 'graph.invoke' op cannot resolve the callee statically: the function value is parameter #0 of @apply

// -----

// A closure may only be invoked, not passed on (specialize-closures, in phase
// optimization, specializes @apply for it).
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  graph.func @id(%x: tensor<4xf32>) -> tensor<4xf32> attributes {force_pure} {
    graph.return %x : tensor<4xf32>
  }
  graph.func @apply(%f: !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, %x: tensor<4xf32>) -> tensor<4xf32> attributes {force_pure} {
    graph.return %x : tensor<4xf32>
  }
  graph.func @main(%x: tensor<4xf32>) -> tensor<4xf32> attributes {force_pure} {
    %f = graph.closure @id() : () -> !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>
    // expected-error @+1 {{'graph.call' op cannot lower a use of a function value: operand #0 is a graph.closure of @id; host code has no function values (specialize-closures turns a graph.call passing a graph.closure into a call of a specialized callee)}}
    %y = graph.call @apply(%f, %x) : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, tensor<4xf32>) -> tensor<4xf32>
    graph.return %y : tensor<4xf32>
  }
}
// CHECK: 'graph.call' op cannot lower a use of a function value: operand #0 is a graph.closure of @id

// -----

// Host code has no closures to return.
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  graph.func @id(%x: tensor<4xf32>) -> tensor<4xf32> attributes {force_pure} {
    graph.return %x : tensor<4xf32>
  }
  // expected-error @+1 {{'graph.func' op cannot lower function-typed result #0 (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>): host code has no closures (specialize-closures only resolves a returned graph.closure built in the function's body, in the function's callers)}}
  graph.func @make() -> !graph.fn<(tensor<4xf32>) -> tensor<4xf32>> attributes {force_pure} {
    %f = graph.closure @id() : () -> !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>
    graph.return %f : !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>
  }
}
// CHECK: cannot lower function-typed result #0

// -----

// Kernels must be lowered first.
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  te.func @neg(%a: tensor<4xf32>) -> tensor<4xf32> {
    %c = te.compute [4] (%i) {
      %x = te.read %a[%i] : tensor<4xf32>
      %y = arith.negf %x : f32
      te.yield %y : f32
    } : tensor<4xf32>
    te.return %c : tensor<4xf32>
  }
  graph.func @main(%x: tensor<4xf32>) -> tensor<4xf32> attributes {force_pure} {
    // expected-error @+1 {{'graph.call_te' op lower-graph cannot lower this op (run lower-te first)}}
    %y = graph.call_te @neg(%x) : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %y : tensor<4xf32>
  }
}
// CHECK: 'graph.call_te' op lower-graph cannot lower this op (run lower-te first)
