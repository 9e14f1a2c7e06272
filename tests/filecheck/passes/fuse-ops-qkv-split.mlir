// RUN: lamina-opt %s -p fuse-ops | filecheck %s

// A slice of a matmul's result (after its bias add) is an index remapping
// (`injective`): attention's q, k and v cut from one QKV projection fuse into
// the kernels that read them (the scaled head split of q, the Q·Kᵀ matmul),
// which read the projection in place instead of a copy of each third. A
// slice of anything else (a function argument here, a channel split between
// convolutions in a network) stays a kernel of its own.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  // CHECK-LABEL: graph.func @qkv(
  // CHECK-NEXT:    %p = graph.call_te @te_fused_matmul_add_4x12xf32(%x, %w, %b)
  // CHECK-NEXT:    %qs = graph.call_te @te_fused_slice_reshape_transpose_mul_2x4x3xf32(%p, %scale)
  // CHECK-NEXT:    %s = graph.call_te @te_fused_slice_reshape_transpose_matmul_2x4x4xf32(%p, %qs)
  // CHECK-NEXT:    graph.return %s
  graph.func @qkv(%x: tensor<4x8xf32>, %w: tensor<8x12xf32>, %b: tensor<12xf32>, %scale: tensor<f32>) -> tensor<2x4x4xf32> {
    %m = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x12xf32>) -> tensor<4x12xf32>
    %p = graph.add %m, %b : (tensor<4x12xf32>, tensor<12xf32>) -> tensor<4x12xf32>
    %q = graph.slice %p {starts = array<i64: 0, 0>, sizes = array<i64: 4, 6>, steps = array<i64: 1, 1>} : (tensor<4x12xf32>) -> tensor<4x6xf32>
    %k = graph.slice %p {starts = array<i64: 0, 6>, sizes = array<i64: 4, 6>, steps = array<i64: 1, 1>} : (tensor<4x12xf32>) -> tensor<4x6xf32>
    %q2 = graph.reshape %q : (tensor<4x6xf32>) -> tensor<4x2x3xf32>
    %qh = graph.transpose %q2 {perm = array<i64: 1, 0, 2>} : (tensor<4x2x3xf32>) -> tensor<2x4x3xf32>
    %qs = graph.mul %qh, %scale : (tensor<2x4x3xf32>, tensor<f32>) -> tensor<2x4x3xf32>
    %k2 = graph.reshape %k : (tensor<4x6xf32>) -> tensor<4x2x3xf32>
    %kt = graph.transpose %k2 {perm = array<i64: 1, 2, 0>} : (tensor<4x2x3xf32>) -> tensor<2x3x4xf32>
    %s = graph.matmul %qs, %kt : (tensor<2x4x3xf32>, tensor<2x3x4xf32>) -> tensor<2x4x4xf32>
    graph.return %s : tensor<2x4x4xf32>
  }

  // CHECK-LABEL: graph.func @split_argument(
  // CHECK-NEXT:    %a = graph.slice %x
  // CHECK-NEXT:    %r = graph.relu %a
  graph.func @split_argument(%x: tensor<4x12xf32>) -> tensor<4x6xf32> {
    %a = graph.slice %x {starts = array<i64: 0, 0>, sizes = array<i64: 4, 6>, steps = array<i64: 1, 1>} : (tensor<4x12xf32>) -> tensor<4x6xf32>
    %r = graph.relu %a : (tensor<4x6xf32>) -> tensor<4x6xf32>
    graph.return %r : tensor<4x6xf32>
  }
}
