// RUN: lamina-opt %s --split-input-file -p cse | filecheck %s

// Identical pure computations are merged: compute ops, constants, calls of
// pure functions and calls marked `pure`.
builtin.module {
  graph.func @callee(%x: tensor<4xf32>) -> tensor<4xf32> {
    graph.return %x : tensor<4xf32>
  }
  graph.func @pure_ops(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = graph.exp %x : (tensor<4xf32>) -> tensor<4xf32>
    %b = graph.exp %x : (tensor<4xf32>) -> tensor<4xf32>
    %c = graph.call @callee(%a) : (tensor<4xf32>) -> tensor<4xf32>
    %d = graph.call @callee(%b) : (tensor<4xf32>) -> tensor<4xf32>
    %e = graph.call_extern "ext"(%c) {pure} : (tensor<4xf32>) -> tensor<4xf32>
    %f = graph.call_extern "ext"(%d) {pure} : (tensor<4xf32>) -> tensor<4xf32>
    %g = graph.add %e, %f : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    graph.return %g : tensor<4xf32>
  }
}
// CHECK-LABEL: graph.func @pure_ops(
// CHECK-SAME:      %[[X:[^:]*]]: tensor<4xf32>)
// CHECK-NEXT:    %[[A:.*]] = graph.exp %[[X]]
// CHECK-NEXT:    %[[C:.*]] = graph.call @callee(%[[A]])
// CHECK-NEXT:    %[[E:.*]] = graph.call_extern "ext"(%[[C]]) {pure}
// CHECK-NEXT:    %[[G:.*]] = graph.add %[[E]], %[[E]]
// CHECK-NEXT:    graph.return %[[G]]

// -----

// Calls with effects are never merged.
builtin.module {
  graph.func @effect(%x: tensor<4xf32>) -> tensor<4xf32> attributes {impure} {
    graph.return %x : tensor<4xf32>
  }
  graph.func @impure_ops(%x: tensor<4xf32>, %fn: !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>) -> tensor<4xf32> attributes {impure} {
    %a = graph.call_extern "print"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %b = graph.call_extern "print"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %c = graph.call @effect(%a) : (tensor<4xf32>) -> tensor<4xf32>
    %d = graph.call @effect(%a) : (tensor<4xf32>) -> tensor<4xf32>
    %e = graph.invoke %fn(%c) : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, tensor<4xf32>) -> tensor<4xf32>
    %f = graph.invoke %fn(%c) : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, tensor<4xf32>) -> tensor<4xf32>
    %g = graph.add %e, %f : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %h = graph.add %b, %d : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %r = graph.add %g, %h : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    graph.return %r : tensor<4xf32>
  }
}
// CHECK-LABEL: graph.func @impure_ops(
// CHECK-COUNT-2: graph.call_extern "print"
// CHECK-COUNT-2: graph.call @effect
// CHECK-COUNT-2: graph.invoke
// CHECK-COUNT-3: graph.add

// -----

// Inside dataflow blocks and in later phases too.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @in_dataflow(%x: tensor<4xf32>) -> tensor<4xf32> {
    %r = graph.dataflow -> tensor<4xf32> {
      %a = graph.relu %x : (tensor<4xf32>) -> tensor<4xf32>
      %b = graph.relu %x : (tensor<4xf32>) -> tensor<4xf32>
      %c = graph.mul %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      graph.output %c : tensor<4xf32>
    }
    graph.return %r : tensor<4xf32>
  }
}
// CHECK-LABEL: graph.func @in_dataflow(
// CHECK-NEXT:    graph.dataflow
// CHECK-NEXT:      %[[A:.*]] = graph.relu
// CHECK-NEXT:      %[[C:.*]] = graph.mul %[[A]], %[[A]]
// CHECK-NEXT:      graph.output %[[C]]
