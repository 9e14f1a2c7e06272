// RUN: lamina-opt %s -p 'schedule-flatten-rows{conv_flatten_rows=14 cores=1}' | filecheck %s
// RUN: lamina-opt %s -p 'schedule-flatten-rows{conv_flatten_rows=0 cores=1}' | filecheck %s --check-prefix=OFF
// RUN: sed 's/attributes {lamina.phase/attributes {lamina.targets = {cpu = #lamina.target<"cpu", {isa = "avx2", cores = 1 : i64}>}, lamina.phase/' %s | lamina-opt -p schedule-flatten-rows | filecheck %s
// RUN: sed 's/attributes {lamina.phase/attributes {lamina.targets = {cpu = #lamina.target<"cpu", {vector_bits = 512 : i64, vector_registers = 32 : i64, cores = 1 : i64}>}, lamina.phase/' %s | lamina-opt -p schedule-flatten-rows | filecheck %s --check-prefix=OFF
// RUN: lamina-opt %s -p 'schedule-flatten-rows{conv_flatten_rows=14 cores=2}' | filecheck %s --check-prefix=OFF
// RUN: lamina-opt %s -p 'schedule-flatten-rows{conv_flatten_rows=14 cores=2 parallel_collapse_below=2}' | filecheck %s --check-prefix=ROWS
// RUN: lamina-opt %s -p 'schedule{vector_bits=256 vector_registers=16 cores=1}' | filecheck %s --check-prefix=SCHED
// RUN: lamina-opt %s -p 'schedule-flatten-rows{conv_flatten_rows=5 cores=1}' | filecheck %s --check-prefix=OFF
// RUN: not lamina-opt %s -p 'schedule-flatten-rows{conv_flatten_rows=-1}' 2>&1 | filecheck %s --check-prefix=BAD

