// RUN: lamina-opt %s --split-input-file -p 'schedule-parallel{cores=2}' | filecheck %s
// RUN: lamina-opt %s --split-input-file -p 'schedule-parallel{cores=1}' | filecheck %s --check-prefix=ONE
// RUN: lamina-opt %s --split-input-file -p 'schedule-parallel{cores=2 parallel_min_iterations_per_core=5}' | filecheck %s --check-prefix=ONE
// RUN: lamina-opt %s --split-input-file -p 'schedule{cores=2}' | filecheck %s
// RUN: lamina-opt %s --split-input-file -p 'schedule-parallel{cores=1}' | filecheck %s --check-prefix=SERIAL

// A parallel loop of one iteration (a blocked convolution with a single
// output-channel block) hands `parallel` to the loop it holds when that loop
// is spatial (each iteration writes its own row), so two cores share the
// work; a loop that accumulates into one element is not spatial and keeps
// running on one thread. So does a loop of one iteration that holds index
// arithmetic beside its loop (@jammed_blocks: two channel blocks jammed into
// one step). With one core, or fewer iterations per core than
// the `parallel_min_iterations_per_core` knob asks (8 rows, 2 cores, 5 per
// core), nothing moves. `schedule` runs this rule too.

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @one_block(%x: memref<1x8x4xf32>, %y: memref<1x8x4xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    loop.for %b = %c0 to %c1 step %c1 kind(parallel) {
      loop.for %h = %c0 to %c8 step %c1 {
        loop.for %w = %c0 to %c4 step %c1 kind(vectorized) {
          %v = loop.load %x[%b, %h, %w] : memref<1x8x4xf32>
          %d = arith.addf %v, %v : f32
          loop.store %d, %y[%b, %h, %w] : memref<1x8x4xf32>
        }
      }
    }
    loop.return
  }

  loop.func @accumulate(%x: memref<8xf32>, %y: memref<1xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    loop.for %b = %c0 to %c1 step %c1 kind(parallel) {
      loop.for %k = %c0 to %c8 step %c1 {
        %v = loop.load %x[%k] : memref<8xf32>
        %a = loop.load %y[%b] : memref<1xf32>
        %s = arith.addf %a, %v : f32
        loop.store %s, %y[%b] : memref<1xf32>
      }
    }
    loop.return
  }

  // Two output-channel blocks jammed into one micro-kernel step: the loop
  // of one iteration holds the copies' block indices beside the row loop.
  loop.func @jammed_blocks(%x: memref<2x8x4xf32>, %y: memref<2x8x4xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    loop.for %bo = %c0 to %c2 step %c2 kind(parallel) {
      %b0 = arith.addi %bo, %c0 : index
      %b1 = arith.addi %bo, %c1 : index
      loop.for %h = %c0 to %c8 step %c1 {
        loop.for %w = %c0 to %c4 step %c1 kind(vectorized) {
          %v = loop.load %x[%b0, %h, %w] : memref<2x8x4xf32>
          %u = loop.load %x[%b1, %h, %w] : memref<2x8x4xf32>
          loop.store %v, %y[%b0, %h, %w] : memref<2x8x4xf32>
          loop.store %u, %y[%b1, %h, %w] : memref<2x8x4xf32>
        }
      }
    }
    loop.return
  }
}

// CHECK-LABEL: loop.func @one_block(
// CHECK:         loop.for %b = %c0 to %c1 step %c1 {
// CHECK-NEXT:      loop.for %h = %c0 to %c8 step %c1 kind(parallel) {

// CHECK-LABEL: loop.func @accumulate(
// CHECK:         loop.for %b = %c0 to %c1 step %c1 kind(parallel) {
// CHECK-NEXT:      loop.for %k = %c0 to %c8 step %c1 {

// CHECK-LABEL: loop.func @jammed_blocks(
// CHECK:         loop.for %bo = %c0 to %c2 step %c2 {
// CHECK:           loop.for %h = %c0 to %c8 step %c1 kind(parallel) {

// ONE-LABEL: loop.func @one_block(
// ONE:         loop.for %b = %c0 to %c1 step %c1 kind(parallel) {
// ONE-NEXT:      loop.for %h = %c0 to %c8 step %c1 {

// ONE-LABEL: loop.func @jammed_blocks(
// ONE:         loop.for %bo = %c0 to %c2 step %c2 kind(parallel) {
// ONE:           loop.for %h = %c0 to %c8 step %c1 {

// -----

