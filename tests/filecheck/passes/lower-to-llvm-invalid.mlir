// RUN: lamina-opt %s --split-input-file --verify-diagnostics -p lower-to-llvm | filecheck %s

// An op without a lowering is reported at the op by the legality check.
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @ipow(%x: i32, %n: i32) -> i32 {
    // expected-error @+1 {{lower-to-llvm: failed to legalize operation 'math.ipowi' (it must not survive lower-to-llvm)}}
    %y = math.ipowi %x, %n : i32
    loop.return %y : i32
  }
}
// CHECK: error: lower-to-llvm: failed to legalize operation 'math.ipowi'

// -----

// Ops of the allowed dialects without a lowering are reported one by one.
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @wide(%x: i32, %y: i32) -> i32 {
    // expected-error @+1 {{lower-to-llvm: failed to legalize operation 'arith.mulsi_extended' (it must not survive lower-to-llvm)}}
    %lo, %hi = arith.mulsi_extended %x, %y : i32
    // expected-error @+1 {{lower-to-llvm: failed to legalize operation 'math.ipowi' (it must not survive lower-to-llvm)}}
    %p = math.ipowi %lo, %hi : i32
    loop.return %p : i32
  }
}
// CHECK: error: lower-to-llvm: failed to legalize operation 'arith.mulsi_extended'
// CHECK: error: lower-to-llvm: failed to legalize operation 'math.ipowi'

// -----

// llvm.func has at most one result.
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  // expected-error @+1 {{'loop.func' op cannot lower a function with 2 results to LLVM (at most 1)}}
  loop.func @two(%x: f32) -> (f32, f32) {
    loop.return %x, %x : f32, f32
  }
}
// CHECK: error: 'loop.func' op cannot lower a function with 2 results to LLVM (at most 1)

// -----

// The pass only runs in phase lowering.
// expected-error @+1 {{pass 'lower-to-llvm' cannot run in phase 'optimization' (it runs in: lowering); run 'legalize' first}}
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  loop.func @early(%x: f32) -> f32 {
    loop.return %x : f32
  }
}
// CHECK: error: pass 'lower-to-llvm' cannot run in phase 'optimization' (it runs in: lowering); run 'legalize' first

// -----

// Element addresses need static strides.
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @dyn(%a: memref<4x4xf32, strided<[?, 1]>>, %i: index) -> f32 {
    // expected-error @+1 {{'loop.load' op cannot lower this access to LLVM: buffer type memref<4x4xf32, strided<[?, 1]>> has no static strides}}
    %x = loop.load %a[%i, %i] : memref<4x4xf32, strided<[?, 1]>>
    loop.return %x : f32
  }
}
// CHECK: error: 'loop.load' op cannot lower this access to LLVM: buffer type memref<4x4xf32, strided<[?, 1]>> has no static strides