// A pointwise (1x1) convolution in NCHW8c with bias, residual add and relu,
// as lower-te emits it, on a 4 x 6 image: with `conv_flatten_rows` at least
// its 6 columns (14, the default with 16 vector registers, AVX2; 0 with
// 32; 5 leaves it as it is) its rows and columns
// loops become one loop over the 24 pixels of a 1 x 24 image. Parameters
// indexed by row and column are read and written through `loop.reshape`
// (the same memory), the temporary is allocated flat; the weight and the
// bias, indexed by neither, are untouched. Under the whole `schedule`, the
// pixel row is what the register blocks tile (24 pixels x 2 jammed
// output-channel blocks: 4 blocks of 6 rows), each step computing both
// output-channel blocks into the output (written through: no temporary).
//
// On 2 cores the loop over output-channel steps (here one) shares its
// iterations with the rows it holds (`parallel_collapse_below`), so the flat
// image keeps the fewest rows that give it that many: none fewer than the 4
// it has at the default 32 (nothing changes), 2 rows of 12 at 2.

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @pointwise(%in0: memref<1x2x4x6x8xf32>, %in1: memref<2x2x1x1x8x8xf32>, %in2: memref<1x2x1x1x8xf32>, %in3: memref<1x2x4x6x8xf32>, %out0: memref<1x2x4x6x8xf32>) {
    %tmp = loop.alloc {scope = "local"} : memref<1x2x4x6x8xf32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c6 = arith.constant 6 : index
    %c8 = arith.constant 8 : index
    %init = arith.constant 0.000000e+00 : f32
    loop.for %i1 = %c0 to %c2 step %c1 {
      loop.for %i2 = %c0 to %c4 step %c1 {
        loop.for %i3 = %c0 to %c6 step %c1 {
          loop.for %i4 = %c0 to %c8 step %c1 kind(vectorized) {
            loop.store %init, %tmp[%c0, %i1, %i2, %i3, %i4] : memref<1x2x4x6x8xf32>
          }
          loop.for %k0 = %c0 to %c2 step %c1 {
            loop.for %k3 = %c0 to %c8 step %c1 {
              loop.for %i4_1 = %c0 to %c8 step %c1 kind(vectorized) {
                %0 = arith.addi %i2, %c0 : index
                %1 = arith.addi %i3, %c0 : index
                %2 = loop.load %in0[%c0, %k0, %0, %1, %k3] : memref<1x2x4x6x8xf32>
                %3 = loop.load %in1[%i1, %k0, %c0, %c0, %k3, %i4_1] : memref<2x2x1x1x8x8xf32>
                %4 = arith.mulf %2, %3 : f32
                %acc = loop.load %tmp[%c0, %i1, %i2, %i3, %i4_1] : memref<1x2x4x6x8xf32>
                %5 = arith.addf %acc, %4 : f32
                loop.store %5, %tmp[%c0, %i1, %i2, %i3, %i4_1] : memref<1x2x4x6x8xf32>
              }
            }
          }
        }
      }
    }
    loop.for %j1 = %c0 to %c2 step %c1 {
      loop.for %j2 = %c0 to %c4 step %c1 {
        loop.for %j3 = %c0 to %c6 step %c1 {
          loop.for %j4 = %c0 to %c8 step %c1 kind(vectorized) {
            %6 = loop.load %tmp[%c0, %j1, %j2, %j3, %j4] : memref<1x2x4x6x8xf32>
            %7 = loop.load %in2[%c0, %j1, %c0, %c0, %j4] : memref<1x2x1x1x8xf32>
            %8 = arith.addf %6, %7 : f32
            %9 = loop.load %in3[%c0, %j1, %j2, %j3, %j4] : memref<1x2x4x6x8xf32>
            %10 = arith.addf %8, %9 : f32
            %11 = arith.maximumf %10, %init : f32
            loop.store %11, %out0[%c0, %j1, %j2, %j3, %j4] : memref<1x2x4x6x8xf32>
          }
        }
      }
    }
    loop.free %tmp : memref<1x2x4x6x8xf32>
    loop.return
  }
  // CHECK-LABEL: loop.func @pointwise
  // CHECK:         %[[X:.*]] = loop.reshape %in0 : memref<1x2x4x6x8xf32> to memref<1x2x1x24x8xf32>
  // CHECK-NEXT:    %[[R:.*]] = loop.reshape %in3 : memref<1x2x4x6x8xf32> to memref<1x2x1x24x8xf32>
  // CHECK-NEXT:    %[[Y:.*]] = loop.reshape %out0 : memref<1x2x4x6x8xf32> to memref<1x2x1x24x8xf32>
  // CHECK-NEXT:    %[[T:.*]] = loop.alloc {scope = "local"} : memref<1x2x1x24x8xf32>
  // CHECK:         loop.for %i1 = %c0 to %c2 step %c1 {
  // CHECK-NEXT:      loop.for %i3 = %c0 to %[[P:c24]] step %c1 {
  // CHECK-NEXT:        loop.for %i4 = %c0 to %c8 step %c1 kind(vectorized) {
  // CHECK-NEXT:          loop.store %init, %[[T]][%c0, %i1, %c0, %i3, %i4] : memref<1x2x1x24x8xf32>
  // CHECK:               %[[A:.*]] = arith.addi %c0, %c0 : index
  // CHECK-NEXT:          %[[B:.*]] = arith.addi %i3, %c0 : index
  // CHECK-NEXT:          %{{.*}} = loop.load %[[X]][%c0, %k0, %[[A]], %[[B]], %k3] : memref<1x2x1x24x8xf32>
  // CHECK-NEXT:          %{{.*}} = loop.load %in1[%i1, %k0, %c0, %c0, %k3, %i4_1] : memref<2x2x1x1x8x8xf32>
  // CHECK:         loop.for %j1 = %c0 to %c2 step %c1 {
  // CHECK-NEXT:      loop.for %j3 = %c0 to %[[P]] step %c1 {
  // CHECK-NEXT:        loop.for %j4 = %c0 to %c8 step %c1 kind(vectorized) {
  // CHECK-NEXT:          %{{.*}} = loop.load %[[T]][%c0, %j1, %c0, %j3, %j4] : memref<1x2x1x24x8xf32>
  // CHECK-NEXT:          %{{.*}} = loop.load %in2[%c0, %j1, %c0, %c0, %j4] : memref<1x2x1x1x8xf32>
  // CHECK:               %{{.*}} = loop.load %[[R]][%c0, %j1, %c0, %j3, %j4] : memref<1x2x1x24x8xf32>
  // CHECK:               loop.store %{{.*}}, %[[Y]][%c0, %j1, %c0, %j3, %j4] : memref<1x2x1x24x8xf32>
  // CHECK:         loop.free %[[T]] : memref<1x2x1x24x8xf32>

  // OFF-LABEL: loop.func @pointwise
  // OFF-NOT:     loop.reshape
  // OFF:         loop.for %i2 = %c0 to %c4 step %c1 {
  // OFF-NEXT:      loop.for %i3 = %c0 to %c6 step %c1 {

  // ROWS-LABEL: loop.func @pointwise
  // ROWS:         %[[X:.*]] = loop.reshape %in0 : memref<1x2x4x6x8xf32> to memref<1x2x2x12x8xf32>
  // ROWS:         %[[T:.*]] = loop.alloc {scope = "local"} : memref<1x2x2x12x8xf32>
  // ROWS:         loop.for %i1 = %c0 to %c2 step %c1 {
  // ROWS-NEXT:      loop.for %i2 = %c0 to %c2 step %c1 {
  // ROWS-NEXT:        loop.for %i3 = %c0 to %c12 step %c1 {
  // ROWS-NEXT:          loop.for %i4 = %c0 to %c8 step %c1 kind(vectorized) {
  // ROWS-NEXT:            loop.store %init, %[[T]][%c0, %i1, %i2, %i3, %i4] : memref<1x2x2x12x8xf32>
  // ROWS:                 %{{.*}} = loop.load %[[X]][%c0, %k0, %{{.*}}, %{{.*}}, %k3] : memref<1x2x2x12x8xf32>

  // SCHED-LABEL: loop.func @pointwise
  // SCHED:         %[[Y:.*]] = loop.reshape %out0 : memref<1x2x4x6x8xf32> to memref<1x2x1x24x8xf32>
  // SCHED-NOT:     loop.alloc
  // SCHED:         loop.for %i1o = %c0 to %c2 step %c2 {
  // SCHED-NEXT:      %i1 = arith.addi %i1o, %c0 : index
  // SCHED-NEXT:      %i1_1 = arith.addi %i1o, %c1 : index
  // SCHED-NEXT:      loop.for %i3o = %c0 to %c24 step %c6 {
  // SCHED-COUNT-6:     %i3{{.*}} = arith.addi %i3o, %c{{[0-5]}} : index
  // SCHED-NEXT:        loop.for %i4 = %c0 to %c8 step %c1 kind(vectorized) {
  // SCHED-NEXT:          loop.store %init, %[[Y]][%c0, %i1, %c0, %i3, %i4] : memref<1x2x1x24x8xf32>
  // SCHED-NEXT:          loop.store %init, %[[Y]][%c0, %i1_1, %c0, %i3, %i4] : memref<1x2x1x24x8xf32>
  // SCHED-NOT:     loop.for %{{.*}} = %c0 to %c4 step
  // SCHED-NOT:     loop.alloc
  // SCHED:         loop.return

  // A 1x1 convolution of stride 2 reads its input at 2*oh, 2*ow: the input
  // is no image of the output's pixels, so nothing is flattened (a function
  // is flattened whole or not at all).
  loop.func @strided(%in0: memref<1x2x6x10x8xf32>, %in1: memref<2x2x1x1x8x8xf32>, %out0: memref<1x2x3x5x8xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c5 = arith.constant 5 : index
    %c8 = arith.constant 8 : index
    loop.for %i1 = %c0 to %c2 step %c1 {
      loop.for %i2 = %c0 to %c3 step %c1 {
        loop.for %i3 = %c0 to %c5 step %c1 {
          loop.for %k0 = %c0 to %c2 step %c1 {
            loop.for %k3 = %c0 to %c8 step %c1 {
              loop.for %i4 = %c0 to %c8 step %c1 kind(vectorized) {
                %0 = arith.muli %i2, %c2 : index
                %1 = arith.muli %i3, %c2 : index
                %2 = loop.load %in0[%c0, %k0, %0, %1, %k3] : memref<1x2x6x10x8xf32>
                %3 = loop.load %in1[%i1, %k0, %c0, %c0, %k3, %i4] : memref<2x2x1x1x8x8xf32>
                %4 = arith.mulf %2, %3 : f32
                %acc = loop.load %out0[%c0, %i1, %i2, %i3, %i4] : memref<1x2x3x5x8xf32>
                %5 = arith.addf %acc, %4 : f32
                loop.store %5, %out0[%c0, %i1, %i2, %i3, %i4] : memref<1x2x3x5x8xf32>
              }
            }
          }
        }
      }
    }
    loop.return
  }
  // CHECK-LABEL: loop.func @strided
  // CHECK-NOT:     loop.reshape
  // CHECK:         loop.for %i2 = %c0 to %c3 step %c1 {
  // CHECK-NEXT:      loop.for %i3 = %c0 to %c5 step %c1 {

  // An elementwise kernel (no reduction) is left as it is, as is a
  // convolution whose output records padded channels in its constraint
  // (simplify reads it on the parameter itself).
  loop.func @elementwise(%in0: memref<1x2x3x5x8xf32>, %out0: memref<1x2x3x5x8xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c5 = arith.constant 5 : index
    %c8 = arith.constant 8 : index
    %zero = arith.constant 0.000000e+00 : f32
    loop.for %i1 = %c0 to %c2 step %c1 {
      loop.for %i2 = %c0 to %c3 step %c1 {
        loop.for %i3 = %c0 to %c5 step %c1 {
          loop.for %i4 = %c0 to %c8 step %c1 kind(vectorized) {
            %0 = loop.load %in0[%c0, %i1, %i2, %i3, %i4] : memref<1x2x3x5x8xf32>
            %1 = arith.maximumf %0, %zero : f32
            loop.store %1, %out0[%c0, %i1, %i2, %i3, %i4] : memref<1x2x3x5x8xf32>
          }
        }
      }
    }
    loop.return
  }
  // CHECK-LABEL: loop.func @elementwise
  // CHECK-NOT:     loop.reshape
  // CHECK:         loop.for %i2 = %c0 to %c3 step %c1 {

  loop.func @padded(%in0: memref<1x2x3x5x8xf32>, %in1: memref<2x2x1x1x8x8xf32>, %out0: memref<1x2x3x5x8xf32> {lamina.constraint = #lamina.constraint<affine_map<(d0, d1, d2, d3) -> (d0, (d1 floordiv 8), d2, d3, (d1 mod 8))>, 0.000000e+00 : f32, logical = array<i64: 1, 12, 3, 5>>}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c5 = arith.constant 5 : index
    %c8 = arith.constant 8 : index
    loop.for %i1 = %c0 to %c2 step %c1 {
      loop.for %i2 = %c0 to %c3 step %c1 {
        loop.for %i3 = %c0 to %c5 step %c1 {
          loop.for %k0 = %c0 to %c2 step %c1 {
            loop.for %k3 = %c0 to %c8 step %c1 {
              loop.for %i4 = %c0 to %c8 step %c1 kind(vectorized) {
                %2 = loop.load %in0[%c0, %k0, %i2, %i3, %k3] : memref<1x2x3x5x8xf32>
                %3 = loop.load %in1[%i1, %k0, %c0, %c0, %k3, %i4] : memref<2x2x1x1x8x8xf32>
                %4 = arith.mulf %2, %3 : f32
                %acc = loop.load %out0[%c0, %i1, %i2, %i3, %i4] : memref<1x2x3x5x8xf32>
                %5 = arith.addf %acc, %4 : f32
                loop.store %5, %out0[%c0, %i1, %i2, %i3, %i4] : memref<1x2x3x5x8xf32>
              }
            }
          }
        }
      }
    }
    loop.return
  }
  // CHECK-LABEL: loop.func @padded
  // CHECK-NOT:     loop.reshape
  // CHECK:         loop.for %i2 = %c0 to %c3 step %c1 {
}

// BAD: schedule-flatten-rows: conv_flatten_rows must be >= 0, got -1
