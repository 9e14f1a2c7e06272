// RUN: lamina-opt %s --split-input-file -p legalize | filecheck %s

// A constant matmul rhs is stored pre-packed for the register-blocked
// micro-kernel (kernels/linalg.py): panels of NR columns
// (NR = 32 with 512-bit vectors, the block `schedule` picks for 64x256),
// `P[j / 32, k, j % 32] = B[k, j]`, computed at compile time. The kernel's
// parameter records the layout as its constraint and the call passes the
// packed constant instead of B.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>, lamina.targets = {cpu = #lamina.target<"cpu", {vector_bits = 512 : i64, vector_registers = 32 : i64}>}} {
  graph.func @packed(%a: tensor<64x128xf32>) -> tensor<64x256xf32> {
    %b = graph.constant dense<0.5> : tensor<128x256xf32>
    %0 = graph.matmul %a, %b : (tensor<64x128xf32>, tensor<128x256xf32>) -> tensor<64x256xf32>
    graph.return %0 : tensor<64x256xf32>
  }
}

// CHECK-LABEL: graph.func @packed
// CHECK-NEXT:    %[[P:.*]] = graph.constant dense<5.000000e-01> : tensor<8x128x32xf32>
// CHECK-NEXT:    graph.call_te @[[K:.*]](%a, %[[P]]) : (tensor<64x128xf32>, tensor<8x128x32xf32>) -> tensor<64x256xf32>
// CHECK:       te.func private @[[K]](%in0: tensor<64x128xf32>, %in2: tensor<8x128x32xf32> {lamina.constraint = #lamina.constraint<affine_map<(d0, d1) -> ((d1 floordiv 32), d0, (d1 mod 32))>, 0.000000e+00 : f32, logical = array<i64: 128, 256>>})
// CHECK:         %[[JB:.*]] = arith.divui %i1, %{{.*}} : index
// CHECK-NEXT:    %[[R:.*]] = arith.remui %i1, %{{.*}} : index
// CHECK-NEXT:    te.read %in2[%[[JB]], %k0, %[[R]]] : tensor<8x128x32xf32>

// -----

// A rhs passed as a parameter, one a single column block covers (N = 16) and
// a batched rhs are read as they are.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>, lamina.targets = {cpu = #lamina.target<"cpu", {vector_bits = 512 : i64, vector_registers = 32 : i64}>}} {
  graph.func @unpacked(%a: tensor<64x128xf32>, %b: tensor<128x256xf32>, %c: tensor<2x128x64xf32>) -> (tensor<64x256xf32>, tensor<64x16xf32>, tensor<2x64x64xf32>) {
    %n = graph.constant dense<0.5> : tensor<128x16xf32>
    %0 = graph.matmul %a, %b : (tensor<64x128xf32>, tensor<128x256xf32>) -> tensor<64x256xf32>
    %1 = graph.matmul %a, %n : (tensor<64x128xf32>, tensor<128x16xf32>) -> tensor<64x16xf32>
    %2 = graph.matmul %a, %c : (tensor<64x128xf32>, tensor<2x128x64xf32>) -> tensor<2x64x64xf32>
    graph.return %0, %1, %2 : tensor<64x256xf32>, tensor<64x16xf32>, tensor<2x64x64xf32>
  }
}

// CHECK-LABEL: graph.func @unpacked
// CHECK-NOT:     lamina.constraint
// CHECK-COUNT-3: te.return
// CHECK-NOT:     lamina.constraint

// -----

// A product of one row (a batch-1 classifier, 1280 -> 1000) has no register
// block; with two cores its threads share the columns in 4 blocks of 250
// (`vector_column_panel`, schedule/parallel.py), and the constant is stored in
// panels of one block each, `P[j / 250, k, j % 250]`. With one core, the
// `parallel_column_blocks_per_core` knob at 0, or too little work for a
// team (@small: 16 -> 1000, below `parallel_min_work`), it is read as it is.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>, lamina.targets = {cpu = #lamina.target<"cpu", {vector_bits = 512 : i64, vector_registers = 32 : i64, cores = 2 : i64}>}} {
  graph.func @classifier(%a: tensor<1x1280xf32>) -> tensor<1x1000xf32> {
    %b = graph.constant dense<0.5> : tensor<1280x1000xf32>
    %0 = graph.matmul %a, %b : (tensor<1x1280xf32>, tensor<1280x1000xf32>) -> tensor<1x1000xf32>
    graph.return %0 : tensor<1x1000xf32>
  }
}

