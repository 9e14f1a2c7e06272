// RUN: lamina-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One chunk per verifier rule of the loop dialect.

// expected-error @+1 {{argument #0 must be a memref or a scalar (integer, index, float), got tensor<4xf32>}}
loop.func @tensor_arg(%x: tensor<4xf32>) {
  loop.return
}
// CHECK: argument #0 must be a memref or a scalar (integer, index, float), got tensor<4xf32>

// -----

// expected-error @+1 {{entry block argument types must match the function's input types: expected (memref<4xf32>), got (memref<8xf32>)}}
"loop.func"() <{sym_name = "f", function_type = (memref<4xf32>) -> ()}> ({
^bb0(%x: memref<8xf32>):
  "loop.return"() : () -> ()
}) : () -> ()
// CHECK: entry block argument types must match the function's input types: expected (memref<4xf32>), got (memref<8xf32>)

// -----

// expected-error @+1 {{'lamina.constraint' of parameter #0 must be a #lamina.constraint, got 0 : i64}}
loop.func @bad_constraint(%x: memref<4xf32> {lamina.constraint = 0}) {
  loop.return
}
// CHECK: 'lamina.constraint' of parameter #0 must be a #lamina.constraint, got 0 : i64

// -----

// expected-error @+1 {{'device' of parameter #0 must be a #lamina.device, got "cpu"}}
loop.func @bad_device(%x: memref<4xf32> {device = "cpu"}) {
  loop.return
}
// CHECK: 'device' of parameter #0 must be a #lamina.device, got "cpu"

// -----

// expected-error @+1 {{arg_attrs must have one dictionary per argument: expected 1, got 2}}
"loop.func"() <{sym_name = "f", function_type = (memref<4xf32>) -> (), arg_attrs = [{}, {}]}> ({
^bb0(%x: memref<4xf32>):
  "loop.return"() : () -> ()
}) : () -> ()
// CHECK: arg_attrs must have one dictionary per argument: expected 1, got 2

// -----

loop.func @bad_return(%x: f32) -> f64 {
  // expected-error @+1 {{returned types must match the function's result types: expected (f64), got (f32)}}
  loop.return %x : f32
}
// CHECK: returned types must match the function's result types: expected (f64), got (f32)

// -----

func.func @wrong_parent() {
  // expected-error @+1 {{'loop.return' expects parent op 'loop.func'}}
  loop.return
}
// CHECK: 'loop.return' expects parent op 'loop.func'

// -----

loop.func @bad_kind(%n: index) {
  // expected-error @+1 {{'loop.for' op "fast" should be of base attribute loop.kind}}
  "loop.for"(%n, %n, %n) <{kind = "fast"}> ({
  ^bb0(%i: index):
    "loop.yield"() : () -> ()
  }) : (index, index, index) -> ()
  loop.return
}
// CHECK: 'loop.for' op "fast" should be of base attribute loop.kind

// -----

loop.func @bad_kind_pretty(%n: index) {
  // expected-error @+1 {{loop kind must be one of serial, parallel, vectorized, unrolled, got 'fast'}}
  loop.for %i = %n to %n step %n kind(fast) {
  }
  loop.return
}
// CHECK: loop kind must be one of serial, parallel, vectorized, unrolled, got 'fast'

// -----

loop.func @iter_arg_type(%n: index, %init: f32) {
  // expected-error @+1 {{0-th iter_arg and 0-th loop result have different type: 'f32' != 'f64'}}
  %r = "loop.for"(%n, %n, %n, %init) ({
  ^bb0(%i: index, %acc: f32):
    "loop.yield"(%acc) : (f32) -> ()
  }) : (index, index, index, f32) -> f64
  loop.return
}
// CHECK: 0-th iter_arg and 0-th loop result have different type: 'f32' != 'f64'

// -----

loop.func @region_iter_arg_type(%n: index, %init: f32) {
  // expected-error @+1 {{0-th region iter_arg and 0-th loop result have different type: 'i32' != 'f32'}}
  %r = "loop.for"(%n, %n, %n, %init) ({
  ^bb0(%i: index, %acc: i32):
    "loop.yield"(%init) : (f32) -> ()
  }) : (index, index, index, f32) -> f32
  loop.return
}
// CHECK: 0-th region iter_arg and 0-th loop result have different type: 'i32' != 'f32'

// -----

loop.func @yield_type(%n: index, %init: f32, %other: f64) {
  // expected-error @+1 {{0-th yielded value and 0-th loop result have different type: 'f64' != 'f32'}}
  %r = loop.for %i = %n to %n step %n iter_args(%acc = %init) -> (f32) {
    loop.yield %other : f64
  }
  loop.return
}
// CHECK: 0-th yielded value and 0-th loop result have different type: 'f64' != 'f32'

