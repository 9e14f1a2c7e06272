// RUN: lamina-opt %s --split-input-file --verify-diagnostics -p verify-phase | filecheck %s

// Each chunk breaks one numbered invariant of passes/verify_phase.py; the last
// chunk breaks several at once, and every violation is reported.
// Invariant 2 (a closure of a non-top-level function) cannot be written in IR
// that verifies, since the graph.closure verifier rejects it too; it is tested
// on unverified IR in tests/test_phases.py.

// Invariant 1: no graph.lambda from phase optimization on.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @inv1(%x: tensor<4xf32>) -> !graph.fn<(tensor<4xf32>) -> tensor<4xf32>> {
    // expected-error @+1 {{phase 'optimization' invariant 1 violated: 'graph.lambda' is not allowed from phase optimization on (run lift-lambdas to lift inner functions to top-level graph.func)}}
    %f = graph.lambda (%y: tensor<4xf32>) -> tensor<4xf32> {
      graph.return %y : tensor<4xf32>
    }
    graph.return %f : !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>
  }
}
// CHECK: error: phase 'optimization' invariant 1 violated: 'graph.lambda' is not allowed from phase optimization on

// -----

// Invariant 3: only builtin, graph, te, loop, llvm, arith and math ops from phase optimization on.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  // expected-error @+1 {{phase 'optimization' invariant 3 violated: 'func.func' is not allowed from phase optimization on (only arith, builtin, graph, llvm, loop, math, te ops are; express it with graph, te or loop ops)}}
  func.func private @inv3()
}
// CHECK: error: phase 'optimization' invariant 3 violated: 'func.func' is not allowed

// -----

// Invariant 4: no graph.dataflow from phase lowering on.
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  graph.func @inv4(%x: tensor<4xf32>) -> tensor<4xf32> attributes {impure} {
    // expected-error @+1 {{phase 'lowering' invariant 4 violated: 'graph.dataflow' is not allowed from phase lowering on (run legalize to flatten dataflow blocks)}}
    %r = graph.dataflow -> tensor<4xf32> {
      graph.output %x : tensor<4xf32>
    }
    graph.return %r : tensor<4xf32>
  }
}
// CHECK: error: phase 'lowering' invariant 4 violated: 'graph.dataflow' is not allowed from phase lowering on (run legalize to flatten dataflow blocks)

// -----

// Invariant 5: no graph compute op from phase lowering on.
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  graph.func @inv5(%x: tensor<4xf32>) -> tensor<4xf32> attributes {impure} {
    // expected-error @+1 {{phase 'lowering' invariant 5 violated: graph compute op 'graph.exp' is not allowed from phase lowering on (run legalize to turn it into graph.call_te, or let a target claim it)}}
    %r = graph.exp %x : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %r : tensor<4xf32>
  }
}
// CHECK: error: phase 'lowering' invariant 5 violated: graph compute op 'graph.exp' is not allowed

// -----

// Invariant 6: every graph.func is impure or force_pure from phase lowering on.
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  // expected-error @+1 {{phase 'lowering' invariant 6 violated: 'graph.func' @inv6 is neither 'impure' nor 'force_pure' (run legalize to remove purity tracking)}}
  graph.func @inv6(%x: tensor<4xf32>) -> tensor<4xf32> {
    graph.return %x : tensor<4xf32>
  }
}
// CHECK: error: phase 'lowering' invariant 6 violated: 'graph.func' @inv6 is neither 'impure' nor 'force_pure'

// -----

// Invariant 7: no graph.call_extern / graph.invoke carries `pure` from phase lowering on.
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  graph.func @inv7(%x: tensor<4xf32>, %f: !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>) -> tensor<4xf32> attributes {force_pure} {
    // expected-error @+1 {{phase 'lowering' invariant 7 violated: 'graph.call_extern' carries 'pure', which is not allowed from phase lowering on (run legalize to remove purity tracking)}}
    %a = graph.call_extern "ext"(%x) {pure} : (tensor<4xf32>) -> tensor<4xf32>
    // expected-error @+1 {{phase 'lowering' invariant 7 violated: 'graph.invoke' carries 'pure'}}
    %b = graph.invoke %f(%a) {pure} : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, tensor<4xf32>) -> tensor<4xf32>
    graph.return %b : tensor<4xf32>
  }
}
// CHECK: error: phase 'lowering' invariant 7 violated: 'graph.call_extern' carries 'pure'
// CHECK: error: phase 'lowering' invariant 7 violated: 'graph.invoke' carries 'pure'

// -----

