// RUN: lamina-opt %s -p 'schedule-register-block{vector_bits=256 vector_registers=16 cores=2}' | filecheck %s
// RUN: lamina-opt %s -p 'schedule{vector_bits=256 vector_registers=16 cores=2}' | filecheck %s --check-prefix=FUSED
// RUN: lamina-opt %s -p 'schedule-register-block{vector_bits=256 vector_registers=16 cores=2 conv_channel_jam_everywhere=0}' | filecheck %s --check-prefix=BEFORE
// RUN: lamina-opt %s -p 'schedule-register-block{vector_bits=512 vector_registers=32 cores=2 conv_pointwise_jam_max=0}' | filecheck %s --check-prefix=AVX512

// Pointwise (1x1) convolutions in NCHW8c on 16 vector registers (AVX2), as
// lower-te emits them, on the short rows of small images (14 and 7 output
// columns). One output-channel block per step keeps a block of 14 (7) rows:
// each FMA needs its own broadcast load, R + 1 loads for R FMAs, more than
// the two vector loads per cycle that feed two FMA pipes (and 7 accumulators
// are fewer than the 8 that cover the FMA latency). On 16 registers the
// schedule jams output-channel blocks there too (`conv_channel_jam_everywhere`,
// derived from the register count), also where the jammed weights and the
// input row overflow L1 (1024 input channels below), and splits the rows
// into balanced blocks (`balanced_rows`): 14 columns x 2 blocks as 5 + 5 + 4
// rows (not 6 + 6 + 2), 7 columns x 3 blocks as 4 + 3. Direct (3x3)
// convolutions too, when each reduction step is a whole block of input
// channels.

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @pointwise_avx2_14(%in0: memref<1x8x14x14x8xf32>, %in1: memref<4x8x1x1x8x8xf32>, %in2: memref<1x4x1x1x8xf32>, %out0: memref<1x4x14x14x8xf32>) {
    %tmp = loop.alloc {scope = "local"} : memref<1x4x14x14x8xf32>
    %c0 = arith.constant 0 : index
    %cko = arith.constant 4 : index
    %c1 = arith.constant 1 : index
    %chw = arith.constant 14 : index
    %init = arith.constant 0.000000e+00 : f32
    %c8 = arith.constant 8 : index
    %ccb = arith.constant 8 : index
    loop.for %i1 = %c0 to %cko step %c1 kind(parallel) {
      loop.for %i2 = %c0 to %chw step %c1 {
        loop.for %i3 = %c0 to %chw step %c1 {
          loop.for %i4 = %c0 to %c8 step %c1 kind(vectorized) {
            loop.store %init, %tmp[%c0, %i1, %i2, %i3, %i4] : memref<1x4x14x14x8xf32>
          }
          loop.for %k0 = %c0 to %ccb step %c1 {
            loop.for %k3 = %c0 to %c8 step %c1 {
              loop.for %i4_1 = %c0 to %c8 step %c1 kind(vectorized) {
                %0 = arith.addi %i2, %c0 : index
                %1 = arith.addi %i3, %c0 : index
                %2 = loop.load %in0[%c0, %k0, %0, %1, %k3] : memref<1x8x14x14x8xf32>
                %3 = loop.load %in1[%i1, %k0, %c0, %c0, %k3, %i4_1] : memref<4x8x1x1x8x8xf32>
                %4 = arith.mulf %2, %3 : f32
                %acc = loop.load %tmp[%c0, %i1, %i2, %i3, %i4_1] : memref<1x4x14x14x8xf32>
                %5 = arith.addf %acc, %4 : f32
                loop.store %5, %tmp[%c0, %i1, %i2, %i3, %i4_1] : memref<1x4x14x14x8xf32>
              }
            }
          }
        }
      }
    }
    loop.for %i1_1 = %c0 to %cko step %c1 {
      loop.for %i2_1 = %c0 to %chw step %c1 {
        loop.for %i3_1 = %c0 to %chw step %c1 {
          loop.for %i4_2 = %c0 to %c8 step %c1 kind(vectorized) {
            %6 = arith.constant 0 : index
            %7 = loop.load %tmp[%6, %i1_1, %i2_1, %i3_1, %i4_2] : memref<1x4x14x14x8xf32>
            %8 = loop.load %in2[%6, %i1_1, %6, %6, %i4_2] : memref<1x4x1x1x8xf32>
            %9 = arith.addf %7, %8 : f32
            %10 = arith.constant 0.000000e+00 : f32
            %11 = arith.maximumf %9, %10 : f32
            loop.store %11, %out0[%c0, %i1_1, %i2_1, %i3_1, %i4_2] : memref<1x4x14x14x8xf32>
          }
        }
      }
    }
    loop.free %tmp : memref<1x4x14x14x8xf32>
    loop.return
  }
  loop.func @pointwise_avx2_7_wide(%in0: memref<1x128x7x7x8xf32>, %in1: memref<6x128x1x1x8x8xf32>, %in2: memref<1x6x1x1x8xf32>, %out0: memref<1x6x7x7x8xf32>) {
    %tmp = loop.alloc {scope = "local"} : memref<1x6x7x7x8xf32>
    %c0 = arith.constant 0 : index
    %cko = arith.constant 6 : index
    %c1 = arith.constant 1 : index
    %chw = arith.constant 7 : index
    %init = arith.constant 0.000000e+00 : f32
    %c8 = arith.constant 8 : index
    %ccb = arith.constant 128 : index
    loop.for %i1 = %c0 to %cko step %c1 kind(parallel) {
      loop.for %i2 = %c0 to %chw step %c1 {
        loop.for %i3 = %c0 to %chw step %c1 {
          loop.for %i4 = %c0 to %c8 step %c1 kind(vectorized) {
            loop.store %init, %tmp[%c0, %i1, %i2, %i3, %i4] : memref<1x6x7x7x8xf32>
          }
          loop.for %k0 = %c0 to %ccb step %c1 {
            loop.for %k3 = %c0 to %c8 step %c1 {
              loop.for %i4_1 = %c0 to %c8 step %c1 kind(vectorized) {
                %0 = arith.addi %i2, %c0 : index
                %1 = arith.addi %i3, %c0 : index
                %2 = loop.load %in0[%c0, %k0, %0, %1, %k3] : memref<1x128x7x7x8xf32>
                %3 = loop.load %in1[%i1, %k0, %c0, %c0, %k3, %i4_1] : memref<6x128x1x1x8x8xf32>
                %4 = arith.mulf %2, %3 : f32
                %acc = loop.load %tmp[%c0, %i1, %i2, %i3, %i4_1] : memref<1x6x7x7x8xf32>
                %5 = arith.addf %acc, %4 : f32
                loop.store %5, %tmp[%c0, %i1, %i2, %i3, %i4_1] : memref<1x6x7x7x8xf32>
              }
            }
          }
        }
      }
    }
    loop.for %i1_1 = %c0 to %cko step %c1 {
      loop.for %i2_1 = %c0 to %chw step %c1 {
        loop.for %i3_1 = %c0 to %chw step %c1 {
          loop.for %i4_2 = %c0 to %c8 step %c1 kind(vectorized) {
            %6 = arith.constant 0 : index
            %7 = loop.load %tmp[%6, %i1_1, %i2_1, %i3_1, %i4_2] : memref<1x6x7x7x8xf32>
            %8 = loop.load %in2[%6, %i1_1, %6, %6, %i4_2] : memref<1x6x1x1x8xf32>
            %9 = arith.addf %7, %8 : f32
            %10 = arith.constant 0.000000e+00 : f32
            %11 = arith.maximumf %9, %10 : f32
            loop.store %11, %out0[%c0, %i1_1, %i2_1, %i3_1, %i4_2] : memref<1x6x7x7x8xf32>
          }
        }
      }
    }
    loop.free %tmp : memref<1x6x7x7x8xf32>
    loop.return
  }
  loop.func @direct_3x3_s2_avx2_14(%in0: memref<1x8x29x29x8xf32>, %in1: memref<4x8x3x3x8x8xf32>, %out0: memref<1x4x14x14x8xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c14 = arith.constant 14 : index
    %init = arith.constant 0.000000e+00 : f32
    loop.for %i1 = %c0 to %c4 step %c1 kind(parallel) {
      loop.for %i2 = %c0 to %c14 step %c1 {
        loop.for %i3 = %c0 to %c14 step %c1 {
          loop.for %i4 = %c0 to %c8 step %c1 kind(vectorized) {
            loop.store %init, %out0[%c0, %i1, %i2, %i3, %i4] : memref<1x4x14x14x8xf32>
          }
          loop.for %k0 = %c0 to %c8 step %c1 {
            loop.for %k1 = %c0 to %c3 step %c1 {
              loop.for %k2 = %c0 to %c3 step %c1 {
                loop.for %k3 = %c0 to %c8 step %c1 {
                  loop.for %i4_1 = %c0 to %c8 step %c1 kind(vectorized) {
                    %0 = arith.muli %i2, %c2 : index
                    %1 = arith.addi %0, %k1 : index
                    %2 = arith.muli %i3, %c2 : index
                    %3 = arith.addi %2, %k2 : index
                    %4 = loop.load %in0[%c0, %k0, %1, %3, %k3] : memref<1x8x29x29x8xf32>
                    %5 = loop.load %in1[%i1, %k0, %k1, %k2, %k3, %i4_1] : memref<4x8x3x3x8x8xf32>
                    %6 = arith.mulf %4, %5 : f32
                    %acc = loop.load %out0[%c0, %i1, %i2, %i3, %i4_1] : memref<1x4x14x14x8xf32>
                    %7 = arith.addf %acc, %6 : f32
                    loop.store %7, %out0[%c0, %i1, %i2, %i3, %i4_1] : memref<1x4x14x14x8xf32>
                  }
                }
              }
            }
          }
        }
      }
    }
    loop.return
  }

  loop.func @direct_3x3_s2_avx2_few(%in0: memref<1x2x29x29x8xf32>, %in1: memref<4x2x3x3x8x8xf32>, %out0: memref<1x4x14x14x8xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c14 = arith.constant 14 : index
    %init = arith.constant 0.000000e+00 : f32
    loop.for %i1 = %c0 to %c4 step %c1 kind(parallel) {
      loop.for %i2 = %c0 to %c14 step %c1 {
        loop.for %i3 = %c0 to %c14 step %c1 {
          loop.for %i4 = %c0 to %c8 step %c1 kind(vectorized) {
            loop.store %init, %out0[%c0, %i1, %i2, %i3, %i4] : memref<1x4x14x14x8xf32>
          }
          loop.for %k0 = %c0 to %c2 step %c1 {
            loop.for %k1 = %c0 to %c3 step %c1 {
              loop.for %k2 = %c0 to %c3 step %c1 {
                loop.for %k3 = %c0 to %c8 step %c1 {
                  loop.for %i4_1 = %c0 to %c8 step %c1 kind(vectorized) {
                    %0 = arith.muli %i2, %c2 : index
                    %1 = arith.addi %0, %k1 : index
                    %2 = arith.muli %i3, %c2 : index
                    %3 = arith.addi %2, %k2 : index
                    %4 = loop.load %in0[%c0, %k0, %1, %3, %k3] : memref<1x2x29x29x8xf32>
                    %5 = loop.load %in1[%i1, %k0, %k1, %k2, %k3, %i4_1] : memref<4x2x3x3x8x8xf32>
                    %6 = arith.mulf %4, %5 : f32
                    %acc = loop.load %out0[%c0, %i1, %i2, %i3, %i4_1] : memref<1x4x14x14x8xf32>
                    %7 = arith.addf %acc, %6 : f32
                    loop.store %7, %out0[%c0, %i1, %i2, %i3, %i4_1] : memref<1x4x14x14x8xf32>
                  }
                }
              }
            }
          }
        }
      }
    }
    loop.return
  }
  loop.func @stem_7x7_s2_avx2(%in0: memref<1x3x33x33x1xf32>, %in1: memref<2x3x7x7x1x8xf32>, %out0: memref<1x2x14x14x8xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c7 = arith.constant 7 : index
    %c8 = arith.constant 8 : index
    %c14 = arith.constant 14 : index
    %init = arith.constant 0.000000e+00 : f32
    loop.for %i1 = %c0 to %c2 step %c1 kind(parallel) {
      loop.for %i2 = %c0 to %c14 step %c1 {
        loop.for %i3 = %c0 to %c14 step %c1 {
          loop.for %i4 = %c0 to %c8 step %c1 kind(vectorized) {
            loop.store %init, %out0[%c0, %i1, %i2, %i3, %i4] : memref<1x2x14x14x8xf32>
          }
          loop.for %k0 = %c0 to %c3 step %c1 {
            loop.for %k1 = %c0 to %c7 step %c1 {
              loop.for %k2 = %c0 to %c7 step %c1 {
                loop.for %i4_1 = %c0 to %c8 step %c1 kind(vectorized) {
                  %0 = arith.muli %i2, %c2 : index
                  %1 = arith.addi %0, %k1 : index
                  %2 = arith.muli %i3, %c2 : index
                  %3 = arith.addi %2, %k2 : index
                  %4 = loop.load %in0[%c0, %k0, %1, %3, %c0] : memref<1x3x33x33x1xf32>
                  %5 = loop.load %in1[%i1, %k0, %k1, %k2, %c0, %i4_1] : memref<2x3x7x7x1x8xf32>
                  %6 = arith.mulf %4, %5 : f32
                  %acc = loop.load %out0[%c0, %i1, %i2, %i3, %i4_1] : memref<1x2x14x14x8xf32>
                  %7 = arith.addf %acc, %6 : f32
                  loop.store %7, %out0[%c0, %i1, %i2, %i3, %i4_1] : memref<1x2x14x14x8xf32>
                }
              }
            }
          }
        }
      }
    }
    loop.return
  }
}

