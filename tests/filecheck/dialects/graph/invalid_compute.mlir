// RUN: lamina-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Verifier errors of the compute ops (shapes, element types, attributes).
// One chunk per rule.

graph.func @f(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) {
  // expected-error @+1 {{operands are not broadcast-compatible: 2x3 vs 4x3 (dim 0: 2 vs 4)}}
  %0 = graph.add %a, %b : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  graph.return
}

// CHECK: operands are not broadcast-compatible: 2x3 vs 4x3 (dim 0: 2 vs 4)

// -----

graph.func @f(%a: tensor<2x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{result type tensor<2x4xf32> does not match inferred tensor<2x3xf32>}}
  %0 = graph.mul %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x4xf32>
  graph.return
}

// CHECK: result type tensor<2x4xf32> does not match inferred tensor<2x3xf32>

// -----

graph.func @f(%a: tensor<3xf32>, %b: tensor<3xf64>) {
  // expected-error @+1 {{element type mismatch: lhs has f32, rhs has f64}}
  %0 = graph.sub %a, %b : (tensor<3xf32>, tensor<3xf64>) -> tensor<3xf32>
  graph.return
}

// CHECK: element type mismatch: lhs has f32, rhs has f64

// -----

graph.func @f(%a: tensor<3xi32>) {
  // expected-error @+1 {{expected a floating-point element type, got i32}}
  %0 = graph.exp %a : (tensor<3xi32>) -> tensor<3xi32>
  graph.return
}

// CHECK: expected a floating-point element type, got i32

// -----

graph.func @f(%a: tensor<3xf32>) {
  // expected-error @+1 {{result type tensor<3xf64> does not match inferred tensor<3xf32>}}
  %0 = graph.relu %a : (tensor<3xf32>) -> tensor<3xf64>
  graph.return
}

// CHECK: result type tensor<3xf64> does not match inferred tensor<3xf32>

// -----

graph.func @f(%a: tensor<3xf32>) {
  // expected-error @+1 {{approximate must be "none" or "tanh", got "erf"}}
  %0 = graph.gelu %a {approximate = "erf"} : (tensor<3xf32>) -> tensor<3xf32>
  graph.return
}

// CHECK: approximate must be "none" or "tanh", got "erf"

// -----

graph.func @f(%a: tensor<2x4xf32>, %b: tensor<5x3xf32>) {
  // expected-error @+1 {{contraction dimension mismatch: lhs has K = 4, rhs has K = 5 (lhs 2x4, rhs 5x3)}}
  %0 = graph.matmul %a, %b : (tensor<2x4xf32>, tensor<5x3xf32>) -> tensor<2x3xf32>
  graph.return
}

// CHECK: contraction dimension mismatch: lhs has K = 4, rhs has K = 5 (lhs 2x4, rhs 5x3)

// -----

graph.func @f(%a: tensor<2x3x4xf32>, %b: tensor<5x4x6xf32>) {
  // expected-error @+1 {{batch dimensions: operands are not broadcast-compatible: 2 vs 5 (dim 0: 2 vs 5)}}
  %0 = graph.matmul %a, %b : (tensor<2x3x4xf32>, tensor<5x4x6xf32>) -> tensor<2x3x6xf32>
  graph.return
}

// CHECK: batch dimensions: operands are not broadcast-compatible: 2 vs 5 (dim 0: 2 vs 5)

// -----

graph.func @f(%a: tensor<f32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{matmul operands must have rank >= 1, got lhs scalar and rhs 4}}
  %0 = graph.matmul %a, %b : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  graph.return
}

// CHECK: matmul operands must have rank >= 1, got lhs scalar and rhs 4

// -----

graph.func @f(%a: tensor<2x4xf32>, %b: tensor<4x3xf32>) {
  // expected-error @+1 {{result type tensor<3x2xf32> does not match inferred tensor<2x3xf32>}}
  %0 = graph.matmul %a, %b : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<3x2xf32>
  graph.return
}

