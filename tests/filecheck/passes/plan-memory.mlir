// RUN: lamina-opt %s -p plan-memory | filecheck %s
// RUN: lamina-opt %s -p plan-memory,lower-graph | filecheck %s --check-prefix=HOST
// RUN: lamina-opt %s -p lower-graph,plan-memory | filecheck %s --check-prefix=HOST
// RUN: lamina-opt %s -p plan-memory,plan-memory | filecheck %s

// plan-memory: buffers whose lifetimes do not overlap share storage, only
// when shape, element type, device and layout agree. Before lower-graph the
// plan is written as `lamina.storage` slots; after it, freed allocations are
// reused directly. Both orders give the same host code (HOST).

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @k(%x: memref<4xf32>, %y: memref<4xf32>) {
    loop.return
  }
  loop.func @wide(%x: memref<4xf32>, %y: memref<8xf32>) {
    loop.return
  }
  loop.func @narrow(%x: memref<8xf32>, %y: memref<4xf32>) {
    loop.return
  }

  // %a dies at %c's call, so %c takes its slot; %d is on another device and
  // %w has another shape: fresh slots. The returned %e lives in the output.
  // CHECK-LABEL: graph.func @chain(
  // CHECK-NEXT:    graph.call_loop @k(%x) {lamina.storage = array<i64: 0>}
  // CHECK-NEXT:    graph.call_loop @k(%a) {lamina.storage = array<i64: 1>}
  // CHECK-NEXT:    graph.call_loop @k(%b) {lamina.storage = array<i64: 0>}
  // CHECK-NEXT:    graph.call_loop @wide(%c) {lamina.storage = array<i64: 2>}
  // CHECK-NEXT:    graph.call_loop @narrow(%w) {lamina.storage = array<i64: 3>, device = #lamina.device<"cpu", 1>}
  // CHECK-NEXT:    graph.call_loop @k(%d) :
  // CHECK-NEXT:    graph.return %e

  // HOST-LABEL: loop.func @chain(
  // HOST-SAME:    %[[X:.*]]: memref<4xf32>, %[[OUT:.*]]: memref<4xf32>) attributes {lamina.results = 1 : i64} {
  // HOST-NEXT:    %[[A:.*]] = loop.alloc : memref<4xf32>
  // HOST-NEXT:    loop.call @k(%[[X]], %[[A]])
  // HOST-NEXT:    %[[B:.*]] = loop.alloc : memref<4xf32>
  // HOST-NEXT:    loop.call @k(%[[A]], %[[B]])
  // HOST-NEXT:    loop.call @k(%[[B]], %[[A]])
  // HOST-NEXT:    loop.free %[[B]] : memref<4xf32>
  // HOST-NEXT:    %[[W:.*]] = loop.alloc : memref<8xf32>
  // HOST-NEXT:    loop.call @wide(%[[A]], %[[W]])
  // HOST-NEXT:    loop.free %[[A]] : memref<4xf32>
  // HOST-NEXT:    %[[D:.*]] = loop.alloc {device = #lamina.device<"cpu", 1>} : memref<4xf32>
  // HOST-NEXT:    loop.call @narrow(%[[W]], %[[D]])
  // HOST-NEXT:    loop.free %[[W]] : memref<8xf32>
  // HOST-NEXT:    loop.call @k(%[[D]], %[[OUT]])
  // HOST-NEXT:    loop.free %[[D]] : memref<4xf32>
  // HOST-NEXT:    loop.return
  graph.func @chain(%x: tensor<4xf32>) -> tensor<4xf32> attributes {force_pure} {
    %a = graph.call_loop @k(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %b = graph.call_loop @k(%a) : (tensor<4xf32>) -> tensor<4xf32>
    %c = graph.call_loop @k(%b) : (tensor<4xf32>) -> tensor<4xf32>
    %w = graph.call_loop @wide(%c) : (tensor<4xf32>) -> tensor<8xf32>
    %d = graph.call_loop @narrow(%w) {device = #lamina.device<"cpu", 1>} : (tensor<8xf32>) -> tensor<4xf32>
    %e = graph.call_loop @k(%d) : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %e : tensor<4xf32>
  }

  // A buffer used by a later op is still live: %a is read by the last call,
  // so neither %b nor %c may take its place; %c is written while %b is read
  // (an op never writes over its own input): three slots.
  // CHECK-LABEL: graph.func @long_lived(
  // CHECK-NEXT:    graph.call_loop @k(%x) {lamina.storage = array<i64: 0>}
  // CHECK-NEXT:    graph.call_loop @k(%a) {lamina.storage = array<i64: 1>}
  // CHECK-NEXT:    graph.call_loop @k(%b) {lamina.storage = array<i64: 2>}
  // CHECK-NEXT:    graph.call_loop @k2(%a, %c) :
  graph.func @long_lived(%x: tensor<4xf32>) -> tensor<4xf32> attributes {force_pure} {
    %a = graph.call_loop @k(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %b = graph.call_loop @k(%a) : (tensor<4xf32>) -> tensor<4xf32>
    %c = graph.call_loop @k(%b) : (tensor<4xf32>) -> tensor<4xf32>
    %r = graph.call_loop @k2(%a, %c) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    graph.return %r : tensor<4xf32>
  }
  loop.func @k2(%x: memref<4xf32>, %y: memref<4xf32>, %z: memref<4xf32>) {
    loop.return
  }

  // A buffer without `device` is on the module's default device (cpu 0).
  // CHECK-LABEL: graph.func @default_device(
  // CHECK-NEXT:    graph.call_loop @k(%x) {lamina.storage = array<i64: 0>, device = #lamina.device<"cpu", 0>}
  // CHECK-NEXT:    graph.call_loop @k(%a) {lamina.storage = array<i64: 1>}
  // CHECK-NEXT:    graph.call_loop @k(%b) {lamina.storage = array<i64: 0>}
  graph.func @default_device(%x: tensor<4xf32>) -> tensor<4xf32> attributes {force_pure} {
    %a = graph.call_loop @k(%x) {device = #lamina.device<"cpu", 0>} : (tensor<4xf32>) -> tensor<4xf32>
    %b = graph.call_loop @k(%a) : (tensor<4xf32>) -> tensor<4xf32>
    %c = graph.call_loop @k(%b) : (tensor<4xf32>) -> tensor<4xf32>
    %r = graph.call_loop @k(%c) : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %r : tensor<4xf32>
  }

  // Loop level: kernel temporaries of one scope reuse each other; a local and
  // a global buffer never share.
  // CHECK-LABEL: loop.func @temps(
  // CHECK-NEXT:    %[[T0:.*]] = loop.alloc {scope = "local"} : memref<2xf32>
  // CHECK-NEXT:    loop.call @use(%[[T0]])
  // CHECK-NEXT:    %[[G:.*]] = loop.alloc : memref<2xf32>
  // CHECK-NEXT:    loop.call @use(%[[G]])
  // CHECK-NEXT:    loop.free %[[G]] : memref<2xf32>
  // CHECK-NEXT:    loop.call @use(%[[T0]])
  // CHECK-NEXT:    loop.free %[[T0]] : memref<2xf32>
  // CHECK-NEXT:    loop.return
  loop.func @temps() {
    %t0 = loop.alloc {scope = "local"} : memref<2xf32>
    loop.call @use(%t0) : (memref<2xf32>) -> ()
    loop.free %t0 : memref<2xf32>
    %g = loop.alloc : memref<2xf32>
    loop.call @use(%g) : (memref<2xf32>) -> ()
    loop.free %g : memref<2xf32>
    %t1 = loop.alloc {scope = "local"} : memref<2xf32>
    loop.call @use(%t1) : (memref<2xf32>) -> ()
    loop.free %t1 : memref<2xf32>
    loop.return
  }
  loop.func private @use(memref<2xf32>)
}
