// A three-layer perceptron (MNIST-sized): a batch of 64 flattened 28x28
// images, 784 -> 512 -> 512 -> 10 with ReLU between the layers. The weights
// are parameters of @main, so a runner can feed trained (or random) values:
//
//   lamina-run examples/mlp.mlir --random-inputs --seed 0

graph.func @main(%x: tensor<64x784xf32>,
                 %w1: tensor<784x512xf32>, %b1: tensor<512xf32>,
                 %w2: tensor<512x512xf32>, %b2: tensor<512xf32>,
                 %w3: tensor<512x10xf32>, %b3: tensor<10xf32>) -> tensor<64x10xf32> {
  %logits = graph.dataflow -> tensor<64x10xf32> {
    // Layer 1: 784 -> 512.
    %0 = graph.matmul %x, %w1 : (tensor<64x784xf32>, tensor<784x512xf32>) -> tensor<64x512xf32>
    %1 = graph.add %0, %b1 : (tensor<64x512xf32>, tensor<512xf32>) -> tensor<64x512xf32>
    %2 = graph.relu %1 : (tensor<64x512xf32>) -> tensor<64x512xf32>
    // Layer 2: 512 -> 512.
    %3 = graph.matmul %2, %w2 : (tensor<64x512xf32>, tensor<512x512xf32>) -> tensor<64x512xf32>
    %4 = graph.add %3, %b2 : (tensor<64x512xf32>, tensor<512xf32>) -> tensor<64x512xf32>
    %5 = graph.relu %4 : (tensor<64x512xf32>) -> tensor<64x512xf32>
    // Layer 3: 512 -> 10 logits.
    %6 = graph.matmul %5, %w3 : (tensor<64x512xf32>, tensor<512x10xf32>) -> tensor<64x10xf32>
    %7 = graph.add %6, %b3 : (tensor<64x10xf32>, tensor<10xf32>) -> tensor<64x10xf32>
    graph.output %7 : tensor<64x10xf32>
  }
  graph.return %logits : tensor<64x10xf32>
}