// A parallel loop of fewer than `parallel_collapse_below` (32) iterations --
// a convolution's 6 output-channel blocks -- marks the spatial loop it holds
// (the rows) parallel too, and lower-to-llvm collapses the two: the threads
// share 6 x 28 iterations. Not when that loop is not spatial (@scratch: every
// row of a block writes the same scratch element), nor when the kernel's
// `parallel_collapse_below` knob is at most the trip count (@kept), nor with
// one core.

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @blocks(%x: memref<6x28x16xf32>, %y: memref<6x28x16xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c6 = arith.constant 6 : index
    %c16 = arith.constant 16 : index
    %c28 = arith.constant 28 : index
    loop.for %b = %c0 to %c6 step %c1 kind(parallel) {
      loop.for %h = %c0 to %c28 step %c1 {
        loop.for %w = %c0 to %c16 step %c1 kind(vectorized) {
          %v = loop.load %x[%b, %h, %w] : memref<6x28x16xf32>
          loop.store %v, %y[%b, %h, %w] : memref<6x28x16xf32>
        }
      }
    }
    loop.return
  }

  loop.func @scratch(%x: memref<6x28xf32>, %t: memref<6xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c6 = arith.constant 6 : index
    %c28 = arith.constant 28 : index
    loop.for %b = %c0 to %c6 step %c1 kind(parallel) {
      loop.for %h = %c0 to %c28 step %c1 {
        %v = loop.load %x[%b, %h] : memref<6x28xf32>
        loop.store %v, %t[%b] : memref<6xf32>
      }
    }
    loop.return
  }

  loop.func @kept(%x: memref<6x28x16xf32>, %y: memref<6x28x16xf32>) attributes {lamina.knobs = {parallel_collapse_below = 6 : i64}} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c6 = arith.constant 6 : index
    %c16 = arith.constant 16 : index
    %c28 = arith.constant 28 : index
    loop.for %b = %c0 to %c6 step %c1 kind(parallel) {
      loop.for %h = %c0 to %c28 step %c1 {
        loop.for %w = %c0 to %c16 step %c1 kind(vectorized) {
          %v = loop.load %x[%b, %h, %w] : memref<6x28x16xf32>
          loop.store %v, %y[%b, %h, %w] : memref<6x28x16xf32>
        }
      }
    }
    loop.return
  }
}

// CHECK-LABEL: loop.func @blocks(
// CHECK:         loop.for %b = %c0 to %c6 step %c1 kind(parallel) {
// CHECK-NEXT:      loop.for %h = %c0 to %c28 step %c1 kind(parallel) {
// CHECK-LABEL: loop.func @scratch(
// CHECK:         loop.for %b = %c0 to %c6 step %c1 kind(parallel) {
// CHECK-NEXT:      loop.for %h = %c0 to %c28 step %c1 {
// CHECK-LABEL: loop.func @kept(
// CHECK:         loop.for %b = %c0 to %c6 step %c1 kind(parallel) {
// CHECK-NEXT:      loop.for %h = %c0 to %c28 step %c1 {

// -----

// A batch-1 classifier (1280 -> 1000) whose constant matrix is stored in
// panels of 250 columns (kernels/linalg.py): the only spatial loop is the
// vectorized one, so the threads share its columns -- split by the panel
// width, the 4 blocks become a parallel loop around the reduction over k,
// each streaming one panel. Not a row-major matrix (@row_major: a block would
// read a quarter of every row). With one core the split follows the panels
// all the same (it turns `j / 250` into a loop variable), serially.

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @gemv(%x: memref<1x1280xf32>, %p: memref<4x1280x250xf32>, %y: memref<1x1000xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c250 = arith.constant 250 : index
    %c1000 = arith.constant 1000 : index
    %c1280 = arith.constant 1280 : index
    loop.for %k = %c0 to %c1280 step %c1 {
      loop.for %j = %c0 to %c1000 step %c1 kind(vectorized) {
        %a = loop.load %x[%c0, %k] : memref<1x1280xf32>
        %jb = arith.divui %j, %c250 : index
        %jr = arith.remui %j, %c250 : index
        %w = loop.load %p[%jb, %k, %jr] : memref<4x1280x250xf32>
        %m = arith.mulf %a, %w : f32
        %acc = loop.load %y[%c0, %j] : memref<1x1000xf32>
        %s = arith.addf %acc, %m : f32
        loop.store %s, %y[%c0, %j] : memref<1x1000xf32>
      }
    }
    loop.return
  }

  loop.func @row_major(%x: memref<1x1280xf32>, %w: memref<1280x1000xf32>, %y: memref<1x1000xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c1000 = arith.constant 1000 : index
    %c1280 = arith.constant 1280 : index
    loop.for %k = %c0 to %c1280 step %c1 {
      loop.for %j = %c0 to %c1000 step %c1 kind(vectorized) {
        %a = loop.load %x[%c0, %k] : memref<1x1280xf32>
        %b = loop.load %w[%k, %j] : memref<1280x1000xf32>
        %m = arith.mulf %a, %b : f32
        %acc = loop.load %y[%c0, %j] : memref<1x1000xf32>
        %s = arith.addf %acc, %m : f32
        loop.store %s, %y[%c0, %j] : memref<1x1000xf32>
      }
    }
    loop.return
  }

}

// CHECK-LABEL: loop.func @gemv(
// CHECK:         loop.for %cols = %c0 to %c1000 step %c250 kind(parallel) {
// CHECK-NEXT:      loop.for %k = %c0 to %c1280 step %c1 {
// CHECK-NEXT:        loop.for %ji = %c0 to %c250 step %c1 kind(vectorized) {
// CHECK-NEXT:          %j = arith.addi %cols, %ji : index
// CHECK:               %jr = arith.remui %j, %c250 : index
// CHECK-NEXT:          %w = loop.load %p[%jb, %k, %jr] : memref<4x1280x250xf32>
// CHECK-LABEL: loop.func @row_major(
// CHECK-NOT:     kind(parallel)

// SERIAL-LABEL: loop.func @gemv(
// SERIAL:         loop.for %cols = %c0 to %c1000 step %c250 {
// SERIAL-NEXT:      loop.for %k = %c0 to %c1280 step %c1 {
// SERIAL-NEXT:        loop.for %ji = %c0 to %c250 step %c1 kind(vectorized) {