// -----

loop.func @yield_count(%n: index, %init: f32) {
  // expected-error @+1 {{expected loop.yield to yield 1 values matching the loop results (f32), got 0}}
  %r = loop.for %i = %n to %n step %n iter_args(%acc = %init) -> (f32) {
    loop.yield
  }
  loop.return
}
// CHECK: expected loop.yield to yield 1 values matching the loop results (f32), got 0

// -----

loop.func @result_count(%n: index, %init: f32) {
  // expected-error @+1 {{expected as many loop results as iter_args: 1 iter_args, 0 results}}
  "loop.for"(%n, %n, %n, %init) ({
  ^bb0(%i: index, %acc: f32):
    "loop.yield"(%acc) : (f32) -> ()
  }) : (index, index, index, f32) -> ()
  loop.return
}
// CHECK: expected as many loop results as iter_args: 1 iter_args, 0 results

// -----

loop.func @block_arg_count(%n: index) {
  // expected-error @+1 {{expected 1 body block arguments (induction variable and 0 iter_args), got 2}}
  "loop.for"(%n, %n, %n) ({
  ^bb0(%i: index, %extra: index):
    "loop.yield"() : () -> ()
  }) : (index, index, index) -> ()
  loop.return
}
// CHECK: expected 1 body block arguments (induction variable and 0 iter_args), got 2

// -----

loop.func @induction_var_type(%n: index) {
  // expected-error @+1 {{expected the body's first block argument to be the index induction variable, got i32}}
  "loop.for"(%n, %n, %n) ({
  ^bb0(%i: i32):
    "loop.yield"() : () -> ()
  }) : (index, index, index) -> ()
  loop.return
}
// CHECK: expected the body's first block argument to be the index induction variable, got i32

// -----

loop.func @bound_type(%n: i32, %m: index) {
  // expected-error @+1 {{operand 'lb' at position 0 does not verify}}
  "loop.for"(%n, %m, %m) ({
  ^bb0(%i: index):
    "loop.yield"() : () -> ()
  }) : (i32, index, index) -> ()
  loop.return
}
// CHECK: operand 'lb' at position 0 does not verify

// -----

loop.func @missing_yield(%n: index) {
  // expected-error @+1 {{'loop.for' terminates with operation loop.return instead of loop.yield}}
  "loop.for"(%n, %n, %n) ({
  ^bb0(%i: index):
    // expected-error @+1 {{'loop.return' expects parent op 'loop.func'}}
    "loop.return"() : () -> ()
  }) : (index, index, index) -> ()
  loop.return
}
// CHECK: 'loop.for' terminates with operation loop.return instead of loop.yield

// -----

loop.func @if_without_else(%c: i1, %x: f32) {
  // expected-error @+1 {{an if with results (f32) needs an else region}}
  %r = loop.if %c -> (f32) {
    loop.yield %x : f32
  }
  loop.return
}
// CHECK: an if with results (f32) needs an else region

// -----

loop.func @if_yield_type(%c: i1, %x: f32, %y: f64) {
  // expected-error @+1 {{0-th yielded value and 0-th if result have different type: 'f64' != 'f32'}}
  %r = loop.if %c -> (f32) {
    loop.yield %x : f32
  } else {
    loop.yield %y : f64
  }
  loop.return
}
// CHECK: 0-th yielded value and 0-th if result have different type: 'f64' != 'f32'

// -----

loop.func @if_condition(%c: i32) {
  // expected-error @+1 {{operand 'cond' at position 0 does not verify}}
  "loop.if"(%c) ({
    "loop.yield"() : () -> ()
  }, {
  }) : (i32) -> ()
  loop.return
}
// CHECK: operand 'cond' at position 0 does not verify

// -----

loop.func @yield_parent() {
  // expected-error @+1 {{'loop.yield' expects parent op to be one of 'loop.for', 'loop.if'}}
  loop.yield
}
// CHECK: 'loop.yield' expects parent op to be one of 'loop.for', 'loop.if'

// -----

loop.func @load_rank(%x: memref<4x8xf32>, %i: index) {
  // expected-error @+1 {{expected 2 indices (one per dimension of memref<4x8xf32>), got 1}}
  %v = loop.load %x[%i] : memref<4x8xf32>
  loop.return
}
// CHECK: expected 2 indices (one per dimension of memref<4x8xf32>), got 1

// -----

