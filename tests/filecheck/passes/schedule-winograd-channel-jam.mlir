// RUN: lamina-opt %s -p 'schedule-register-block{vector_bits=512 vector_registers=32 cores=2 winograd_jam_l1_bytes=0}' | filecheck %s
// RUN: lamina-opt %s -p 'schedule-register-block{vector_bits=512 vector_registers=32 cores=2 winograd_jam_l1_bytes=49152}' | filecheck %s --check-prefix=INTEL
// RUN: lamina-opt %s -p 'schedule-register-block{vector_bits=512 vector_registers=32 cores=2 winograd_channel_jam=0}' | filecheck %s --check-prefix=RULE
// RUN: lamina-opt %s -p 'schedule-register-block{vector_bits=256 vector_registers=16 cores=2}' | filecheck %s --check-prefix=AVX2
// The module pins a Zen 4 target (32 KiB L1d, 1 MiB L2): the blocking below is
// sized for those caches, so the test does not depend on the host's.

// Winograd's products (kernels/conv_winograd.py) as lower-te emits them:
// M[a, b, kb, t, ki] += V[a, b, t, cb, ci] * U[a, b, kb, cb, ci, ki], 16 tiles
// (a 7x7 image), 256 input channels. `winograd_channel_jam` (schedule/winograd.py,
// 4 with 32 registers) jams up to 4 output-channel blocks per broadcast of V:
// 4 of 8 blocks with 4 rows of tiles (16 accumulators), 3 of 6 blocks. The
// pointwise convolutions' rule (`winograd_channel_jam=0`) keeps one block here
// (4 weight vectors' slices over 256 channels overflow L1) and 8 rows (2 blocks
// of 8 where the host's L1 holds 2 blocks' weights and 8 rows' input: 48 KiB). With 16
// registers the knob is 0 and the rule jams everywhere: 2 blocks of 2 rows.
// With `winograd_jam_l1_bytes` at a 48 KiB L1 (Intel AVX-512, two FMA ports)
// 4 blocks' slice (4 x 256 x 16 f32, 64 KiB) overflows it: 2 blocks of 8 rows;
// 3 blocks' (48 KiB) fits, and stays.

// INTEL-LABEL: loop.func @product_7x7(
// INTEL:         loop.for %kbo = %c0 to %c8 step %c2 {
// INTEL:           loop.for %to = %c0 to %c16 step %c8 {
// INTEL-COUNT-16:    loop.store %init, %m[%a, %b, %kb{{(_[0-9])?}}, %t
// INTEL:             loop.for %l2 = %c0 to %c16 step %c1 kind(vectorized) {
// INTEL-COUNT-8:       loop.load %v[%a, %b, %t
// INTEL-COUNT-2:       loop.load %u[%a, %b, %kb
// INTEL-COUNT-16:      arith.mulf
// INTEL-LABEL: loop.func @product_six_blocks(
// INTEL:         loop.for %kbo = %c0 to %c6 step %c3 {