// CHECK-LABEL: graph.func @classifier
// CHECK-NEXT:    %[[P:.*]] = graph.constant dense<5.000000e-01> : tensor<4x1280x250xf32>
// CHECK-NEXT:    graph.call_te @[[K:.*]](%a, %[[P]]) : (tensor<1x1280xf32>, tensor<4x1280x250xf32>) -> tensor<1x1000xf32>
// CHECK:       te.func private @[[K]](%in0: tensor<1x1280xf32>, %in2: tensor<4x1280x250xf32> {lamina.constraint = #lamina.constraint<affine_map<(d0, d1) -> ((d1 floordiv 250), d0, (d1 mod 250))>, 0.000000e+00 : f32, logical = array<i64: 1280, 1000>>})
// CHECK:         %[[JB:.*]] = arith.divui %i1, %{{.*}} : index
// CHECK-NEXT:    %[[R:.*]] = arith.remui %i1, %{{.*}} : index
// CHECK-NEXT:    te.read %in2[%[[JB]], %k0, %[[R]]] : tensor<4x1280x250xf32>

// -----

builtin.module attributes {lamina.phase = #lamina.phase<optimization>, lamina.targets = {cpu = #lamina.target<"cpu", {vector_bits = 512 : i64, vector_registers = 32 : i64, cores = 1 : i64}>}} {
  graph.func @one_core(%a: tensor<1x1280xf32>) -> tensor<1x1000xf32> {
    %b = graph.constant dense<0.5> : tensor<1280x1000xf32>
    %0 = graph.matmul %a, %b : (tensor<1x1280xf32>, tensor<1280x1000xf32>) -> tensor<1x1000xf32>
    graph.return %0 : tensor<1x1000xf32>
  }
}

// CHECK-LABEL: graph.func @one_core
// CHECK-NOT:     lamina.constraint
// CHECK:         te.read %in1[%k0, %i1] : tensor<1280x1000xf32>

// -----

builtin.module attributes {lamina.phase = #lamina.phase<optimization>, lamina.targets = {cpu = #lamina.target<"cpu", {vector_bits = 512 : i64, vector_registers = 32 : i64, cores = 2 : i64, parallel_column_blocks_per_core = 0 : i64}>}} {
  graph.func @off(%a: tensor<1x1280xf32>) -> tensor<1x1000xf32> {
    %b = graph.constant dense<0.5> : tensor<1280x1000xf32>
    %0 = graph.matmul %a, %b : (tensor<1x1280xf32>, tensor<1280x1000xf32>) -> tensor<1x1000xf32>
    graph.return %0 : tensor<1x1000xf32>
  }
}

// CHECK-LABEL: graph.func @off
// CHECK-NOT:     lamina.constraint
// CHECK:         te.read %in1[%k0, %i1] : tensor<1280x1000xf32>

// -----

builtin.module attributes {lamina.phase = #lamina.phase<optimization>, lamina.targets = {cpu = #lamina.target<"cpu", {vector_bits = 512 : i64, vector_registers = 32 : i64, cores = 2 : i64}>}} {
  graph.func @small(%a: tensor<1x16xf32>) -> tensor<1x1000xf32> {
    %b = graph.constant dense<0.5> : tensor<16x1000xf32>
    %0 = graph.matmul %a, %b : (tensor<1x16xf32>, tensor<16x1000xf32>) -> tensor<1x1000xf32>
    graph.return %0 : tensor<1x1000xf32>
  }
}

// CHECK-LABEL: graph.func @small
// CHECK-NOT:     lamina.constraint
// CHECK:         te.read %in1[%k0, %i1] : tensor<16x1000xf32>