// 4 output blocks: 2 per step (3 does not divide 4); rows 5 + 5, then a
// block of the 4 tail rows.
// CHECK-LABEL: loop.func @pointwise_avx2_14(
// CHECK:         loop.for %i1o = %c0 to %cko step %c2 kind(parallel) {
// CHECK-NEXT:      %i1 = arith.addi %i1o, %c0 : index
// CHECK-NEXT:      %i1_1 = arith.addi %i1o, %c1 : index
// CHECK:             loop.for %i3o = %c0 to %c10 step %c5 {
// CHECK-COUNT-10:      loop.store %init, %tmp[%c0, %i1{{(_1)?}}, %i2, %i3
// CHECK:               loop.for %k3 = %c0 to %c8 step %c1 {
// CHECK-COUNT-5:         loop.for %{{.*}} = %c0 to %c8 step %c1 kind(vectorized) {
// CHECK-NEXT:              arith.addi %i2
// CHECK-NEXT:              arith.addi %i3
// CHECK-NEXT:              loop.load %in0[
// CHECK-NEXT:              loop.load %in1[%i1, %k0
// CHECK-NEXT:              loop.load %in1[%i1_1, %k0
// CHECK:             loop.for %i3o_1 = %c10 to %chw step %{{.*}} {
// CHECK-COUNT-8:       loop.store %init, %tmp[%c0, %i1{{(_1)?}}, %i2, %i3
// CHECK-NOT:     lamina.jam_channels