loop.func @load_type(%x: memref<4xf32>, %i: index) {
  // expected-error @+1 {{value type must be the buffer's element type: expected f32, got f64}}
  %v = "loop.load"(%x, %i) : (memref<4xf32>, index) -> f64
  loop.return
}
// CHECK: value type must be the buffer's element type: expected f32, got f64

// -----

loop.func @load_index_type(%x: memref<4xf32>, %i: i64) {
  // expected-error @+1 {{index #0 must be of type index, got i64}}
  %v = "loop.load"(%x, %i) : (memref<4xf32>, i64) -> f32
  loop.return
}
// CHECK: index #0 must be of type index, got i64

// -----

loop.func @store_type(%x: memref<4xf32>, %i: index, %v: i32) {
  // expected-error @+1 {{value type must be the buffer's element type: expected f32, got i32}}
  "loop.store"(%v, %x, %i) : (i32, memref<4xf32>, index) -> ()
  loop.return
}
// CHECK: value type must be the buffer's element type: expected f32, got i32

// -----

loop.func @store_rank(%x: memref<4xf32>, %i: index, %v: f32) {
  // expected-error @+1 {{expected 1 indices (one per dimension of memref<4xf32>), got 2}}
  loop.store %v, %x[%i, %i] : memref<4xf32>
  loop.return
}
// CHECK: expected 1 indices (one per dimension of memref<4xf32>), got 2

// -----

loop.func @alloc_scope() {
  // expected-error @+1 {{scope must be one of global, local, got 'shared'}}
  %b = loop.alloc {scope = "shared"} : memref<4xf32>
  loop.return
}
// CHECK: scope must be one of global, local, got 'shared'

// -----