// CHECK: result type tensor<3x2xf32> does not match inferred tensor<2x3xf32>

// -----

graph.func @f(%x: tensor<1x8x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{input channels 8 do not match groups * weight input channels = 2 * 3 = 6}}
  %0 = graph.conv2d %x, %w {groups = 2 : i64} : (tensor<1x8x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  graph.return
}

// CHECK: input channels 8 do not match groups * weight input channels = 2 * 3 = 6

// -----

graph.func @f(%x: tensor<1x8x8x8xf32>, %w: tensor<6x2x3x3xf32>) {
  // expected-error @+1 {{output channels 6 are not divisible by groups = 4}}
  %0 = graph.conv2d %x, %w {groups = 4 : i64} : (tensor<1x8x8x8xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x6x6xf32>
  graph.return
}

// CHECK: output channels 6 are not divisible by groups = 4

// -----

graph.func @f(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{groups must be positive, got 0}}
  %0 = graph.conv2d %x, %w {groups = 0 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  graph.return
}

// CHECK: groups must be positive, got 0

// -----

graph.func @f(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{strides must be positive, got [0, 1]}}
  %0 = graph.conv2d %x, %w {strides = array<i64: 0, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  graph.return
}

// CHECK: strides must be positive, got [0, 1]

// -----

graph.func @f(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{dilation must be positive, got [1, -2]}}
  %0 = graph.conv2d %x, %w {dilation = array<i64: 1, -2>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  graph.return
}

// CHECK: dilation must be positive, got [1, -2]

// -----

graph.func @f(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{strides must have 2 entries, got 3}}
  %0 = graph.conv2d %x, %w {strides = array<i64: 1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  graph.return
}

// CHECK: strides must have 2 entries, got 3

// -----

graph.func @f(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{padding must be non-negative, got [1, -1, 1, 1]}}
  %0 = graph.conv2d %x, %w {padding = array<i64: 1, -1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x6xf32>
  graph.return
}

// CHECK: padding must be non-negative, got [1, -1, 1, 1]

// -----

graph.func @f(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{padding must have 2 or 4 entries, got 3}}
  %0 = graph.conv2d %x, %w {padding = array<i64: 1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  graph.return
}

// CHECK: padding must have 2 or 4 entries, got 3

// -----

graph.func @f(%x: tensor<1x3x4x4xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{output height would be 0: the (dilated) kernel extent 5 is larger than the padded input extent 4}}
  %0 = graph.conv2d %x, %w {dilation = array<i64: 2, 1>} : (tensor<1x3x4x4xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x1x2xf32>
  graph.return
}

// CHECK: output height would be 0: the (dilated) kernel extent 5 is larger than the padded input extent 4

// -----

graph.func @f(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{result type tensor<1x4x8x8xf32> does not match inferred tensor<1x4x6x6xf32>}}
  %0 = graph.conv2d %x, %w : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  graph.return
}

// CHECK: result type tensor<1x4x8x8xf32> does not match inferred tensor<1x4x6x6xf32>

// -----

graph.func @f(%x: tensor<3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{conv2d expects 4-D data and weight, got data 3x8x8 and weight 4x3x3x3}}
  %0 = graph.conv2d %x, %w : (tensor<3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  graph.return
}

// CHECK: conv2d expects 4-D data and weight, got data 3x8x8 and weight 4x3x3x3

// -----

graph.func @f(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{data_layout must be a permutation of "NCHW", got "NCHWc"}}
  %0 = graph.conv2d %x, %w {data_layout = "NCHWc"} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  graph.return
}

// CHECK: data_layout must be a permutation of "NCHW", got "NCHWc"

// -----

graph.func @f(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf16>) {
  // expected-error @+1 {{element type mismatch: data has f32, weight has f16}}
  %0 = graph.conv2d %x, %w : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf16>) -> tensor<1x4x6x6xf32>
  graph.return
}

// CHECK: element type mismatch: data has f32, weight has f16

// -----

