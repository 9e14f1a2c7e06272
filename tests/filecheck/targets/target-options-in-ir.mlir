// Options recorded in the module's `lamina.targets` are checked like those
// of --target: an unknown one is a diagnostic, not a crash.
// RUN: not lamina-opt %s --compile-to lowering 2>&1 | filecheck %s

// CHECK: error: target 'cpu': unknown option 'vector_width'

builtin.module attributes {lamina.targets = {cpu = #lamina.target<"cpu", {vector_width = 256 : i64}>}} {
  graph.func @main(%x: tensor<64x64xf32>, %w: tensor<64x64xf32>) -> tensor<64x64xf32> {
    %y = graph.matmul %x, %w : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
    graph.return %y : tensor<64x64xf32>
  }
}
