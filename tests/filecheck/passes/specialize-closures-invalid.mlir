// RUN: lamina-opt %s -p specialize-closures,legalize,lower-te,lower-graph --split-input-file --verify-diagnostics | filecheck %s

// Function values specialize-closures cannot resolve are left in place (the
// pass itself never fails); lower-graph then reports them at the op, saying
// where the value comes from and why it has no static callee.

// An entry function taking a function value: its callers are outside the
// program. It is kept: a module without an entry point over tensors keeps its
// functions.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @apply(%f: !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, %x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{'graph.invoke' op cannot resolve the callee statically: the function value is parameter #0 of @apply, and no graph.call in the module calls @apply, so the value would come from outside the program (an entry function cannot take a function value)}}
    %y = graph.invoke %f(%x) {pure} : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %y : tensor<4xf32>
  }
}
// CHECK: 'graph.invoke' op cannot resolve the callee statically: the function value is parameter #0 of @apply, and no graph.call in the module calls @apply

// -----

// A higher-order function called only with a function value that is itself
// unknown (a parameter of an entry function).
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @apply(%f: !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, %x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{'graph.invoke' op cannot resolve the callee statically: the function value is parameter #0 of @apply, which its callers pass a function value that is not a known graph.closure}}
    %y = graph.invoke %f(%x) {pure} : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %y : tensor<4xf32>
  }
  graph.func @run(%f: !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, %x: tensor<4xf32>) -> tensor<4xf32> {
    %y = graph.call @apply(%f, %x) : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, tensor<4xf32>) -> tensor<4xf32>
    graph.return %y : tensor<4xf32>
  }
}
// CHECK: the function value is parameter #0 of @apply, which its callers pass a function value that is not a known graph.closure

// -----

// A function value selected at run time has no static callee.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @neg(%x: tensor<4xf32>) -> tensor<4xf32> {
    %y = graph.neg %x : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %y : tensor<4xf32>
  }
  graph.func @exp(%x: tensor<4xf32>) -> tensor<4xf32> {
    %y = graph.exp %x : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %y : tensor<4xf32>
  }
  graph.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %c = arith.constant true
    %f = graph.closure @neg() : () -> !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>
    %g = graph.closure @exp() : () -> !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>
    // expected-error @+1 {{'arith.select' op lower-graph cannot lower this op (it computes a function value at run time; host code has no function values, only calls of functions known at compile time)}}
    %h = arith.select %c, %f, %g : !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>
    %y = graph.invoke %h(%x) {pure} : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %y : tensor<4xf32>
  }
}
// CHECK: 'arith.select' op lower-graph cannot lower this op (it computes a function value at run time

// -----

// A function returning a closure that nothing calls: there is no caller to
// rebuild it in. (Were there an entry point, a defined function over tensors
// only, this unreachable internal function would be removed instead.)
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @scale(%w: tensor<4xf32>, %x: tensor<4xf32>) -> tensor<4xf32>
  // expected-error @+1 {{'graph.func' op cannot lower function-typed result #0 (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>): host code has no closures (specialize-closures only resolves a returned graph.closure built in the function's body, in the function's callers)}}
  graph.func @make(%w: tensor<4xf32>) -> !graph.fn<(tensor<4xf32>) -> tensor<4xf32>> {
    %f = graph.closure @scale(%w) : (tensor<4xf32>) -> !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>
    graph.return %f : !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>
  }
}
// CHECK: 'graph.func' op cannot lower function-typed result #0

// -----

// A function returning a function value that is not a closure built in its
// body (here: one it was given by an unknown caller).
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @run(%f: !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, %x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{'graph.call' op cannot lower a call returning a function value to host code: result #0 of the call of @pass, which does not return a graph.closure built in its body}}
    %g = graph.call @pass(%f) : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>) -> !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>
    %y = graph.invoke %g(%x) {pure} : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %y : tensor<4xf32>
  }
  graph.func @pass(%f: !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>) -> !graph.fn<(tensor<4xf32>) -> tensor<4xf32>> {
    graph.return %f : !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>
  }
}
// CHECK: 'graph.call' op cannot lower a call returning a function value to host code: result #0 of the call of @pass, which does not return a graph.closure built in its body
