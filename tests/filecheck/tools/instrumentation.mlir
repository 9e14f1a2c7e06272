// RUN: lamina-opt %s -p canonicalize,lift-lambdas --print-ir-after-all 2>&1 >/dev/null | filecheck %s --check-prefix=IR
// RUN: lamina-opt %s -p canonicalize,cse --pass-timing 2>&1 >/dev/null | filecheck %s --check-prefix=TIME
// RUN: rm -rf %t && lamina-opt %s -p lift-lambdas --dump-phases-to %t -o %t.out && filecheck %s --check-prefix=OPT < %t/1_optimization.mlir && filecheck %s --check-prefix=ING < %t/0_ingestion.mlir

// IR dumps and the timing report go to stderr, MLIR-style.

graph.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %e = graph.exp %a : (tensor<4xf32>) -> tensor<4xf32>
  graph.return %e : tensor<4xf32>
}

// IR:      // -----// IR Dump After canonicalize //----- //
// IR:      graph.exp
// IR:      // -----// IR Dump After lift-lambdas //----- //
// IR-NEXT: builtin.module attributes {lamina.phase = #lamina.phase<optimization>}

// TIME:      Execution time report
// TIME:      Total Execution Time:
// TIME:      ----Wall Time----  ----Name----
// TIME-NEXT: ({{ *[0-9.]+}}%)  canonicalize
// TIME-NEXT: ({{ *[0-9.]+}}%)  cse
// TIME-NEXT: ({{ *[0-9.]+}}%)  (verifier)
// TIME-NEXT: (100.0%)  Total

// OPT: builtin.module attributes {lamina.phase = #lamina.phase<optimization>}
// ING: builtin.module {
// ING: graph.exp