graph.func @f(%x: tensor<1x3x8x8xf32>) {
  // expected-error @+1 {{kernel must have 2 entries, got 1}}
  %0 = graph.max_pool2d %x {kernel = array<i64: 2>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  graph.return
}

// CHECK: kernel must have 2 entries, got 1

// -----

graph.func @f(%x: tensor<1x3x8x8xf32>) {
  // expected-error @+1 {{top padding 2 must be smaller than the kernel extent 2}}
  %0 = graph.avg_pool2d %x {kernel = array<i64: 2, 2>, padding = array<i64: 2, 0, 0, 0>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x9x7xf32>
  graph.return
}

// CHECK: top padding 2 must be smaller than the kernel extent 2

// -----

graph.func @f(%x: tensor<1x3x8x8xf32>) {
  // expected-error @+1 {{strides must be positive, got [2, 0]}}
  %0 = graph.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 0>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  graph.return
}

// CHECK: strides must be positive, got [2, 0]

// -----

graph.func @f(%x: tensor<1x3x8x8xf32>) {
  // expected-error @+1 {{result type tensor<1x3x8x8xf32> does not match inferred tensor<1x3x4x4xf32>}}
  %0 = graph.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf32>
  graph.return
}

// CHECK: result type tensor<1x3x8x8xf32> does not match inferred tensor<1x3x4x4xf32>

// -----

graph.func @f(%x: tensor<3x8x8xf32>) {
  // expected-error @+1 {{pooling expects a 4-D NCHW (or 5-D NCHW<c>c) input, got 3x8x8}}
  %0 = graph.max_pool2d %x {kernel = array<i64: 2, 2>} : (tensor<3x8x8xf32>) -> tensor<3x7x7xf32>
  graph.return
}

// CHECK: pooling expects a 4-D NCHW (or 5-D NCHW<c>c) input, got 3x8x8

// -----

graph.func @f(%x: tensor<1x3x8x8xf32>) {
  // expected-error @+1 {{output width would be 0: the (dilated) kernel extent 9 is larger than the padded input extent 8}}
  %0 = graph.avg_pool2d %x {kernel = array<i64: 1, 9>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x8x1xf32>
  graph.return
}

// CHECK: output width would be 0: the (dilated) kernel extent 9 is larger than the padded input extent 8

// -----

graph.func @f(%x: tensor<3x8x8xf32>) {
  // expected-error @+1 {{expected a 4-D NCHW (or 5-D NCHW<c>c) input, got 3x8x8}}
  %0 = graph.global_avg_pool2d %x : (tensor<3x8x8xf32>) -> tensor<3x1x1xf32>
  graph.return
}

// CHECK: expected a 4-D NCHW (or 5-D NCHW<c>c) input, got 3x8x8

// -----

graph.func @f(%x: tensor<1x3x8x8xf32>) {
  // expected-error @+1 {{result type tensor<1x3xf32> does not match inferred tensor<1x3x1x1xf32>}}
  %0 = graph.global_avg_pool2d %x : (tensor<1x3x8x8xf32>) -> tensor<1x3xf32>
  graph.return
}

// CHECK: result type tensor<1x3xf32> does not match inferred tensor<1x3x1x1xf32>

// -----

graph.func @f(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{axis 3 is out of range for rank 2 (expected -2 <= axis < 2)}}
  %0 = graph.softmax %x {axis = 3 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  graph.return
}

// CHECK: axis 3 is out of range for rank 2 (expected -2 <= axis < 2)

// -----

graph.func @f(%x: tensor<2x3xi32>) {
  // expected-error @+1 {{expected a floating-point element type, got i32}}
  %0 = graph.softmax %x : (tensor<2x3xi32>) -> tensor<2x3xi32>
  graph.return
}

// CHECK: expected a floating-point element type, got i32

// -----

graph.func @f(%x: tensor<2x3x4xf32>, %g: tensor<3x4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{gamma shape 3x4 does not match the normalized shape 4 (x.shape[2:])}}
  %0 = graph.layer_norm %x, %g, %b : (tensor<2x3x4xf32>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  graph.return
}

// CHECK: gamma shape 3x4 does not match the normalized shape 4 (x.shape[2:])

// -----

graph.func @f(%x: tensor<2x3x4xf32>, %g: tensor<3x4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{beta shape 4 does not match the normalized shape 3x4 (x.shape[1:])}}
  %0 = graph.layer_norm %x, %g, %b {axis = -2 : i64} : (tensor<2x3x4xf32>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  graph.return
}

// CHECK: beta shape 4 does not match the normalized shape 3x4 (x.shape[1:])

// -----

graph.func @f(%x: tensor<2x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{epsilon must be positive, got 0.0}}
  %0 = graph.layer_norm %x, %g, %b {epsilon = 0.0 : f32} : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  graph.return
}

// CHECK: epsilon must be positive, got 0.0

// -----

graph.func @f(%x: tensor<2x4xf32>, %g: tensor<4xf16>, %b: tensor<4xf32>) {
  // expected-error @+1 {{element type mismatch: x has f32, gamma has f16}}
  %0 = graph.layer_norm %x, %g, %b : (tensor<2x4xf32>, tensor<4xf16>, tensor<4xf32>) -> tensor<2x4xf32>
  graph.return
}

// CHECK: element type mismatch: x has f32, gamma has f16

// -----

graph.func @f(%x: tensor<2x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{axis -3 is out of range for rank 2 (expected -2 <= axis < 2)}}
  %0 = graph.layer_norm %x, %g, %b {axis = -3 : i64} : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  graph.return
}

// CHECK: axis -3 is out of range for rank 2 (expected -2 <= axis < 2)

// -----

graph.func @f(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{axis 3 is out of range for rank 3 (expected -3 <= axis < 3)}}
  %0 = graph.reduce_sum %x {axes = array<i64: 3>} : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
  graph.return
}

