"""Padding before and after the data in `graph.layout_transform` (docs/layouts.md,
"Padding at the start"): a positive offset in the forward map (`(d0 + 1)
floordiv 4`) puts padding before the data, the inverse has the negative offset
(`d0 * 4 + d1 - 1`) and crops it. Compiled to native code and checked against
NumPy, with plan-layouts folding the pairs it recognises and without it (then
every transform is lowered on its own)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.context import Context
from xdsl.ir.affine import AffineBinaryOpExpr, AffineBinaryOpKind, AffineExpr, AffineMap
from xdsl.parser import Parser

import lamina
from lamina.core.context import make_context
from lamina.core.diagnostics import DiagnosticError, parse_module
from lamina.dialects import graph
from lamina.dialects.layout_maps import apply_layout, same_map
from lamina.dialects.reference import evaluate
from lamina.passes.plan_layouts import inverse_map

RNG = np.random.default_rng(22)
PADS = ["0.0 : f32", "2.5 : f32", "#lamina.undef"]


def _type(shape) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xf32>"


def _offset(expr: str, k: int) -> str:
    """`expr + k` as map text (`expr - 1` for k = -1)."""
    if k == 0:
        return expr
    return f"{expr} + {k}" if k > 0 else f"{expr} - {-k}"


def _pad_number(pad: str) -> float | None:
    return None if pad == "#lamina.undef" else float(pad.split(":")[0])


def _module(body: str, args: list[tuple[str, tuple]], results: list[tuple], plan: bool) -> str:
    flag = "" if plan else " attributes {lamina.plan_layouts = false}"
    params = ", ".join(f"%{n}: {_type(s)}" for n, s in args)
    outs = ", ".join(_type(s) for s in results)
    return f"builtin.module{flag} {{\n graph.func @main({params}) -> ({outs}) {{\n{body}\n }}\n}}"


def _transform(dst, src, map_, pad, shapes, crop=False) -> str:
    flag = ", crop" if crop else ""
    return (
        f"  %{dst} = graph.layout_transform %{src} {{constraint = #lamina.constraint<"
        f"affine_map<{map_}>, {pad}>{flag}}} : ({_type(shapes[0])}) -> {_type(shapes[1])}"
    )


# ---------------------------------------------------------------------------
# NumPy references (written independently of `apply_layout`)
# ---------------------------------------------------------------------------


def _tiled(x: np.ndarray, tiles, left, fill: float, extra=None) -> np.ndarray:
    """x padded by `left` before and up to whole tiles after each axis, then
    cut into tiles: (blocks0, blocks1, ..., tile0, tile1, ...)."""
    extra = extra or (0,) * x.ndim
    blocks = [
        -(-(n + lo + e) // t) for n, lo, e, t in zip(x.shape, left, extra, tiles, strict=True)
    ]
    padded = np.full([b * t for b, t in zip(blocks, tiles, strict=True)], fill, np.float32)
    padded[tuple(slice(lo, lo + n) for lo, n in zip(left, x.shape, strict=True))] = x
    split = [v for b, t in zip(blocks, tiles, strict=True) for v in (b, t)]
    order = [*range(0, 2 * x.ndim, 2), *range(1, 2 * x.ndim, 2)]
    return padded.reshape(split).transpose(order)


def _maps(rank: int, tiles, left) -> tuple[str, str]:
    """The forward tiling map with `left` slots of padding before each axis and its inverse."""
    dims = ", ".join(f"d{i}" for i in range(rank))
    inner = [_offset(f"d{i}", left[i]) for i in range(rank)]
    forward = [f"({e}) floordiv {t}" for e, t in zip(inner, tiles, strict=True)]
    forward += [f"({e}) mod {t}" for e, t in zip(inner, tiles, strict=True)]
    pdims = ", ".join(f"d{i}" for i in range(2 * rank))
    back = [_offset(f"d{i} * {tiles[i]} + d{i + rank}", -left[i]) for i in range(rank)]
    return (
        f"({dims}) -> ({', '.join(forward)})",
        f"({pdims}) -> ({', '.join(back)})",
    )


TILE_CASES = {
    # name: (logical shape, tiles, padding before each axis[, slots added after])
    "1d-left": ((15,), (4,), (1,)),
    "1d-right": ((15,), (4,), (0,)),
    "1d-left-right": ((14,), (4,), (1,)),
    "1d-left-3-blocks": ((6,), (4,), (3,)),
    "1d-left-extra-tile": ((14,), (4,), (1,), (4,)),
    "2d-left": ((15, 29), (4, 8), (1, 3)),
    "2d-right": ((14, 30), (4, 8), (0, 0)),
    "2d-left-right": ((14, 31), (4, 8), (1, 5)),
    "2d-left-right-extra-tile": ((14, 31), (4, 8), (1, 5), (0, 8)),
}


@pytest.mark.parametrize("plan", [True, False], ids=["plan-layouts", "no-plan-layouts"])
@pytest.mark.parametrize("pad", PADS, ids=["pad0", "pad2.5", "undef"])
@pytest.mark.parametrize("case", list(TILE_CASES), ids=list(TILE_CASES))
def test_tile_padding_round_trip(case: str, pad: str, plan: bool) -> None:
    """Forward (padding before and/or after the data), then the cropping inverse:
    the physical tensor matches NumPy (its padding holds PAD), and the inverse
    of it, and of `exp` of it, gives back x and exp(x)."""
    shape, tiles, left, *more = TILE_CASES[case]
    extra = more[0] if more else None  # a declared outer extent beyond the image
    x = RNG.standard_normal(shape).astype(np.float32)
    forward, back = _maps(len(shape), tiles, left)
    fill = _pad_number(pad)
    reference = _tiled(x, tiles, left, np.nan if fill is None else fill, extra)
    phys = reference.shape
    body = "\n".join(
        [
            _transform("p", "x", forward, pad, (shape, phys)),
            _transform("r", "p", back, "#lamina.undef", (phys, shape), crop=True),
            f"  %e = graph.exp %p : ({_type(phys)}) -> {_type(phys)}",
            _transform("s", "e", back, "#lamina.undef", (phys, shape), crop=True),
            f"  graph.return %p, %r, %s : {_type(phys)}, {_type(shape)}, {_type(shape)}",
        ]
    )
    text = _module(body, [("x", shape)], [phys, shape, shape], plan)
    physical, restored, exp_restored = lamina.compile(text).run("main", x)
    data = ~np.isnan(_tiled(x, tiles, left, np.nan, extra))
    np.testing.assert_array_equal(physical[data], reference[data])
    if fill is not None:
        assert np.all(physical[~data] == fill)
    np.testing.assert_array_equal(restored, x)
    np.testing.assert_allclose(exp_restored, np.exp(x), rtol=1e-6)


@pytest.mark.parametrize("plan", [True, False], ids=["plan-layouts", "no-plan-layouts"])
@pytest.mark.parametrize("pad", PADS, ids=["pad0", "pad2.5", "undef"])
def test_symmetric_halo_on_plain_axes(pad: str, plan: bool) -> None:
    """`(d0 + 1, d1 + 2)` declared 2 (4) slots longer than the data: a halo of 1
    (2) on each side, as `np.pad` writes it; `(d0 - 1, d1 - 2)` crops it off."""
    x = RNG.standard_normal((4, 5)).astype(np.float32)
    fill = _pad_number(pad)
    body = "\n".join(
        [
            _transform("h", "x", "(d0, d1) -> (d0 + 1, d1 + 2)", pad, ((4, 5), (6, 9))),
            f"  %e = graph.neg %h : ({_type((6, 9))}) -> {_type((6, 9))}",
            _transform(
                "r",
                "e",
                "(d0, d1) -> (d0 - 1, d1 - 2)",
                "#lamina.undef",
                ((6, 9), (4, 5)),
                crop=True,
            ),  # fmt: skip
            f"  graph.return %h, %r : {_type((6, 9))}, {_type((4, 5))}",
        ]
    )
    halo, back = lamina.compile(_module(body, [("x", (4, 5))], [(6, 9), (4, 5)], plan)).run(
        "main", x
    )
    np.testing.assert_array_equal(halo[1:5, 2:7], x)
    if fill is not None:
        np.testing.assert_array_equal(halo, np.pad(x, ((1, 1), (2, 2)), constant_values=fill))
    np.testing.assert_array_equal(back, -x)


def _conv(x: np.ndarray, w: np.ndarray, pad: int) -> np.ndarray:
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    k = w.shape[2]
    oh, ow = xp.shape[2] - k + 1, xp.shape[3] - k + 1
    out = np.zeros((x.shape[0], w.shape[0], oh, ow))
    for kh in range(k):
        for kw in range(k):
            out += np.einsum("nchw,oc->nohw", xp[:, :, kh : kh + oh, kw : kw + ow], w[:, :, kh, kw])
    return out


@pytest.mark.parametrize("algorithm", ["direct", "winograd"])
@pytest.mark.parametrize("pad", ["0.0 : f32", "#lamina.undef"], ids=["pad0", "undef"])
def test_blocked_conv_with_channels_padded_at_the_start(pad: str, algorithm: str) -> None:
    """5 channels placed at slots 2..6 of a block of 8 (2 before, 1 after): the
    blocked convolution masks both ends (with undef padding the slots hold
    anything), so the result is the convolution of the logical tensors."""
    x = RNG.standard_normal((1, 5, 6, 6)).astype(np.float32)
    w = RNG.standard_normal((8, 5, 3, 3)).astype(np.float32)
    data = "(d0, d1, d2, d3) -> (d0, (d1 + 2) floordiv 8, d2, d3, (d1 + 2) mod 8)"
    weight = (
        "(d0, d1, d2, d3) -> (d0 floordiv 8, (d1 + 2) floordiv 8, d2, d3, (d1 + 2) mod 8, d0 mod 8)"
    )
    unblock = "(d0, d1, d2, d3, d4) -> (d0, d1 * 8 + d4, d2, d3)"
    bx, bw, by = (1, 1, 6, 6, 8), (1, 1, 3, 3, 8, 8), (1, 1, 6, 6, 8)
    attrs = 'padding = array<i64: 1, 1, 1, 1>, data_layout = "NCHW8c", kernel_layout = "OIHW8i8o"'
    attrs += f', lamina.algorithm = "{algorithm}"'
    body = "\n".join(
        [
            _transform("bx", "x", data, pad, (x.shape, bx)),
            _transform("bw", "w", weight, "0.0 : f32", (w.shape, bw)),
            f"  %y = graph.conv2d %bx, %bw {{{attrs}}} : ({_type(bx)}, {_type(bw)}) -> {_type(by)}",
            _transform("r", "y", unblock, "#lamina.undef", (by, (1, 8, 6, 6)), crop=True),
            f"  graph.return %r : {_type((1, 8, 6, 6))}",
        ]
    )
    text = _module(body, [("x", x.shape), ("w", w.shape)], [(1, 8, 6, 6)], plan=False)
    got = lamina.compile(text).run("main", x, w)
    np.testing.assert_allclose(got, _conv(x, w, 1), rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------------------
# TVM's padding cases of `IndexMap.non_surjective_inverse`
# (tests/python/unittest/test_index_map.py, `test_nonsurjective_inverse`):
# forward map, expected inverse, pre-shape, post-shape, padding predicate.
# ---------------------------------------------------------------------------

TVM_CASES = {
    "no_padding": (
        "(d0) -> (d0 floordiv 4, d0 mod 4)",
        "(d0, d1) -> (d0 * 4 + d1)",
        (16,),
        (4, 4),
        lambda i, j: np.zeros_like(i + j, dtype=bool),
    ),
    "right_padding": (
        "(d0) -> (d0 floordiv 4, d0 mod 4)",
        "(d0, d1) -> (d0 * 4 + d1)",
        (15,),
        (4, 4),
        lambda i, j: (i == 3) & (j == 3),
    ),
    "left_padding": (
        "(d0) -> ((d0 + 1) floordiv 4, (d0 + 1) mod 4)",
        "(d0, d1) -> (d0 * 4 + d1 - 1)",
        (15,),
        (4, 4),
        lambda i, j: (i == 0) & (j < 1),
    ),
    "left_and_right_padding": (
        "(d0) -> ((d0 + 1) floordiv 4, (d0 + 1) mod 4)",
        "(d0, d1) -> (d0 * 4 + d1 - 1)",
        (14,),
        (4, 4),
        lambda i, j: ((i == 0) & (j < 1)) | ((i == 3) & (j == 3)),
    ),
    "2d_padding": (
        "(d0, d1) -> ((d0 + 1) floordiv 4, (d1 + 5) floordiv 8, (d0 + 1) mod 4, (d1 + 5) mod 8)",
        "(d0, d1, d2, d3) -> (d0 * 4 + d2 - 1, d1 * 8 + d3 - 5)",
        (14, 31),
        (4, 5, 4, 8),
        lambda io, jo, ii, ji: (
            (((io == 0) & (ii < 1)) | ((io == 3) & (ii == 3)))
            | (((jo == 0) & (ji < 5)) | ((jo == 4) & (ji >= 4)))
        ),
    ),
    "outer_loop_extent_one": (
        "(d0) -> (d0 floordiv 4, d0 mod 4)",
        "(d0, d1) -> (d0 * 4 + d1)",
        (3,),
        (1, 4),
        lambda i, j: j == 3,
    ),
}


def _affine_map(text: str):
    return Parser(Context(), f"affine_map<{text}>").parse_attribute().data  # type: ignore[union-attr]


@pytest.mark.parametrize("case", list(TVM_CASES), ids=list(TVM_CASES))
def test_tvm_nonsurjective_inverse_cases(case: str) -> None:
    """Each case: the physical shape (TVM's `map_shape`), the inverse
    plan-layouts derives (TVM's `non_surjective_inverse`), the padding slots
    (its predicate) as the compiled transform fills them, and the compiled
    inverse restoring the data."""
    forward, inverse, pre, post, predicate = TVM_CASES[case]
    fmap, imap = _affine_map(forward), _affine_map(inverse)
    assert graph.layout_transform_shape(pre, fmap) == post
    derived = inverse_map(fmap, pre)
    assert derived is not None and same_map(derived, imap)
    x = RNG.uniform(1.0, 2.0, pre).astype(np.float32)
    body = "\n".join(
        [
            _transform("p", "x", forward, "-7.0 : f32", (pre, post)),
            _transform("r", "p", inverse, "#lamina.undef", (post, pre), crop=True),
            f"  graph.return %p, %r : {_type(post)}, {_type(pre)}",
        ]
    )
    text = _module(body, [("x", pre)], [post, pre], False)
    physical, restored = lamina.compile(text).run("main", x)
    expected_padding = predicate(*np.indices(post))
    np.testing.assert_array_equal(physical == -7.0, expected_padding)
    np.testing.assert_array_equal(physical, apply_layout(x, fmap, post, -7.0))
    np.testing.assert_array_equal(restored, x)
    # The NumPy reference evaluator agrees with the compiled code.
    ref_physical, ref_restored = evaluate(parse_module(make_context(), text, "t.mlir"), "main", x)
    np.testing.assert_array_equal(ref_physical, physical)
    np.testing.assert_array_equal(ref_restored, x)


def _brute_force_image(shape, index_map: AffineMap) -> tuple[tuple[int, ...], int]:
    """(image shape counted from slot 0, smallest position) by evaluating every point."""
    points = list(itertools.product(*(range(n) for n in shape)))
    extents, lowest = [], 0
    for expr in index_map.results:
        values = [AffineMap(len(shape), 0, (expr,)).eval(p, [])[0] for p in points]
        lowest = min(lowest, *values)
        if isinstance(expr, AffineBinaryOpExpr) and expr.kind == AffineBinaryOpKind.Mod:
            extents.append(expr.rhs.value)  # type: ignore[union-attr]
        elif isinstance(expr, AffineBinaryOpExpr) and expr.kind == AffineBinaryOpKind.FloorDiv:
            inner = [AffineMap(len(shape), 0, (expr.lhs,)).eval(p, [])[0] for p in points]
            extents.append(max(-(-(max(inner) + 1) // expr.rhs.value), 0))  # type: ignore[union-attr]
        else:
            extents.append(max(max(values) + 1, 0))
    return tuple(extents), lowest


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 12), st.integers(1, 5), st.integers(2, 6), st.integers(-5, 5))
def test_padded_shape_with_offsets_matches_brute_force(n, m, tile, offset):
    """The shape rule with offsets of either sign: a negative position is an
    error unless the transform crops, and then only slots from 0 count."""
    d0, d1 = AffineExpr.dimension(0), AffineExpr.dimension(1)
    tiled = AffineMap(2, 0, ((d0 + offset) // tile, d1 + offset, (d0 + offset) % tile))
    flat = AffineMap(2, 0, (d0 * m + d1 + offset,))
    for index_map in (tiled, flat):
        image, lowest = _brute_force_image((n, m), index_map)
        assert graph.layout_transform_shape((n, m), index_map, crop=True) == image
        if lowest < 0:
            with pytest.raises(graph.ShapeError, match="can be negative|wraps"):
                graph.layout_transform_shape((n, m), index_map)
        else:
            assert graph.layout_transform_shape((n, m), index_map) == image


# ---------------------------------------------------------------------------
# What padding cannot explain stays an error
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("map_", "shapes", "crop", "message"),
    [
        (
            "(d0) -> (d0 - 1)",
            ((4,), (4,)),
            False,
            "can be negative (minimum -1) on the operand shape [4]: an element would land "
            "before slot 0",
        ),
        (
            "(d0) -> ((d0 - 1) mod 4)",
            ((4,), (4,)),
            False,
            "((d0 + -1) mod 4)) wraps negative positions around to the end of the axis",
        ),
        (
            "(d0) -> (d0 floordiv 4, d0 mod 4)",
            ((6,), (2, 5)),
            False,
            "result dimension #1 is `(d0 mod 4)`: its extent is 4, got 5",
        ),
        (
            "(d0, d1) -> (d0 * 4 + d1 - 1)",
            ((4, 4), (16,)),
            True,
            "cropped result shape [16] exceeds the image [15] of the map",
        ),
    ],
    ids=["negative-without-crop", "mod-wraps", "longer-mod", "crop-too-big"],
)
def test_invalid_padding_is_a_located_error(map_, shapes, crop, message) -> None:
    body = "\n".join(
        [_transform("p", "x", map_, "0.0 : f32", shapes, crop=crop),
         f"  graph.return %p : {_type(shapes[1])}"]
    )  # fmt: skip
    with pytest.raises(DiagnosticError) as info:
        lamina.compile(_module(body, [("x", shapes[0])], [shapes[1]], True))
    assert message in str(info.value)
    assert ":3:" in str(info.value)  # the transform's line


@pytest.mark.parametrize(
    "out_shape",
    [(2, 2, 3, 3, 16, 16), (2, 3, 3, 3, 16, 16), (1, 1, 3, 3, 16, 16), (2, 2, 2, 3, 8, 16)],
)
def test_blocked_layout_fast_path_matches_the_scatter(out_shape, monkeypatch):
    """Blocking maps (`d floordiv m`, `d mod m`) take a pad/reshape/transpose path: it
    gives what the general scatter gives, with padding, growth and crops."""
    from xdsl.ir.affine import AffineExpr, AffineMap

    from lamina.dialects import layout_maps

    d = [AffineExpr.dimension(i) for i in range(4)]
    index_map = AffineMap(4, 0, (d[0] // 16, d[1] // 16, d[2], d[3], d[1] % 16, d[0] % 16))
    x = np.random.default_rng(0).standard_normal((20, 30, 3, 3)).astype(np.float32)
    assert layout_maps._blocked_layout(x, index_map, 0) is not None
    fast = apply_layout(x, index_map, out_shape, -1.0)
    monkeypatch.setattr(layout_maps, "_blocked_layout", lambda *args: None)
    np.testing.assert_array_equal(fast, apply_layout(x, index_map, out_shape, -1.0))
    assert fast.flags.c_contiguous
