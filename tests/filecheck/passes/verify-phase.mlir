// RUN: lamina-opt %s --split-input-file -p verify-phase | filecheck %s
// RUN: lamina-opt %s --split-input-file -p 'verify-phase{phase=ingestion}' | filecheck %s

// Modules that satisfy every invariant of their phase: verify-phase leaves them unchanged.

// Ingestion (no lamina.phase): lambdas, dataflow blocks of pure ops, pure
// functions that call only pure things, impure functions that call anything.
builtin.module {
  graph.func @pure_callee(%x: tensor<4xf32>) -> tensor<4xf32> {
    graph.return %x : tensor<4xf32>
  }
  graph.func @forced(%x: tensor<4xf32>) -> tensor<4xf32> attributes {force_pure} {
    %a = graph.call_extern "ext"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %a : tensor<4xf32>
  }
  graph.func @ingestion(%x: tensor<4xf32>) -> tensor<4xf32> {
    %r = graph.dataflow -> tensor<4xf32> {
      %c = graph.constant dense<1.0> : tensor<4xf32>
      %a = graph.add %x, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      %b = graph.call @pure_callee(%a) : (tensor<4xf32>) -> tensor<4xf32>
      %d = graph.call @forced(%b) : (tensor<4xf32>) -> tensor<4xf32>
      %e = graph.call_extern "ext"(%d) {pure} : (tensor<4xf32>) -> tensor<4xf32>
      %f = graph.lambda (%y: tensor<4xf32>) -> tensor<4xf32> {
        %z = graph.mul %y, %e : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
        graph.return %z : tensor<4xf32>
      }
      %g = graph.invoke %f(%e) {pure} : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, tensor<4xf32>) -> tensor<4xf32>
      graph.output %g : tensor<4xf32>
    }
    graph.return %r : tensor<4xf32>
  }
  graph.func @effects(%x: tensor<4xf32>) -> tensor<4xf32> attributes {impure} {
    %a = graph.call_extern "print"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %a : tensor<4xf32>
  }
}
// CHECK:       builtin.module {
// CHECK-LABEL: graph.func @ingestion
// CHECK:         graph.dataflow
// CHECK:         graph.lambda
// CHECK-LABEL: graph.func @effects
// CHECK-SAME:    impure
// CHECK:         graph.call_extern "print"

// -----

// Optimization: closures name top-level functions; a function claimed by a
// target (lamina.codegen) keeps its inner lambda.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @opt_lifted(%w: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
    %z = graph.add %y, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    graph.return %z : tensor<4xf32>
  }
  graph.func @optimization(%x: tensor<4xf32>) -> tensor<4xf32> {
    %r = graph.dataflow -> tensor<4xf32> {
      %f = graph.closure @opt_lifted(%x) : (tensor<4xf32>) -> !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>
      %g = graph.invoke %f(%x) {pure} : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, tensor<4xf32>) -> tensor<4xf32>
      graph.output %g : tensor<4xf32>
    }
    graph.return %r : tensor<4xf32>
  }
  graph.func @claimed(%x: tensor<4xf32>) -> tensor<4xf32> attributes {lamina.codegen = "cblas"} {
    %f = graph.lambda (%y: tensor<4xf32>) -> tensor<4xf32> {
      graph.return %y : tensor<4xf32>
    }
    %g = graph.invoke %f(%x) {pure} : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, tensor<4xf32>) -> tensor<4xf32>
    graph.return %g : tensor<4xf32>
  }
}
// CHECK:       builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
// CHECK-LABEL: graph.func @optimization
// CHECK:         graph.closure @opt_lifted
// CHECK-LABEL: graph.func @claimed
// CHECK:         graph.lambda

// -----

// Lowering: no dataflow, no compute ops (but in claimed code), purity tracking
// removed: every function impure or force_pure, no `pure` calls.
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @kernel(%a: memref<4xf32>, %b: memref<4xf32>) {
    loop.return
  }
  graph.func @lowering(%x: tensor<4xf32>) -> tensor<4xf32> attributes {force_pure} {
    %a = graph.call_loop @kernel(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %b = graph.call_extern "ext"(%a) : (tensor<4xf32>) -> tensor<4xf32>
    %c = graph.exp %b {lamina.codegen = "cblas"} : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %c : tensor<4xf32>
  }
  graph.func @claimed_fn(%x: tensor<4xf32>) -> tensor<4xf32> attributes {impure, lamina.codegen = "cblas"} {
    %r = graph.dataflow -> tensor<4xf32> {
      %a = graph.relu %x : (tensor<4xf32>) -> tensor<4xf32>
      graph.output %a : tensor<4xf32>
    }
    graph.return %r : tensor<4xf32>
  }
}
// CHECK:       builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
// CHECK-LABEL: graph.func @lowering
// CHECK:         graph.call_loop @kernel
// CHECK-LABEL: graph.func @claimed_fn
// CHECK:         graph.relu

// -----

// Build: only builtin.module and llvm ops.
builtin.module attributes {lamina.phase = #lamina.phase<build>} {
  llvm.func @build(%x: f32) -> f32 {
    llvm.return %x : f32
  }
}
// CHECK:       builtin.module attributes {lamina.phase = #lamina.phase<build>} {
// CHECK-NEXT:    llvm.func @build