// CHECK: axis 3 is out of range for rank 3 (expected -3 <= axis < 3)

// -----

graph.func @f(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{axis -1 appears more than once in axes [2, -1]}}
  %0 = graph.reduce_max %x {axes = array<i64: 2, -1>} : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
  graph.return
}

// CHECK: axis -1 appears more than once in axes [2, -1]

// -----

graph.func @f(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{result type tensor<2x3xf32> does not match inferred tensor<2x1x4xf32>}}
  %0 = graph.reduce_mean %x {axes = array<i64: 1>, keepdims} : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
  graph.return
}

// CHECK: result type tensor<2x3xf32> does not match inferred tensor<2x1x4xf32>

// -----

graph.func @f(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{element count mismatch: operand 2x3x4 has 24 elements, result 4x5 has 20}}
  %0 = graph.reshape %x : (tensor<2x3x4xf32>) -> tensor<4x5xf32>
  graph.return
}

// CHECK: element count mismatch: operand 2x3x4 has 24 elements, result 4x5 has 20

// -----

graph.func @f(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{result type tensor<6x4xi32> does not match inferred tensor<6x4xf32>}}
  %0 = graph.reshape %x : (tensor<2x3x4xf32>) -> tensor<6x4xi32>
  graph.return
}

// CHECK: result type tensor<6x4xi32> does not match inferred tensor<6x4xf32>

// -----

graph.func @f(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{perm [0, 0] is not a permutation of [0, 1] (operand rank 2)}}
  %0 = graph.transpose %x {perm = array<i64: 0, 0>} : (tensor<2x3xf32>) -> tensor<2x2xf32>
  graph.return
}

// CHECK: perm [0, 0] is not a permutation of [0, 1] (operand rank 2)

// -----

graph.func @f(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{perm [1, 0, 2] is not a permutation of [0, 1] (operand rank 2)}}
  %0 = graph.transpose %x {perm = array<i64: 1, 0, 2>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  graph.return
}

