// RUN: lamina-opt %s -p 'schedule-register-block{vector_bits=256 vector_registers=16 cores=2}' | filecheck %s
// RUN: lamina-opt %s -p 'schedule-register-block{vector_bits=256 vector_registers=16 cores=2 conv_channel_jam_everywhere=0}' | filecheck %s --check-prefix=ONE
// RUN: lamina-opt %s -p 'schedule-register-block{vector_bits=256 vector_registers=16 cores=2 conv_stem_channel_jam=0}' | filecheck %s --check-prefix=ONE
// RUN: lamina-opt %s -p 'schedule-register-block{vector_bits=512 vector_registers=32 cores=2 conv_stem_jam_wide=0}' | filecheck %s --check-prefix=AVX512

// A stem convolution (3x3 stride 2, 3 -> 16 channels, as lower-te emits it
// for MobileNet's and EfficientNet's first layer on a 32x32 image): its input
// is read as NCHW1c (blocks of one channel, a zero-padded copy), so its
// reduction steps through the window's columns, not through a block of
// input channels. On 16 vector registers (AVX2) a one-block step is
// R broadcasts + 1 weight load for R FMAs; two output-channel blocks share
// each broadcast (`_one_channel_blocks` in schedule/register_block.py),
// and the 16 output columns are balanced rows of 6 + 6 + 4. Measured,
// AVX2 build, one thread: 3->32 at 224x224 345 -> 253 us, ResNet's 7x7
// 3->64 2780 -> 2323 us (docs/performance.md, "AVX2 stems and the network's input").
// With `conv_stem_channel_jam=0`, or with 32 registers (AVX-512) and
// `conv_stem_jam_wide=0`, the stem keeps one block per step (AVX-512 with
// the wide rule: schedule-stem-jam-wide.mlir).

// CHECK-LABEL: loop.func @stem_avx2
// CHECK:      loop.for %i1o = %c0 to %c2 step %c2 {
// CHECK-NEXT:   %i1_1 = arith.addi %i1o, %c0 : index
// CHECK-NEXT:   %i1_2 = arith.addi %i1o, %c1 : index
// CHECK:        loop.for %i3o = %c0 to %c12 step %c6 {
// CHECK:          loop.for %k0 = %c0 to %c3 step %c1 {
// CHECK-NEXT:       loop.for %k1 = %c0 to %c3 step %c1 {
// CHECK-NEXT:         loop.for %k2 = %c0 to %c3 step %c1 {
// CHECK:                %[[X:.*]] = loop.load %tmp[%c0, %k0, %{{.*}}, %{{.*}}, %c0] : memref<1x3x33x33x1xf32>
// CHECK-NEXT:           %[[W0:.*]] = loop.load %in1[%i1_1, %k0, %k1, %k2, %c0, %{{.*}}] : memref<2x3x3x3x1x8xf32>
// CHECK-NEXT:           %[[W1:.*]] = loop.load %in1[%i1_2, %k0, %k1, %k2, %c0, %{{.*}}] : memref<2x3x3x3x1x8xf32>
// CHECK:        loop.for %i3o_1 = %c12 to %c16 step %c4 {

// ONE-LABEL: loop.func @stem_avx2
// ONE:      loop.for %i1_1 = %c0 to %c2 step %c1
// ONE:        loop.for %i3o = %c0 to %c16 step %c8 {
// ONE:          loop.load %in1[%i1_1, %k0, %k1, %k2, %c0, %{{.*}}] : memref<2x3x3x3x1x8xf32>
// ONE-NEXT:     arith.mulf

