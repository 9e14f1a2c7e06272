// RUN: lamina-opt %s --pass-pipeline='builtin.module(canonicalize,cse)' | filecheck %s
// RUN: lamina-opt %s -p 'builtin.module(cse)' --print-pipeline | filecheck %s --check-prefix=PRINT
// RUN: not lamina-opt %s -p 'builtin.module(cse,bogus)' 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not lamina-opt %s -p 'func.func(cse)' 2>&1 | filecheck %s --check-prefix=ANCHOR

// MLIR's pipeline spelling is accepted: `builtin.module(...)` is the only
// anchor, since every Lamina pass runs on the whole module. Errors point
// into the spec as written; --print-pipeline shows what -p would run.

graph.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %b = graph.relu %a : (tensor<4xf32>) -> tensor<4xf32>
  %c = graph.relu %a : (tensor<4xf32>) -> tensor<4xf32>
  %d = graph.add %b, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  graph.return %d : tensor<4xf32>
}

// CHECK:      %b = graph.relu %a
// CHECK-NEXT: %d = graph.add %b, %b

// PRINT: -p 'cse'

// UNKNOWN:      <pass-pipeline>:1:20: error: unknown pass 'bogus'
// UNKNOWN-NEXT: builtin.module(cse,bogus)
// UNKNOWN-NEXT: {{^                   \^}}

// ANCHOR: <pass-pipeline>:1:1: error: unsupported pass anchor 'func.func'
