// RUN: lamina-opt %s | lamina-opt | filecheck %s
// RUN: lamina-opt %s --print-op-generic | lamina-opt | filecheck %s

// A dynamic batch: `?` in the leading dimension of tensors, the symbol and
// its bounds in `lamina.bounds` (docs/dynamic-shapes.md). Every graph op
// infers and checks shapes through `?` as through a static size.

// CHECK-LABEL: graph.func @cnn
// CHECK-SAME: (%x: tensor<?x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %fc: tensor<64x10xf32>) -> tensor<?x10xf32>
// CHECK-SAME: lamina.bounds = {N = array<i64: 1, 64>}
// CHECK: graph.conv2d {{.*}} -> tensor<?x4x8x8xf32>
// CHECK: graph.max_pool2d {{.*}} -> tensor<?x4x4x4xf32>
// CHECK: graph.reshape {{.*}} -> tensor<?x64xf32>
// CHECK: graph.matmul {{.*}} -> tensor<?x10xf32>
// CHECK: graph.softmax {{.*}} -> tensor<?x10xf32>
graph.func @cnn(%x: tensor<?x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %fc: tensor<64x10xf32>) -> tensor<?x10xf32> attributes {lamina.bounds = {N = array<i64: 1, 64>}} {
  %c = graph.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<?x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<?x4x8x8xf32>
  %r = graph.relu %c : (tensor<?x4x8x8xf32>) -> tensor<?x4x8x8xf32>
  %p = graph.max_pool2d %r {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<?x4x8x8xf32>) -> tensor<?x4x4x4xf32>
  %f = graph.reshape %p : (tensor<?x4x4x4xf32>) -> tensor<?x64xf32>
  %m = graph.matmul %f, %fc : (tensor<?x64xf32>, tensor<64x10xf32>) -> tensor<?x10xf32>
  %s = graph.softmax %m {axis = -1 : i64} : (tensor<?x10xf32>) -> tensor<?x10xf32>
  graph.return %s : tensor<?x10xf32>
}

// CHECK-LABEL: graph.func @shapes
// CHECK: graph.add {{.*}} -> tensor<?x5xf32>
// CHECK: graph.transpose {{.*}} -> tensor<?x5x2xf32>
// CHECK: graph.concat {{.*}} -> tensor<?x5x4xf32>
// CHECK: graph.reduce_sum {{.*}} -> tensor<?xf32>
graph.func @shapes(%a: tensor<?x5xf32>, %b: tensor<1x5xf32>, %t: tensor<?x2x5xf32>) -> tensor<?xf32> attributes {lamina.bounds = {N = array<i64: 2, 8>}} {
  %0 = graph.add %a, %b : (tensor<?x5xf32>, tensor<1x5xf32>) -> tensor<?x5xf32>
  %1 = graph.transpose %t {perm = array<i64: 0, 2, 1>} : (tensor<?x2x5xf32>) -> tensor<?x5x2xf32>
  %2 = graph.concat %1, %1 {axis = 2 : i64} : (tensor<?x5x2xf32>, tensor<?x5x2xf32>) -> tensor<?x5x4xf32>
  %3 = graph.reduce_sum %2 {axes = array<i64: 1, 2>} : (tensor<?x5x4xf32>) -> tensor<?xf32>
  graph.return %3 : tensor<?xf32>
}
