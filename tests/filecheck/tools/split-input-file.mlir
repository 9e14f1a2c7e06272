// RUN: lamina-opt %s --split-input-file | filecheck %s
// RUN: lamina-opt %s --split-input-file -o %t && filecheck %s < %t
// RUN: lamina-opt %s --split-input-file --print-op-generic | lamina-opt --split-input-file | filecheck %s

// Each chunk is parsed and printed on its own, separated by the split marker.

func.func @first() {
  func.return
}

// CHECK:      func.func @first()
// CHECK:      {{//[ ]-----}}
// CHECK:      func.func @second(%{{.*}}: i32) -> i32

// -----

func.func @second(%a: i32) -> i32 {
  func.return %a : i32
}

// -----

// An empty chunk is an empty module, as in MLIR.
// CHECK:      {{//[ ]-----}}
// CHECK-NEXT: builtin.module {
// CHECK-NEXT: }
