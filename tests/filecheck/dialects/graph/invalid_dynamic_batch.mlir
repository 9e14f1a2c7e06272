// RUN: lamina-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Verifier errors with a dynamic batch `?`: shape rules are checked for every
// batch size, and only the leading dimension can be dynamic.

graph.func @f(%a: tensor<?x3xf32>, %w: tensor<4x5xf32>) {
  // expected-error @+1 {{contraction dimension mismatch: lhs has K = 3, rhs has K = 4 (lhs ?x3, rhs 4x5)}}
  %0 = graph.matmul %a, %w : (tensor<?x3xf32>, tensor<4x5xf32>) -> tensor<?x5xf32>
  graph.return
}

// CHECK: contraction dimension mismatch: lhs has K = 3, rhs has K = 4 (lhs ?x3, rhs 4x5)

// -----

graph.func @f(%a: tensor<?x4xf32>) {
  // expected-error @+1 {{element count mismatch: operand ?x4 has 4×? elements, result ?x2 has 2×?}}
  %0 = graph.reshape %a : (tensor<?x4xf32>) -> tensor<?x2xf32>
  graph.return
}

// CHECK: element count mismatch: operand ?x4 has 4×? elements, result ?x2 has 2×?

// -----

graph.func @f(%a: tensor<?x4xf32>, %b: tensor<3x4xf32>) {
  // expected-error @+1 {{operands are not broadcast-compatible: ?x4 vs 3x4 (dim 0: ? vs 3)}}
  %0 = graph.add %a, %b : (tensor<?x4xf32>, tensor<3x4xf32>) -> tensor<?x4xf32>
  graph.return
}

// CHECK: operands are not broadcast-compatible: ?x4 vs 3x4 (dim 0: ? vs 3)

// -----

graph.func @f(%a: tensor<4x?xf32>) {
  // expected-error @+1 {{operand #0: only the leading (batch) dimension may be dynamic, got tensor<4x?xf32>}}
  %0 = graph.relu %a : (tensor<4x?xf32>) -> tensor<4x?xf32>
  graph.return
}

// CHECK: only the leading (batch) dimension may be dynamic

// -----

graph.func @f(%a: tensor<?x4xf32>) {
  // expected-error @+1 {{result type tensor<4xf32> does not match inferred tensor<?xf32>}}
  %0 = graph.reduce_sum %a {axes = array<i64: 1>} : (tensor<?x4xf32>) -> tensor<4xf32>
  graph.return
}

// CHECK: result type tensor<4xf32> does not match inferred tensor<?xf32>

// -----

graph.func @f(%a: tensor<?x4xf32>) {
  // expected-error @+1 {{result type tensor<?x4xf32> does not match inferred tensor<2×?x4xf32>}}
  %0 = graph.concat %a, %a {axis = 0 : i64} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  graph.return
}

// CHECK: result type tensor<?x4xf32> does not match inferred tensor<2×?x4xf32>

// -----

// Malformed `lamina.bounds` are reported by the function's verifier, where they
// are written, not by the first pass that reads them.

// expected-error @+1 {{bad bounds for N: expected `lamina.bounds = {N = array<i64: LO, HI>}` with 1 <= LO <= HI, got array<i64: 0, 4>}}
graph.func @lo(%x: tensor<?x4xf32>) -> tensor<?x4xf32> attributes {lamina.bounds = {N = array<i64: 0, 4>}} {
  graph.return %x : tensor<?x4xf32>
}

// CHECK: bad bounds for N

// -----

// expected-error @+1 {{bad bounds for N: expected `lamina.bounds = {N = array<i64: LO, HI>}` with 1 <= LO <= HI, got array<i64: 8, 2>}}
graph.func @inverted(%x: tensor<?x4xf32>) -> tensor<?x4xf32> attributes {lamina.bounds = {N = array<i64: 8, 2>}} {
  graph.return %x : tensor<?x4xf32>
}

// CHECK: bad bounds for N

// -----

// expected-error @+1 {{lamina.bounds must name exactly one symbol}}
graph.func @two(%x: tensor<?x4xf32>) -> tensor<?x4xf32> attributes {lamina.bounds = {N = array<i64: 1, 4>, M = array<i64: 1, 4>}} {
  graph.return %x : tensor<?x4xf32>
}

// CHECK: lamina.bounds must name exactly one symbol
