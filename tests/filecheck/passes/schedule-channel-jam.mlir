// RUN: lamina-opt %s -p 'schedule-register-block{vector_bits=512 vector_registers=32 cores=2 conv_pointwise_jam_max=0}' | filecheck %s
// RUN: lamina-opt %s -p 'schedule{vector_bits=512 vector_registers=32 cores=2 conv_pointwise_jam_max=0}' | filecheck %s --check-prefix=FUSED
// RUN: lamina-opt %s -p 'schedule-register-block{vector_bits=256 vector_registers=16 cores=2}' | filecheck %s --check-prefix=AVX2
// RUN: lamina-opt %s -p 'schedule-register-block{vector_bits=512 vector_registers=32 cores=2 conv_pointwise_jam_max=0 conv_channel_jam=2}' | filecheck %s --check-prefix=FORCED

// Pointwise (1x1) convolutions in NCHW{c}c with a bias + relu epilogue, as
// lower-te emits them. A row of 28 (56) output columns is longer than one
// one-block register block (14 rows), so the micro-kernel computes two
// output-channel blocks per input broadcast: the channel-block loop is split
// by 2 and both blocks are jammed into the rows' reduction -- each broadcast
// input element feeds two FMAs, one per weight vector. AVX-512: 7 rows x 2
// blocks (14 accumulators); AVX2 (8 lanes, 16 registers): 6 rows x 2 blocks
// (12 accumulators, 2 weight vectors, 1 broadcast), the last 2 of 56 columns
// a tail. A row of 14 columns keeps one block of 14 rows unless
// `conv_channel_jam` forces it.

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @pointwise_28(%in0: memref<1x2x28x28x16xf32>, %in1: memref<4x2x1x1x16x16xf32>, %in2: memref<1x4x1x1x16xf32>, %out0: memref<1x4x28x28x16xf32>) {
    %tmp = loop.alloc {scope = "local"} : memref<1x4x28x28x16xf32>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c1 = arith.constant 1 : index
    %c28 = arith.constant 28 : index
    %init = arith.constant 0.000000e+00 : f32
    %c16 = arith.constant 16 : index
    %c2 = arith.constant 2 : index
    loop.for %i1 = %c0 to %c4 step %c1 kind(parallel) {
      loop.for %i2 = %c0 to %c28 step %c1 {
        loop.for %i3 = %c0 to %c28 step %c1 {
          loop.for %i4 = %c0 to %c16 step %c1 kind(vectorized) {
            loop.store %init, %tmp[%c0, %i1, %i2, %i3, %i4] : memref<1x4x28x28x16xf32>
          }
          loop.for %k0 = %c0 to %c2 step %c1 {
            loop.for %k3 = %c0 to %c16 step %c1 {
              loop.for %i4_1 = %c0 to %c16 step %c1 kind(vectorized) {
                %0 = arith.addi %i2, %c0 : index
                %1 = arith.addi %i3, %c0 : index
                %2 = loop.load %in0[%c0, %k0, %0, %1, %k3] : memref<1x2x28x28x16xf32>
                %3 = loop.load %in1[%i1, %k0, %c0, %c0, %k3, %i4_1] : memref<4x2x1x1x16x16xf32>
                %4 = arith.mulf %2, %3 : f32
                %5 = arith.constant 16 : index
                %6 = arith.muli %k0, %5 : index
                %7 = arith.addi %6, %k3 : index
                %acc = loop.load %tmp[%c0, %i1, %i2, %i3, %i4_1] : memref<1x4x28x28x16xf32>
                %8 = arith.addf %acc, %4 : f32
                loop.store %8, %tmp[%c0, %i1, %i2, %i3, %i4_1] : memref<1x4x28x28x16xf32>
              }
            }
          }
        }
      }
    }
    loop.for %i1_1 = %c0 to %c4 step %c1 {
      loop.for %i2_1 = %c0 to %c28 step %c1 {
        loop.for %i3_1 = %c0 to %c28 step %c1 {
          loop.for %i4_2 = %c0 to %c16 step %c1 kind(vectorized) {
            %9 = arith.constant 0 : index
            %10 = loop.load %tmp[%9, %i1_1, %i2_1, %i3_1, %i4_2] : memref<1x4x28x28x16xf32>
            %11 = loop.load %in2[%9, %i1_1, %9, %9, %i4_2] : memref<1x4x1x1x16xf32>
            %12 = arith.addf %10, %11 : f32
            %13 = arith.constant 0.000000e+00 : f32
            %14 = arith.maximumf %12, %13 : f32
            loop.store %14, %out0[%c0, %i1_1, %i2_1, %i3_1, %i4_2] : memref<1x4x28x28x16xf32>
          }
        }
      }
    }
    loop.free %tmp : memref<1x4x28x28x16xf32>
    loop.return
  }
  loop.func @pointwise_avx2_56(%in0: memref<1x2x56x56x8xf32>, %in1: memref<4x2x1x1x8x8xf32>, %in2: memref<1x4x1x1x8xf32>, %out0: memref<1x4x56x56x8xf32>) {
    %tmp = loop.alloc {scope = "local"} : memref<1x4x56x56x8xf32>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c1 = arith.constant 1 : index
    %c56 = arith.constant 56 : index
    %init = arith.constant 0.000000e+00 : f32
    %c8 = arith.constant 8 : index
    %c2 = arith.constant 2 : index
    loop.for %i1 = %c0 to %c4 step %c1 kind(parallel) {
      loop.for %i2 = %c0 to %c56 step %c1 {
        loop.for %i3 = %c0 to %c56 step %c1 {
          loop.for %i4 = %c0 to %c8 step %c1 kind(vectorized) {
            loop.store %init, %tmp[%c0, %i1, %i2, %i3, %i4] : memref<1x4x56x56x8xf32>
          }
          loop.for %k0 = %c0 to %c2 step %c1 {
            loop.for %k3 = %c0 to %c8 step %c1 {
              loop.for %i4_1 = %c0 to %c8 step %c1 kind(vectorized) {
                %0 = arith.addi %i2, %c0 : index
                %1 = arith.addi %i3, %c0 : index
                %2 = loop.load %in0[%c0, %k0, %0, %1, %k3] : memref<1x2x56x56x8xf32>
                %3 = loop.load %in1[%i1, %k0, %c0, %c0, %k3, %i4_1] : memref<4x2x1x1x8x8xf32>
                %4 = arith.mulf %2, %3 : f32
                %5 = arith.constant 8 : index
                %6 = arith.muli %k0, %5 : index
                %7 = arith.addi %6, %k3 : index
                %acc = loop.load %tmp[%c0, %i1, %i2, %i3, %i4_1] : memref<1x4x56x56x8xf32>
                %8 = arith.addf %acc, %4 : f32
                loop.store %8, %tmp[%c0, %i1, %i2, %i3, %i4_1] : memref<1x4x56x56x8xf32>
              }
            }
          }
        }
      }
    }
    loop.for %i1_1 = %c0 to %c4 step %c1 {
      loop.for %i2_1 = %c0 to %c56 step %c1 {
        loop.for %i3_1 = %c0 to %c56 step %c1 {
          loop.for %i4_2 = %c0 to %c8 step %c1 kind(vectorized) {
            %9 = arith.constant 0 : index
            %10 = loop.load %tmp[%9, %i1_1, %i2_1, %i3_1, %i4_2] : memref<1x4x56x56x8xf32>
            %11 = loop.load %in2[%9, %i1_1, %9, %9, %i4_2] : memref<1x4x1x1x8xf32>
            %12 = arith.addf %10, %11 : f32
            %13 = arith.constant 0.000000e+00 : f32
            %14 = arith.maximumf %12, %13 : f32
            loop.store %14, %out0[%c0, %i1_1, %i2_1, %i3_1, %i4_2] : memref<1x4x56x56x8xf32>
          }
        }
      }
    }
    loop.free %tmp : memref<1x4x56x56x8xf32>
    loop.return
  }
  loop.func @pointwise_14(%in0: memref<1x2x14x14x16xf32>, %in1: memref<4x2x1x1x16x16xf32>, %in2: memref<1x4x1x1x16xf32>, %out0: memref<1x4x14x14x16xf32>) {
    %tmp = loop.alloc {scope = "local"} : memref<1x4x14x14x16xf32>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c1 = arith.constant 1 : index
    %c14 = arith.constant 14 : index
    %init = arith.constant 0.000000e+00 : f32
    %c16 = arith.constant 16 : index
    %c2 = arith.constant 2 : index
    loop.for %i1 = %c0 to %c4 step %c1 kind(parallel) {
      loop.for %i2 = %c0 to %c14 step %c1 {
        loop.for %i3 = %c0 to %c14 step %c1 {
          loop.for %i4 = %c0 to %c16 step %c1 kind(vectorized) {
            loop.store %init, %tmp[%c0, %i1, %i2, %i3, %i4] : memref<1x4x14x14x16xf32>
          }
          loop.for %k0 = %c0 to %c2 step %c1 {
            loop.for %k3 = %c0 to %c16 step %c1 {
              loop.for %i4_1 = %c0 to %c16 step %c1 kind(vectorized) {
                %0 = arith.addi %i2, %c0 : index
                %1 = arith.addi %i3, %c0 : index
                %2 = loop.load %in0[%c0, %k0, %0, %1, %k3] : memref<1x2x14x14x16xf32>
                %3 = loop.load %in1[%i1, %k0, %c0, %c0, %k3, %i4_1] : memref<4x2x1x1x16x16xf32>
                %4 = arith.mulf %2, %3 : f32
                %5 = arith.constant 16 : index
                %6 = arith.muli %k0, %5 : index
                %7 = arith.addi %6, %k3 : index
                %acc = loop.load %tmp[%c0, %i1, %i2, %i3, %i4_1] : memref<1x4x14x14x16xf32>
                %8 = arith.addf %acc, %4 : f32
                loop.store %8, %tmp[%c0, %i1, %i2, %i3, %i4_1] : memref<1x4x14x14x16xf32>
              }
            }
          }
        }
      }
    }
    loop.for %i1_1 = %c0 to %c4 step %c1 {
      loop.for %i2_1 = %c0 to %c14 step %c1 {
        loop.for %i3_1 = %c0 to %c14 step %c1 {
          loop.for %i4_2 = %c0 to %c16 step %c1 kind(vectorized) {
            %9 = arith.constant 0 : index
            %10 = loop.load %tmp[%9, %i1_1, %i2_1, %i3_1, %i4_2] : memref<1x4x14x14x16xf32>
            %11 = loop.load %in2[%9, %i1_1, %9, %9, %i4_2] : memref<1x4x1x1x16xf32>
            %12 = arith.addf %10, %11 : f32
            %13 = arith.constant 0.000000e+00 : f32
            %14 = arith.maximumf %12, %13 : f32
            loop.store %14, %out0[%c0, %i1_1, %i2_1, %i3_1, %i4_2] : memref<1x4x14x14x16xf32>
          }
        }
      }
    }
    loop.free %tmp : memref<1x4x14x14x16xf32>
    loop.return
  }
}

