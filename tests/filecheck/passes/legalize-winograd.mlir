// RUN: lamina-opt %s --split-input-file -p legalize | filecheck %s
// RUN: lamina-opt %s --split-input-file -p legalize | filecheck %s --check-prefix=CONST

// A blocked conv2d marked `lamina.algorithm = "winograd"` becomes Winograd
// F(2x2, 3x3) (kernels/conv_winograd.py): the zero-padded input
// (materialized: the input transform reads whole tiles of it), the weight
// transform U (a 3x3 reduction per tile position a, b), the input transform V, the
// 16 matrix products M (a reduction over the input channels) and the output
// transform, which reads M at the output's tile.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @wino(%x: tensor<1x2x6x5x8xf32>, %w: tensor<3x2x3x3x8x8xf32>) -> tensor<1x3x6x5x8xf32> {
    %0 = graph.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>, data_layout = "NCHW8c", kernel_layout = "OIHW8i8o", lamina.algorithm = "winograd"} : (tensor<1x2x6x5x8xf32>, tensor<3x2x3x3x8x8xf32>) -> tensor<1x3x6x5x8xf32>
    graph.return %0 : tensor<1x3x6x5x8xf32>
  }
}

// CHECK-LABEL: te.func private @te_conv2d_1x3x6x5x8xf32
// CHECK:         %[[P:.*]] = te.compute [1, 2, 8, 8, 8]
// CHECK:         } {lamina.materialize} : tensor<1x2x8x8x8xf32>
// CHECK:         %[[U:.*]] = te.compute [4, 4, 3, 2, 8, 8] reduce [3, 3] combiner(sum)
// CHECK:         } : tensor<4x4x3x2x8x8xf32>
// CHECK:         %[[V:.*]] = te.compute [4, 4, 9, 2, 8]
// CHECK-COUNT-4:   te.read %[[P]]
// CHECK:         } : tensor<4x4x9x2x8xf32>
// CHECK:         %[[M:.*]] = te.compute [4, 4, 3, 9, 8] reduce [2, 8] combiner(sum)
// CHECK:           te.read %[[V]]
// CHECK:           te.read %[[U]]
// CHECK:         } : tensor<4x4x3x9x8xf32>
// CHECK:         %[[Y:.*]] = te.compute [1, 3, 6, 5, 8]
// CHECK-COUNT-9:   te.read %[[M]]
// CHECK:         } : tensor<1x3x6x5x8xf32>
// CHECK-NEXT:    te.return %[[Y]]

// -----

// Constant weights are transformed at compile time: the kernel takes U as a
// parameter instead of the weights (no weight-transform compute, and the
// original constants go), and each call passes the constant derived from its
// own weights -- two calls share the kernel.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @constant(%x: tensor<1x1x4x4x8xf32>) -> (tensor<1x1x4x4x8xf32>, tensor<1x1x4x4x8xf32>) {
    %w1 = graph.constant dense<1.0> : tensor<1x1x3x3x8x8xf32>
    %w2 = graph.constant dense<2.0> : tensor<1x1x3x3x8x8xf32>
    %0 = graph.conv2d %x, %w1 {padding = array<i64: 1, 1, 1, 1>, data_layout = "NCHW8c", kernel_layout = "OIHW8i8o", lamina.algorithm = "winograd"} : (tensor<1x1x4x4x8xf32>, tensor<1x1x3x3x8x8xf32>) -> tensor<1x1x4x4x8xf32>
    %1 = graph.conv2d %x, %w2 {padding = array<i64: 1, 1, 1, 1>, data_layout = "NCHW8c", kernel_layout = "OIHW8i8o", lamina.algorithm = "winograd"} : (tensor<1x1x4x4x8xf32>, tensor<1x1x3x3x8x8xf32>) -> tensor<1x1x4x4x8xf32>
    graph.return %0, %1 : tensor<1x1x4x4x8xf32>, tensor<1x1x4x4x8xf32>
  }
}

// CONST-LABEL: graph.func @constant
// CONST-NOT:     tensor<1x1x3x3x8x8xf32>
// CONST:         %[[U1:.*]] = graph.constant dense<{{.*}}> : tensor<4x4x1x1x8x8xf32>
// CONST-NEXT:    graph.call_te @[[K:te_conv2d_1x1x4x4x8xf32]](%x, %[[U1]])
// CONST:         %[[U2:.*]] = graph.constant dense<{{.*}}> : tensor<4x4x1x1x8x8xf32>
// CONST-NEXT:    graph.call_te @[[K]](%x, %[[U2]])
// CONST:       te.func private @[[K]](%in0: tensor<1x1x4x4x8xf32>, %in2: tensor<4x4x1x1x8x8xf32>)
// CONST-NOT:     reduce [3, 3]
// CONST:         te.compute [4, 4, 1, 4, 8] reduce [1, 8] combiner(sum)
// CONST:           te.read %in2[
