// RUN: lamina-opt %s | lamina-opt | filecheck %s
// RUN: lamina-opt %s --print-op-generic | lamina-opt | filecheck %s

// graph.func (with arg/res attrs, impure, force_pure, declarations),
// graph.return, graph.call, graph.lambda, graph.closure, graph.invoke (long
// and short form; the short form is printed).

// CHECK-LABEL: graph.func @add(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:  %s = graph.add %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:  graph.return %s : tensor<4xf32>
graph.func @add(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %s = graph.add %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  graph.return %s : tensor<4xf32>
}

// CHECK-LABEL: graph.func @no_results(%a: tensor<4xf32>) attributes {impure} {
// CHECK-NEXT:  graph.return
graph.func @no_results(%a: tensor<4xf32>) attributes {impure} {
  graph.return
}

// CHECK-LABEL: graph.func @two_results(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) attributes {force_pure} {
// CHECK-NEXT:  graph.return %a, %a : tensor<4xf32>, tensor<4xf32>
graph.func @two_results(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) attributes {force_pure} {
  graph.return %a, %a : tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: graph.func @placed(%a: tensor<4xf32> {device = #lamina.device<"cpu", 0>, lamina.constraint = #lamina.constraint<affine_map<(d0) -> ((d0 floordiv 2), (d0 mod 2))>, #lamina.undef>}) -> (tensor<4xf32> {device = #lamina.device<"gpu", 1>}) {
// CHECK-NEXT:  graph.return %a : tensor<4xf32>
graph.func @placed(%a: tensor<4xf32> {device = #lamina.device<"cpu", 0>, lamina.constraint = #lamina.constraint<affine_map<(d0) -> (d0 floordiv 2, d0 mod 2)>, #lamina.undef>}) -> (tensor<4xf32> {device = #lamina.device<"gpu", 1>}) {
  graph.return %a : tensor<4xf32>
}

// CHECK-LABEL: graph.func @external(tensor<4xf32>) -> tensor<4xf32>
graph.func @external(tensor<4xf32>) -> tensor<4xf32>

// CHECK-LABEL: graph.func @calls(%x: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:  %0 = graph.call @add(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:  %1, %2 = graph.call @two_results(%0) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
// CHECK-NEXT:  graph.call @no_results(%2) : (tensor<4xf32>) -> ()
// CHECK-NEXT:  %3 = graph.call @external(%1) {device = #lamina.device<"cpu", 0>} : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:  graph.return %3 : tensor<4xf32>
graph.func @calls(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.call @add(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1:2 = graph.call @two_results(%0) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  graph.call @no_results(%1#1) : (tensor<4xf32>) -> ()
  %2 = graph.call @external(%1#0) {device = #lamina.device<"cpu", 0>} : (tensor<4xf32>) -> tensor<4xf32>
  graph.return %2 : tensor<4xf32>
}

// CHECK-LABEL: graph.func @function_values(%x: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:  %f = graph.lambda (%y: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:  %z = graph.mul %y, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:  graph.return %z : tensor<4xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  %g = graph.lambda (%p: tensor<4xf32>, %q: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) attributes {device = #lamina.device<"cpu", 0>} {
// CHECK-NEXT:  graph.return %q, %p : tensor<4xf32>, tensor<4xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  %h = graph.lambda () {
// CHECK-NEXT:  graph.return
// CHECK-NEXT:  }
// CHECK-NEXT:  %c = graph.closure @add(%w) : (tensor<4xf32>) -> !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>
// CHECK-NEXT:  %r = graph.invoke %f(%x) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:  %s, %s_1 = graph.invoke %g(%r, %x) {pure} : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
// CHECK-NEXT:  graph.invoke %h() : () -> ()
// CHECK-NEXT:  %t = graph.invoke %c(%s) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:  %u = graph.invoke %c(%t) {pure} : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:  graph.return %u : tensor<4xf32>
graph.func @function_values(%x: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<4xf32> {
  %f = graph.lambda (%y: tensor<4xf32>) -> tensor<4xf32> {
    %z = graph.mul %y, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    graph.return %z : tensor<4xf32>
  }
  %g = graph.lambda (%p: tensor<4xf32>, %q: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) attributes {device = #lamina.device<"cpu", 0>} {
    graph.return %q, %p : tensor<4xf32>, tensor<4xf32>
  }
  %h = graph.lambda () {
    graph.return
  }
  %c = graph.closure @add(%w) : (tensor<4xf32>) -> !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>
  %r = graph.invoke %f(%x) : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, tensor<4xf32>) -> tensor<4xf32>
  %s:2 = graph.invoke %g(%r, %x) {pure} : (!graph.fn<(tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  graph.invoke %h() : (!graph.fn<() -> ()>) -> ()
  %t = graph.invoke %c(%s#0) : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, tensor<4xf32>) -> tensor<4xf32>
  // The short form: the function value's type follows from the signature.
  %u = graph.invoke %c(%t) {pure} : (tensor<4xf32>) -> tensor<4xf32>
  graph.return %u : tensor<4xf32>
}

// CHECK-LABEL: graph.func @higher_order(%f: !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, %x: tensor<4xf32>) -> !graph.fn<(tensor<4xf32>) -> tensor<4xf32>> {
// CHECK-NEXT:  %y = graph.invoke %f(%x) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:  graph.return %f : !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>
graph.func @higher_order(%f: !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, %x: tensor<4xf32>) -> !graph.fn<(tensor<4xf32>) -> tensor<4xf32>> {
  %y = graph.invoke %f(%x) : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, tensor<4xf32>) -> tensor<4xf32>
  graph.return %f : !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>
}

// CHECK-LABEL: graph.func @nested_fn_types(%f: !graph.fn<(!graph.fn<(tensor<2xf32>) -> tensor<2xf32>>) -> !graph.fn<() -> ()>>) -> !graph.fn<(!graph.fn<(tensor<2xf32>) -> tensor<2xf32>>) -> !graph.fn<() -> ()>> {
// CHECK-NEXT:  graph.return %f : !graph.fn<(!graph.fn<(tensor<2xf32>) -> tensor<2xf32>>) -> !graph.fn<() -> ()>>
graph.func @nested_fn_types(%f: !graph.fn<(!graph.fn<(tensor<2xf32>) -> tensor<2xf32>>) -> !graph.fn<() -> ()>>) -> !graph.fn<(!graph.fn<(tensor<2xf32>) -> tensor<2xf32>>) -> !graph.fn<() -> ()>> {
  graph.return %f : !graph.fn<(!graph.fn<(tensor<2xf32>) -> tensor<2xf32>>) -> !graph.fn<() -> ()>>
}