// CHECK: perm [1, 0, 2] is not a permutation of [0, 1] (operand rank 2)

// -----

graph.func @f(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{result type tensor<2x3xf32> does not match inferred tensor<3x2xf32>}}
  %0 = graph.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  graph.return
}

// CHECK: result type tensor<2x3xf32> does not match inferred tensor<3x2xf32>

// -----

graph.func @f(%a: tensor<2x3xf32>, %b: tensor<2x3x1xf32>) {
  // expected-error @+1 {{operand #1 has rank 3, expected 2 (the rank of operand #0)}}
  %0 = graph.concat %a, %b : (tensor<2x3xf32>, tensor<2x3x1xf32>) -> tensor<4x3xf32>
  graph.return
}

// CHECK: operand #1 has rank 3, expected 2 (the rank of operand #0)

// -----

graph.func @f(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) {
  // expected-error @+1 {{operand #1 has shape 2x4, incompatible with 2x3 outside the concat axis 0 (dim 1: 4 vs 3)}}
  %0 = graph.concat %a, %b : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<4x3xf32>
  graph.return
}

// CHECK: operand #1 has shape 2x4, incompatible with 2x3 outside the concat axis 0 (dim 1: 4 vs 3)

// -----

graph.func @f(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2 (expected -2 <= axis < 2)}}
  %0 = graph.concat %a, %b {axis = 2 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  graph.return
}

// CHECK: axis 2 is out of range for rank 2 (expected -2 <= axis < 2)

// -----

graph.func @f(%a: tensor<2x3xf32>, %b: tensor<2x3xi32>) {
  // expected-error @+1 {{element type mismatch: operand #0 has f32, operand #1 has i32}}
  %0 = graph.concat %a, %b : (tensor<2x3xf32>, tensor<2x3xi32>) -> tensor<4x3xf32>
  graph.return
}

// CHECK: element type mismatch: operand #0 has f32, operand #1 has i32

// -----

graph.func @f() {
  // expected-error @+1 {{concat needs at least one operand}}
  %0 = "graph.concat"() : () -> tensor<2xf32>
  graph.return
}

// CHECK: concat needs at least one operand

// -----

graph.func @f(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{operand shape 2x3 cannot be broadcast to 4x3 (dim 0: 2 vs 4)}}
  %0 = graph.broadcast_to %a : (tensor<2x3xf32>) -> tensor<4x3xf32>
  graph.return
}

// CHECK: operand shape 2x3 cannot be broadcast to 4x3 (dim 0: 2 vs 4)

// -----

graph.func @f(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{operand shape 2x3 cannot be broadcast to 3 (operand rank 2 > target rank 1)}}
  %0 = graph.broadcast_to %a : (tensor<2x3xf32>) -> tensor<3xf32>
  graph.return
}

// CHECK: operand shape 2x3 cannot be broadcast to 3 (operand rank 2 > target rank 1)

// -----

graph.func @f(%a: tensor<3xf32>) {
  // expected-error @+1 {{result type tensor<2x3xi32> does not match inferred tensor<2x3xf32>}}
  %0 = graph.broadcast_to %a : (tensor<3xf32>) -> tensor<2x3xi32>
  graph.return
}

// CHECK: result type tensor<2x3xi32> does not match inferred tensor<2x3xf32>

// -----

graph.func @f(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{cast must keep the shape: operand 2x3, result 3x2}}
  %0 = graph.cast %a : (tensor<2x3xf32>) -> tensor<3x2xi32>
  graph.return
}

// CHECK: cast must keep the shape: operand 2x3, result 3x2

// -----

