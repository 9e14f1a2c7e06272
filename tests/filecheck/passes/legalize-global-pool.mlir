// RUN: lamina-opt %s -p legalize | filecheck %s
// RUN: sed 's/vector_registers = 16/vector_registers = 32/' %s | lamina-opt -p legalize | filecheck %s --check-prefix=ONE
// RUN: sed 's/isa = "avx2"/isa = "avx2", global_pool_partial_sums = 1 : i64/' %s | lamina-opt -p legalize | filecheck %s --check-prefix=ONE

// A global average pool on a channel-blocked input keeps several independent
// sums per channel block (`global_pool_partial_sums`: 8 with 16 vector
// registers, the largest divisor of the width up to it): the first stage sums
// columns `q*P + p` into `part[n, cb, p*8 + ci]`, its vectorized row P whole
// vectors read contiguously (P registers, P independent add chains); the
// second adds the P partial sums; the third divides by H*W. At width 56 P is
// 8; at width 7 (@small) P is 7. With 32 registers (AVX-512), or the knob at
// 1, it is one sum per block, as before.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>, lamina.targets = {cpu = #lamina.target<"cpu", {isa = "avx2", vector_registers = 16 : i64}>}} {
  graph.func @pool(%x: tensor<1x18x56x56x8xf32>) -> tensor<1x18x1x1x8xf32> {
    %0 = graph.global_avg_pool2d %x : (tensor<1x18x56x56x8xf32>) -> tensor<1x18x1x1x8xf32>
    graph.return %0 : tensor<1x18x1x1x8xf32>
  }
  graph.func @small(%x: tensor<1x4x7x7x8xf32>) -> tensor<1x4x1x1x8xf32> {
    %0 = graph.global_avg_pool2d %x : (tensor<1x4x7x7x8xf32>) -> tensor<1x4x1x1x8xf32>
    graph.return %0 : tensor<1x4x1x1x8xf32>
  }
}

// CHECK-LABEL: te.func private @te_global_avg_pool2d_1x18x1x1x8xf32(%in0: tensor<1x18x56x56x8xf32>) -> tensor<1x18x1x1x8xf32> {
// CHECK:         %[[PART:.*]] = te.compute [1, 18, 64] reduce [56, 7] combiner(sum) (%[[N:.*]], %[[C:.*]], %[[J:.*]], %[[H:.*]], %[[Q:.*]]) {
// CHECK:           %[[P:.*]] = arith.divui %[[J]], %[[EIGHT:.*]] : index
// CHECK:           %[[CI:.*]] = arith.remui %[[J]], %[[EIGHT]] : index
// CHECK:           %[[QP:.*]] = arith.muli %[[Q]], %{{.*}} : index
// CHECK:           %[[W:.*]] = arith.addi %[[QP]], %[[P]] : index
// CHECK:           te.read %in0[%[[N]], %[[C]], %[[H]], %[[W]], %[[CI]]] : tensor<1x18x56x56x8xf32>
// CHECK:         } : tensor<1x18x64xf32>
// CHECK:         %[[SUM:.*]] = te.compute [1, 18, 8] reduce [8] combiner(sum)
// CHECK:           te.read %[[PART]][%{{.*}}, %{{.*}}, %{{.*}}] : tensor<1x18x64xf32>
// CHECK:         te.compute [1, 18, 1, 1, 8]
// CHECK:           te.read %[[SUM]]
// CHECK:           arith.divf %{{.*}}, %{{.*}} : f32

// CHECK-LABEL: te.func private @te_global_avg_pool2d_1x4x1x1x8xf32(%in0: tensor<1x4x7x7x8xf32>) -> tensor<1x4x1x1x8xf32> {
// CHECK:         te.compute [1, 4, 56] reduce [7, 1] combiner(sum)
// CHECK:         te.compute [1, 4, 8] reduce [7] combiner(sum)

// ONE-LABEL: te.func private @te_global_avg_pool2d_1x18x1x1x8xf32(
// ONE:         te.compute [1, 18, 8] reduce [56, 56] combiner(sum)
// ONE-NOT:     reduce [8]
// ONE:         arith.divf
