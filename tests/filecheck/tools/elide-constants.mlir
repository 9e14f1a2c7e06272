// RUN: lamina-opt %s --mlir-elide-elementsattrs-if-larger 4 | filecheck %s
// RUN: lamina-opt %s --mlir-elide-elementsattrs-if-larger 4 | not lamina-opt 2>&1 | filecheck %s --check-prefix=REPARSE
// RUN: lamina-opt %s | filecheck %s --check-prefix=FULL

// Constants of more than N elements print as MLIR's elided marker, so an
// imported model's IR reads like its structure; small ones print in full.
// The elided text says so when it is parsed again.
graph.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %w = graph.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %b = graph.constant dense<[0.5, 0.25, 0.125]> : tensor<3xf32>
  %y = graph.mul %x, %w : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %z = graph.add %y, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  graph.return %z : tensor<2x3xf32>
}

// CHECK:      %w = graph.constant dense_resource<__elided__> : tensor<2x3xf32>
// CHECK-NEXT: %b = graph.constant dense<[5.000000e-01, 2.500000e-01, 1.250000e-01]> : tensor<3xf32>

// REPARSE: error: this constant's value was elided when the IR was printed

// FULL: %w = graph.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00], [4.000000e+00, 5.000000e+00, 6.000000e+00]]> : tensor<2x3xf32>
