// RUN: not lamina-opt %s --split-input-file --verify-diagnostics 2>&1 | filecheck %s

// An expectation that is not produced and a diagnostic that is not expected
// both fail the run (exit status 1) and are reported with their lines.

func.func @wrong_text(%a: i32) -> i32 {
  // expected-error @+1 {{this text is not in the message}}
  func.return %a, %a : i32, i32
}
// CHECK-DAG: verify-diagnostics-mismatch.mlir:8: error: expected error "this text is not in the message" was not produced
// CHECK-DAG: verify-diagnostics-mismatch.mlir:8:3: error: unexpected error: 'func.return' op Expected arguments

// -----

// expected-error @+2 {{wrong line}}
func.func @wrong_line(%a: i32) -> i32 {
  func.return %a : i32
}
// CHECK-DAG: verify-diagnostics-mismatch.mlir:17: error: expected error "wrong line" was not produced

// -----

// expected-warning @+1 {{severity must match too}}
"foo.bar"() : () -> ()
// CHECK-DAG: verify-diagnostics-mismatch.mlir:24: error: expected warning "severity must match too" was not produced
// CHECK-DAG: verify-diagnostics-mismatch.mlir:24:10: error: unexpected error: Operation foo.bar is not registered
