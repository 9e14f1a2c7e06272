graph.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = graph.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  %b = graph.relu %a : (tensor<4xf32>) -> tensor<4xf32>
  graph.return %b : tensor<4xf32>
}
