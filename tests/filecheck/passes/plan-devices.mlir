// RUN: lamina-opt %s --split-input-file -p plan-devices | filecheck %s
// RUN: lamina-opt %s --split-input-file -p plan-devices,verify-phase | filecheck %s

// A straight-line chain: one annotation places the whole chain. %x is first
// consumed on cpu:1, so it lives there; the unannotated exp runs where its
// operand lives; the result goes where the returned value lives. No copy.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @chain(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = graph.relu %x : (tensor<4xf32>) -> tensor<4xf32>
    %b = graph.on_device %a {device = #lamina.device<"cpu", 1>} : (tensor<4xf32>) -> tensor<4xf32>
    %c = graph.exp %b : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %c : tensor<4xf32>
  }
}
// CHECK-LABEL: graph.func @chain(
// CHECK-SAME:      %[[X:.*]]: tensor<4xf32> {device = #lamina.device<"cpu", 1>}) -> (tensor<4xf32> {device = #lamina.device<"cpu", 1>}) {
// CHECK-NEXT:    %[[A:.*]] = graph.relu %[[X]] {device = #lamina.device<"cpu", 1>}
// CHECK-NEXT:    %[[C:.*]] = graph.exp %[[A]] {device = #lamina.device<"cpu", 1>}
// CHECK-NEXT:    graph.return {device = #lamina.device<"cpu", 1>} %[[C]]
// CHECK-NOT:   graph.on_device
// CHECK-NOT:   graph.device_copy

// -----

// No annotation at all: everything goes on lamina.default_device.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>, lamina.default_device = #lamina.device<"cpu", 2>} {
  graph.func @free(%x: tensor<4xf32>) -> tensor<4xf32> {
    %c = graph.constant dense<1.0> : tensor<4xf32>
    %a = graph.add %x, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    graph.return %a : tensor<4xf32>
  }
}
// CHECK-LABEL: graph.func @free(
// CHECK-SAME:      {device = #lamina.device<"cpu", 2>}) -> (tensor<4xf32> {device = #lamina.device<"cpu", 2>})
// CHECK-NEXT:    graph.constant {{.*}}device = #lamina.device<"cpu", 2>
// CHECK-NEXT:    graph.add {{.*}} {device = #lamina.device<"cpu", 2>}
// CHECK-NOT:   graph.device_copy

// -----

// (a+b)*(b+c) with %b feeding two devices: %b lives where it is first
// consumed (cpu:1) and is copied once to cpu:0; the mul runs where its first
// operand lives (cpu:1), so %s2 is copied once to cpu:1. Two copies, each
// right after its value's producer.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @diamond(%a: tensor<4xf32>, %b: tensor<4xf32>, %c: tensor<4xf32>) -> tensor<4xf32> {
    %s1 = graph.add %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %t1 = graph.on_device %s1 {device = #lamina.device<"cpu", 1>} : (tensor<4xf32>) -> tensor<4xf32>
    %s2 = graph.add %b, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %t2 = graph.on_device %s2 {device = #lamina.device<"cpu", 0>} : (tensor<4xf32>) -> tensor<4xf32>
    %m = graph.mul %t1, %t2 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    graph.return %m : tensor<4xf32>
  }
}
// CHECK-LABEL: graph.func @diamond(
// CHECK-SAME:      %[[A:[a-z0-9_]+]]: tensor<4xf32> {device = #lamina.device<"cpu", 1>}, %[[B:[a-z0-9_]+]]: tensor<4xf32> {device = #lamina.device<"cpu", 1>}, %[[C:[a-z0-9_]+]]: tensor<4xf32> {device = #lamina.device<"cpu", 0>})
// CHECK-NEXT:    %[[B0:.*]] = graph.device_copy %[[B]] {src = #lamina.device<"cpu", 1>, dst = #lamina.device<"cpu", 0>, device = #lamina.device<"cpu", 0>}
// CHECK-NEXT:    %[[S1:.*]] = graph.add %[[A]], %[[B]] {device = #lamina.device<"cpu", 1>}
// CHECK-NEXT:    %[[S2:.*]] = graph.add %[[B0]], %[[C]] {device = #lamina.device<"cpu", 0>}
// CHECK-NEXT:    %[[S21:.*]] = graph.device_copy %[[S2]] {src = #lamina.device<"cpu", 0>, dst = #lamina.device<"cpu", 1>, device = #lamina.device<"cpu", 1>}
// CHECK-NEXT:    %[[M:.*]] = graph.mul %[[S1]], %[[S21]] {device = #lamina.device<"cpu", 1>}
// CHECK-NEXT:    graph.return {device = #lamina.device<"cpu", 1>} %[[M]]

