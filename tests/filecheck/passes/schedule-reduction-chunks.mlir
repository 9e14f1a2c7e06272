// RUN: lamina-opt %s -p 'schedule{vector_bits=256 vector_registers=16 cores=2}' | filecheck %s
// RUN: lamina-opt %s -p 'schedule{vector_bits=256 vector_registers=16 cores=2 conv_reduction_chunk=0}' | filecheck %s --check-prefix=OFF
// RUN: lamina-opt %s -p 'schedule{vector_bits=512 vector_registers=32 cores=2}' | filecheck %s --check-prefix=AVX512
// The module pins a Zen 4 target (32 KiB L1d, 1 MiB L2): the blocking below is
// sized for those caches, so the test does not depend on the host's.

// A pointwise (1x1) convolution in NCHW8c on 16 vector registers (AVX2) with
// 512 input channels (64 blocks), 32 output channels, 10 x 28 output pixels:
// two output-channel blocks jammed, rows of 6 + 6 + 6 + 6 + 4 columns. The
// two blocks' weights (32 KiB) and a 6-column block's input (12 KiB) over
// all input channels overflow L1, and the input (560 KiB) is more than half
// of L2, so the reduction is chunked (`conv_reduction_chunk`, 64 channels =
// 8 blocks): the row's blocks are filled first, then each chunk of 8
// input-channel blocks runs over the row's 6-column blocks, then the
// epilogue (bias, relu) runs over them. The 4-column tail block, alone in
// its loop, keeps its whole reduction. Not with the knob at 0, nor on 32
// registers (AVX-512: 0 by default).

// CHECK-LABEL: loop.func @pointwise_chunked
// CHECK:       loop.for %{{.*}} = %c0 to %cko step %c2 kind(parallel)
// CHECK:         loop.for %{{.*}} = %c0 to %c24 step %c6 {
// CHECK-NOT:       loop.load %in0
// CHECK:         loop.for %[[KO:.*]] = %c0 to %ccb step %c8 {
// CHECK-NEXT:      loop.for %{{.*}} = %c0 to %c24 step %c6 {
// CHECK:             loop.for %[[KI:.*]] = %c0 to %c8 step %c1 {
// CHECK-NEXT:          %[[K:.*]] = arith.addi %[[KO]], %[[KI]]
// CHECK:               loop.load %in0[%c0, %[[K]],
// CHECK:         loop.for %{{.*}} = %c0 to %c24 step %c6 {
// CHECK-NOT:       loop.load %in0
// CHECK:           loop.load %in2
// CHECK:           arith.maximumf
// CHECK:         loop.for %{{.*}} = %c24 to %cw step %cko {
// CHECK:           loop.for %{{.*}} = %c0 to %ccb step %c1 {

// OFF-LABEL: loop.func @pointwise_chunked
// OFF-NOT:   to %ccb step %c8
// OFF:       loop.for %{{.*}} = %c0 to %ccb step %c1 {
// OFF-NOT:   to %ccb step %c8

// AVX512-LABEL: loop.func @pointwise_chunked
// AVX512-NOT:   to %ccb step %c8

builtin.module attributes {lamina.phase = #lamina.phase<lowering>, lamina.targets = {cpu = #lamina.target<"cpu", {isa = "znver4", l1d_bytes = 32768 : i64, l2_bytes = 1048576 : i64, l3_bytes = 33554432 : i64}>}} {
  loop.func @pointwise_chunked(%in0: memref<1x64x10x28x8xf32>, %in1: memref<4x64x1x1x8x8xf32>, %in2: memref<1x4x1x1x8xf32>, %out0: memref<1x4x10x28x8xf32>) {
    %tmp = loop.alloc {scope = "local"} : memref<1x4x10x28x8xf32>
    %c0 = arith.constant 0 : index
    %cko = arith.constant 4 : index
    %c1 = arith.constant 1 : index
    %ch = arith.constant 10 : index
    %cw = arith.constant 28 : index
    %init = arith.constant 0.000000e+00 : f32
    %c8 = arith.constant 8 : index
    %ccb = arith.constant 64 : index
    loop.for %i1 = %c0 to %cko step %c1 kind(parallel) {
      loop.for %i2 = %c0 to %ch step %c1 {
        loop.for %i3 = %c0 to %cw step %c1 {
          loop.for %i4 = %c0 to %c8 step %c1 kind(vectorized) {
            loop.store %init, %tmp[%c0, %i1, %i2, %i3, %i4] : memref<1x4x10x28x8xf32>
          }
          loop.for %k0 = %c0 to %ccb step %c1 {
            loop.for %k3 = %c0 to %c8 step %c1 {
              loop.for %i4_1 = %c0 to %c8 step %c1 kind(vectorized) {
                %0 = arith.addi %i2, %c0 : index
                %1 = arith.addi %i3, %c0 : index
                %2 = loop.load %in0[%c0, %k0, %0, %1, %k3] : memref<1x64x10x28x8xf32>
                %3 = loop.load %in1[%i1, %k0, %c0, %c0, %k3, %i4_1] : memref<4x64x1x1x8x8xf32>
                %4 = arith.mulf %2, %3 : f32
                %acc = loop.load %tmp[%c0, %i1, %i2, %i3, %i4_1] : memref<1x4x10x28x8xf32>
                %5 = arith.addf %acc, %4 : f32
                loop.store %5, %tmp[%c0, %i1, %i2, %i3, %i4_1] : memref<1x4x10x28x8xf32>
              }
            }
          }
        }
      }
    }
    loop.for %i1_1 = %c0 to %cko step %c1 {
      loop.for %i2_1 = %c0 to %ch step %c1 {
        loop.for %i3_1 = %c0 to %cw step %c1 {
          loop.for %i4_2 = %c0 to %c8 step %c1 kind(vectorized) {
            %6 = arith.constant 0 : index
            %7 = loop.load %tmp[%6, %i1_1, %i2_1, %i3_1, %i4_2] : memref<1x4x10x28x8xf32>
            %8 = loop.load %in2[%6, %i1_1, %6, %6, %i4_2] : memref<1x4x1x1x8xf32>
            %9 = arith.addf %7, %8 : f32
            %10 = arith.constant 0.000000e+00 : f32
            %11 = arith.maximumf %9, %10 : f32
            loop.store %11, %out0[%c0, %i1_1, %i2_1, %i3_1, %i4_2] : memref<1x4x10x28x8xf32>
          }
        }
      }
    }
    loop.free %tmp : memref<1x4x10x28x8xf32>
    loop.return
  }
}
