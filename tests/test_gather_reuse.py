"""Copies out of a channel-blocked layout, reordered by `schedule` so that
gathers sharing cache lines run back to back, give exactly the input back
(`schedule/gather_reuse.py`; the loop order is checked in
tests/filecheck/passes/schedule-gather-reuse.mlir)."""

import numpy as np
import pytest

import lamina

PROGRAM = """
graph.func @main(%x: tensor<{n}x{c}x{h}x{w}x{t}>) -> tensor<{n}x{c}x{h}x{w}x{t}> {{
  %b = graph.layout_transform %x {{constraint = #lamina.constraint<affine_map<(d0, d1, d2, d3) -> (d0, d1 floordiv {blk}, d2, d3, d1 mod {blk})>, #lamina.undef>}} : (tensor<{n}x{c}x{h}x{w}x{t}>) -> tensor<{n}x{cb}x{h}x{w}x{blk}x{t}>
  %r = graph.relu %b : (tensor<{n}x{cb}x{h}x{w}x{blk}x{t}>) -> tensor<{n}x{cb}x{h}x{w}x{blk}x{t}>
  %y = graph.layout_transform %r {{constraint = #lamina.constraint<affine_map<(d0, d1, d2, d3, d4) -> (d0, d1 * {blk} + d4, d2, d3)>, #lamina.undef>{crop}}} : (tensor<{n}x{cb}x{h}x{w}x{blk}x{t}>) -> tensor<{n}x{c}x{h}x{w}x{t}>
  graph.return %y : tensor<{n}x{c}x{h}x{w}x{t}>
}}
"""


@pytest.mark.parametrize(
    ("n", "c", "h", "w", "blk", "dtype"),
    [
        (1, 64, 9, 23, 16, np.float32),  # split by the period 16, four blocks
        (2, 48, 5, 7, 16, np.float32),  # batch 2, three blocks
        (1, 20, 6, 33, 16, np.float32),  # 20 channels: a padded last block, order kept
        (1, 32, 4, 19, 8, np.float64),  # f64: 8 elements fill a cache line
    ],
)
def test_a_blocked_round_trip_is_exact(n, c, h, w, blk, dtype):
    t = "f32" if dtype == np.float32 else "f64"
    cb = -(-c // blk)
    crop = ", crop" if cb * blk > c else ""
    exe = lamina.compile(PROGRAM.format(n=n, c=c, h=h, w=w, t=t, blk=blk, cb=cb, crop=crop))
    x = np.random.default_rng(0).standard_normal((n, c, h, w)).astype(dtype)
    np.testing.assert_array_equal(exe.run("main", x), np.maximum(x, 0))
