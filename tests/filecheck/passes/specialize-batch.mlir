// RUN: lamina-opt %s -p specialize-batch | filecheck %s
// RUN: lamina-opt %s -p 'specialize-batch{block=4}' | filecheck %s --check-prefix=BLOCK4
// RUN: lamina-opt %s --compile-to build | filecheck %s --check-prefix=LLVM

// A function over a dynamic batch (`?` leading dimension, `lamina.bounds`)
// becomes two static public bodies, a block of 8 samples and a 1-sample
// tail, recorded in `lamina.batch_entries`; lower-to-llvm then emits the
// entry @main(N, buffers...) looping over them. Static functions are left alone.

// CHECK: builtin.module attributes {{{.*}}lamina.batch_entries = {main = {symbol = "N", bounds = array<i64: 1, 64>, bodies = [@main__batch8, @main__batch1], sizes = array<i64: 8, 1>, params = array<i64: 1, 0, 0>, results = array<i64: 1>}}
// CHECK-NOT: graph.func @main(
// CHECK-LABEL: graph.func @main__batch8(%x: tensor<8x16xf32>, %w: tensor<16x4xf32>, %b: tensor<4xf32>) -> tensor<8x4xf32> {
// CHECK-NEXT:    %0 = graph.matmul %x, %w : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
// CHECK-NEXT:    %1 = graph.add %0, %b : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
// CHECK-NEXT:    %2 = graph.softmax %1 {axis = 1 : i64} : (tensor<8x4xf32>) -> tensor<8x4xf32>
// CHECK-NEXT:    graph.return %2 : tensor<8x4xf32>
// CHECK-LABEL: graph.func @main__batch1(%x: tensor<1x16xf32>, %w: tensor<16x4xf32>, %b: tensor<4xf32>) -> tensor<1x4xf32> {
// CHECK:         graph.softmax {{.*}} -> tensor<1x4xf32>
// CHECK-LABEL: graph.func @static(%a: tensor<2xf32>) -> tensor<2xf32>

// BLOCK4: bodies = [@main__batch4, @main__batch1], sizes = array<i64: 4, 1>
// BLOCK4: graph.func @main__batch4(%x: tensor<4x16xf32>

// The entry: N first, then the buffers; ⌊N/8⌋ calls of the block body, then
// N mod 8 calls of the tail, each on pointers advanced by whole samples (16
// floats of %x, 4 of the result); %w and %b are passed unchanged.
// LLVM-LABEL: llvm.func @main(%N: i64 {lamina.size = "N"}, %{{.*}}: !llvm.ptr {llvm.noalias, lamina.buffer = memref<?x16xf32>}, %{{.*}}: !llvm.ptr {llvm.noalias, lamina.buffer = memref<16x4xf32>}, %{{.*}}: !llvm.ptr {llvm.noalias, lamina.buffer = memref<4xf32>}, %{{.*}}: !llvm.ptr {llvm.noalias, lamina.buffer = memref<?x4xf32>})
// LLVM:        ^bb1(%[[I:.*]]: i64):
// LLVM-NEXT:     %[[B:.*]] = llvm.mlir.constant(8) : i64
// LLVM-NEXT:     %[[NEXT:.*]] = llvm.add %[[I]], %[[B]] overflow<nsw> : i64
// LLVM-NEXT:     %[[FITS:.*]] = llvm.icmp "ule" %[[NEXT]], %N : i64
// LLVM-NEXT:     llvm.cond_br %[[FITS]], ^bb2, ^bb{{[0-9]+}}(%[[I]] : i64)
// LLVM:          llvm.mlir.constant(16) : i64
// LLVM:          llvm.getelementptr
// LLVM:          llvm.mlir.constant(4) : i64
// LLVM:          llvm.getelementptr
// LLVM:          llvm.call @main__batch8(
// LLVM:          llvm.mlir.constant(1) : i64
// LLVM:          llvm.call @main__batch1(
// LLVM:          llvm.return

builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @main(%x: tensor<?x16xf32>, %w: tensor<16x4xf32>, %b: tensor<4xf32>) -> tensor<?x4xf32> attributes {lamina.bounds = {N = array<i64: 1, 64>}} {
    %0 = graph.matmul %x, %w : (tensor<?x16xf32>, tensor<16x4xf32>) -> tensor<?x4xf32>
    %1 = graph.add %0, %b : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
    %2 = graph.softmax %1 {axis = 1 : i64} : (tensor<?x4xf32>) -> tensor<?x4xf32>
    graph.return %2 : tensor<?x4xf32>
  }
  graph.func @static(%a: tensor<2xf32>) -> tensor<2xf32> {
    %0 = graph.relu %a : (tensor<2xf32>) -> tensor<2xf32>
    graph.return %0 : tensor<2xf32>
  }
}
