// RUN: sed 's/attributes {lamina.phase/attributes {lamina.targets = {cpu = #lamina.target<"cpu", {isa = "sapphirerapids", cores = 1 : i64}>}, lamina.phase/' %s | lamina-opt -p 'schedule-register-block{pack_max_bytes=65536}' | filecheck %s
// RUN: sed 's/attributes {lamina.phase/attributes {lamina.targets = {cpu = #lamina.target<"cpu", {isa = "znver4", cores = 1 : i64}>}, lamina.phase/' %s | lamina-opt -p 'schedule-register-block{pack_max_bytes=65536}' | filecheck %s --check-prefix=ZEN4
// RUN: sed 's/attributes {lamina.phase/attributes {lamina.targets = {cpu = #lamina.target<"cpu", {isa = "avx2", cores = 1 : i64}>}, lamina.phase/' %s | lamina-opt -p 'schedule-register-block{pack_max_bytes=65536}' | filecheck %s --check-prefix=AVX2

// A matmul whose A (512 x 64 floats, 128 KiB) is larger than the packed
// panels may be (`pack_max_bytes`, pinned here to 64 KiB, half of an L2 of
// 128 KiB): on a core with two 512-bit FMA pipes (`matmul_panel_group` 4)
// each packed panel holds 4 column blocks of 32 (4 x 64 x 32 floats, one
// contiguous 64 x 32 panel per block), and every 8-row block computes the 4
// blocks one after the other on the rows of A it has just read. Zen 4 and
// the AVX2 build keep one column block per panel.

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @mm(%a: memref<512x64xf32>, %b: memref<64x256xf32>, %c: memref<512x256xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %c256 = arith.constant 256 : index
    %c512 = arith.constant 512 : index
    %zero = arith.constant 0.0 : f32
    loop.for %i = %c0 to %c512 step %c1 kind(parallel) {
      loop.for %j = %c0 to %c256 step %c1 kind(vectorized) {
        loop.store %zero, %c[%i, %j] : memref<512x256xf32>
      }
      loop.for %k = %c0 to %c64 step %c1 {
        loop.for %j2 = %c0 to %c256 step %c1 kind(vectorized) {
          %x = loop.load %a[%i, %k] : memref<512x64xf32>
          %y = loop.load %b[%k, %j2] : memref<64x256xf32>
          %p = arith.mulf %x, %y : f32
          %s = loop.load %c[%i, %j2] : memref<512x256xf32>
          %t = arith.addf %s, %p : f32
          loop.store %t, %c[%i, %j2] : memref<512x256xf32>
        }
      }
    }
    loop.return
  }
}

// CHECK-LABEL: loop.func @mm
// CHECK:       loop.for %[[JO:.*]] = %{{.*}} to %{{.*}} step %c128 kind(parallel) {
// CHECK-NEXT:    %[[P:.*]] = loop.alloc {scope = "local"} : memref<4x64x32xf32>
// CHECK-NEXT:    loop.for %[[R:.*]] = %{{.*}} to %c64 step %c1 {
// CHECK-NEXT:      loop.for %[[BO:.*]] = %{{.*}} to %c128 step %c32 {
// CHECK-NEXT:        loop.for %[[L:.*]] = %{{.*}} to %c32 step %c1 kind(vectorized) {
// CHECK:               %[[V:.*]] = loop.load %{{.*}}[%[[R]], %{{.*}}] : memref<64x256xf32>
// CHECK-NEXT:          %[[B:.*]] = arith.divui %[[BO]], %c32 : index
// CHECK-NEXT:          loop.store %[[V]], %[[P]][%[[B]], %[[R]], %[[L]]] : memref<4x64x32xf32>
// CHECK:         loop.for %{{.*}} = %{{.*}} to %c512 step %c8 {
// CHECK:           loop.for %[[JB:.*]] = %{{.*}} to %c128 step %c32 {
// CHECK-NEXT:        loop.for %{{.*}} = %{{.*}} to %c32 step %c1 kind(vectorized) {
// CHECK:             loop.for %[[K:.*]] = %{{.*}} to %c64 step %c1 {
// CHECK-NEXT:          loop.for %[[JL:.*]] = %{{.*}} to %c32 step %c1 kind(vectorized) {
// CHECK:                 %[[W:.*]] = arith.divui %[[JB]], %c32 : index
// CHECK-NEXT:            loop.load %[[P]][%[[W]], %[[K]], %[[JL]]] : memref<4x64x32xf32>
// CHECK:         loop.free %[[P]] : memref<4x64x32xf32>

// ZEN4-LABEL: loop.func @mm
// ZEN4:       loop.for %{{.*}} = %{{.*}} to %{{.*}} step %c32 kind(parallel) {
// ZEN4-NEXT:    loop.alloc {scope = "local"} : memref<64x32xf32>
// ZEN4-NOT:     memref<4x64x32xf32>

// AVX2-LABEL: loop.func @mm
// AVX2:       loop.for %{{.*}} = %{{.*}} to %{{.*}} step %c16 kind(parallel) {
// AVX2-NEXT:    loop.alloc {scope = "local"} : memref<64x16xf32>
// AVX2-NOT:     x64x16xf32>
