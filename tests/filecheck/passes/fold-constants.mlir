// RUN: lamina-opt %s --split-input-file -p fold-constants | filecheck %s

// Ops on constants are evaluated: a transposed weight, shape-like integer
// arithmetic, a cast; what depends on parameters stays.
graph.func @weights(%x: tensor<2x3xf32>) -> (tensor<2x2xf32>, tensor<2xi64>) {
  %w = graph.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %wt = graph.transpose %w {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %y = graph.matmul %x, %wt : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  %s = graph.constant dense<[6, 4]> : tensor<2xi64>
  %two = graph.constant dense<2> : tensor<i64>
  %d = graph.div %s, %two : (tensor<2xi64>, tensor<i64>) -> tensor<2xi64>
  %f = graph.cast %d : (tensor<2xi64>) -> tensor<2xf32>
  %i = graph.cast %f : (tensor<2xf32>) -> tensor<2xi64>
  graph.return %y, %i : tensor<2x2xf32>, tensor<2xi64>
}
// CHECK-LABEL: graph.func @weights(
// CHECK-NEXT:    %{{.*}} = graph.constant dense<{{\[\[}}1.000000e+00, 4.000000e+00], [2.000000e+00, 5.000000e+00], [3.000000e+00, 6.000000e+00{{\]\]}}> : tensor<3x2xf32>
// CHECK-NEXT:    %{{.*}} = graph.matmul
// CHECK-NEXT:    %{{.*}} = graph.constant dense<[3, 2]> : tensor<2xi64>
// CHECK-NEXT:    graph.return
// CHECK-NOT:     graph.transpose
// CHECK-NOT:     graph.cast

// -----

// Inference BatchNorm after a biased convolution: the scale goes into the
// weights, both shifts merge into one bias.
graph.func @batch_norm(%x: tensor<1x1x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %w = graph.constant dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>
  %c = graph.conv2d %x, %w : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x3xf32>
  %b = graph.constant dense<[[[1.0]], [[1.0]]]> : tensor<2x1x1xf32>
  %cb = graph.add %c, %b : (tensor<1x2x3x3xf32>, tensor<2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %s = graph.constant dense<[[[10.0]], [[100.0]]]> : tensor<2x1x1xf32>
  %m = graph.mul %cb, %s : (tensor<1x2x3x3xf32>, tensor<2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %t = graph.constant dense<[[[0.5]], [[0.5]]]> : tensor<2x1x1xf32>
  %r = graph.add %m, %t : (tensor<1x2x3x3xf32>, tensor<2x1x1xf32>) -> tensor<1x2x3x3xf32>
  graph.return %r : tensor<1x2x3x3xf32>
}
// CHECK-LABEL: graph.func @batch_norm(
// CHECK-NEXT:    %[[W:.*]] = graph.constant dense<{{\[\[\[\[}}1.000000e+01]]], {{\[\[\[}}2.000000e+02{{\]\]\]\]}}> : tensor<2x1x1x1xf32>
// CHECK-NEXT:    %[[C:.*]] = graph.conv2d %x, %[[W]]
// CHECK-NEXT:    %[[B:.*]] = graph.constant dense<{{\[\[\[}}1.050000e+01]], {{\[\[}}1.005000e+02{{\]\]\]}}> : tensor<2x1x1xf32>
// CHECK-NEXT:    %[[R:.*]] = graph.add %[[C]], %[[B]]
// CHECK-NEXT:    graph.return %[[R]]

// -----

// A fold that would blow a small constant up into a big one is not done;
// a scale that varies along more than the channels stays a `mul`.
graph.func @kept(%x: tensor<1x2x2x2xf32>) -> (tensor<512x512xf32>, tensor<1x2x2x2xf32>) {
  %one = graph.constant dense<1.0> : tensor<f32>
  %big = graph.broadcast_to %one : (tensor<f32>) -> tensor<512x512xf32>
  %w = graph.constant dense<1.0> : tensor<2x2x1x1xf32>
  %c = graph.conv2d %x, %w : (tensor<1x2x2x2xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x2x2xf32>
  %s = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %m = graph.mul %c, %s : (tensor<1x2x2x2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  graph.return %big, %m : tensor<512x512xf32>, tensor<1x2x2x2xf32>
}
// CHECK-LABEL: graph.func @kept(
// CHECK:         graph.broadcast_to
// CHECK:         graph.conv2d
// CHECK:         graph.mul %c, %s
