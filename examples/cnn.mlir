// A small convolutional classifier: a batch of 4 single-channel 28x28
// images -> conv(3x3, 8) + bias + ReLU -> 2x2 max pool -> conv(3x3, 16,
// stride 2) + bias + ReLU -> global average pool -> linear layer -> 10 logits.
// Layouts are NCHW (data) and OIHW (weights); the weights are parameters.
//
//   lamina-run examples/cnn.mlir --random-inputs --seed 0

graph.func @main(%images: tensor<4x1x28x28xf32>,
                 %conv1_w: tensor<8x1x3x3xf32>, %conv1_b: tensor<8x1x1xf32>,
                 %conv2_w: tensor<16x8x3x3xf32>, %conv2_b: tensor<16x1x1xf32>,
                 %fc_w: tensor<16x10xf32>, %fc_b: tensor<10xf32>) -> tensor<4x10xf32> {
  // Block 1: 28x28 -> 28x28 (same padding) -> 14x14.
  %c1 = graph.conv2d %images, %conv1_w {padding = array<i64: 1, 1, 1, 1>} : (tensor<4x1x28x28xf32>, tensor<8x1x3x3xf32>) -> tensor<4x8x28x28xf32>
  %a1 = graph.add %c1, %conv1_b : (tensor<4x8x28x28xf32>, tensor<8x1x1xf32>) -> tensor<4x8x28x28xf32>
  %r1 = graph.relu %a1 : (tensor<4x8x28x28xf32>) -> tensor<4x8x28x28xf32>
  %p1 = graph.max_pool2d %r1 {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<4x8x28x28xf32>) -> tensor<4x8x14x14xf32>
  // Block 2: 14x14 -> 7x7 (stride 2).
  %c2 = graph.conv2d %p1, %conv2_w {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : (tensor<4x8x14x14xf32>, tensor<16x8x3x3xf32>) -> tensor<4x16x7x7xf32>
  %a2 = graph.add %c2, %conv2_b : (tensor<4x16x7x7xf32>, tensor<16x1x1xf32>) -> tensor<4x16x7x7xf32>
  %r2 = graph.relu %a2 : (tensor<4x16x7x7xf32>) -> tensor<4x16x7x7xf32>
  // Head: global average pool, flatten, linear.
  %g = graph.global_avg_pool2d %r2 : (tensor<4x16x7x7xf32>) -> tensor<4x16x1x1xf32>
  %flat = graph.reshape %g : (tensor<4x16x1x1xf32>) -> tensor<4x16xf32>
  %fc = graph.matmul %flat, %fc_w : (tensor<4x16xf32>, tensor<16x10xf32>) -> tensor<4x10xf32>
  %logits = graph.add %fc, %fc_b : (tensor<4x10xf32>, tensor<10xf32>) -> tensor<4x10xf32>
  graph.return %logits : tensor<4x10xf32>
}
