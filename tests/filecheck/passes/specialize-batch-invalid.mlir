// RUN: lamina-opt %s -p specialize-batch --split-input-file --verify-diagnostics | filecheck %s

// Ops that mix the samples of a dynamic batch cannot be compiled for every
// batch size by specialization: each is reported at the op, with the advice
// to pin the batch.

builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @main(%x: tensor<?x4xf32>) -> tensor<4xf32> attributes {lamina.bounds = {N = array<i64: 1, 64>}} {
    // expected-error @+1 {{'graph.reduce_sum' reduces over the batch dimension (axis 0), so it mixes the samples of the dynamic batch and cannot be compiled for every batch size; pin the batch with --input-shape (or a static leading dimension)}}
    %0 = graph.reduce_sum %x {axes = array<i64: 0>} : (tensor<?x4xf32>) -> tensor<4xf32>
    graph.return %0 : tensor<4xf32>
  }
}

// CHECK: 'graph.reduce_sum' reduces over the batch dimension (axis 0)

// -----

builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @main(%x: tensor<?x4xf32>) -> tensor<?x4xf32> attributes {lamina.bounds = {N = array<i64: 1, 64>}} {
    // expected-error @+1 {{'graph.softmax' normalizes over the batch dimension (axis 0)}}
    %0 = graph.softmax %x {axis = 0 : i64} : (tensor<?x4xf32>) -> tensor<?x4xf32>
    graph.return %0 : tensor<?x4xf32>
  }
}

// CHECK: 'graph.softmax' normalizes over the batch dimension (axis 0)

// -----

builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @main(%x: tensor<?x4xf32>) -> tensor<4x?xf32> attributes {lamina.bounds = {N = array<i64: 1, 64>}} {
    // expected-error @+1 {{only the leading (batch) dimension may be dynamic}}
    %0 = graph.transpose %x {perm = array<i64: 1, 0>} : (tensor<?x4xf32>) -> tensor<4x?xf32>
    graph.return %0 : tensor<4x?xf32>
  }
}

// CHECK: only the leading (batch) dimension may be dynamic

// -----

builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @main(%v: tensor<?xf32>, %x: tensor<?x4xf32>) -> tensor<4xf32> attributes {lamina.bounds = {N = array<i64: 1, 64>}} {
    // expected-error @+1 {{'graph.matmul' contracts over the batch dimension}}
    %0 = graph.matmul %v, %x : (tensor<?xf32>, tensor<?x4xf32>) -> tensor<4xf32>
    graph.return %0 : tensor<4xf32>
  }
}

// CHECK: 'graph.matmul' contracts over the batch dimension

// -----

builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @main(%x: tensor<?x4xf32>) -> tensor<2x4xf32> attributes {lamina.bounds = {N = array<i64: 1, 64>}} {
    %i = graph.constant dense<[0, 1]> : tensor<2xi64>
    // expected-error @+1 {{'graph.gather' gathers across the batch dimension}}
    %0 = graph.gather %x, %i {axis = 0 : i64} : (tensor<?x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
    graph.return %0 : tensor<2x4xf32>
  }
}

// CHECK: 'graph.gather' gathers across the batch dimension

// -----

// expected-error @+2 {{a function over a dynamic batch needs `lamina.bounds = {N = array<i64: LO, HI>}` with 1 <= LO <= HI}}
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @main(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
    %0 = graph.relu %x : (tensor<?x4xf32>) -> tensor<?x4xf32>
    graph.return %0 : tensor<?x4xf32>
  }
}

// CHECK: a function over a dynamic batch needs `lamina.bounds
