// RUN: lamina-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One chunk per verifier rule of the te dialect.

// expected-error @+1 {{argument #0 must be a statically shaped tensor, got memref<4xf32>}}
te.func @memref_arg(%x: memref<4xf32>) {
  te.return
}
// CHECK: argument #0 must be a statically shaped tensor, got memref<4xf32>

// -----

// expected-error @+1 {{result #0 must be a statically shaped tensor, got tensor<?xf32>}}
te.func private @dynamic_result(tensor<4xf32>) -> tensor<?xf32>
// CHECK: result #0 must be a statically shaped tensor, got tensor<?xf32>

// -----

// expected-error @+1 {{body may only contain te.compute, constants and te.return at the top level, got arith.addf}}
te.func @scalar_code() {
  %c = arith.constant 1.0 : f32
  %d = arith.addf %c, %c : f32
  te.return
}
// CHECK: body may only contain te.compute, constants and te.return at the top level, got arith.addf

// -----

te.func @bad_return(%x: tensor<4xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{returned types must match the function's result types: expected (tensor<8xf32>), got (tensor<4xf32>)}}
  te.return %x : tensor<4xf32>
}
// CHECK: returned types must match the function's result types: expected (tensor<8xf32>), got (tensor<4xf32>)

// -----

func.func @return_parent() {
  // expected-error @+1 {{'te.return' expects parent op 'te.func'}}
  te.return
}
// CHECK: 'te.return' expects parent op 'te.func'

// -----

te.func @shape_mismatch(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{shape [8] must equal the result shape [4]}}
  %r = te.compute [8] (%i) {
    %v = te.read %x[%i] : tensor<4xf32>
    te.yield %v : f32
  } : tensor<4xf32>
  te.return %r : tensor<4xf32>
}
// CHECK: shape [8] must equal the result shape [4]

// -----

te.func @vector_elements() -> tensor<4xvector<2xf32>> {
  // expected-error @+1 {{result element type must be a scalar, got vector<2xf32>}}
  %r = "te.compute"() <{shape = array<i64: 4>}> ({
  ^bb0(%i: index):
    %c = arith.constant dense<0.0> : vector<2xf32>
    "te.yield"(%c) : (vector<2xf32>) -> ()
  }) : () -> tensor<4xvector<2xf32>>
  te.return %r : tensor<4xvector<2xf32>>
}
// CHECK: result element type must be a scalar, got vector<2xf32>

// -----

te.func @zero_extent(%x: tensor<4xf32>) -> tensor<f32> {
  // expected-error @+1 {{reduce_extents must be positive, got [0]}}
  %r = te.compute [] reduce [0] combiner(sum) (%k) {
    %v = te.read %x[%k] : tensor<4xf32>
    te.yield %v : f32
  } : tensor<f32>
  te.return %r : tensor<f32>
}
// CHECK: reduce_extents must be positive, got [0]

// -----

te.func @no_combiner(%x: tensor<4xf32>) -> tensor<f32> {
  // expected-error @+1 {{a reduction (reduce_extents) needs a combiner (one of sum, max, min, prod)}}
  %r = "te.compute"() <{shape = array<i64>, reduce_extents = array<i64: 4>}> ({
  ^bb0(%k: index):
    %v = te.read %x[%k] : tensor<4xf32>
    "te.yield"(%v) : (f32) -> ()
  }) : () -> tensor<f32>
  te.return %r : tensor<f32>
}
// CHECK: a reduction (reduce_extents) needs a combiner (one of sum, max, min, prod)

// -----

te.func @combiner_without_reduce(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'combiner' is only allowed with reduce_extents}}
  %r = te.compute [4] combiner(sum) (%i) {
    %v = te.read %x[%i] : tensor<4xf32>
    te.yield %v : f32
  } : tensor<4xf32>
  te.return %r : tensor<4xf32>
}
// CHECK: 'combiner' is only allowed with reduce_extents

// -----

te.func @init_without_reduce(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'init' is only allowed with reduce_extents}}
  %r = te.compute [4] init(1.0 : f32) (%i) {
    %v = te.read %x[%i] : tensor<4xf32>
    te.yield %v : f32
  } : tensor<4xf32>
  te.return %r : tensor<4xf32>
}
// CHECK: 'init' is only allowed with reduce_extents

