// RUN: lamina-opt %s --split-input-file -p 'legalize,lower-te,schedule' | filecheck %s

// A Winograd convolution whose transformed input V and products M (16 x 64 tiles
// x (8 + 8) channels, 64 KiB) exceed `winograd_chunk_bytes` (half the 64 KiB L2
// the module pins) runs in chunks of tile rows (kernels/conv_winograd.py,
// `winograd_chunks`): 2 groups (the 2 cores) of 2 chunks of 2 tile rows (16
// tiles). `schedule` (`chunk_winograd_stages`, schedule/winograd.py) gives the
// output transform the chunk loops -- output rows [4c, min(4c + 4, 16)) of chunk
// c = 2 p + s -- and fuses it with the input transform and the products: one
// parallel loop over the groups, a serial one over their chunks, in which V and
// M keep one chunk per group (storage folding). With the knob at 0 the stages
// run over the whole image, as before (@whole). With one core (@one_group) one
// group of 4 chunks, serial: V and M keep one chunk. The weight transform's loop
// over the 4 tile rows (a parameter's weights) does not take the input
// transform's 4 chunks for its own rows: the chunk's stages fuse first.

builtin.module attributes {lamina.phase = #lamina.phase<optimization>, lamina.targets = {cpu = #lamina.target<"cpu", {isa = "sapphirerapids", l1d_bytes = 49152 : i64, l2_bytes = 65536 : i64, cores = 2 : i64, parallel_min_work = 1 : i64, parallel_grain_work = 0 : i64}>}} {
  graph.func @chunks(%x: tensor<1x1x16x16x8xf32>, %w: tensor<1x1x3x3x8x8xf32>) -> tensor<1x1x16x16x8xf32> {
    %0 = graph.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>, data_layout = "NCHW8c", kernel_layout = "OIHW8i8o", lamina.algorithm = "winograd"} : (tensor<1x1x16x16x8xf32>, tensor<1x1x3x3x8x8xf32>) -> tensor<1x1x16x16x8xf32>
    graph.return %0 : tensor<1x1x16x16x8xf32>
  }
}

// -----

builtin.module attributes {lamina.phase = #lamina.phase<optimization>, lamina.targets = {cpu = #lamina.target<"cpu", {isa = "sapphirerapids", l1d_bytes = 49152 : i64, l2_bytes = 65536 : i64, cores = 1 : i64, parallel_min_work = 1 : i64, parallel_grain_work = 0 : i64}>}} {
  graph.func @one_group(%x: tensor<1x1x16x16x8xf32>, %w: tensor<1x1x3x3x8x8xf32>) -> tensor<1x1x16x16x8xf32> {
    %0 = graph.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>, data_layout = "NCHW8c", kernel_layout = "OIHW8i8o", lamina.algorithm = "winograd"} : (tensor<1x1x16x16x8xf32>, tensor<1x1x3x3x8x8xf32>) -> tensor<1x1x16x16x8xf32>
    graph.return %0 : tensor<1x1x16x16x8xf32>
  }
}

// -----

builtin.module attributes {lamina.phase = #lamina.phase<optimization>, lamina.targets = {cpu = #lamina.target<"cpu", {isa = "sapphirerapids", l1d_bytes = 49152 : i64, l2_bytes = 65536 : i64, cores = 2 : i64, parallel_min_work = 1 : i64, parallel_grain_work = 0 : i64, winograd_chunk_bytes = 0 : i64}>}} {
  graph.func @whole(%x: tensor<1x1x16x16x8xf32>, %w: tensor<1x1x3x3x8x8xf32>) -> tensor<1x1x16x16x8xf32> {
    %0 = graph.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>, data_layout = "NCHW8c", kernel_layout = "OIHW8i8o", lamina.algorithm = "winograd"} : (tensor<1x1x16x16x8xf32>, tensor<1x1x3x3x8x8xf32>) -> tensor<1x1x16x16x8xf32>
    graph.return %0 : tensor<1x1x16x16x8xf32>
  }
}

// CHECK-LABEL: graph.func @chunks
// CHECK-LABEL: loop.func private @te_conv2d_1x1x16x16x8xf32_loop(
// CHECK-DAG:     %[[V:.*]] = loop.alloc {scope = "local"} : memref<2x16x1x8xf32>
// CHECK-DAG:     %[[M:.*]] = loop.alloc {scope = "local"} : memref<2x4x4x1x16x8xf32>
// CHECK:         loop.for %[[P:.*]] = %c0 to %c2 step %c1 kind(parallel) {
// CHECK-NEXT:      loop.for %[[S:.*]] = %c0 to %c2 step %c1 {
// CHECK:             loop.store {{.*}}, %[[V]][%[[P]],
// CHECK:             loop.store {{.*}}, %[[M]][%[[P]],
// CHECK:           %[[FIRST:.*]] = arith.muli %[[P]], %c2
// CHECK-NEXT:      %[[CHUNK:.*]] = arith.addi %[[FIRST]], %[[S]]
// CHECK-NEXT:      %[[LO:.*]] = arith.muli %[[CHUNK]], %c4
// CHECK-NEXT:      %[[END:.*]] = arith.addi %[[LO]], %c4
// CHECK-NEXT:      %[[HI:.*]] = arith.minui %[[END]], %c16
// CHECK:           loop.for %{{.*}} = %[[LO]] to %[[HI]] step %c1 {
// CHECK:             loop.load %[[M]][%[[P]],
// CHECK:             loop.store {{.*}}, %out0[
// CHECK:     loop.free %[[V]]

// CHECK-LABEL: graph.func @one_group
// CHECK-LABEL: loop.func private @te_conv2d_1x1x16x16x8xf32_loop(
// CHECK-DAG:     %[[V1:.*]] = loop.alloc {scope = "local"} : memref<1x16x1x8xf32>
// CHECK-DAG:     %[[M1:.*]] = loop.alloc {scope = "local"} : memref<1x4x4x1x16x8xf32>
// CHECK:         loop.for %[[S1:.*]] = %c0 to %c4 step %c1 {
// CHECK:           loop.store {{.*}}, %[[V1]][%c0,
// CHECK:           loop.store {{.*}}, %[[M1]][%c0,
// CHECK:         %[[LO1:.*]] = arith.muli %[[S1]], %c4
// CHECK:         loop.load %[[M1]][

// CHECK-LABEL: graph.func @whole
// CHECK-LABEL: loop.func private @te_conv2d_1x1x16x16x8xf32_loop(
// CHECK:         loop.alloc {scope = "local"} : memref<4x4x1x64x8xf32>
// CHECK-NOT:     arith.minui
// CHECK:         loop.return
