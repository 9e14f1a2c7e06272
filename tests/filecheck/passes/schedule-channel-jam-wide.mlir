// RUN: lamina-opt %s -p 'schedule-register-block{vector_bits=512 vector_registers=32 cores=2 conv_pointwise_jam_max=4}' | filecheck %s
// RUN: lamina-opt %s -p 'schedule{vector_bits=512 vector_registers=32 cores=2 conv_pointwise_jam_max=4}' | filecheck %s --check-prefix=FUSED
// RUN: lamina-opt %s -p 'schedule-register-block{vector_bits=512 vector_registers=32 cores=2 conv_pointwise_jam_max=0}' | filecheck %s --check-prefix=OFF

// `conv_pointwise_jam_max` (derived 4 on a CPU with two 512-bit FMA pipes,
// Intel Xeon): a pointwise convolution jams output-channel blocks on rows of
// 14 and 7 columns too, which the old rule (knob 0: Zen 4, AVX2's own rule)
// leaves at one block of 14 or 7 rows. F is the largest of 4..2 dividing the
// blocks whose register block leaves no tail block under half its rows:
// 14 columns and 4 blocks: 4 x (5 + 5 + 4 rows); 7 columns and 6 blocks: 4
// would take 5 + 2 rows, so 3 x 7 rows; 7 blocks (no F divides): 3 x 7
// rows twice and one block left as a tail step.

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @pointwise_14(%in0: memref<1x2x14x14x16xf32>, %in1: memref<4x2x1x1x16x16xf32>, %in2: memref<1x4x1x1x16xf32>, %out0: memref<1x4x14x14x16xf32>) {
    %tmp = loop.alloc {scope = "local"} : memref<1x4x14x14x16xf32>
    %c0 = arith.constant 0 : index
    %blocks = arith.constant 4 : index
    %c1 = arith.constant 1 : index
    %cols = arith.constant 14 : index
    %init = arith.constant 0.000000e+00 : f32
    %c16 = arith.constant 16 : index
    %c2 = arith.constant 2 : index
    loop.for %i1 = %c0 to %blocks step %c1 kind(parallel) {
      loop.for %i2 = %c0 to %cols step %c1 {
        loop.for %i3 = %c0 to %cols step %c1 {
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
    loop.for %i1_1 = %c0 to %blocks step %c1 {
      loop.for %i2_1 = %c0 to %cols step %c1 {
        loop.for %i3_1 = %c0 to %cols step %c1 {
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

  loop.func @pointwise_7_6(%in0: memref<1x2x7x7x16xf32>, %in1: memref<6x2x1x1x16x16xf32>, %in2: memref<1x6x1x1x16xf32>, %out0: memref<1x6x7x7x16xf32>) {
    %tmp = loop.alloc {scope = "local"} : memref<1x6x7x7x16xf32>
    %c0 = arith.constant 0 : index
    %blocks = arith.constant 6 : index
    %c1 = arith.constant 1 : index
    %cols = arith.constant 7 : index
    %init = arith.constant 0.000000e+00 : f32
    %c16 = arith.constant 16 : index
    %c2 = arith.constant 2 : index
    loop.for %i1 = %c0 to %blocks step %c1 kind(parallel) {
      loop.for %i2 = %c0 to %cols step %c1 {
        loop.for %i3 = %c0 to %cols step %c1 {
          loop.for %i4 = %c0 to %c16 step %c1 kind(vectorized) {
            loop.store %init, %tmp[%c0, %i1, %i2, %i3, %i4] : memref<1x6x7x7x16xf32>
          }
          loop.for %k0 = %c0 to %c2 step %c1 {
            loop.for %k3 = %c0 to %c16 step %c1 {
              loop.for %i4_1 = %c0 to %c16 step %c1 kind(vectorized) {
                %0 = arith.addi %i2, %c0 : index
                %1 = arith.addi %i3, %c0 : index
                %2 = loop.load %in0[%c0, %k0, %0, %1, %k3] : memref<1x2x7x7x16xf32>
                %3 = loop.load %in1[%i1, %k0, %c0, %c0, %k3, %i4_1] : memref<6x2x1x1x16x16xf32>
                %4 = arith.mulf %2, %3 : f32
                %5 = arith.constant 16 : index
                %6 = arith.muli %k0, %5 : index
                %7 = arith.addi %6, %k3 : index
                %acc = loop.load %tmp[%c0, %i1, %i2, %i3, %i4_1] : memref<1x6x7x7x16xf32>
                %8 = arith.addf %acc, %4 : f32
                loop.store %8, %tmp[%c0, %i1, %i2, %i3, %i4_1] : memref<1x6x7x7x16xf32>
              }
            }
          }
        }
      }
    }
    loop.for %i1_1 = %c0 to %blocks step %c1 {
      loop.for %i2_1 = %c0 to %cols step %c1 {
        loop.for %i3_1 = %c0 to %cols step %c1 {
          loop.for %i4_2 = %c0 to %c16 step %c1 kind(vectorized) {
            %9 = arith.constant 0 : index
            %10 = loop.load %tmp[%9, %i1_1, %i2_1, %i3_1, %i4_2] : memref<1x6x7x7x16xf32>
            %11 = loop.load %in2[%9, %i1_1, %9, %9, %i4_2] : memref<1x6x1x1x16xf32>
            %12 = arith.addf %10, %11 : f32
            %13 = arith.constant 0.000000e+00 : f32
            %14 = arith.maximumf %12, %13 : f32
            loop.store %14, %out0[%c0, %i1_1, %i2_1, %i3_1, %i4_2] : memref<1x6x7x7x16xf32>
          }
        }
      }
    }
    loop.free %tmp : memref<1x6x7x7x16xf32>
    loop.return
  }

  loop.func @pointwise_7_7(%in0: memref<1x2x7x7x16xf32>, %in1: memref<7x2x1x1x16x16xf32>, %in2: memref<1x7x1x1x16xf32>, %out0: memref<1x7x7x7x16xf32>) {
    %tmp = loop.alloc {scope = "local"} : memref<1x7x7x7x16xf32>
    %c0 = arith.constant 0 : index
    %blocks = arith.constant 7 : index
    %c1 = arith.constant 1 : index
    %cols = arith.constant 7 : index
    %init = arith.constant 0.000000e+00 : f32
    %c16 = arith.constant 16 : index
    %c2 = arith.constant 2 : index
    loop.for %i1 = %c0 to %blocks step %c1 kind(parallel) {
      loop.for %i2 = %c0 to %cols step %c1 {
        loop.for %i3 = %c0 to %cols step %c1 {
          loop.for %i4 = %c0 to %c16 step %c1 kind(vectorized) {
            loop.store %init, %tmp[%c0, %i1, %i2, %i3, %i4] : memref<1x7x7x7x16xf32>
          }
          loop.for %k0 = %c0 to %c2 step %c1 {
            loop.for %k3 = %c0 to %c16 step %c1 {
              loop.for %i4_1 = %c0 to %c16 step %c1 kind(vectorized) {
                %0 = arith.addi %i2, %c0 : index
                %1 = arith.addi %i3, %c0 : index
                %2 = loop.load %in0[%c0, %k0, %0, %1, %k3] : memref<1x2x7x7x16xf32>
                %3 = loop.load %in1[%i1, %k0, %c0, %c0, %k3, %i4_1] : memref<7x2x1x1x16x16xf32>
                %4 = arith.mulf %2, %3 : f32
                %5 = arith.constant 16 : index
                %6 = arith.muli %k0, %5 : index
                %7 = arith.addi %6, %k3 : index
                %acc = loop.load %tmp[%c0, %i1, %i2, %i3, %i4_1] : memref<1x7x7x7x16xf32>
                %8 = arith.addf %acc, %4 : f32
                loop.store %8, %tmp[%c0, %i1, %i2, %i3, %i4_1] : memref<1x7x7x7x16xf32>
              }
            }
          }
        }
      }
    }
    loop.for %i1_1 = %c0 to %blocks step %c1 {
      loop.for %i2_1 = %c0 to %cols step %c1 {
        loop.for %i3_1 = %c0 to %cols step %c1 {
          loop.for %i4_2 = %c0 to %c16 step %c1 kind(vectorized) {
            %9 = arith.constant 0 : index
            %10 = loop.load %tmp[%9, %i1_1, %i2_1, %i3_1, %i4_2] : memref<1x7x7x7x16xf32>
            %11 = loop.load %in2[%9, %i1_1, %9, %9, %i4_2] : memref<1x7x1x1x16xf32>
            %12 = arith.addf %10, %11 : f32
            %13 = arith.constant 0.000000e+00 : f32
            %14 = arith.maximumf %12, %13 : f32
            loop.store %14, %out0[%c0, %i1_1, %i2_1, %i3_1, %i4_2] : memref<1x7x7x7x16xf32>
          }
        }
      }
    }
    loop.free %tmp : memref<1x7x7x7x16xf32>
    loop.return
  }
}

// CHECK-LABEL: loop.func @pointwise_14(
// CHECK:         loop.for %i1o = %c0 to %{{[a-z0-9_]+}} step %{{[a-z0-9_]+}} kind(parallel) {
// CHECK-NEXT:      %i1 = arith.addi %i1o, %c0 : index
// CHECK-NEXT:      %i1_1 = arith.addi %i1o, %c1 : index
// CHECK-NEXT:      %i1_2 = arith.addi %i1o, %c2 : index
// CHECK-NEXT:      %i1_3 = arith.addi %i1o, %c3 : index
// CHECK:             loop.for %i3o = %c0 to %c10 step %c5 {
// CHECK:                 loop.load %in1[%i1_3, %k0
// CHECK-COUNT-20:        arith.mulf
// CHECK:             loop.for %i3o_1 = %c10 to %{{[a-z0-9_]+}} step %{{[a-z0-9_]+}} {
// CHECK-COUNT-16:        arith.mulf
// CHECK-LABEL: loop.func @pointwise_7_6(
// CHECK:         loop.for %i1o = %c0 to %blocks step %c3 kind(parallel) {
// CHECK-NOT:       %i1_3 = arith.addi %i1o
// CHECK:             loop.for %i3o = %c0 to %cols step %cols {
// CHECK:                 loop.load %in1[%i1_2, %k0
// CHECK-COUNT-21:        arith.mulf
// CHECK-LABEL: loop.func @pointwise_7_7(
// CHECK:         loop.for %i1o = %c0 to %c6 step %c3 kind(parallel) {
// CHECK:                 loop.load %in1[%i1_2, %k0
// CHECK-COUNT-21:        arith.mulf
// CHECK:         loop.for %i1_3 = %c6 to %{{[a-z0-9_]+}} step %c1 {
// CHECK-COUNT-7:         arith.mulf
// CHECK-NOT:             arith.mulf
// CHECK:         loop.return

// The whole schedule: the bias + relu epilogue is jammed with the blocks.
// FUSED-LABEL: loop.func @pointwise_14(
// FUSED:         loop.for %i1o = %c0 to %{{[a-z0-9_]+}} step %{{[a-z0-9_]+}} {
// FUSED:           loop.for %i2 = %c0 to %cols step %c1 kind(parallel) {
// FUSED:             loop.for %i3o = %c0 to %c10 step %c5 {
// FUSED:               loop.load %in2[%{{.*}}, %i1_3,
// FUSED-COUNT-20:  arith.maximumf
// FUSED-LABEL: loop.func @pointwise_7_7(
// FUSED:         loop.for %i1o = %c0 to %c6 step %c3 kind(parallel) {
// FUSED-COUNT-21:  arith.maximumf

// Knob 0 (Zen 4): one block of 14 or 7 rows per step.
// OFF-LABEL: loop.func @pointwise_14(
// OFF:         loop.for %i1 = %c0 to %blocks step %c1 kind(parallel) {
// OFF:           loop.for %i3o = %c0 to %cols step %cols {
// OFF-NOT:     %i1o
// OFF-LABEL: loop.func @pointwise_7_6(
// OFF:         loop.for %i1 = %c0 to %blocks step %c1 kind(parallel) {
// OFF-NOT:     %i1o
// OFF-LABEL: loop.func @pointwise_7_7(
// OFF:         loop.for %i1 = %c0 to %blocks step %c1 kind(parallel) {
// OFF-NOT:     %i1o
