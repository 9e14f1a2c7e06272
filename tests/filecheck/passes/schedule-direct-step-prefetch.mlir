// RUN: lamina-opt %s -p 'schedule{vector_bits=512 vector_registers=32 cores=1 conv_direct_jam_max=4 conv_direct_row_jam=2 conv_direct_prefetch=2}' | filecheck %s
// RUN: lamina-opt %s -p 'schedule{vector_bits=512 vector_registers=32 cores=1 conv_direct_jam_max=4 conv_direct_row_jam=2 conv_direct_prefetch=0}' | filecheck %s --check-prefix=OFF

// `conv_direct_prefetch` (a locality; derived 2 on two 512-bit FMA pipes): the row-jammed direct
// 3x3 (2 output-channel blocks x 7 columns x 2 rows, the seventh row a pass
// of its own) prefetches the next output-channel step's weights (blocks
// co + 2 and co + 3, clamped to the last) over every reduction step of every
// row pass: 2 input blocks x 3 x 3 taps x 16 lines = 288 lines per block,
// dealt out 4 per step over the 3 x 18 steps of the jammed rows and the 18
// of the tail row (numbered from 54), ahead of the step's lane loop (`k3`).
// At 0 there is no prefetch.

// CHECK-LABEL: loop.func @strided_3x3
// CHECK:       loop.for %i1o = %c0 to %c4 step %c2 kind(parallel) {
// CHECK:         loop.for %i2o = %c0 to %c6 step %c2 {
// CHECK:           loop.for %k2 = %c0 to %c3 step %c1 {
// CHECK:             %[[PER:.+]] = arith.constant 4 : index
// CHECK:             %[[UNITS:.+]] = arith.constant 288 : index
// CHECK:             %[[LO:.+]] = arith.muli %{{.+}}, %[[PER]] : index
// CHECK:             %[[UP:.+]] = arith.addi %[[LO]], %[[PER]] : index
// CHECK:             %[[HI:.+]] = arith.minsi %[[UP]], %[[UNITS]] : index
// CHECK:             loop.for %{{.+}} = %[[LO]] to %[[HI]] step %{{.+}} {
// CHECK:               %[[LAST:.+]] = arith.constant 3 : index
// CHECK:               %[[A:.+]] = arith.constant 2 : index
// CHECK-NEXT:          %[[B:.+]] = arith.addi %i1o, %[[A]] : index
// CHECK-NEXT:          %[[C:.+]] = arith.minsi %[[B]], %[[LAST]] : index
// CHECK-NEXT:          loop.prefetch %in1[%[[C]], {{.+}}] {locality = 2 : i32}
// CHECK:               arith.addi %i1o, %{{.+}} : index
// CHECK:               loop.prefetch %in1[{{.+}}] {locality = 2 : i32}
// CHECK-NOT:           loop.prefetch
// CHECK:             loop.for %k3 = %c0 to %c16 step %c1 {
// CHECK-COUNT-28:        arith.mulf
// CHECK:         loop.for %i2_{{[0-9]+}} = %c6 to %c7 step %c1 {
// CHECK:           loop.for %k2_{{[0-9]+}} = %c0 to %c3 step %c1 {
// CHECK:             arith.constant 54 : index
// CHECK:             loop.prefetch %in1
// CHECK:             loop.prefetch %in1
// CHECK-NOT:         loop.prefetch
// CHECK:             loop.for %k3_{{[0-9]+}} = %c0 to %c16 step %c1 {
// CHECK-COUNT-14:        arith.mulf

// OFF-LABEL: loop.func @strided_3x3
// OFF-NOT:   loop.prefetch

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @strided_3x3(%in0: memref<1x2x15x15x16xf32>, %in1: memref<4x2x3x3x16x16xf32>, %out0: memref<1x4x7x7x16xf32>) {
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c7 = arith.constant 7 : index
    %init = arith.constant 0.000000e+00 : f32
    %c16 = arith.constant 16 : index
    loop.for %i1 = %c0 to %c4 step %c1 kind(parallel) {
      loop.for %i2 = %c0 to %c7 step %c1 {
        loop.for %i3 = %c0 to %c7 step %c1 {
          loop.for %i4 = %c0 to %c16 step %c1 kind(vectorized) {
            loop.store %init, %out0[%c0, %i1, %i2, %i3, %i4] : memref<1x4x7x7x16xf32>
          }
          loop.for %k0 = %c0 to %c2 step %c1 {
            loop.for %k1 = %c0 to %c3 step %c1 {
              loop.for %k2 = %c0 to %c3 step %c1 {
                loop.for %k3 = %c0 to %c16 step %c1 {
                  loop.for %i4_1 = %c0 to %c16 step %c1 kind(vectorized) {
                    %r = arith.muli %i2, %c2 : index
                    %h = arith.addi %r, %k1 : index
                    %s = arith.muli %i3, %c2 : index
                    %w = arith.addi %s, %k2 : index
                    %1 = loop.load %in0[%c0, %k0, %h, %w, %k3] : memref<1x2x15x15x16xf32>
                    %2 = loop.load %in1[%i1, %k0, %k1, %k2, %k3, %i4_1] : memref<4x2x3x3x16x16xf32>
                    %3 = arith.mulf %1, %2 : f32
                    %acc = loop.load %out0[%c0, %i1, %i2, %i3, %i4_1] : memref<1x4x7x7x16xf32>
                    %4 = arith.addf %acc, %3 : f32
                    loop.store %4, %out0[%c0, %i1, %i2, %i3, %i4_1] : memref<1x4x7x7x16xf32>
                  }
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
