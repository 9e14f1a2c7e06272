// RUN: lamina-opt %s --compile-to lowering --print-debuginfo | filecheck %s --check-prefix=LOOP
// RUN: lamina-opt %s --compile-to build --print-debuginfo | filecheck %s --check-prefix=LLVM
// RUN: lamina-opt %s --compile-to build --print-debuginfo | filecheck %s --check-prefix=ALL
// RUN: lamina-opt %s --compile-to lowering --print-debuginfo | lamina-opt --compile-to build --print-debuginfo | filecheck %s --check-prefix=LLVM

// Locations survive every pass: each op a pass creates carries the location
// of the op it came from, down to the loop and llvm levels; a kernel fuse-ops
// made of several ops has all their lines (a fused location, in order), so
// diagnostics and debug output after any phase point at the source line.

graph.func @main(%x: tensor<4x8xf32>, %w: tensor<8x3xf32>) -> tensor<4x3xf32> {
  %y = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %z = graph.relu %y : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %n = graph.neg %z : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %r = graph.relu %n : (tensor<4x3xf32>) -> tensor<4x3xf32>
  graph.return %r : tensor<4x3xf32>
}

// Nothing is left without a location, block arguments included.
// ALL-NOT:   loc(unknown)
// ALL:       llvm.func @main(%x: !llvm.ptr {{.*}}loc("{{.*}}locations.mlir":11:1)

// LOOP:      loop.func @main
// LOOP:        loop.call @[[K:te_[a-z0-9_]*]]({{.*}} loc(fused["{{.*}}locations.mlir":12:3, "{{.*}}locations.mlir":13:3, "{{.*}}locations.mlir":14:3, "{{.*}}locations.mlir":15:3])
// LOOP:      loop.func private @[[K]]
// LOOP:        loop.for
// LOOP:          arith.mulf {{.*}} loc({{.*}}locations.mlir":{{1[2-5]}}:3{{.*}})
// LOOP:          loop.store {{.*}} loc({{.*}}locations.mlir":{{1[2-5]}}:3{{.*}})
// LOOP:      } loc(fused["{{.*}}locations.mlir":12:3, {{.*}}])

// LLVM:      llvm.func @main
// LLVM:        llvm.call @[[K:te_[a-z0-9_]*]]({{.*}} loc(fused["{{.*}}locations.mlir":12:3, {{.*}}])
// LLVM:      llvm.func internal @[[K]]
// LLVM:        llvm.fmul {{.*}} loc({{.*}}locations.mlir":{{1[2-5]}}:3{{.*}})
// LLVM:        llvm.store {{.*}} loc({{.*}}locations.mlir":{{1[2-5]}}:3{{.*}})
