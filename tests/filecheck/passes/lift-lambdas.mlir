// RUN: lamina-opt %s --split-input-file -p lift-lambdas | filecheck %s
// RUN: lamina-opt %s --split-input-file -p lift-lambdas,verify-phase | filecheck %s

// A lambda without captures becomes a function and a closure capturing nothing.
builtin.module {
  graph.func @simple(%x: tensor<4xf32>) -> tensor<4xf32> {
    %f = graph.lambda (%y: tensor<4xf32>) -> tensor<4xf32> {
      %z = graph.exp %y : (tensor<4xf32>) -> tensor<4xf32>
      graph.return %z : tensor<4xf32>
    }
    %r = graph.invoke %f(%x) {pure} : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, tensor<4xf32>) -> tensor<4xf32>
    graph.return %r : tensor<4xf32>
  }
}
// CHECK:       builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
// CHECK-LABEL: graph.func @simple(
// CHECK-SAME:      %[[X:.*]]: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    %[[F:.*]] = graph.closure @simple_lambda0() : () -> !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>
// CHECK-NEXT:    %[[R:.*]] = graph.invoke %[[F]](%[[X]]) {pure}
// CHECK-NEXT:    graph.return %[[R]]
// CHECK-LABEL: graph.func @simple_lambda0(
// CHECK-SAME:      %[[Y:.*]]: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    %[[Z:.*]] = graph.exp %[[Y]]
// CHECK-NEXT:    graph.return %[[Z]]
// CHECK-NOT:   graph.lambda

// -----

// Captured values become leading parameters, in order of first use.
builtin.module {
  graph.func @captures(%x: tensor<4xf32>, %w: tensor<4xf32>, %b: tensor<4xf32>) -> !graph.fn<(tensor<4xf32>) -> tensor<4xf32>> {
    %f = graph.lambda (%y: tensor<4xf32>) -> tensor<4xf32> {
      %t = graph.mul %y, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      %u = graph.add %t, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      %v = graph.add %u, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      graph.return %v : tensor<4xf32>
    }
    graph.return %f : !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>
  }
}
// CHECK-LABEL: graph.func @captures(
// CHECK-SAME:      %{{.*}}: tensor<4xf32>, %[[W:.*]]: tensor<4xf32>, %[[B:.*]]: tensor<4xf32>)
// CHECK-NEXT:    %[[F:.*]] = graph.closure @captures_lambda0(%[[W]], %[[B]]) : (tensor<4xf32>, tensor<4xf32>) -> !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>
// CHECK-NEXT:    graph.return %[[F]]
// CHECK-LABEL: graph.func @captures_lambda0(
// CHECK-SAME:      %[[CW:.*]]: tensor<4xf32>, %[[CB:.*]]: tensor<4xf32>, %[[Y:.*]]: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    %[[T:.*]] = graph.mul %[[Y]], %[[CW]]
// CHECK-NEXT:    %[[U:.*]] = graph.add %[[T]], %[[CB]]
// CHECK-NEXT:    %[[V:.*]] = graph.add %[[U]], %[[CW]]
// CHECK-NEXT:    graph.return %[[V]]

// -----

// Nested lambdas: the inner one's captures from the outermost scope are
// captured by the outer one too (transitively); names number lambdas in
// pre-order, and the lifted functions follow their enclosing function.
builtin.module {
  graph.func @nested(%x: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<4xf32> {
    %f = graph.lambda (%y: tensor<4xf32>) -> tensor<4xf32> {
      %s = graph.add %y, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      %g = graph.lambda (%z: tensor<4xf32>) -> tensor<4xf32> {
        %t = graph.mul %z, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
        %u = graph.add %t, %s : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
        graph.return %u : tensor<4xf32>
      }
      %r = graph.invoke %g(%s) {pure} : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, tensor<4xf32>) -> tensor<4xf32>
      graph.return %r : tensor<4xf32>
    }
    %o = graph.invoke %f(%x) {pure} : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, tensor<4xf32>) -> tensor<4xf32>
    graph.return %o : tensor<4xf32>
  }
  graph.func @after() {
    graph.return
  }
}
// CHECK-LABEL: graph.func @nested(
// CHECK-SAME:      %[[X:[^:]*]]: tensor<4xf32>, %[[W:[^:]*]]: tensor<4xf32>)
// CHECK-NEXT:    %[[F:.*]] = graph.closure @nested_lambda0(%[[W]], %[[X]])
// CHECK-NEXT:    graph.invoke %[[F]](%[[X]])
// CHECK-LABEL: graph.func @nested_lambda0(
// CHECK-SAME:      %[[LW:[^:]*]]: tensor<4xf32>, %[[LX:[^:]*]]: tensor<4xf32>, %[[Y:[^:]*]]: tensor<4xf32>)
// CHECK-NEXT:    %[[S:.*]] = graph.add %[[Y]], %[[LW]]
// CHECK-NEXT:    %[[G:.*]] = graph.closure @nested_lambda1(%[[LX]], %[[S]]) : (tensor<4xf32>, tensor<4xf32>) -> !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>
// CHECK-NEXT:    graph.invoke %[[G]](%[[S]])
// CHECK-LABEL: graph.func @nested_lambda1(
// CHECK-SAME:      %[[IX:[^:]*]]: tensor<4xf32>, %[[IS:[^:]*]]: tensor<4xf32>, %[[Z:[^:]*]]: tensor<4xf32>)
// CHECK-NEXT:    %[[T:.*]] = graph.mul %[[Z]], %[[IX]]
// CHECK-NEXT:    graph.add %[[T]], %[[IS]]
// CHECK-LABEL: graph.func @after()

// -----

