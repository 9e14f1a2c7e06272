// plan-memory{report=true} reports each host function's planned peak bytes
// per device as a remark at the function, so --verify-diagnostics can match
// it (and the module still prints: a remark does not stop compilation).
// RUN: lamina-opt %s -p 'legalize,lower-te,plan-memory{report=true}' --verify-diagnostics | filecheck %s

builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  // expected-remark @below {{plan-memory: @main: peak bytes per device: cpu:0 = 128 B}}
  graph.func @main(%x: tensor<16xf32>) -> tensor<16xf32> {
    %a = graph.exp %x : (tensor<16xf32>) -> tensor<16xf32>
    %b = graph.neg %a : (tensor<16xf32>) -> tensor<16xf32>
    %c = graph.tanh %b : (tensor<16xf32>) -> tensor<16xf32>
    graph.return %c : tensor<16xf32>
  }
}

// Two 64-byte temporaries (%a, %b) live at once: 128 bytes.
// CHECK: remark: plan-memory: @main
// CHECK: graph.func @main
