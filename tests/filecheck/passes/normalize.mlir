// RUN: lamina-opt %s --split-input-file -p normalize | filecheck %s
// RUN: lamina-opt %s --split-input-file -p normalize,normalize | filecheck %s

// Nested dataflow blocks are spliced into their parent.
builtin.module {
  graph.func @nested(%x: tensor<4xf32>) -> tensor<4xf32> {
    %r = graph.dataflow -> tensor<4xf32> {
      %a = graph.exp %x : (tensor<4xf32>) -> tensor<4xf32>
      %b = graph.dataflow -> tensor<4xf32> {
        %c = graph.neg %a : (tensor<4xf32>) -> tensor<4xf32>
        graph.output %c : tensor<4xf32>
      }
      %d = graph.add %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      graph.output %d : tensor<4xf32>
    }
    graph.return %r : tensor<4xf32>
  }
}
// CHECK-LABEL: graph.func @nested(
// CHECK-SAME:      %[[X:[^:]*]]: tensor<4xf32>)
// CHECK-NEXT:    %[[R:.*]] = graph.dataflow -> tensor<4xf32> {
// CHECK-NEXT:      %[[A:.*]] = graph.exp %[[X]]
// CHECK-NEXT:      %[[C:.*]] = graph.neg %[[A]]
// CHECK-NEXT:      %[[D:.*]] = graph.add %[[A]], %[[C]]
// CHECK-NEXT:      graph.output %[[D]] : tensor<4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    graph.return %[[R]]

// -----

// A dataflow block that computes nothing is replaced by its outputs.
builtin.module {
  graph.func @trivial(%x: tensor<4xf32>) -> tensor<4xf32> {
    %r = graph.dataflow -> tensor<4xf32> {
      graph.output %x : tensor<4xf32>
    }
    graph.dataflow {
      graph.output
    }
    graph.return %r : tensor<4xf32>
  }
}
// CHECK-LABEL: graph.func @trivial(
// CHECK-SAME:      %[[X:[^:]*]]: tensor<4xf32>)
// CHECK-NEXT:    graph.return %[[X]] : tensor<4xf32>

// -----

// Dead pure ops go (also dead lambdas and dead dataflow blocks); impure calls stay.
builtin.module {
  graph.func @effect(%x: tensor<4xf32>) -> tensor<4xf32> attributes {impure} {
    graph.return %x : tensor<4xf32>
  }
  graph.func @dead(%x: tensor<4xf32>, %f: !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>) -> tensor<4xf32> attributes {impure} {
    %a = graph.exp %x : (tensor<4xf32>) -> tensor<4xf32>
    %b = graph.neg %a : (tensor<4xf32>) -> tensor<4xf32>
    %c = graph.constant dense<2.0> : tensor<4xf32>
    %p = graph.call_extern "pure_ext"(%x) {pure} : (tensor<4xf32>) -> tensor<4xf32>
    %i = graph.call_extern "print"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %j = graph.call @effect(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %k = graph.invoke %f(%x) : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, tensor<4xf32>) -> tensor<4xf32>
    %l = graph.lambda (%y: tensor<4xf32>) -> tensor<4xf32> {
      %e = graph.call_extern "print"(%y) : (tensor<4xf32>) -> tensor<4xf32>
      graph.return %e : tensor<4xf32>
    }
    %d = graph.dataflow -> tensor<4xf32> {
      %m = graph.relu %x : (tensor<4xf32>) -> tensor<4xf32>
      graph.output %m : tensor<4xf32>
    }
    %r = graph.sqrt %x : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %r : tensor<4xf32>
  }
}
// CHECK-LABEL: graph.func @dead(
// CHECK-SAME:      %[[X:[^:]*]]: tensor<4xf32>, %[[F:[^:]*]]: !graph.fn
// CHECK-NEXT:    graph.call_extern "print"(%[[X]])
// CHECK-NEXT:    graph.call @effect(%[[X]])
// CHECK-NEXT:    graph.invoke %[[F]](%[[X]])
// CHECK-NEXT:    %[[R:.*]] = graph.sqrt %[[X]]
// CHECK-NEXT:    graph.return %[[R]]

// -----

// Lambda bodies are normalized too; code claimed by a target is left alone.
builtin.module {
  graph.func @in_lambda(%x: tensor<4xf32>) -> !graph.fn<(tensor<4xf32>) -> tensor<4xf32>> {
    %f = graph.lambda (%y: tensor<4xf32>) -> tensor<4xf32> {
      %dead = graph.exp %y : (tensor<4xf32>) -> tensor<4xf32>
      %r = graph.dataflow -> tensor<4xf32> {
        graph.output %y : tensor<4xf32>
      }
      graph.return %r : tensor<4xf32>
    }
    graph.return %f : !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>
  }
  graph.func @claimed(%x: tensor<4xf32>) -> tensor<4xf32> attributes {lamina.codegen = "cblas"} {
    %dead = graph.exp %x : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %x : tensor<4xf32>
  }
}
// CHECK-LABEL: graph.func @in_lambda(
// CHECK-NEXT:    graph.lambda (%[[Y:[^:]*]]: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:      graph.return %[[Y]] : tensor<4xf32>
// CHECK-NEXT:    }
// CHECK-LABEL: graph.func @claimed(
// CHECK-NEXT:    graph.exp
