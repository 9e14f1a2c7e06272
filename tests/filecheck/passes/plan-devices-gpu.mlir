// A gpu/cpu program: planned and lowered (IR only) by lamina-opt, refused at
// compile time by the tools that would run it, naming the kind and its ops.
// RUN: lamina-opt %s -p lift-lambdas,plan-devices | filecheck %s
// RUN: lamina-opt %s --compile-to lowering | filecheck %s --check-prefix=LOWER
// RUN: not lamina-run %s --random-inputs 2>&1 | filecheck %s --check-prefix=REFUSE
// RUN: not lamina-compile %s -o %t.so 2>&1 | filecheck %s --check-prefix=REFUSE
// RUN: not lamina-opt %s --compile-to build 2>&1 | filecheck %s --check-prefix=BUILD

builtin.module {
  graph.func @main(%x: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<4xf32> {
    %a = graph.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %g = graph.on_device %a {device = #lamina.device<"gpu", 0>} : (tensor<4xf32>) -> tensor<4xf32>
    %r = graph.relu %g : (tensor<4xf32>) -> tensor<4xf32>
    %c = graph.device_copy %r {src = #lamina.device<"gpu", 0>, dst = #lamina.device<"cpu", 0>} : (tensor<4xf32>) -> tensor<4xf32>
    %y = graph.add %c, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    graph.return %y : tensor<4xf32>
  }
}
// CHECK-LABEL: graph.func @main(
// CHECK-SAME:      %[[X:[a-z0-9_]+]]: tensor<4xf32> {device = #lamina.device<"gpu", 0>}, %[[W:[a-z0-9_]+]]: tensor<4xf32> {device = #lamina.device<"gpu", 0>}) -> (tensor<4xf32> {device = #lamina.device<"cpu", 0>})
// CHECK-NEXT:    %[[X0:.*]] = graph.device_copy %[[X]] {src = #lamina.device<"gpu", 0>, dst = #lamina.device<"cpu", 0>
// CHECK-NEXT:    %[[A:.*]] = graph.mul %[[X]], %[[W]] {device = #lamina.device<"gpu", 0>}
// CHECK-NEXT:    %[[R:.*]] = graph.relu %[[A]] {device = #lamina.device<"gpu", 0>}
// CHECK-NEXT:    %[[C:.*]] = graph.device_copy %[[R]] {src = #lamina.device<"gpu", 0>, dst = #lamina.device<"cpu", 0>
// CHECK-NEXT:    graph.add %[[C]], %[[X0]] {device = #lamina.device<"cpu", 0>}

// LOWER:       loop.alloc {device = #lamina.device<"gpu", 0>}
// LOWER:       loop.call @te_{{.*}}mul{{.*}}_loop
// LOWER:       loop.copy {{.*}} {src = #lamina.device<"gpu", 0>, dst = #lamina.device<"cpu", 0>}
// LOWER:       loop.func private @te_{{.*}}mul{{.*}}_loop(%in0: memref<4xf32> {device = #lamina.device<"gpu", 0>}

// REFUSE: plan-devices-gpu.mlir:11:5: error: cannot compile for device kind 'gpu': no usable target compiles it (usable device kinds: cpu); ops placed on 'gpu': graph.func @main ({{.*}}), {{.*}}graph.mul ({{.*}}:11:5), graph.relu ({{.*}}:13:5), graph.device_copy

// lower-to-llvm generates host code only for usable kinds: it refuses too.
// BUILD: error: cannot compile for device kind 'gpu'
// BUILD: note: while running pass 'lower-to-llvm'
