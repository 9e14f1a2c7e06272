// RUN: lamina-opt %s --load-plugin %S/../targets/Inputs/hook_targets.py -p 'target-hook{target="stamper" point="optimization" index=1}' | filecheck %s
// RUN: lamina-opt %s --load-plugin %S/../targets/Inputs/hook_targets.py -p 'target-hook{target="stamper" point="build" index=0}' | filecheck %s --check-prefix=LATE
// RUN: lamina-opt %s --load-plugin %S/../targets/Inputs/hook_targets.py -p 'target-hook{target="stamper" point="optimization" index=0}' | filecheck %s --check-prefix=BYNAME
// RUN: not lamina-opt %s --load-plugin %S/../targets/Inputs/hook_targets.py -p 'target-hook{target="stamper" point="build" index=3}' 2>&1 | filecheck %s --check-prefix=INDEX
// RUN: not lamina-opt %s --load-plugin %S/../targets/Inputs/hook_targets.py -p 'target-hook{target="stamper" point="bulid" index=0}' 2>&1 | filecheck %s --check-prefix=POINT
// RUN: not lamina-opt %s -p 'target-hook{target="stampr" point="build" index=0}' 2>&1 | filecheck %s --check-prefix=TARGET
// RUN: not lamina-opt %s --load-plugin %S/../targets/Inputs/hook_targets.py -p 'lift-lambdas,legalize,lower-te,lower-graph,lower-to-llvm,target-hook{target="stamper" point="build" index=0}' 2>&1 | filecheck %s --check-prefix=BUILD
// RUN: not lamina-opt %s --load-plugin %S/../targets/Inputs/hook_targets.py -p 'target-hook{target="early" point="optimization" index=0}' 2>&1 | filecheck %s --check-prefix=PHASE
// RUN: sed -e 's/@main/@refuse_stamp/' %s | not lamina-opt - --load-plugin %S/../targets/Inputs/hook_targets.py -p 'target-hook{target="stamper" point="build" index=0}' 2>&1 | filecheck %s --check-prefix=FAIL

// target-hook runs the pass a target registered at a hook point, by
// position: the spelling --print-pipeline and reproducers use for a hook
// given as a pass instance, whose class `-p` does not know by name.

graph.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = graph.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  graph.return %a : tensor<4xf32>
}
// CHECK:  builtin.module attributes {test.stamp = "first"}
// LATE:   builtin.module attributes {test.stamp = "late"}
// A hook given by its -p spec (`cse`) runs too.
// BYNAME: graph.func @main
// BYNAME-NOT: test.stamp
// INDEX: error: target 'stamper' has 1 pass(es) at hook point 'build', no pass #3
// POINT: error: unknown hook point 'bulid' (hook points: claim, optimization, lowering, build)
// TARGET: error: unknown target 'stampr'
// BUILD: error: pass 'target-hook' cannot run in phase 'build' (it runs in: ingestion, optimization, lowering)
// The hooked pass keeps its own phase contract.
// PHASE: error: pass 'lower-te' cannot run in phase 'ingestion' (it runs in: lowering); run 'lift-lambdas', then 'legalize' first
// FAIL: error: test-stamp refuses a module with @refuse_stamp
// FAIL-NEXT: note: in hook pass 'test-stamp' of target 'stamper' (hook point build)
// FAIL-NEXT: note: while running pass 'target-hook'

