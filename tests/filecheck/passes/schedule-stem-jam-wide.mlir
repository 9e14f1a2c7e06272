// RUN: lamina-opt %s -p 'schedule-register-block{vector_bits=512 vector_registers=32 cores=2 conv_stem_jam_wide=2}' | filecheck %s
// RUN: lamina-opt %s -p 'schedule-register-block{vector_bits=512 vector_registers=32 cores=2 conv_stem_jam_wide=0}' | filecheck %s --check-prefix=OFF
// RUN: lamina-opt %s -p 'schedule-register-block{vector_bits=512 vector_registers=32 cores=2 conv_stem_jam_wide=0 conv_channel_jam=2}' | filecheck %s --check-prefix=HOISTED

// `conv_stem_jam_wide` (derived 2 on a CPU with two 512-bit FMA pipes, Intel
// Xeon): a stem convolution (3x3 stride 2, 3 -> 32 channels on a 56x56 image,
// its input read as NCHW1c, so its reduction steps through the window's
// columns) computes 2 output-channel blocks per broadcast, with rows sized
// for one broadcast register: 2 x 14 accumulators, 2 weights and the
// broadcast in 32 registers, so the 28 output columns are 2 blocks of 14
// rows. Off, one block of 14 rows per step (14 broadcasts and a weight load
// per 14 FMAs); a forced `conv_channel_jam=2` without the rule sizes the
// rows for hoisted broadcasts (10 at most: 7 + 7 + 7 + 7). Measured on
// Emerald Rapids, ResNet's 7x7 stride-2 3 -> 64 stem: 0.62-0.95x the
// one-block time (docs/performance.md, "Stems on two 512-bit FMA pipes").

// CHECK-LABEL: loop.func @stem_wide
// CHECK:      loop.for %i1o = %c0 to %c2 step %c2 {
// CHECK-NEXT:   %i1_1 = arith.addi %i1o, %c0 : index
// CHECK-NEXT:   %i1_2 = arith.addi %i1o, %c1 : index
// CHECK:        loop.for %i3o = %c0 to %c28 step %c14 {
// CHECK:          loop.for %k0 = %c0 to %c3 step %c1 {
// CHECK-NEXT:       loop.for %k1 = %c0 to %c3 step %c1 {
// CHECK-NEXT:         loop.for %k2 = %c0 to %c3 step %c1 {
// CHECK:                loop.load %in1[%i1_1, %k0, %k1, %k2, %c0, %{{.*}}] : memref<2x3x3x3x1x16xf32>
// CHECK:                loop.load %in1[%i1_2, %k0, %k1, %k2, %c0, %{{.*}}] : memref<2x3x3x3x1x16xf32>
// CHECK-NOT:    loop.for %i3o_1

// OFF-LABEL: loop.func @stem_wide
// OFF:      loop.for %i1_1 = %c0 to %c2 step %c1
// OFF:        loop.for %i3o = %c0 to %c28 step %c14 {
// OFF:          loop.load %in1[%i1_1, %k0, %k1, %k2, %c0, %{{.*}}] : memref<2x3x3x3x1x16xf32>
// OFF-NEXT:     arith.mulf

