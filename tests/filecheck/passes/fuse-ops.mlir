// RUN: lamina-opt %s -p fuse-ops | filecheck %s
// RUN: lamina-opt %s -p fuse-ops,legalize | filecheck %s --check-prefix=LEGAL

// fuse-ops groups compute ops by pattern kind (TVM's FuseOps): an
// output-fusable op (matmul, conv2d, pools, softmax, layer_norm) absorbs its
// elementwise/broadcast epilogue; a reduction absorbs an elementwise prologue
// and epilogue; elementwise, broadcast and injective ops chain; a diamond
// whose readers all fuse closes into one group; opaque ops, other values with
// several uses and device changes end a group.

builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  // output-fusable + broadcast + elementwise: one kernel, with the bias add
  // inlined into the relu stage (one elementwise nest after the matmul).
  // CHECK-LABEL: graph.func @dense(
  // CHECK-NEXT:    %r = graph.call_te @te_fused_matmul_add_relu_4x16xf32(%x, %w, %b) : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  // CHECK-NEXT:    graph.return %r
  graph.func @dense(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
    %m = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
    %a = graph.add %m, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
    %r = graph.relu %a : (tensor<4x16xf32>) -> tensor<4x16xf32>
    graph.return %r : tensor<4x16xf32>
  }

  // The same group again shares the kernel.
  // CHECK-LABEL: graph.func @dense_again(
  // CHECK-NEXT:    graph.call_te @te_fused_matmul_add_relu_4x16xf32(%x, %w, %b)
  graph.func @dense_again(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
    %m = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
    %a = graph.add %m, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
    %r = graph.relu %a : (tensor<4x16xf32>) -> tensor<4x16xf32>
    graph.return %r : tensor<4x16xf32>
  }

  // injective + elementwise chain, then a reduction taking it as a prologue
  // and a sqrt epilogue.
  // CHECK-LABEL: graph.func @chain(
  // CHECK-NEXT:    %s = graph.call_te @te_fused_transpose_exp_reduce_sum_sqrt_3xf32(%x)
  // CHECK-NEXT:    graph.return %s
  graph.func @chain(%x: tensor<2x3xf32>) -> tensor<3xf32> {
    %t = graph.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
    %e = graph.exp %t : (tensor<3x2xf32>) -> tensor<3x2xf32>
    %r = graph.reduce_sum %e {axes = array<i64: 1>} : (tensor<3x2xf32>) -> tensor<3xf32>
    %s = graph.sqrt %r : (tensor<3xf32>) -> tensor<3xf32>
    graph.return %s : tensor<3xf32>
  }

  // A matmul takes no prologue (it would recompute the exp N times), and a
  // value with two uses ends its group.
  // CHECK-LABEL: graph.func @boundaries(
  // CHECK-NEXT:    %e = graph.exp %x
  // CHECK-NEXT:    %m = graph.matmul %e, %x
  // CHECK-NEXT:    %a = graph.add %m, %m
  graph.func @boundaries(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
    %e = graph.exp %x : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %m = graph.matmul %e, %x : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %a = graph.add %m, %m : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    graph.return %a : tensor<4x4xf32>
  }

  // A diamond closes into one group: SiLU's `y * sigmoid(y)` reads the
  // matmul+bias result twice, once through the sigmoid's group; both readers
  // are fused, so `y` is never written out. With a third reader outside
  // (@diamond_escapes: `y` is returned) it must exist anyway and the groups stay apart.
  // CHECK-LABEL: graph.func @silu(
  // CHECK-NEXT:    %s = graph.call_te @te_fused_matmul_add_sigmoid_mul_4x16xf32(%x, %w, %b)
  // CHECK-NEXT:    graph.return %s
  graph.func @silu(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
    %m = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
    %y = graph.add %m, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
    %g = graph.sigmoid %y : (tensor<4x16xf32>) -> tensor<4x16xf32>
    %s = graph.mul %y, %g : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    graph.return %s : tensor<4x16xf32>
  }
  // CHECK-LABEL: graph.func @diamond_escapes(
  // CHECK-NEXT:    %y = graph.call_te @te_fused_matmul_add_4x16xf32(%x, %w, %b)
  // CHECK-NEXT:    %s = graph.call_te @te_fused_sigmoid_mul_4x16xf32(%y)
  // CHECK-NEXT:    graph.return %s, %y
  graph.func @diamond_escapes(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
    %m = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
    %y = graph.add %m, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
    %g = graph.sigmoid %y : (tensor<4x16xf32>) -> tensor<4x16xf32>
    %s = graph.mul %y, %g : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    graph.return %s, %y : tensor<4x16xf32>, tensor<4x16xf32>
  }

  // A squeeze-excitation gate: the sigmoid of a per-channel value scales a
  // whole feature map by broadcasting. Both ops are one kernel, but the
  // sigmoid (an exp and a division per element) stays a stage over the 4
  // channels instead of being inlined into the multiply over 4x16 elements.
  // CHECK-LABEL: graph.func @gate(
  // CHECK-NEXT:    %m = graph.call_te @te_fused_sigmoid_mul_4x16xf32_1(%s, %x)
  graph.func @gate(%s: tensor<4x1xf32>, %x: tensor<4x16xf32>) -> tensor<4x16xf32> {
    %g = graph.sigmoid %s : (tensor<4x1xf32>) -> tensor<4x1xf32>
    %m = graph.mul %x, %g : (tensor<4x16xf32>, tensor<4x1xf32>) -> tensor<4x16xf32>
    graph.return %m : tensor<4x16xf32>
  }

  // A matmul absorbs the reshape/transpose groups of both operands (the
  // head split of attention's Q·Kᵀ): one kernel reading %q and %k in place,
  // its reduction reading them at remapped indices (no copy stage). The
  // transpose with a second use stays a kernel of its own.
  // CHECK-LABEL: graph.func @heads(
  // CHECK-NEXT:    %s = graph.call_te @te_fused_reshape_transpose_reshape_transpose_matmul_2x4x4xf32(%q, %k)
  // CHECK-NEXT:    %vt = graph.call_te @te_fused_reshape_transpose_2x4x3xf32(%v)
  // CHECK-NEXT:    %c = graph.call_te @te_fused_matmul_add_2x4x3xf32(%s, %vt)
  graph.func @heads(%q: tensor<4x6xf32>, %k: tensor<4x6xf32>, %v: tensor<4x6xf32>) -> tensor<2x4x3xf32> {
    %q2 = graph.reshape %q : (tensor<4x6xf32>) -> tensor<4x2x3xf32>
    %qh = graph.transpose %q2 {perm = array<i64: 1, 0, 2>} : (tensor<4x2x3xf32>) -> tensor<2x4x3xf32>
    %k2 = graph.reshape %k : (tensor<4x6xf32>) -> tensor<4x2x3xf32>
    %kt = graph.transpose %k2 {perm = array<i64: 1, 2, 0>} : (tensor<4x2x3xf32>) -> tensor<2x3x4xf32>
    %s = graph.matmul %qh, %kt : (tensor<2x4x3xf32>, tensor<2x3x4xf32>) -> tensor<2x4x4xf32>
    %v2 = graph.reshape %v : (tensor<4x6xf32>) -> tensor<4x2x3xf32>
    %vt = graph.transpose %v2 {perm = array<i64: 1, 0, 2>} : (tensor<4x2x3xf32>) -> tensor<2x4x3xf32>
    %m = graph.matmul %s, %vt : (tensor<2x4x4xf32>, tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
    %c = graph.add %m, %vt : (tensor<2x4x3xf32>, tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
    graph.return %c : tensor<2x4x3xf32>
  }

  // A convolution absorbs a group of reshapes of its input (a stem's NCHW
  // input read as NCHW1c, plan-layouts-stem.mlir): one kernel reading %x in
  // place, no copy kernel before it. Other remappings (a transpose) are not
  // absorbed: the convolution would read them in a gather.
  // CHECK-LABEL: graph.func @stem_reshape(
  // CHECK-NEXT:    %r = graph.call_te @te_fused_reshape_conv2d_relu_1x1x8x8x8xf32(%x, %w)
  // CHECK-LABEL: graph.func @conv_after_transpose(
  // CHECK-NEXT:    %t = graph.transpose %x
  // CHECK-NEXT:    %r = graph.call_te @te_fused_conv2d_relu_1x1x8x8x8xf32(%t, %w)
  graph.func @stem_reshape(%x: tensor<1x3x8x8xf32>, %w: tensor<1x3x3x3x1x8xf32>) -> tensor<1x1x8x8x8xf32> {
    %b = graph.reshape %x : (tensor<1x3x8x8xf32>) -> tensor<1x3x8x8x1xf32>
    %c = graph.conv2d %b, %w {padding = array<i64: 1, 1, 1, 1>, data_layout = "NCHW1c", kernel_layout = "OIHW1i8o"} : (tensor<1x3x8x8x1xf32>, tensor<1x3x3x3x1x8xf32>) -> tensor<1x1x8x8x8xf32>
    %r = graph.relu %c : (tensor<1x1x8x8x8xf32>) -> tensor<1x1x8x8x8xf32>
    graph.return %r : tensor<1x1x8x8x8xf32>
  }

  graph.func @conv_after_transpose(%x: tensor<1x3x8x8x1xf32>, %w: tensor<1x3x3x3x1x8xf32>) -> tensor<1x1x8x8x8xf32> {
    %t = graph.transpose %x {perm = array<i64: 0, 1, 3, 2, 4>} : (tensor<1x3x8x8x1xf32>) -> tensor<1x3x8x8x1xf32>
    %c = graph.conv2d %t, %w {padding = array<i64: 1, 1, 1, 1>, data_layout = "NCHW1c", kernel_layout = "OIHW1i8o"} : (tensor<1x3x8x8x1xf32>, tensor<1x3x3x3x1x8xf32>) -> tensor<1x1x8x8x8xf32>
    %r = graph.relu %c : (tensor<1x1x8x8x8xf32>) -> tensor<1x1x8x8x8xf32>
    graph.return %r : tensor<1x1x8x8x8xf32>
  }

  // Opaque ops (layout_transform) are never fused.
  // CHECK-LABEL: graph.func @opaque(
  // CHECK-NEXT:    %n = graph.neg %x
  // CHECK-NEXT:    %l = graph.layout_transform %n
  // CHECK-NEXT:    %r = graph.relu %l
  graph.func @opaque(%x: tensor<16xf32>) -> tensor<2x8xf32> {
    %n = graph.neg %x : (tensor<16xf32>) -> tensor<16xf32>
    %l = graph.layout_transform %n {constraint = #lamina.constraint<affine_map<(d0) -> (d0 floordiv 8, d0 mod 8)>, 0.0 : f32>} : (tensor<16xf32>) -> tensor<2x8xf32>
    %r = graph.relu %l : (tensor<2x8xf32>) -> tensor<2x8xf32>
    graph.return %r : tensor<2x8xf32>
  }

  // Never across devices: the relu on cpu 1 stays apart; the two ops on
  // cpu 0 fuse and the call keeps their device.
  // CHECK-LABEL: graph.func @devices(
  // CHECK-NEXT:    %t = graph.call_te @te_fused_exp_neg_4xf32(%x) {device = #lamina.device<"cpu", 0>}
  // CHECK-NEXT:    %r = graph.relu %t {device = #lamina.device<"cpu", 1>}
  graph.func @devices(%x: tensor<4xf32>) -> tensor<4xf32> {
    %e = graph.exp %x {device = #lamina.device<"cpu", 0>} : (tensor<4xf32>) -> tensor<4xf32>
    %t = graph.neg %e {device = #lamina.device<"cpu", 0>} : (tensor<4xf32>) -> tensor<4xf32>
    %r = graph.relu %t {device = #lamina.device<"cpu", 1>} : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %r : tensor<4xf32>
  }
}

// The fused kernel: the matmul, then one elementwise stage (add and relu).
// CHECK-LABEL: te.func private @te_fused_matmul_add_relu_4x16xf32(
// CHECK:         te.compute [4, 16] reduce [8] combiner(sum)
// CHECK:         te.compute [4, 16] (
// CHECK:           arith.addf
// CHECK:           arith.maximumf
// CHECK:         te.return
// CHECK-NOT:   te_fused_matmul_add_relu_4x16xf32_1

// SiLU's kernel: the matmul, then one stage reading its result twice (the
// bias add and the sigmoid inlined).
// CHECK-LABEL: te.func private @te_fused_matmul_add_sigmoid_mul_4x16xf32(
// CHECK-NEXT:    te.compute [4, 16] reduce [8] combiner(sum)
// CHECK:         te.compute [4, 16] (
// CHECK:           math.exp
// CHECK:           arith.mulf
// CHECK-NOT:     te.compute
// CHECK:         te.return

// The gate's kernel: the sigmoid over [4, 1], then the multiply reading it.
// CHECK-LABEL: te.func private @te_fused_sigmoid_mul_4x16xf32_1(
// CHECK-NEXT:    %[[GATE:.*]] = te.compute [4, 1] (
// CHECK:           math.exp
// CHECK:           arith.divf
// CHECK:         te.compute [4, 16] (
// CHECK-NOT:       math.exp
// CHECK:           te.read %[[GATE]]
// CHECK-NEXT:      arith.mulf
// CHECK:         te.return

// The head-split kernel: one reduction, reading both parameters through the
// reshapes' index arithmetic.
// CHECK-LABEL: te.func private @te_fused_reshape_transpose_reshape_transpose_matmul_2x4x4xf32(
// CHECK-NEXT:    te.compute [2, 4, 4] reduce [3] combiner(sum)
// CHECK:           te.read %in0[
// CHECK:           te.read %in1[
// CHECK-NOT:     te.compute
// CHECK:         te.return

// legalize lowers what fuse-ops left, one kernel per op.
// LEGAL-LABEL: graph.func @boundaries(
// LEGAL-NEXT:    graph.call_te @te_exp_4x4xf32(%x)
// LEGAL-NEXT:    graph.call_te @te_matmul_4x4xf32
// LEGAL-NEXT:    graph.call_te @te_add_4x4xf32
