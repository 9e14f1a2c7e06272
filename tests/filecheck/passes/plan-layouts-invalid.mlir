// A negative channel block is refused at the module, not ignored.
// RUN: not lamina-opt %s -p 'plan-layouts{block=-3}' 2>&1 | filecheck %s
// CHECK: error: 'builtin.module' op plan-layouts: block must be >= 1 (0: the target's), got -3
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
}
