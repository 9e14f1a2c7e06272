// RUN: lamina-opt %s -p 'schedule{vector_bits=256 vector_registers=16 cores=1}' | filecheck %s
// RUN: lamina-opt %s -p 'schedule{vector_bits=256 vector_registers=16 cores=1 conv_weight_prefetch=0}' | filecheck %s --check-prefix=OFF
// RUN: lamina-opt %s -p 'schedule{vector_bits=512 vector_registers=32 cores=1}' | filecheck %s --check-prefix=OFF

// A pointwise (1x1) convolution in NCHW8c on 16 vector registers (AVX2),
// 64 -> 48 channels at 14x14: 6 output-channel blocks, jammed 3 at a time
// over a flat row of 196 pixels in blocks of 4 (49 steps). In a network its
// weights come from L3 or memory at every call, so each step of the
// jammed channel loop prefetches into L2 (`conv_weight_prefetch` = 2,
// derived from the 16 registers) the weights of the next step's 3 blocks:
// pixel step g takes input-channel block g (ceil(8 / 49) = 1 per step, none
// after the 8th: an empty loop), one prefetch per 64-byte line (4 lines of
// a block's 8 x 8 floats) and block, the block index clamped to the last
// one. The reduction itself is unchanged (a call inside it would keep LLVM
// from holding the accumulators in registers). Not with the knob at 0, nor
// on 32 registers (AVX-512: 0 by default).

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @pointwise_prefetch(%in0: memref<1x8x14x14x8xf32>, %in1: memref<6x8x1x1x8x8xf32>, %out0: memref<1x6x14x14x8xf32>) {
    %c0 = arith.constant 0 : index
    %cko = arith.constant 6 : index
    %c1 = arith.constant 1 : index
    %chw = arith.constant 14 : index
    %init = arith.constant 0.000000e+00 : f32
    %c8 = arith.constant 8 : index
    %ccb = arith.constant 8 : index
    loop.for %i1 = %c0 to %cko step %c1 kind(parallel) {
      loop.for %i2 = %c0 to %chw step %c1 {
        loop.for %i3 = %c0 to %chw step %c1 {
          loop.for %i4 = %c0 to %c8 step %c1 kind(vectorized) {
            loop.store %init, %out0[%c0, %i1, %i2, %i3, %i4] : memref<1x6x14x14x8xf32>
          }
          loop.for %k0 = %c0 to %ccb step %c1 {
            loop.for %k3 = %c0 to %c8 step %c1 {
              loop.for %i4_1 = %c0 to %c8 step %c1 kind(vectorized) {
                %0 = arith.addi %i2, %c0 : index
                %1 = arith.addi %i3, %c0 : index
                %2 = loop.load %in0[%c0, %k0, %0, %1, %k3] : memref<1x8x14x14x8xf32>
                %3 = loop.load %in1[%i1, %k0, %c0, %c0, %k3, %i4_1] : memref<6x8x1x1x8x8xf32>
                %4 = arith.mulf %2, %3 : f32
                %acc = loop.load %out0[%c0, %i1, %i2, %i3, %i4_1] : memref<1x6x14x14x8xf32>
                %5 = arith.addf %acc, %4 : f32
                loop.store %5, %out0[%c0, %i1, %i2, %i3, %i4_1] : memref<1x6x14x14x8xf32>
              }
            }
          }
        }
      }
    }
    loop.return
  }
}

// CHECK-LABEL: loop.func @pointwise_prefetch
// CHECK:       loop.for %[[CO:.*]] = %c0 to %cko step %c3 kind(parallel) {
// CHECK:         loop.for %[[PX:.*]] = %c0 to %c196 step %c4 {
// CHECK:           %[[REL:.*]] = arith.subi %[[PX]], %{{.*}} : index
// CHECK-NEXT:      %[[NTH:.*]] = arith.divui %[[REL]], %{{.*}} : index
// CHECK-NEXT:      %[[LO:.*]] = arith.muli %[[NTH]], %{{.*}} : index
// CHECK-NEXT:      %[[UP:.*]] = arith.addi %[[LO]], %{{.*}} : index
// CHECK-NEXT:      %[[HI:.*]] = arith.minsi %[[UP]], %{{.*}} : index
// CHECK-NEXT:      loop.for %[[CI:.*]] = %[[LO]] to %[[HI]] step %{{.*}} {
// CHECK-COUNT-12:    loop.prefetch %in1[%{{.*}}, %[[CI]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] {locality = 2 : i32}
// CHECK-NOT:         loop.prefetch
// CHECK:           }
// CHECK:           loop.for %{{.*}} = %c0 to %ccb step %c1 {
// CHECK-NOT:         loop.prefetch
// CHECK:             loop.load %in1[

// OFF-LABEL: loop.func @pointwise_prefetch
// OFF-NOT:   loop.prefetch
