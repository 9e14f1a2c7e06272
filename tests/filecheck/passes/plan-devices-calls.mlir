// RUN: lamina-opt %s --split-input-file -p plan-devices | filecheck %s

// Calls with fixed parameter devices: the callee's parameters are placed by
// its arg_attrs; each caller copies its argument where it differs (one copy
// per value and device, even for two calls). The call's result is the
// callee's result (cpu:1), so the caller's exp runs there.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @scale(%x: tensor<4xf32> {device = #lamina.device<"cpu", 1>}) -> tensor<4xf32> {
    %y = graph.add %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    graph.return %y : tensor<4xf32>
  }
  graph.func @main(%x: tensor<4xf32> {device = #lamina.device<"cpu", 0>}) -> tensor<4xf32> {
    %a = graph.call @scale(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %b = graph.call @scale(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %c = graph.add %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    graph.return %c : tensor<4xf32>
  }
}
// CHECK-LABEL: graph.func @scale(
// CHECK-SAME:      {device = #lamina.device<"cpu", 1>}) -> (tensor<4xf32> {device = #lamina.device<"cpu", 1>})
// CHECK-LABEL: graph.func @main(
// CHECK-SAME:      %[[X:.*]]: tensor<4xf32> {device = #lamina.device<"cpu", 0>}) -> (tensor<4xf32> {device = #lamina.device<"cpu", 1>})
// CHECK-NEXT:    %[[X1:.*]] = graph.device_copy %[[X]] {src = #lamina.device<"cpu", 0>, dst = #lamina.device<"cpu", 1>
// CHECK-NEXT:    %[[A:.*]] = graph.call @scale(%[[X1]]) {device = #lamina.device<"cpu", 1>}
// CHECK-NEXT:    %[[B:.*]] = graph.call @scale(%[[X1]]) {device = #lamina.device<"cpu", 1>}
// CHECK-NEXT:    graph.add %[[A]], %[[B]] {device = #lamina.device<"cpu", 1>}

// -----

// Recursion: @f calls itself; its parameter is placed by its first consumer
// inside @f (cpu:1), the recursive call passes a value already there (no
// copy), and @main copies its argument once. @f's result is only ever the
// result of @f itself: nothing places it, so it goes on the default device.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
    %y = graph.exp %x {device = #lamina.device<"cpu", 1>} : (tensor<4xf32>) -> tensor<4xf32>
    %z = graph.call @f(%y) : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %z : tensor<4xf32>
  }
  graph.func @main(%x: tensor<4xf32> {device = #lamina.device<"cpu", 0>}) -> tensor<4xf32> {
    %r = graph.call @f(%x) : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %r : tensor<4xf32>
  }
}
// CHECK-LABEL: graph.func @f(
// CHECK-SAME:      %[[X:.*]]: tensor<4xf32> {device = #lamina.device<"cpu", 1>}) -> (tensor<4xf32> {device = #lamina.device<"cpu", 0>})
// CHECK-NEXT:    %[[Y:.*]] = graph.exp %[[X]] {device = #lamina.device<"cpu", 1>}
// CHECK-NEXT:    graph.call @f(%[[Y]]) {device = #lamina.device<"cpu", 0>}
// CHECK-LABEL: graph.func @main(
// CHECK-NEXT:    %[[X1:.*]] = graph.device_copy %{{.*}} {src = #lamina.device<"cpu", 0>, dst = #lamina.device<"cpu", 1>
// CHECK-NEXT:    graph.call @f(%[[X1]])

// -----

// A closure passed to a higher-order function: @apply's function parameter
// carries a device signature that unifies with @gpu_exp's, so the invoke's
// argument is copied to gpu:0 inside @apply and its result lives there; no
// inlining, and @gpu_exp keeps its own placement.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @gpu_exp(%x: tensor<4xf32>) -> tensor<4xf32> {
    %y = graph.exp %x {device = #lamina.device<"gpu", 0>} : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %y : tensor<4xf32>
  }
  graph.func @apply(%f: !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, %x: tensor<4xf32> {device = #lamina.device<"cpu", 0>}) -> tensor<4xf32> {
    %y = graph.invoke %f(%x) {pure} : (tensor<4xf32>) -> tensor<4xf32>
    %z = graph.relu %y : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %z : tensor<4xf32>
  }
  graph.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %f = graph.closure @gpu_exp() : () -> !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>
    %r = graph.call @apply(%f, %x) : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, tensor<4xf32>) -> tensor<4xf32>
    graph.return %r : tensor<4xf32>
  }
}
// CHECK-LABEL: graph.func @gpu_exp(
// CHECK-SAME:      {device = #lamina.device<"gpu", 0>}) -> (tensor<4xf32> {device = #lamina.device<"gpu", 0>})
// CHECK-LABEL: graph.func @apply(
// CHECK-SAME:      %[[F:[a-z0-9_]+]]: !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, %[[X:[a-z0-9_]+]]: tensor<4xf32> {device = #lamina.device<"cpu", 0>})
// CHECK-NEXT:    %[[X1:.*]] = graph.device_copy %[[X]] {src = #lamina.device<"cpu", 0>, dst = #lamina.device<"gpu", 0>
// CHECK-NEXT:    %[[Y:.*]] = graph.invoke %[[F]](%[[X1]]) {pure, device = #lamina.device<"gpu", 0>}
// CHECK-NEXT:    graph.relu %[[Y]] {device = #lamina.device<"gpu", 0>}
// CHECK-LABEL: graph.func @main(
// CHECK-SAME:      {device = #lamina.device<"cpu", 0>}) -> (tensor<4xf32> {device = #lamina.device<"gpu", 0>})
// CHECK-NEXT:    graph.closure @gpu_exp()
// CHECK-NEXT:    graph.call @apply

// -----

// A closure with a captured tensor: the capture is a use of the callee's
// first parameter (cpu:1), so it is copied there by the closure's creator.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @scale(%w: tensor<4xf32> {device = #lamina.device<"cpu", 1>}, %x: tensor<4xf32>) -> tensor<4xf32> {
    %y = graph.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    graph.return %y : tensor<4xf32>
  }
  graph.func @main(%w: tensor<4xf32> {device = #lamina.device<"cpu", 0>}, %x: tensor<4xf32>) -> tensor<4xf32> {
    %f = graph.closure @scale(%w) : (tensor<4xf32>) -> !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>
    %y = graph.invoke %f(%x) {pure} : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %y : tensor<4xf32>
  }
}
// CHECK-LABEL: graph.func @scale(
// CHECK-SAME:      {device = #lamina.device<"cpu", 1>}, %{{.*}}: tensor<4xf32> {device = #lamina.device<"cpu", 1>})
// CHECK-LABEL: graph.func @main(
// CHECK-NEXT:    %[[W1:.*]] = graph.device_copy %{{.*}} {src = #lamina.device<"cpu", 0>, dst = #lamina.device<"cpu", 1>
// CHECK-NEXT:    %[[F:.*]] = graph.closure @scale(%[[W1]]) {device = #lamina.device<"cpu", 1>}
// CHECK-NEXT:    graph.invoke %[[F]](%{{.*}}) {pure, device = #lamina.device<"cpu", 1>}
