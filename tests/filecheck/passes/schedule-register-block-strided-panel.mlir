// RUN: lamina-opt %s -p 'schedule-register-block{vector_bits=512 vector_registers=32 cores=1}' | filecheck %s

// A whole-row register block (N = NR = 32 on AVX-512) whose B rows lie
// further apart than the row is long: attention's probabilities @ V, V read
// in place from the QKV projection (32 columns of rows 768 floats apart,
// whose 128 rows crowd 8 of L1's 64 sets). Per head, before the row blocks,
// V_h is copied into a contiguous 128x32 panel that the micro-kernel reads.
// A B whose rows are the row (32 floats) is read in place, as before.

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @attn_v(%p: memref<8x128x128xf32>, %qkv: memref<128x768xf32>, %o: memref<8x128x32xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c32 = arith.constant 32 : index
    %c128 = arith.constant 128 : index
    %c512 = arith.constant 512 : index
    %zero = arith.constant 0.0 : f32
    loop.for %h = %c0 to %c8 step %c1 kind(parallel) {
      loop.for %i = %c0 to %c128 step %c1 {
        loop.for %j = %c0 to %c32 step %c1 kind(vectorized) {
          loop.store %zero, %o[%h, %i, %j] : memref<8x128x32xf32>
        }
        loop.for %k = %c0 to %c128 step %c1 {
          loop.for %j2 = %c0 to %c32 step %c1 kind(vectorized) {
            %x = loop.load %p[%h, %i, %k] : memref<8x128x128xf32>
            %hc = arith.muli %h, %c32 : index
            %vc = arith.addi %hc, %j2 : index
            %col = arith.addi %vc, %c512 : index
            %y = loop.load %qkv[%k, %col] : memref<128x768xf32>
            %m = arith.mulf %x, %y : f32
            %acc = loop.load %o[%h, %i, %j2] : memref<8x128x32xf32>
            %s = arith.addf %acc, %m : f32
            loop.store %s, %o[%h, %i, %j2] : memref<8x128x32xf32>
          }
        }
      }
    }
    loop.return
  }

  loop.func @contiguous(%a: memref<128x128xf32>, %b: memref<128x32xf32>, %c: memref<128x32xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %c128 = arith.constant 128 : index
    %zero = arith.constant 0.0 : f32
    loop.for %i = %c0 to %c128 step %c1 kind(parallel) {
      loop.for %j = %c0 to %c32 step %c1 kind(vectorized) {
        loop.store %zero, %c[%i, %j] : memref<128x32xf32>
      }
      loop.for %k = %c0 to %c128 step %c1 {
        loop.for %j2 = %c0 to %c32 step %c1 kind(vectorized) {
          %x = loop.load %a[%i, %k] : memref<128x128xf32>
          %y = loop.load %b[%k, %j2] : memref<128x32xf32>
          %m = arith.mulf %x, %y : f32
          %acc = loop.load %c[%i, %j2] : memref<128x32xf32>
          %s = arith.addf %acc, %m : f32
          loop.store %s, %c[%i, %j2] : memref<128x32xf32>
        }
      }
    }
    loop.return
  }
}

// CHECK-LABEL: loop.func @attn_v
// CHECK:         loop.for %h = %c0 to %c8 step %c1 kind(parallel) {
// CHECK:           %[[PANEL:.*]] = loop.alloc {scope = "local"} : memref<128x32xf32>
// CHECK:           loop.for {{.*}} to %c32 step %c1 kind(vectorized) {
// CHECK-NEXT:        arith.addi
// CHECK-NEXT:        loop.load %qkv
// CHECK-NEXT:        loop.store {{.*}}, %[[PANEL]]
// CHECK:           loop.for %io = %c0 to %c128 step %c8 {
// CHECK:             loop.for %k = %c0 to %c128 step %c1 {
// CHECK:               loop.load %[[PANEL]][%k,
// CHECK-NOT:           loop.load %qkv
// CHECK:           loop.free %[[PANEL]]

// CHECK-LABEL: loop.func @contiguous
// CHECK-NOT:     loop.alloc
// CHECK:         loop.load %b[%k,
// CHECK:         loop.return
