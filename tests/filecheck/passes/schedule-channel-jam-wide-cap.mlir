// RUN: lamina-opt %s -p 'schedule-register-block{vector_bits=512 vector_registers=32 cores=2 conv_pointwise_jam_max=16}' | filecheck %s

// A `conv_pointwise_jam_max` larger than the registers hold: 16 output-channel
// blocks of one 16-lane vector need 16 accumulators + 16 weight vectors + a
// broadcast, 33 of 32 registers even at one row. Such an F is skipped and the
// search goes on to fewer blocks. It used to take 16 blocks of one row, which
// `schedule-register-block` leaves unblocked (one block per step, no register
// block at all). 15 fits one row only (not blocked either), so 8 blocks x 2
// rows (16 accumulators + 8 weights + 2 broadcasts), 7 row blocks of 14.

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @pointwise_16_blocks(%in0: memref<1x2x14x14x16xf32>, %in1: memref<16x2x1x1x16x16xf32>, %in2: memref<1x16x1x1x16xf32>, %out0: memref<1x16x14x14x16xf32>) {
    %tmp = loop.alloc {scope = "local"} : memref<1x16x14x14x16xf32>
    %c0 = arith.constant 0 : index
    %blocks = arith.constant 16 : index
    %c1 = arith.constant 1 : index
    %cols = arith.constant 14 : index
    %init = arith.constant 0.000000e+00 : f32
    %c16 = arith.constant 16 : index
    %c2 = arith.constant 2 : index
    loop.for %i1 = %c0 to %blocks step %c1 kind(parallel) {
      loop.for %i2 = %c0 to %cols step %c1 {
        loop.for %i3 = %c0 to %cols step %c1 {
          loop.for %i4 = %c0 to %c16 step %c1 kind(vectorized) {
            loop.store %init, %tmp[%c0, %i1, %i2, %i3, %i4] : memref<1x16x14x14x16xf32>
          }
          loop.for %k0 = %c0 to %c2 step %c1 {
            loop.for %k3 = %c0 to %c16 step %c1 {
              loop.for %i4_1 = %c0 to %c16 step %c1 kind(vectorized) {
                %0 = arith.addi %i2, %c0 : index
                %1 = arith.addi %i3, %c0 : index
                %2 = loop.load %in0[%c0, %k0, %0, %1, %k3] : memref<1x2x14x14x16xf32>
                %3 = loop.load %in1[%i1, %k0, %c0, %c0, %k3, %i4_1] : memref<16x2x1x1x16x16xf32>
                %4 = arith.mulf %2, %3 : f32
                %5 = arith.constant 16 : index
                %6 = arith.muli %k0, %5 : index
                %7 = arith.addi %6, %k3 : index
                %acc = loop.load %tmp[%c0, %i1, %i2, %i3, %i4_1] : memref<1x16x14x14x16xf32>
                %8 = arith.addf %acc, %4 : f32
                loop.store %8, %tmp[%c0, %i1, %i2, %i3, %i4_1] : memref<1x16x14x14x16xf32>
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
            %10 = loop.load %tmp[%9, %i1_1, %i2_1, %i3_1, %i4_2] : memref<1x16x14x14x16xf32>
            %11 = loop.load %in2[%9, %i1_1, %9, %9, %i4_2] : memref<1x16x1x1x16xf32>
            %12 = arith.addf %10, %11 : f32
            %13 = arith.constant 0.000000e+00 : f32
            %14 = arith.maximumf %12, %13 : f32
            loop.store %14, %out0[%c0, %i1_1, %i2_1, %i3_1, %i4_2] : memref<1x16x14x14x16xf32>
          }
        }
      }
    }
    loop.free %tmp : memref<1x16x14x14x16xf32>
    loop.return
  }
}

// CHECK-LABEL: loop.func @pointwise_16_blocks(
// CHECK:         loop.for %i1o = %c0 to %blocks step %c8 kind(parallel) {
// CHECK:           %i1_7 = arith.addi %i1o, %c7 : index
// CHECK-NOT:       %i1_8 = arith.addi %i1o
// CHECK:             loop.for %i3o = %c0 to %cols step %c2 {
// CHECK:                 loop.load %in1[%i1_7, %k0
// CHECK-COUNT-16:        arith.mulf
// CHECK-NOT:             arith.mulf
// CHECK:             loop.store
