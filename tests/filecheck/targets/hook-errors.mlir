// RUN: not lamina-opt %s --load-plugin %S/Inputs/hook_targets.py --target breaker --compile-to lowering 2>&1 | filecheck %s --check-prefix=INVARIANT
// RUN: not lamina-opt %s --load-plugin %S/Inputs/hook_targets.py --target early --compile-to lowering 2>&1 | filecheck %s --check-prefix=PHASE
// RUN: not lamina-opt %s --load-plugin %S/Inputs/bad_hook_point.py 2>&1 | filecheck %s --check-prefix=POINT
// RUN: not lamina-opt %s --target cbals --compile-to lowering 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not lamina-opt %s --load-plugin no_such_plugin_module 2>&1 | filecheck %s --check-prefix=PLUGIN

// Hook passes run under the phase contracts of built-in passes, and every
// mistake of a target is a diagnostic naming it (exit status 1).

graph.func @main(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %m = graph.matmul %a, %b : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  graph.return %m : tensor<4x16xf32>
}

// A hook that breaks a phase invariant: named with its target and the invariant.
// INVARIANT: error: hook pass 'add-stray-func' of target 'breaker' (hook point optimization) broke an invariant: phase 'optimization' invariant 3 violated: 'func.func' is not allowed from phase optimization on
// INVARIANT: note: while running pass 'add-stray-func'

// A hook registered where its pass cannot run is refused when the pipeline is built.
// PHASE: error: hook pass 'lower-te' of target 'early' (hook point optimization) cannot run there: the hook point is in phase 'optimization', the pass runs in: lowering

// POINT: error: cannot load plugin '{{.*}}bad_hook_point.py': TargetError: target 'typo' registers a hook at unknown hook point 'optimisation' (did you mean 'optimization'?) (hook points: claim, optimization, lowering, build)

// UNKNOWN: error: unknown target 'cbals' (did you mean 'cblas'?) (known targets: cblas, cpu)

// PLUGIN: error: cannot load plugin 'no_such_plugin_module': ModuleNotFoundError: No module named 'no_such_plugin_module'
