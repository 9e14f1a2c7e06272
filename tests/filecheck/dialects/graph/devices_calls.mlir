// RUN: lamina-opt %s | lamina-opt | filecheck %s
// RUN: lamina-opt %s --print-op-generic | lamina-opt | filecheck %s

// graph.on_device, graph.device_copy, `device` on ops, graph.call_te,
// graph.call_loop and graph.call_extern.

// CHECK-LABEL: graph.func @devices(%x: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:  %0 = graph.on_device %x {device = #lamina.device<"gpu", 0>} : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:  %1 = graph.exp %0 {device = #lamina.device<"gpu", 0>} : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:  %2 = graph.device_copy %1 {src = #lamina.device<"gpu", 0>, dst = #lamina.device<"cpu", 0>, device = #lamina.device<"cpu", 0>} : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:  %3 = graph.on_device %2 {device = #lamina.device<"cpu", 0, "local">} : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:  graph.return %3 : tensor<4xf32>
graph.func @devices(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.on_device %x {device = #lamina.device<"gpu", 0>} : (tensor<4xf32>) -> tensor<4xf32>
  %1 = graph.exp %0 {device = #lamina.device<"gpu", 0>} : (tensor<4xf32>) -> tensor<4xf32>
  %2 = graph.device_copy %1 {src = #lamina.device<"gpu", 0>, dst = #lamina.device<"cpu", 0>, device = #lamina.device<"cpu", 0>} : (tensor<4xf32>) -> tensor<4xf32>
  %3 = graph.on_device %2 {device = #lamina.device<"cpu", 0, "local">} : (tensor<4xf32>) -> tensor<4xf32>
  graph.return %3 : tensor<4xf32>
}

// CHECK-LABEL: loop.func @add_kernel(%a: memref<4xf32>, %b: memref<4xf32>, %out: memref<4xf32>) {
// CHECK-NEXT:  loop.return
loop.func @add_kernel(%a: memref<4xf32>, %b: memref<4xf32>, %out: memref<4xf32>) {
  loop.return
}

// CHECK-LABEL: te.func @add_te(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:  %c = te.compute [4] (%i) {
// CHECK-NEXT:  %x = te.read %a[%i] : tensor<4xf32>
// CHECK-NEXT:  %y = te.read %b[%i] : tensor<4xf32>
// CHECK-NEXT:  %s = arith.addf %x, %y : f32
// CHECK-NEXT:  te.yield %s : f32
// CHECK-NEXT:  } : tensor<4xf32>
// CHECK-NEXT:  te.return %c : tensor<4xf32>
te.func @add_te(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %c = te.compute [4] (%i) {
    %x = te.read %a[%i] : tensor<4xf32>
    %y = te.read %b[%i] : tensor<4xf32>
    %s = arith.addf %x, %y : f32
    te.yield %s : f32
  } : tensor<4xf32>
  te.return %c : tensor<4xf32>
}

// CHECK-LABEL: graph.func @kernel_calls(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4x4xf32> {
// CHECK-NEXT:  %t = graph.call_te @add_te(%a, %b) {device = #lamina.device<"cpu", 0>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:  %0 = graph.call_loop @add_kernel(%t, %b) {device = #lamina.device<"cpu", 0>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:  %1 = graph.call_extern "lamina_outer"(%0, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4x4xf32>
// CHECK-NEXT:  %2 = graph.call_extern "cblas_sgemm"(%1, %1) {pure, device = #lamina.device<"cpu", 0>} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK-NEXT:  graph.return %2 : tensor<4x4xf32>
graph.func @kernel_calls(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4x4xf32> {
  %t = graph.call_te @add_te(%a, %b) {device = #lamina.device<"cpu", 0>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %0 = graph.call_loop @add_kernel(%t, %b) {device = #lamina.device<"cpu", 0>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = graph.call_extern "lamina_outer"(%0, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4x4xf32>
  %2 = graph.call_extern "cblas_sgemm"(%1, %1) {pure, device = #lamina.device<"cpu", 0>} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  graph.return %2 : tensor<4x4xf32>
}
