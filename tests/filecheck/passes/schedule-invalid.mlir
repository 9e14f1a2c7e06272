// RUN: lamina-opt %s -p schedule --split-input-file --verify-diagnostics | filecheck %s

// expected-error @+1 {{pass 'schedule' cannot run in phase 'optimization' (it runs in: lowering); run 'legalize' first}}
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
}
// CHECK: pass 'schedule' cannot run in phase 'optimization'

// -----

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @f(%x: memref<4xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %one = arith.constant 1.0 : f32
    // expected-error @+1 {{schedule: unknown schedule primitive 'tile' (known: fuse, interchange, pack, parallel, register_block, split, unroll, unroll_and_jam, vectorize)}}
    loop.for %i = %c0 to %c4 step %c1 {
      loop.store %one, %x[%i] : memref<4xf32>
    } {lamina.schedule = "tile"}
    loop.return
  }
}
// CHECK: unknown schedule primitive 'tile'

// -----

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @f(%x: memref<4xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %one = arith.constant 1.0 : f32
    // expected-error @+1 {{schedule: 'split' takes one integer argument}}
    loop.for %i = %c0 to %c4 step %c1 {
      loop.store %one, %x[%i] : memref<4xf32>
    } {lamina.schedule = "split"}
    loop.return
  }
}
// CHECK: 'split' takes one integer argument

// -----

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @f(%x: memref<4xf32>, %n: index) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %one = arith.constant 1.0 : f32
    // expected-error @+1 {{schedule: needs constant loop bounds}}
    loop.for %i = %c0 to %n step %c1 {
      loop.store %one, %x[%i] : memref<4xf32>
    } {lamina.schedule = "unroll"}
    loop.return
  }
}
// CHECK: needs constant loop bounds

// -----

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @f(%x: memref<4xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %one = arith.constant 1.0 : f32
    // expected-error @+1 {{schedule: register_block needs a loop holding a vectorized fill loop and a reduction nest ending in a vectorized loop with the same bounds}}
    loop.for %i = %c0 to %c4 step %c1 {
      loop.store %one, %x[%i] : memref<4xf32>
    } {lamina.schedule = "register_block"}
    loop.return
  }
}
// CHECK: register_block needs a loop

// -----

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @f(%x: memref<4xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %one = arith.constant 1.0 : f32
    // expected-error @+1 {{schedule: pack: the function has no argument 3}}
    loop.for %i = %c0 to %c4 step %c1 {
      loop.store %one, %x[%i] : memref<4xf32>
    } {lamina.schedule = "pack(3)"}
    loop.return
  }
}
// CHECK: the function has no argument 3