// 6 output blocks of 1024 input channels (the jammed weights and a row
// block's input overflow L1): 3 per step, rows 4 + 3.
// CHECK-LABEL: loop.func @pointwise_avx2_7_wide(
// CHECK:         loop.for %i1o = %c0 to %cko step %c3 kind(parallel) {
// CHECK:             loop.for %i3o = %c0 to %c4 step %c4 {
// CHECK:               loop.for %k3 = %c0 to %c8 step %c1 {
// CHECK-COUNT-4:         loop.for %{{.*}} = %c0 to %c8 step %c1 kind(vectorized) {
// CHECK-NEXT:              arith.addi %i2
// CHECK-NEXT:              arith.addi %i3
// CHECK-NEXT:              loop.load %in0[
// CHECK-NEXT:              loop.load %in1[%i1, %k0
// CHECK-NEXT:              loop.load %in1[%i1_1, %k0
// CHECK-NEXT:              loop.load %in1[%i1_2, %k0
// CHECK:             loop.for %i3o_1 = %c4 to %chw step %c3 {
// CHECK-COUNT-9:       loop.store %init, %tmp[%c0, %i1{{(_[12])?}}, %i2, %i3

// A direct 3x3 stride-2 convolution whose reduction steps through whole
// blocks of 8 input channels (8 of them): jammed the same way (5 + 5 + 4
// rows x 2).
// CHECK-LABEL: loop.func @direct_3x3_s2_avx2_14(
// CHECK:         loop.for %i1o = %c0 to %c4 step %c2 kind(parallel) {
// CHECK:             loop.for %i3o = %c0 to %c10 step %c5 {
// CHECK:                   loop.for %k3 = %c0 to %c8 step %c1 {
// CHECK-COUNT-5:             loop.for %{{.*}} = %c0 to %c8 step %c1 kind(vectorized) {
// CHECK:                       loop.load %in1[%i1, %k0, %k1, %k2, %k3
// CHECK-NEXT:                  loop.load %in1[%i1_1, %k0, %k1, %k2, %k3
// CHECK:             loop.for %i3o_1 = %c10 to %c14 step %c4 {

