// RUN: lamina-opt %s | lamina-opt | filecheck %s
// RUN: lamina-opt %s --print-op-generic | lamina-opt | filecheck %s

// Binary ops with NumPy broadcasting and every unary op.

// CHECK-LABEL: graph.func @binary(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %c: tensor<2x1xf32>, %s: tensor<f32>) -> tensor<2x3xf32> {
// CHECK-NEXT:  %0 = graph.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  %1 = graph.sub %0, %c : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  %2 = graph.mul %1, %s : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
// CHECK-NEXT:  %3 = graph.div %b, %c : (tensor<3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  %4 = graph.maximum %2, %3 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  %5 = graph.minimum %4, %s {device = #lamina.device<"cpu", 0>} : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
// CHECK-NEXT:  graph.return %5 : tensor<2x3xf32>
graph.func @binary(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %c: tensor<2x1xf32>, %s: tensor<f32>) -> tensor<2x3xf32> {
  %0 = graph.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = graph.sub %0, %c : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  %2 = graph.mul %1, %s : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %3 = graph.div %b, %c : (tensor<3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  %4 = graph.maximum %2, %3 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %5 = graph.minimum %4, %s {device = #lamina.device<"cpu", 0>} : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  graph.return %5 : tensor<2x3xf32>
}

// CHECK-LABEL: graph.func @binary_int(%a: tensor<4x1x5xi32>, %b: tensor<3x1xi32>) -> tensor<4x3x5xi32> {
// CHECK-NEXT:  %0 = graph.add %a, %b : (tensor<4x1x5xi32>, tensor<3x1xi32>) -> tensor<4x3x5xi32>
// CHECK-NEXT:  graph.return %0 : tensor<4x3x5xi32>
graph.func @binary_int(%a: tensor<4x1x5xi32>, %b: tensor<3x1xi32>) -> tensor<4x3x5xi32> {
  %0 = graph.add %a, %b : (tensor<4x1x5xi32>, tensor<3x1xi32>) -> tensor<4x3x5xi32>
  graph.return %0 : tensor<4x3x5xi32>
}

// CHECK-LABEL: graph.func @unary(%x: tensor<8xf32>) -> tensor<8xf32> {
// CHECK-NEXT:  %0 = graph.neg %x : (tensor<8xf32>) -> tensor<8xf32>
// CHECK-NEXT:  %1 = graph.exp %0 : (tensor<8xf32>) -> tensor<8xf32>
// CHECK-NEXT:  %2 = graph.log %1 : (tensor<8xf32>) -> tensor<8xf32>
// CHECK-NEXT:  %3 = graph.sqrt %2 : (tensor<8xf32>) -> tensor<8xf32>
// CHECK-NEXT:  %4 = graph.rsqrt %3 : (tensor<8xf32>) -> tensor<8xf32>
// CHECK-NEXT:  %5 = graph.tanh %4 : (tensor<8xf32>) -> tensor<8xf32>
// CHECK-NEXT:  %6 = graph.sigmoid %5 : (tensor<8xf32>) -> tensor<8xf32>
// CHECK-NEXT:  %7 = graph.erf %6 : (tensor<8xf32>) -> tensor<8xf32>
// CHECK-NEXT:  %8 = graph.relu %7 : (tensor<8xf32>) -> tensor<8xf32>
// CHECK-NEXT:  %9 = graph.gelu %8 : (tensor<8xf32>) -> tensor<8xf32>
// CHECK-NEXT:  %10 = graph.gelu %9 {approximate = "tanh"} : (tensor<8xf32>) -> tensor<8xf32>
// CHECK-NEXT:  %11 = graph.gelu %10 {approximate = "none"} : (tensor<8xf32>) -> tensor<8xf32>
// CHECK-NEXT:  graph.return %11 : tensor<8xf32>
graph.func @unary(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = graph.neg %x : (tensor<8xf32>) -> tensor<8xf32>
  %1 = graph.exp %0 : (tensor<8xf32>) -> tensor<8xf32>
  %2 = graph.log %1 : (tensor<8xf32>) -> tensor<8xf32>
  %3 = graph.sqrt %2 : (tensor<8xf32>) -> tensor<8xf32>
  %4 = graph.rsqrt %3 : (tensor<8xf32>) -> tensor<8xf32>
  %5 = graph.tanh %4 : (tensor<8xf32>) -> tensor<8xf32>
  %6 = graph.sigmoid %5 : (tensor<8xf32>) -> tensor<8xf32>
  %7 = graph.erf %6 : (tensor<8xf32>) -> tensor<8xf32>
  %8 = graph.relu %7 : (tensor<8xf32>) -> tensor<8xf32>
  %9 = graph.gelu %8 : (tensor<8xf32>) -> tensor<8xf32>
  %10 = graph.gelu %9 {approximate = "tanh"} : (tensor<8xf32>) -> tensor<8xf32>
  %11 = graph.gelu %10 {approximate = "none"} : (tensor<8xf32>) -> tensor<8xf32>
  graph.return %11 : tensor<8xf32>
}

// CHECK-LABEL: graph.func @unary_int(%x: tensor<8xi32>) -> tensor<8xi32> {
// CHECK-NEXT:  %0 = graph.neg %x : (tensor<8xi32>) -> tensor<8xi32>
// CHECK-NEXT:  %1 = graph.relu %0 : (tensor<8xi32>) -> tensor<8xi32>
// CHECK-NEXT:  graph.return %1 : tensor<8xi32>
graph.func @unary_int(%x: tensor<8xi32>) -> tensor<8xi32> {
  %0 = graph.neg %x : (tensor<8xi32>) -> tensor<8xi32>
  %1 = graph.relu %0 : (tensor<8xi32>) -> tensor<8xi32>
  graph.return %1 : tensor<8xi32>
}

// Comparisons to i1 (every predicate, broadcasting, integer and i1 operands), pow, and
// reduce_min beside reduce_max.

// CHECK-LABEL: graph.func @compare_pow(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %i: tensor<4xi64>, %m: tensor<4xi1>) -> tensor<2x3xf32> {
// CHECK-NEXT:  %0 = graph.compare %a, %b {predicate = "eq"} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
// CHECK-NEXT:  %1 = graph.compare %a, %b {predicate = "ne"} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
// CHECK-NEXT:  %2 = graph.compare %a, %b {predicate = "lt"} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
// CHECK-NEXT:  %3 = graph.compare %i, %i {predicate = "le"} : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi1>
// CHECK-NEXT:  %4 = graph.compare %m, %m {predicate = "gt"} : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
// CHECK-NEXT:  %5 = graph.compare %a, %a {predicate = "ge", device = #lamina.device<"cpu", 0>} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
// CHECK-NEXT:  %6 = graph.pow %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  %7 = graph.reduce_min %6 {axes = array<i64: 1>, keepdims} : (tensor<2x3xf32>) -> tensor<2x1xf32>
// CHECK-NEXT:  %8 = graph.where %2, %6, %7 : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  graph.return %8 : tensor<2x3xf32>
graph.func @compare_pow(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %i: tensor<4xi64>, %m: tensor<4xi1>) -> tensor<2x3xf32> {
  %0 = graph.compare %a, %b {predicate = "eq"} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %1 = graph.compare %a, %b {predicate = "ne"} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %2 = graph.compare %a, %b {predicate = "lt"} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %3 = graph.compare %i, %i {predicate = "le"} : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi1>
  %4 = graph.compare %m, %m {predicate = "gt"} : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  %5 = graph.compare %a, %a {predicate = "ge", device = #lamina.device<"cpu", 0>} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  %6 = graph.pow %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %7 = graph.reduce_min %6 {axes = array<i64: 1>, keepdims} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  %8 = graph.where %2, %6, %7 : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  graph.return %8 : tensor<2x3xf32>
}
