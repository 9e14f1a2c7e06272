// RUN: lamina-opt %s --split-input-file --verify-diagnostics | filecheck %s

// A file without any `expected-*` annotation follows xdsl-opt: every
// diagnostic is printed to stdout (for CHECK lines) and the exit status is 0.

func.func @f(%a: i32) -> i32 {
  func.return %a, %a : i32, i32
}
// CHECK: verify-diagnostics-xdsl-style.mlir:[[# @LINE - 2]]:3: error: 'func.return' op Expected arguments

// -----

"foo.bar"() : () -> ()
// CHECK: verify-diagnostics-xdsl-style.mlir:[[# @LINE - 1]]:10: error: Operation foo.bar is not registered