builtin.module attributes {lamina.phase = #lamina.phase<lowering>, lamina.targets = {cpu = #lamina.target<"cpu", {isa = "znver4", l1d_bytes = 32768 : i64, l2_bytes = 1048576 : i64, l3_bytes = 33554432 : i64}>}} {
  loop.func @product_7x7(%v: memref<4x4x16x16x16xf32>, %u: memref<4x4x8x16x16x16xf32>, %m: memref<4x4x8x16x16xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %init = arith.constant 0.000000e+00 : f32
    loop.for %a = %c0 to %c4 step %c1 kind(parallel) {
      loop.for %b = %c0 to %c4 step %c1 {
        loop.for %kb = %c0 to %c8 step %c1 {
          loop.for %t = %c0 to %c16 step %c1 {
            loop.for %l = %c0 to %c16 step %c1 kind(vectorized) {
              loop.store %init, %m[%a, %b, %kb, %t, %l] : memref<4x4x8x16x16xf32>
            }
            loop.for %k0 = %c0 to %c16 step %c1 {
              loop.for %k1 = %c0 to %c16 step %c1 {
                loop.for %l2 = %c0 to %c16 step %c1 kind(vectorized) {
                  %x = loop.load %v[%a, %b, %t, %k0, %k1] : memref<4x4x16x16x16xf32>
                  %w = loop.load %u[%a, %b, %kb, %k0, %k1, %l2] : memref<4x4x8x16x16x16xf32>
                  %p = arith.mulf %x, %w : f32
                  %acc = loop.load %m[%a, %b, %kb, %t, %l2] : memref<4x4x8x16x16xf32>
                  %s = arith.addf %acc, %p : f32
                  loop.store %s, %m[%a, %b, %kb, %t, %l2] : memref<4x4x8x16x16xf32>
                }
              }
            }
          }
        }
      }
    }
    loop.return
  }
  loop.func @product_six_blocks(%v: memref<4x4x16x16x16xf32>, %u: memref<4x4x6x16x16x16xf32>, %m: memref<4x4x6x16x16xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c6 = arith.constant 6 : index
    %c16 = arith.constant 16 : index
    %init = arith.constant 0.000000e+00 : f32
    loop.for %a = %c0 to %c4 step %c1 kind(parallel) {
      loop.for %b = %c0 to %c4 step %c1 {
        loop.for %kb = %c0 to %c6 step %c1 {
          loop.for %t = %c0 to %c16 step %c1 {
            loop.for %l = %c0 to %c16 step %c1 kind(vectorized) {
              loop.store %init, %m[%a, %b, %kb, %t, %l] : memref<4x4x6x16x16xf32>
            }
            loop.for %k0 = %c0 to %c16 step %c1 {
              loop.for %k1 = %c0 to %c16 step %c1 {
                loop.for %l2 = %c0 to %c16 step %c1 kind(vectorized) {
                  %x = loop.load %v[%a, %b, %t, %k0, %k1] : memref<4x4x16x16x16xf32>
                  %w = loop.load %u[%a, %b, %kb, %k0, %k1, %l2] : memref<4x4x6x16x16x16xf32>
                  %p = arith.mulf %x, %w : f32
                  %acc = loop.load %m[%a, %b, %kb, %t, %l2] : memref<4x4x6x16x16xf32>
                  %s = arith.addf %acc, %p : f32
                  loop.store %s, %m[%a, %b, %kb, %t, %l2] : memref<4x4x6x16x16xf32>
                }
              }
            }
          }
        }
      }
    }
    loop.return
  }
}

// CHECK-LABEL: loop.func @product_7x7(
// CHECK:         loop.for %kbo = %c0 to %c8 step %c4 {
// CHECK:           loop.for %to = %c0 to %c16 step %c4 {
// CHECK-COUNT-16:    loop.store %init, %m[%a, %b, %kb{{(_[0-9])?}}, %t
// CHECK:             loop.for %l2 = %c0 to %c16 step %c1 kind(vectorized) {
// CHECK-COUNT-4:       loop.load %v[%a, %b, %t
// CHECK-COUNT-4:       loop.load %u[%a, %b, %kb
// CHECK-COUNT-16:      arith.mulf
// CHECK-LABEL: loop.func @product_six_blocks(
// CHECK:         loop.for %kbo = %c0 to %c6 step %c3 {
// CHECK:           loop.for %to = %c0 to %c16 step %c4 {

// RULE-LABEL: loop.func @product_7x7(
// RULE:         loop.for %kb{{o?}} = %c0 to %c8 step %c{{[12]}} {
// RULE:           loop.for %to = %c0 to %c16 step %c8 {

// AVX2-LABEL: loop.func @product_7x7(
// AVX2:         loop.for %kbo = %c0 to %c8 step %c2 {
// AVX2:           loop.for %to = %c0 to %c16 step %c2 {
