graph.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %d = toy.double %x : tensor<4xf32>
  %r = graph.relu %d : (tensor<4xf32>) -> tensor<4xf32>
  graph.return %r : tensor<4xf32>
}
