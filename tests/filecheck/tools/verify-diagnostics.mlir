// RUN: lamina-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Every MLIR line designator: @+N, @-N, @above, @below and none. Matched
// diagnostics are printed to stdout with their location in the whole file.

func.func @plus(%a: i32) -> i32 {
  // expected-error @+1 {{'func.return' op Expected arguments to have the same types}}
  func.return %a, %a : i32, i32
}
// CHECK: verify-diagnostics.mlir:[[# @LINE - 2]]:3: error: 'func.return' op Expected arguments to have the same types

// -----

func.func @minus(%a: i32) -> i32 {
  func.return %a, %a : i32, i32
  // expected-error@-1 {{'func.return' op}}
}
// CHECK: verify-diagnostics.mlir:[[# @LINE - 3]]:3: error: 'func.return' op

// -----

func.func @above(%a: i32) -> i32 {
  func.return %a, %a : i32, i32
  // expected-error @above {{got [i32, i32]}}
}
// CHECK: verify-diagnostics.mlir:[[# @LINE - 3]]:3: error: 'func.return' op

// -----

func.func @below(%a: i32) -> i32 {
  // expected-error @below {{must be the last operation}}
  func.return %a : i32
  // expected-error @below {{expected [i32]}}
  func.return %a, %a : i32, i32
}
// CHECK: verify-diagnostics.mlir:[[# @LINE - 4]]:3: error: 'func.return' op 'func.return' must be the last operation
// CHECK: verify-diagnostics.mlir:[[# @LINE - 3]]:3: error: 'func.return' op Expected arguments

// -----

// Parse errors are diagnostics too, with the chunk's line offset.
// expected-error @+1 {{Operation foo.bar is not registered}}
"foo.bar"() : () -> ()
// CHECK: verify-diagnostics.mlir:[[# @LINE - 1]]:10: error: Operation foo.bar is not registered

// -----

// Every failing op is reported, not only the first.
func.func @two(%a: i32) -> i32 {
  "func.return"(%a, %a) : (i32, i32) -> () // expected-error {{'func.return' op}}
}
func.func @three(%a: i32) -> i32 {
  "func.return"() : () -> () // expected-error {{got []}}
}
// CHECK: verify-diagnostics.mlir:[[# @LINE - 5]]:3: error: 'func.return' op
// CHECK: verify-diagnostics.mlir:[[# @LINE - 3]]:3: error: 'func.return' op

// -----

// A chunk without diagnostics prints its module.
func.func @fine() {
  func.return
}
// CHECK: func.func @fine()

// -----

// `expected-error-re`: `{{...}}` inside the text is a regular expression.
func.func @regex(%a: i32) -> i32 {
  // expected-error-re @+1 {{expected [i32], got [{{(i32(, )?)+}}]}}
  func.return %a, %a, %a : i32, i32, i32
}
// CHECK: verify-diagnostics.mlir:[[# @LINE - 2]]:3: error: 'func.return' op Expected arguments
