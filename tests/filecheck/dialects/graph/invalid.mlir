// RUN: lamina-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Verifier errors of functions, calls, function values, dataflow blocks,
// constants, device ops and kernel calls. One chunk per rule.

// expected-error @+1 {{entry block argument types (tensor<3xf32>) do not match the function parameter types (tensor<4xf32>)}}
"graph.func"() <{sym_name = "f", function_type = (tensor<4xf32>) -> ()}> ({
^bb0(%a: tensor<3xf32>):
  "graph.return"() : () -> ()
}) : () -> ()

// CHECK: entry block argument types (tensor<3xf32>) do not match the function parameter types (tensor<4xf32>)

// -----

// expected-error @+1 {{'impure' and 'force_pure' are mutually exclusive}}
graph.func @f() attributes {impure, force_pure} {
  graph.return
}

// CHECK: 'impure' and 'force_pure' are mutually exclusive

// -----

// expected-error @+1 {{arg_attrs has 1 entries, expected 2 (one per function parameter)}}
"graph.func"() <{sym_name = "f", function_type = (tensor<4xf32>, tensor<4xf32>) -> (), arg_attrs = [{}]}> ({
^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):
  "graph.return"() : () -> ()
}) : () -> ()

// CHECK: arg_attrs has 1 entries, expected 2 (one per function parameter)

// -----

graph.func @f(%a: tensor<4xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{returned types (tensor<4xf32>) do not match the function result types (tensor<3xf32>)}}
  graph.return %a : tensor<4xf32>
}

// CHECK: returned types (tensor<4xf32>) do not match the function result types (tensor<3xf32>)

// -----

graph.func @f(%a: tensor<4xf32>) {
  %f = graph.lambda (%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{returned types () do not match the lambda result types (tensor<4xf32>)}}
    graph.return
  }
  graph.return
}

// CHECK: returned types () do not match the lambda result types (tensor<4xf32>)

// -----

graph.func @f(%a: tensor<4xf32>) {
  // expected-error @+1 {{callee @missing does not name a symbol in the module}}
  %0 = graph.call @missing(%a) : (tensor<4xf32>) -> tensor<4xf32>
  graph.return
}

// CHECK: callee @missing does not name a symbol in the module

// -----

loop.func @k(%a: memref<4xf32>) {
  loop.return
}
graph.func @f(%a: tensor<4xf32>) {
  // expected-error @+1 {{callee @k is a 'loop.func', expected a graph.func}}
  graph.call @k(%a) : (tensor<4xf32>) -> ()
  graph.return
}

// CHECK: callee @k is a 'loop.func', expected a graph.func

// -----

graph.func @g(%a: tensor<4xf32>, %b: tensor<4xf32>) {
  graph.return
}
graph.func @f(%a: tensor<4xf32>) {
  // expected-error @+1 {{the call has 1 operands but the callee expects 2: got (tensor<4xf32>), expected (tensor<4xf32>, tensor<4xf32>)}}
  graph.call @g(%a) : (tensor<4xf32>) -> ()
  graph.return
}

// CHECK: the call has 1 operands but the callee expects 2: got (tensor<4xf32>), expected (tensor<4xf32>, tensor<4xf32>)

// -----

graph.func @g(%a: tensor<4xf32>) {
  graph.return
}
graph.func @f(%a: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 of the call has type tensor<4xi32>, but the callee expects tensor<4xf32>}}
  graph.call @g(%a) : (tensor<4xi32>) -> ()
  graph.return
}

// CHECK: operand #0 of the call has type tensor<4xi32>, but the callee expects tensor<4xf32>

// -----

graph.func @g(%a: tensor<4xf32>) -> tensor<4xf32> {
  graph.return %a : tensor<4xf32>
}
graph.func @f(%a: tensor<4xf32>) {
  // expected-error @+1 {{result #0 of the call has type tensor<2x2xf32>, but the callee expects tensor<4xf32>}}
  %0 = graph.call @g(%a) : (tensor<4xf32>) -> tensor<2x2xf32>
  graph.return
}

// CHECK: result #0 of the call has type tensor<2x2xf32>, but the callee expects tensor<4xf32>

// -----

graph.func @f() {
  // expected-error @+1 {{block argument types (tensor<3xf32>) do not match the parameter types of !graph.fn<(tensor<4xf32>) -> ()>}}
  %f = "graph.lambda"() ({
  ^bb0(%x: tensor<3xf32>):
    "graph.return"() : () -> ()
  }) : () -> !graph.fn<(tensor<4xf32>) -> ()>
  graph.return
}

// CHECK: block argument types (tensor<3xf32>) do not match the parameter types of !graph.fn<(tensor<4xf32>) -> ()>

// -----

graph.func @f(%a: tensor<4xf32>) {
  // expected-error @+1 {{body must end with graph.return, got an empty block}}
  %f = "graph.lambda"() ({
  ^bb0(%x: tensor<4xf32>):
  }) : () -> !graph.fn<(tensor<4xf32>) -> ()>
  graph.return
}

