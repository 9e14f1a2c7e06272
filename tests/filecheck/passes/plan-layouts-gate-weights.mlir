// RUN: lamina-opt %s -p plan-layouts | filecheck %s
// RUN: sed 's/conv_gate_weights_percent = 30/conv_gate_weights_percent = 0/' %s | lamina-opt - -p plan-layouts | filecheck %s --check-prefix=OFF

// A squeeze-and-excitation gate (`1x16x1x1`) multiplying the input of a 1x1
// convolution with constant weights scales the weights instead
// (`conv_gate_weights_percent` = 30, the default but on AMD Zen: when the weights have at most 30 % of the
// feature map's elements, 8x16 against 16x8x8): the blocked constant (`OIHW8i8o`, hoisted)
// times the blocked gate reshaped to the weight's input lanes, and the
// convolution reads the feature map itself. The gate's blocked result is used
// as it is (16 channels: whole blocks, no transform). With the knob at 0 the
// scaled feature map is computed as before. A larger weight (`@wide`: 64
// output channels at 8x8) is not rewritten.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>, lamina.targets = {cpu = #lamina.target<"cpu", {vector_bits = 256 : i64, conv_gate_weights_percent = 30 : i64}>}} {
  graph.func @gate(%x: tensor<1x16x8x8xf32>, %w0: tensor<16x16x1x1xf32>, %w1: tensor<16x16x1x1xf32>) -> tensor<1x8x8x8xf32> {
    %w = graph.constant dense<0.5> : tensor<8x16x1x1xf32>
    %d = graph.conv2d %x, %w0 : (tensor<1x16x8x8xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x8x8xf32>
    %p = graph.global_avg_pool2d %d : (tensor<1x16x8x8xf32>) -> tensor<1x16x1x1xf32>
    %s = graph.conv2d %p, %w1 : (tensor<1x16x1x1xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x1x1xf32>
    %g = graph.sigmoid %s : (tensor<1x16x1x1xf32>) -> tensor<1x16x1x1xf32>
    %m = graph.mul %d, %g : (tensor<1x16x8x8xf32>, tensor<1x16x1x1xf32>) -> tensor<1x16x8x8xf32>
    %y = graph.conv2d %m, %w : (tensor<1x16x8x8xf32>, tensor<8x16x1x1xf32>) -> tensor<1x8x8x8xf32>
    graph.return %y : tensor<1x8x8x8xf32>
  }
  graph.func @wide(%x: tensor<1x16x8x8xf32>, %g: tensor<1x16x1x1xf32>) -> tensor<1x64x8x8xf32> {
    %w = graph.constant dense<0.5> : tensor<64x16x1x1xf32>
    %m = graph.mul %x, %g : (tensor<1x16x8x8xf32>, tensor<1x16x1x1xf32>) -> tensor<1x16x8x8xf32>
    %y = graph.conv2d %m, %w : (tensor<1x16x8x8xf32>, tensor<64x16x1x1xf32>) -> tensor<1x64x8x8xf32>
    graph.return %y : tensor<1x64x8x8xf32>
  }
}

// CHECK-LABEL: graph.func @gate
// CHECK:       %[[D:.*]] = graph.conv2d {{.*}} -> tensor<1x2x8x8x8xf32>
// CHECK:       %[[S:.*]] = graph.conv2d {{.*}} -> tensor<1x2x1x1x8xf32>
// CHECK:       %[[G:.*]] = graph.sigmoid %[[S]] {{.*}} -> tensor<1x2x1x1x8xf32>
// CHECK:       %[[W:.*]] = graph.constant dense<{{.*}}> : tensor<1x2x1x1x8x8xf32>
// CHECK:       %[[G6:.*]] = graph.reshape %[[G]] : (tensor<1x2x1x1x8xf32>) -> tensor<1x2x1x1x8x1xf32>
// CHECK:       %[[WG:.*]] = graph.mul %[[W]], %[[G6]] : (tensor<1x2x1x1x8x8xf32>, tensor<1x2x1x1x8x1xf32>) -> tensor<1x2x1x1x8x8xf32>
// CHECK:       graph.conv2d %[[D]], %[[WG]] {{.*}}kernel_layout = "OIHW8i8o"{{.*}} -> tensor<1x1x8x8x8xf32>
// CHECK-NOT:   graph.mul
// CHECK-LABEL: graph.func @wide
// CHECK:       %[[M:.*]] = graph.mul %x, %g
// CHECK:       %[[MB:.*]] = graph.layout_transform %[[M]]
// CHECK:       graph.conv2d %[[MB]], %{{.*}} -> tensor<1x8x8x8x8xf32>

// OFF-LABEL: graph.func @gate
// OFF:       %[[G:.*]] = graph.sigmoid
// OFF:       %[[M:.*]] = graph.mul %{{.*}}, %[[G]] {{.*}} -> tensor<1x2x8x8x8xf32>
// OFF:       graph.conv2d %[[M]], %{{.*}} -> tensor<1x1x8x8x8xf32>
