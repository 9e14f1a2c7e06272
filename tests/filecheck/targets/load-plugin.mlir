// RUN: lamina-opt --load-plugin %S/../../plugin_pkg/scripts/fold_double_relu.py --list-passes | filecheck %s --check-prefix=LIST
// RUN: lamina-opt %s --load-plugin %S/../../plugin_pkg/scripts/fold_double_relu.py -p fold-double-relu | filecheck %s
// RUN: lamina-opt %s --load-plugin %S/../../plugin_pkg/scripts/fold_double_relu.py --load-plugin %S/Inputs/hook_targets.py --target relu-folder --compile-to optimization | filecheck %s
// RUN: lamina-opt %s --load-plugin %S/../../plugin_pkg/scripts/fold_double_relu.py --load-plugin %S/Inputs/hook_targets.py --target relu-folder --print-pipeline | filecheck %s --check-prefix=PIPE
// RUN: not lamina-opt %s --load-plugin %S/../../plugin_pkg/scripts/fold_double_relu.py -p lift-lambdas,legalize,lower-te,lower-graph,lower-to-llvm,fold-double-relu 2>&1 | filecheck %s --check-prefix=BUILD
// RUN: not lamina-opt %s --load-plugin %S/../../plugin_pkg/scripts/fold_double_relu.py -p lower-te 2>&1 | filecheck %s --check-prefix=REFUSE

// A pass from a script loaded with --load-plugin is a pass like any other:
// listed, run by -p, and usable as a target's hook in the default pipeline.
// It is a plain xDSL ModulePass, so it runs in every phase but build.

graph.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = graph.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  %b = graph.relu %a : (tensor<4xf32>) -> tensor<4xf32>
  graph.return %b : tensor<4xf32>
}
// LIST: | `fold-double-relu` | ingestion, optimization, lowering |
// CHECK:      %a = graph.relu %x
// CHECK-NEXT: graph.return {{.*}}%a
// PIPE:      [hooks: claim]
// PIPE-NEXT:   fold-double-relu   (hook claim (target relu-folder))
// A plain pass (no `produces`) is registered while the refusal names the transitions.
// REFUSE: error: pass 'lower-te' cannot run in phase 'ingestion' (it runs in: lowering); run 'lift-lambdas', then 'legalize' first
// BUILD: error: pass 'fold-double-relu' cannot run in phase 'build' (it runs in: ingestion, optimization, lowering); phases only move forward
