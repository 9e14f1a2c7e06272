// RUN: lamina-opt %s -p 'schedule-register-block{vector_bits=512 vector_registers=32 cores=2}' | filecheck %s
// RUN: lamina-opt %s -p 'schedule-register-block{vector_bits=256 vector_registers=16 cores=2}' | filecheck %s --check-prefix=AVX2
// RUN: lamina-opt %s -p 'schedule-register-block{vector_bits=256 vector_registers=16 cores=2 conv_grouped_jam_min_row=7}' | filecheck %s --check-prefix=ROW7

// Channel-blocked grouped 3x3 convolutions with a bias + relu epilogue, as
// lower-te emits them (kernels/conv_blocked.py). Each output block reads the
// input blocks of its group: @..._16xf32 (groups of 32 channels, runs of 2
// blocks of 16) at input block `i1 floordiv 2 * 2 + k0`, @..._8xf32 (groups
// of 4, two to a block of 8, a block-diagonal weight) at its own block `i1`.
// The micro-kernel is the blocked convolution's: a row of 14 output columns
// x one vector of output channels in registers, each weight vector feeding
// 14 FMAs with broadcast inputs -- AVX-512 (16 lanes, 32 registers) and AVX2
// (8 lanes, 16 registers: 14 accumulators, 1 weight vector, 1 broadcast).
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func private @te_fused_conv2d_add_relu_1x4x28x28x16xf32_loop(%in0: memref<1x4x30x30x16xf32>, %in1: memref<4x2x3x3x16x16xf32>, %in2: memref<1x4x1x1x16xf32>, %out0: memref<1x4x28x28x16xf32>) {
    %tmp = loop.alloc {scope = "local"} : memref<1x4x28x28x16xf32>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c1 = arith.constant 1 : index
    %c28 = arith.constant 28 : index
    %init = arith.constant 0.000000e+00 : f32
    %c16 = arith.constant 16 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    loop.for %i1 = %c0 to %c4 step %c1 kind(parallel) {
      loop.for %i2 = %c0 to %c28 step %c1 {
        loop.for %i3 = %c0 to %c28 step %c1 {
          loop.for %i4 = %c0 to %c16 step %c1 kind(vectorized) {
            loop.store %init, %tmp[%c0, %i1, %i2, %i3, %i4] : memref<1x4x28x28x16xf32>
          }
          loop.for %k0 = %c0 to %c2 step %c1 {
            loop.for %k1 = %c0 to %c3 step %c1 {
              loop.for %k2 = %c0 to %c3 step %c1 {
                loop.for %k3 = %c0 to %c16 step %c1 {
                  loop.for %i4_1 = %c0 to %c16 step %c1 kind(vectorized) {
                    %0 = arith.constant 2 : index
                    %1 = arith.divui %i1, %0 : index
                    %2 = arith.muli %1, %0 : index
                    %3 = arith.addi %2, %k0 : index
                    %4 = arith.addi %i2, %k1 : index
                    %5 = arith.addi %i3, %k2 : index
                    %6 = loop.load %in0[%c0, %3, %4, %5, %k3] : memref<1x4x30x30x16xf32>
                    %7 = loop.load %in1[%i1, %k0, %k1, %k2, %k3, %i4_1] : memref<4x2x3x3x16x16xf32>
                    %8 = arith.mulf %6, %7 : f32
                    %9 = arith.constant 16 : index
                    %10 = arith.muli %3, %9 : index
                    %11 = arith.addi %10, %k3 : index
                    %acc = loop.load %tmp[%c0, %i1, %i2, %i3, %i4_1] : memref<1x4x28x28x16xf32>
                    %12 = arith.addf %acc, %8 : f32
                    loop.store %12, %tmp[%c0, %i1, %i2, %i3, %i4_1] : memref<1x4x28x28x16xf32>
                  }
                }
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
            %13 = arith.constant 0 : index
            %14 = loop.load %tmp[%13, %i1_1, %i2_1, %i3_1, %i4_2] : memref<1x4x28x28x16xf32>
            %15 = loop.load %in2[%13, %i1_1, %13, %13, %i4_2] : memref<1x4x1x1x16xf32>
            %16 = arith.addf %14, %15 : f32
            %17 = arith.constant 0.000000e+00 : f32
            %18 = arith.maximumf %16, %17 : f32
            loop.store %18, %out0[%c0, %i1_1, %i2_1, %i3_1, %i4_2] : memref<1x4x28x28x16xf32>
          }
        }
      }
    }
    loop.free %tmp : memref<1x4x28x28x16xf32>
    loop.return
  }
  loop.func private @te_fused_conv2d_add_relu_1x4x14x14x8xf32_loop(%in0: memref<1x4x16x16x8xf32>, %in1: memref<4x2x3x3x8x8xf32>, %in2: memref<1x4x1x1x8xf32>, %out0: memref<1x4x14x14x8xf32>) {
    %tmp = loop.alloc {scope = "local"} : memref<1x4x14x14x8xf32>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c1 = arith.constant 1 : index
    %c14 = arith.constant 14 : index
    %init = arith.constant 0.000000e+00 : f32
    %c8 = arith.constant 8 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    loop.for %i1 = %c0 to %c4 step %c1 kind(parallel) {
      loop.for %i2 = %c0 to %c14 step %c1 {
        loop.for %i3 = %c0 to %c14 step %c1 {
          loop.for %i4 = %c0 to %c8 step %c1 kind(vectorized) {
            loop.store %init, %tmp[%c0, %i1, %i2, %i3, %i4] : memref<1x4x14x14x8xf32>
          }
          loop.for %k0 = %c0 to %c2 step %c1 {
            loop.for %k1 = %c0 to %c3 step %c1 {
              loop.for %k2 = %c0 to %c3 step %c1 {
                loop.for %k3 = %c0 to %c8 step %c1 {
                  loop.for %i4_1 = %c0 to %c8 step %c1 kind(vectorized) {
                    %0 = arith.constant 2 : index
                    %1 = arith.divui %i1, %0 : index
                    %2 = arith.muli %1, %0 : index
                    %3 = arith.addi %2, %k0 : index
                    %4 = arith.addi %i2, %k1 : index
                    %5 = arith.addi %i3, %k2 : index
                    %6 = loop.load %in0[%c0, %3, %4, %5, %k3] : memref<1x4x16x16x8xf32>
                    %7 = loop.load %in1[%i1, %k0, %k1, %k2, %k3, %i4_1] : memref<4x2x3x3x8x8xf32>
                    %8 = arith.mulf %6, %7 : f32
                    %9 = arith.constant 8 : index
                    %10 = arith.muli %3, %9 : index
                    %11 = arith.addi %10, %k3 : index
                    %acc = loop.load %tmp[%c0, %i1, %i2, %i3, %i4_1] : memref<1x4x14x14x8xf32>
                    %12 = arith.addf %acc, %8 : f32
                    loop.store %12, %tmp[%c0, %i1, %i2, %i3, %i4_1] : memref<1x4x14x14x8xf32>
                  }
                }
              }
            }
          }
        }
      }
    }
    loop.for %i1_1 = %c0 to %c4 step %c1 {
      loop.for %i2_1 = %c0 to %c14 step %c1 {
        loop.for %i3_1 = %c0 to %c14 step %c1 {
          loop.for %i4_2 = %c0 to %c8 step %c1 kind(vectorized) {
            %13 = arith.constant 0 : index
            %14 = loop.load %tmp[%13, %i1_1, %i2_1, %i3_1, %i4_2] : memref<1x4x14x14x8xf32>
            %15 = loop.load %in2[%13, %i1_1, %13, %13, %i4_2] : memref<1x4x1x1x8xf32>
            %16 = arith.addf %14, %15 : f32
            %17 = arith.constant 0.000000e+00 : f32
            %18 = arith.maximumf %16, %17 : f32
            loop.store %18, %out0[%c0, %i1_1, %i2_1, %i3_1, %i4_2] : memref<1x4x14x14x8xf32>
          }
        }
      }
    }
    loop.free %tmp : memref<1x4x14x14x8xf32>
    loop.return
  }
  loop.func private @te_fused_conv2d_add_relu_1x4x7x7x8xf32_loop(%in0: memref<1x4x9x9x8xf32>, %in1: memref<4x2x3x3x8x8xf32>, %in2: memref<1x4x1x1x8xf32>, %out0: memref<1x4x7x7x8xf32>) {
    %tmp = loop.alloc {scope = "local"} : memref<1x4x7x7x8xf32>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c1 = arith.constant 1 : index
    %c7 = arith.constant 7 : index
    %init = arith.constant 0.000000e+00 : f32
    %c8 = arith.constant 8 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    loop.for %i1 = %c0 to %c4 step %c1 kind(parallel) {
      loop.for %i2 = %c0 to %c7 step %c1 {
        loop.for %i3 = %c0 to %c7 step %c1 {
          loop.for %i4 = %c0 to %c8 step %c1 kind(vectorized) {
            loop.store %init, %tmp[%c0, %i1, %i2, %i3, %i4] : memref<1x4x7x7x8xf32>
          }
          loop.for %k0 = %c0 to %c2 step %c1 {
            loop.for %k1 = %c0 to %c3 step %c1 {
              loop.for %k2 = %c0 to %c3 step %c1 {
                loop.for %k3 = %c0 to %c8 step %c1 {
                  loop.for %i4_1 = %c0 to %c8 step %c1 kind(vectorized) {
                    %0 = arith.constant 2 : index
                    %1 = arith.divui %i1, %0 : index
                    %2 = arith.muli %1, %0 : index
                    %3 = arith.addi %2, %k0 : index
                    %4 = arith.addi %i2, %k1 : index
                    %5 = arith.addi %i3, %k2 : index
                    %6 = loop.load %in0[%c0, %3, %4, %5, %k3] : memref<1x4x9x9x8xf32>
                    %7 = loop.load %in1[%i1, %k0, %k1, %k2, %k3, %i4_1] : memref<4x2x3x3x8x8xf32>
                    %8 = arith.mulf %6, %7 : f32
                    %9 = arith.constant 8 : index
                    %10 = arith.muli %3, %9 : index
                    %11 = arith.addi %10, %k3 : index
                    %acc = loop.load %tmp[%c0, %i1, %i2, %i3, %i4_1] : memref<1x4x7x7x8xf32>
                    %12 = arith.addf %acc, %8 : f32
                    loop.store %12, %tmp[%c0, %i1, %i2, %i3, %i4_1] : memref<1x4x7x7x8xf32>
                  }
                }
              }
            }
          }
        }
      }
    }
    loop.for %i1_1 = %c0 to %c4 step %c1 {
      loop.for %i2_1 = %c0 to %c7 step %c1 {
        loop.for %i3_1 = %c0 to %c7 step %c1 {
          loop.for %i4_2 = %c0 to %c8 step %c1 kind(vectorized) {
            %13 = arith.constant 0 : index
            %14 = loop.load %tmp[%13, %i1_1, %i2_1, %i3_1, %i4_2] : memref<1x4x7x7x8xf32>
            %15 = loop.load %in2[%13, %i1_1, %13, %13, %i4_2] : memref<1x4x1x1x8xf32>
            %16 = arith.addf %14, %15 : f32
            %17 = arith.constant 0.000000e+00 : f32
            %18 = arith.maximumf %16, %17 : f32
            loop.store %18, %out0[%c0, %i1_1, %i2_1, %i3_1, %i4_2] : memref<1x4x7x7x8xf32>
          }
        }
      }
    }
    loop.free %tmp : memref<1x4x7x7x8xf32>
    loop.return
  }
  loop.func private @te_fused_conv2d_add_relu_1x2x28x28x8xf32_loop(%in0: memref<1x2x30x30x8xf32>, %in1: memref<2x1x3x3x8x8xf32>, %in2: memref<1x2x1x1x8xf32>, %out0: memref<1x2x28x28x8xf32>) {
    %tmp = loop.alloc {scope = "local"} : memref<1x2x28x28x8xf32>
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    %c1 = arith.constant 1 : index
    %c28 = arith.constant 28 : index
    %init = arith.constant 0.000000e+00 : f32
    %c8 = arith.constant 8 : index
    %c3 = arith.constant 3 : index
    loop.for %i1 = %c0 to %c2 step %c1 kind(parallel) {
      loop.for %i2 = %c0 to %c28 step %c1 {
        loop.for %i3 = %c0 to %c28 step %c1 {
          loop.for %i4 = %c0 to %c8 step %c1 kind(vectorized) {
            loop.store %init, %tmp[%c0, %i1, %i2, %i3, %i4] : memref<1x2x28x28x8xf32>
          }
          loop.for %k1 = %c0 to %c3 step %c1 {
            loop.for %k2 = %c0 to %c3 step %c1 {
              loop.for %k3 = %c0 to %c8 step %c1 {
                loop.for %i4_1 = %c0 to %c8 step %c1 kind(vectorized) {
                  %0 = arith.addi %i2, %k1 : index
                  %1 = arith.addi %i3, %k2 : index
                  %2 = loop.load %in0[%c0, %i1, %0, %1, %k3] : memref<1x2x30x30x8xf32>
                  %3 = loop.load %in1[%i1, %c0, %k1, %k2, %k3, %i4_1] : memref<2x1x3x3x8x8xf32>
                  %4 = arith.mulf %2, %3 : f32
                  %5 = arith.constant 8 : index
                  %6 = arith.muli %i1, %5 : index
                  %7 = arith.addi %6, %k3 : index
                  %acc = loop.load %tmp[%c0, %i1, %i2, %i3, %i4_1] : memref<1x2x28x28x8xf32>
                  %8 = arith.addf %acc, %4 : f32
                  loop.store %8, %tmp[%c0, %i1, %i2, %i3, %i4_1] : memref<1x2x28x28x8xf32>
                }
              }
            }
          }
        }
      }
    }
    loop.for %i1_1 = %c0 to %c2 step %c1 {
      loop.for %i2_1 = %c0 to %c28 step %c1 {
        loop.for %i3_1 = %c0 to %c28 step %c1 {
          loop.for %i4_2 = %c0 to %c8 step %c1 kind(vectorized) {
            %9 = arith.constant 0 : index
            %10 = loop.load %tmp[%9, %i1_1, %i2_1, %i3_1, %i4_2] : memref<1x2x28x28x8xf32>
            %11 = loop.load %in2[%9, %i1_1, %9, %9, %i4_2] : memref<1x2x1x1x8xf32>
            %12 = arith.addf %10, %11 : f32
            %13 = arith.constant 0.000000e+00 : f32
            %14 = arith.maximumf %12, %13 : f32
            loop.store %14, %out0[%c0, %i1_1, %i2_1, %i3_1, %i4_2] : memref<1x2x28x28x8xf32>
          }
        }
      }
    }
    loop.free %tmp : memref<1x2x28x28x8xf32>
    loop.return
  }
}

// CHECK-LABEL: loop.func private @te_fused_conv2d_add_relu_1x4x28x28x16xf32_loop
// CHECK:         loop.for %i1 = %c0 to %c4 step %c1 kind(parallel) {
// CHECK-NEXT:      loop.for %i2 = %c0 to %c28 step %c1 {
// CHECK-NEXT:        loop.for %i3o = %c0 to %c28 step %c14 {
// CHECK:               loop.for %k0 = %c0 to %c2 step %c1 {
// CHECK-NEXT:            loop.for %k1 = %c0 to %c3 step %c1 {
// CHECK-NEXT:              loop.for %k2 = %c0 to %c3 step %c1 {
// CHECK-NEXT:                loop.for %k3 = %c0 to %c16 step %c1 {
// CHECK-NEXT:                  loop.for %[[V:.*]] = %c0 to %c16 step %c1 kind(vectorized) {
// CHECK:                         %[[G:.*]] = arith.divui %i1, %{{.*}} : index
// CHECK-NEXT:                    %[[FIRST:.*]] = arith.muli %[[G]], %{{.*}} : index
// CHECK-NEXT:                    %[[BLOCK:.*]] = arith.addi %[[FIRST]], %k0 : index
// CHECK-COUNT-14:                loop.load %in0[%c0, %[[BLOCK]], %{{.*}}, %{{.*}}, %k3] : memref<1x4x30x30x16xf32>
// CHECK-NEXT:                    %[[W:.*]] = loop.load %in1[%i1, %k0, %k1, %k2, %k3, %[[V]]] : memref<4x2x3x3x16x16xf32>
// CHECK-COUNT-14:                arith.mulf %{{.*}}, %[[W]] : f32
// CHECK-COUNT-14:                loop.load %tmp[%c0, %i1, %i2, %{{.*}}, %[[V]]] : memref<1x4x28x28x16xf32>
// CHECK-COUNT-14:                arith.addf
// CHECK-COUNT-14:                loop.store

// Groups of 16 channels on AVX2 are runs of 2 blocks of 8: the two blocks of
// a group read the same input, so on a row of 14 columns their micro-kernel
// steps jam them (the knob `conv_grouped_jam_min_row`): 5 + 5 + 4 rows x 2 blocks, one
// input broadcast for two weight vectors (the copies' input indices are
// equal; LLVM merges the loads). On a row of 7 columns one block per step.
// AVX2-LABEL: loop.func private @te_fused_conv2d_add_relu_1x4x14x14x8xf32_loop
// AVX2:         loop.for %i1o = %c0 to %c4 step %c2 kind(parallel) {
// AVX2:           loop.for %i2 = %c0 to %c14 step %c1 {
// AVX2-NEXT:        loop.for %i3o = %c0 to %c10 step %c5 {
// AVX2:                       loop.load %in0[%c0, %{{.*}}, %{{.*}}, %{{.*}}, %k3] : memref<1x4x16x16x8xf32>
// AVX2-NEXT:                  loop.load %in0[%c0, %{{.*}}, %{{.*}}, %{{.*}}, %k3] : memref<1x4x16x16x8xf32>
// AVX2-NEXT:                  loop.load %in1[%[[B0:.*]], %k0, %k1, %k2, %k3, %{{.*}}] : memref<4x2x3x3x8x8xf32>
// AVX2-NEXT:                  loop.load %in1[%[[B1:.*]], %k0, %k1, %k2, %k3, %{{.*}}] : memref<4x2x3x3x8x8xf32>
// With `conv_grouped_jam_min_row=7` the 7-column rows jam too (4 + 3 rows).
// ROW7-LABEL: loop.func private @te_fused_conv2d_add_relu_1x4x7x7x8xf32_loop
// ROW7:         loop.for %i1o = %c0 to %c4 step %c2 kind(parallel) {
// ROW7:             loop.for %i3o = %c0 to %c4 step %c4 {
// AVX2-LABEL: loop.func private @te_fused_conv2d_add_relu_1x4x7x7x8xf32_loop
// AVX2:         loop.for %i1 = %c0 to %c4 step %c1 kind(parallel) {
// AVX2-NEXT:      loop.for %i2 = %c0 to %c7 step %c1 {
// AVX2-NEXT:        loop.for %i3o = %c0 to %c7 step %c7 {

// AVX2-LABEL: loop.func private @te_fused_conv2d_add_relu_1x2x28x28x8xf32_loop
// AVX2:         loop.for %i1 = %c0 to %c2 step %c1 kind(parallel) {
// AVX2-NEXT:      loop.for %i2 = %c0 to %c28 step %c1 {
// AVX2-NEXT:        loop.for %i3o = %c0 to %c28 step %c14 {
// AVX2-COUNT-14:      loop.for %{{.*}} = %c0 to %c8 step %c1 kind(vectorized) {
// AVX2:               loop.for %k1 = %c0 to %c3 step %c1 {
// AVX2-NEXT:            loop.for %k2 = %c0 to %c3 step %c1 {
// AVX2-NEXT:              loop.for %k3 = %c0 to %c8 step %c1 {
// AVX2-NEXT:                loop.for %[[V:.*]] = %c0 to %c8 step %c1 kind(vectorized) {
// AVX2:                       loop.load %in0[%c0, %i1, %{{.*}}, %{{.*}}, %k3] : memref<1x2x30x30x8xf32>
// AVX2-NEXT:                  loop.load %in1[%i1, %c0, %k1, %k2, %k3, %[[V]]] : memref<2x1x3x3x8x8xf32>