// HOISTED-LABEL: loop.func @stem_wide
// HOISTED:      loop.for %i1o = %c0 to %c2 step %c2 {
// HOISTED:        loop.for %i3o = %c0 to %c28 step %c7 {

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @stem_wide(%in0: memref<1x3x56x56x1xf32>, %in1: memref<2x3x3x3x1x16xf32>, %in2: memref<1x2x1x1x16xf32>, %out0: memref<1x2x28x28x16xf32>) {
    %tmp = loop.alloc {scope = "local"} : memref<1x3x57x57x1xf32>
    %c0 = arith.constant 0 : index
    %c3 = arith.constant 3 : index
    %c1 = arith.constant 1 : index
    %c57 = arith.constant 57 : index
    loop.for %i1 = %c0 to %c3 step %c1 {
      loop.for %i2 = %c0 to %c57 step %c1 {
        loop.for %i3 = %c0 to %c57 step %c1 kind(vectorized) {
          %0 = arith.constant -1 : index
          %1 = arith.addi %i2, %0 : index
          %2 = arith.constant 0 : index
          %3 = arith.cmpi sge, %1, %2 : index
          %4 = arith.select %3, %1, %2 : index
          %5 = arith.addi %i3, %0 : index
          %6 = arith.cmpi sge, %5, %2 : index
          %7 = arith.select %6, %5, %2 : index
          %8 = loop.load %in0[%c0, %i1, %4, %7, %c0] : memref<1x3x56x56x1xf32>
          %9 = arith.constant 0.000000e+00 : f32
          %10 = arith.andi %3, %6 : i1
          %11 = arith.select %10, %8, %9 : f32
          loop.store %11, %tmp[%c0, %i1, %i2, %i3, %c0] : memref<1x3x57x57x1xf32>
        }
      }
    }
    %tmp_1 = loop.alloc {scope = "local"} : memref<1x2x28x28x16xf32>
    %c2 = arith.constant 2 : index
    %c28 = arith.constant 28 : index
    %init = arith.constant 0.000000e+00 : f32
    %c16 = arith.constant 16 : index
    loop.for %i1_1 = %c0 to %c2 step %c1 {
      loop.for %i2_1 = %c0 to %c28 step %c1 {
        loop.for %i3_1 = %c0 to %c28 step %c1 {
          loop.for %i4 = %c0 to %c16 step %c1 kind(vectorized) {
            loop.store %init, %tmp_1[%c0, %i1_1, %i2_1, %i3_1, %i4] : memref<1x2x28x28x16xf32>
          }
          loop.for %k0 = %c0 to %c3 step %c1 {
            loop.for %k1 = %c0 to %c3 step %c1 {
              loop.for %k2 = %c0 to %c3 step %c1 {
                loop.for %i4_1 = %c0 to %c16 step %c1 kind(vectorized) {
                  %12 = arith.constant 2 : index
                  %13 = arith.muli %i2_1, %12 : index
                  %14 = arith.addi %13, %k1 : index
                  %15 = arith.muli %i3_1, %12 : index
                  %16 = arith.addi %15, %k2 : index
                  %17 = loop.load %tmp[%c0, %k0, %14, %16, %c0] : memref<1x3x57x57x1xf32>
                  %18 = loop.load %in1[%i1_1, %k0, %k1, %k2, %c0, %i4_1] : memref<2x3x3x3x1x16xf32>
                  %19 = arith.mulf %17, %18 : f32
                  %20 = arith.addi %k0, %c0 : index
                  %acc = loop.load %tmp_1[%c0, %i1_1, %i2_1, %i3_1, %i4_1] : memref<1x2x28x28x16xf32>
                  %21 = arith.addf %acc, %19 : f32
                  loop.store %21, %tmp_1[%c0, %i1_1, %i2_1, %i3_1, %i4_1] : memref<1x2x28x28x16xf32>
                }
              }
            }
          }
        }
      }
    }
    loop.free %tmp : memref<1x3x57x57x1xf32>
    loop.for %i1_2 = %c0 to %c2 step %c1 {
      loop.for %i2_2 = %c0 to %c28 step %c1 {
        loop.for %i3_2 = %c0 to %c28 step %c1 {
          loop.for %i4_2 = %c0 to %c16 step %c1 kind(vectorized) {
            %22 = arith.constant 0 : index
            %23 = loop.load %tmp_1[%22, %i1_2, %i2_2, %i3_2, %i4_2] : memref<1x2x28x28x16xf32>
            %24 = loop.load %in2[%22, %i1_2, %22, %22, %i4_2] : memref<1x2x1x1x16xf32>
            %25 = arith.addf %23, %24 : f32
            loop.store %25, %out0[%c0, %i1_2, %i2_2, %i3_2, %i4_2] : memref<1x2x28x28x16xf32>
          }
        }
      }
    }
    loop.free %tmp_1 : memref<1x2x28x28x16xf32>
    loop.return
  }
}
