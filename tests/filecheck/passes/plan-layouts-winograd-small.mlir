// RUN: lamina-opt %s --split-input-file -p 'plan-layouts{block=8}' | filecheck %s

// `winograd_direct_below` (derived 64 on a CPU with two 512-bit FMA pipes):
// a 3x3 convolution with constant weights whose output has fewer pixels than
// the knob and whose transformed weights (16*C*K elements) exceed
// `winograd_max_weight_bytes` keeps the direct kernel (ResNet's 512 -> 512
// at 7x7, 16 MiB of them). Here the limit is 64 KiB: 64 -> 64 at 7x7 (256
// KiB) is direct, 16 -> 32 at 7x7 (32 KiB) and 64 -> 64 at 8x8 (64 pixels)
// stay Winograd.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>, lamina.targets = {cpu = #lamina.target<"cpu", {winograd_direct_below = 64 : i64, winograd_max_weight_bytes = 65536 : i64}>}} {
  graph.func @small(%x: tensor<1x64x7x7xf32>, %y: tensor<1x16x7x7xf32>, %z: tensor<1x64x8x8xf32>) -> (tensor<1x64x7x7xf32>, tensor<1x32x7x7xf32>, tensor<1x64x8x8xf32>) {
    %w = graph.constant dense<1.0> : tensor<64x64x3x3xf32>
    %v = graph.constant dense<1.0> : tensor<32x16x3x3xf32>
    %0 = graph.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x64x7x7xf32>, tensor<64x64x3x3xf32>) -> tensor<1x64x7x7xf32>
    %1 = graph.conv2d %y, %v {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x16x7x7xf32>, tensor<32x16x3x3xf32>) -> tensor<1x32x7x7xf32>
    %2 = graph.conv2d %z, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x64x8x8xf32>, tensor<64x64x3x3xf32>) -> tensor<1x64x8x8xf32>
    graph.return %0, %1, %2 : tensor<1x64x7x7xf32>, tensor<1x32x7x7xf32>, tensor<1x64x8x8xf32>
  }
}

// CHECK-LABEL: graph.func @small
// CHECK:         graph.conv2d
// CHECK-NOT:       lamina.algorithm
// CHECK-SAME:      -> tensor<1x8x7x7x8xf32>
// CHECK:         graph.conv2d {{.*}}lamina.algorithm = "winograd"{{.*}} -> tensor<1x4x7x7x8xf32>
// CHECK:         graph.conv2d {{.*}}lamina.algorithm = "winograd"{{.*}} -> tensor<1x8x8x8x8xf32>

// -----

// At 0 (Zen 4, AVX2): Winograd wherever it applies when the weights are constant.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>, lamina.targets = {cpu = #lamina.target<"cpu", {winograd_direct_below = 0 : i64, winograd_max_weight_bytes = 65536 : i64}>}} {
  graph.func @off(%x: tensor<1x64x7x7xf32>) -> tensor<1x64x7x7xf32> {
    %w = graph.constant dense<1.0> : tensor<64x64x3x3xf32>
    %0 = graph.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x64x7x7xf32>, tensor<64x64x3x3xf32>) -> tensor<1x64x7x7xf32>
    graph.return %0 : tensor<1x64x7x7xf32>
  }
}

// CHECK-LABEL: graph.func @off
// CHECK:         graph.conv2d {{.*}}lamina.algorithm = "winograd"{{.*}} -> tensor<1x8x7x7x8xf32>
