// RUN: lamina-opt %s -p fuse-ops | filecheck %s

// ShuffleNetV2's unit: the input's channels split in two halves, one through
// the branch (a relu here), the other straight into the concatenation and
// channel shuffle (reshape, transpose, reshape). A slice whose only reader is
// a concatenation is a prologue of the concatenation's kernel, which reads
// the slice's source in place; the half read by the branch stays a kernel.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  // CHECK-LABEL: graph.func @unit(
  // CHECK-NEXT:    %b = graph.slice %x
  // CHECK-NEXT:    %r = graph.relu %b
  // CHECK-NEXT:    %s = graph.call_te @te_fused_slice_concat_reshape_transpose_reshape_1x8x3x3xf32(%x, %r)
  // CHECK-NEXT:    graph.return %s
  graph.func @unit(%x: tensor<1x8x3x3xf32>) -> tensor<1x8x3x3xf32> {
    %a = graph.slice %x {starts = array<i64: 0, 0, 0, 0>, sizes = array<i64: 1, 4, 3, 3>, steps = array<i64: 1, 1, 1, 1>} : (tensor<1x8x3x3xf32>) -> tensor<1x4x3x3xf32>
    %b = graph.slice %x {starts = array<i64: 0, 4, 0, 0>, sizes = array<i64: 1, 4, 3, 3>, steps = array<i64: 1, 1, 1, 1>} : (tensor<1x8x3x3xf32>) -> tensor<1x4x3x3xf32>
    %r = graph.relu %b : (tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
    %c = graph.concat %a, %r {axis = 1 : i64} : (tensor<1x4x3x3xf32>, tensor<1x4x3x3xf32>) -> tensor<1x8x3x3xf32>
    %g = graph.reshape %c : (tensor<1x8x3x3xf32>) -> tensor<1x2x4x3x3xf32>
    %t = graph.transpose %g {perm = array<i64: 0, 2, 1, 3, 4>} : (tensor<1x2x4x3x3xf32>) -> tensor<1x4x2x3x3xf32>
    %s = graph.reshape %t : (tensor<1x4x2x3x3xf32>) -> tensor<1x8x3x3xf32>
    graph.return %s : tensor<1x8x3x3xf32>
  }
}
