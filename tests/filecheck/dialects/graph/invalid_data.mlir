// RUN: lamina-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Verifier errors of graph.gather, graph.slice and graph.where.

graph.func @f(%x: tensor<5x3xf32>, %i: tensor<2xf32>) {
  // expected-error @+1 {{indices must have an integer element type, got f32}}
  %0 = graph.gather %x, %i : (tensor<5x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  graph.return
}

// CHECK: indices must have an integer element type, got f32

// -----

graph.func @f(%x: tensor<5x3xf32>, %i: tensor<2xi64>) {
  // expected-error @+1 {{result type tensor<2x3xf32> does not match inferred tensor<5x2xf32>}}
  %0 = graph.gather %x, %i {axis = 1 : i64} : (tensor<5x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  graph.return
}

// CHECK: result type tensor<2x3xf32> does not match inferred tensor<5x2xf32>

// -----

graph.func @f(%x: tensor<5x3xf32>, %i: tensor<2xi64>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = graph.gather %x, %i {axis = 2 : i64} : (tensor<5x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  graph.return
}

// CHECK: axis 2 is out of range for rank 2

// -----

graph.func @f(%x: tensor<6xf32>) {
  // expected-error @+1 {{dim 0: elements 4 to 8 (step 2) leave the operand extent 6}}
  %0 = graph.slice %x {starts = array<i64: 4>, sizes = array<i64: 3>, steps = array<i64: 2>} : (tensor<6xf32>) -> tensor<3xf32>
  graph.return
}

// CHECK: dim 0: elements 4 to 8 (step 2) leave the operand extent 6

// -----

graph.func @f(%x: tensor<6xf32>) {
  // expected-error @+1 {{steps must be non-zero, got 0 in dim 0}}
  %0 = graph.slice %x {starts = array<i64: 0>, sizes = array<i64: 3>, steps = array<i64: 0>} : (tensor<6xf32>) -> tensor<3xf32>
  graph.return
}

// CHECK: steps must be non-zero, got 0 in dim 0

// -----

graph.func @f(%x: tensor<6x2xf32>) {
  // expected-error @+1 {{starts must have 2 entries, got 1}}
  %0 = graph.slice %x {starts = array<i64: 0>, sizes = array<i64: 3>, steps = array<i64: 1>} : (tensor<6x2xf32>) -> tensor<3xf32>
  graph.return
}

// CHECK: starts must have 2 entries, got 1

// -----

graph.func @f(%c: tensor<4xf32>, %x: tensor<4xf32>) {
  // expected-error @+1 {{condition must have element type i1, got f32}}
  %0 = graph.where %c, %x, %x : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  graph.return
}

// CHECK: condition must have element type i1, got f32

// -----

graph.func @f(%c: tensor<4xi1>, %x: tensor<4xf32>, %y: tensor<4xf64>) {
  // expected-error @+1 {{element type mismatch: lhs has f32, rhs has f64}}
  %0 = graph.where %c, %x, %y : (tensor<4xi1>, tensor<4xf32>, tensor<4xf64>) -> tensor<4xf32>
  graph.return
}

// CHECK: element type mismatch: lhs has f32, rhs has f64

// -----

graph.func @f(%c: tensor<3xi1>, %x: tensor<4xf32>) {
  // expected-error @+1 {{operands are not broadcast-compatible}}
  %0 = graph.where %c, %x, %x : (tensor<3xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  graph.return
}

// CHECK: operands are not broadcast-compatible