// A lambda capturing another lambda gets a function-typed parameter; names
// skip symbols that are already taken.
builtin.module {
  graph.func @higher(%x: tensor<4xf32>) -> tensor<4xf32> {
    %f = graph.lambda (%y: tensor<4xf32>) -> tensor<4xf32> {
      %z = graph.neg %y : (tensor<4xf32>) -> tensor<4xf32>
      graph.return %z : tensor<4xf32>
    }
    %h = graph.lambda (%a: tensor<4xf32>) -> tensor<4xf32> {
      %b = graph.invoke %f(%a) {pure} : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, tensor<4xf32>) -> tensor<4xf32>
      graph.return %b : tensor<4xf32>
    }
    %r = graph.invoke %h(%x) {pure} : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, tensor<4xf32>) -> tensor<4xf32>
    graph.return %r : tensor<4xf32>
  }
  graph.func @higher_lambda0() {
    graph.return
  }
}
// CHECK-LABEL: graph.func @higher(
// CHECK-NEXT:    %[[F:.*]] = graph.closure @higher_lambda1() : () -> !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>
// CHECK-NEXT:    %[[H:.*]] = graph.closure @higher_lambda2(%[[F]]) : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>) -> !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>
// CHECK-NEXT:    graph.invoke %[[H]]
// CHECK-LABEL: graph.func @higher_lambda1(
// CHECK-NEXT:    graph.neg
// CHECK-LABEL: graph.func @higher_lambda2(
// CHECK-SAME:      %[[FN:[^:]*]]: !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, %[[A:[^:]*]]: tensor<4xf32>)
// CHECK-NEXT:    graph.invoke %[[FN]](%[[A]]) {pure}
// CHECK-LABEL: graph.func @higher_lambda0()

// -----

// Lambdas inside dataflow blocks become closures in place; a lambda that makes
// impure calls becomes an `impure` function; claimed code keeps its lambdas.
builtin.module {
  graph.func @in_dataflow(%x: tensor<4xf32>) -> tensor<4xf32> attributes {impure} {
    %r = graph.dataflow -> tensor<4xf32> {
      %f = graph.lambda (%y: tensor<4xf32>) -> tensor<4xf32> {
        %z = graph.add %y, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
        graph.return %z : tensor<4xf32>
      }
      %g = graph.invoke %f(%x) {pure} : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, tensor<4xf32>) -> tensor<4xf32>
      graph.output %g : tensor<4xf32>
    }
    %p = graph.lambda (%y: tensor<4xf32>) -> tensor<4xf32> {
      %e = graph.call_extern "print"(%y) : (tensor<4xf32>) -> tensor<4xf32>
      graph.return %e : tensor<4xf32>
    }
    %q = graph.invoke %p(%r) : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, tensor<4xf32>) -> tensor<4xf32>
    graph.return %q : tensor<4xf32>
  }
  graph.func @claimed(%x: tensor<4xf32>) -> !graph.fn<(tensor<4xf32>) -> tensor<4xf32>> attributes {lamina.codegen = "cblas"} {
    %f = graph.lambda (%y: tensor<4xf32>) -> tensor<4xf32> {
      graph.return %x : tensor<4xf32>
    }
    graph.return %f : !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>
  }
}
// CHECK-LABEL: graph.func @in_dataflow(
// CHECK-SAME:      %[[X:[^:]*]]: tensor<4xf32>)
// CHECK-NEXT:    graph.dataflow
// CHECK-NEXT:      %[[F:.*]] = graph.closure @in_dataflow_lambda0(%[[X]])
// CHECK-NEXT:      graph.invoke %[[F]]
// CHECK-NEXT:      graph.output
// CHECK-NEXT:    }
// CHECK-NEXT:    graph.closure @in_dataflow_lambda1()
// CHECK-LABEL: graph.func @in_dataflow_lambda0(
// CHECK-NOT:     impure
// CHECK-SAME:    {
// CHECK-LABEL: graph.func @in_dataflow_lambda1(
// CHECK-SAME:      attributes {impure}
// CHECK-NEXT:    graph.call_extern "print"
// CHECK-LABEL: graph.func @claimed(
// CHECK-NEXT:    graph.lambda

// -----

// Nested modules are separate symbol tables: each lambda is lifted into its
// own module, next to its enclosing function.
// CHECK-LABEL: builtin.module {
// CHECK:         graph.func @first
// CHECK:           graph.closure @first_lambda0
// CHECK:         graph.func @first_lambda0(
// CHECK:       builtin.module {
// CHECK:         graph.func @second
// CHECK:           graph.closure @second_lambda0
// CHECK:         graph.func @second_lambda0(
builtin.module {
  builtin.module {
    graph.func @first(%x: tensor<4xf32>) -> tensor<4xf32> {
      %f = graph.lambda (%y: tensor<4xf32>) -> tensor<4xf32> {
        %z = graph.exp %y : (tensor<4xf32>) -> tensor<4xf32>
        graph.return %z : tensor<4xf32>
      }
      %r = graph.invoke %f(%x) {pure} : (tensor<4xf32>) -> tensor<4xf32>
      graph.return %r : tensor<4xf32>
    }
  }
  builtin.module {
    graph.func @second(%x: tensor<4xf32>) -> tensor<4xf32> {
      %f = graph.lambda (%y: tensor<4xf32>) -> tensor<4xf32> {
        %z = graph.neg %y : (tensor<4xf32>) -> tensor<4xf32>
        graph.return %z : tensor<4xf32>
      }
      %r = graph.invoke %f(%x) {pure} : (tensor<4xf32>) -> tensor<4xf32>
      graph.return %r : tensor<4xf32>
    }
  }
}