// With 2 input-channel blocks (16 -> 32 channels) too: the same 5 + 5 + 4
// rows x 2 blocks, the reduction over 2 x 3 x 3 x 8 (once kept out of the
// jam by a minimum of 8 blocks, when LLVM lost the jammed accumulators of a
// collapsed loop over 32 rows: docs/performance.md).
// CHECK-LABEL: loop.func @direct_3x3_s2_avx2_few(
// CHECK:         loop.for %i1o = %c0 to %c4 step %c2 kind(parallel) {
// CHECK:             loop.for %i3o = %c0 to %c10 step %c5 {
// CHECK:               loop.for %k0 = %c0 to %c2 step %c1 {
// CHECK:                   loop.for %k3 = %c0 to %c8 step %c1 {
// CHECK-COUNT-5:             loop.for %{{.*}} = %c0 to %c8 step %c1 kind(vectorized) {
// CHECK:                       loop.load %in1[%i1, %k0, %k1, %k2, %k3
// CHECK-NEXT:                  loop.load %in1[%i1_1, %k0, %k1, %k2, %k3
// CHECK:             loop.for %i3o_1 = %c10 to %c14 step %c4 {

// A stem read as NCHW1c (3 input channels) steps through its 7 window
// columns instead; it is jammed too (`conv_stem_channel_jam`,
// schedule-channel-jam-stem.mlir): 2 blocks x 5 + 5 + 4 rows.
// CHECK-LABEL: loop.func @stem_7x7_s2_avx2(
// CHECK:         loop.for %i1o = %c0 to %c2 step %c2 kind(parallel) {
// CHECK:             loop.for %i3o = %c0 to %c10 step %c5 {
// CHECK:                     loop.load %in1[%i1, %k0, %k1, %k2, %c0
// CHECK-NEXT:                loop.load %in1[%i1_1, %k0, %k1, %k2, %c0