// CHECK-LABEL: loop.func @pointwise_28(
// CHECK:         loop.for %i1o = %c0 to %c4 step %c2 kind(parallel) {
// CHECK-NEXT:      %i1 = arith.addi %i1o, %c0 : index
// CHECK-NEXT:      %i1_1 = arith.addi %i1o, %c1 : index
// CHECK:             loop.for %i3o = %c0 to %c28 step %c7 {
// CHECK-COUNT-14:      loop.store %init, %tmp[%c0, %i1{{(_1)?}}, %i2, %i3
// CHECK:               loop.for %k3 = %c0 to %c16 step %c1 {
// CHECK-NEXT:            loop.for %i4_1 = %c0 to %c16 step %c1 kind(vectorized) {
// CHECK-COUNT-7:           loop.load %in0[%c0, %k0, %0,
// CHECK-NEXT:              loop.load %in1[%i1, %k0, %c0, %c0, %k3, %i4_1]
// CHECK-NEXT:              loop.load %in1[%i1_1, %k0, %c0, %c0, %k3, %i4_1]
// CHECK-COUNT-14:          arith.mulf
// CHECK-NOT:     lamina.jam_channels
// CHECK-LABEL: loop.func @pointwise_avx2_56(

// The whole schedule: the bias + relu epilogue was fused into the rows and
// sunk into the register blocks (right after each block's reduction, its 7
// columns) before the jam, so it is jammed too (7 columns x 2 blocks), and
// the kernel computes into its output.
// FUSED-LABEL: loop.func @pointwise_28(
// FUSED:         loop.for %i1o = %c0 to %c4 step %c2 kind(parallel) {
// FUSED:           loop.for %i2 = %c0 to %c28 step %c1 kind(parallel) {
// FUSED:             loop.for %i3o = %c0 to %c28 step %c7 {
// FUSED:               loop.load %in1[%i1_1, %k0
// FUSED:               %[[COL:.*]] = arith.addi %i3o, %c0 : index
// FUSED:               loop.for %[[LANE:.*]] = %c0 to %c16 step %c1 kind(vectorized) {
// FUSED-DAG:             loop.load %out0[%{{.*}}, %i1, %i2, %[[COL]], %[[LANE]]]
// FUSED-DAG:             loop.load %out0[%{{.*}}, %i1_1, %i2, %[[COL]], %[[LANE]]]
// FUSED-DAG:             loop.load %in2[%{{.*}}, %i1, %{{.*}}, %{{.*}}, %[[LANE]]]
// FUSED-DAG:             loop.load %in2[%{{.*}}, %i1_1, %{{.*}}, %{{.*}}, %[[LANE]]]
// FUSED-COUNT-14:        arith.maximumf
// FUSED-NOT:     lamina.jam_channels
// FUSED-LABEL: loop.func @pointwise_avx2_56(