// -----

te.func @bad_combiner(%x: tensor<4xf32>) -> tensor<f32> {
  // expected-error @+1 {{combiner must be one of sum, max, min, prod, got 'mean'}}
  %r = "te.compute"() <{shape = array<i64>, reduce_extents = array<i64: 4>, combiner = "mean"}> ({
  ^bb0(%k: index):
    %v = te.read %x[%k] : tensor<4xf32>
    "te.yield"(%v) : (f32) -> ()
  }) : () -> tensor<f32>
  te.return %r : tensor<f32>
}
// CHECK: combiner must be one of sum, max, min, prod, got 'mean'

// -----

te.func @bad_combiner_pretty(%x: tensor<4xf32>) -> tensor<f32> {
  // expected-error @+1 {{combiner must be one of sum, max, min, prod, got 'mean'}}
  %r = te.compute [] reduce [4] combiner(mean) (%k) {
    %v = te.read %x[%k] : tensor<4xf32>
    te.yield %v : f32
  } : tensor<f32>
  te.return %r : tensor<f32>
}
// CHECK: combiner must be one of sum, max, min, prod, got 'mean'

// -----

te.func @init_type(%x: tensor<4xf32>) -> tensor<f32> {
  // expected-error @+1 {{init type must be the result element type: expected f32, got f64}}
  %r = te.compute [] reduce [4] combiner(max) init(0.0 : f64) (%k) {
    %v = te.read %x[%k] : tensor<4xf32>
    te.yield %v : f32
  } : tensor<f32>
  te.return %r : tensor<f32>
}
// CHECK: init type must be the result element type: expected f32, got f64

// -----

te.func @block_arg_count(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{expected 2 index block arguments (1 spatial, 1 reduction), got 1}}
  %r = te.compute [4] reduce [4] combiner(sum) (%i) {
    %v = te.read %x[%i] : tensor<4xf32>
    te.yield %v : f32
  } : tensor<4xf32>
  te.return %r : tensor<4xf32>
}
// CHECK: expected 2 index block arguments (1 spatial, 1 reduction), got 1

// -----

te.func @block_arg_type(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{block argument #0 must be of type index, got i64}}
  %r = "te.compute"() <{shape = array<i64: 4>}> ({
  ^bb0(%i: i64):
    %c = arith.constant 0.0 : f32
    "te.yield"(%c) : (f32) -> ()
  }) : () -> tensor<4xf32>
  te.return %r : tensor<4xf32>
}
// CHECK: block argument #0 must be of type index, got i64

// -----

te.func @yield_type(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{yielded type must be the result element type: expected f32, got f64}}
  %r = te.compute [4] (%i) {
    %c = arith.constant 0.0 : f64
    te.yield %c : f64
  } : tensor<4xf32>
  te.return %r : tensor<4xf32>
}
// CHECK: yielded type must be the result element type: expected f32, got f64

// -----

te.func @missing_yield(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{region must end with te.yield, got te.return}}
  %r = te.compute [4] (%i) {
    // expected-error @+1 {{'te.return' expects parent op 'te.func'}}
    te.return
  } : tensor<4xf32>
  te.return %r : tensor<4xf32>
}
// CHECK: region must end with te.yield, got te.return

// -----

func.func @compute_parent() -> tensor<4xf32> {
  // expected-error @+1 {{'te.compute' expects parent op 'te.func'}}
  %r = te.compute [4] (%i) {
    %c = arith.constant 0.0 : f32
    te.yield %c : f32
  } : tensor<4xf32>
  func.return %r : tensor<4xf32>
}
// CHECK: 'te.compute' expects parent op 'te.func'

// -----

te.func @read_rank(%x: tensor<4x4xf32>) -> tensor<4xf32> {
  %r = te.compute [4] (%i) {
    // expected-error @+1 {{expected 2 indices (one per dimension of tensor<4x4xf32>), got 1}}
    %v = te.read %x[%i] : tensor<4x4xf32>
    te.yield %v : f32
  } : tensor<4xf32>
  te.return %r : tensor<4xf32>
}
// CHECK: expected 2 indices (one per dimension of tensor<4x4xf32>), got 1

