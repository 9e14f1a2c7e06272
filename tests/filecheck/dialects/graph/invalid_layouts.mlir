// RUN: lamina-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Bad layout constraints: on a layout_transform, on a function boundary.

graph.func @not_injective(%a: tensor<4x4xf32>) {
  // expected-error @+1 {{constraint map (d0, d1) -> ((d0 + d1)) is not injective on the operand shape [4, 4] (two elements would share a slot)}}
  %0 = graph.layout_transform %a {constraint = #lamina.constraint<affine_map<(d0, d1) -> (d0 + d1)>, 0.0 : f32>} : (tensor<4x4xf32>) -> tensor<7xf32>
  graph.return
}
// CHECK: is not injective on the operand shape [4, 4]

// -----

graph.func @padded_extent(%a: tensor<3xf32>) {
  // A result `e mod 8` has extent 8 (padding), `e floordiv 8` has ceil(3/8) = 1.
  // expected-error @+1 {{result shape [1, 3] is smaller than the map's image [1, 8]: it would lose elements (mark the op `crop` to drop the padding)}}
  %0 = graph.layout_transform %a {constraint = #lamina.constraint<affine_map<(d0) -> (d0 floordiv 8, d0 mod 8)>, 0.0 : f32>} : (tensor<3xf32>) -> tensor<1x3xf32>
  graph.return
}
// CHECK: result shape [1, 3] is smaller than the map's image [1, 8]

// -----

graph.func @crop_too_big(%a: tensor<1x8xf32>) {
  // expected-error @+1 {{cropped result shape [9] exceeds the image [8] of the map}}
  %0 = graph.layout_transform %a {constraint = #lamina.constraint<affine_map<(d0, d1) -> (d0 * 8 + d1)>, #lamina.undef>, crop} : (tensor<1x8xf32>) -> tensor<9xf32>
  graph.return
}
// CHECK: cropped result shape [9] exceeds the image [8] of the map

// -----

graph.func @logical_mismatch(%a: tensor<3xf32>) {
  // expected-error @+1 {{constraint logical shape [4] does not match the operand shape [3]}}
  %0 = graph.layout_transform %a {constraint = #lamina.constraint<affine_map<(d0) -> (d0 floordiv 8, d0 mod 8)>, 0.0 : f32, logical = array<i64: 4>>} : (tensor<3xf32>) -> tensor<1x8xf32>
  graph.return
}
// CHECK: constraint logical shape [4] does not match the operand shape [3]

// -----

// expected-error @+1 {{'lamina.constraint' of parameter #0: constraint map (d0, d1) -> (d0, d1) has 2 dimensions and 2 results but the tensor has rank 3}}
graph.func @boundary_rank(%x: tensor<2x4x8xf32> {lamina.constraint = #lamina.constraint<affine_map<(d0, d1) -> (d0, d1)>, 0.0 : f32>}) {
  graph.return
}
// CHECK: 'lamina.constraint' of parameter #0: constraint map (d0, d1) -> (d0, d1) has 2 dimensions and 2 results but the tensor has rank 3

// -----

// expected-error @+1 {{'lamina.constraint' of result #0: constraint map (d0, d1) -> ((d0 mod 2), d1) is not injective}}
graph.func @boundary_injective(%x: tensor<2x8xf32>) -> (tensor<2x8xf32> {lamina.constraint = #lamina.constraint<affine_map<(d0, d1) -> (d0 mod 2, d1)>, 0.0 : f32>}) {
  graph.return %x : tensor<2x8xf32>
}
// CHECK: 'lamina.constraint' of result #0: constraint map (d0, d1) -> ((d0 mod 2), d1) is not injective

// -----

// expected-error @+1 {{'lamina.constraint' of parameter #0: pad value type i32 does not match the element type f32}}
graph.func @boundary_pad_type(%x: tensor<2x8xf32> {lamina.constraint = #lamina.constraint<affine_map<(d0) -> (d0 floordiv 8, d0 mod 8)>, 0 : i32>}) {
  graph.return
}
// CHECK: 'lamina.constraint' of parameter #0: pad value type i32 does not match the element type f32

// -----

// The logical-shape form of a boundary: injectivity is checked on that shape.
// expected-error @+1 {{'lamina.constraint' of parameter #0: constraint map (d0, d1) -> ((d0 + d1)) is not injective}}
te.func @te_boundary(%x: tensor<7xf32> {lamina.constraint = #lamina.constraint<affine_map<(d0, d1) -> (d0 + d1)>, 0.0 : f32, logical = array<i64: 4, 4>>}) -> tensor<7xf32> {
  te.return %x : tensor<7xf32>
}
// CHECK: 'lamina.constraint' of parameter #0: constraint map (d0, d1) -> ((d0 + d1)) is not injective

// -----

// expected-error @+1 {{'lamina.constraint' of parameter #0: constraint map (d0) -> ((d0 floordiv 8), (d0 mod 8)) has 1 dimensions and 2 results but the tensor has rank 3}}
loop.func @loop_boundary(%x: memref<1x2x8xf32> {lamina.constraint = #lamina.constraint<affine_map<(d0) -> (d0 floordiv 8, d0 mod 8)>, 0.0 : f32>}) {
  loop.return
}
// CHECK: has 1 dimensions and 2 results but the tensor has rank 3

// -----

graph.func @blocked_conv_blocks(%x: tensor<1x1x4x4x8xf32>, %w: tensor<1x1x3x3x4x8xf32>) {
  // expected-error @+1 {{data block 8 must equal the kernel input block 4 (and be > 0)}}
  %y = graph.conv2d %x, %w {data_layout = "NCHW8c", kernel_layout = "OIHW4i8o"} : (tensor<1x1x4x4x8xf32>, tensor<1x1x3x3x4x8xf32>) -> tensor<1x1x2x2x8xf32>
  graph.return
}
// CHECK: data block 8 must equal the kernel input block 4

// -----

graph.func @blocked_grouped_not_depthwise(%x: tensor<1x2x4x4x8xf32>, %w: tensor<2x2x3x3x1x8xf32>) {
  // expected-error @+1 {{a blocked conv2d with groups > 1 must be depthwise: data N x C/8 x H x W x 8, weight C/8 x 1 x KH x KW x 1 x 8, got data 1x2x4x4x8 and weight 2x2x3x3x1x8}}
  %y = graph.conv2d %x, %w {groups = 2 : i64, data_layout = "NCHW8c", kernel_layout = "OIHW1i8o"} : (tensor<1x2x4x4x8xf32>, tensor<2x2x3x3x1x8xf32>) -> tensor<1x2x2x2x8xf32>
  graph.return
}
// CHECK: a blocked conv2d with groups > 1 must be depthwise

// -----

// A blocked grouped conv2d (`OIHW8i8o`, groups > 1): each output block reads
// B whole input blocks of its group; 2 blocks of 2 reads is one group, not 2.
graph.func @blocked_grouped_reads(%x: tensor<1x2x4x4x8xf32>, %w: tensor<2x2x3x3x8x8xf32>) {
  // expected-error @+1 {{a blocked grouped conv2d needs data N x C/8 x H x W x 8 and weight C/8 x B x KH x KW x 8 x 8 with B dividing C/8 (B > 1: groups = C/8 / B), got data 1x2x4x4x8, weight 2x2x3x3x8x8 and groups = 2}}
  %y = graph.conv2d %x, %w {groups = 2 : i64, data_layout = "NCHW8c", kernel_layout = "OIHW8i8o"} : (tensor<1x2x4x4x8xf32>, tensor<2x2x3x3x8x8xf32>) -> tensor<1x2x2x2x8xf32>
  graph.return
}
// CHECK: a blocked grouped conv2d needs data N x C/8

// -----

graph.func @blocked_grouped_blocks(%x: tensor<1x3x4x4x8xf32>, %w: tensor<2x1x3x3x8x8xf32>) {
  // expected-error @+1 {{a blocked grouped conv2d needs data N x C/8 x H x W x 8 and weight C/8 x B x KH x KW x 8 x 8 with B dividing C/8 (B > 1: groups = C/8 / B), got data 1x3x4x4x8, weight 2x1x3x3x8x8 and groups = 6}}
  %y = graph.conv2d %x, %w {groups = 6 : i64, data_layout = "NCHW8c", kernel_layout = "OIHW8i8o"} : (tensor<1x3x4x4x8xf32>, tensor<2x1x3x3x8x8xf32>) -> tensor<1x2x2x2x8xf32>
  graph.return
}
// CHECK: got data 1x3x4x4x8, weight 2x1x3x3x8x8 and groups = 6

// -----

graph.func @pool_rank(%x: tensor<2x4x4xf32>) {
  // expected-error @+1 {{pooling expects a 4-D NCHW (or 5-D NCHW<c>c) input, got 2x4x4}}
  %y = graph.max_pool2d %x {kernel = array<i64: 2, 2>} : (tensor<2x4x4xf32>) -> tensor<2x2x2xf32>
  graph.return
}
// CHECK: pooling expects a 4-D NCHW (or 5-D NCHW<c>c) input

// -----

graph.func @winograd_needs_3x3(%x: tensor<1x1x6x6x8xf32>, %w: tensor<1x1x5x5x8x8xf32>) {
  // expected-error @+1 {{lamina.algorithm = "winograd": it needs a 3x3 kernel, got 5x5}}
  %0 = graph.conv2d %x, %w {data_layout = "NCHW8c", kernel_layout = "OIHW8i8o", lamina.algorithm = "winograd"} : (tensor<1x1x6x6x8xf32>, tensor<1x1x5x5x8x8xf32>) -> tensor<1x1x2x2x8xf32>
  graph.return
}
// CHECK: it needs a 3x3 kernel, got 5x5

// -----

graph.func @winograd_needs_stride_1(%x: tensor<1x1x6x6x8xf32>, %w: tensor<1x1x3x3x8x8xf32>) {
  // expected-error @+1 {{lamina.algorithm = "winograd": it needs strides and dilation 1}}
  %0 = graph.conv2d %x, %w {strides = array<i64: 2, 2>, data_layout = "NCHW8c", kernel_layout = "OIHW8i8o", lamina.algorithm = "winograd"} : (tensor<1x1x6x6x8xf32>, tensor<1x1x3x3x8x8xf32>) -> tensor<1x1x2x2x8xf32>
  graph.return
}
// CHECK: it needs strides and dilation 1

// -----

graph.func @winograd_needs_blocked(%x: tensor<1x8x6x6xf32>, %w: tensor<8x8x3x3xf32>) {
  // expected-error @+1 {{lamina.algorithm = "winograd": it needs the channel-blocked layouts (NCHW<c>c, OIHW<c>i<o>o)}}
  %0 = graph.conv2d %x, %w {lamina.algorithm = "winograd"} : (tensor<1x8x6x6xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x4x4xf32>
  graph.return
}
// CHECK: it needs the channel-blocked layouts

// -----

graph.func @unknown_algorithm(%x: tensor<1x8x6x6xf32>, %w: tensor<8x8x3x3xf32>) {
  // expected-error @+1 {{lamina.algorithm must be one of 'direct', 'winograd', got "fft"}}
  %0 = graph.conv2d %x, %w {lamina.algorithm = "fft"} : (tensor<1x8x6x6xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x4x4xf32>
  graph.return
}
// CHECK: lamina.algorithm must be one of 'direct', 'winograd', got "fft"

// -----

// A negative offset drops an element unless the op crops: padding at the
// start is a positive offset in the forward map.
graph.func @negative_without_crop(%a: tensor<4x4xf32>) {
  // expected-error @+1 {{constraint map result #0 ((((d0 * 4) + d1) + -1)) can be negative (minimum -1) on the operand shape [4, 4]: an element would land before slot 0 (padding at the start is a positive offset, e.g. `d0 + 1`; only a transform marked `crop` may drop what falls outside)}}
  %0 = graph.layout_transform %a {constraint = #lamina.constraint<affine_map<(d0, d1) -> (d0 * 4 + d1 - 1)>, #lamina.undef>} : (tensor<4x4xf32>) -> tensor<15xf32>
  graph.return
}
// CHECK: can be negative (minimum -1) on the operand shape [4, 4]

// -----

graph.func @negative_mod_wraps(%a: tensor<4xf32>) {
  // expected-error @+1 {{constraint map result #0 (((d0 + -1) mod 4)) wraps negative positions around to the end of the axis}}
  %0 = graph.layout_transform %a {constraint = #lamina.constraint<affine_map<(d0) -> ((d0 - 1) mod 4)>, 0.0 : f32>} : (tensor<4xf32>) -> tensor<4xf32>
  graph.return
}
// CHECK: wraps negative positions around to the end of the axis

// -----

graph.func @longer_mod(%a: tensor<6xf32>) {
  // expected-error @+1 {{result dimension #1 is `(d0 mod 4)`: its extent is 4, got 5 (only a result that is not a `mod` may be declared longer than the image to pad after the data)}}
  %0 = graph.layout_transform %a {constraint = #lamina.constraint<affine_map<(d0) -> (d0 floordiv 4, d0 mod 4)>, 0.0 : f32>} : (tensor<6xf32>) -> tensor<2x5xf32>
  graph.return
}
// CHECK: result dimension #1 is `(d0 mod 4)`: its extent is 4, got 5

// -----

graph.func @crop_left_too_big(%a: tensor<4x4xf32>) {
  // The image of `d0 * 4 + d1 - 1` on 4x4 is [-1, 14]: 15 slots from 0.
  // expected-error @+1 {{cropped result shape [16] exceeds the image [15] of the map}}
  %0 = graph.layout_transform %a {constraint = #lamina.constraint<affine_map<(d0, d1) -> (d0 * 4 + d1 - 1)>, #lamina.undef>, crop} : (tensor<4x4xf32>) -> tensor<16xf32>
  graph.return
}
// CHECK: cropped result shape [16] exceeds the image [15] of the map

// -----

// A stored buffer holds every logical element: a negative offset cannot describe it.
// expected-error @+1 {{'lamina.constraint' of parameter #0: constraint map (d0) -> (((d0 + -1) floordiv 4), ((d0 + -1) mod 4)) puts the first element before slot 0 (result #0 has offset -1): every logical element is stored, so padding at the start is a positive offset (e.g. `d0 + 1`)}}
graph.func @boundary_negative(%x: tensor<4x4xf32> {lamina.constraint = #lamina.constraint<affine_map<(d0) -> ((d0 - 1) floordiv 4, (d0 - 1) mod 4)>, 0.0 : f32, logical = array<i64: 14>>}) {
  graph.return
}
// CHECK: puts the first element before slot 0 (result #0 has offset -1)

// -----

// The same on a kernel's buffer: padding before the data is a positive offset.
// expected-error @+1 {{'lamina.constraint' of parameter #0: constraint map (d0) -> ((d0 + -2)) puts the first element before slot 0 (result #0 has offset -2)}}
loop.func @loop_boundary_negative(%x: memref<8xf32> {lamina.constraint = #lamina.constraint<affine_map<(d0) -> (d0 - 2)>, 0.0 : f32, logical = array<i64: 6>>}) {
  loop.return
}
// CHECK: constraint map (d0) -> ((d0 + -2)) puts the first element before slot 0
