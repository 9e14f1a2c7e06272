// RUN: lamina-opt %s -p fuse-ops | filecheck %s

// ShuffleNetV2's unit on blocked convolutions: the branch's blocked result is
// cropped to NCHW only for the concatenation and channel shuffle, and the
// half the next branch convolves is sliced only to be blocked again. Both
// layout transforms are prologues: the shuffle's kernel reads the blocked
// branch and the kept half in place, and one kernel slices and blocks the
// other half; a shuffle read only by a transform into a blocked layout
// writes that layout. A layout transform read by anything else stays a kernel.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  // CHECK-LABEL: graph.func @unit(
  // CHECK-NEXT:    %s = graph.call_te @te_fused_slice_layout_transform_concat_reshape_transpose_reshape_1x6x3x3xf32(%x, %br)
  // CHECK-NEXT:    %n = graph.call_te @te_fused_slice_layout_transform_1x1x3x3x4xf32(%s)
  // CHECK-NEXT:    graph.return %s, %n
  graph.func @unit(%x: tensor<1x6x3x3xf32>, %br: tensor<1x1x3x3x4xf32>) -> (tensor<1x6x3x3xf32>, tensor<1x1x3x3x4xf32>) {
    %a = graph.slice %x {starts = array<i64: 0, 0, 0, 0>, sizes = array<i64: 1, 3, 3, 3>, steps = array<i64: 1, 1, 1, 1>} : (tensor<1x6x3x3xf32>) -> tensor<1x3x3x3xf32>
    %b = graph.layout_transform %br {constraint = #lamina.constraint<affine_map<(d0, d1, d2, d3, d4) -> (d0, ((d1 * 4) + d4), d2, d3)>, #lamina.undef>, crop} : (tensor<1x1x3x3x4xf32>) -> tensor<1x3x3x3xf32>
    %c = graph.concat %a, %b {axis = 1 : i64} : (tensor<1x3x3x3xf32>, tensor<1x3x3x3xf32>) -> tensor<1x6x3x3xf32>
    %g = graph.reshape %c : (tensor<1x6x3x3xf32>) -> tensor<1x2x3x3x3xf32>
    %t = graph.transpose %g {perm = array<i64: 0, 2, 1, 3, 4>} : (tensor<1x2x3x3x3xf32>) -> tensor<1x3x2x3x3xf32>
    %s = graph.reshape %t : (tensor<1x3x2x3x3xf32>) -> tensor<1x6x3x3xf32>
    %h = graph.slice %s {starts = array<i64: 0, 3, 0, 0>, sizes = array<i64: 1, 3, 3, 3>, steps = array<i64: 1, 1, 1, 1>} : (tensor<1x6x3x3xf32>) -> tensor<1x3x3x3xf32>
    %n = graph.layout_transform %h {constraint = #lamina.constraint<affine_map<(d0, d1, d2, d3) -> (d0, (d1 floordiv 4), d2, d3, (d1 mod 4))>, 0.0 : f32>} : (tensor<1x3x3x3xf32>) -> tensor<1x1x3x3x4xf32>
    graph.return %s, %n : tensor<1x6x3x3xf32>, tensor<1x1x3x3x4xf32>
  }

  // The last unit of a stage: its shuffle is read only by the transform into
  // the blocked layout of the next stage's strided unit, which is the last op
  // of the shuffle's kernel (it writes the blocked layout directly).
  // CHECK-LABEL: graph.func @last(
  // CHECK-NEXT:    %n = graph.call_te @te_fused_slice_layout_transform_concat_reshape_transpose_reshape_layout_transform_1x2x3x3x4xf32(%x, %br)
  // CHECK-NEXT:    graph.return %n
  graph.func @last(%x: tensor<1x6x3x3xf32>, %br: tensor<1x1x3x3x4xf32>) -> tensor<1x2x3x3x4xf32> {
    %a = graph.slice %x {starts = array<i64: 0, 0, 0, 0>, sizes = array<i64: 1, 3, 3, 3>, steps = array<i64: 1, 1, 1, 1>} : (tensor<1x6x3x3xf32>) -> tensor<1x3x3x3xf32>
    %b = graph.layout_transform %br {constraint = #lamina.constraint<affine_map<(d0, d1, d2, d3, d4) -> (d0, ((d1 * 4) + d4), d2, d3)>, #lamina.undef>, crop} : (tensor<1x1x3x3x4xf32>) -> tensor<1x3x3x3xf32>
    %c = graph.concat %a, %b {axis = 1 : i64} : (tensor<1x3x3x3xf32>, tensor<1x3x3x3xf32>) -> tensor<1x6x3x3xf32>
    %g = graph.reshape %c : (tensor<1x6x3x3xf32>) -> tensor<1x2x3x3x3xf32>
    %t = graph.transpose %g {perm = array<i64: 0, 2, 1, 3, 4>} : (tensor<1x2x3x3x3xf32>) -> tensor<1x3x2x3x3xf32>
    %s = graph.reshape %t : (tensor<1x3x2x3x3xf32>) -> tensor<1x6x3x3xf32>
    %n = graph.layout_transform %s {constraint = #lamina.constraint<affine_map<(d0, d1, d2, d3) -> (d0, (d1 floordiv 4), d2, d3, (d1 mod 4))>, 0.0 : f32>} : (tensor<1x6x3x3xf32>) -> tensor<1x2x3x3x4xf32>
    graph.return %n : tensor<1x2x3x3x4xf32>
  }

  // CHECK-LABEL: graph.func @other(
  // CHECK-NEXT:    %b = graph.layout_transform %br
  // CHECK-NEXT:    %c = graph.concat %b, %b
  graph.func @other(%br: tensor<1x1x3x3x4xf32>) -> tensor<1x6x3x3xf32> {
    %b = graph.layout_transform %br {constraint = #lamina.constraint<affine_map<(d0, d1, d2, d3, d4) -> (d0, ((d1 * 4) + d4), d2, d3)>, #lamina.undef>, crop} : (tensor<1x1x3x3x4xf32>) -> tensor<1x3x3x3xf32>
    %c = graph.concat %b, %b {axis = 1 : i64} : (tensor<1x3x3x3xf32>, tensor<1x3x3x3xf32>) -> tensor<1x6x3x3xf32>
    graph.return %c : tensor<1x6x3x3xf32>
  }
}
