// RUN: lamina-opt %s -p schedule | filecheck %s

// Row stages (softmax-like: a row reduction, then an elementwise pass reading
// it) over the same rows become one loop, so one parallel region; the
// temporary's allocation moves before it and its free to the end. A stage
// that reads another row of a buffer the first stage writes stays apart.

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @stages(%x: memref<4x8xf32>, %y: memref<4x8xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %zero = arith.constant 0.0 : f32
    %t = loop.alloc {scope = "local"} : memref<4xf32>
    loop.for %i = %c0 to %c4 step %c1 kind(parallel) {
      %s = loop.for %k = %c0 to %c8 step %c1 iter_args(%acc = %zero) -> (f32) {
        %v = loop.load %x[%i, %k] : memref<4x8xf32>
        %n = arith.addf %acc, %v : f32
        loop.yield %n : f32
      }
      loop.store %s, %t[%i] : memref<4xf32>
    }
    %one = arith.constant 1.0 : f32
    loop.for %i2 = %c0 to %c4 step %c1 kind(parallel) {
      loop.for %j = %c0 to %c8 step %c1 kind(vectorized) {
        %v = loop.load %x[%i2, %j] : memref<4x8xf32>
        %s = loop.load %t[%i2] : memref<4xf32>
        %d = arith.divf %v, %s : f32
        loop.store %d, %y[%i2, %j] : memref<4x8xf32>
      }
    }
    loop.free %t : memref<4xf32>
    loop.return
  }

  loop.func @shifted(%x: memref<4xf32>, %y: memref<4xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %t = loop.alloc {scope = "local"} : memref<4xf32>
    loop.for %i = %c0 to %c3 step %c1 {
      %v = loop.load %x[%i] : memref<4xf32>
      loop.store %v, %t[%i] : memref<4xf32>
    }
    loop.for %i2 = %c0 to %c3 step %c1 {
      %n = arith.addi %i2, %c1 : index
      %v = loop.load %t[%n] : memref<4xf32>
      loop.store %v, %y[%i2] : memref<4xf32>
    }
    loop.free %t : memref<4xf32>
    loop.return
  }
}

// CHECK-LABEL: loop.func @stages(
// CHECK:         %t = loop.alloc
// CHECK:         %one = arith.constant
// CHECK-NEXT:    loop.for %i = %c0 to %c4 step %c1 kind(parallel) {
// CHECK:           loop.store %s, %t[%i]
// CHECK-NEXT:      loop.for %j = %c0 to %c8 step %c1 kind(vectorized) {
// CHECK:             loop.load %t[%i]
// CHECK-NOT:     loop.for
// CHECK:         loop.free %t
// CHECK-NEXT:    loop.return

// CHECK-LABEL: loop.func @shifted(
// CHECK:         loop.for %i = %c0 to %c3 step %c1 {
// CHECK:         loop.for %i2 = %c0 to %c3 step %c1 {
