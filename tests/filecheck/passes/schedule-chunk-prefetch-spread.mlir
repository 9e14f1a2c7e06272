// RUN: lamina-opt %s -p 'schedule{cores=1}' | filecheck %s
// RUN: lamina-opt %s -p 'schedule{cores=1 conv_chunk_prefetch=0}' | filecheck %s --check-prefix=OFF
// The module pins a Sapphire Rapids target (two 512-bit FMA pipes, 48 KiB
// L1d, 2 MiB L2): `conv_chunk_prefetch` is derived 2 there and
// `conv_chunk_prefetch_spread` 1, so the test does not depend on the host.

// The convolution of schedule-chunk-prefetch.mlir (512 -> 128 channels on a
// 7 x 7 image: 9 register blocks of 5 pixels and a tail of 4, the reduction
// in chunks of 8 input-channel blocks outside the 9 blocks). The next
// chunk's weights (8 input-channel blocks x 16 lines, 128 units of 4 lines,
// one per jammed block) are dealt out over the 9 x 8 steps of the chunk's
// `cbi` loop: step `s = 8 * nth + cbi` prefetches units [2s, min(2s + 2,
// 128)), unit u being input-channel block `base + u / 16` (the next chunk,
// wrapped to the next output-channel step after the last one) and line `u %
// 16` of it, for each of the 4 jammed blocks (clamped to the last, 7), into
// L2 (locality 2). The accumulators stay in the `cbi` loop's body, after the
// prefetches; the tail block takes none.

// CHECK-LABEL: loop.func @pointwise_chunk_prefetch_spread
// CHECK:       loop.for %[[CO:.*]] = %c0 to %cko step %{{.*}} kind(parallel)
// CHECK:         loop.for %[[KO:.*]] = %c0 to %ccb step %{{.*}} {
// CHECK-NEXT:      loop.for %[[PX:.*]] = %c0 to %{{.*}} step %{{.*}} {
// CHECK:             %[[NEXT:.*]] = arith.addi %[[KO]], %{{.*}} : index
// CHECK-NEXT:        %[[WRAP:.*]] = arith.divui %[[NEXT]], %{{.*}} : index
// CHECK-NEXT:        %[[BACK:.*]] = arith.muli %[[WRAP]], %{{.*}} : index
// CHECK-NEXT:        %[[BASE:.*]] = arith.subi %[[NEXT]], %[[BACK]] : index
// CHECK-NEXT:        %[[AHEAD:.*]] = arith.muli %[[WRAP]], %{{.*}} : index
// CHECK-NEXT:        %[[STEP:.*]] = arith.addi %[[CO]], %[[AHEAD]] : index
// CHECK-NEXT:        %[[REL:.*]] = arith.subi %[[PX]], %{{.*}} : index
// CHECK-NEXT:        %[[NTH:.*]] = arith.divui %[[REL]], %{{.*}} : index
// CHECK-NEXT:        %[[STEPS:.*]] = arith.constant 8 : index
// CHECK-NEXT:        %[[SHARE:.*]] = arith.constant 2 : index
// CHECK-NEXT:        %[[UNITS:.*]] = arith.constant 128 : index
// CHECK-NEXT:        %[[FIRST:.*]] = arith.muli %[[NTH]], %[[STEPS]] : index
// CHECK:             loop.for %[[CBI:.*]] = %c0 to %cko step %c1 {
// CHECK-NEXT:          %[[ONE:.*]] = arith.constant 1 : index
// CHECK-NEXT:          %[[SLOT:.*]] = arith.addi %[[FIRST]], %[[CBI]] : index
// CHECK-NEXT:          %[[LO:.*]] = arith.muli %[[SLOT]], %[[SHARE]] : index
// CHECK-NEXT:          %[[UP:.*]] = arith.addi %[[LO]], %[[SHARE]] : index
// CHECK-NEXT:          %[[HI:.*]] = arith.minsi %[[UP]], %[[UNITS]] : index
// CHECK-NEXT:          loop.for %[[U:.*]] = %[[LO]] to %[[HI]] step %[[ONE]] {
// CHECK:                 %[[CI:.*]] = arith.divui %[[U]], %{{.*}} : index
// CHECK-NEXT:            %[[KQ:.*]] = arith.remui %[[U]], %{{.*}} : index
// CHECK-NEXT:            %[[K:.*]] = arith.muli %[[KQ]], %{{.*}} : index
// CHECK-NEXT:            %[[AT:.*]] = arith.addi %[[BASE]], %[[CI]] : index
// CHECK:                 %[[B0:.*]] = arith.addi %[[STEP]], %{{.*}} : index
// CHECK-NEXT:            %[[CL0:.*]] = arith.minsi %[[B0]], %{{.*}} : index
// CHECK-NEXT:            loop.prefetch %in1[%[[CL0]], %[[AT]], %{{.*}}, %{{.*}}, %[[K]], %{{.*}}] {locality = 2 : i32}
// CHECK-COUNT-3:         loop.prefetch %in1[%{{.*}}, %[[AT]], %{{.*}}, %{{.*}}, %[[K]], %{{.*}}] {locality = 2 : i32}
// CHECK-NEXT:          }
// CHECK-NEXT:          %[[KB:.*]] = arith.addi %[[KO]], %[[CBI]] : index
// CHECK-NEXT:          loop.for %{{.*}} = %c0 to %c16 step %c1 {
// CHECK-NEXT:            loop.for %{{.*}} = %c0 to %c16 step %c1 kind(vectorized) {
// CHECK-NOT:               loop.prefetch
// CHECK:         loop.for %{{.*}} = %c45 to %c49 step %c4 {
// CHECK-NOT:       loop.prefetch

// OFF-LABEL: loop.func @pointwise_chunk_prefetch_spread
// OFF-NOT:   loop.prefetch

builtin.module attributes {lamina.phase = #lamina.phase<lowering>, lamina.targets = {cpu = #lamina.target<"cpu", {isa = "sapphirerapids", l1d_bytes = 49152 : i64, l2_bytes = 2097152 : i64, l3_bytes = 314572800 : i64}>}} {
  loop.func @pointwise_chunk_prefetch_spread(%in0: memref<1x32x7x7x16xf32>, %in1: memref<8x32x1x1x16x16xf32>, %in2: memref<1x8x1x1x16xf32>, %out0: memref<1x8x7x7x16xf32>) {
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
