"""Winograd F(2x2, 3x3) convolution (`lamina.algorithm = "winograd"`,
kernels/conv_winograd.py), compiled to native code and checked against a
float64 NumPy convolution: chosen by plan-layouts, written by hand on
blocked tensors (odd sizes, asymmetric padding, padded channels with an
undefined pad, a batch), and with the weights as a parameter."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import lamina

RNG = np.random.default_rng(23)
BLOCK8 = "affine_map<(d0, d1, d2, d3) -> (d0, d1 floordiv 8, d2, d3, d1 mod 8)>"
UNBLOCK8 = "affine_map<(d0, d1, d2, d3, d4) -> (d0, d1 * 8 + d4, d2, d3)>"
WEIGHT8 = (
    "affine_map<(d0, d1, d2, d3) -> (d0 floordiv 8, d1 floordiv 8, d2, d3, d1 mod 8, d0 mod 8)>"
)


def _type(shape, elem: str = "f32") -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{elem}>"


def _conv(x: np.ndarray, w: np.ndarray, pads) -> np.ndarray:
    top, left, bottom, right = pads
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (top, bottom), (left, right)))
    oh, ow = xp.shape[2] - 2, xp.shape[3] - 2
    out = np.zeros((x.shape[0], w.shape[0], oh, ow))
    for kh in range(3):
        for kw in range(3):
            out += np.einsum("nchw,oc->nohw", xp[:, :, kh : kh + oh, kw : kw + ow], w[:, :, kh, kw])
    return out


def _blocks(c: int) -> int:
    return -(-c // 8)


@pytest.mark.parametrize("chosen", ["", ', lamina.algorithm = "direct"'], ids=["auto", "direct"])
def test_plan_layouts_chooses_winograd_and_it_matches_numpy(chosen: str, tmp_path) -> None:
    """A 3x3 conv + bias + relu on 15x17 images, batch 2, constant weights:
    plan-layouts blocks it and picks Winograd, unless the op asks for the
    direct algorithm."""
    x = RNG.standard_normal((2, 16, 15, 17)).astype(np.float32)
    w = RNG.standard_normal((24, 16, 3, 3)).astype(np.float32)
    b = RNG.standard_normal((1, 24, 1, 1)).astype(np.float32)
    xt, yt = _type(x.shape), _type((2, 24, 15, 17))
    text = f"""
    graph.func @main(%x: {xt}) -> {yt} {{
      %w = graph.constant dense<{json.dumps(w.tolist())}> : {_type(w.shape)}
      %b = graph.constant dense<{json.dumps(b.tolist())}> : {_type(b.shape)}
      %0 = graph.conv2d %x, %w {{padding = array<i64: 1, 1, 1, 1>{chosen}}} : ({xt}, {_type(w.shape)}) -> {yt}
      %1 = graph.add %0, %b : ({yt}, {_type(b.shape)}) -> {yt}
      %2 = graph.relu %1 : ({yt}) -> {yt}
      graph.return %2 : {yt}
    }}"""
    exe = lamina.compile(text, dump_phases_to=tmp_path)
    expected = np.maximum(_conv(x, w, (1, 1, 1, 1)) + b, 0)
    np.testing.assert_allclose(exe.run("main", x), expected, rtol=1e-4, atol=1e-4)
    lowering = next(tmp_path.glob("*_lowering.mlir")).read_text()
    # Winograd's 16 products M[a, b, kb, tile, ki]: 2 x 8 x 9 tiles of 2x2 outputs.
    assert bool(re.search(r"te.compute \[4, 4, \d+, 144, \d+\]", lowering)) == (chosen == "")


def _blocked_program(n, c, o, h, w, pads, elem: str, pad_value: str) -> tuple[str, tuple]:
    """conv2d by Winograd on blocked tensors: data blocked (channels padded
    with `pad_value`), weight blocked with 0, result cropped back."""
    cb, ob = _blocks(c), _blocks(o)
    top, left, bottom, right = pads
    oh, ow = h + top + bottom - 2, w + left + right - 2
    xt, wt = _type((n, c, h, w), elem), _type((o, c, 3, 3), elem)
    xbt, wbt = _type((n, cb, h, w, 8), elem), _type((ob, cb, 3, 3, 8, 8), elem)
    ybt, yt = _type((n, ob, oh, ow, 8), elem), _type((n, o, oh, ow), elem)
    zero = f"0.0 : {elem}"
    text = f"""
    graph.func @main(%x: {xt}, %w: {wt}) -> {yt} {{
      %xb = graph.layout_transform %x {{constraint = #lamina.constraint<{BLOCK8}, {pad_value}>}} : ({xt}) -> {xbt}
      %wb = graph.layout_transform %w {{constraint = #lamina.constraint<{WEIGHT8}, {zero}>}} : ({wt}) -> {wbt}
      %yb = graph.conv2d %xb, %wb {{padding = array<i64: {top}, {left}, {bottom}, {right}>, data_layout = "NCHW8c", kernel_layout = "OIHW8i8o", lamina.algorithm = "winograd"}} : ({xbt}, {wbt}) -> {ybt}
      %y = graph.layout_transform %yb {{constraint = #lamina.constraint<{UNBLOCK8}, #lamina.undef>, crop}} : ({ybt}) -> {yt}
      graph.return %y : {yt}
    }}"""
    return text, (n, o, oh, ow)


@pytest.mark.parametrize(
    ("n", "c", "o", "h", "w", "pads"),
    [
        (1, 8, 8, 4, 4, (1, 1, 1, 1)),  # 2x2 tiles of 2x2 outputs
        (2, 5, 11, 8, 6, (0, 2, 1, 0)),  # 7x6 outputs, asymmetric padding, padded channels
        (1, 16, 8, 9, 13, (1, 1, 1, 1)),  # odd height and width: half tiles at the edge
        (1, 3, 20, 3, 3, (0, 0, 0, 0)),  # a single output pixel
    ],
)
@pytest.mark.parametrize("pad_value", ["0.0 : f32", "#lamina.undef"])
def test_blocked_winograd_matches_numpy(n, c, o, h, w, pads, pad_value) -> None:
    text, _ = _blocked_program(n, c, o, h, w, pads, "f32", pad_value)
    x = RNG.standard_normal((n, c, h, w)).astype(np.float32)
    wt = RNG.standard_normal((o, c, 3, 3)).astype(np.float32)
    got = lamina.compile(text).run("main", x, wt)
    np.testing.assert_allclose(got, _conv(x, wt, pads), rtol=1e-4, atol=1e-4)


def test_blocked_winograd_in_f64_is_accurate_to_f64_rounding() -> None:
    text, _ = _blocked_program(1, 8, 8, 10, 10, (1, 1, 1, 1), "f64", "0.0 : f64")
    x = RNG.standard_normal((1, 8, 10, 10))
    wt = RNG.standard_normal((8, 8, 3, 3))
    got = lamina.compile(text).run("main", x, wt)
    np.testing.assert_allclose(got, _conv(x, wt, (1, 1, 1, 1)), rtol=1e-12, atol=1e-12)


def test_infinities_in_the_padded_border_do_not_leak() -> None:
    """The zero padding is real zeros, not a mask over clamped reads: an
    infinite input pixel only reaches the outputs whose window covers it."""
    text, _ = _blocked_program(1, 8, 8, 6, 6, (1, 1, 1, 1), "f32", "0.0 : f32")
    x = np.zeros((1, 8, 6, 6), np.float32)
    x[0, 0, 0, 0] = np.inf
    wt = np.ones((8, 8, 3, 3), np.float32)
    got = lamina.compile(text).run("main", x, wt)
    far = got[:, :, 3:, 3:]
    assert np.all(far == 0), "an output far from the infinite pixel changed"
    assert np.all(np.isinf(got[:, :, 0, 0]) | np.isnan(got[:, :, 0, 0]))


def test_constant_weights_are_transformed_per_call_and_parameters_at_run_time() -> None:
    """Two convolutions with different constant weights share one kernel, each
    call passing the transform of its own weights (computed at compile time);
    a third with the weights as a parameter transforms them at run time."""
    x = RNG.standard_normal((1, 16, 14, 14)).astype(np.float32)
    w1, w2, w3 = (RNG.standard_normal((16, 16, 3, 3)).astype(np.float32) for _ in range(3))
    t, wt = _type(x.shape), _type(w1.shape)
    attrs = "{padding = array<i64: 1, 1, 1, 1>}"
    text = f"""
    graph.func @main(%x: {t}, %w3: {wt}) -> ({t}, {t}, {t}) {{
      %w1 = graph.constant dense<{json.dumps(w1.tolist())}> : {wt}
      %w2 = graph.constant dense<{json.dumps(w2.tolist())}> : {wt}
      %0 = graph.conv2d %x, %w1 {attrs} : ({t}, {wt}) -> {t}
      %1 = graph.conv2d %x, %w2 {attrs} : ({t}, {wt}) -> {t}
      %2 = graph.conv2d %x, %w3 {attrs} : ({t}, {wt}) -> {t}
      graph.return %0, %1, %2 : {t}, {t}, {t}
    }}"""
    got = lamina.compile(text).run("main", x, w3)
    for out, w in zip(got, (w1, w2, w3), strict=True):
        np.testing.assert_allclose(out, _conv(x, w, (1, 1, 1, 1)), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("limit", [0, 4096])
def test_winograd_products_capped_at_two_blocks_match_numpy(limit: int) -> None:
    """`winograd_jam_l1_bytes` (schedule/winograd.py): where the jammed blocks'
    transformed weights exceed it, the products jam 2 output-channel blocks of
    more tile rows instead of 4 (Intel AVX-512); both match NumPy (7x7, 128 -> 64)."""
    text, _ = _blocked_program(1, 128, 64, 7, 7, (1, 1, 1, 1), "f32", "0.0 : f32")
    x = RNG.standard_normal((1, 128, 7, 7)).astype(np.float32)
    wt = RNG.standard_normal((64, 128, 3, 3)).astype(np.float32)
    exe = lamina.compile(text, targets=[f"cpu{{winograd_jam_l1_bytes={limit}}}"])
    np.testing.assert_allclose(
        exe.run("main", x, wt), _conv(x, wt, (1, 1, 1, 1)), rtol=1e-4, atol=1e-3
    )


@pytest.mark.parametrize(
    ("c", "o", "h", "w", "cores", "chunk"),
    [
        (8, 8, 16, 16, 2, "[2, 2, 4, 4, 16, 1, 8]"),  # 2 groups of 2 chunks of 2 tile rows
        (5, 11, 17, 28, 2, "[2, 5, 4, 4, 14, 1, 8]"),  # 9 tile rows in 10: one chunk below
        (16, 8, 15, 13, 1, "[1, 4, 4, 4, 14, 2, 8]"),  # one group; odd height and width
    ],
)
def test_chunked_winograd_matches_numpy(c, o, h, w, cores, chunk, tmp_path) -> None:
    """Tile rows in chunks (`winograd_chunks`, `winograd_chunk_bytes` with the
    64 KiB L2 pinned here: V and M exceed half of it): each chunk's input
    transform, products and output transform in turn, the output rows of a
    chunk below the image skipped."""
    text, _ = _blocked_program(1, c, o, h, w, (1, 1, 1, 1), "f32", "#lamina.undef")
    x = RNG.standard_normal((1, c, h, w)).astype(np.float32)
    wt = RNG.standard_normal((o, c, 3, 3)).astype(np.float32)
    target = f"cpu{{l2_bytes=65536 cores={cores}}}"
    exe = lamina.compile(text, targets=[target], dump_phases_to=tmp_path)
    lowering = next(tmp_path.glob("*_lowering.mlir")).read_text()
    assert f"te.compute {chunk}" in lowering
    np.testing.assert_allclose(
        exe.run("main", x, wt), _conv(x, wt, (1, 1, 1, 1)), rtol=1e-4, atol=1e-4
    )
    whole = lamina.compile(text, targets=["cpu{l2_bytes=65536 winograd_chunk_bytes=0}"])
    np.testing.assert_allclose(
        whole.run("main", x, wt), exe.run("main", x, wt), rtol=1e-6, atol=1e-6
    )
