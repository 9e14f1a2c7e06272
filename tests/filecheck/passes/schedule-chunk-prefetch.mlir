// RUN: lamina-opt %s -p 'schedule{cores=1 conv_chunk_prefetch=2 conv_chunk_prefetch_spread=0}' | filecheck %s
// RUN: lamina-opt %s -p 'schedule{cores=1 conv_chunk_prefetch=0}' | filecheck %s --check-prefix=OFF
// RUN: lamina-opt %s -p 'schedule{cores=1 conv_chunk_prefetch=2 conv_chunk_min_channels=0}' | filecheck %s --check-prefix=OFF
// The module pins a Sapphire Rapids target (two 512-bit FMA pipes, 48 KiB
// L1d, 2 MiB L2): `conv_chunk_min_channels` is derived 512 there and
// `conv_reduction_chunk` 128, so the test does not depend on the host.

// A pointwise (1x1) convolution in NCHW16c with 512 input channels (32
// blocks), 128 output channels (8 blocks: two steps of 4 jammed blocks), on
// a 7 x 7 image: one flat row of 49 pixels, 9 register blocks of 5 and a tail
// of 4, the reduction in chunks of 8 blocks (128 channels) outside the 9
// blocks. With `conv_chunk_prefetch=2` each of the 9 blocks of a chunk first
// prefetches into L2 (locality 2) its share (one input-channel block: 16
// lines per jammed block) of the next chunk's weights: channel block
// `cbo + 8 + ci`, wrapped to the next step's blocks (`+ 4`) after the last
// chunk, the block index clamped to the last (7). Off (or no chunks): no
// prefetch. The default on this target spreads the same lines over every
// input-channel step instead (schedule-chunk-prefetch-spread.mlir).

// CHECK-LABEL: loop.func @pointwise_chunk_prefetch
// CHECK:       loop.for %[[CO:.*]] = %c0 to %cko step %{{.*}} kind(parallel)
// CHECK:         loop.for %[[KO:.*]] = %c0 to %ccb step %{{.*}} {
// CHECK-NEXT:      loop.for %[[PX:.*]] = %c0 to %{{.*}} step %{{.*}} {
// CHECK:             %[[NEXT:.*]] = arith.addi %[[KO]], %{{.*}} : index
// CHECK-NEXT:        %[[WRAP:.*]] = arith.divui %[[NEXT]], %{{.*}} : index
// CHECK-NEXT:        %[[BACK:.*]] = arith.muli %[[WRAP]], %{{.*}} : index
// CHECK-NEXT:        %[[BASE:.*]] = arith.subi %[[NEXT]], %[[BACK]] : index
// CHECK-NEXT:        %[[AHEAD:.*]] = arith.muli %[[WRAP]], %{{.*}} : index
// CHECK-NEXT:        %[[STEP:.*]] = arith.addi %[[CO]], %[[AHEAD]] : index
// CHECK:             loop.for %[[CI:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:          %[[AT:.*]] = arith.addi %[[BASE]], %[[CI]] : index
// CHECK:               %[[B:.*]] = arith.addi %[[STEP]], %{{.*}} : index
// CHECK-NEXT:          %[[CL:.*]] = arith.minsi %[[B]], %{{.*}} : index
// CHECK-NEXT:          loop.prefetch %in1[%[[CL]], %[[AT]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] {locality = 2 : i32}
// CHECK-COUNT-63:      loop.prefetch %in1
// CHECK-NOT:           loop.prefetch
// CHECK:             loop.for %{{.*}} = %c0 to %cko step %c1 {
// CHECK:         loop.for %{{.*}} = %c45 to %c49 step %c4 {
// CHECK-NOT:       loop.prefetch

// OFF-LABEL: loop.func @pointwise_chunk_prefetch
// OFF-NOT:   loop.prefetch

builtin.module attributes {lamina.phase = #lamina.phase<lowering>, lamina.targets = {cpu = #lamina.target<"cpu", {isa = "sapphirerapids", l1d_bytes = 49152 : i64, l2_bytes = 2097152 : i64, l3_bytes = 314572800 : i64}>}} {
  loop.func @pointwise_chunk_prefetch(%in0: memref<1x32x7x7x16xf32>, %in1: memref<8x32x1x1x16x16xf32>, %in2: memref<1x8x1x1x16xf32>, %out0: memref<1x8x7x7x16xf32>) {
    %tmp = loop.alloc {scope = "local"} : memref<1x8x7x7x16xf32>
    %c0 = arith.constant 0 : index
    %cko = arith.constant 8 : index
    %c1 = arith.constant 1 : index
    %ch = arith.constant 7 : index
    %cw = arith.constant 7 : index
    %init = arith.constant 0.000000e+00 : f32
    %c16 = arith.constant 16 : index
    %ccb = arith.constant 32 : index
    loop.for %i1 = %c0 to %cko step %c1 kind(parallel) {
      loop.for %i2 = %c0 to %ch step %c1 {
        loop.for %i3 = %c0 to %cw step %c1 {
          loop.for %i4 = %c0 to %c16 step %c1 kind(vectorized) {
            loop.store %init, %tmp[%c0, %i1, %i2, %i3, %i4] : memref<1x8x7x7x16xf32>
          }
          loop.for %k0 = %c0 to %ccb step %c1 {
            loop.for %k3 = %c0 to %c16 step %c1 {
              loop.for %i4_1 = %c0 to %c16 step %c1 kind(vectorized) {
                %0 = arith.addi %i2, %c0 : index
                %1 = arith.addi %i3, %c0 : index
                %2 = loop.load %in0[%c0, %k0, %0, %1, %k3] : memref<1x32x7x7x16xf32>
                %3 = loop.load %in1[%i1, %k0, %c0, %c0, %k3, %i4_1] : memref<8x32x1x1x16x16xf32>
                %4 = arith.mulf %2, %3 : f32
                %acc = loop.load %tmp[%c0, %i1, %i2, %i3, %i4_1] : memref<1x8x7x7x16xf32>
                %5 = arith.addf %acc, %4 : f32
                loop.store %5, %tmp[%c0, %i1, %i2, %i3, %i4_1] : memref<1x8x7x7x16xf32>
              }
            }
          }
        }
      }
    }
    loop.for %i1_1 = %c0 to %cko step %c1 {
      loop.for %i2_1 = %c0 to %ch step %c1 {
        loop.for %i3_1 = %c0 to %cw step %c1 {
          loop.for %i4_2 = %c0 to %c16 step %c1 kind(vectorized) {
            %6 = arith.constant 0 : index
            %7 = loop.load %tmp[%6, %i1_1, %i2_1, %i3_1, %i4_2] : memref<1x8x7x7x16xf32>
            %8 = loop.load %in2[%6, %i1_1, %6, %6, %i4_2] : memref<1x8x1x1x16xf32>
            %9 = arith.addf %7, %8 : f32
            %10 = arith.constant 0.000000e+00 : f32
            %11 = arith.maximumf %9, %10 : f32
            loop.store %11, %out0[%c0, %i1_1, %i2_1, %i3_1, %i4_2] : memref<1x8x7x7x16xf32>
          }
        }
      }
    }
    loop.free %tmp : memref<1x8x7x7x16xf32>
    loop.return
  }
}
