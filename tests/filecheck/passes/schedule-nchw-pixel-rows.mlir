// RUN: lamina-opt %s -p 'schedule{vector_bits=512 vector_registers=32 cores=2 pack_min_row_blocks=32 conv_nchw_flat_pixels=64}' | filecheck %s
// RUN: lamina-opt %s -p 'schedule{vector_bits=512 vector_registers=32 cores=2 pack_min_row_blocks=32 conv_nchw_flat_pixels=0}' | filecheck %s --check-prefix=OFF
// RUN: lamina-opt %s -p 'schedule{vector_bits=512 vector_registers=32 cores=2 pack_min_row_blocks=32 conv_nchw_flat_pixels=65}' | filecheck %s --check-prefix=OFF
// RUN: lamina-opt %s -p 'schedule-flatten-rows{vector_bits=512 vector_registers=32 cores=2 conv_nchw_flat_pixels=64}' | filecheck %s --check-prefix=RULE

// An NCHW pointwise convolution (64 -> 64 channels, a matrix product of the
// weights by the pixels) with a bias + relu epilogue, as lower-te emits it.
// `conv_nchw_flat_pixels` (derived 3136 with two 512-bit FMA pipes): from
// that many pixels its 8 x 8 image is run as one row of 64 pixels
// (`schedule/pixel_rows.py`): the parameters are seen as 1x64x1x64 through
// loop.reshape, the row loop is gone, and the register block is 8 output
// channels x 2 whole vectors of 16 pixels (the column-block loop outermost)
// instead of 8 channels x one 8-column image row. (`pack_min_row_blocks=32`
// keeps the panel of pixels read in place whatever the host derives, so the
// test does not depend on the host.)

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @pointwise_nchw(%in0: memref<1x64x8x8xf32>, %in1: memref<64x64x1x1xf32>, %in2: memref<64x1x1xf32>, %out0: memref<1x64x8x8xf32>) {
    %tmp = loop.alloc {scope = "local"} : memref<1x64x8x8xf32>
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %init = arith.constant 0.000000e+00 : f32
    loop.for %i1 = %c0 to %c64 step %c1 kind(parallel) {
      loop.for %i2 = %c0 to %c8 step %c1 {
        loop.for %i3 = %c0 to %c8 step %c1 kind(vectorized) {
          loop.store %init, %tmp[%c0, %i1, %i2, %i3] : memref<1x64x8x8xf32>
        }
        loop.for %k0 = %c0 to %c64 step %c1 {
          loop.for %i3_1 = %c0 to %c8 step %c1 kind(vectorized) {
            %0 = arith.addi %i2, %c0 : index
            %1 = arith.addi %i3_1, %c0 : index
            %2 = loop.load %in0[%c0, %k0, %0, %1] : memref<1x64x8x8xf32>
            %3 = loop.load %in1[%i1, %k0, %c0, %c0] : memref<64x64x1x1xf32>
            %4 = arith.mulf %2, %3 : f32
            %acc = loop.load %tmp[%c0, %i1, %i2, %i3_1] : memref<1x64x8x8xf32>
            %5 = arith.addf %acc, %4 : f32
            loop.store %5, %tmp[%c0, %i1, %i2, %i3_1] : memref<1x64x8x8xf32>
          }
        }
      }
    }
    loop.for %i1_1 = %c0 to %c64 step %c1 {
      loop.for %i2_1 = %c0 to %c8 step %c1 {
        loop.for %i3_2 = %c0 to %c8 step %c1 kind(vectorized) {
          %6 = arith.constant 0 : index
          %7 = loop.load %tmp[%6, %i1_1, %i2_1, %i3_2] : memref<1x64x8x8xf32>
          %8 = loop.load %in2[%i1_1, %6, %6] : memref<64x1x1xf32>
          %9 = arith.addf %7, %8 : f32
          %10 = arith.constant 0.000000e+00 : f32
          %11 = arith.maximumf %9, %10 : f32
          loop.store %11, %out0[%c0, %i1_1, %i2_1, %i3_2] : memref<1x64x8x8xf32>
        }
      }
    }
    loop.free %tmp : memref<1x64x8x8xf32>
    loop.return
  }
}

// CHECK-LABEL: loop.func @pointwise_nchw(
// CHECK-NEXT:    %in0_1 = loop.reshape %in0 : memref<1x64x8x8xf32> to memref<1x64x1x64xf32>
// CHECK-NEXT:    %out0_1 = loop.reshape %out0 : memref<1x64x8x8xf32> to memref<1x64x1x64xf32>
// CHECK:         loop.for %i3o = %c0 to %c64 step %c32 {
// CHECK-NEXT:      loop.for %i1o = %c0 to %c64 step %c8 kind(parallel) {
// CHECK:             loop.for %k0 = %c0 to %c64 step %c1 {
// CHECK-NEXT:          loop.for %i3i_1 = %c0 to %c32 step %c1 kind(vectorized) {
// CHECK:                 loop.load %in0_1[%c0, %k0, %{{.*}}, %{{.*}}] : memref<1x64x1x64xf32>
// CHECK-COUNT-8:         loop.load %in1[%i1{{(_[0-9])?}}, %k0, %c0, %c0]
// CHECK-COUNT-8:         arith.mulf
// CHECK:               arith.maximumf
// CHECK-NOT:     loop.for %i2
// CHECK:         loop.return

// OFF-LABEL: loop.func @pointwise_nchw(
// OFF-NOT:       loop.reshape
// OFF:           loop.for %i2 = %c0 to %c8 step %c1 kind(parallel) {
// OFF:               loop.for %i3_1 = %c0 to %c8 step %c1 kind(vectorized) {

// The rule alone (`schedule-flatten-rows`): one loop over the 64 pixels in
// the fill, the reduction and the epilogue; no row loop left.
// RULE-LABEL: loop.func @pointwise_nchw(
// RULE:         %tmp = loop.alloc {scope = "local"} : memref<1x64x1x64xf32>
// RULE:         loop.for %i1 = %c0 to %c64 step %c1 kind(parallel) {
// RULE-NEXT:      loop.for %i3 = %c0 to %c64 step %c1 kind(vectorized) {
// RULE-NEXT:        loop.store %init, %tmp[%c0, %i1, %{{.*}}, %i3] : memref<1x64x1x64xf32>
// RULE:           loop.for %k0 = %c0 to %c64 step %c1 {
// RULE-NEXT:        loop.for %i3_1 = %c0 to %c64 step %c1 kind(vectorized) {
// RULE:               loop.load %in0_1[%c0, %k0, %{{.*}}, %{{.*}}] : memref<1x64x1x64xf32>
// RULE-NOT:     loop.for %i2
