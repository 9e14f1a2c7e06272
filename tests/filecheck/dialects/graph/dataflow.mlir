// RUN: lamina-opt %s | lamina-opt | filecheck %s
// RUN: lamina-opt %s --print-op-generic | lamina-opt | filecheck %s

// graph.dataflow / graph.output and graph.constant.

// CHECK-LABEL: graph.func @constants() -> (tensor<4xf32>, tensor<2x2xi32>, tensor<3xf64>, tensor<i64>) {
// CHECK-NEXT:  %a = graph.constant dense<1.000000e+00> : tensor<4xf32>
// CHECK-NEXT:  %b = graph.constant dense<{{\[\[}}1, 2], [3, 4{{\]\]}}> : tensor<2x2xi32>
// CHECK-NEXT:  %c = graph.constant {device = #lamina.device<"cpu", 0>} dense<[5.000000e-01, -1.500000e+00, 2.000000e+00]> : tensor<3xf64>
// CHECK-NEXT:  %d = graph.constant dense<7> : tensor<i64>
// CHECK-NEXT:  graph.return %a, %b, %c, %d : tensor<4xf32>, tensor<2x2xi32>, tensor<3xf64>, tensor<i64>
graph.func @constants() -> (tensor<4xf32>, tensor<2x2xi32>, tensor<3xf64>, tensor<i64>) {
  %a = graph.constant dense<1.0> : tensor<4xf32>
  %b = graph.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>
  %c = graph.constant {device = #lamina.device<"cpu", 0>} dense<[0.5, -1.5, 2.0]> : tensor<3xf64>
  %d = graph.constant dense<7> : tensor<i64>
  graph.return %a, %b, %c, %d : tensor<4xf32>, tensor<2x2xi32>, tensor<3xf64>, tensor<i64>
}

// CHECK-LABEL: graph.func @single_result(%x: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:  %r = graph.dataflow -> tensor<4xf32> {
// CHECK-NEXT:  %e = graph.exp %x : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:  %s = graph.add %e, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:  graph.output %s : tensor<4xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  graph.return %r : tensor<4xf32>
graph.func @single_result(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = graph.dataflow -> tensor<4xf32> {
    %e = graph.exp %x : (tensor<4xf32>) -> tensor<4xf32>
    %s = graph.add %e, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    graph.output %s : tensor<4xf32>
  }
  graph.return %r : tensor<4xf32>
}

// CHECK-LABEL: graph.func @multiple_results(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<3x2xf32>) {
// CHECK-NEXT:  %a, %b = graph.dataflow -> (tensor<2x3xf32>, tensor<3x2xf32>) attributes {device = #lamina.device<"cpu", 0>} {
// CHECK-NEXT:  %n = graph.neg %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  %t = graph.transpose %n {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
// CHECK-NEXT:  graph.output {device = #lamina.device<"cpu", 0>} %n, %t : tensor<2x3xf32>, tensor<3x2xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  graph.return {device = #lamina.device<"cpu", 0>} %a, %b : tensor<2x3xf32>, tensor<3x2xf32>
graph.func @multiple_results(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<3x2xf32>) {
  %a, %b = graph.dataflow -> (tensor<2x3xf32>, tensor<3x2xf32>) attributes {device = #lamina.device<"cpu", 0>} {
    %n = graph.neg %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %t = graph.transpose %n {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
    graph.output {device = #lamina.device<"cpu", 0>} %n, %t : tensor<2x3xf32>, tensor<3x2xf32>
  }
  graph.return {device = #lamina.device<"cpu", 0>} %a, %b : tensor<2x3xf32>, tensor<3x2xf32>
}

// CHECK-LABEL: graph.func @no_results(%x: tensor<4xf32>) {
// CHECK-NEXT:  graph.dataflow {
// CHECK-NEXT:  graph.output
// CHECK-NEXT:  }
// CHECK-NEXT:  graph.return
graph.func @no_results(%x: tensor<4xf32>) {
  graph.dataflow {
    graph.output
  }
  graph.return
}

// CHECK-LABEL: graph.func @nested_in_lambda(%x: tensor<4xf32>) -> !graph.fn<(tensor<4xf32>) -> tensor<4xf32>> {
// CHECK-NEXT:  %f = graph.lambda (%y: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:  %r = graph.dataflow -> tensor<4xf32> {
// CHECK-NEXT:  %s = graph.mul %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:  graph.output %s : tensor<4xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  graph.return %r : tensor<4xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  graph.return %f : !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>
graph.func @nested_in_lambda(%x: tensor<4xf32>) -> !graph.fn<(tensor<4xf32>) -> tensor<4xf32>> {
  %f = graph.lambda (%y: tensor<4xf32>) -> tensor<4xf32> {
    %r = graph.dataflow -> tensor<4xf32> {
      %s = graph.mul %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      graph.output %s : tensor<4xf32>
    }
    graph.return %r : tensor<4xf32>
  }
  graph.return %f : !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>
}