// Invariant 8: only builtin.module and llvm.* ops in phase build.
builtin.module attributes {lamina.phase = #lamina.phase<build>} {
  // expected-error @+1 {{phase 'build' invariant 8 violated: 'graph.func' is not allowed in phase build (only builtin.module and llvm.* ops) (run lower-to-llvm to lower it)}}
  graph.func @inv8() attributes {impure} {
    // expected-error @+1 {{phase 'build' invariant 8 violated: 'graph.return' is not allowed in phase build}}
    graph.return
  }
}
// CHECK: error: phase 'build' invariant 8 violated: 'graph.func' is not allowed in phase build
// CHECK: error: phase 'build' invariant 8 violated: 'graph.return' is not allowed in phase build

// -----

// Invariant 9: a dataflow block holds only pure ops (in every phase, here ingestion).
builtin.module {
  graph.func @effect(%x: tensor<4xf32>) -> tensor<4xf32> attributes {impure} {
    graph.return %x : tensor<4xf32>
  }
  graph.func @inv9(%x: tensor<4xf32>) -> tensor<4xf32> attributes {impure} {
    %r = graph.dataflow -> tensor<4xf32> {
      // expected-error @+1 {{phase 'ingestion' invariant 9 violated: 'graph.call_extern' is impure and not allowed in a 'graph.dataflow' block (move it out of the dataflow block, or mark the call 'pure')}}
      %a = graph.call_extern "ext"(%x) : (tensor<4xf32>) -> tensor<4xf32>
      // expected-error @+1 {{phase 'ingestion' invariant 9 violated: 'graph.call' is impure and not allowed in a 'graph.dataflow' block}}
      %b = graph.call @effect(%a) : (tensor<4xf32>) -> tensor<4xf32>
      graph.output %b : tensor<4xf32>
    }
    graph.return %r : tensor<4xf32>
  }
}
// CHECK: error: phase 'ingestion' invariant 9 violated: 'graph.call_extern' is impure
// CHECK: error: phase 'ingestion' invariant 9 violated: 'graph.call' is impure

// -----

// Invariant 10: a pure graph.func calls nothing impure. The body of an inner
// lambda is a function of its own: creating it calls nothing.
builtin.module {
  graph.func @effect(%x: tensor<4xf32>) -> tensor<4xf32> attributes {impure} {
    graph.return %x : tensor<4xf32>
  }
  graph.func @inv10(%x: tensor<4xf32>, %f: !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>) -> tensor<4xf32> {
    // expected-error @+1 {{phase 'ingestion' invariant 10 violated: pure 'graph.func' @inv10 calls impure 'graph.invoke' (mark the function 'impure' (or 'force_pure'), or the call 'pure')}}
    %a = graph.invoke %f(%x) : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, tensor<4xf32>) -> tensor<4xf32>
    // expected-error @+1 {{phase 'ingestion' invariant 10 violated: pure 'graph.func' @inv10 calls impure 'graph.call' (@effect)}}
    %b = graph.call @effect(%a) : (tensor<4xf32>) -> tensor<4xf32>
    %g = graph.lambda (%y: tensor<4xf32>) -> tensor<4xf32> {
      %c = graph.call_extern "print"(%y) : (tensor<4xf32>) -> tensor<4xf32>
      graph.return %c : tensor<4xf32>
    }
    graph.return %b : tensor<4xf32>
  }
}
// CHECK: error: phase 'ingestion' invariant 10 violated: pure 'graph.func' @inv10 calls impure 'graph.invoke'
// CHECK: error: phase 'ingestion' invariant 10 violated: pure 'graph.func' @inv10 calls impure 'graph.call' (@effect)
// CHECK-NOT: graph.call_extern

// -----

// Every violation is reported, in IR order, each with its own invariant number.
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  // expected-error @+1 {{phase 'lowering' invariant 6 violated}}
  graph.func @many(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{phase 'lowering' invariant 4 violated}}
    %r = graph.dataflow -> tensor<4xf32> {
      // expected-error @+1 {{phase 'lowering' invariant 5 violated}}
      %a = graph.relu %x : (tensor<4xf32>) -> tensor<4xf32>
      // expected-error @+1 {{phase 'lowering' invariant 1 violated}}
      %f = graph.lambda (%y: tensor<4xf32>) -> tensor<4xf32> {
        graph.return %y : tensor<4xf32>
      }
      // expected-error @+1 {{phase 'lowering' invariant 7 violated}}
      %b = graph.invoke %f(%a) {pure} : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, tensor<4xf32>) -> tensor<4xf32>
      graph.output %b : tensor<4xf32>
    }
    graph.return %r : tensor<4xf32>
  }
}
// CHECK: error: phase 'lowering' invariant 6 violated
// CHECK: error: phase 'lowering' invariant 4 violated
// CHECK: error: phase 'lowering' invariant 5 violated
// CHECK: error: phase 'lowering' invariant 1 violated
// CHECK: error: phase 'lowering' invariant 7 violated
