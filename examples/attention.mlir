// One pre-norm transformer block: sequence length 16, model width 64,
// 4 attention heads of width 16, MLP width 256 with GELU.
//
//   y = x + Attention(LayerNorm(x));  out = y + MLP(LayerNorm(y))
//
// The weights are parameters of @main:
//
//   lamina-run examples/attention.mlir --random-inputs --seed 0

graph.func @main(%x: tensor<1x16x64xf32>,
                 %ln1_g: tensor<64xf32>, %ln1_b: tensor<64xf32>,
                 %wq: tensor<64x64xf32>, %bq: tensor<64xf32>,
                 %wk: tensor<64x64xf32>, %bk: tensor<64xf32>,
                 %wv: tensor<64x64xf32>, %bv: tensor<64xf32>,
                 %wo: tensor<64x64xf32>, %bo: tensor<64xf32>,
                 %ln2_g: tensor<64xf32>, %ln2_b: tensor<64xf32>,
                 %w_up: tensor<64x256xf32>, %b_up: tensor<256xf32>,
                 %w_down: tensor<256x64xf32>, %b_down: tensor<64xf32>) -> tensor<1x16x64xf32> {
  // Attention: project to Q, K, V.
  %h = graph.layer_norm %x, %ln1_g, %ln1_b {axis = -1 : i64, epsilon = 1.000000e-05 : f32} : (tensor<1x16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<1x16x64xf32>
  %q0 = graph.matmul %h, %wq : (tensor<1x16x64xf32>, tensor<64x64xf32>) -> tensor<1x16x64xf32>
  %q = graph.add %q0, %bq : (tensor<1x16x64xf32>, tensor<64xf32>) -> tensor<1x16x64xf32>
  %k0 = graph.matmul %h, %wk : (tensor<1x16x64xf32>, tensor<64x64xf32>) -> tensor<1x16x64xf32>
  %k = graph.add %k0, %bk : (tensor<1x16x64xf32>, tensor<64xf32>) -> tensor<1x16x64xf32>
  %v0 = graph.matmul %h, %wv : (tensor<1x16x64xf32>, tensor<64x64xf32>) -> tensor<1x16x64xf32>
  %v = graph.add %v0, %bv : (tensor<1x16x64xf32>, tensor<64xf32>) -> tensor<1x16x64xf32>
  // Split into 4 heads: [batch, seq, head, dim] -> [batch, head, seq, dim].
  %q4 = graph.reshape %q : (tensor<1x16x64xf32>) -> tensor<1x16x4x16xf32>
  %qh = graph.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x16x4x16xf32>) -> tensor<1x4x16x16xf32>
  %k4 = graph.reshape %k : (tensor<1x16x64xf32>) -> tensor<1x16x4x16xf32>
  %kt = graph.transpose %k4 {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x16x4x16xf32>) -> tensor<1x4x16x16xf32>
  %v4 = graph.reshape %v : (tensor<1x16x64xf32>) -> tensor<1x16x4x16xf32>
  %vh = graph.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x16x4x16xf32>) -> tensor<1x4x16x16xf32>
  // Scaled dot-product attention: softmax(Q K^T / sqrt(16)) V.
  %scores = graph.matmul %qh, %kt : (tensor<1x4x16x16xf32>, tensor<1x4x16x16xf32>) -> tensor<1x4x16x16xf32>
  %scale = graph.constant dense<2.500000e-01> : tensor<f32>
  %scaled = graph.mul %scores, %scale : (tensor<1x4x16x16xf32>, tensor<f32>) -> tensor<1x4x16x16xf32>
  %probs = graph.softmax %scaled {axis = -1 : i64} : (tensor<1x4x16x16xf32>) -> tensor<1x4x16x16xf32>
  %ctx = graph.matmul %probs, %vh : (tensor<1x4x16x16xf32>, tensor<1x4x16x16xf32>) -> tensor<1x4x16x16xf32>
  // Merge the heads and project back.
  %ctx_t = graph.transpose %ctx {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x16x16xf32>) -> tensor<1x16x4x16xf32>
  %merged = graph.reshape %ctx_t : (tensor<1x16x4x16xf32>) -> tensor<1x16x64xf32>
  %o0 = graph.matmul %merged, %wo : (tensor<1x16x64xf32>, tensor<64x64xf32>) -> tensor<1x16x64xf32>
  %o = graph.add %o0, %bo : (tensor<1x16x64xf32>, tensor<64xf32>) -> tensor<1x16x64xf32>
  %y = graph.add %x, %o : (tensor<1x16x64xf32>, tensor<1x16x64xf32>) -> tensor<1x16x64xf32>
  // MLP: 64 -> 256 (GELU) -> 64, with a residual connection.
  %h2 = graph.layer_norm %y, %ln2_g, %ln2_b {axis = -1 : i64, epsilon = 1.000000e-05 : f32} : (tensor<1x16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<1x16x64xf32>
  %u0 = graph.matmul %h2, %w_up : (tensor<1x16x64xf32>, tensor<64x256xf32>) -> tensor<1x16x256xf32>
  %u = graph.add %u0, %b_up : (tensor<1x16x256xf32>, tensor<256xf32>) -> tensor<1x16x256xf32>
  %act = graph.gelu %u : (tensor<1x16x256xf32>) -> tensor<1x16x256xf32>
  %d0 = graph.matmul %act, %w_down : (tensor<1x16x256xf32>, tensor<256x64xf32>) -> tensor<1x16x64xf32>
  %d = graph.add %d0, %b_down : (tensor<1x16x64xf32>, tensor<64xf32>) -> tensor<1x16x64xf32>
  %out = graph.add %y, %d : (tensor<1x16x64xf32>, tensor<1x16x64xf32>) -> tensor<1x16x64xf32>
  graph.return %out : tensor<1x16x64xf32>
}
