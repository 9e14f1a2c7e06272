// RUN: not lamina-opt %s --split-input-file --verify-diagnostics 2>&1 | filecheck %s

// As in mlir-opt, a diagnostic nobody expected fails the run, also in a file
// without any `expected-*` annotation: a negative test that forgot its
// annotation cannot pass silently.

func.func @f(%a: i32) -> i32 {
  func.return %a, %a : i32, i32
}
// CHECK: verify-diagnostics-unannotated.mlir:[[# @LINE - 2]]:3: error: unexpected error: 'func.return' op Expected arguments

// -----

"foo.bar"() : () -> ()
// CHECK: verify-diagnostics-unannotated.mlir:[[# @LINE - 1]]:10: error: unexpected error: Operation foo.bar is not registered