// -----

// One value used by three ops on cpu:1: one copy, shared by all three uses.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @fanout(%x: tensor<4xf32> {device = #lamina.device<"cpu", 0>}) -> (tensor<4xf32> {device = #lamina.device<"cpu", 1>}) {
    %a = graph.exp %x {device = #lamina.device<"cpu", 1>} : (tensor<4xf32>) -> tensor<4xf32>
    %b = graph.neg %x {device = #lamina.device<"cpu", 1>} : (tensor<4xf32>) -> tensor<4xf32>
    %c = graph.add %a, %x {device = #lamina.device<"cpu", 1>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %d = graph.add %b, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    graph.return %d : tensor<4xf32>
  }
}
// CHECK-LABEL: graph.func @fanout(
// CHECK-NEXT:    %[[X1:.*]] = graph.device_copy %{{.*}} {src = #lamina.device<"cpu", 0>, dst = #lamina.device<"cpu", 1>
// CHECK-NEXT:    %[[A:.*]] = graph.exp %[[X1]]
// CHECK-NEXT:    %[[B:.*]] = graph.neg %[[X1]]
// CHECK-NEXT:    graph.add %[[A]], %[[X1]]
// CHECK-NOT:     graph.device_copy
// CHECK:         graph.return

// -----

// An explicit device_copy is a constraint on both sides and is kept.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @explicit(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = graph.relu %x : (tensor<4xf32>) -> tensor<4xf32>
    %b = graph.device_copy %a {src = #lamina.device<"gpu", 0>, dst = #lamina.device<"cpu", 0>} : (tensor<4xf32>) -> tensor<4xf32>
    %c = graph.exp %b : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %c : tensor<4xf32>
  }
}
// CHECK-LABEL: graph.func @explicit(
// CHECK-SAME:      {device = #lamina.device<"gpu", 0>}) -> (tensor<4xf32> {device = #lamina.device<"cpu", 0>})
// CHECK-NEXT:    %[[A:.*]] = graph.relu %{{.*}} {device = #lamina.device<"gpu", 0>}
// CHECK-NEXT:    %[[B:.*]] = graph.device_copy %[[A]] {src = #lamina.device<"gpu", 0>, dst = #lamina.device<"cpu", 0>, device = #lamina.device<"cpu", 0>}
// CHECK-NEXT:    graph.exp %[[B]] {device = #lamina.device<"cpu", 0>}

// -----

// A dataflow block: its ops are planned like any others; the block's results
// are its graph.output operands, and the block reports its first result's device.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @dataflow(%x: tensor<4xf32>) -> tensor<4xf32> {
    %r = graph.dataflow -> tensor<4xf32> {
      %a = graph.exp %x {device = #lamina.device<"cpu", 1>} : (tensor<4xf32>) -> tensor<4xf32>
      %b = graph.neg %a {device = #lamina.device<"cpu", 0>} : (tensor<4xf32>) -> tensor<4xf32>
      graph.output %b : tensor<4xf32>
    }
    %s = graph.relu %r : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %s : tensor<4xf32>
  }
}
// CHECK-LABEL: graph.func @dataflow(
// CHECK-SAME:      {device = #lamina.device<"cpu", 1>}) -> (tensor<4xf32> {device = #lamina.device<"cpu", 0>})
// CHECK-NEXT:    %[[R:.*]] = graph.dataflow -> tensor<4xf32> attributes {device = #lamina.device<"cpu", 0>} {
// CHECK-NEXT:      %[[A:.*]] = graph.exp %{{.*}} {device = #lamina.device<"cpu", 1>}
// CHECK-NEXT:      %[[A0:.*]] = graph.device_copy %[[A]] {src = #lamina.device<"cpu", 1>, dst = #lamina.device<"cpu", 0>
// CHECK-NEXT:      %[[B:.*]] = graph.neg %[[A0]] {device = #lamina.device<"cpu", 0>}
// CHECK-NEXT:      graph.output {device = #lamina.device<"cpu", 0>} %[[B]]
// CHECK-NEXT:    }
// CHECK-NEXT:    graph.relu %[[R]] {device = #lamina.device<"cpu", 0>}

