// RUN: lamina-opt %s --split-input-file -p lift-lambdas,specialize-closures,verify-phase | filecheck %s
// RUN: lamina-opt %s --split-input-file -p lift-lambdas,specialize-closures,specialize-closures | filecheck %s
// RUN: lamina-opt %s --split-input-file -p 'lift-lambdas,specialize-closures{max-new-functions=1}' | filecheck %s --check-prefix=BOUND

// An invoke of a closure built in the same function becomes a direct call of
// the closure's function, captured values first; the closure goes.
builtin.module {
  graph.func @scale(%w: tensor<4xf32>, %x: tensor<4xf32>) -> tensor<4xf32> {
    %y = graph.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    graph.return %y : tensor<4xf32>
  }
  graph.func @local(%w: tensor<4xf32>, %x: tensor<4xf32>) -> tensor<4xf32> {
    %f = graph.closure @scale(%w) : (tensor<4xf32>) -> !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>
    %y = graph.invoke %f(%x) {pure} : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %y : tensor<4xf32>
  }
}
// CHECK-LABEL: graph.func @scale(
// CHECK-LABEL: graph.func @local(
// CHECK-SAME:      %[[W:.*]]: tensor<4xf32>, %[[X:.*]]: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    %[[Y:.*]] = graph.call @scale(%[[W]], %[[X]]) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    graph.return %[[Y]] : tensor<4xf32>
// CHECK-NOT:   graph.closure
// CHECK-NOT:   graph.invoke

// -----

// A higher-order function: each call passing a closure calls a clone of
// @apply specialized for the closure's function (its captures are the new
// leading parameters). Two different closures give two specializations; the
// same closure function again reuses the first. @apply itself (internal: it
// takes a function value) is removed once nothing calls it.
builtin.module {
  graph.func @apply(%f: !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, %x: tensor<4xf32>) -> tensor<4xf32> {
    %y = graph.invoke %f(%x) {pure} : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %y : tensor<4xf32>
  }
  graph.func @main(%x: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<4xf32> {
    %f = graph.lambda (%a: tensor<4xf32>) -> tensor<4xf32> {
      %b = graph.mul %a, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      graph.return %b : tensor<4xf32>
    }
    %g = graph.lambda (%a: tensor<4xf32>) -> tensor<4xf32> {
      %b = graph.exp %a : (tensor<4xf32>) -> tensor<4xf32>
      graph.return %b : tensor<4xf32>
    }
    %y = graph.call @apply(%f, %x) : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, tensor<4xf32>) -> tensor<4xf32>
    %z = graph.call @apply(%g, %y) : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, tensor<4xf32>) -> tensor<4xf32>
    %u = graph.call @apply(%f, %z) : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, tensor<4xf32>) -> tensor<4xf32>
    graph.return %u : tensor<4xf32>
  }
}
// CHECK-NOT:   graph.func @apply(
// CHECK-LABEL: graph.func @apply__spec_main_lambda0_0(
// CHECK-SAME:      %[[W:.*]]: tensor<4xf32>, %[[X:.*]]: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    %[[Y:.*]] = graph.call @main_lambda0(%[[W]], %[[X]])
// CHECK-NEXT:    graph.return %[[Y]]
// CHECK-LABEL: graph.func @apply__spec_main_lambda1_0(
// CHECK-SAME:      %[[X:.*]]: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    %[[Y:.*]] = graph.call @main_lambda1(%[[X]])
// CHECK-NEXT:    graph.return %[[Y]]
// CHECK-LABEL: graph.func @main(
// CHECK-SAME:      %[[X:.*]]: tensor<4xf32>, %[[W:.*]]: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    %[[Y:.*]] = graph.call @apply__spec_main_lambda0_0(%[[W]], %[[X]])
// CHECK-NEXT:    %[[Z:.*]] = graph.call @apply__spec_main_lambda1_0(%[[Y]])
// CHECK-NEXT:    %[[U:.*]] = graph.call @apply__spec_main_lambda0_0(%[[W]], %[[Z]])
// CHECK-NEXT:    graph.return %[[U]]
// CHECK-LABEL: graph.func @main_lambda0(
// CHECK-LABEL: graph.func @main_lambda1(
// CHECK-NOT:   graph.func @apply__spec

