// RUN: lamina-opt %s -p 'schedule-register-block{vector_bits=256 vector_registers=16 cores=2}' | filecheck %s
// RUN: lamina-opt %s -p 'schedule-register-block{vector_bits=512 vector_registers=32 cores=2 conv_pointwise_jam_max=0}' | filecheck %s --check-prefix=AVX512

// A channel-blocked depthwise 3x3 convolution (input already padded), as
// lower-te emits it: its register block's rows are output columns, and each
// row reads an input vector of its own (`x[.., i3 + k1, i4]` along the lanes),
// only the weight vector is shared. With 16 registers the block counts one
// register per row for it (`block_broadcast_registers` 0 for this nest): at
// most (16 - 1) / 2 = 7 rows, so the 14 output columns are two blocks of 7
// (a matmul's rows share one broadcast register: 14 rows would fit). With 32
// registers at most 15: one block of 14, as before. A pointwise convolution
// (@pointwise: its input is a broadcast scalar per row) is blocked as before:
// on 16 registers two output-channel blocks jammed, rows 5 + 5 + 4.
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @te_fused_conv2d_1x2x14x14x8xf32_loop(%in0: memref<1x2x16x16x8xf32>, %in1: memref<2x1x3x3x1x8xf32>, %out0: memref<1x2x14x14x8xf32>) {
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    %c1 = arith.constant 1 : index
    %c14 = arith.constant 14 : index
    %init = arith.constant 0.000000e+00 : f32
    %c8 = arith.constant 8 : index
    %c3 = arith.constant 3 : index
    loop.for %i1 = %c0 to %c2 step %c1 {
      loop.for %i2 = %c0 to %c14 step %c1 {
        loop.for %i3 = %c0 to %c14 step %c1 {
          loop.for %i4 = %c0 to %c8 step %c1 kind(vectorized) {
            loop.store %init, %out0[%c0, %i1, %i2, %i3, %i4] : memref<1x2x14x14x8xf32>
          }
          loop.for %k0 = %c0 to %c3 step %c1 {
            loop.for %k1 = %c0 to %c3 step %c1 {
              loop.for %i4_1 = %c0 to %c8 step %c1 kind(vectorized) {
                %c0_1 = arith.constant 0 : index
                %h = arith.addi %i2, %k0 : index
                %w = arith.addi %i3, %k1 : index
                %x = loop.load %in0[%c0, %i1, %h, %w, %i4_1] : memref<1x2x16x16x8xf32>
                %f = loop.load %in1[%i1, %c0_1, %k0, %k1, %c0_1, %i4_1] : memref<2x1x3x3x1x8xf32>
                %m = arith.mulf %x, %f : f32
                %acc = loop.load %out0[%c0, %i1, %i2, %i3, %i4_1] : memref<1x2x14x14x8xf32>
                %0 = arith.addf %acc, %m : f32
                loop.store %0, %out0[%c0, %i1, %i2, %i3, %i4_1] : memref<1x2x14x14x8xf32>
              }
            }
          }
        }
      }
    }
    loop.return
  }
  loop.func @pointwise(%in0: memref<1x2x14x14x8xf32>, %in1: memref<2x2x1x1x8x8xf32>, %out0: memref<1x2x14x14x8xf32>) {
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    %c1 = arith.constant 1 : index
    %c14 = arith.constant 14 : index
    %init = arith.constant 0.000000e+00 : f32
    %c8 = arith.constant 8 : index
    loop.for %i1 = %c0 to %c2 step %c1 {
      loop.for %i2 = %c0 to %c14 step %c1 {
        loop.for %i3 = %c0 to %c14 step %c1 {
          loop.for %i4 = %c0 to %c8 step %c1 kind(vectorized) {
            loop.store %init, %out0[%c0, %i1, %i2, %i3, %i4] : memref<1x2x14x14x8xf32>
          }
          loop.for %k0 = %c0 to %c2 step %c1 {
            loop.for %k1 = %c0 to %c8 step %c1 {
              loop.for %i4_1 = %c0 to %c8 step %c1 kind(vectorized) {
                %x = loop.load %in0[%c0, %k0, %i2, %i3, %k1] : memref<1x2x14x14x8xf32>
                %f = loop.load %in1[%i1, %k0, %c0, %c0, %k1, %i4_1] : memref<2x2x1x1x8x8xf32>
                %m = arith.mulf %x, %f : f32
                %acc = loop.load %out0[%c0, %i1, %i2, %i3, %i4_1] : memref<1x2x14x14x8xf32>
                %0 = arith.addf %acc, %m : f32
                loop.store %0, %out0[%c0, %i1, %i2, %i3, %i4_1] : memref<1x2x14x14x8xf32>
              }
            }
          }
        }
      }
    }
    loop.return
  }
}

// CHECK-LABEL: loop.func @te_fused_conv2d_1x2x14x14x8xf32_loop(
// CHECK:         loop.for %{{.*}} = %c0 to %c14 step %c1 {
// CHECK-NEXT:      loop.for %[[O:.*]] = %c0 to %c14 step %c7 {
// CHECK-COUNT-7:     loop.load %in0[
// CHECK:           loop.return

// CHECK-LABEL: loop.func @pointwise(
// CHECK:         loop.for %{{.*}} = %c0 to %c2 step %c2 {
// CHECK:           loop.for %{{.*}} = %c0 to %c10 step %c5 {

// AVX512-LABEL: loop.func @te_fused_conv2d_1x2x14x14x8xf32_loop(
// AVX512:         loop.for %{{.*}} = %c0 to %c14 step %c14 {
// AVX512-LABEL: loop.func @pointwise(
// AVX512:         loop.for %{{.*}} = %c0 to %c14 step %c14 {