// -----

// The fewest copies over the whole function, not the first consumer: the
// returned value's device (cpu:0) would pull both adds to cpu:0 and copy the
// three call results there (four copies with %b's). Running the adds on
// cpu:1, next to the call results, needs two: %b in, the sum out. The free
// %a lives on cpu:1 where the callee reads it.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @on_1(%x: tensor<4xf32> {device = #lamina.device<"cpu", 1>}) -> (tensor<4xf32> {device = #lamina.device<"cpu", 1>}) {
    graph.return %x : tensor<4xf32>
  }
  graph.func @fewest(%a: tensor<4xf32>, %b: tensor<4xf32> {device = #lamina.device<"cpu", 0>}, %c: tensor<4xf32> {device = #lamina.device<"cpu", 1>}) -> (tensor<4xf32> {device = #lamina.device<"cpu", 0>}) {
    %0 = graph.call @on_1(%a) : (tensor<4xf32>) -> tensor<4xf32>
    %1 = graph.call @on_1(%b) : (tensor<4xf32>) -> tensor<4xf32>
    %2 = graph.call @on_1(%c) : (tensor<4xf32>) -> tensor<4xf32>
    %3 = graph.add %0, %1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %4 = graph.add %3, %2 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    graph.return %4 : tensor<4xf32>
  }
}
// CHECK-LABEL: graph.func @fewest(
// CHECK-SAME:      %[[A:[a-z0-9_]+]]: tensor<4xf32> {device = #lamina.device<"cpu", 1>}, %[[B:[a-z0-9_]+]]: tensor<4xf32> {device = #lamina.device<"cpu", 0>}, %[[C:[a-z0-9_]+]]: tensor<4xf32> {device = #lamina.device<"cpu", 1>})
// CHECK-NEXT:    %[[B1:.*]] = graph.device_copy %[[B]] {src = #lamina.device<"cpu", 0>, dst = #lamina.device<"cpu", 1>, device = #lamina.device<"cpu", 1>}
// CHECK-NEXT:    %[[R0:.*]] = graph.call @on_1(%[[A]]) {device = #lamina.device<"cpu", 1>}
// CHECK-NEXT:    %[[R1:.*]] = graph.call @on_1(%[[B1]]) {device = #lamina.device<"cpu", 1>}
// CHECK-NEXT:    %[[R2:.*]] = graph.call @on_1(%[[C]]) {device = #lamina.device<"cpu", 1>}
// CHECK-NEXT:    %[[S:.*]] = graph.add %[[R0]], %[[R1]] {device = #lamina.device<"cpu", 1>}
// CHECK-NEXT:    %[[T:.*]] = graph.add %[[S]], %[[R2]] {device = #lamina.device<"cpu", 1>}
// CHECK-NEXT:    %[[T0:.*]] = graph.device_copy %[[T]] {src = #lamina.device<"cpu", 1>, dst = #lamina.device<"cpu", 0>, device = #lamina.device<"cpu", 0>}
// CHECK-NEXT:    graph.return {device = #lamina.device<"cpu", 0>} %[[T0]]
// CHECK-NOT:   graph.device_copy
