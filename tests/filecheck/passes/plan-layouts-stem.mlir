// RUN: lamina-opt %s -p plan-layouts | filecheck %s

// A stem on fewer than half a block of input channels (8 lanes here, from the
// module's cpu target options): when its result feeds only convolutions
// (through elementwise ops) it reads its input with block 1 (`NCHW1c`, the
// same bytes as NCHW: a reshape, no transform kernel) and produces the blocked output directly; followed by
// anything else (a max pool, a convolution that stays NCHW) it stays NCHW,
// so that no full-resolution result is transformed back.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>, lamina.targets = {cpu = #lamina.target<"cpu", {vector_bits = 256 : i64}>}} {
  graph.func @into_conv(%x: tensor<1x3x8x8xf32>, %w0: tensor<8x3x3x3xf32>, %b0: tensor<8x1x1xf32>, %w1: tensor<8x8x3x3xf32>) -> tensor<1x8x8x8xf32> {
    %0 = graph.conv2d %x, %w0 {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x8x8xf32>
    %1 = graph.add %0, %b0 : (tensor<1x8x8x8xf32>, tensor<8x1x1xf32>) -> tensor<1x8x8x8xf32>
    %2 = graph.relu %1 : (tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
    %3 = graph.conv2d %2, %w1 {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x8x8x8xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x8x8xf32>
    graph.return %3 : tensor<1x8x8x8xf32>
  }

  graph.func @into_narrow_conv(%x: tensor<1x3x8x8xf32>, %w0: tensor<8x3x3x3xf32>, %w1: tensor<2x8x3x3xf32>) -> tensor<1x2x8x8xf32> {
    %0 = graph.conv2d %x, %w0 {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x8x8xf32>
    %1 = graph.conv2d %0, %w1 {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x8x8x8xf32>, tensor<2x8x3x3xf32>) -> tensor<1x2x8x8xf32>
    graph.return %1 : tensor<1x2x8x8xf32>
  }

  graph.func @into_pool(%x: tensor<1x3x8x8xf32>, %w0: tensor<8x3x3x3xf32>) -> tensor<1x8x4x4xf32> {
    %0 = graph.conv2d %x, %w0 {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x8x8xf32>
    %1 = graph.relu %0 : (tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
    %2 = graph.max_pool2d %1 {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x8x8x8xf32>) -> tensor<1x8x4x4xf32>
    graph.return %2 : tensor<1x8x4x4xf32>
  }

  // MobileNetV3's stem: a hardswish (five elementwise ops after the bias) and
  // a residual add before the next convolution; still produced blocked.
  graph.func @hardswish_residual(%x: tensor<1x3x8x8xf32>, %w0: tensor<8x3x3x3xf32>, %b0: tensor<8x1x1xf32>, %w1: tensor<8x1x3x3xf32>, %w2: tensor<8x8x1x1xf32>) -> tensor<1x8x8x8xf32> {
    %sixth = graph.constant dense<0.166666672> : tensor<f32>
    %half = graph.constant dense<5.000000e-01> : tensor<f32>
    %one = graph.constant dense<1.000000e+00> : tensor<f32>
    %zero = graph.constant dense<0.000000e+00> : tensor<f32>
    %0 = graph.conv2d %x, %w0 {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x8x8xf32>
    %1 = graph.add %0, %b0 : (tensor<1x8x8x8xf32>, tensor<8x1x1xf32>) -> tensor<1x8x8x8xf32>
    %2 = graph.mul %1, %sixth : (tensor<1x8x8x8xf32>, tensor<f32>) -> tensor<1x8x8x8xf32>
    %3 = graph.add %2, %half : (tensor<1x8x8x8xf32>, tensor<f32>) -> tensor<1x8x8x8xf32>
    %4 = graph.minimum %3, %one : (tensor<1x8x8x8xf32>, tensor<f32>) -> tensor<1x8x8x8xf32>
    %5 = graph.maximum %4, %zero : (tensor<1x8x8x8xf32>, tensor<f32>) -> tensor<1x8x8x8xf32>
    %6 = graph.mul %1, %5 : (tensor<1x8x8x8xf32>, tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
    %7 = graph.conv2d %6, %w1 {padding = array<i64: 1, 1, 1, 1>, groups = 8 : i64} : (tensor<1x8x8x8xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x8x8xf32>
    %8 = graph.add %7, %6 : (tensor<1x8x8x8xf32>, tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
    %9 = graph.conv2d %8, %w2 : (tensor<1x8x8x8xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x8x8xf32>
    graph.return %9 : tensor<1x8x8x8xf32>
  }

  // A value that stays NCHW (a max pool after a stem that stays NCHW) read by
  // a blocked convolution and by the residual add after it: one transform
  // into the blocked layout, which both read.
  graph.func @pooled_twice(%x: tensor<1x3x8x8xf32>, %w0: tensor<8x3x3x3xf32>, %w1: tensor<8x8x3x3xf32>) -> tensor<1x8x4x4xf32> {
    %0 = graph.conv2d %x, %w0 {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x8x8xf32>
    %1 = graph.max_pool2d %0 {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x8x8x8xf32>) -> tensor<1x8x4x4xf32>
    %2 = graph.conv2d %1, %w1 {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x8x4x4xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x4x4xf32>
    %3 = graph.add %2, %1 : (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
    graph.return %3 : tensor<1x8x4x4xf32>
  }
}

// CHECK-LABEL: graph.func @into_conv
// CHECK:         graph.reshape %x {{.*}}: (tensor<1x3x8x8xf32>) -> tensor<1x3x8x8x1xf32>
// CHECK:         graph.layout_transform %w0 {{.*}} : (tensor<8x3x3x3xf32>) -> tensor<1x3x3x3x1x8xf32>
// CHECK:         %[[STEM:.*]] = graph.conv2d {{.*}}data_layout = "NCHW1c"{{.*}}kernel_layout = "OIHW1i8o"{{.*}} : (tensor<1x3x8x8x1xf32>, tensor<1x3x3x3x1x8xf32>) -> tensor<1x1x8x8x8xf32>
// CHECK:         %[[BIAS:.*]] = graph.add %[[STEM]], {{.*}} -> tensor<1x1x8x8x8xf32>
// CHECK:         %[[RELU:.*]] = graph.relu %[[BIAS]]
// CHECK:         graph.conv2d %[[RELU]], {{.*}}data_layout = "NCHW8c"{{.*}} : (tensor<1x1x8x8x8xf32>, tensor<1x1x3x3x8x8xf32>) -> tensor<1x1x8x8x8xf32>

// A consumer with too few output channels to be blocked (2 < 8/2) would
// need the stem's output back in NCHW: both stay NCHW.
// CHECK-LABEL: graph.func @into_narrow_conv
// CHECK-NEXT:    graph.conv2d %x, %w0 {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x8x8xf32>
// CHECK-NEXT:    graph.conv2d
// CHECK-NOT:     data_layout
// CHECK:         graph.return

// CHECK-LABEL: graph.func @into_pool
// CHECK-NEXT:    graph.conv2d %x, %w0 {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x8x8xf32>
// CHECK-NOT:     data_layout
// CHECK:         graph.max_pool2d

// CHECK-LABEL: graph.func @hardswish_residual
// CHECK:         %[[STEM:.*]] = graph.conv2d {{.*}}data_layout = "NCHW1c"{{.*}} -> tensor<1x1x8x8x8xf32>
// CHECK-NOT:     graph.layout_transform %[[STEM]]
// CHECK:         %[[HS:.*]] = graph.mul {{.*}} : (tensor<1x1x8x8x8xf32>, tensor<1x1x8x8x8xf32>) -> tensor<1x1x8x8x8xf32>
// CHECK-NOT:     graph.layout_transform %[[HS]]
// CHECK:         %[[DW:.*]] = graph.conv2d %[[HS]], {{.*}}data_layout = "NCHW8c"
// CHECK-NEXT:    graph.add %[[DW]], %[[HS]]
// CHECK:         graph.return

// CHECK-LABEL: graph.func @pooled_twice
// CHECK:         %[[POOL:.*]] = graph.max_pool2d
// CHECK-NEXT:    %[[T:.*]] = graph.layout_transform %[[POOL]]
// CHECK-NOT:     graph.layout_transform %[[POOL]]
// CHECK:         %[[CONV:.*]] = graph.conv2d %[[T]], {{.*}}data_layout = "NCHW8c"
// CHECK-NOT:     graph.layout_transform %[[POOL]]
// CHECK:         graph.add %[[CONV]], %[[T]]
