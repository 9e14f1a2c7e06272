// RUN: lamina-opt %s --split-input-file -p canonicalize | filecheck %s

// Dead side-effect-free ops are removed; calls with effects are kept.
builtin.module {
  graph.func @dead(%x: tensor<4xf32>) -> tensor<4xf32> attributes {impure} {
    %a = graph.exp %x : (tensor<4xf32>) -> tensor<4xf32>
    %c = graph.constant dense<2.0> : tensor<4xf32>
    %p = graph.call_extern "pure_ext"(%x) {pure} : (tensor<4xf32>) -> tensor<4xf32>
    %i = graph.call_extern "print"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %r = graph.sqrt %x : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %r : tensor<4xf32>
  }
}
// CHECK-LABEL: graph.func @dead(
// CHECK-SAME:      %[[X:[^:]*]]: tensor<4xf32>)
// CHECK-NEXT:    graph.call_extern "print"(%[[X]])
// CHECK-NEXT:    %[[R:.*]] = graph.sqrt %[[X]]
// CHECK-NEXT:    graph.return %[[R]]

// -----

// Upstream canonicalization patterns and folders apply (here arith, as in loop bodies),
// in any phase.
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @fold(%m: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %i = arith.addi %c1, %c2 : index
    %zero = arith.constant 0 : index
    %j = arith.addi %i, %zero : index
    %v = arith.constant 1.0 : f32
    loop.store %v, %m[%j] : memref<4xf32>
    loop.return
  }
}
// CHECK:       builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
// CHECK-LABEL: loop.func @fold(
// CHECK-SAME:      %[[M:[^:]*]]: memref<4xf32>)
// CHECK-DAG:     %[[C3:.*]] = arith.constant 3 : index
// CHECK-DAG:     %[[V:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NOT:     arith.addi
// CHECK:         loop.store %[[V]], %[[M]][%[[C3]]]
