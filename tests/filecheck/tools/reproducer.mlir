// RUN: not lamina-opt %s -p canonicalize,lift-lambdas --reproducer %t.mlir 2>&1 | filecheck %s
// RUN: filecheck %s --check-prefix=REPRO < %t.mlir
// RUN: not lamina-opt %t.mlir -p lift-lambdas 2>&1 | filecheck %s --check-prefix=AGAIN
// RUN: not lamina-opt %s -p lift-lambdas --print-ir-after-failure 2>&1 | filecheck %s --check-prefix=FAILED

// When a pass fails (here: `func.func` is not allowed once lift-lambdas has
// moved the module to phase optimization), lamina-opt writes the IR before the
// failing pass plus the pipeline that reproduces the failure.

func.func @f(%a: i32) -> i32 {
  func.return %a : i32
}

// CHECK:      reproducer.mlir:[[# @LINE - 4]]:1: error: phase 'optimization' invariant
// CHECK:      note: while running pass 'lift-lambdas'
// CHECK-NEXT: note: reproducer written to {{.*}}.mlir

// REPRO:      // configuration: -p 'lift-lambdas'
// REPRO-NEXT: // note: reproduce with: lamina-opt {{.*}} -p 'lift-lambdas'
// REPRO-NEXT: builtin.module {
// REPRO-NEXT:   func.func @f

// Locations in the reproducer point at the original file.
// AGAIN: reproducer.mlir:[[# @LINE - 14]]:1: error: phase 'optimization' invariant

// --print-ir-after-failure shows the IR the failing pass left behind.
// FAILED:      // -----// IR Dump After lift-lambdas Failed //----- //
// FAILED-NEXT: builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
// FAILED-NEXT:   func.func @f
