"""Layout constraints end to end (docs/layouts.md): `graph.layout_transform` shapes and
`plan-layouts`, compiled to native code and checked against NumPy."""

from __future__ import annotations

import json

import numpy as np
import pytest

import lamina
from lamina.core.diagnostics import DiagnosticError

BLOCK8 = "affine_map<(d0, d1, d2, d3) -> (d0, d1 floordiv 8, d2, d3, d1 mod 8)>"
UNBLOCK8 = "affine_map<(d0, d1, d2, d3, d4) -> (d0, d1 * 8 + d4, d2, d3)>"
RNG = np.random.default_rng(8)


def _type(shape) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xf32>"


def _transform(src: str, map_: str, pad: str, in_shape, out_shape, crop: bool = False) -> str:
    flag = ", crop" if crop else ""
    return (
        f"graph.layout_transform {src} {{constraint = #lamina.constraint<{map_}, {pad}>{flag}}} : "
        f"({_type(in_shape)}) -> {_type(out_shape)}"
    )


def _run(text: str, *args: np.ndarray):
    return lamina.compile(text).run("main", *args)


def _blocked_reference(x: np.ndarray, pad: float) -> np.ndarray:
    n, c, h, w = x.shape
    blocks = -(-c // 8)
    out = np.full((n, blocks * 8, h, w), pad, dtype=x.dtype)
    out[:, :c] = x
    return out.reshape(n, blocks, 8, h, w).transpose(0, 1, 3, 4, 2)


@pytest.mark.parametrize("pad", [0.0, 1.5])
def test_nchw_to_nchw8c_pads_3_channels_to_8(pad: float) -> None:
    x = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    text = f"""
    graph.func @main(%x: {_type(x.shape)}) -> {_type((2, 1, 4, 5, 8))} {{
      %0 = {_transform("%x", BLOCK8, f"{pad} : f32", x.shape, (2, 1, 4, 5, 8))}
      graph.return %0 : {_type((2, 1, 4, 5, 8))}
    }}"""
    got = _run(text, x)
    np.testing.assert_array_equal(got, _blocked_reference(x, pad))
    assert np.all(got[..., 3:] == pad)


def test_blocked_then_cropped_inverse_is_identity_with_undef_padding() -> None:
    x = RNG.standard_normal((1, 11, 3, 3)).astype(np.float32)
    text = f"""
    graph.func @main(%x: {_type(x.shape)}) -> {_type(x.shape)} {{
      %0 = {_transform("%x", BLOCK8, "#lamina.undef", x.shape, (1, 2, 3, 3, 8))}
      %1 = graph.exp %0 : ({_type((1, 2, 3, 3, 8))}) -> {_type((1, 2, 3, 3, 8))}
      %2 = {_transform("%1", UNBLOCK8, "#lamina.undef", (1, 2, 3, 3, 8), x.shape, crop=True)}
      graph.return %2 : {_type(x.shape)}
    }}"""
    np.testing.assert_allclose(_run(text, x), np.exp(x), rtol=1e-6)


def test_inverse_with_crop_reads_the_logical_channels() -> None:
    b = RNG.standard_normal((1, 2, 3, 3, 8)).astype(np.float32)
    text = f"""
    graph.func @main(%b: {_type(b.shape)}) -> {_type((1, 13, 3, 3))} {{
      %0 = {_transform("%b", UNBLOCK8, "#lamina.undef", b.shape, (1, 13, 3, 3), crop=True)}
      graph.return %0 : {_type((1, 13, 3, 3))}
    }}"""
    expected = b.transpose(0, 1, 4, 2, 3).reshape(1, 16, 3, 3)[:, :13]
    np.testing.assert_array_equal(_run(text, b), expected)


def test_packed_matmul_operand_and_its_use() -> None:
    """Columns of B in panels of 4 (10 pad to 12); a matmul over the panels
    with the padded columns cropped gives A @ B."""
    a = RNG.standard_normal((5, 6)).astype(np.float32)
    b = RNG.standard_normal((6, 10)).astype(np.float32)
    pack = "affine_map<(d0, d1) -> (d1 floordiv 4, d0, d1 mod 4)>"
    unpack = "affine_map<(d0, d1, d2) -> (d0 * 4 + d1, d2)>"
    text = f"""
    graph.func @main(%a: {_type(a.shape)}, %b: {_type(b.shape)}) -> ({_type((3, 6, 4))}, {_type((5, 10))}) {{
      %p = {_transform("%b", pack, "0.0 : f32", b.shape, (3, 6, 4))}
      %m = graph.matmul %a, %p : ({_type(a.shape)}, {_type((3, 6, 4))}) -> {_type((3, 5, 4))}
      %t = graph.transpose %m {{perm = array<i64: 0, 2, 1>}} : ({_type((3, 5, 4))}) -> {_type((3, 4, 5))}
      %c = {_transform("%t", unpack, "#lamina.undef", (3, 4, 5), (10, 5), crop=True)}
      %r = graph.transpose %c {{perm = array<i64: 1, 0>}} : ({_type((10, 5))}) -> {_type((5, 10))}
      graph.return %p, %r : {_type((3, 6, 4))}, {_type((5, 10))}
    }}"""
    packed, product = _run(text, a, b)
    padded = np.zeros((6, 12), np.float32)
    padded[:, :10] = b
    np.testing.assert_array_equal(packed, padded.reshape(6, 3, 4).transpose(1, 0, 2))
    np.testing.assert_allclose(product, a @ b, rtol=1e-5, atol=1e-5)


def test_strided_and_front_padded_layouts() -> None:
    v = RNG.standard_normal(5).astype(np.float32)
    text = f"""
    graph.func @main(%v: {_type((5,))}) -> {_type((10,))} {{
      %s = {_transform("%v", "affine_map<(d0) -> (d0 * 2)>", "-1.0 : f32", (5,), (9,))}
      %t = {_transform("%s", "affine_map<(d0) -> (d0 + 1)>", "7.0 : f32", (9,), (10,))}
      graph.return %t : {_type((10,))}
    }}"""
    expected = np.full(10, 7.0, np.float32)
    expected[1:] = -1.0
    expected[1::2] = v
    np.testing.assert_array_equal(_run(text, v), expected)


def _conv(x: np.ndarray, w: np.ndarray, stride: int, pad: int) -> np.ndarray:
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    k = w.shape[2]
    oh = (xp.shape[2] - k) // stride + 1
    ow = (xp.shape[3] - k) // stride + 1
    out = np.zeros((x.shape[0], w.shape[0], oh, ow))
    for kh in range(k):
        for kw in range(k):
            window = xp[:, :, kh : kh + stride * oh : stride, kw : kw + stride * ow : stride]
            out += np.einsum("nchw,oc->nohw", window, w[:, :, kh, kw])
    return out


def _dense(a: np.ndarray) -> str:
    return f"dense<{json.dumps(a.tolist())}> : {_type(a.shape)}"


@pytest.mark.parametrize("layouts", [True, False], ids=["plan-layouts", "no-plan-layouts"])
@pytest.mark.parametrize(
    ("c", "o", "k", "stride", "pad"),
    [(3, 20, 3, 1, 1), (8, 16, 1, 1, 0), (5, 9, 3, 2, 1)],
    ids=["3x3", "1x1", "stride2"],
)
def test_conv_bias_relu_conv_chain(c, o, k, stride, pad, layouts: bool) -> None:
    """conv -> bias -> relu -> conv with constant weights, with plan-layouts
    blocking it (padded channels included) and without."""
    x = RNG.standard_normal((1, c, 9, 9)).astype(np.float32)
    w1 = RNG.standard_normal((o, c, k, k)).astype(np.float32)
    b1 = RNG.standard_normal((1, o, 1, 1)).astype(np.float32)
    w2 = RNG.standard_normal((o, o, 1, 1)).astype(np.float32)
    mid = _conv(x, w1, stride, pad).shape
    attrs = f"strides = array<i64: {stride}, {stride}>, padding = array<i64: {pad}, {pad}, {pad}, {pad}>"
    flag = "" if layouts else " attributes {lamina.plan_layouts = false}"
    text = f"""
    builtin.module{flag} {{
      graph.func @main(%x: {_type(x.shape)}) -> {_type(mid)} {{
        %w1 = graph.constant {_dense(w1)}
        %b1 = graph.constant {_dense(b1)}
        %w2 = graph.constant {_dense(w2)}
        %0 = graph.conv2d %x, %w1 {{{attrs}}} : ({_type(x.shape)}, {_type(w1.shape)}) -> {_type(mid)}
        %1 = graph.add %0, %b1 : ({_type(mid)}, {_type(b1.shape)}) -> {_type(mid)}
        %2 = graph.relu %1 : ({_type(mid)}) -> {_type(mid)}
        %3 = graph.conv2d %2, %w2 : ({_type(mid)}, {_type(w2.shape)}) -> {_type(mid)}
        graph.return %3 : {_type(mid)}
      }}
    }}"""
    expected = _conv(np.maximum(_conv(x, w1, stride, pad) + b1, 0), w2, 1, 0)
    np.testing.assert_allclose(_run(text, x), expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("layouts", [True, False], ids=["plan-layouts", "no-plan-layouts"])
@pytest.mark.parametrize("hw", [7, 30])
def test_conv_with_rank3_biases_stays_blocked_and_fused(hw: int, layouts: bool) -> None:
    """conv + a `Cx1x1` constant bias + a `Cx1x1` parameter bias + relu (the
    biases reshaped into the blocked layout by plan-layouts, the epilogue
    fused into the register-blocked convolution): same numbers as NumPy."""
    c = 16
    x = RNG.standard_normal((1, c, hw, hw)).astype(np.float32)
    w = RNG.standard_normal((c, c, 3, 3)).astype(np.float32)
    b = RNG.standard_normal((c, 1, 1)).astype(np.float32)
    p = RNG.standard_normal((c, 1, 1)).astype(np.float32)
    t = _type(x.shape)
    flag = "" if layouts else " attributes {lamina.plan_layouts = false}"
    text = f"""
    builtin.module{flag} {{
      graph.func @main(%x: {t}, %w: {_type(w.shape)}, %p: {_type(p.shape)}) -> {t} {{
        %b = graph.constant {_dense(b)}
        %0 = graph.conv2d %x, %w {{padding = array<i64: 1, 1, 1, 1>}} : ({t}, {_type(w.shape)}) -> {t}
        %1 = graph.add %0, %b : ({t}, {_type(b.shape)}) -> {t}
        %2 = graph.add %1, %p : ({t}, {_type(p.shape)}) -> {t}
        %3 = graph.relu %2 : ({t}) -> {t}
        graph.return %3 : {t}
      }}
    }}"""
    expected = np.maximum(_conv(x, w, 1, 1) + b + p, 0)
    np.testing.assert_allclose(_run(text, x, w, p), expected, rtol=1e-4, atol=1e-4)


def test_bad_boundary_constraint_is_a_located_diagnostic() -> None:
    text = """graph.func @main(%x: tensor<2x4x8xf32> {lamina.constraint = #lamina.constraint<affine_map<(d0, d1) -> (d0, d1)>, 0.0 : f32>}) -> tensor<2x4x8xf32> {
      graph.return %x : tensor<2x4x8xf32>
    }"""
    with pytest.raises(DiagnosticError) as info:
        lamina.compile(text)
    assert "has 2 dimensions and 2 results but the tensor has rank 3" in str(info.value)
