// A residual MLP written with higher-order functions: @dense_relu returns a
// layer as a closure over its weights, @residual applies any layer with a
// skip connection (x + f(x)). The compiler resolves every function value
// statically (specialize-closures): both layers share one specialization of
// @residual, and no closure is left at run time:
//
//   lamina-run examples/residual.mlir --random-inputs --seed 0
//   lamina-opt examples/residual.mlir --compile-to optimization

graph.func @dense_relu(%w: tensor<32x32xf32>, %b: tensor<32xf32>) -> !graph.fn<(tensor<16x32xf32>) -> tensor<16x32xf32>> {
  %layer = graph.lambda (%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
    %h = graph.matmul %x, %w : (tensor<16x32xf32>, tensor<32x32xf32>) -> tensor<16x32xf32>
    %hb = graph.add %h, %b : (tensor<16x32xf32>, tensor<32xf32>) -> tensor<16x32xf32>
    %r = graph.relu %hb : (tensor<16x32xf32>) -> tensor<16x32xf32>
    graph.return %r : tensor<16x32xf32>
  }
  graph.return %layer : !graph.fn<(tensor<16x32xf32>) -> tensor<16x32xf32>>
}

graph.func @residual(%f: !graph.fn<(tensor<16x32xf32>) -> tensor<16x32xf32>>, %x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %y = graph.invoke %f(%x) {pure} : (tensor<16x32xf32>) -> tensor<16x32xf32>
  %z = graph.add %x, %y : (tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<16x32xf32>
  graph.return %z : tensor<16x32xf32>
}

graph.func @main(%x: tensor<16x32xf32>,
                 %w1: tensor<32x32xf32>, %b1: tensor<32xf32>,
                 %w2: tensor<32x32xf32>, %b2: tensor<32xf32>) -> tensor<16x32xf32> {
  %l1 = graph.call @dense_relu(%w1, %b1) : (tensor<32x32xf32>, tensor<32xf32>) -> !graph.fn<(tensor<16x32xf32>) -> tensor<16x32xf32>>
  %l2 = graph.call @dense_relu(%w2, %b2) : (tensor<32x32xf32>, tensor<32xf32>) -> !graph.fn<(tensor<16x32xf32>) -> tensor<16x32xf32>>
  %h1 = graph.call @residual(%l1, %x) : (!graph.fn<(tensor<16x32xf32>) -> tensor<16x32xf32>>, tensor<16x32xf32>) -> tensor<16x32xf32>
  %h2 = graph.call @residual(%l2, %h1) : (!graph.fn<(tensor<16x32xf32>) -> tensor<16x32xf32>>, tensor<16x32xf32>) -> tensor<16x32xf32>
  %y = graph.softmax %h2 {axis = -1 : i64} : (tensor<16x32xf32>) -> tensor<16x32xf32>
  graph.return %y : tensor<16x32xf32>
}