// AVX2, 8 output channels per block: 4 rows x 2 blocks (`balanced_rows`:
// 14 blocks of 4, no tail), each row its own vectorized loop (one broadcast
// register), both blocks' weight vectors in it.
// AVX2-LABEL: loop.func @pointwise_avx2_56(
// AVX2:         loop.for %i1o = %c0 to %c4 step %c2 kind(parallel) {
// AVX2:             loop.for %i3o = %c0 to %c56 step %c4 {
// AVX2:               loop.for %k3 = %c0 to %c8 step %c1 {
// AVX2-COUNT-4:         loop.for %{{.*}} = %c0 to %c8 step %c1 kind(vectorized) {
// AVX2-NEXT:              arith.addi %i2
// AVX2-NEXT:              arith.addi %i3
// AVX2-NEXT:              loop.load %in0[
// AVX2-NEXT:              loop.load %in1[%i1, %k0
// AVX2-NEXT:              loop.load %in1[%i1_1, %k0
// AVX2-LABEL: loop.func @pointwise_14(

// A row of 14 columns is one block of 14 rows already: one output-channel
// block per step by default, two when `conv_channel_jam=2` (7 rows then).
// CHECK-LABEL: loop.func @pointwise_14(
// CHECK:         loop.for %i1 = %c0 to %c4 step %c1 kind(parallel) {
// CHECK:             loop.for %i3o = %c0 to %c14 step %c14 {
// FORCED-LABEL: loop.func @pointwise_14(
// FORCED:         loop.for %i1o = %c0 to %c4 step %c2 kind(parallel) {
// FORCED:             loop.for %i3o = %c0 to %c14 step %c7 {
// FORCED:                 loop.load %in1[%i1, %k0
// FORCED-NEXT:            loop.load %in1[%i1_1, %k0
