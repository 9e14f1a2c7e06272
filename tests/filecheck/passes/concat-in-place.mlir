// RUN: lamina-opt %s -p plan-memory,lower-graph,concat-in-place | filecheck %s
// RUN: lamina-opt %s -p 'plan-memory,lower-graph,concat-in-place{concat_in_place=0}' | filecheck %s --check-prefix=OFF

// concat-in-place: the producers of a concatenation's inputs are called on
// views of their slices of its output (a pointer cast, a getelementptr by the
// slice's offset, a cast back), the concatenation's call and the inputs' own
// buffers go. Only calls marked `lamina.concatenation` (legalize marks the
// calls of plain concatenation kernels) are concatenations: the callee's name
// means nothing. Left alone: an unmarked call, an input read by another call
// too, an output with padding, and a batch of 2 (the slices are not contiguous).

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func private @conv_a(%x: memref<1x1x4x4x16xf32>, %y: memref<1x1x4x4x16xf32>) {
    loop.return
  }
  loop.func private @conv_b(%x: memref<1x1x4x4x16xf32>, %y: memref<1x2x4x4x16xf32>) {
    loop.return
  }
  loop.func private @te_concat_1x3x4x4x16xf32_loop(%a: memref<1x1x4x4x16xf32>, %b: memref<1x2x4x4x16xf32>, %y: memref<1x3x4x4x16xf32>) {
    loop.return
  }
  loop.func private @te_concat_1x3x4x4x16xf32_1_loop(%a: memref<1x1x4x4x16xf32>, %b: memref<1x2x4x4x16xf32>, %y: memref<1x3x4x4x16xf32> {lamina.constraint = #lamina.constraint<affine_map<(d0, d1, d2, d3) -> (d0, (d1 floordiv 16), d2, d3, (d1 mod 16))>, 0.000000e+00 : f32, logical = array<i64: 1, 40, 4, 4>>}) {
    loop.return
  }
  loop.func private @use(%x: memref<1x3x4x4x16xf32>, %y: memref<1x1x4x4x16xf32>) {
    loop.return
  }
  loop.func private @add(%x: memref<1x1x4x4x16xf32>, %z: memref<1x1x4x4x16xf32>, %y: memref<1x1x4x4x16xf32>) {
    loop.return
  }
  loop.func private @widen(%x: memref<1x1x4x4x16xf32>, %y: memref<1x3x4x4x16xf32>) {
    loop.return
  }
  loop.func private @narrow_a(%x: memref<1x3x4x4x16xf32>, %y: memref<1x1x4x4x16xf32>) {
    loop.return
  }
  loop.func private @narrow_b(%x: memref<1x3x4x4x16xf32>, %y: memref<1x2x4x4x16xf32>) {
    loop.return
  }
  loop.func private @pa(%x: memref<2x4xf32>, %y: memref<2x4xf32>) {
    loop.return
  }
  loop.func private @te_concat_2x8xf32_loop(%a: memref<2x4xf32>, %b: memref<2x4xf32>, %y: memref<2x8xf32>) {
    loop.return
  }

  // A fire module: block 0 from @conv_a, blocks 1-2 from @conv_b (offset 1 x 4 x 4 x 16).
  // CHECK-LABEL: loop.func @fire(
  // CHECK-SAME:      %x: memref<1x1x4x4x16xf32>, %out0: memref<1x1x4x4x16xf32>)
  // CHECK-NEXT:    %y = loop.alloc : memref<1x3x4x4x16xf32>
  // CHECK-NEXT:    %0 = builtin.unrealized_conversion_cast %y : memref<1x3x4x4x16xf32> to !llvm.ptr
  // CHECK-NEXT:    %a = builtin.unrealized_conversion_cast %0 : !llvm.ptr to memref<1x1x4x4x16xf32>
  // CHECK-NEXT:    loop.call @conv_a(%x, %a)
  // CHECK-NEXT:    %1 = llvm.getelementptr inbounds %0[256] : (!llvm.ptr) -> !llvm.ptr, f32
  // CHECK-NEXT:    %b = builtin.unrealized_conversion_cast %1 : !llvm.ptr to memref<1x2x4x4x16xf32>
  // CHECK-NEXT:    loop.call @conv_b(%x, %b)
  // CHECK-NEXT:    loop.call @use(%y, %out0)
  // CHECK-NEXT:    loop.free %y
  // CHECK-NEXT:    loop.return
  graph.func @fire(%x: tensor<1x1x4x4x16xf32>) -> tensor<1x1x4x4x16xf32> attributes {force_pure} {
    %a = graph.call_loop @conv_a(%x) : (tensor<1x1x4x4x16xf32>) -> tensor<1x1x4x4x16xf32>
    %b = graph.call_loop @conv_b(%x) : (tensor<1x1x4x4x16xf32>) -> tensor<1x2x4x4x16xf32>
    %y = graph.call_loop @te_concat_1x3x4x4x16xf32_loop(%a, %b) {lamina.concatenation} : (tensor<1x1x4x4x16xf32>, tensor<1x2x4x4x16xf32>) -> tensor<1x3x4x4x16xf32>
    %z = graph.call_loop @use(%y) : (tensor<1x3x4x4x16xf32>) -> tensor<1x1x4x4x16xf32>
    graph.return %z : tensor<1x1x4x4x16xf32>
  }

  // The concatenation is the result: the producers write the caller's output.
  // CHECK-LABEL: loop.func @returned(
  // CHECK-NEXT:    %0 = builtin.unrealized_conversion_cast %out0 : memref<1x3x4x4x16xf32> to !llvm.ptr
  // CHECK-NEXT:    %a = builtin.unrealized_conversion_cast %0 : !llvm.ptr to memref<1x1x4x4x16xf32>
  // CHECK-NEXT:    loop.call @conv_a(%x, %a)
  // CHECK-NEXT:    %1 = llvm.getelementptr inbounds %0[256] : (!llvm.ptr) -> !llvm.ptr, f32
  // CHECK-NEXT:    %b = builtin.unrealized_conversion_cast %1 : !llvm.ptr to memref<1x2x4x4x16xf32>
  // CHECK-NEXT:    loop.call @conv_b(%x, %b)
  // CHECK-NEXT:    loop.return
  graph.func @returned(%x: tensor<1x1x4x4x16xf32>) -> tensor<1x3x4x4x16xf32> attributes {force_pure} {
    %a = graph.call_loop @conv_a(%x) : (tensor<1x1x4x4x16xf32>) -> tensor<1x1x4x4x16xf32>
    %b = graph.call_loop @conv_b(%x) : (tensor<1x1x4x4x16xf32>) -> tensor<1x2x4x4x16xf32>
    %y = graph.call_loop @te_concat_1x3x4x4x16xf32_loop(%a, %b) {lamina.concatenation} : (tensor<1x1x4x4x16xf32>, tensor<1x2x4x4x16xf32>) -> tensor<1x3x4x4x16xf32>
    graph.return %y : tensor<1x3x4x4x16xf32>
  }

  // An inception block as wide as its input %p: plan-memory would give the
  // concatenation %p's slot, which the producers still read; it gets a buffer
  // of its own (no lamina.storage), allocated before the first producer.
  // CHECK-LABEL: loop.func @block(
  // CHECK-NEXT:    %p = loop.alloc : memref<1x3x4x4x16xf32>
  // CHECK-NEXT:    loop.call @widen(%x, %p)
  // CHECK-NEXT:    %y = loop.alloc : memref<1x3x4x4x16xf32>
  // CHECK-NEXT:    %0 = builtin.unrealized_conversion_cast %y : memref<1x3x4x4x16xf32> to !llvm.ptr
  // CHECK-NEXT:    %a = builtin.unrealized_conversion_cast %0 : !llvm.ptr to memref<1x1x4x4x16xf32>
  // CHECK-NEXT:    loop.call @narrow_a(%p, %a)
  // CHECK-NEXT:    %1 = llvm.getelementptr inbounds %0[256] : (!llvm.ptr) -> !llvm.ptr, f32
  // CHECK-NEXT:    %b = builtin.unrealized_conversion_cast %1 : !llvm.ptr to memref<1x2x4x4x16xf32>
  // CHECK-NEXT:    loop.call @narrow_b(%p, %b)
  // CHECK-NEXT:    loop.free %p
  // CHECK-NEXT:    loop.call @use(%y, %out0)
  // CHECK-NEXT:    loop.free %y
  // CHECK-NEXT:    loop.return
  graph.func @block(%x: tensor<1x1x4x4x16xf32>) -> tensor<1x1x4x4x16xf32> attributes {force_pure} {
    %p = graph.call_loop @widen(%x) : (tensor<1x1x4x4x16xf32>) -> tensor<1x3x4x4x16xf32>
    %a = graph.call_loop @narrow_a(%p) : (tensor<1x3x4x4x16xf32>) -> tensor<1x1x4x4x16xf32>
    %b = graph.call_loop @narrow_b(%p) : (tensor<1x3x4x4x16xf32>) -> tensor<1x2x4x4x16xf32>
    %y = graph.call_loop @te_concat_1x3x4x4x16xf32_loop(%a, %b) {lamina.concatenation} : (tensor<1x1x4x4x16xf32>, tensor<1x2x4x4x16xf32>) -> tensor<1x3x4x4x16xf32>
    %z = graph.call_loop @use(%y) : (tensor<1x3x4x4x16xf32>) -> tensor<1x1x4x4x16xf32>
    graph.return %z : tensor<1x1x4x4x16xf32>
  }

  // %a is read after the concatenation too: a copy, as before.
  // CHECK-LABEL: loop.func @shared(
  // CHECK-NOT:     llvm.getelementptr
  // CHECK:         loop.call @te_concat_1x3x4x4x16xf32_loop(%a, %b, %y)
  graph.func @shared(%x: tensor<1x1x4x4x16xf32>) -> tensor<1x1x4x4x16xf32> attributes {force_pure} {
    %a = graph.call_loop @conv_a(%x) : (tensor<1x1x4x4x16xf32>) -> tensor<1x1x4x4x16xf32>
    %b = graph.call_loop @conv_b(%x) : (tensor<1x1x4x4x16xf32>) -> tensor<1x2x4x4x16xf32>
    %y = graph.call_loop @te_concat_1x3x4x4x16xf32_loop(%a, %b) {lamina.concatenation} : (tensor<1x1x4x4x16xf32>, tensor<1x2x4x4x16xf32>) -> tensor<1x3x4x4x16xf32>
    %z = graph.call_loop @use(%y) : (tensor<1x3x4x4x16xf32>) -> tensor<1x1x4x4x16xf32>
    %w = graph.call_loop @add(%z, %a) : (tensor<1x1x4x4x16xf32>, tensor<1x1x4x4x16xf32>) -> tensor<1x1x4x4x16xf32>
    graph.return %w : tensor<1x1x4x4x16xf32>
  }

  // 40 logical channels in 3 blocks: the output has padding (the inputs' channels
  // are not whole blocks in it). A copy, as before.
  // CHECK-LABEL: loop.func @padded(
  // CHECK-NOT:     llvm.getelementptr
  // CHECK:         loop.call @te_concat_1x3x4x4x16xf32_1_loop(%a, %b, %y)
  graph.func @padded(%x: tensor<1x1x4x4x16xf32>) -> tensor<1x1x4x4x16xf32> attributes {force_pure} {
    %a = graph.call_loop @conv_a(%x) : (tensor<1x1x4x4x16xf32>) -> tensor<1x1x4x4x16xf32>
    %b = graph.call_loop @conv_b(%x) : (tensor<1x1x4x4x16xf32>) -> tensor<1x2x4x4x16xf32>
    %y = graph.call_loop @te_concat_1x3x4x4x16xf32_1_loop(%a, %b) {lamina.concatenation} : (tensor<1x1x4x4x16xf32>, tensor<1x2x4x4x16xf32>) -> tensor<1x3x4x4x16xf32>
    %z = graph.call_loop @use(%y) : (tensor<1x3x4x4x16xf32>) -> tensor<1x1x4x4x16xf32>
    graph.return %z : tensor<1x1x4x4x16xf32>
  }

  // The same call without the mark: a kernel that may compute anything. Left alone.
  // CHECK-LABEL: loop.func @unmarked(
  // CHECK-NOT:     llvm.getelementptr
  // CHECK:         loop.call @te_concat_1x3x4x4x16xf32_loop(%a, %b, %y)
  // CHECK-NOT:     lamina.concatenation
  // CHECK:         loop.return
  graph.func @unmarked(%x: tensor<1x1x4x4x16xf32>) -> tensor<1x1x4x4x16xf32> attributes {force_pure} {
    %a = graph.call_loop @conv_a(%x) : (tensor<1x1x4x4x16xf32>) -> tensor<1x1x4x4x16xf32>
    %b = graph.call_loop @conv_b(%x) : (tensor<1x1x4x4x16xf32>) -> tensor<1x2x4x4x16xf32>
    %y = graph.call_loop @te_concat_1x3x4x4x16xf32_loop(%a, %b) : (tensor<1x1x4x4x16xf32>, tensor<1x2x4x4x16xf32>) -> tensor<1x3x4x4x16xf32>
    %z = graph.call_loop @use(%y) : (tensor<1x3x4x4x16xf32>) -> tensor<1x1x4x4x16xf32>
    graph.return %z : tensor<1x1x4x4x16xf32>
  }

  // Two rows of 4 + 4: each input is two ranges of the output. A copy, as before.
  // CHECK-LABEL: loop.func @batch(
  // CHECK-NOT:     llvm.getelementptr
  // CHECK:         loop.call @te_concat_2x8xf32_loop(%a, %b, %out0)
  graph.func @batch(%x: tensor<2x4xf32>) -> tensor<2x8xf32> attributes {force_pure} {
    %a = graph.call_loop @pa(%x) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %b = graph.call_loop @pa(%x) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %y = graph.call_loop @te_concat_2x8xf32_loop(%a, %b) {lamina.concatenation} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
    graph.return %y : tensor<2x8xf32>
  }
}

// OFF-LABEL: loop.func @fire(
// OFF-NOT:     llvm.getelementptr
// OFF:         loop.call @te_concat_1x3x4x4x16xf32_loop(%a, %b, %y)
// OFF-LABEL: loop.func @returned(
// OFF:         loop.call @te_concat_1x3x4x4x16xf32_loop(%a, %b, %out0)
