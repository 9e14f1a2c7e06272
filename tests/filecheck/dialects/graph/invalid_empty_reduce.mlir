// RUN: lamina-opt %s --split-input-file --verify-diagnostics | filecheck %s

// A maximum over an empty axis has no identity: an error at the op, as NumPy
// raises. Sums and means over empty axes are fine (0 and NaN, as NumPy).

graph.func @f(%a: tensor<0x3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{reduce_max over the empty axis 0 (extent 0) has no identity}}
  %0 = graph.reduce_max %a {axes = array<i64: 0>} : (tensor<0x3xf32>) -> tensor<3xf32>
  graph.return %0 : tensor<3xf32>
}

// CHECK: reduce_max over the empty axis 0 (extent 0) has no identity

// -----

graph.func @g(%a: tensor<2x0xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  %0 = graph.reduce_sum %a {axes = array<i64: 1>} : (tensor<2x0xf32>) -> tensor<2xf32>
  %1 = graph.reduce_mean %a {axes = array<i64: 1>} : (tensor<2x0xf32>) -> tensor<2xf32>
  graph.return %0, %1 : tensor<2xf32>, tensor<2xf32>
}

// CHECK: graph.func @g
// CHECK: graph.reduce_sum
// CHECK: graph.reduce_mean
