// RUN: lamina-opt %s -p legalize | filecheck %s
// RUN: lamina-opt %s -p legalize | lamina-opt -p verify-phase | filecheck %s --check-prefix=PHASE

// legalize: every graph compute op becomes `graph.call_te` of a `te.func`
// built from `te.compute`; dataflow blocks are flattened; purity tracking is
// removed; the module enters phase lowering.

// PHASE: lamina.phase = #lamina.phase<lowering>
// CHECK: builtin.module attributes {lamina.phase = #lamina.phase<lowering>}

builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {

  // Dataflow flattening, `device` kept, purity removed. Kernels are per
  // device: the add on cpu:1 gets its own te.func, which records its device.
  // CHECK-LABEL: graph.func @flatten(
  // CHECK-SAME:    attributes {force_pure}
  // CHECK-NOT:     graph.dataflow
  // CHECK-NEXT:    %[[S:.*]] = graph.call_te @te_add_2x3xf32(%a, %b) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT:    %[[T:.*]] = graph.call_te @te_add_2x3xf32_1(%[[S]], %b) {device = #lamina.device<"cpu", 1>}
  // CHECK-NEXT:    %[[E:.*]] = graph.call_extern "ext"(%[[T]]) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT:    graph.return %[[E]]
  graph.func @flatten(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
    %r = graph.dataflow -> tensor<2x3xf32> {
      %s = graph.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
      graph.output %s : tensor<2x3xf32>
    }
    %t = graph.add %r, %b {device = #lamina.device<"cpu", 1>} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %e = graph.call_extern "ext"(%t) {pure} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    graph.return %e : tensor<2x3xf32>
  }

  // `pure` is dropped from graph.invoke too.
  // CHECK-LABEL: graph.func @invoke(
  // CHECK-SAME:    attributes {force_pure}
  // CHECK-NEXT:    %[[F:.*]] = graph.closure @effects() : () -> !graph.fn<(tensor<2xf32>) -> tensor<2xf32>>
  // CHECK-NEXT:    graph.invoke %[[F]](%a) : (tensor<2xf32>) -> tensor<2xf32>
  graph.func @invoke(%a: tensor<2xf32>) -> tensor<2xf32> {
    %f = graph.closure @effects() : () -> !graph.fn<(tensor<2xf32>) -> tensor<2xf32>>
    %r = graph.invoke %f(%a) {pure} : (tensor<2xf32>) -> tensor<2xf32>
    graph.return %r : tensor<2xf32>
  }

  // An impure function stays impure (and does not become force_pure).
  // CHECK-LABEL: graph.func @effects(
  // CHECK-SAME:    attributes {impure}
  // CHECK-NEXT:    graph.return
  graph.func @effects(%a: tensor<2xf32>) -> tensor<2xf32> attributes {impure} {
    graph.return %a : tensor<2xf32>
  }

  // CHECK-LABEL: graph.func @mm(
  // CHECK:         graph.call_te @te_matmul_2x4xf32(%a, %b) : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  graph.func @mm(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
    %y = graph.matmul %a, %b : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
    graph.return %y : tensor<2x4xf32>
  }

  // CHECK-LABEL: graph.func @conv(
  // CHECK:         graph.call_te @te_conv2d_1x3x5x5xf32(%x, %w)
  graph.func @conv(%x: tensor<1x2x5x5xf32>, %w: tensor<3x2x3x3xf32>) -> tensor<1x3x5x5xf32> {
    %y = graph.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x5x5xf32>
    graph.return %y : tensor<1x3x5x5xf32>
  }

  // CHECK-LABEL: graph.func @pools(
  // CHECK-NEXT:    graph.call_te @te_max_pool2d_1x2x5x5xf32(%x)
  // CHECK-NEXT:    graph.call_te @te_avg_pool2d_1x2x3x3xf32(%z)
  graph.func @pools(%x: tensor<1x2x5x5xf32>, %z: tensor<1x2x6x6xf32>) -> (tensor<1x2x5x5xf32>, tensor<1x2x3x3xf32>) {
    %m = graph.max_pool2d %x {kernel = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xf32>
    %a = graph.avg_pool2d %z {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x2x6x6xf32>) -> tensor<1x2x3x3xf32>
    graph.return %m, %a : tensor<1x2x5x5xf32>, tensor<1x2x3x3xf32>
  }

  // CHECK-LABEL: graph.func @softmax(
  // CHECK:         graph.call_te @te_softmax_2x8xf32(%x)
  graph.func @softmax(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
    %y = graph.softmax %x {axis = -1 : i64} : (tensor<2x8xf32>) -> tensor<2x8xf32>
    graph.return %y : tensor<2x8xf32>
  }

  // CHECK-LABEL: graph.func @reduce(
  // CHECK:         graph.call_te @te_reduce_sum_2x1x4xf32(%x)
  graph.func @reduce(%x: tensor<2x3x4xf32>) -> tensor<2x1x4xf32> {
    %y = graph.reduce_sum %x {axes = array<i64: -2>, keepdims} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
    graph.return %y : tensor<2x1x4xf32>
  }

  // CHECK-LABEL: graph.func @reshape(
  // CHECK:         graph.call_te @te_reshape_3x4xf32(%x)
  graph.func @reshape(%x: tensor<2x6xf32>) -> tensor<3x4xf32> {
    %y = graph.reshape %x : (tensor<2x6xf32>) -> tensor<3x4xf32>
    graph.return %y : tensor<3x4xf32>
  }

  // CHECK-LABEL: graph.func @layout(
  // CHECK-NEXT:    graph.call_te @te_layout_transform_3x8xf32(%x)
  // CHECK-NEXT:    graph.call_te @te_layout_transform_3x8xf32_1(%x)
  graph.func @layout(%x: tensor<20xf32>) -> (tensor<3x8xf32>, tensor<3x8xf32>) {
    %p = graph.layout_transform %x {constraint = #lamina.constraint<affine_map<(d0) -> (d0 floordiv 8, d0 mod 8)>, 0.0 : f32>} : (tensor<20xf32>) -> tensor<3x8xf32>
    %u = graph.layout_transform %x {constraint = #lamina.constraint<affine_map<(d0) -> (d0 floordiv 8, d0 mod 8)>, #lamina.undef>} : (tensor<20xf32>) -> tensor<3x8xf32>
    graph.return %p, %u : tensor<3x8xf32>, tensor<3x8xf32>
  }

  // graph.constant is not a compute op: it stays.
  // CHECK-LABEL: graph.func @constant(
  // CHECK-NEXT:    %[[C:.*]] = graph.constant dense<1.000000e+00> : tensor<3xf32>
  // CHECK-NEXT:    graph.call_te @te_add_3xf32(%[[C]], %x)
  graph.func @constant(%x: tensor<3xf32>) -> tensor<3xf32> {
    %c = graph.constant dense<1.0> : tensor<3xf32>
    %y = graph.add %c, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    graph.return %y : tensor<3xf32>
  }
}

// Kernels, in order of first use. Broadcasting: the rank-1 operand is read
// with the last output index only.
// CHECK-LABEL: te.func private @te_add_2x3xf32(%in0: tensor<2x3xf32>, %in1: tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %[[R:.*]] = te.compute [2, 3] (%[[I:.*]], %[[J:.*]]) {
// CHECK-NEXT:      %[[X:.*]] = te.read %in0[%[[I]], %[[J]]] : tensor<2x3xf32>
// CHECK-NEXT:      %[[Y:.*]] = te.read %in1[%[[J]]] : tensor<3xf32>
// CHECK-NEXT:      %[[Z:.*]] = arith.addf %[[X]], %[[Y]] : f32
// CHECK-NEXT:      te.yield %[[Z]] : f32
// CHECK-NEXT:    } : tensor<2x3xf32>
// CHECK-NEXT:    te.return %[[R]] : tensor<2x3xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  te.func private @te_add_2x3xf32_1(%in0: tensor<2x3xf32> {device = #lamina.device<"cpu", 1>}, %in1: tensor<3xf32> {device = #lamina.device<"cpu", 1>}) -> (tensor<2x3xf32> {device = #lamina.device<"cpu", 1>})
// CHECK-NOT:   te.func private @te_add_2x3xf32

// CHECK-LABEL: te.func private @te_matmul_2x4xf32(
// CHECK-NEXT:    te.compute [2, 4] reduce [3] combiner(sum) (%[[I:.*]], %[[J:.*]], %[[K:.*]]) {
// CHECK-NEXT:      %[[A:.*]] = te.read %in0[%[[I]], %[[K]]] : tensor<2x3xf32>
// CHECK-NEXT:      %[[B:.*]] = te.read %in1[%[[K]], %[[J]]] : tensor<3x4xf32>
// CHECK-NEXT:      %[[P:.*]] = arith.mulf %[[A]], %[[B]] : f32
// CHECK-NEXT:      te.yield %[[P]] : f32

// Padding is materialised first: a te.compute of the padded input (5 + 1 + 1
// rows and columns) reads the input at the clamped index `i - 1` and selects
// 0 outside it; the window reduction then reads the padded input at the
// affine `oh + kh`, `ow + kw` (no clamp, no select: unit stride in `ow`).
// CHECK-LABEL: te.func private @te_conv2d_1x3x5x5xf32(
// CHECK-NEXT:    %[[XP:.*]] = te.compute [1, 2, 7, 7] (%[[N:.*]], %[[C:.*]], %[[Y:.*]], %[[X:.*]]) {
// CHECK:           %[[H:.*]] = arith.addi %[[Y]], %{{.*}} : index
// CHECK:           %[[HLO:.*]] = arith.cmpi sge, %[[H]], %{{.*}} : index
// CHECK:           %[[HHI:.*]] = arith.cmpi slt, %[[H]], %{{.*}} : index
// CHECK:           %[[HC:.*]] = arith.select %[[HHI]], %{{.*}}, %{{.*}} : index
// CHECK:           %[[V:.*]] = te.read %in0[%[[N]], %[[C]], %[[HC]], %{{.*}}] : tensor<1x2x5x5xf32>
// CHECK:           %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:           %[[G:.*]] = arith.select %{{.*}}, %[[V]], %[[ZERO]] : f32
// CHECK-NEXT:      te.yield %[[G]] : f32
// CHECK-NEXT:    } : tensor<1x2x7x7xf32>
// CHECK-NEXT:    %[[R:.*]] = te.compute [1, 3, 5, 5] reduce [2, 3, 3] combiner(sum) (%[[N:.*]], %[[O:.*]], %[[OH:.*]], %[[OW:.*]], %[[CI:.*]], %[[KH:.*]], %[[KW:.*]]) {
// CHECK-NEXT:      %[[IH:.*]] = arith.addi %[[OH]], %[[KH]] : index
// CHECK-NEXT:      %[[IW:.*]] = arith.addi %[[OW]], %[[KW]] : index
// CHECK-NEXT:      %[[D:.*]] = te.read %[[XP]][%[[N]], %[[CI]], %[[IH]], %[[IW]]] : tensor<1x2x7x7xf32>
// CHECK-NEXT:      %[[W:.*]] = te.read %in1[%[[O]], %[[CI]], %[[KH]], %[[KW]]] : tensor<3x2x3x3xf32>
// CHECK-NEXT:      %[[P:.*]] = arith.mulf %[[D]], %[[W]] : f32
// CHECK-NEXT:      te.yield %[[P]] : f32
// CHECK-NEXT:    } : tensor<1x3x5x5xf32>
// CHECK-NEXT:    te.return %[[R]] : tensor<1x3x5x5xf32>

// Max pooling over a window of at most 25 taps is one expression per output
// (kernels/nn.py, `_max_pool_taps`), no padded copy: each tap reads the input at
// a clamped index and is -inf in the padding, then a tree of maxima; a NaN in
// the window gives NaN.
// CHECK-LABEL: te.func private @te_max_pool2d_1x2x5x5xf32(
// CHECK-NEXT:    te.compute [1, 2, 5, 5] (%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {
// CHECK-NOT:       reduce
// CHECK:           te.read %in0
// CHECK:           %[[NEGINF:.*]] = arith.constant 0xff800000 : f32
// CHECK:           arith.select %{{.*}}, %{{.*}}, %[[NEGINF]] : f32
// CHECK-COUNT-8:   te.read %in0
// CHECK-COUNT-8:   arith.maximumf %{{.*}}, %{{.*}} fastmath<nnan> : f32
// CHECK:           %[[NAN:.*]] = arith.constant 0x7fc00000 : f32
// CHECK-NEXT:      %[[R:.*]] = arith.select %{{.*}}, %[[NAN]], %{{.*}} : f32
// CHECK-NEXT:      te.yield %[[R]] : f32
// CHECK-NEXT:    } : tensor<1x2x5x5xf32>

// Stride 2 over 6 + 1 + 1 padded rows: the windows end at padded row
// 2*2 + 2 = 6, so the padded input has only 7 rows, its bottom padding row
// is never read and only the top side of the rows is guarded. The strided
// columns are split into 2 phases of 4 (padded column 2*q + p), read at
// phase kw mod 2, column ow + kw div 2: unit stride in ow. Padding is 0;
// the divisor counts the non-padding elements from the output indices.
// CHECK-LABEL: te.func private @te_avg_pool2d_1x2x3x3xf32(
// CHECK-NEXT:    %[[XP:.*]] = te.compute [1, 2, 7, 2, 4] (%{{.*}}, %{{.*}}, %[[Y:.*]], %[[P:.*]], %[[Q:.*]]) {
// CHECK:           %[[Q2:.*]] = arith.muli %[[Q]], %{{.*}} : index
// CHECK-NEXT:      %[[COL:.*]] = arith.addi %[[Q2]], %[[P]] : index
// CHECK:           %[[ROW:.*]] = arith.addi %[[Y]], %{{.*}} : index
// CHECK:           arith.cmpi sge, %[[ROW]]
// CHECK-NOT:       arith.cmpi slt, %[[ROW]]
// CHECK:           te.yield
// CHECK-NEXT:    } : tensor<1x2x7x2x4xf32>
// CHECK-NEXT:    %[[S:.*]] = te.compute [1, 2, 3, 3] reduce [3, 3] combiner(sum) (%{{.*}}, %{{.*}}, %[[OH:.*]], %[[OW:.*]], %[[KH:.*]], %[[KW:.*]]) {
// CHECK-NEXT:      %[[C2:.*]] = arith.constant 2 : index
// CHECK-NEXT:      %[[H2:.*]] = arith.muli %[[OH]], %[[C2]] : index
// CHECK-NEXT:      %[[IH:.*]] = arith.addi %[[H2]], %[[KH]] : index
// CHECK-NEXT:      %[[KD:.*]] = arith.divui %[[KW]], %[[C2]] : index
// CHECK-NEXT:      %[[IW:.*]] = arith.addi %[[OW]], %[[KD]] : index
// CHECK-NEXT:      %[[PH:.*]] = arith.remui %[[KW]], %[[C2]] : index
// CHECK-NEXT:      te.read %[[XP]][%{{.*}}, %{{.*}}, %[[IH]], %[[PH]], %[[IW]]] : tensor<1x2x7x2x4xf32>
// CHECK:         te.compute [1, 2, 3, 3] (%{{.*}}, %{{.*}}, %[[OH:.*]], %[[OW:.*]]) {
// CHECK:           arith.muli %[[OH]], %{{.*}} : index
// CHECK:           te.read %[[S]]
// CHECK:           arith.divf

// Softmax is a DAG of four te.compute: max, exp(x - max), sum, divide.
// CHECK-LABEL: te.func private @te_softmax_2x8xf32(
// CHECK-NEXT:    %[[M:.*]] = te.compute [2] reduce [8] combiner(max)
// CHECK:         %[[E:.*]] = te.compute [2, 8]
// CHECK:           te.read %[[M]]
// CHECK:           arith.subf
// CHECK:           math.exp
// CHECK:         %[[S:.*]] = te.compute [2] reduce [8] combiner(sum)
// CHECK:           te.read %[[E]]
// CHECK:         %[[D:.*]] = te.compute [2, 8]
// CHECK:           te.read %[[S]]
// CHECK:           arith.divf
// CHECK:         te.return %[[D]] : tensor<2x8xf32>

// keepdims: the reduced output dim (size 1) is skipped; the input reads the reduction index.
// CHECK-LABEL: te.func private @te_reduce_sum_2x1x4xf32(
// CHECK-NEXT:    te.compute [2, 1, 4] reduce [3] combiner(sum) (%[[I:.*]], %{{.*}}, %[[L:.*]], %[[K:.*]]) {
// CHECK-NEXT:      te.read %in0[%[[I]], %[[K]], %[[L]]] : tensor<2x3x4xf32>

// Reshape linearizes the output index and delinearizes it into the input index.
// CHECK-LABEL: te.func private @te_reshape_3x4xf32(
// CHECK-NEXT:    te.compute [3, 4] (%[[I:.*]], %[[J:.*]]) {
// CHECK:           %[[R:.*]] = arith.muli %[[I]], %{{.*}} : index
// CHECK:           %[[LIN:.*]] = arith.addi %[[R]], %[[J]] : index
// CHECK:           %[[Q:.*]] = arith.divui %[[LIN]], %{{.*}} : index
// CHECK:           %[[M:.*]] = arith.remui %[[LIN]], %{{.*}} : index
// CHECK:           te.read %in0[%[[Q]], %[[M]]] : tensor<2x6xf32>

// Layout transform: the physical index (i0, i1) is the image of logical
// 8*i0 + i1 when that is < 20; the read index is clamped, padding is PAD...
// CHECK-LABEL: te.func private @te_layout_transform_3x8xf32(%in0: tensor<20xf32>) -> tensor<3x8xf32>
// CHECK-NEXT:    te.compute [3, 8] (%[[I:.*]], %[[J:.*]]) {
// CHECK:           %[[L:.*]] = arith.addi %{{.*}}, %[[J]] : index
// CHECK:           %[[OK:.*]] = arith.cmpi slt, %[[L]], %{{.*}} : index
// CHECK:           %[[LC:.*]] = arith.select %[[OK]], %[[L]], %{{.*}} : index
// CHECK:           %[[V:.*]] = te.read %in0[%[[LC]]] : tensor<20xf32>
// CHECK:           %[[PAD:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:           %[[R:.*]] = arith.select %[[OK]], %[[V]], %[[PAD]] : f32
// CHECK:           te.yield %[[R]] : f32

// ... or te.undef for #lamina.undef.
// CHECK-LABEL: te.func private @te_layout_transform_3x8xf32_1(
// CHECK:           %[[U:.*]] = te.undef : f32
// CHECK:           %[[R:.*]] = arith.select %{{.*}}, %{{.*}}, %[[U]] : f32
// CHECK:           te.yield %[[R]] : f32

// CHECK-LABEL: te.func private @te_add_3xf32(
