// RUN: lamina-opt %s | lamina-opt | filecheck %s
// RUN: lamina-opt %s --print-op-generic | lamina-opt | filecheck %s

// graph.gather, graph.slice and graph.where (the ops ONNX import needs).

// CHECK-LABEL: graph.func @data(%x: tensor<10x4xf32>, %i: tensor<2x3xi64>, %c: tensor<4xi1>) -> (tensor<2x3x4xf32>, tensor<3x2xf32>, tensor<10x4xf32>) {
// CHECK-NEXT:  %g = graph.gather %x, %i : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
// CHECK-NEXT:  %s = graph.slice %x {starts = array<i64: 9, 1>, sizes = array<i64: 3, 2>, steps = array<i64: -3, 2>} : (tensor<10x4xf32>) -> tensor<3x2xf32>
// CHECK-NEXT:  %w = graph.where %c, %x, %x {device = #lamina.device<"cpu", 0>} : (tensor<4xi1>, tensor<10x4xf32>, tensor<10x4xf32>) -> tensor<10x4xf32>
// CHECK-NEXT:  graph.return %g, %s, %w : tensor<2x3x4xf32>, tensor<3x2xf32>, tensor<10x4xf32>
graph.func @data(%x: tensor<10x4xf32>, %i: tensor<2x3xi64>, %c: tensor<4xi1>) -> (tensor<2x3x4xf32>, tensor<3x2xf32>, tensor<10x4xf32>) {
  %g = graph.gather %x, %i : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  %s = graph.slice %x {starts = array<i64: 9, 1>, sizes = array<i64: 3, 2>, steps = array<i64: -3, 2>} : (tensor<10x4xf32>) -> tensor<3x2xf32>
  %w = graph.where %c, %x, %x {device = #lamina.device<"cpu", 0>} : (tensor<4xi1>, tensor<10x4xf32>, tensor<10x4xf32>) -> tensor<10x4xf32>
  graph.return %g, %s, %w : tensor<2x3x4xf32>, tensor<3x2xf32>, tensor<10x4xf32>
}

// CHECK-LABEL: graph.func @gather_axis(%x: tensor<2x5x3xf32>, %i: tensor<i32>) -> tensor<2x3xf32> {
// CHECK-NEXT:  %g = graph.gather %x, %i {axis = 1 : i64} : (tensor<2x5x3xf32>, tensor<i32>) -> tensor<2x3xf32>
graph.func @gather_axis(%x: tensor<2x5x3xf32>, %i: tensor<i32>) -> tensor<2x3xf32> {
  %g = graph.gather %x, %i {axis = 1 : i64} : (tensor<2x5x3xf32>, tensor<i32>) -> tensor<2x3xf32>
  graph.return %g : tensor<2x3xf32>
}