// -----

te.func @read_type(%x: tensor<4xf32>) -> tensor<4xf64> {
  %r = te.compute [4] (%i) {
    // expected-error @+1 {{result type must be the tensor's element type: expected f32, got f64}}
    %v = "te.read"(%x, %i) : (tensor<4xf32>, index) -> f64
    te.yield %v : f64
  } : tensor<4xf64>
  te.return %r : tensor<4xf64>
}
// CHECK: result type must be the tensor's element type: expected f32, got f64

// -----

te.func @read_index_type(%x: tensor<4xf32>, %j: tensor<i32>) -> tensor<4xf32> {
  %r = te.compute [4] (%i) {
    %c = arith.constant 0 : i32
    // expected-error @+1 {{index #0 must be of type index, got i32}}
    %v = "te.read"(%x, %c) : (tensor<4xf32>, i32) -> f32
    te.yield %v : f32
  } : tensor<4xf32>
  te.return %r : tensor<4xf32>
}
// CHECK: index #0 must be of type index, got i32

// -----

func.func @read_outside(%x: tensor<4xf32>, %i: index) -> f32 {
  // expected-error @+1 {{'te.read' expects ancestor op 'te.compute'}}
  %v = te.read %x[%i] : tensor<4xf32>
  func.return %v : f32
}
// CHECK: 'te.read' expects ancestor op 'te.compute'

// -----

func.func @yield_outside(%v: f32) {
  // expected-error @+1 {{'te.yield' expects parent op 'te.compute'}}
  te.yield %v : f32
}
// CHECK: 'te.yield' expects parent op 'te.compute'

// -----

te.func @undef_computed_on(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = te.compute [4] (%i) {
    // expected-error @+1 {{result may only be yielded (used by te.yield, directly or through arith.select)}}
    %u = te.undef : f32
    %v = te.read %x[%i] : tensor<4xf32>
    %s = arith.addf %u, %v : f32
    te.yield %s : f32
  } : tensor<4xf32>
  te.return %r : tensor<4xf32>
}
// CHECK: result may only be yielded (used by te.yield, directly or through arith.select)

// -----

te.func @undef_select_computed_on(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = te.compute [4] (%i) {
    %t = arith.constant true
    // expected-error @+1 {{result may only be yielded (used by te.yield, directly or through arith.select)}}
    %u = te.undef : f32
    %v = te.read %x[%i] : tensor<4xf32>
    %s = arith.select %t, %v, %u : f32
    %n = arith.negf %s : f32
    te.yield %n : f32
  } : tensor<4xf32>
  te.return %r : tensor<4xf32>
}
// CHECK: result may only be yielded (used by te.yield, directly or through arith.select)

// -----

te.func @undef_type() -> tensor<4xf32> {
  %r = te.compute [4] (%i) {
    // expected-error @+1 {{result must be a scalar (integer, index, float), got tensor<4xf32>}}
    %u = te.undef : tensor<4xf32>
    %c = arith.constant 0.0 : f32
    te.yield %c : f32
  } : tensor<4xf32>
  te.return %r : tensor<4xf32>
}
// CHECK: result must be a scalar (integer, index, float), got tensor<4xf32>

// -----

te.func @empty_reduce(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{reduce_extents must not be empty (omit it instead)}}
  %r = te.compute [4] reduce [] combiner(sum) (%i) {
    %v = te.read %x[%i] : tensor<4xf32>
    te.yield %v : f32
  } : tensor<4xf32>
  te.return %r : tensor<4xf32>
}
// CHECK: reduce_extents must not be empty (omit it instead)

// -----

// expected-error @+1 {{'device' of result #0 must be a #lamina.device, got 0 : i64}}
te.func private @bad_device(tensor<4xf32>) -> tensor<4xf32> attributes {res_attrs = [{device = 0}]}
// CHECK: 'device' of result #0 must be a #lamina.device, got 0 : i64