// -----

// Nested higher-order functions: @twice passes its function value on to
// @apply; specializing @twice rebuilds the closure inside it, which then
// specializes @apply (once, for both calls).
builtin.module {
  graph.func @apply(%f: !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, %x: tensor<4xf32>) -> tensor<4xf32> {
    %y = graph.invoke %f(%x) {pure} : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %y : tensor<4xf32>
  }
  graph.func @twice(%f: !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, %x: tensor<4xf32>) -> tensor<4xf32> {
    %y = graph.call @apply(%f, %x) : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, tensor<4xf32>) -> tensor<4xf32>
    %z = graph.call @apply(%f, %y) : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, tensor<4xf32>) -> tensor<4xf32>
    graph.return %z : tensor<4xf32>
  }
  graph.func @main(%x: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<4xf32> {
    %f = graph.lambda (%a: tensor<4xf32>) -> tensor<4xf32> {
      %b = graph.add %a, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      graph.return %b : tensor<4xf32>
    }
    %y = graph.call @twice(%f, %x) : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, tensor<4xf32>) -> tensor<4xf32>
    graph.return %y : tensor<4xf32>
  }
}
// CHECK-LABEL: graph.func @apply__spec_main_lambda0_0(
// CHECK-SAME:      %[[W:.*]]: tensor<4xf32>, %[[X:.*]]: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    %[[Y:.*]] = graph.call @main_lambda0(%[[W]], %[[X]])
// CHECK-NEXT:    graph.return %[[Y]]
// CHECK-LABEL: graph.func @twice__spec_main_lambda0_0(
// CHECK-SAME:      %[[W:.*]]: tensor<4xf32>, %[[X:.*]]: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    %[[Y:.*]] = graph.call @apply__spec_main_lambda0_0(%[[W]], %[[X]])
// CHECK-NEXT:    %[[Z:.*]] = graph.call @apply__spec_main_lambda0_0(%[[W]], %[[Y]])
// CHECK-NEXT:    graph.return %[[Z]]
// CHECK-LABEL: graph.func @main(
// CHECK-SAME:      %[[X:.*]]: tensor<4xf32>, %[[W:.*]]: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    %[[Y:.*]] = graph.call @twice__spec_main_lambda0_0(%[[W]], %[[X]])
// CHECK-NEXT:    graph.return %[[Y]]
// CHECK-NOT:   graph.func @apply(
// CHECK-NOT:   graph.func @twice(

// With at most one new function, only @twice is specialized; the calls of
// @apply in the clone keep passing the rebuilt closure.
// BOUND-LABEL: graph.func @apply(
// BOUND-NEXT:    graph.invoke
// BOUND-LABEL: graph.func @twice__spec_main_lambda0_0(
// BOUND-SAME:      %[[W:.*]]: tensor<4xf32>, %[[X:.*]]: tensor<4xf32>) -> tensor<4xf32> {
// BOUND-NEXT:    %[[F:.*]] = graph.closure @main_lambda0(%[[W]])
// BOUND-NEXT:    %[[Y:.*]] = graph.call @apply(%[[F]], %[[X]])
// BOUND-NEXT:    %[[Z:.*]] = graph.call @apply(%[[F]], %[[Y]])
// BOUND-LABEL: graph.func @main(
// BOUND-NEXT:    graph.call @twice__spec_main_lambda0_0(

// -----

