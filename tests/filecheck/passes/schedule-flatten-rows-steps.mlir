// RUN: lamina-opt %s -p 'schedule-flatten-rows{conv_flatten_rows=14 cores=2}' | filecheck %s
// RUN: lamina-opt %s -p 'schedule-flatten-rows{conv_flatten_rows=14 cores=2 conv_flatten_min_steps_per_core=0}' | filecheck %s --check-prefix=OFF
// RUN: lamina-opt %s -p 'schedule-flatten-rows{conv_flatten_rows=14 cores=2 conv_flatten_min_steps_per_core=5}' | filecheck %s --check-prefix=OFF
// RUN: lamina-opt %s -p 'schedule{vector_bits=256 vector_registers=16 cores=2}' | filecheck %s --check-prefix=SCHED

// A pointwise convolution on a 7x7 image with 16 output-channel blocks
// (MobileNetV3's 960->160 at 7x7 has 20): jammed by 2, 8 steps. On 2 cores
// the steps are fewer than `parallel_collapse_below` (32), and no row split
// of the 49 pixels (1 or 7 rows) gives the threads more steps x rows without
// keeping the 7 rows. The steps alone give each core 4
// (`conv_flatten_min_steps_per_core`), so the image is one row of 49 pixels
// all the same; at 0 (or 5 per core: 10 steps needed) it keeps its rows.
// Under the whole `schedule` the register blocks tile the pixel row (9
// blocks of 5 pixels x 2 output-channel blocks, and a block of 4)
// and the loop over the steps is the parallel one.

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @seven(%in0: memref<1x1x7x7x8xf32>, %in1: memref<16x1x1x1x8x8xf32>, %in2: memref<1x16x1x1x8xf32>, %out0: memref<1x16x7x7x8xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c7 = arith.constant 7 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %init = arith.constant 0.000000e+00 : f32
    %tmp = loop.alloc {scope = "local"} : memref<1x16x7x7x8xf32>
    loop.for %i1 = %c0 to %c16 step %c1 {
      loop.for %i2 = %c0 to %c7 step %c1 {
        loop.for %i3 = %c0 to %c7 step %c1 {
          loop.for %i4 = %c0 to %c8 step %c1 kind(vectorized) {
            loop.store %init, %tmp[%c0, %i1, %i2, %i3, %i4] : memref<1x16x7x7x8xf32>
          }
          loop.for %k0 = %c0 to %c1 step %c1 {
            loop.for %k3 = %c0 to %c8 step %c1 {
              loop.for %i4_1 = %c0 to %c8 step %c1 kind(vectorized) {
                %0 = arith.addi %i2, %c0 : index
                %1 = arith.addi %i3, %c0 : index
                %2 = loop.load %in0[%c0, %k0, %0, %1, %k3] : memref<1x1x7x7x8xf32>
                %3 = loop.load %in1[%i1, %k0, %c0, %c0, %k3, %i4_1] : memref<16x1x1x1x8x8xf32>
                %4 = arith.mulf %2, %3 : f32
                %acc = loop.load %tmp[%c0, %i1, %i2, %i3, %i4_1] : memref<1x16x7x7x8xf32>
                %5 = arith.addf %acc, %4 : f32
                loop.store %5, %tmp[%c0, %i1, %i2, %i3, %i4_1] : memref<1x16x7x7x8xf32>
              }
            }
          }
        }
      }
    }
    loop.for %j1 = %c0 to %c16 step %c1 {
      loop.for %j2 = %c0 to %c7 step %c1 {
        loop.for %j3 = %c0 to %c7 step %c1 {
          loop.for %j4 = %c0 to %c8 step %c1 kind(vectorized) {
            %6 = loop.load %tmp[%c0, %j1, %j2, %j3, %j4] : memref<1x16x7x7x8xf32>
            %7 = loop.load %in2[%c0, %j1, %c0, %c0, %j4] : memref<1x16x1x1x8xf32>
            %8 = arith.addf %6, %7 : f32
            loop.store %8, %out0[%c0, %j1, %j2, %j3, %j4] : memref<1x16x7x7x8xf32>
          }
        }
      }
    }
    loop.free %tmp : memref<1x16x7x7x8xf32>
    loop.return
  }
  // CHECK-LABEL: loop.func @seven
  // CHECK:         %[[X:.*]] = loop.reshape %in0 : memref<1x1x7x7x8xf32> to memref<1x1x1x49x8xf32>
  // CHECK-NEXT:    %[[Y:.*]] = loop.reshape %out0 : memref<1x16x7x7x8xf32> to memref<1x16x1x49x8xf32>
  // CHECK:         %[[T:.*]] = loop.alloc {scope = "local"} : memref<1x16x1x49x8xf32>
  // CHECK:         loop.for %i1 = %c0 to %c16 step %c1 {
  // CHECK-NEXT:      loop.for %i3 = %c0 to %c49 step %c1 {

  // OFF-LABEL: loop.func @seven
  // OFF-NOT:     loop.reshape
  // OFF:         loop.for %i2 = %c0 to %c7 step %c1 {
  // OFF-NEXT:      loop.for %i3 = %c0 to %c7 step %c1 {

  // SCHED-LABEL: loop.func @seven
  // SCHED:         %[[Y:.*]] = loop.reshape %out0 : memref<1x16x7x7x8xf32> to memref<1x16x1x49x8xf32>
  // SCHED-NOT:     loop.alloc
  // SCHED:         loop.for %i1o = %c0 to %c16 step %c2 kind(parallel) {
  // SCHED-NEXT:      %i1 = arith.addi %i1o, %c0 : index
  // SCHED-NEXT:      %i1_1 = arith.addi %i1o, %c1 : index
  // SCHED-NEXT:      loop.for %i3o = %c0 to %c45 step %c5 {
  // SCHED-COUNT-5:     %i3{{.*}} = arith.addi %i3o, %c{{[0-4]}} : index
  // SCHED-NEXT:        loop.for %i4 = %c0 to %c8 step %c1 kind(vectorized) {
  // SCHED-NEXT:          loop.store %init, %[[Y]][%c0, %i1, %c0, %i3, %i4] : memref<1x16x1x49x8xf32>
  // SCHED-NEXT:          loop.store %init, %[[Y]][%c0, %i1_1, %c0, %i3, %i4] : memref<1x16x1x49x8xf32>
  // SCHED:           loop.for %i3o_1 = %c45 to %c49 step %c4 {
  // SCHED:         loop.return
}
