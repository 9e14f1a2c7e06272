// RUN: sed 's/attributes {lamina.phase/attributes {lamina.targets = {cpu = #lamina.target<"cpu", {isa = "sapphirerapids", cores = 1 : i64}>}, lamina.phase/' %s | lamina-opt -p schedule-register-block | filecheck %s
// RUN: sed 's/attributes {lamina.phase/attributes {lamina.targets = {cpu = #lamina.target<"cpu", {isa = "znver4", cores = 1 : i64}>}, lamina.phase/' %s | lamina-opt -p schedule-register-block | filecheck %s --check-prefix=ZEN4
// RUN: sed 's/attributes {lamina.phase/attributes {lamina.targets = {cpu = #lamina.target<"cpu", {isa = "avx2", cores = 1 : i64}>}, lamina.phase/' %s | lamina-opt -p schedule-register-block | filecheck %s --check-prefix=AVX2

// A small-M matmul whose B is read along its rows (a dense layer with its
// weights passed as a parameter): 32 rows are 4 register blocks of 8 x 32
// on AVX-512. On an Intel AVX-512 core (`pack_min_row_blocks` 4: its L2
// streamer does not follow a panel whose rows lie 2 KiB or more apart) the
// 64 x 32 panel of each column block is copied into a contiguous buffer
// before the row blocks; on Zen 4 (32) it is read in place; the AVX2 build
// (8 at 256 bits) reads it in place too: 5 blocks of 6 x 16 and a tail.

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @dense(%a: memref<32x64xf32>, %b: memref<64x512xf32>, %c: memref<32x512xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    %c512 = arith.constant 512 : index
    %zero = arith.constant 0.0 : f32
    loop.for %i = %c0 to %c32 step %c1 kind(parallel) {
      loop.for %j = %c0 to %c512 step %c1 kind(vectorized) {
        loop.store %zero, %c[%i, %j] : memref<32x512xf32>
      }
      loop.for %k = %c0 to %c64 step %c1 {
        loop.for %j2 = %c0 to %c512 step %c1 kind(vectorized) {
          %x = loop.load %a[%i, %k] : memref<32x64xf32>
          %y = loop.load %b[%k, %j2] : memref<64x512xf32>
          %p = arith.mulf %x, %y : f32
          %s = loop.load %c[%i, %j2] : memref<32x512xf32>
          %t = arith.addf %s, %p : f32
          loop.store %t, %c[%i, %j2] : memref<32x512xf32>
        }
      }
    }
    loop.return
  }
}

// CHECK-LABEL: loop.func @dense
// CHECK:         loop.for %[[JO:.*]] = %c0 to %c512 step %c32 kind(parallel) {
// CHECK-NEXT:      %[[P:.*]] = loop.alloc {scope = "local"} : memref<64x32xf32>
// CHECK:           loop.for %{{.*}} = %c0 to %c32 step %c8 {
// CHECK:             loop.for %{{.*}} = %c0 to %c64 step %c1 {
// CHECK:               loop.load %[[P]][

// ZEN4-LABEL: loop.func @dense
// ZEN4-NOT:     loop.alloc
// ZEN4:         loop.for %{{.*}} = %c0 to %c512 step %c32 kind(parallel) {
// ZEN4-NEXT:      loop.for %{{.*}} = %c0 to %c32 step %c8 {
// ZEN4-NOT:     loop.alloc
// ZEN4:           loop.load %b[

// AVX2-LABEL: loop.func @dense
// AVX2-NOT:     loop.alloc
// AVX2:         loop.for %{{.*}} = %c0 to %c512 step %c16 kind(parallel) {
// AVX2-NEXT:      loop.for %{{.*}} = %c0 to %c30 step %c6 {
// AVX2-NOT:     loop.alloc
// AVX2:           loop.load %b[
