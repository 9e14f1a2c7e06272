// Planning a planned module changes nothing (text-equal), on every case of
// the positive tests; re-planning the printed text gives the same text too.
// RUN: lamina-opt %S/plan-devices.mlir --split-input-file -p plan-devices -o %t.once
// RUN: lamina-opt %S/plan-devices.mlir --split-input-file -p plan-devices,plan-devices -o %t.twice
// RUN: diff %t.once %t.twice
// RUN: lamina-opt %S/plan-devices-calls.mlir --split-input-file -p plan-devices -o %t.calls.once
// RUN: lamina-opt %S/plan-devices-calls.mlir --split-input-file -p plan-devices,plan-devices -o %t.calls.twice
// RUN: diff %t.calls.once %t.calls.twice
// RUN: lamina-opt %s -p plan-devices -o %t.here
// RUN: lamina-opt %t.here -p plan-devices | filecheck %s

// Re-running after a later rewrite refines: the planned chain keeps its
// devices and copy; an op added without `device` (here, the neg) is placed
// by the same rules (where its first consumer runs, cpu:1) and reuses the
// copy of %x already there instead of making a second one.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @refine(%x: tensor<4xf32> {device = #lamina.device<"cpu", 0>}) -> (tensor<4xf32> {device = #lamina.device<"cpu", 1>}) {
    %x_1 = graph.device_copy %x {src = #lamina.device<"cpu", 0>, dst = #lamina.device<"cpu", 1>, device = #lamina.device<"cpu", 1>} : (tensor<4xf32>) -> tensor<4xf32>
    %a = graph.exp %x_1 {device = #lamina.device<"cpu", 1>} : (tensor<4xf32>) -> tensor<4xf32>
    %n = graph.neg %x : (tensor<4xf32>) -> tensor<4xf32>
    %b = graph.add %a, %n {device = #lamina.device<"cpu", 1>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    graph.return {device = #lamina.device<"cpu", 1>} %b : tensor<4xf32>
  }
}
// CHECK-LABEL: graph.func @refine(
// CHECK-NEXT:    %[[X1:.*]] = graph.device_copy %[[X:[a-z0-9_]+]] {src = #lamina.device<"cpu", 0>, dst = #lamina.device<"cpu", 1>
// CHECK-NEXT:    %[[A:.*]] = graph.exp %[[X1]] {device = #lamina.device<"cpu", 1>}
// CHECK-NEXT:    %[[N:.*]] = graph.neg %[[X1]] {device = #lamina.device<"cpu", 1>}
// CHECK-NEXT:    graph.add %[[A]], %[[N]] {device = #lamina.device<"cpu", 1>}
