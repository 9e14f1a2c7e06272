// RUN: lamina-opt %s --split-input-file -p 'schedule-parallel{cores=2 parallel_rows_first=4}' | filecheck %s
// RUN: lamina-opt %s --split-input-file -p 'schedule-parallel{cores=2 parallel_rows_first=1}' | filecheck %s --check-prefix=BYTES

// `share_rows` with `parallel_rows_first` = 4 (`rows_first_crosses_less`): rows first
// unless the buffers read by the block only hold more than 4x the bytes of those read
// at an index that depends on the row. @slice reads its 8 KiB input at the block and
// the row and no weights: rows first (with 1, `rows_first_reads_less`, which counts
// only buffers indexed by one of the two, keeps its blocks). @depthwise reads 8 KiB of
// input at both and 2 KiB of weights by the block (2 KiB <= 4 x 8 KiB): rows first.
// @heavy reads 64 KiB of weights by the block against 8 KiB of input (> 4x): blocks.
// @peeled holds its rows in three loops (a depthwise convolution's rows peeled at
// the padding): `merge_peeled_rows` makes them one loop over all 16 rows, each row
// running its part under `loop.if` (16 rows: at least 8 per core), which `share_rows`
// then collapses rows first
// (with 1, BYTES, the three loops stay and the blocks are shared). @narrow is @slice
// writing rows of 14 floats (56 bytes, `_whole_lines`): two threads splitting the rows
// would write the same cache line at every boundary, so it keeps its blocks.

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @peeled(%x: memref<4x16x16xf32>, %y: memref<4x16x16xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c15 = arith.constant 15 : index
    %c16 = arith.constant 16 : index
    loop.for %b = %c0 to %c4 step %c1 kind(parallel) {
      loop.for %h = %c0 to %c1 step %c1 {
        %a = loop.load %x[%b, %h, %c0] : memref<4x16x16xf32>
        loop.store %a, %y[%b, %h, %c0] : memref<4x16x16xf32>
      }
      loop.for %h = %c1 to %c15 step %c1 {
        %a = loop.load %x[%b, %h, %c0] : memref<4x16x16xf32>
        %p = arith.mulf %a, %a : f32
        loop.store %p, %y[%b, %h, %c0] : memref<4x16x16xf32>
      }
      loop.for %h = %c15 to %c16 step %c1 {
        %a = loop.load %x[%b, %h, %c0] : memref<4x16x16xf32>
        %p = arith.addf %a, %a : f32
        loop.store %p, %y[%b, %h, %c0] : memref<4x16x16xf32>
      }
    }
    loop.return
  }

  loop.func @slice(%x: memref<4x64x16xf32>, %y: memref<2x64x16xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c16 = arith.constant 16 : index
    %c64 = arith.constant 64 : index
    loop.for %b = %c0 to %c2 step %c1 kind(parallel) {
      loop.for %h = %c0 to %c64 step %c1 {
        loop.for %v = %c0 to %c16 step %c1 kind(vectorized) {
          %a = loop.load %x[%b, %h, %v] : memref<4x64x16xf32>
          loop.store %a, %y[%b, %h, %v] : memref<2x64x16xf32>
        }
      }
    }
    loop.return
  }

  loop.func @depthwise(%x: memref<2x64x16xf32>, %w: memref<2x16x16xf32>, %y: memref<2x64x16xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c16 = arith.constant 16 : index
    %c64 = arith.constant 64 : index
    loop.for %b = %c0 to %c2 step %c1 kind(parallel) {
      loop.for %h = %c0 to %c64 step %c1 {
        loop.for %v = %c0 to %c16 step %c1 kind(vectorized) {
          %a = loop.load %x[%b, %h, %v] : memref<2x64x16xf32>
          %k = loop.load %w[%b, %c0, %v] : memref<2x16x16xf32>
          %p = arith.mulf %a, %k : f32
          loop.store %p, %y[%b, %h, %v] : memref<2x64x16xf32>
        }
      }
    }
    loop.return
  }

  loop.func @heavy(%x: memref<2x64x16xf32>, %w: memref<2x512x16xf32>, %y: memref<2x64x16xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c16 = arith.constant 16 : index
    %c64 = arith.constant 64 : index
    loop.for %b = %c0 to %c2 step %c1 kind(parallel) {
      loop.for %h = %c0 to %c64 step %c1 {
        loop.for %v = %c0 to %c16 step %c1 kind(vectorized) {
          %a = loop.load %x[%b, %h, %v] : memref<2x64x16xf32>
          %k = loop.load %w[%b, %c0, %v] : memref<2x512x16xf32>
          %p = arith.mulf %a, %k : f32
          loop.store %p, %y[%b, %h, %v] : memref<2x64x16xf32>
        }
      }
    }
    loop.return
  }

  loop.func @narrow(%x: memref<4x64x14xf32>, %y: memref<2x64x14xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c14 = arith.constant 14 : index
    %c64 = arith.constant 64 : index
    loop.for %b = %c0 to %c2 step %c1 kind(parallel) {
      loop.for %h = %c0 to %c64 step %c1 {
        loop.for %v = %c0 to %c14 step %c1 kind(vectorized) {
          %a = loop.load %x[%b, %h, %v] : memref<4x64x14xf32>
          loop.store %a, %y[%b, %h, %v] : memref<2x64x14xf32>
        }
      }
    }
    loop.return
  }
}
// CHECK-LABEL: loop.func @peeled
// CHECK:         loop.for %b = %c0 to %c4 step %c1 kind(parallel) {
// CHECK-NEXT:      loop.for %h = %c0 to %c16 step %c1 kind(parallel) {
// CHECK-NEXT:        %[[TOP:.*]] = arith.cmpi ult, %h, %c1 : index
// CHECK-NEXT:        loop.if %[[TOP]] {
// CHECK-NEXT:          %{{.*}} = loop.load %x[%b, %h, %c0] : memref<4x16x16xf32>
// CHECK:             } else {
// CHECK-NEXT:          %[[MID:.*]] = arith.cmpi ult, %h, %c15 : index
// CHECK-NEXT:          loop.if %[[MID]] {
// CHECK:                 arith.mulf
// CHECK:               } else {
// CHECK:                 arith.addf
// CHECK:         } {lamina.rows_first}
// CHECK-LABEL: loop.func @slice
// CHECK:         loop.for %b = %c0 to %c2 step %c1 kind(parallel) {
// CHECK-NEXT:      loop.for %h = %c0 to %c64 step %c1 kind(parallel) {
// CHECK:         } {lamina.rows_first}
// CHECK-LABEL: loop.func @depthwise
// CHECK:         loop.for %h = %c0 to %c64 step %c1 kind(parallel) {
// CHECK:         } {lamina.rows_first}
// CHECK-LABEL: loop.func @heavy
// CHECK:         loop.for %h = %c0 to %c64 step %c1 kind(parallel) {
// CHECK-NOT:     lamina.rows_first
// CHECK:         loop.return
// CHECK-LABEL: loop.func @narrow
// CHECK:         loop.for %h = %c0 to %c64 step %c1 kind(parallel) {
// CHECK-NOT:     lamina.rows_first
// CHECK:         loop.return

// BYTES-LABEL:  loop.func @peeled
// BYTES:          loop.for %b = %c0 to %c4 step %c1 kind(parallel) {
// BYTES-NEXT:       loop.for %h = %c0 to %c1 step %c1 {
// BYTES-NOT:      loop.if
// BYTES-NOT:      lamina.rows_first
