// Found by the differential test: an f64 -> f16 cast made LLVM call __truncdfhf2,
// which the JIT resolved to address 0 (SIGSEGV). libgcc_s is now loaded, and any
// symbol still missing is a compile-time diagnostic (backends/jit_symbols.py).
graph.func @main(%p1: tensor<f64>) -> tensor<f64> {
  %v2 = graph.cast %p1 : (tensor<f64>) -> tensor<f16>
  %v3 = graph.cast %v2 : (tensor<f16>) -> tensor<f64>
  graph.return %v3 : tensor<f64>
}
