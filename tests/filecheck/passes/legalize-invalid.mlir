// RUN: lamina-opt %s -p legalize --split-input-file --verify-diagnostics | filecheck %s

// An injective map whose results are not floordiv/mod tiles of mixed-radix sums
// cannot be inverted dimension by dimension.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @skew(%x: tensor<2x3xf32>) -> tensor<4x3xf32> {
    // expected-error @+1 {{'graph.layout_transform' op cannot legalize layout map affine_map<(d0, d1) -> ((d0 + d1), d1)>: d0 + d1 is not invertible (its coefficients are not a mixed radix on the logical shape [2, 3])}}
    %y = graph.layout_transform %x {constraint = #lamina.constraint<affine_map<(d0, d1) -> (d0 + d1, d1)>, 0.0 : f32>} : (tensor<2x3xf32>) -> tensor<4x3xf32>
    graph.return %y : tensor<4x3xf32>
  }
}
// CHECK: cannot legalize layout map affine_map<(d0, d1) -> ((d0 + d1), d1)>: d0 + d1 is not invertible

// -----

// Dropping a logical dimension (only `floordiv`, no matching `mod`) loses data:
// the verifier rejects the map as not injective.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @lossy(%x: tensor<16xf32>) -> tensor<2xf32> {
    // expected-error @+1 {{'graph.layout_transform' op constraint map (d0) -> ((d0 floordiv 8)) is not injective on the operand shape [16] (two elements would share a slot)}}
    %y = graph.layout_transform %x {constraint = #lamina.constraint<affine_map<(d0) -> (d0 floordiv 8)>, 0.0 : f32>} : (tensor<16xf32>) -> tensor<2xf32>
    graph.return %y : tensor<2xf32>
  }
}
// CHECK: is not injective on the operand shape [16]

// -----

// Tiles of one dimension must agree on the tile size.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @mismatch(%x: tensor<16xf32>) -> tensor<4x8xf32> {
    // expected-error @+1 {{`(d0) floordiv 4` and `(d0) mod 8` use different tile sizes}}
    %y = graph.layout_transform %x {constraint = #lamina.constraint<affine_map<(d0) -> (d0 floordiv 4, d0 mod 8)>, 0.0 : f32>} : (tensor<16xf32>) -> tensor<4x8xf32>
    graph.return %y : tensor<4x8xf32>
  }
}
// CHECK: `(d0) floordiv 4` and `(d0) mod 8` use different tile sizes

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
    // expected-error @+1 {{d0 + d1 is not invertible}}
    %y = graph.layout_transform %e {constraint = #lamina.constraint<affine_map<(d0, d1) -> (d0 + d1, d1)>, 0.0 : f32>} : (tensor<2x3xf32>) -> tensor<4x3xf32>
    // expected-error @+1 {{d1 appears in two independent results}}
    %z = graph.layout_transform %x {constraint = #lamina.constraint<affine_map<(d0, d1) -> (d0 * 3 + d1, d1)>, 0.0 : f32>} : (tensor<2x3xf32>) -> tensor<6x3xf32>
    graph.return %y : tensor<4x3xf32>
  }
}
// CHECK: d0 + d1 is not invertible
// CHECK: d1 appears in two independent results
