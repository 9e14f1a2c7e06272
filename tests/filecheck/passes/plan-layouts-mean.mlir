// RUN: lamina-opt %s -p plan-layouts | filecheck %s

// A mean over H and W of a channel-blocked value (ShuffleNetV2's last
// `mean([2, 3])`) is a global average pool of the blocked value, transformed
// back only at its 1x1 result and reshaped to `N x C`: no transform of the
// whole feature map to NCHW.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>, lamina.targets = {cpu = #lamina.target<"cpu", {vector_bits = 256 : i64}>}} {
  graph.func @mean(%x: tensor<1x12x5x5xf32>, %w: tensor<12x12x1x1xf32>) -> tensor<1x12xf32> {
    %c = graph.conv2d %x, %w : (tensor<1x12x5x5xf32>, tensor<12x12x1x1xf32>) -> tensor<1x12x5x5xf32>
    %r = graph.relu %c : (tensor<1x12x5x5xf32>) -> tensor<1x12x5x5xf32>
    %m = graph.reduce_mean %r {axes = array<i64: 2, 3>} : (tensor<1x12x5x5xf32>) -> tensor<1x12xf32>
    graph.return %m : tensor<1x12xf32>
  }
}

// CHECK-LABEL: graph.func @mean
// CHECK:       %[[R:.*]] = graph.relu {{.*}} -> tensor<1x2x5x5x8xf32>
// CHECK:       %[[P:.*]] = graph.global_avg_pool2d %[[R]] {{.*}}logical = array<i64: 1, 12, 1, 1>{{.*}} : (tensor<1x2x5x5x8xf32>) -> tensor<1x2x1x1x8xf32>
// CHECK:       %[[B:.*]] = graph.layout_transform %[[P]] {{.*}}crop} : (tensor<1x2x1x1x8xf32>) -> tensor<1x12x1x1xf32>
// CHECK:       %[[M:.*]] = graph.reshape %[[B]] : (tensor<1x12x1x1xf32>) -> tensor<1x12xf32>
// CHECK:       graph.return %[[M]]
// CHECK-NOT:   graph.reduce_mean
