// RUN: lamina-opt %s -p 'schedule{vector_bits=512 vector_registers=32 cores=1 conv_direct_jam_max=4 conv_direct_row_jam=0}' | filecheck %s
// RUN: lamina-opt %s -p 'schedule{vector_bits=512 vector_registers=32 cores=1 conv_direct_jam_max=0 conv_direct_row_jam=0}' | filecheck %s --check-prefix=OFF

// `conv_direct_jam_max` (derived 4 on a CPU with two 512-bit FMA pipes,
// Intel Xeon): a dense direct convolution whose reduction steps through
// whole input-channel blocks (here a 1x3 window at stride 2 over 2 input
// blocks, 4 output blocks, rows of 28 columns) jams output-channel blocks
// as a pointwise one does: 4 blocks x 4 rows (28 = 7 x 4, no tail), each
// broadcast feeding 4 FMAs. At 0 (Zen 4, the AVX-512 rule before): one block
// of 14 rows per step. (`conv_direct_row_jam`, which sizes these rows for one
// broadcast register, is off here: schedule-direct-row-jam.mlir.)

// CHECK-LABEL: loop.func @strided_window
// CHECK:       loop.for %i1o = %c0 to %c4 step %c4 kind(parallel) {
// CHECK:         loop.for %i3o = %c0 to %c28 step %c4 {
// CHECK:           loop.for %k0 = %c0 to %c2 step %c1 {
// CHECK:             loop.for %k2 = %c0 to %c3 step %c1 {
// CHECK-COUNT-4:         loop.load %in0[
// CHECK-COUNT-4:         loop.load %in1[
// CHECK-COUNT-16:        arith.mulf

// OFF-LABEL: loop.func @strided_window
// OFF:       loop.for %i1 = %c0 to %c4 step %c1 kind(parallel) {
// OFF:         loop.for %i3o = %c0 to %c28 step %c14 {
// OFF-COUNT-14:        loop.load %in0[
// OFF:                 loop.load %in1[
// OFF-NOT:             loop.load %in1[

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @strided_window(%in0: memref<1x2x28x57x16xf32>, %in1: memref<4x2x1x3x16x16xf32>, %out0: memref<1x4x28x28x16xf32>) {
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c28 = arith.constant 28 : index
    %init = arith.constant 0.000000e+00 : f32
    %c16 = arith.constant 16 : index
    loop.for %i1 = %c0 to %c4 step %c1 kind(parallel) {
      loop.for %i2 = %c0 to %c28 step %c1 {
        loop.for %i3 = %c0 to %c28 step %c1 {
          loop.for %i4 = %c0 to %c16 step %c1 kind(vectorized) {
            loop.store %init, %out0[%c0, %i1, %i2, %i3, %i4] : memref<1x4x28x28x16xf32>
          }
          loop.for %k0 = %c0 to %c2 step %c1 {
            loop.for %k2 = %c0 to %c3 step %c1 {
              loop.for %k3 = %c0 to %c16 step %c1 {
                loop.for %i4_1 = %c0 to %c16 step %c1 kind(vectorized) {
                  %s = arith.muli %i3, %c2 : index
                  %0 = arith.addi %s, %k2 : index
                  %1 = loop.load %in0[%c0, %k0, %i2, %0, %k3] : memref<1x2x28x57x16xf32>
                  %2 = loop.load %in1[%i1, %k0, %c0, %k2, %k3, %i4_1] : memref<4x2x1x3x16x16xf32>
                  %3 = arith.mulf %1, %2 : f32
                  %acc = loop.load %out0[%c0, %i1, %i2, %i3, %i4_1] : memref<1x4x28x28x16xf32>
                  %4 = arith.addf %acc, %3 : f32
                  loop.store %4, %out0[%c0, %i1, %i2, %i3, %i4_1] : memref<1x4x28x28x16xf32>
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
