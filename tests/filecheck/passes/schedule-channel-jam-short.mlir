// RUN: lamina-opt %s -p 'schedule-register-block{vector_bits=512 vector_registers=32 cores=2 conv_direct_jam_max=0}' | filecheck %s
// RUN: lamina-opt %s -p 'schedule{vector_bits=512 vector_registers=32 cores=2 conv_direct_jam_max=0}' | filecheck %s --check-prefix=FUSED

// A pointwise (1x1) convolution whose input is ONE channel block (16
// channels on AVX-512, MobileNet's 16->96 expansion at 112x112): lower-te
// drops the reduction's channel-block loop (one trip), so the reduction is
// the channels of the block alone. It is still a pointwise convolution and
// its row of 28 output columns is longer than one one-block register block:
// two output-channel blocks per input broadcast, 7 rows x 2 blocks. A 1x3
// window on the same single block also reduces over two loops (`kw` and the
// channels), but `kw` indexes the input's columns together with the output
// column: not pointwise, so one block per step (`conv_direct_jam_max` 0, the
// rule on one 512-bit FMA pipe; tests/filecheck/passes/schedule-direct-jam-wide.mlir
// has the two-pipe rule). With all of `schedule`
// (FUSED), the jammed channel-block loop has one iteration, so it hands
// `parallel` to the output rows (`balance_parallel`): both cores share them.

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @pointwise_one_block(%in0: memref<1x1x28x28x16xf32>, %in1: memref<2x1x1x1x16x16xf32>, %out0: memref<1x2x28x28x16xf32>) {
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    %c1 = arith.constant 1 : index
    %c28 = arith.constant 28 : index
    %init = arith.constant 0.000000e+00 : f32
    %c16 = arith.constant 16 : index
    loop.for %i1 = %c0 to %c2 step %c1 kind(parallel) {
      loop.for %i2 = %c0 to %c28 step %c1 {
        loop.for %i3 = %c0 to %c28 step %c1 {
          loop.for %i4 = %c0 to %c16 step %c1 kind(vectorized) {
            loop.store %init, %out0[%c0, %i1, %i2, %i3, %i4] : memref<1x2x28x28x16xf32>
          }
          loop.for %k3 = %c0 to %c16 step %c1 {
            loop.for %i4_1 = %c0 to %c16 step %c1 kind(vectorized) {
              %0 = arith.addi %i2, %c0 : index
              %1 = arith.addi %i3, %c0 : index
              %2 = loop.load %in0[%c0, %c0, %0, %1, %k3] : memref<1x1x28x28x16xf32>
              %3 = loop.load %in1[%i1, %c0, %c0, %c0, %k3, %i4_1] : memref<2x1x1x1x16x16xf32>
              %4 = arith.mulf %2, %3 : f32
              %acc = loop.load %out0[%c0, %i1, %i2, %i3, %i4_1] : memref<1x2x28x28x16xf32>
              %5 = arith.addf %acc, %4 : f32
              loop.store %5, %out0[%c0, %i1, %i2, %i3, %i4_1] : memref<1x2x28x28x16xf32>
            }
          }
        }
      }
    }
    loop.return
  }
  loop.func @window_one_block(%in0: memref<1x1x28x30x16xf32>, %in1: memref<2x1x1x3x16x16xf32>, %out0: memref<1x2x28x28x16xf32>) {
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c28 = arith.constant 28 : index
    %init = arith.constant 0.000000e+00 : f32
    %c16 = arith.constant 16 : index
    loop.for %i1 = %c0 to %c2 step %c1 kind(parallel) {
      loop.for %i2 = %c0 to %c28 step %c1 {
        loop.for %i3 = %c0 to %c28 step %c1 {
          loop.for %i4 = %c0 to %c16 step %c1 kind(vectorized) {
            loop.store %init, %out0[%c0, %i1, %i2, %i3, %i4] : memref<1x2x28x28x16xf32>
          }
          loop.for %k2 = %c0 to %c3 step %c1 {
            loop.for %k3 = %c0 to %c16 step %c1 {
              loop.for %i4_1 = %c0 to %c16 step %c1 kind(vectorized) {
                %0 = arith.addi %i3, %k2 : index
                %1 = loop.load %in0[%c0, %c0, %i2, %0, %k3] : memref<1x1x28x30x16xf32>
                %2 = loop.load %in1[%i1, %c0, %c0, %k2, %k3, %i4_1] : memref<2x1x1x3x16x16xf32>
                %3 = arith.mulf %1, %2 : f32
                %acc = loop.load %out0[%c0, %i1, %i2, %i3, %i4_1] : memref<1x2x28x28x16xf32>
                %4 = arith.addf %acc, %3 : f32
                loop.store %4, %out0[%c0, %i1, %i2, %i3, %i4_1] : memref<1x2x28x28x16xf32>
              }
            }
          }
        }
      }
    }
    loop.return
  }
}

// CHECK-LABEL: loop.func @pointwise_one_block(
// CHECK:         loop.for %i1o = %c0 to %c2 step %c2 kind(parallel) {
// CHECK-NEXT:      %i1 = arith.addi %i1o, %c0 : index
// CHECK-NEXT:      %i1_1 = arith.addi %i1o, %c1 : index
// CHECK:             loop.for %i3o = %c0 to %c28 step %c7 {
// CHECK-COUNT-14:      loop.store %init, %out0[%c0, %i1{{(_1)?}}, %i2, %i3
// CHECK:               loop.for %k3 = %c0 to %c16 step %c1 {
// CHECK-NEXT:            loop.for %i4_1 = %c0 to %c16 step %c1 kind(vectorized) {
// CHECK-COUNT-7:           loop.load %in0[%c0, %c0, %0,
// CHECK-NEXT:              loop.load %in1[%i1, %c0, %c0, %c0, %k3, %i4_1]
// CHECK-NEXT:              loop.load %in1[%i1_1, %c0, %c0, %c0, %k3, %i4_1]
// CHECK-COUNT-14:          arith.mulf
// CHECK-NOT:     lamina.jam_channels
// CHECK-LABEL: loop.func @window_one_block(
// CHECK:         loop.for %i1 = %c0 to %c2 step %c1 kind(parallel) {
// CHECK:             loop.for %i3o = %c0 to %c28 step %c14 {
// CHECK-NOT:       lamina.jam_channels

// FUSED-LABEL: loop.func @pointwise_one_block(
// FUSED:         loop.for %i1o = %c0 to %c2 step %c2 {
// FUSED:           loop.for %i2 = %c0 to %c28 step %c1 kind(parallel) {
// FUSED:             loop.for %i3o = %c0 to %c28 step %c7 {
// FUSED:               loop.for %k3 = %c0 to %c16 step %c1 {
// FUSED-COUNT-7:           loop.load %in0[
// FUSED-COUNT-2:           loop.load %in1[
// FUSED-COUNT-14:          arith.mulf