// AVX512-LABEL: loop.func @stem_avx2
// AVX512:     loop.for %i1_1 = %c0 to %c2 step %c1
// AVX512:       loop.for %i3o = %c0 to %c16 step %c8 {
// AVX512:         loop.load %in1[%i1_1, %k0, %k1, %k2, %c0, %{{.*}}] : memref<2x3x3x3x1x8xf32>
// AVX512-NEXT:    arith.mulf

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @stem_avx2(%in0: memref<1x3x32x32x1xf32>, %in1: memref<2x3x3x3x1x8xf32>, %in2: memref<1x2x1x1x8xf32>, %out0: memref<1x2x16x16x8xf32>) {
    %tmp = loop.alloc {scope = "local"} : memref<1x3x33x33x1xf32>
    %c0 = arith.constant 0 : index
    %c3 = arith.constant 3 : index
    %c1 = arith.constant 1 : index
    %c33 = arith.constant 33 : index
    loop.for %i1 = %c0 to %c3 step %c1 {
      loop.for %i2 = %c0 to %c33 step %c1 {
        loop.for %i3 = %c0 to %c33 step %c1 kind(vectorized) {
          %0 = arith.constant -1 : index
          %1 = arith.addi %i2, %0 : index
          %2 = arith.constant 0 : index
          %3 = arith.cmpi sge, %1, %2 : index
          %4 = arith.select %3, %1, %2 : index
          %5 = arith.addi %i3, %0 : index
          %6 = arith.cmpi sge, %5, %2 : index
          %7 = arith.select %6, %5, %2 : index
          %8 = loop.load %in0[%c0, %i1, %4, %7, %c0] : memref<1x3x32x32x1xf32>
          %9 = arith.constant 0.000000e+00 : f32
          %10 = arith.andi %3, %6 : i1
          %11 = arith.select %10, %8, %9 : f32
          loop.store %11, %tmp[%c0, %i1, %i2, %i3, %c0] : memref<1x3x33x33x1xf32>
        }
      }
    }
    %tmp_1 = loop.alloc {scope = "local"} : memref<1x2x16x16x8xf32>
    %c2 = arith.constant 2 : index
    %c16 = arith.constant 16 : index
    %init = arith.constant 0.000000e+00 : f32
    %c8 = arith.constant 8 : index
    loop.for %i1_1 = %c0 to %c2 step %c1 {
      loop.for %i2_1 = %c0 to %c16 step %c1 {
        loop.for %i3_1 = %c0 to %c16 step %c1 {
          loop.for %i4 = %c0 to %c8 step %c1 kind(vectorized) {
            loop.store %init, %tmp_1[%c0, %i1_1, %i2_1, %i3_1, %i4] : memref<1x2x16x16x8xf32>
          }
          loop.for %k0 = %c0 to %c3 step %c1 {
            loop.for %k1 = %c0 to %c3 step %c1 {
              loop.for %k2 = %c0 to %c3 step %c1 {
                loop.for %i4_1 = %c0 to %c8 step %c1 kind(vectorized) {
                  %12 = arith.constant 2 : index
                  %13 = arith.muli %i2_1, %12 : index
                  %14 = arith.addi %13, %k1 : index
                  %15 = arith.muli %i3_1, %12 : index
                  %16 = arith.addi %15, %k2 : index
                  %17 = loop.load %tmp[%c0, %k0, %14, %16, %c0] : memref<1x3x33x33x1xf32>
                  %18 = loop.load %in1[%i1_1, %k0, %k1, %k2, %c0, %i4_1] : memref<2x3x3x3x1x8xf32>
                  %19 = arith.mulf %17, %18 : f32
                  %20 = arith.addi %k0, %c0 : index
                  %acc = loop.load %tmp_1[%c0, %i1_1, %i2_1, %i3_1, %i4_1] : memref<1x2x16x16x8xf32>
                  %21 = arith.addf %acc, %19 : f32
                  loop.store %21, %tmp_1[%c0, %i1_1, %i2_1, %i3_1, %i4_1] : memref<1x2x16x16x8xf32>
                }
              }
            }
          }
        }
      }
    }
    loop.free %tmp : memref<1x3x33x33x1xf32>
    loop.for %i1_2 = %c0 to %c2 step %c1 {
      loop.for %i2_2 = %c0 to %c16 step %c1 {
        loop.for %i3_2 = %c0 to %c16 step %c1 {
          loop.for %i4_2 = %c0 to %c8 step %c1 kind(vectorized) {
            %22 = arith.constant 0 : index
            %23 = loop.load %tmp_1[%22, %i1_2, %i2_2, %i3_2, %i4_2] : memref<1x2x16x16x8xf32>
            %24 = loop.load %in2[%22, %i1_2, %22, %22, %i4_2] : memref<1x2x1x1x8xf32>
            %25 = arith.addf %23, %24 : f32
            loop.store %25, %out0[%c0, %i1_2, %i2_2, %i3_2, %i4_2] : memref<1x2x16x16x8xf32>
          }
        }
      }
    }
    loop.free %tmp_1 : memref<1x2x16x16x8xf32>
    loop.return
  }
}
