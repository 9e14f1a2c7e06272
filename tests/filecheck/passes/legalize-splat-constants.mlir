// RUN: lamina-opt %s -p legalize | filecheck %s
// RUN: lamina-opt %s -p fuse-ops,legalize | filecheck %s --check-prefix=FUSED

// A float constant of one element (ONNX's Clip bounds, relu6's 0 and 6; or
// a splat stored as one element) is read by the kernel as a literal, not
// passed: the clamp then compiles to one `maxps`/`minps` by a constant
// (`lower-to-llvm`'s clamps as selects) instead of loading the bound and
// checking it for NaN per element. The value is part of the kernel's key:
// clamps by 6 and by 5 get two kernels, the second clamp by 6 shares the
// first's. Constants of several distinct elements stay parameters.

builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {

  // CHECK-LABEL: graph.func @clamps(
  // CHECK:         %[[A:.*]] = graph.call_te @te_minimum_2x8xf32(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT:    %[[B:.*]] = graph.call_te @te_minimum_2x8xf32_1(%[[A]]) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT:    %[[C:.*]] = graph.call_te @te_minimum_2x8xf32(%[[B]]) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT:    %[[D:.*]] = graph.call_te @te_add_2x8xf32(%[[C]], %{{.*}}) : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT:    graph.return %[[D]]
  graph.func @clamps(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
    %six = graph.constant dense<6.0> : tensor<f32>
    %five = graph.constant dense<5.0> : tensor<1x1xf32>
    %ramp = graph.constant dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]> : tensor<8xf32>
    %a = graph.minimum %x, %six : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
    %b = graph.minimum %a, %five : (tensor<2x8xf32>, tensor<1x1xf32>) -> tensor<2x8xf32>
    %c = graph.minimum %b, %six : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
    %d = graph.add %c, %ramp : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
    graph.return %d : tensor<2x8xf32>
  }

  // A fused clamp (relu6): both bounds are literals of the one kernel.
  // FUSED-LABEL: graph.func @relu6(
  // FUSED:         graph.call_te @te_fused_maximum_minimum_2x8xf32(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  graph.func @relu6(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
    %zero = graph.constant dense<0.0> : tensor<f32>
    %six = graph.constant dense<6.0> : tensor<f32>
    %a = graph.maximum %x, %zero : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
    %b = graph.minimum %a, %six : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
    graph.return %b : tensor<2x8xf32>
  }
}

// CHECK-LABEL: te.func private @te_minimum_2x8xf32(
// CHECK-SAME:    %{{.*}}: tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK:         arith.constant 6.000000e+00 : f32
// CHECK-LABEL: te.func private @te_minimum_2x8xf32_1(
// CHECK:         arith.constant 5.000000e+00 : f32
// CHECK-LABEL: te.func private @te_add_2x8xf32(
// CHECK-SAME:    tensor<2x8xf32>, %{{.*}}: tensor<8xf32>)

// FUSED-LABEL: te.func private @te_fused_maximum_minimum_2x8xf32(
// FUSED-SAME:    %{{.*}}: tensor<2x8xf32>) -> tensor<2x8xf32>
// FUSED-DAG:     arith.constant 0.000000e+00 : f32
// FUSED-DAG:     arith.constant 6.000000e+00 : f32
