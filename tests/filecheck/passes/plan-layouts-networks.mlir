// RUN: lamina-opt %s -p plan-layouts | filecheck %s

// The op shapes of mobile networks stay channel-blocked from one convolution
// to the next (8 lanes, from the module's cpu target options): a depthwise
// convolution (groups = channels) is blocked with its filters as `OIHW1i8o`;
// relu6's scalar bounds become constants of the blocked rank (no reshape
// left to run as a kernel); a global average pool, a max pool
// and a concatenation of whole channel blocks work on `NCHW8c` directly; a
// squeeze-and-excitation scale (`1x2x1x1x8`) multiplies the blocked feature
// map by broadcasting; a pointwise convolution on a small image is blocked
// even when its input is a parameter. One transform in, one out.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>, lamina.targets = {cpu = #lamina.target<"cpu", {vector_bits = 256 : i64}>}} {
  graph.func @mobile(%x: tensor<1x8x8x8xf32>, %w0: tensor<16x8x3x3xf32>, %dw: tensor<16x1x3x3xf32>, %w1: tensor<8x16x1x1xf32>, %w2: tensor<16x16x1x1xf32>) -> tensor<1x24x4x4xf32> {
    %lo = graph.constant dense<0.0> : tensor<f32>
    %hi = graph.constant dense<6.0> : tensor<f32>
    %0 = graph.conv2d %x, %w0 {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x8x8x8xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x8x8xf32>
    %1 = graph.conv2d %0, %dw {padding = array<i64: 1, 1, 1, 1>, groups = 16 : i64} : (tensor<1x16x8x8xf32>, tensor<16x1x3x3xf32>) -> tensor<1x16x8x8xf32>
    %2 = graph.maximum %1, %lo : (tensor<1x16x8x8xf32>, tensor<f32>) -> tensor<1x16x8x8xf32>
    %3 = graph.minimum %2, %hi : (tensor<1x16x8x8xf32>, tensor<f32>) -> tensor<1x16x8x8xf32>
    %4 = graph.global_avg_pool2d %3 : (tensor<1x16x8x8xf32>) -> tensor<1x16x1x1xf32>
    %5 = graph.conv2d %4, %w2 : (tensor<1x16x1x1xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x1x1xf32>
    %6 = graph.sigmoid %5 : (tensor<1x16x1x1xf32>) -> tensor<1x16x1x1xf32>
    %7 = graph.mul %3, %6 : (tensor<1x16x8x8xf32>, tensor<1x16x1x1xf32>) -> tensor<1x16x8x8xf32>
    %8 = graph.max_pool2d %7 {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x16x8x8xf32>) -> tensor<1x16x4x4xf32>
    %9 = graph.conv2d %8, %w1 : (tensor<1x16x4x4xf32>, tensor<8x16x1x1xf32>) -> tensor<1x8x4x4xf32>
    %10 = graph.concat %8, %9 {axis = 1 : i64} : (tensor<1x16x4x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x24x4x4xf32>
    graph.return %10 : tensor<1x24x4x4xf32>
  }
}

// CHECK-LABEL: graph.func @mobile
// CHECK:       %[[X:.*]] = graph.layout_transform %x {{.*}} -> tensor<1x1x8x8x8xf32>
// CHECK:       %[[C0:.*]] = graph.conv2d %[[X]], {{.*}}data_layout = "NCHW8c", kernel_layout = "OIHW8i8o"{{.*}} -> tensor<1x2x8x8x8xf32>
// CHECK:       %[[DW:.*]] = graph.layout_transform %dw {{.*}} : (tensor<16x1x3x3xf32>) -> tensor<2x1x3x3x1x8xf32>
// CHECK:       %[[D:.*]] = graph.conv2d %[[C0]], %[[DW]] {{.*}}groups = 16 : i64, data_layout = "NCHW8c", kernel_layout = "OIHW1i8o"} : (tensor<1x2x8x8x8xf32>, tensor<2x1x3x3x1x8xf32>) -> tensor<1x2x8x8x8xf32>
// CHECK:       %[[LO:.*]] = graph.constant dense<0.000000e+00> : tensor<1x1x1x1x1xf32>
// CHECK:       %[[R0:.*]] = graph.maximum %[[D]], %[[LO]] {{.*}}0.000000e+00 : f32
// CHECK:       %[[HI:.*]] = graph.constant dense<6.000000e+00> : tensor<1x1x1x1x1xf32>
// CHECK:       %[[R6:.*]] = graph.minimum %[[R0]], %[[HI]] {{.*}}0.000000e+00 : f32{{.*}} -> tensor<1x2x8x8x8xf32>
// CHECK:       %[[G:.*]] = graph.global_avg_pool2d %[[R6]] {{.*}} : (tensor<1x2x8x8x8xf32>) -> tensor<1x2x1x1x8xf32>
// CHECK:       %[[SE:.*]] = graph.conv2d %[[G]], {{.*}}data_layout = "NCHW8c"{{.*}} -> tensor<1x2x1x1x8xf32>
// CHECK:       %[[S:.*]] = graph.sigmoid %[[SE]] {{.*}}5.000000e-01 : f32
// CHECK:       %[[M:.*]] = graph.mul %[[R6]], %[[S]] {{.*}} : (tensor<1x2x8x8x8xf32>, tensor<1x2x1x1x8xf32>) -> tensor<1x2x8x8x8xf32>
// CHECK:       %[[P:.*]] = graph.max_pool2d %[[M]] {{.*}} : (tensor<1x2x8x8x8xf32>) -> tensor<1x2x4x4x8xf32>
// CHECK:       %[[PW:.*]] = graph.conv2d %[[P]], {{.*}} -> tensor<1x1x4x4x8xf32>
// CHECK:       %[[CAT:.*]] = graph.concat %[[P]], %[[PW]] {{.*}}logical = array<i64: 1, 24, 4, 4>>, axis = 1 : i64} : (tensor<1x2x4x4x8xf32>, tensor<1x1x4x4x8xf32>) -> tensor<1x3x4x4x8xf32>
// CHECK:       %[[OUT:.*]] = graph.layout_transform %[[CAT]] {{.*}} -> tensor<1x24x4x4xf32>
// CHECK-NEXT:  graph.return %[[OUT]]
// CHECK-NOT:   graph.layout_transform