// A lambda capturing a lambda: after lift-lambdas the closure of @main_lambda1
// captures the closure of @main_lambda0. Invoking it calls @main_lambda1 with
// a closure, which specializes @main_lambda1. The unspecialized
// @main_lambda1 (internal: it takes the captured closure) is removed.
builtin.module {
  graph.func @main(%x: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<4xf32> {
    %f = graph.lambda (%a: tensor<4xf32>) -> tensor<4xf32> {
      %b = graph.mul %a, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      graph.return %b : tensor<4xf32>
    }
    %g = graph.lambda (%a: tensor<4xf32>) -> tensor<4xf32> {
      %b = graph.invoke %f(%a) {pure} : (tensor<4xf32>) -> tensor<4xf32>
      %c = graph.add %b, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      graph.return %c : tensor<4xf32>
    }
    %y = graph.invoke %g(%x) {pure} : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %y : tensor<4xf32>
  }
}
// CHECK-LABEL: graph.func @main(
// CHECK-SAME:      %[[X:.*]]: tensor<4xf32>, %[[W:.*]]: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    %[[Y:.*]] = graph.call @main_lambda1__spec_main_lambda0_0(%[[W]], %[[X]])
// CHECK-NEXT:    graph.return %[[Y]]
// CHECK-LABEL: graph.func @main_lambda0(
// CHECK-LABEL: graph.func @main_lambda1__spec_main_lambda0_0(
// CHECK-SAME:      %[[W:.*]]: tensor<4xf32>, %[[A:.*]]: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    %[[B:.*]] = graph.call @main_lambda0(%[[W]], %[[A]])
// CHECK-NEXT:    %[[C:.*]] = graph.add %[[B]], %[[A]]
// CHECK-NEXT:    graph.return %[[C]]
// CHECK-NOT:   graph.closure
// CHECK-NOT:   graph.invoke
// CHECK-NOT:   graph.func @main_lambda1(

// -----

// A function returning a closure built in its body: callers call a clone
// returning the captures and rebuild the closure, which then flows through
// two calls (@outer passes it to @inner) before it is invoked. A capture that
// is a parameter of @make (%w) is taken from the caller's own argument; a
// computed one (%v) is returned by the clone.
builtin.module {
  graph.func @make(%w: tensor<4xf32>) -> !graph.fn<(tensor<4xf32>) -> tensor<4xf32>> {
    %v = graph.neg %w : (tensor<4xf32>) -> tensor<4xf32>
    %f = graph.lambda (%a: tensor<4xf32>) -> tensor<4xf32> {
      %b = graph.sub %a, %v : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      %c = graph.mul %b, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      graph.return %c : tensor<4xf32>
    }
    graph.return %f : !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>
  }
  graph.func @inner(%f: !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, %x: tensor<4xf32>) -> tensor<4xf32> {
    %y = graph.invoke %f(%x) {pure} : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %y : tensor<4xf32>
  }
  graph.func @outer(%x: tensor<4xf32>, %f: !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>) -> tensor<4xf32> {
    %y = graph.call @inner(%f, %x) : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, tensor<4xf32>) -> tensor<4xf32>
    graph.return %y : tensor<4xf32>
  }
  graph.func @main(%x: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<4xf32> {
    %f = graph.call @make(%w) : (tensor<4xf32>) -> !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>
    %y = graph.call @outer(%x, %f) : (tensor<4xf32>, !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>) -> tensor<4xf32>
    graph.return %y : tensor<4xf32>
  }
}
// CHECK-NOT:   graph.func @make(
// CHECK-LABEL: graph.func @make__ret_0(
// CHECK-SAME:      %[[W:.*]]: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
// CHECK-NEXT:    %[[V:.*]] = graph.neg %[[W]]
// CHECK-NEXT:    graph.return %[[V]], %[[W]] : tensor<4xf32>, tensor<4xf32>
// CHECK-LABEL: graph.func @make_lambda0(
// CHECK-LABEL: graph.func @inner__spec_make_lambda0_0(
// CHECK-SAME:      %[[V:.*]]: tensor<4xf32>, %[[W:.*]]: tensor<4xf32>, %[[X:.*]]: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    %[[Y:.*]] = graph.call @make_lambda0(%[[V]], %[[W]], %[[X]])
// CHECK-NEXT:    graph.return %[[Y]]
// CHECK-LABEL: graph.func @outer__spec_make_lambda0_0(
// CHECK-SAME:      %[[V:.*]]: tensor<4xf32>, %[[W:.*]]: tensor<4xf32>, %[[X:.*]]: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    %[[Y:.*]] = graph.call @inner__spec_make_lambda0_0(%[[V]], %[[W]], %[[X]])
// CHECK-NEXT:    graph.return %[[Y]]
// CHECK-LABEL: graph.func @main(
// CHECK-SAME:      %[[X:.*]]: tensor<4xf32>, %[[W:.*]]: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    %[[V:.*]], %{{.*}} = graph.call @make__ret_0(%[[W]]) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
// CHECK-NEXT:    %[[Y:.*]] = graph.call @outer__spec_make_lambda0_0(%[[V]], %[[W]], %[[X]])
// CHECK-NEXT:    graph.return %[[Y]]
// CHECK-NOT:   !graph.fn

// -----

// A closure over parameters only: the unboxed call returns nothing needed
// and goes, and with it @scale_by__ret_0.
builtin.module {
  graph.func @scale_by(%w: tensor<4xf32>) -> !graph.fn<(tensor<4xf32>) -> tensor<4xf32>> {
    %f = graph.lambda (%a: tensor<4xf32>) -> tensor<4xf32> {
      %b = graph.mul %a, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      graph.return %b : tensor<4xf32>
    }
    graph.return %f : !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>
  }
  graph.func @main(%x: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<4xf32> {
    %f = graph.call @scale_by(%w) : (tensor<4xf32>) -> !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>
    %y = graph.invoke %f(%x) {pure} : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %y : tensor<4xf32>
  }
}
// CHECK-NOT:   graph.func @scale_by(
// CHECK-NOT:   graph.func @scale_by__ret
// CHECK-LABEL: graph.func @scale_by_lambda0(
// CHECK-LABEL: graph.func @main(
// CHECK-SAME:      %[[X:.*]]: tensor<4xf32>, %[[W:.*]]: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    %[[Y:.*]] = graph.call @scale_by_lambda0(%[[W]], %[[X]])
// CHECK-NEXT:    graph.return %[[Y]]
// CHECK-NOT:   graph.func @scale_by__ret

// -----

// A recursive higher-order function is specialized once: the clone calls itself.
builtin.module {
  graph.func @walk(%f: !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, %x: tensor<4xf32>) -> tensor<4xf32> attributes {impure} {
    %y = graph.invoke %f(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %z = graph.call @walk(%f, %y) : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, tensor<4xf32>) -> tensor<4xf32>
    graph.return %z : tensor<4xf32>
  }
  graph.func @neg(%x: tensor<4xf32>) -> tensor<4xf32> {
    %y = graph.neg %x : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %y : tensor<4xf32>
  }
  graph.func @main(%x: tensor<4xf32>) -> tensor<4xf32> attributes {impure} {
    %f = graph.closure @neg() : () -> !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>
    %y = graph.call @walk(%f, %x) : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, tensor<4xf32>) -> tensor<4xf32>
    graph.return %y : tensor<4xf32>
  }
}
// CHECK-LABEL: graph.func @walk__spec_neg_0(
// CHECK-SAME:      %[[X:.*]]: tensor<4xf32>) -> tensor<4xf32> attributes {impure} {
// CHECK-NEXT:    %[[Y:.*]] = graph.call @neg(%[[X]])
// CHECK-NEXT:    %[[Z:.*]] = graph.call @walk__spec_neg_0(%[[Y]])
// CHECK-NEXT:    graph.return %[[Z]]
// CHECK-LABEL: graph.func @neg(
// CHECK-LABEL: graph.func @main(
// CHECK-NEXT:    %[[Y:.*]] = graph.call @walk__spec_neg_0(%{{.*}})
// CHECK-NEXT:    graph.return %[[Y]]

// -----

// A closure a dataflow block outputs is rebuilt after the block, which
// outputs the closure's captures instead; then it is known where it is used.
builtin.module {
  graph.func @scale(%w: tensor<4xf32>, %x: tensor<4xf32>) -> tensor<4xf32> {
    %y = graph.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    graph.return %y : tensor<4xf32>
  }
  graph.func @dataflow(%w: tensor<4xf32>, %x: tensor<4xf32>) -> tensor<4xf32> {
    %t, %f = graph.dataflow -> (tensor<4xf32>, !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>) {
      %v = graph.neg %w : (tensor<4xf32>) -> tensor<4xf32>
      %c = graph.closure @scale(%v) : (tensor<4xf32>) -> !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>
      graph.output %v, %c : tensor<4xf32>, !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>
    }
    %y = graph.invoke %f(%x) {pure} : (tensor<4xf32>) -> tensor<4xf32>
    %z = graph.add %y, %t : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    graph.return %z : tensor<4xf32>
  }
}
// CHECK-LABEL: graph.func @dataflow(
// CHECK-SAME:      %[[W:.*]]: tensor<4xf32>, %[[X:.*]]: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    %[[T:.*]], %[[V:.*]] = graph.dataflow -> (tensor<4xf32>, tensor<4xf32>) {
// CHECK-NEXT:      %[[N:.*]] = graph.neg %[[W]]
// CHECK-NEXT:      graph.output %[[N]], %[[N]] : tensor<4xf32>, tensor<4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[Y:.*]] = graph.call @scale(%[[V]], %[[X]])
// CHECK-NEXT:    %[[Z:.*]] = graph.add %[[Y]], %[[T]]
// CHECK-NEXT:    graph.return %[[Z]]

// -----

// A pure invoke of an impure function, where the call must be pure (a pure
// function), calls a force_pure wrapper (made once): `pure` asserted that
// the call is effect-free.
builtin.module {
  graph.func @effect(%x: tensor<4xf32>) -> tensor<4xf32> attributes {impure} {
    %y = graph.call_extern "print"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %y : tensor<4xf32>
  }
  graph.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %f = graph.closure @effect() : () -> !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>
    %y = graph.invoke %f(%x) {pure} : (tensor<4xf32>) -> tensor<4xf32>
    %z = graph.invoke %f(%y) {pure} : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %z : tensor<4xf32>
  }
}
// CHECK-LABEL: graph.func @effect(
// CHECK-LABEL: graph.func @effect__pure_0(
// CHECK-SAME:      %[[X:.*]]: tensor<4xf32>) -> tensor<4xf32> attributes {force_pure} {
// CHECK-NEXT:    %[[Y:.*]] = graph.call @effect(%[[X]])
// CHECK-NEXT:    graph.return %[[Y]]
// CHECK-LABEL: graph.func @main(
// CHECK-SAME:      %[[X:.*]]: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    %[[Y:.*]] = graph.call @effect__pure_0(%[[X]])
// CHECK-NEXT:    %[[Z:.*]] = graph.call @effect__pure_0(%[[Y]])
// CHECK-NEXT:    graph.return %[[Z]]

// -----

// Internal functions (a function-typed parameter or result) that no entry
// point reaches are removed, used by each other or not; entry points (a
// defined function over tensors only) stay, called or not.
builtin.module {
  graph.func @apply(%f: !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, %x: tensor<4xf32>) -> tensor<4xf32> {
    %y = graph.invoke %f(%x) {pure} : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %y : tensor<4xf32>
  }
  graph.func @twice(%f: !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, %x: tensor<4xf32>) -> tensor<4xf32> {
    %y = graph.call @apply(%f, %x) : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, tensor<4xf32>) -> tensor<4xf32>
    %z = graph.call @apply(%f, %y) : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, tensor<4xf32>) -> tensor<4xf32>
    graph.return %z : tensor<4xf32>
  }
  graph.func @unused(%x: tensor<4xf32>) -> tensor<4xf32> {
    graph.return %x : tensor<4xf32>
  }
  graph.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %y = graph.neg %x : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %y : tensor<4xf32>
  }
}
// CHECK-NOT:   graph.func @apply(
// CHECK-NOT:   graph.func @twice(
// CHECK-LABEL: graph.func @unused(
// CHECK-LABEL: graph.func @main(
// CHECK-NOT:   graph.func
