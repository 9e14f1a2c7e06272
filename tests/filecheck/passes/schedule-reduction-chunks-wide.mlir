// RUN: lamina-opt %s -p 'schedule{cores=1}' | filecheck %s
// RUN: lamina-opt %s -p 'schedule{cores=1 conv_chunk_min_channels=0}' | filecheck %s --check-prefix=OFF
// RUN: lamina-opt %s -p 'schedule{cores=1 conv_chunk_min_channels=1024}' | filecheck %s --check-prefix=OFF
// RUN: lamina-opt %s -p 'schedule{cores=1 conv_reduction_chunk=0}' | filecheck %s --check-prefix=OFF
// The module pins a Sapphire Rapids target (two 512-bit FMA pipes, 48 KiB
// L1d, 2 MiB L2): `conv_chunk_min_channels` is derived 512 there and
// `conv_reduction_chunk` 128, so the test does not depend on the host.

// A pointwise (1x1) convolution in NCHW16c with 512 input channels (32
// blocks), 64 output channels (4 blocks, all jammed into one step), on a
// 14 x 14 image. Its input (392 KiB) is less than half of L2, which the
// rule of `conv_reduction_chunk` alone leaves unchunked; with 512 input
// channels (`conv_chunk_min_channels`) the image runs as one flat row of
// 196 pixels (its parameters seen through `loop.reshape`) and the
// reduction in chunks of 8 blocks (128 channels) outside all of the
// row's 49 register blocks of 4 pixels: fill, then each chunk over every
// block, then the epilogue (bias, relu). Off (knob 0, a minimum above 512
// channels, or no chunk size): 14 rows of 5 + 5 + 4 pixels, each block
// over the whole reduction.

// CHECK-LABEL: loop.func @pointwise_wide
// CHECK:       loop.reshape %in0 : memref<1x32x14x14x16xf32> to memref<1x32x1x196x16xf32>
// CHECK:       loop.for %{{.*}} = %c0 to %cko step %cko kind(parallel)
// CHECK-NEXT:    arith.addi
// CHECK:         loop.for %{{.*}} = %c0 to %c196 step %cko {
// CHECK-NOT:       loop.load %in0
// CHECK:         loop.for %[[KO:.*]] = %c0 to %ccb step %c8 {
// CHECK-NEXT:      loop.for %{{.*}} = %c0 to %c196 step %cko {
// CHECK:             loop.for %[[KI:.*]] = %c0 to %c8 step %c1 {
// CHECK-NEXT:          %[[K:.*]] = arith.addi %[[KO]], %[[KI]]
// CHECK:               loop.load %in0_1[%c0, %[[K]],
// CHECK:         loop.for %{{.*}} = %c0 to %c196 step %cko {
// CHECK-NOT:       loop.load %in0
// CHECK:           loop.load %in2
// CHECK:           arith.maximumf
// CHECK-NOT:   loop.for

// OFF-LABEL: loop.func @pointwise_wide
// OFF-NOT:   loop.reshape
// OFF:       loop.for %{{.*}} = %c0 to %ch step %c1 {
// OFF:         loop.for %{{.*}} = %c0 to %c10 step %c5 {
// OFF-NOT:   step %c8
// OFF:           loop.for %{{.*}} = %c0 to %ccb step %c1 {
// OFF-NOT:   step %c8

builtin.module attributes {lamina.phase = #lamina.phase<lowering>, lamina.targets = {cpu = #lamina.target<"cpu", {isa = "sapphirerapids", l1d_bytes = 49152 : i64, l2_bytes = 2097152 : i64, l3_bytes = 314572800 : i64}>}} {
  loop.func @pointwise_wide(%in0: memref<1x32x14x14x16xf32>, %in1: memref<4x32x1x1x16x16xf32>, %in2: memref<1x4x1x1x16xf32>, %out0: memref<1x4x14x14x16xf32>) {
    %tmp = loop.alloc {scope = "local"} : memref<1x4x14x14x16xf32>
    %c0 = arith.constant 0 : index
    %cko = arith.constant 4 : index
    %c1 = arith.constant 1 : index
    %ch = arith.constant 14 : index
    %cw = arith.constant 14 : index
    %init = arith.constant 0.000000e+00 : f32
    %c8 = arith.constant 16 : index
    %ccb = arith.constant 32 : index
    loop.for %i1 = %c0 to %cko step %c1 kind(parallel) {
      loop.for %i2 = %c0 to %ch step %c1 {
        loop.for %i3 = %c0 to %cw step %c1 {
          loop.for %i4 = %c0 to %c8 step %c1 kind(vectorized) {
            loop.store %init, %tmp[%c0, %i1, %i2, %i3, %i4] : memref<1x4x14x14x16xf32>
          }
          loop.for %k0 = %c0 to %ccb step %c1 {
            loop.for %k3 = %c0 to %c8 step %c1 {
              loop.for %i4_1 = %c0 to %c8 step %c1 kind(vectorized) {
                %0 = arith.addi %i2, %c0 : index
                %1 = arith.addi %i3, %c0 : index
                %2 = loop.load %in0[%c0, %k0, %0, %1, %k3] : memref<1x32x14x14x16xf32>
                %3 = loop.load %in1[%i1, %k0, %c0, %c0, %k3, %i4_1] : memref<4x32x1x1x16x16xf32>
                %4 = arith.mulf %2, %3 : f32
                %acc = loop.load %tmp[%c0, %i1, %i2, %i3, %i4_1] : memref<1x4x14x14x16xf32>
                %5 = arith.addf %acc, %4 : f32
                loop.store %5, %tmp[%c0, %i1, %i2, %i3, %i4_1] : memref<1x4x14x14x16xf32>
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
            %7 = loop.load %tmp[%6, %i1_1, %i2_1, %i3_1, %i4_2] : memref<1x4x14x14x16xf32>
            %8 = loop.load %in2[%6, %i1_1, %6, %6, %i4_2] : memref<1x4x1x1x16xf32>
            %9 = arith.addf %7, %8 : f32
            %10 = arith.constant 0.000000e+00 : f32
            %11 = arith.maximumf %9, %10 : f32
            loop.store %11, %out0[%c0, %i1_1, %i2_1, %i3_1, %i4_2] : memref<1x4x14x14x16xf32>
          }
        }
      }
    }
    loop.free %tmp : memref<1x4x14x14x16xf32>
    loop.return
  }
}
