graph.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %s = graph.sigmoid %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  graph.return %s : tensor<4x8xf32>
}
