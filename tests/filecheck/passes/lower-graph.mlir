// RUN: lamina-opt %s -p lower-graph | filecheck %s
// RUN: lamina-opt %s -p lower-graph | lamina-opt -p verify-phase | filecheck %s --check-prefix=PHASE

// lower-graph: each graph.func becomes a host loop.func over buffers in
// destination-passing style (inputs, then one output buffer per result).

// PHASE: lamina.phase = #lamina.phase<lowering>
// PHASE-NOT: graph.
// PHASE-NOT: {{%[^ ]*: tensor<}}
// CHECK-NOT: graph.

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @k(%x: memref<4xf32>, %y: memref<4xf32>) {
    loop.return
  }
  loop.func @k2(%x: memref<4xf32>, %y: memref<4xf32>, %z: memref<4xf32>) {
    loop.return
  }

  // Two kernel calls: the intermediate gets an alloc on the call's device,
  // freed after its last use; the result is computed straight into %out0.
  // CHECK-LABEL: loop.func @two_calls(
  // CHECK-SAME:    %[[X:.*]]: memref<4xf32>, %[[OUT:.*]]: memref<4xf32>) attributes {lamina.results = 1 : i64} {
  // CHECK-NEXT:    %[[T:.*]] = loop.alloc {device = #lamina.device<"cpu", 0>} : memref<4xf32>
  // CHECK-NEXT:    loop.call @k(%[[X]], %[[T]]) : (memref<4xf32>, memref<4xf32>) -> ()
  // CHECK-NEXT:    loop.call @k(%[[T]], %[[OUT]]) : (memref<4xf32>, memref<4xf32>) -> ()
  // CHECK-NEXT:    loop.free %[[T]] : memref<4xf32>
  // CHECK-NEXT:    loop.return
  graph.func @two_calls(%x: tensor<4xf32>) -> tensor<4xf32> attributes {force_pure} {
    %t = graph.call_loop @k(%x) {device = #lamina.device<"cpu", 0>} : (tensor<4xf32>) -> tensor<4xf32>
    %y = graph.call_loop @k(%t) : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %y : tensor<4xf32>
  }

  // Outputs that cannot be computed in place are copied: a returned
  // parameter, a value returned twice, a constant. A constant is an internal
  // llvm.mlir.global read through its address.
  // CHECK-LABEL: loop.func @outputs(
  // CHECK-SAME:    %[[X:.*]]: memref<4xf32>, %[[O0:.*]]: memref<4xf32>, %[[O1:.*]]: memref<4xf32>, %[[O2:.*]]: memref<4xf32>, %[[O3:.*]]: memref<4xf32>) attributes {lamina.results = 4 : i64} {
  // CHECK-NEXT:    %[[P:.*]] = llvm.mlir.addressof @__lamina_constant : !llvm.ptr
  // CHECK-NEXT:    %[[C:.*]] = builtin.unrealized_conversion_cast %[[P]] : !llvm.ptr to memref<4xf32>
  // CHECK-NEXT:    loop.call @k2(%[[X]], %[[C]], %[[O0]])
  // CHECK-NEXT:    loop.copy %[[X]], %[[O1]] : memref<4xf32> to memref<4xf32>
  // CHECK-NEXT:    loop.copy %[[O0]], %[[O2]] : memref<4xf32> to memref<4xf32>
  // CHECK-NEXT:    loop.copy %[[C]], %[[O3]] : memref<4xf32> to memref<4xf32>
  // CHECK-NEXT:    loop.return
  graph.func @outputs(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) attributes {force_pure} {
    %c = graph.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
    %y = graph.call_loop @k2(%x, %c) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    graph.return %y, %x, %y, %c : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  }

  // CHECK-LABEL: loop.func @helper(
  // CHECK-SAME:    %[[W:.*]]: memref<4xf32>, %[[X:.*]]: memref<4xf32>, %[[OUT:.*]]: memref<4xf32>) attributes {lamina.results = 1 : i64} {
  // CHECK-NEXT:    loop.call @k2(%[[W]], %[[X]], %[[OUT]])
  // CHECK-NEXT:    loop.return
  graph.func @helper(%w: tensor<4xf32>, %x: tensor<4xf32>) -> tensor<4xf32> attributes {force_pure} {
    %y = graph.call_loop @k2(%w, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    graph.return %y : tensor<4xf32>
  }

  // graph.call of a graph function passes destinations too; a closure over a
  // known function becomes a direct call with the captured buffers first;
  // an external call gets its inputs then its destinations.
  // CHECK-LABEL: loop.func @calls(
  // CHECK-SAME:    %[[W:.*]]: memref<4xf32>, %[[X:.*]]: memref<4xf32>, %[[OUT:.*]]: memref<4xf32>) attributes {lamina.results = 1 : i64} {
  // CHECK-NEXT:    %[[A:.*]] = loop.alloc : memref<4xf32>
  // CHECK-NEXT:    loop.call @helper(%[[W]], %[[X]], %[[A]])
  // CHECK-NEXT:    %[[B:.*]] = loop.alloc : memref<4xf32>
  // CHECK-NEXT:    loop.call @helper(%[[W]], %[[A]], %[[B]])
  // CHECK-NEXT:    loop.free %[[A]] : memref<4xf32>
  // CHECK-NEXT:    loop.call @ext_fn(%[[B]], %[[OUT]]) : (memref<4xf32>, memref<4xf32>) -> ()
  // CHECK-NEXT:    loop.free %[[B]] : memref<4xf32>
  // CHECK-NEXT:    loop.return
  graph.func @calls(%w: tensor<4xf32>, %x: tensor<4xf32>) -> tensor<4xf32> attributes {impure} {
    %a = graph.call @helper(%w, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %f = graph.closure @helper(%w) : (tensor<4xf32>) -> !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>
    %b = graph.invoke %f(%a) : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, tensor<4xf32>) -> tensor<4xf32>
    %c = graph.call_extern "ext_fn"(%b) : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %c : tensor<4xf32>
  }

  // Device copies become loop.copy with src/dst; the copy's destination is
  // allocated on dst; argument/result attributes become parameter attributes.
  // CHECK-LABEL: loop.func @copies(
  // CHECK-SAME:    %[[X:.*]]: memref<4xf32> {device = #lamina.device<"cpu", 0>}, %[[OUT:.*]]: memref<4xf32> {device = #lamina.device<"cpu", 0>}) attributes {lamina.results = 1 : i64} {
  // CHECK-NEXT:    %[[G:.*]] = loop.alloc {device = #lamina.device<"cpu", 1>} : memref<4xf32>
  // CHECK-NEXT:    loop.copy %[[X]], %[[G]] {src = #lamina.device<"cpu", 0>, dst = #lamina.device<"cpu", 1>} : memref<4xf32> to memref<4xf32>
  // CHECK-NEXT:    %[[Y:.*]] = loop.alloc {device = #lamina.device<"cpu", 1>} : memref<4xf32>
  // CHECK-NEXT:    loop.call @k(%[[G]], %[[Y]])
  // CHECK-NEXT:    loop.free %[[G]] : memref<4xf32>
  // CHECK-NEXT:    loop.copy %[[Y]], %[[OUT]] {src = #lamina.device<"cpu", 1>, dst = #lamina.device<"cpu", 0>} : memref<4xf32> to memref<4xf32>
  // CHECK-NEXT:    loop.free %[[Y]] : memref<4xf32>
  // CHECK-NEXT:    loop.return
  graph.func @copies(%x: tensor<4xf32> {device = #lamina.device<"cpu", 0>}) -> (tensor<4xf32> {device = #lamina.device<"cpu", 0>}) attributes {force_pure} {
    %g = graph.device_copy %x {src = #lamina.device<"cpu", 0>, dst = #lamina.device<"cpu", 1>} : (tensor<4xf32>) -> tensor<4xf32>
    %y = graph.call_loop @k(%g) {device = #lamina.device<"cpu", 1>} : (tensor<4xf32>) -> tensor<4xf32>
    %h = graph.device_copy %y {src = #lamina.device<"cpu", 1>, dst = #lamina.device<"cpu", 0>} : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %h : tensor<4xf32>
  }

  // A loop function returning its buffer (not DPS) is called directly; its
  // result is copied into the output.
  // CHECK-LABEL: loop.func @direct(
  // CHECK-SAME:    %[[X:.*]]: memref<4xf32>, %[[OUT:.*]]: memref<4xf32>) attributes {lamina.results = 1 : i64} {
  // CHECK-NEXT:    %[[Y:.*]] = loop.call @make(%[[X]]) : (memref<4xf32>) -> memref<4xf32>
  // CHECK-NEXT:    loop.copy %[[Y]], %[[OUT]] : memref<4xf32> to memref<4xf32>
  // CHECK-NEXT:    loop.return
  loop.func @make(%x: memref<4xf32>) -> memref<4xf32> {
    loop.return %x : memref<4xf32>
  }
  graph.func @direct(%x: tensor<4xf32>) -> tensor<4xf32> attributes {force_pure} {
    %y = graph.call_loop @make(%x) : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %y : tensor<4xf32>
  }

  // A declaration stays a (private) declaration with the DPS signature.
  // CHECK-LABEL: loop.func private @external(memref<2x2xf64>, memref<2xf64>)
  graph.func @external(tensor<2x2xf64>) -> tensor<2xf64> attributes {impure}

  // CHECK: llvm.mlir.global internal constant @__lamina_constant(dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>) {addr_space = 0 : i32} : !llvm.array<4 x f32>
}