// The whole schedule: the bias + relu epilogue is fused and jammed too.
// FUSED-LABEL: loop.func @pointwise_avx2_14(
// FUSED:         loop.for %i1o = %c0 to %cko step %c2 kind(parallel) {
// FUSED:             loop.for %i3o = %c0 to %c10 step %c5 {
// FUSED:             loop.for %i3o_1 = %c10 to %chw step %{{.*}} {
// FUSED-COUNT-2:       arith.maximumf
// FUSED-NOT:     lamina.jam_channels
// FUSED-LABEL: loop.func @pointwise_avx2_7_wide(
// FUSED:         loop.for %i1o = %c0 to %cko step %c3 kind(parallel) {
// FUSED-COUNT-3:       arith.maximumf

// The rule before (and with `conv_channel_jam_everywhere=0`): one block per
// step, all 14 (7) rows in one register block.
// BEFORE-LABEL: loop.func @pointwise_avx2_14(
// BEFORE:         loop.for %i1 = %c0 to %cko step %c1 kind(parallel) {
// BEFORE:             loop.for %i3o = %c0 to %chw step %chw {
// BEFORE-LABEL: loop.func @pointwise_avx2_7_wide(
// BEFORE:         loop.for %i1 = %c0 to %cko step %c1 kind(parallel) {
// BEFORE:             loop.for %i3o = %c0 to %chw step %chw {

// BEFORE-LABEL: loop.func @direct_3x3_s2_avx2_14(
// BEFORE:         loop.for %i1 = %c0 to %c4 step %c1 kind(parallel) {
// BEFORE:             loop.for %i3o = %c0 to %c14 step %c14 {

// 32 registers (AVX-512: the broadcasts hoisted, a 512-bit FMA per two
// pipes): unchanged, one block of 14 (7) rows.
// AVX512-LABEL: loop.func @pointwise_avx2_14(
// AVX512:         loop.for %i1 = %c0 to %cko step %c1 kind(parallel) {
// AVX512:             loop.for %i3o = %c0 to %chw step %chw {
// AVX512-LABEL: loop.func @pointwise_avx2_7_wide(
// AVX512:         loop.for %i1 = %c0 to %cko step %c1 kind(parallel) {
// AVX512:             loop.for %i3o = %c0 to %chw step %chw {
// AVX512-LABEL: loop.func @direct_3x3_s2_avx2_14(
// AVX512:         loop.for %i1 = %c0 to %c4 step %c1 kind(parallel) {
// AVX512:             loop.for %i3o = %c0 to %c14 step %c14 {
