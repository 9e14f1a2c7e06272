// RUN: lamina-opt %s -p legalize | filecheck %s

// Channel-blocked grouped conv2ds (`OIHW8i8o`, groups > 1; kernels/conv_blocked.py).
// Blocks of whole groups (@whole_groups: 6 groups of 4 in 3 blocks, a
// block-diagonal weight `3x1x3x3x8x8`) reduce over their own input block:
// the input block index is the output block `ko`. Groups of 16 channels
// (@runs_of_blocks: weight `4x2x3x3x8x8`) reduce over their group's run of 2
// input blocks: input block `ko floordiv 2 * 2 + cb`.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @whole_groups(%x: tensor<1x3x8x8x8xf32>, %w: tensor<3x1x3x3x8x8xf32>) -> tensor<1x3x8x8x8xf32> {
    %0 = graph.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>, groups = 6 : i64, data_layout = "NCHW8c", kernel_layout = "OIHW8i8o"} : (tensor<1x3x8x8x8xf32>, tensor<3x1x3x3x8x8xf32>) -> tensor<1x3x8x8x8xf32>
    graph.return %0 : tensor<1x3x8x8x8xf32>
  }
  graph.func @runs_of_blocks(%y: tensor<1x4x8x8x8xf32>, %v: tensor<4x2x3x3x8x8xf32>) -> tensor<1x4x3x3x8xf32> {
    %0 = graph.conv2d %y, %v {strides = array<i64: 2, 2>, groups = 2 : i64, data_layout = "NCHW8c", kernel_layout = "OIHW8i8o"} : (tensor<1x4x8x8x8xf32>, tensor<4x2x3x3x8x8xf32>) -> tensor<1x4x3x3x8xf32>
    graph.return %0 : tensor<1x4x3x3x8xf32>
  }
}

// CHECK-LABEL: te.func private @te_conv2d_1x3x8x8x8xf32(%in0: tensor<1x3x8x8x8xf32>, %in1: tensor<3x1x3x3x8x8xf32>) -> tensor<1x3x8x8x8xf32> {
// CHECK:         %[[P:.*]] = te.compute [1, 3, 10, 10, 8]
// CHECK:         te.compute [1, 3, 8, 8, 8] reduce [1, 3, 3, 8] combiner(sum) (%[[N:.*]], %[[KO:.*]], %[[OH:.*]], %[[OW:.*]], %[[KI:.*]], %[[CB:.*]], %[[KH:.*]], %[[KW:.*]], %[[CI:.*]]) {
// CHECK:           %[[X:.*]] = te.read %[[P]][%[[N]], %[[KO]], %{{.*}}, %{{.*}}, %[[CI]]] : tensor<1x3x10x10x8xf32>
// CHECK-NEXT:      %[[W:.*]] = te.read %in1[%[[KO]], %[[CB]], %[[KH]], %[[KW]], %[[CI]], %[[KI]]] : tensor<3x1x3x3x8x8xf32>
// CHECK-NEXT:      %[[M:.*]] = arith.mulf %[[X]], %[[W]] : f32
// CHECK:           te.yield %[[M]] : f32

// CHECK-LABEL: te.func private @te_conv2d_1x4x3x3x8xf32(%in0: tensor<1x4x8x8x8xf32>, %in1: tensor<4x2x3x3x8x8xf32>) -> tensor<1x4x3x3x8xf32> {
// CHECK:         te.compute [1, 4, 3, 3, 8] reduce [2, 3, 3, 8] combiner(sum) (%[[N:.*]], %[[KO:.*]], %[[OH:.*]], %[[OW:.*]], %[[KI:.*]], %[[CB:.*]], %[[KH:.*]], %[[KW:.*]], %[[CI:.*]]) {
// CHECK-NEXT:      %[[TWO:.*]] = arith.constant 2 : index
// CHECK-NEXT:      %[[G:.*]] = arith.divui %[[KO]], %[[TWO]] : index
// CHECK-NEXT:      %[[FIRST:.*]] = arith.muli %[[G]], %[[TWO]] : index
// CHECK-NEXT:      %[[BLOCK:.*]] = arith.addi %[[FIRST]], %[[CB]] : index
// CHECK:           %[[X:.*]] = te.read %in0[%[[N]], %[[BLOCK]], %{{.*}}, %{{.*}}, %[[CI]]] : tensor<1x4x8x8x8xf32>
// CHECK-NEXT:      %[[W:.*]] = te.read %in1[%[[KO]], %[[CB]], %[[KH]], %[[KW]], %[[CI]], %[[KI]]] : tensor<4x2x3x3x8x8xf32>
// CHECK-NEXT:      %[[M:.*]] = arith.mulf %[[X]], %[[W]] : f32
// CHECK:           te.yield %[[M]] : f32