// CHECK: body must end with graph.return, got an empty block

// -----

graph.func @f(%a: tensor<4xf32>) {
  // expected-error @+1 {{callee @missing does not name a symbol in the module}}
  %c = graph.closure @missing(%a) : (tensor<4xf32>) -> !graph.fn<() -> ()>
  graph.return
}

// CHECK: callee @missing does not name a symbol in the module

// -----

graph.func @g(%a: tensor<4xf32>) {
  graph.return
}
graph.func @f(%a: tensor<4xf32>) {
  // expected-error @+1 {{closure captures 2 values but callee @g has only 1 parameters}}
  %c = graph.closure @g(%a, %a) : (tensor<4xf32>, tensor<4xf32>) -> !graph.fn<() -> ()>
  graph.return
}

// CHECK: closure captures 2 values but callee @g has only 1 parameters

// -----

graph.func @g(%a: tensor<4xf32>, %b: tensor<2xf32>) {
  graph.return
}
graph.func @f(%a: tensor<4xf64>) {
  // expected-error @+1 {{captured value #0 has type tensor<4xf64>, but callee parameter #0 has type tensor<4xf32>}}
  %c = graph.closure @g(%a) : (tensor<4xf64>) -> !graph.fn<(tensor<2xf32>) -> ()>
  graph.return
}

// CHECK: captured value #0 has type tensor<4xf64>, but callee parameter #0 has type tensor<4xf32>

// -----

graph.func @g(%a: tensor<4xf32>, %b: tensor<2xf32>) -> tensor<4xf32> {
  graph.return %a : tensor<4xf32>
}
graph.func @f(%a: tensor<4xf32>) {
  // expected-error @+1 {{result type !graph.fn<(tensor<2xf32>) -> ()> does not match inferred !graph.fn<(tensor<2xf32>) -> tensor<4xf32>>}}
  %c = graph.closure @g(%a) : (tensor<4xf32>) -> !graph.fn<(tensor<2xf32>) -> ()>
  graph.return
}

// CHECK: result type !graph.fn<(tensor<2xf32>) -> ()> does not match inferred !graph.fn<(tensor<2xf32>) -> tensor<4xf32>>

// -----

graph.func @f(%fn: !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, %a: tensor<4xf32>) {
  // expected-error @+1 {{the invocation has 2 operands but the callee expects 1: got (tensor<4xf32>, tensor<4xf32>), expected (tensor<4xf32>)}}
  %r = graph.invoke %fn(%a, %a) : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  graph.return
}

// CHECK: the invocation has 2 operands but the callee expects 1: got (tensor<4xf32>, tensor<4xf32>), expected (tensor<4xf32>)

// -----

graph.func @f(%fn: !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, %a: tensor<4xi64>) {
  // expected-error @+1 {{operand #0 of the invocation has type tensor<4xi64>, but the callee expects tensor<4xf32>}}
  %r = graph.invoke %fn(%a) : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, tensor<4xi64>) -> tensor<4xf32>
  graph.return
}

// CHECK: operand #0 of the invocation has type tensor<4xi64>, but the callee expects tensor<4xf32>

// -----

graph.func @f(%fn: !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, %a: tensor<4xf32>) {
  // expected-error @+1 {{result #0 of the invocation has type tensor<8xf32>, but the callee expects tensor<4xf32>}}
  %r = graph.invoke %fn(%a) : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, tensor<4xf32>) -> tensor<8xf32>
  graph.return
}

// CHECK: result #0 of the invocation has type tensor<8xf32>, but the callee expects tensor<4xf32>

// -----

graph.func @f(%a: tensor<4xf32>) {
  // expected-error @+1 {{graph.output types (tensor<4xf32>) do not match the dataflow result types (tensor<4xf64>)}}
  %r = graph.dataflow -> tensor<4xf64> {
    graph.output %a : tensor<4xf32>
  }
  graph.return
}

// CHECK: graph.output types (tensor<4xf32>) do not match the dataflow result types (tensor<4xf64>)

// -----

graph.func @f(%a: tensor<4xf32>) {
  // expected-error @+1 {{body must end with graph.output, got an empty block}}
  "graph.dataflow"() ({
  ^bb0:
  }) : () -> ()
  graph.return
}

// CHECK: body must end with graph.output, got an empty block

// -----

graph.func @f(%a: tensor<4xf32>) {
  // expected-error @+1 {{body must have no block arguments, got (tensor<4xf32>)}}
  "graph.dataflow"() ({
  ^bb0(%x: tensor<4xf32>):
    "graph.output"() : () -> ()
  }) : () -> ()
  graph.return
}

// CHECK: body must have no block arguments, got (tensor<4xf32>)

// -----

graph.func @f(%a: tensor<4xf32>) {
  // expected-error @+1 {{'graph.output' expects parent op 'graph.dataflow'}}
  graph.output %a : tensor<4xf32>
}

