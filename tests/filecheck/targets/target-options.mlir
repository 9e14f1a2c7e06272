// A target given as NAME{option=N ...} is recorded with its options in
// `lamina.targets`, and the schedule reads the facts they override, whatever
// the host has: 256-bit vectors give 16-column blocks (two 8-lane vectors),
// 512-bit ones do not. Bad options are errors.
// RUN: lamina-opt %s --target 'cpu{vector_bits=256 cores=1}' --compile-to optimization | filecheck %s --check-prefix=ATTR
// RUN: lamina-opt %s --target 'cpu{vector_bits=256}' --compile-to lowering | filecheck %s --check-prefix=AVX2
// RUN: lamina-opt %s --target 'cpu{vector_bits=512}' --compile-to lowering | filecheck %s --check-prefix=AVX512
// RUN: not lamina-opt %s --target 'cpu{vector_bits=300}' -p canonicalize 2>&1 | filecheck %s --check-prefix=WIDTH
// RUN: not lamina-opt %s --target 'cpu{bogus=1}' -p canonicalize 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not lamina-opt %s --target 'cpu{cores=1' -p canonicalize 2>&1 | filecheck %s --check-prefix=SYNTAX

// ATTR: lamina.targets = {cpu = #lamina.target<"cpu", {vector_bits = 256 : i64, cores = 1 : i64}>}
// AVX2: loop.for %{{.*}} = %c0 to %c64 step %c16 kind(parallel)
// AVX512-NOT: step %c16 kind(parallel)
// AVX512: kind(parallel)
// WIDTH: error: target 'cpu': vector_bits must be 128, 256 or 512, not 300
// UNKNOWN: error: target 'cpu': unknown option 'bogus' (code-generation options:
// SYNTAX: error: bad target 'cpu{cores=1': the options do not end with '}'

builtin.module {
  graph.func @main(%x: tensor<64x64xf32>, %w: tensor<64x64xf32>) -> tensor<64x64xf32> {
    %y = graph.matmul %x, %w : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
    graph.return %y : tensor<64x64xf32>
  }
}
