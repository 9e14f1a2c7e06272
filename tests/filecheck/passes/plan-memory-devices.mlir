// plan-memory plans one pool per device: buffers of one type on two devices
// are never shared, even when their lifetimes do not overlap; report=true
// prints each host function's planned peak bytes per device.
// RUN: lamina-opt %s -p 'legalize,lower-te,plan-memory{report=true}' 2>&1 | filecheck %s
// RUN: lamina-opt %s -p 'legalize,lower-te,plan-memory,lower-graph' | filecheck %s --check-prefix=LOOP

builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @main(%x: tensor<16xf32> {device = #lamina.device<"cpu", 0>}) -> (tensor<16xf32> {device = #lamina.device<"cpu", 0>}) {
    %a = graph.exp %x {device = #lamina.device<"cpu", 0>} : (tensor<16xf32>) -> tensor<16xf32>
    %a1 = graph.device_copy %a {src = #lamina.device<"cpu", 0>, dst = #lamina.device<"cpu", 1>, device = #lamina.device<"cpu", 1>} : (tensor<16xf32>) -> tensor<16xf32>
    %b = graph.neg %a1 {device = #lamina.device<"cpu", 1>} : (tensor<16xf32>) -> tensor<16xf32>
    %c = graph.relu %b {device = #lamina.device<"cpu", 1>} : (tensor<16xf32>) -> tensor<16xf32>
    %c0 = graph.device_copy %c {src = #lamina.device<"cpu", 1>, dst = #lamina.device<"cpu", 0>, device = #lamina.device<"cpu", 0>} : (tensor<16xf32>) -> tensor<16xf32>
    %d = graph.tanh %c0 {device = #lamina.device<"cpu", 0>} : (tensor<16xf32>) -> tensor<16xf32>
    graph.return %d : tensor<16xf32>
  }
}
// CHECK: plan-memory-devices.mlir:8:3: remark: plan-memory: @main: peak bytes per device: cpu:0 = 64 B, cpu:1 = 128 B

// %a (cpu:0) is dead once copied, and %c0 (cpu:0) reuses its buffer; on
// cpu:1, %a1 is dead after the neg but %c needs a buffer while %b is live,
// so %c takes %a1's: two buffers on cpu:1, one on cpu:0, none shared across.
// LOOP-LABEL: loop.func @main(
// LOOP-NEXT:    %[[A:.*]] = loop.alloc {device = #lamina.device<"cpu", 0>} : memref<16xf32>
// LOOP-NEXT:    loop.call @{{.*}}(%{{.*}}, %[[A]])
// LOOP-NEXT:    %[[A1:.*]] = loop.alloc {device = #lamina.device<"cpu", 1>} : memref<16xf32>
// LOOP-NEXT:    loop.copy %[[A]], %[[A1]] {src = #lamina.device<"cpu", 0>, dst = #lamina.device<"cpu", 1>}
// LOOP-NEXT:    %[[B:.*]] = loop.alloc {device = #lamina.device<"cpu", 1>} : memref<16xf32>
// LOOP-NEXT:    loop.call @{{.*}}(%[[A1]], %[[B]])
// LOOP-NEXT:    loop.call @{{.*}}(%[[B]], %[[A1]])
// LOOP-NEXT:    loop.free %[[B]]
// LOOP-NEXT:    loop.copy %[[A1]], %[[A]] {src = #lamina.device<"cpu", 1>, dst = #lamina.device<"cpu", 0>}