// CHECK: 'graph.output' expects parent op 'graph.dataflow'

// -----

graph.func @f() {
  // expected-error @+1 {{result type tensor<2x2xf32> does not match inferred tensor<4xf32>}}
  %c = "graph.constant"() <{value = dense<1.0> : tensor<4xf32>}> : () -> tensor<2x2xf32>
  graph.return
}

// CHECK: result type tensor<2x2xf32> does not match inferred tensor<4xf32>

// -----

graph.func @f(%a: tensor<4xf32>) {
  // expected-error @+1 {{result type tensor<4xf64> does not match inferred tensor<4xf32>}}
  %0 = graph.on_device %a {device = #lamina.device<"gpu", 0>} : (tensor<4xf32>) -> tensor<4xf64>
  graph.return
}

// CHECK: result type tensor<4xf64> does not match inferred tensor<4xf32>

// -----

graph.func @f(%a: tensor<4xf32>) {
  // expected-error @+1 {{result type tensor<5xf32> does not match inferred tensor<4xf32>}}
  %0 = graph.device_copy %a {src = #lamina.device<"gpu", 0>, dst = #lamina.device<"cpu", 0>} : (tensor<4xf32>) -> tensor<5xf32>
  graph.return
}

// CHECK: result type tensor<5xf32> does not match inferred tensor<4xf32>

// -----

graph.func @g(%a: tensor<4xf32>) {
  graph.return
}
graph.func @f(%a: tensor<4xf32>) {
  // expected-error @+1 {{callee @g is a 'graph.func', expected a loop.func}}
  %0 = graph.call_loop @g(%a) : (tensor<4xf32>) -> tensor<4xf32>
  graph.return
}

// CHECK: callee @g is a 'graph.func', expected a loop.func

// -----

loop.func @k(%a: memref<4xf32>, %out: memref<4xf32>) {
  loop.return
}
graph.func @f(%a: tensor<4xf32>) {
  // expected-error @+1 {{call types (tensor<4xf32>) -> (tensor<8xf32>) do not match callee @k of type (memref<4xf32>, memref<4xf32>) -> () (expected the same arguments and results, or destination-passing style: arguments then outputs, no results)}}
  %0 = graph.call_loop @k(%a) : (tensor<4xf32>) -> tensor<8xf32>
  graph.return
}

// CHECK: call types (tensor<4xf32>) -> (tensor<8xf32>) do not match callee @k of type (memref<4xf32>, memref<4xf32>) -> () (expected the same arguments and results, or destination-passing style: arguments then outputs, no results)

// -----

graph.func @f(%a: tensor<4xf32>) {
  // expected-error @+1 {{callee name must not be empty}}
  %0 = graph.call_extern ""(%a) : (tensor<4xf32>) -> tensor<4xf32>
  graph.return
}
// CHECK: callee name must not be empty

// -----

loop.func @k(%a: memref<4xf32>) {
  loop.return
}
graph.func @f(%a: tensor<4xf32>) {
  // expected-error @+1 {{callee @k is a 'loop.func', expected a te.func}}
  %0 = graph.call_te @k(%a) : (tensor<4xf32>) -> tensor<4xf32>
  graph.return
}
// CHECK: callee @k is a 'loop.func', expected a te.func

// -----

te.func private @k(tensor<4xf32>) -> tensor<4xf32>
graph.func @f(%a: tensor<4xf32>) {
  // expected-error @+1 {{call types (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>) do not match callee @k of type (tensor<4xf32>) -> (tensor<4xf32>)}}
  %0 = graph.call_te @k(%a, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  graph.return
}
// CHECK: call types (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>) do not match callee @k of type (tensor<4xf32>) -> (tensor<4xf32>)

// -----

graph.func @f(%a: tensor<4xf32>) {
  // expected-error @+1 {{Operation graph.exp terminates block in single-block region but is not a terminator}}
  %0 = graph.exp %a : (tensor<4xf32>) -> tensor<4xf32>
}
// CHECK: Operation graph.exp terminates block in single-block region but is not a terminator

// -----

graph.func @f(%a: tensor<4xf32>) {
  // expected-error @+1 {{device #lamina.device<"gpu", 0> of the copy's result does not match its dst #lamina.device<"cpu", 0>}}
  %0 = graph.device_copy %a {src = #lamina.device<"gpu", 0>, dst = #lamina.device<"cpu", 0>, device = #lamina.device<"gpu", 0>} : (tensor<4xf32>) -> tensor<4xf32>
  graph.return
}
// CHECK: device #lamina.device<"gpu", 0> of the copy's result does not match its dst #lamina.device<"cpu", 0>

// -----

graph.func @f(%fn: !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, %x: tensor<4xf32>) {
  // expected-error @+1 {{expected 1 argument types (or the function type and 1 argument types), got 3}}
  %r = graph.invoke %fn(%x) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  graph.return
}
// CHECK: expected 1 argument types (or the function type and 1 argument types), got 3
