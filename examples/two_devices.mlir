builtin.module {
  graph.func @main(%x: tensor<2x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>) -> tensor<2x8xf32> {
    %h = graph.matmul %x, %w : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
    %h1 = graph.on_device %h {device = #lamina.device<"cpu", 1>} : (tensor<2x8xf32>) -> tensor<2x8xf32>
    %y = graph.add %h1, %b : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
    %r = graph.relu %y {device = #lamina.device<"cpu", 0>} : (tensor<2x8xf32>) -> tensor<2x8xf32>
    %s = graph.add %r, %x : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
    graph.return %s : tensor<2x8xf32>
  }
}