loop.func @alloc_constraint_rank() {
  // expected-error @+1 {{constraint maps to 2 physical dimensions but the buffer memref<16xf32> has rank 1}}
  %b = loop.alloc {constraint = #lamina.constraint<affine_map<(d0) -> (d0 floordiv 8, d0 mod 8)>, #lamina.undef>} : memref<16xf32>
  loop.return
}
// CHECK: constraint maps to 2 physical dimensions but the buffer memref<16xf32> has rank 1

// -----

loop.func @alloc_dynamic() {
  // expected-error @+1 {{expected a statically shaped buffer, got memref<?xf32>}}
  %b = loop.alloc : memref<?xf32>
  loop.return
}
// CHECK: expected a statically shaped buffer, got memref<?xf32>

// -----

loop.func @copy_shape(%a: memref<4x8xf32>, %b: memref<8x4xf32>) {
  // expected-error @+1 {{source and target shapes must match: [4, 8] != [8, 4]}}
  loop.copy %a, %b : memref<4x8xf32> to memref<8x4xf32>
  loop.return
}
// CHECK: source and target shapes must match: [4, 8] != [8, 4]

// -----

loop.func @copy_element_type(%a: memref<4xf32>, %b: memref<4xf16>) {
  // expected-error @+1 {{source and target element types must match: f32 != f16}}
  loop.copy %a, %b : memref<4xf32> to memref<4xf16>
  loop.return
}
// CHECK: source and target element types must match: f32 != f16

// -----

builtin.module {
  loop.func @callee(%a: memref<4xf32>) {
    loop.return
  }
  loop.func @caller(%b: memref<8xf32>) {
    // expected-error @+1 {{argument types do not match the callee @callee: expected (memref<4xf32>), got (memref<8xf32>)}}
    loop.call @callee(%b) : (memref<8xf32>) -> ()
    loop.return
  }
}
// CHECK: argument types do not match the callee @callee: expected (memref<4xf32>), got (memref<8xf32>)

// -----

builtin.module {
  loop.func @callee(%a: memref<4xf32>) {
    loop.return
  }
  loop.func @caller(%b: memref<4xf32>) {
    // expected-error @+1 {{result types do not match the callee @callee: expected (), got (f32)}}
    %r = loop.call @callee(%b) : (memref<4xf32>) -> f32
    loop.return
  }
}
// CHECK: result types do not match the callee @callee: expected (), got (f32)

// -----

builtin.module {
  func.func @not_loop(%a: memref<4xf32>) {
    func.return
  }
  loop.func @caller(%b: memref<4xf32>) {
    // expected-error @+1 {{'@not_loop' does not reference a loop.func, got func.func}}
    loop.call @not_loop(%b) : (memref<4xf32>) -> ()
    loop.return
  }
}
// CHECK: '@not_loop' does not reference a loop.func, got func.func

// -----

loop.func @undef_use(%x: f32) {
  // expected-error @+1 {{result may only be stored (the value of a loop.store, directly or through arith.select), but is used by arith.addf}}
  %u = loop.undef : f32
  %s = arith.addf %u, %x : f32
  loop.return
}
// CHECK: result may only be stored (the value of a loop.store, directly or through arith.select), but is used by arith.addf

// -----

loop.func @undef_as_index(%x: memref<4xf32>, %v: f32) {
  // expected-error @+1 {{result may only be stored (the value of a loop.store, directly or through arith.select), but is used by loop.store}}
  %u = loop.undef : index
  loop.store %v, %x[%u] : memref<4xf32>
  loop.return
}
// CHECK: result may only be stored (the value of a loop.store, directly or through arith.select), but is used by loop.store

// -----

loop.func @undef_select_computed_on(%x: memref<4xf32>, %i: index, %c: i1, %v: f32) {
  // expected-error @+1 {{result may only be stored (the value of a loop.store, directly or through arith.select), but is used by arith.select}}
  %u = loop.undef : f32
  %s = arith.select %c, %v, %u : f32
  %n = arith.negf %s : f32
  loop.store %n, %x[%i] : memref<4xf32>
  loop.return
}
// CHECK: result may only be stored (the value of a loop.store, directly or through arith.select), but is used by arith.select

// -----

loop.func @undef_type() {
  // expected-error @+1 {{result must be a scalar (integer, index, float), got memref<4xf32>}}
  %u = loop.undef : memref<4xf32>
  loop.return
}
// CHECK: result must be a scalar (integer, index, float), got memref<4xf32>

// -----

loop.func @assume_type(%c: i32) {
  // expected-error @+1 {{operand 'cond' at position 0 does not verify}}
  "loop.assume"(%c) : (i32) -> ()
  loop.return
}
// CHECK: operand 'cond' at position 0 does not verify

// -----

// expected-error @+1 {{expected a body with a single block, got 2 blocks}}
"loop.func"() <{sym_name = "two_blocks", function_type = () -> ()}> ({
  "loop.return"() : () -> ()
^bb1:
  "loop.return"() : () -> ()
}) : () -> ()
// CHECK: expected a body with a single block, got 2 blocks

// -----

// expected-error @+1 {{res_attrs must have one dictionary per result: expected 1, got 0}}
"loop.func"() <{sym_name = "f", function_type = () -> f32, res_attrs = [], sym_visibility = "private"}> ({
}) : () -> ()
// CHECK: res_attrs must have one dictionary per result: expected 1, got 0

// -----

loop.func @reshape_count(%a: memref<1x8x7x7x8xf32>) {
  // expected-error @+1 {{source and result must have as many elements: memref<1x8x7x7x8xf32> has 3136, memref<1x8x1x48x8xf32> has 3072}}
  %f = loop.reshape %a : memref<1x8x7x7x8xf32> to memref<1x8x1x48x8xf32>
  loop.return
}
// CHECK: source and result must have as many elements: memref<1x8x7x7x8xf32> has 3136, memref<1x8x1x48x8xf32> has 3072

// -----

loop.func @reshape_element_type(%a: memref<4x8xf32>) {
  // expected-error @+1 {{source and result element types must match: f32 != f16}}
  %f = loop.reshape %a : memref<4x8xf32> to memref<32xf16>
  loop.return
}
// CHECK: source and result element types must match: f32 != f16

// -----

loop.func @reshape_strided(%a: memref<4x8xf32, strided<[16, 1]>>) {
  // expected-error @+1 {{expected a contiguous row-major buffer, got memref<4x8xf32, strided<[16, 1]>>}}
  %f = loop.reshape %a : memref<4x8xf32, strided<[16, 1]>> to memref<32xf32>
  loop.return
}
// CHECK: expected a contiguous row-major buffer, got memref<4x8xf32, strided<[16, 1]>>

// -----

loop.func @reshape_dynamic(%a: memref<?x8xf32>) {
  // expected-error @+1 {{expected a statically shaped buffer, got memref<?x8xf32>}}
  %f = loop.reshape %a : memref<?x8xf32> to memref<32xf32>
  loop.return
}
// CHECK: expected a statically shaped buffer, got memref<?x8xf32>

// -----

loop.func @prefetch_locality(%a: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{locality must be 0-3, got 5}}
  loop.prefetch %a[%c0] {locality = 5 : i32} : memref<4xf32>
  loop.return
}
// CHECK: locality must be 0-3, got 5

// -----

loop.func @prefetch_rank(%a: memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{expected 2 indices (one per dimension of memref<4x8xf32>), got 1}}
  loop.prefetch %a[%c0] {locality = 3 : i32} : memref<4x8xf32>
  loop.return
}
// CHECK: expected 2 indices (one per dimension of memref<4x8xf32>), got 1