graph.func @f(%a: tensor<20xf32>) {
  // expected-error @+1 {{constraint map has 2 dimensions but the operand has rank 1}}
  %0 = graph.layout_transform %a {constraint = #lamina.constraint<affine_map<(d0, d1) -> (d1, d0)>, #lamina.undef>} : (tensor<20xf32>) -> tensor<20xf32>
  graph.return
}

// CHECK: constraint map has 2 dimensions but the operand has rank 1

// -----

graph.func @f(%a: tensor<20xf32>) {
  // expected-error @+1 {{pad value type f64 does not match the element type f32}}
  %0 = graph.layout_transform %a {constraint = #lamina.constraint<affine_map<(d0) -> (d0 floordiv 8, d0 mod 8)>, 0.0 : f64>} : (tensor<20xf32>) -> tensor<3x8xf32>
  graph.return
}

// CHECK: pad value type f64 does not match the element type f32

// -----

graph.func @f(%a: tensor<20xf32>) {
  // expected-error @+1 {{result shape [2, 8] is smaller than the map's image [3, 8]: it would lose elements (mark the op `crop` to drop the padding)}}
  %0 = graph.layout_transform %a {constraint = #lamina.constraint<affine_map<(d0) -> (d0 floordiv 8, d0 mod 8)>, #lamina.undef>} : (tensor<20xf32>) -> tensor<2x8xf32>
  graph.return
}

// CHECK: result shape [2, 8] is smaller than the map's image [3, 8]

// -----

graph.func @f(%a: tensor<20xf32>) {
  // expected-error @+1 {{constraint map result #0 ((d0 + -1)) can be negative (minimum -1)}}
  %0 = graph.layout_transform %a {constraint = #lamina.constraint<affine_map<(d0) -> (d0 - 1)>, #lamina.undef>} : (tensor<20xf32>) -> tensor<19xf32>
  graph.return
}
// CHECK: constraint map result #0 ((d0 + -1)) can be negative (minimum -1)

// -----

graph.func @f(%a: tensor<3x?xf32>) {
  // expected-error @+1 {{operand #0: only the leading (batch) dimension may be dynamic, got tensor<3x?xf32>}}
  %0 = graph.relu %a : (tensor<3x?xf32>) -> tensor<3x?xf32>
  graph.return
}
// CHECK: operand #0: only the leading (batch) dimension may be dynamic, got tensor<3x?xf32>

// -----

graph.func @f(%a: tensor<3xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{predicate must be one of eq, ne, lt, le, gt, ge, got "less"}}
  %0 = graph.compare %a, %b {predicate = "less"} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
  graph.return
}

// CHECK: predicate must be one of eq, ne, lt, le, gt, ge, got "less"

// -----

graph.func @f(%a: tensor<3xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{result type tensor<3xf32> does not match inferred tensor<3xi1>}}
  %0 = graph.compare %a, %b {predicate = "lt"} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  graph.return
}

// CHECK: result type tensor<3xf32> does not match inferred tensor<3xi1>

// -----

graph.func @f(%a: tensor<3xf32>, %b: tensor<3xi32>) {
  // expected-error @+1 {{element type mismatch: lhs has f32, rhs has i32}}
  %0 = graph.compare %a, %b {predicate = "eq"} : (tensor<3xf32>, tensor<3xi32>) -> tensor<3xi1>
  graph.return
}

// CHECK: element type mismatch: lhs has f32, rhs has i32

// -----

graph.func @f(%a: tensor<3xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{property 'predicate' expected in operation 'graph.compare'}}
  %0 = graph.compare %a, %b : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
  graph.return
}

// CHECK: property 'predicate' expected in operation 'graph.compare'

// -----

graph.func @f(%a: tensor<3xi32>, %b: tensor<3xi32>) {
  // expected-error @+1 {{expected a floating-point element type, got i32}}
  %0 = graph.pow %a, %b : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
  graph.return
}

// CHECK: expected a floating-point element type, got i32

// -----

graph.func @f(%a: tensor<2x0xf32>) {
  // expected-error @+1 {{reduce_min over the empty axis 1 (extent 0) has no identity}}
  %0 = graph.reduce_min %a {axes = array<i64: 1>} : (tensor<2x0xf32>) -> tensor<2xf32>
  graph.return
}

// CHECK: reduce_min over the empty axis 1 (extent 0) has no identity
