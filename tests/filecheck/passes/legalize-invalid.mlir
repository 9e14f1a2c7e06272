// RUN: lamina-opt %s -p legalize --split-input-file --verify-diagnostics | filecheck %s

// A layout map that is not a floordiv/mod tiling cannot be inverted.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @skew(%x: tensor<2x3xf32>) -> tensor<4x3xf32> {
    // expected-error @+1 {{'graph.layout_transform' op cannot legalize layout map affine_map<(d0, d1) -> ((d0 + d1), d1)>: result #0 ((d0 + d1)) is not invertible (supported: each logical dim `d` as `d + k`, or as a `(d + k) floordiv c` / `(d + k) mod c` pair)}}
    %y = graph.layout_transform %x {constraint = #lamina.constraint<affine_map<(d0, d1) -> (d0 + d1, d1)>, 0.0 : f32>} : (tensor<2x3xf32>) -> tensor<4x3xf32>
    graph.return %y : tensor<4x3xf32>
  }
}
// CHECK: cannot legalize layout map affine_map<(d0, d1) -> ((d0 + d1), d1)>: result #0 ((d0 + d1)) is not invertible

// -----

// Dropping a logical dimension (only `floordiv`, no matching `mod`) loses data.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @lossy(%x: tensor<16xf32>) -> tensor<2xf32> {
    // expected-error @+1 {{'graph.layout_transform' op cannot legalize layout map affine_map<(d0) -> ((d0 floordiv 8))>: logical dimension d0 is not recoverable from the results (supported: each logical dim `d` as `d + k`, or as a `(d + k) floordiv c` / `(d + k) mod c` pair)}}
    %y = graph.layout_transform %x {constraint = #lamina.constraint<affine_map<(d0) -> (d0 floordiv 8)>, 0.0 : f32>} : (tensor<16xf32>) -> tensor<2xf32>
    graph.return %y : tensor<2xf32>
  }
}
// CHECK: logical dimension d0 is not recoverable from the results

// -----

// Tiles of one dimension must agree on the tile size.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @mismatch(%x: tensor<16xf32>) -> tensor<4x8xf32> {
    // expected-error @+1 {{logical dimension d0 is not recoverable from the results}}
    %y = graph.layout_transform %x {constraint = #lamina.constraint<affine_map<(d0) -> (d0 floordiv 4, d0 mod 8)>, 0.0 : f32>} : (tensor<16xf32>) -> tensor<4x8xf32>
    graph.return %y : tensor<4x8xf32>
  }
}
// CHECK: logical dimension d0 is not recoverable from the results

// -----

// legalize runs in phase optimization only.
// expected-error @+1 {{pass 'legalize' cannot run in phase 'ingestion' (it runs in: optimization); run 'lift-lambdas' first}}
builtin.module {
}
// CHECK: pass 'legalize' cannot run in phase 'ingestion'

// -----

// Every op that cannot be legalized is reported, not only the first.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @two(%x: tensor<2x3xf32>) -> tensor<4x3xf32> {
    %e = graph.exp %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
    // expected-error @+1 {{result #0 ((d0 + d1)) is not invertible}}
    %y = graph.layout_transform %e {constraint = #lamina.constraint<affine_map<(d0, d1) -> (d0 + d1, d1)>, 0.0 : f32>} : (tensor<2x3xf32>) -> tensor<4x3xf32>
    // expected-error @+1 {{result #1 ((d1 * 2)) is not invertible}}
    %z = graph.layout_transform %x {constraint = #lamina.constraint<affine_map<(d0, d1) -> (d0, d1 * 2)>, 0.0 : f32>} : (tensor<2x3xf32>) -> tensor<2x5xf32>
    graph.return %y : tensor<4x3xf32>
  }
}
// CHECK: result #0 ((d0 + d1)) is not invertible
// CHECK: result #1 ((d1 * 2)) is not invertible
