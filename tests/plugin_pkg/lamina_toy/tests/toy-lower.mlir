// RUN: lamina-opt %s -p toy-lower | filecheck %s

graph.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = toy.double %x : tensor<4xf32>
  graph.return %y : tensor<4xf32>
}
// CHECK:      %y = graph.add %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: graph.return %y
