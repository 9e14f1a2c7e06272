// RUN: lamina-opt %s -p lower-te | filecheck %s
// RUN: lamina-opt %s -p lower-te | lamina-opt -p verify-phase | filecheck %s --check-prefix=PHASE

// lower-te: each te.func @f becomes a destination-passing loop.func @f_loop
// (input buffers, then one output buffer per result); each te.compute a loop
// nest; graph.call_te @f becomes graph.call_loop @f_loop.

// PHASE: lamina.phase = #lamina.phase<lowering>
// PHASE-NOT: te.
// CHECK: builtin.module attributes {lamina.phase = #lamina.phase<lowering>}
// CHECK-NOT: te.func

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {

  // The graph level keeps tensors; only the callee changes (device is kept).
  // CHECK-LABEL: graph.func @main(
  // CHECK-NEXT:    %[[R:.*]] = graph.call_loop @add_loop(%a, %b) {device = #lamina.device<"cpu", 0>} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT:    graph.return %[[R]] : tensor<2x3xf32>
  graph.func @main(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> attributes {force_pure} {
    %r = graph.call_te @add(%a, %b) {device = #lamina.device<"cpu", 0>} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    graph.return %r : tensor<2x3xf32>
  }

  // Elementwise: a row-major nest, innermost vectorized, stored straight into
  // the output buffer. Too small to be worth a thread team: serial.
  // CHECK-LABEL: loop.func @add_loop(
  // CHECK-SAME:    %[[A:.*]]: memref<2x3xf32>, %[[B:.*]]: memref<2x3xf32>, %[[OUT:.*]]: memref<2x3xf32>) {
  // CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
  // CHECK-DAG:     %[[C1:.*]] = arith.constant 1 : index
  // CHECK-DAG:     %[[C2:.*]] = arith.constant 2 : index
  // CHECK-DAG:     %[[C3:.*]] = arith.constant 3 : index
  // CHECK:         loop.for %[[I:.*]] = %[[C0]] to %[[C2]] step %[[C1]] {
  // CHECK-NEXT:      loop.for %[[J:.*]] = %[[C0]] to %[[C3]] step %[[C1]] kind(vectorized) {
  // CHECK-NEXT:        %[[X:.*]] = loop.load %[[A]][%[[I]], %[[J]]] : memref<2x3xf32>
  // CHECK-NEXT:        %[[Y:.*]] = loop.load %[[B]][%[[I]], %[[J]]] : memref<2x3xf32>
  // CHECK-NEXT:        %[[S:.*]] = arith.addf %[[X]], %[[Y]] : f32
  // CHECK-NEXT:        loop.store %[[S]], %[[OUT]][%[[I]], %[[J]]] : memref<2x3xf32>
  // CHECK-NEXT:      }
  // CHECK-NEXT:    }
  // CHECK-NEXT:    loop.return
  te.func @add(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
    %c = te.compute [2, 3] (%i, %j) {
      %x = te.read %a[%i, %j] : tensor<2x3xf32>
      %y = te.read %b[%i, %j] : tensor<2x3xf32>
      %s = arith.addf %x, %y : f32
      te.yield %s : f32
    } : tensor<2x3xf32>
    te.return %c : tensor<2x3xf32>
  }

  // A reduction: an inner loop accumulating in iter_args from the combiner's
  // identity (max on i32: the smallest i32), then one store.
  // CHECK-LABEL: loop.func @row_max_loop(
  // CHECK-SAME:    %[[A:.*]]: memref<4x8xi32>, %[[OUT:.*]]: memref<4xi32>) {
  // CHECK-DAG:     %[[INIT:.*]] = arith.constant -2147483648 : i32
  // CHECK-DAG:     %[[C8:.*]] = arith.constant 8 : index
  // CHECK:         loop.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
  // CHECK-NEXT:      %[[M:.*]] = loop.for %[[K:.*]] = %{{.*}} to %[[C8]] step %{{.*}} iter_args(%[[ACC:.*]] = %[[INIT]]) -> (i32) {
  // CHECK-NEXT:        %[[X:.*]] = loop.load %[[A]][%[[I]], %[[K]]] : memref<4x8xi32>
  // CHECK-NEXT:        %[[N:.*]] = arith.maxsi %[[ACC]], %[[X]] : i32
  // CHECK-NEXT:        loop.yield %[[N]] : i32
  // CHECK-NEXT:      }
  // CHECK-NEXT:      loop.store %[[M]], %[[OUT]][%[[I]]] : memref<4xi32>
  te.func @row_max(%a: tensor<4x8xi32>) -> tensor<4xi32> {
    %m = te.compute [4] reduce [8] combiner(max) (%i, %k) {
      %x = te.read %a[%i, %k] : tensor<4x8xi32>
      te.yield %x : i32
    } : tensor<4xi32>
    te.return %m : tensor<4xi32>
  }

  // A 0-d result of a 2-d reduction with an explicit init: no spatial loop,
  // two nested reduction loops threading the accumulator. A float sum or
  // product in a register may be regrouped (fastmath<reassoc>), so that LLVM
  // can vectorize it into partial sums; max/min need no flag.
  // CHECK-LABEL: loop.func @total_loop(
  // CHECK-SAME:    %[[A:.*]]: memref<4x8xf32>, %[[OUT:.*]]: memref<f32>) {
  // CHECK-DAG:     %[[INIT:.*]] = arith.constant 1.000000e+00 : f32
  // CHECK:         %[[R:.*]] = loop.for %[[K0:.*]] = {{.*}} iter_args(%[[ACC0:.*]] = %[[INIT]]) -> (f32) {
  // CHECK-NEXT:      %[[R1:.*]] = loop.for %[[K1:.*]] = {{.*}} iter_args(%[[ACC1:.*]] = %[[ACC0]]) -> (f32) {
  // CHECK-NEXT:        %[[X:.*]] = loop.load %[[A]][%[[K0]], %[[K1]]] : memref<4x8xf32>
  // CHECK-NEXT:        %[[N:.*]] = arith.addf %[[ACC1]], %[[X]] fastmath<reassoc> : f32
  // CHECK-NEXT:        loop.yield %[[N]] : f32
  // CHECK-NEXT:      }
  // CHECK-NEXT:      loop.yield %[[R1]] : f32
  // CHECK-NEXT:    }
  // CHECK-NEXT:    loop.store %[[R]], %[[OUT]][] : memref<f32>
  // CHECK-NEXT:    loop.return
  te.func @total(%a: tensor<4x8xf32>) -> tensor<f32> {
    %s = te.compute [] reduce [4, 8] combiner(sum) init(1.0 : f32) (%k0, %k1) {
      %x = te.read %a[%k0, %k1] : tensor<4x8xf32>
      te.yield %x : f32
    } : tensor<f32>
    te.return %s : tensor<f32>
  }

  // A DAG: the intermediate lives in a local temporary freed after its last
  // reader; scalar constants of the te.func are hoisted; a value returned
  // twice and a returned parameter are copied into their outputs.
  // CHECK-LABEL: loop.func @scale_twice_loop(
  // CHECK-SAME:    %[[A:.*]]: memref<8xf32>, %[[O0:.*]]: memref<8xf32>, %[[O1:.*]]: memref<8xf32>, %[[O2:.*]]: memref<8xf32>) {
  // CHECK-NEXT:    %[[TWO:.*]] = arith.constant 2.000000e+00 : f32
  // CHECK-NEXT:    %[[TMP:.*]] = loop.alloc {scope = "local"} : memref<8xf32>
  // CHECK:         loop.for %[[I:.*]] = {{.*}} {
  // CHECK-NEXT:      %[[X:.*]] = loop.load %[[A]][%[[I]]] : memref<8xf32>
  // CHECK-NEXT:      %[[Y:.*]] = arith.mulf %[[X]], %[[TWO]] : f32
  // CHECK-NEXT:      loop.store %[[Y]], %[[TMP]][%[[I]]] : memref<8xf32>
  // CHECK-NEXT:    }
  // CHECK-NEXT:    loop.for %[[I2:.*]] = {{.*}} {
  // CHECK-NEXT:      %[[X2:.*]] = loop.load %[[TMP]][%[[I2]]] : memref<8xf32>
  // CHECK-NEXT:      %[[Y2:.*]] = arith.mulf %[[X2]], %[[TWO]] : f32
  // CHECK-NEXT:      loop.store %[[Y2]], %[[O0]][%[[I2]]] : memref<8xf32>
  // CHECK-NEXT:    }
  // CHECK-NEXT:    loop.free %[[TMP]] : memref<8xf32>
  // CHECK-NEXT:    loop.copy %[[O0]], %[[O1]] : memref<8xf32> to memref<8xf32>
  // CHECK-NEXT:    loop.copy %[[A]], %[[O2]] : memref<8xf32> to memref<8xf32>
  // CHECK-NEXT:    loop.return
  te.func @scale_twice(%a: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
    %two = arith.constant 2.0 : f32
    %t = te.compute [8] (%i) {
      %x = te.read %a[%i] : tensor<8xf32>
      %y = arith.mulf %x, %two : f32
      te.yield %y : f32
    } : tensor<8xf32>
    %u = te.compute [8] (%i) {
      %x = te.read %t[%i] : tensor<8xf32>
      %y = arith.mulf %x, %two : f32
      te.yield %y : f32
    } : tensor<8xf32>
    te.return %u, %u, %a : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
  }

  // te.undef becomes loop.undef (a guarded padding store); the constraint of
  // a returned compute is recorded on its output buffer.
  // CHECK-LABEL: loop.func @pad_loop(
  // CHECK-SAME:    %[[A:.*]]: memref<3xf32>, %[[OUT:.*]]: memref<4xf32> {lamina.constraint = #lamina.constraint<affine_map<(d0) -> (d0)>, #lamina.undef>}) {
  // CHECK:         %[[X:.*]] = loop.load %[[A]][%{{.*}}] : memref<3xf32>
  // CHECK-NEXT:    %[[U:.*]] = loop.undef : f32
  // CHECK-NEXT:    %[[V:.*]] = arith.select %{{.*}}, %[[X]], %[[U]] : f32
  // CHECK-NEXT:    loop.store %[[V]], %[[OUT]][%{{.*}}] : memref<4xf32>
  te.func @pad(%a: tensor<3xf32>) -> tensor<4xf32> {
    %p = te.compute [4] (%i) {
      %c3 = arith.constant 3 : index
      %in = arith.cmpi slt, %i, %c3 : index
      %c2 = arith.constant 2 : index
      %j = arith.minsi %i, %c2 : index
      %x = te.read %a[%j] : tensor<3xf32>
      %u = te.undef : f32
      %v = arith.select %in, %x, %u : f32
      te.yield %v : f32
    } {constraint = #lamina.constraint<affine_map<(d0) -> (d0)>, #lamina.undef>} : tensor<4xf32>
    te.return %p : tensor<4xf32>
  }

  // Combiners min and prod on floats; device/constraint argument attributes
  // of the te.func are kept (results' ones on the output parameters).
  // CHECK-LABEL: loop.func @minprod_loop(
  // CHECK-SAME:    %{{.*}}: memref<2x2xf64> {device = #lamina.device<"cpu", 0>}, %{{.*}}: memref<2xf64>, %{{.*}}: memref<2xf64> {device = #lamina.device<"cpu", 0>})
  // CHECK:         %[[INF:.*]] = arith.constant 0x7ff0000000000000 : f64
  // CHECK:         iter_args(%[[ACC:.*]] = %[[INF]]) -> (f64)
  // CHECK:         arith.minimumf %[[ACC]], %{{.*}} : f64
  // CHECK:         %[[ONE:.*]] = arith.constant 1.000000e+00 : f64
  // CHECK:         iter_args(%[[ACC2:.*]] = %[[ONE]]) -> (f64)
  // CHECK:         arith.mulf %[[ACC2]], %{{.*}} fastmath<reassoc> : f64
  te.func @minprod(%a: tensor<2x2xf64> {device = #lamina.device<"cpu", 0>}) -> (tensor<2xf64>, tensor<2xf64> {device = #lamina.device<"cpu", 0>}) {
    %m = te.compute [2] reduce [2] combiner(min) (%i, %k) {
      %x = te.read %a[%i, %k] : tensor<2x2xf64>
      te.yield %x : f64
    } : tensor<2xf64>
    %p = te.compute [2] reduce [2] combiner(prod) (%i, %k) {
      %x = te.read %a[%i, %k] : tensor<2x2xf64>
      te.yield %x : f64
    } : tensor<2xf64>
    te.return %m, %p : tensor<2xf64>, tensor<2xf64>
  }

  // Nests with at least 2^19 tensor reads (region evaluations times the
  // region's reads, at least two) run their outermost loop on a thread team
  // (kind(parallel)): elementwise and reductions alike; smaller ones stay on
  // the calling thread (waking the team costs more).
  // CHECK-LABEL: loop.func @big_loop(
  // CHECK:         loop.for %{{.*}} kind(parallel) {
  // CHECK-NEXT:      loop.for %{{.*}} kind(vectorized) {
  // CHECK:         loop.for %{{.*}} kind(parallel) {
  // CHECK-NEXT:      %{{.*}} = loop.for %{{.*}} iter_args(
  te.func @big(%a: tensor<512x512xf32>) -> (tensor<512x512xf32>, tensor<512xf32>) {
    %e = te.compute [512, 512] (%i, %j) {
      %x = te.read %a[%i, %j] : tensor<512x512xf32>
      %y = math.exp %x : f32
      te.yield %y : f32
    } : tensor<512x512xf32>
    %s = te.compute [512] reduce [512] combiner(sum) (%i, %k) {
      %x = te.read %a[%i, %k] : tensor<512x512xf32>
      te.yield %x : f32
    } : tensor<512xf32>
    te.return %e, %s : tensor<512x512xf32>, tensor<512xf32>
  }

  // 2^17 evaluations: serial with two reads each, parallel with four. 2^16
  // evaluations of one read: serial when contiguous, parallel when the
  // vectorized loop gathers it (a transpose: it counts as GATHER_READS).
  // CHECK-LABEL: loop.func @reads_loop(
  // CHECK:         loop.for %{{[a-z0-9_]+}} = %c0 to %c256 step %c1 {{{$}}
  // CHECK:         loop.for %{{[a-z0-9_]+}} = %c0 to %c256 step %c1 kind(parallel) {
  // CHECK:         loop.for %{{[a-z0-9_]+}} = %c0 to %c256 step %c1 {{{$}}
  // CHECK:         loop.for %{{[a-z0-9_]+}} = %c0 to %c256 step %c1 kind(parallel) {
  te.func @reads(%a: tensor<512x512xf32>, %b: tensor<300x300xf32>) -> (tensor<256x512xf32>, tensor<256x512xf32>, tensor<256x256xf32>, tensor<256x256xf32>) {
    %two = te.compute [256, 512] (%i, %j) {
      %x = te.read %a[%i, %j] : tensor<512x512xf32>
      %y = te.read %a[%i, %j] : tensor<512x512xf32>
      %s = arith.addf %x, %y : f32
      te.yield %s : f32
    } : tensor<256x512xf32>
    %four = te.compute [256, 512] (%i, %j) {
      %x = te.read %a[%i, %j] : tensor<512x512xf32>
      %y = te.read %two[%i, %j] : tensor<256x512xf32>
      %z = te.read %a[%j, %i] : tensor<512x512xf32>
      %w = te.read %a[%j, %j] : tensor<512x512xf32>
      %s = arith.addf %x, %y : f32
      %t = arith.addf %z, %w : f32
      %u = arith.addf %s, %t : f32
      te.yield %u : f32
    } : tensor<256x512xf32>
    %copy = te.compute [256, 256] (%i, %j) {
      %x = te.read %a[%i, %j] : tensor<512x512xf32>
      te.yield %x : f32
    } : tensor<256x256xf32>
    %transposed = te.compute [256, 256] (%i, %j) {
      %x = te.read %b[%j, %i] : tensor<300x300xf32>
      te.yield %x : f32
    } : tensor<256x256xf32>
    te.return %two, %four, %copy, %transposed : tensor<256x512xf32>, tensor<256x512xf32>, tensor<256x256xf32>, tensor<256x256xf32>
  }

  // Matmul: the column loop j is innermost (C and B contiguous, A invariant),
  // so the reduction accumulates in the output row: init the row, then for
  // each k a vectorizable j loop loading, combining and storing C[i, j].
  // CHECK-LABEL: loop.func @matmul_loop(
  // CHECK-SAME:    %[[A:.*]]: memref<4x8xf32>, %[[B:.*]]: memref<8x16xf32>, %[[C:.*]]: memref<4x16xf32>) {
  // CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
  // CHECK-DAG:     %[[C4:.*]] = arith.constant 4 : index
  // CHECK-DAG:     %[[C8:.*]] = arith.constant 8 : index
  // CHECK-DAG:     %[[C16:.*]] = arith.constant 16 : index
  // CHECK:         loop.for %[[I:.*]] = %{{.*}} to %[[C4]] step %{{.*}} {
  // CHECK-NEXT:      loop.for %[[J0:.*]] = %{{.*}} to %[[C16]] step %{{.*}} kind(vectorized) {
  // CHECK-NEXT:        loop.store %[[ZERO]], %[[C]][%[[I]], %[[J0]]] : memref<4x16xf32>
  // CHECK-NEXT:      }
  // CHECK-NEXT:      loop.for %[[K:.*]] = %{{.*}} to %[[C8]] step %{{.*}} {
  // CHECK-NEXT:        loop.for %[[J:.*]] = %{{.*}} to %[[C16]] step %{{.*}} kind(vectorized) {
  // CHECK-NEXT:          %[[X:.*]] = loop.load %[[A]][%[[I]], %[[K]]] : memref<4x8xf32>
  // CHECK-NEXT:          %[[Y:.*]] = loop.load %[[B]][%[[K]], %[[J]]] : memref<8x16xf32>
  // CHECK-NEXT:          %[[P:.*]] = arith.mulf %[[X]], %[[Y]] : f32
  // CHECK-NEXT:          %[[ACC:.*]] = loop.load %[[C]][%[[I]], %[[J]]] : memref<4x16xf32>
  // CHECK-NEXT:          %[[S:.*]] = arith.addf %[[ACC]], %[[P]] : f32
  // CHECK-NEXT:          loop.store %[[S]], %[[C]][%[[I]], %[[J]]] : memref<4x16xf32>
  // CHECK-NEXT:        }
  // CHECK-NEXT:      }
  // CHECK-NEXT:    }
  // CHECK-NEXT:    loop.return
  te.func @matmul(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) -> tensor<4x16xf32> {
    %c = te.compute [4, 16] reduce [8] combiner(sum) (%i, %j, %k) {
      %x = te.read %a[%i, %k] : tensor<4x8xf32>
      %y = te.read %b[%k, %j] : tensor<8x16xf32>
      %p = arith.mulf %x, %y : f32
      te.yield %p : f32
    } : tensor<4x16xf32>
    te.return %c : tensor<4x16xf32>
  }

  // A convolution-like window sum: the output column x ties with the window
  // column kx (two contiguous accesses each) and wins as the result's last
  // dimension; the window loops ky, kx keep their order around it. The
  // channel dimension of extent 1 gets no loop (index 0).
  // CHECK-LABEL: loop.func @window_loop(
  // CHECK-SAME:    %[[IN:.*]]: memref<1x8x10xf32>, %[[W:.*]]: memref<3x3xf32>, %[[OUT:.*]]: memref<1x6x8xf32>) {
  // CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
  // CHECK:         loop.for %[[Y:.*]] = {{.*}} {
  // CHECK-NEXT:      loop.for %[[X0:.*]] = {{.*}} kind(vectorized) {
  // CHECK-NEXT:        loop.store %{{.*}}, %[[OUT]][%[[C0]], %[[Y]], %[[X0]]] : memref<1x6x8xf32>
  // CHECK-NEXT:      }
  // CHECK-NEXT:      loop.for %[[KY:.*]] = {{.*}} {
  // CHECK-NEXT:        loop.for %[[KX:.*]] = {{.*}} {
  // CHECK-NEXT:          loop.for %[[X:.*]] = {{.*}} kind(vectorized) {
  // CHECK-NEXT:            %[[R:.*]] = arith.addi %[[Y]], %[[KY]] : index
  // CHECK-NEXT:            %[[S:.*]] = arith.addi %[[X]], %[[KX]] : index
  // CHECK-NEXT:            %[[V:.*]] = loop.load %[[IN]][%[[C0]], %[[R]], %[[S]]] : memref<1x8x10xf32>
  // CHECK-NEXT:            %[[WV:.*]] = loop.load %[[W]][%[[KY]], %[[KX]]] : memref<3x3xf32>
  // CHECK-NEXT:            %[[P:.*]] = arith.mulf %[[V]], %[[WV]] : f32
  // CHECK-NEXT:            %[[ACC:.*]] = loop.load %[[OUT]][%[[C0]], %[[Y]], %[[X]]] : memref<1x6x8xf32>
  // CHECK-NEXT:            %[[N:.*]] = arith.addf %[[ACC]], %[[P]] : f32
  // CHECK-NEXT:            loop.store %[[N]], %[[OUT]][%[[C0]], %[[Y]], %[[X]]] : memref<1x6x8xf32>
  te.func @window(%in: tensor<1x8x10xf32>, %w: tensor<3x3xf32>) -> tensor<1x6x8xf32> {
    %o = te.compute [1, 6, 8] reduce [3, 3] combiner(sum) (%c, %y, %x, %ky, %kx) {
      %r = arith.addi %y, %ky : index
      %s = arith.addi %x, %kx : index
      %v = te.read %in[%c, %r, %s] : tensor<1x8x10xf32>
      %wv = te.read %w[%ky, %kx] : tensor<3x3xf32>
      %p = arith.mulf %v, %wv : f32
      te.yield %p : f32
    } : tensor<1x6x8xf32>
    te.return %o : tensor<1x6x8xf32>
  }

  // A column max (a rank-1 result): no outer loop, so the row is initialised
  // by a top-level serial loop and the reduction loop k encloses the
  // vectorized column loop.
  // CHECK-LABEL: loop.func @col_max_loop(
  // CHECK-SAME:    %[[A:.*]]: memref<8x16xf32>, %[[OUT:.*]]: memref<16xf32>) {
  // CHECK-DAG:     %[[NEGINF:.*]] = arith.constant 0xff800000 : f32
  // CHECK:         loop.for %[[J0:.*]] = {{.*}} {
  // CHECK-NEXT:      loop.store %[[NEGINF]], %[[OUT]][%[[J0]]] : memref<16xf32>
  // CHECK-NEXT:    }
  // CHECK-NEXT:    loop.for %[[K:.*]] = {{.*}} {
  // CHECK-NEXT:      loop.for %[[J:.*]] = {{.*}} kind(vectorized) {
  // CHECK-NEXT:        %[[X:.*]] = loop.load %[[A]][%[[K]], %[[J]]] : memref<8x16xf32>
  // CHECK-NEXT:        %[[ACC:.*]] = loop.load %[[OUT]][%[[J]]] : memref<16xf32>
  // CHECK-NEXT:        %[[M:.*]] = arith.maximumf %[[ACC]], %[[X]] : f32
  // CHECK-NEXT:        loop.store %[[M]], %[[OUT]][%[[J]]] : memref<16xf32>
  te.func @col_max(%a: tensor<8x16xf32>) -> tensor<16xf32> {
    %m = te.compute [16] reduce [8] combiner(max) (%j, %k) {
      %x = te.read %a[%k, %j] : tensor<8x16xf32>
      te.yield %x : f32
    } : tensor<16xf32>
    te.return %m : tensor<16xf32>
  }

  // An elementwise nest whose reads are contiguous along the first result
  // dimension (a transposing add) puts that dimension innermost.
  // CHECK-LABEL: loop.func @transposed_add_loop(
  // CHECK-SAME:    %[[A:.*]]: memref<4x6xf32>, %[[B:.*]]: memref<4x6xf32>, %[[OUT:.*]]: memref<6x4xf32>) {
  // CHECK:         loop.for %[[J:.*]] = {{.*}} {
  // CHECK-NEXT:      loop.for %[[I:.*]] = {{.*}} kind(vectorized) {
  // CHECK-NEXT:        %{{.*}} = loop.load %[[A]][%[[J]], %[[I]]] : memref<4x6xf32>
  // CHECK-NEXT:        %{{.*}} = loop.load %[[B]][%[[J]], %[[I]]] : memref<4x6xf32>
  // CHECK:             loop.store %{{.*}}, %[[OUT]][%[[I]], %[[J]]] : memref<6x4xf32>
  te.func @transposed_add(%a: tensor<4x6xf32>, %b: tensor<4x6xf32>) -> tensor<6x4xf32> {
    %t = te.compute [6, 4] (%i, %j) {
      %x = te.read %a[%j, %i] : tensor<4x6xf32>
      %y = te.read %b[%j, %i] : tensor<4x6xf32>
      %s = arith.addf %x, %y : f32
      te.yield %s : f32
    } : tensor<6x4xf32>
    te.return %t : tensor<6x4xf32>
  }
}
