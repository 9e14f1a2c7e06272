"""The NumPy-style graph builder: inferred types, binary constants, errors, numerics."""

from __future__ import annotations

import numpy as np
import pytest

import lamina
from lamina.frontends.builder import (
    BuilderError,
    GraphBuilder,
    dense_attr,
    dense_value,
    resolve_slice,
)


def test_builder_program_matches_numpy() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    g = GraphBuilder("main")
    xv = g.param(x.shape, name="x")
    y = g.conv2d(xv, g.constant(w), strides=(2, 2), padding=1)
    assert y.type.get_shape() == (2, 4, 4, 4)
    pooled = g.max_pool2d(g.relu(y), kernel=2)
    assert pooled.type.get_shape() == (2, 4, 2, 2)
    flat = g.reshape(pooled, (2, -1))
    out = g.softmax(g.add(g.mul(flat, 0.5), 1.0), axis=-1)
    picked = g.gather(out, [3, 0], axis=1)
    sliced = g.slice(out, starts=[-1], ends=[-100], axes=[1], steps=[-4])
    g.ret(picked, sliced)
    got_picked, got_sliced = lamina.compile(g.module()).run("main", x)

    ref = _ref_conv(x, w)
    ref = np.maximum(ref, 0).reshape(2, 4, 2, 2, 2, 2).max(axis=(3, 5)).reshape(2, -1)
    ref = ref * 0.5 + 1.0
    ref = np.exp(ref - ref.max(-1, keepdims=True))
    ref /= ref.sum(-1, keepdims=True)
    np.testing.assert_allclose(got_picked, ref[:, [3, 0]], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_sliced, ref[:, -1:-100:-4], rtol=1e-5, atol=1e-6)


def _ref_conv(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((x.shape[0], w.shape[0], 4, 4), np.float64)
    for i in range(4):
        for j in range(4):
            patch = xp[:, :, 2 * i : 2 * i + 3, 2 * j : 2 * j + 3]
            out[:, :, i, j] = np.einsum("nchw,ochw->no", patch, w)
    return out


def test_constants_stay_binary_and_round_trip() -> None:
    for array in (np.arange(12, dtype=np.int64).reshape(3, 4), np.array([True, False]),
                  np.float16([1.5, -2.0]), np.zeros((2, 0), np.float32)):  # fmt: skip
        attr = dense_attr(array)
        assert attr.data.data == array.tobytes()
        back = dense_value(attr)
        assert back.dtype == array.dtype and back.shape == array.shape
        np.testing.assert_array_equal(back, array)


def test_an_array_viewing_whole_bytes_is_not_copied() -> None:
    """An array that views every byte of a `bytes` object (an ONNX initializer's raw
    data) gives the attribute that object; a partial view, a strided one, or one
    that must be byte-swapped is copied, with the same bytes as `tobytes`."""
    raw = np.arange(24, dtype="<f4").tobytes()
    whole = np.frombuffer(raw, dtype="<f4").reshape(2, 3, 4)
    assert dense_attr(whole).data.data is raw
    for array in (
        np.frombuffer(raw, dtype="<f4")[4:],  # a suffix
        np.frombuffer(raw, dtype="<f4").reshape(4, 6)[:, ::2],  # strided
        np.frombuffer(raw, dtype="<f4").reshape(4, 6).T,  # transposed
        np.frombuffer(raw, dtype=">f4"),  # big-endian: swapped
    ):
        attr = dense_attr(array)
        assert attr.data.data is not raw
        assert attr.data.data == np.ascontiguousarray(array).astype("<f4").tobytes()
        np.testing.assert_array_equal(dense_value(attr), array)


def test_dense_view_reads_the_attribute_bytes_without_a_copy() -> None:
    """`dense_view` (plan-layouts' constant hoisting) is `dense_value`'s array as a
    read-only view of the attribute's bytes; a splat is expanded as before."""
    from xdsl.dialects.builtin import BytesAttr, DenseIntOrFPElementsAttr, TensorType, f32

    from lamina.core.dense import dense_view

    raw = np.arange(24, dtype="<f4").tobytes()
    attr = dense_attr(np.frombuffer(raw, dtype="<f4").reshape(2, 3, 4))
    view = dense_view(attr)
    np.testing.assert_array_equal(view, dense_value(attr))
    assert view.dtype == dense_value(attr).dtype and not view.flags.writeable
    assert np.shares_memory(view, np.frombuffer(attr.data.data, dtype=np.uint8))
    splat = DenseIntOrFPElementsAttr(  # one element for six
        TensorType(f32, [2, 3]), BytesAttr(np.float32(1.5).tobytes())
    )
    np.testing.assert_array_equal(dense_view(splat), np.full((2, 3), 1.5, np.float32))


def test_dense_helpers_live_in_core_and_builder_reexports_them() -> None:
    """Passes and backends use `lamina.core.dense`; the builder's names are the same
    functions, and a dtype without an element type is a `BuilderError` there."""
    from lamina.core import dense
    from lamina.frontends import builder

    assert builder.dense_attr is dense.dense_attr and builder.dense_value is dense.dense_value
    with pytest.raises(dense.DTypeError, match="dtype uint8 has no graph element type"):
        dense.dense_attr(np.zeros(2, np.uint8))
    g = GraphBuilder()
    with pytest.raises(BuilderError, match="dtype uint8 has no graph element type"):
        g.constant(np.zeros(2, np.uint8))
    assert len(list(g.block.ops)) == 0


def test_shape_errors_name_the_op() -> None:
    g = GraphBuilder()
    a, b = g.param((2, 3)), g.param((4, 3))
    with pytest.raises(BuilderError, match="graph.add: operands are not broadcast-compatible"):
        g.add(a, b)
    with pytest.raises(BuilderError, match="graph.matmul"):
        g.matmul(a, b)
    with pytest.raises(BuilderError, match="cannot reshape"):
        g.reshape(a, (4, -1))
    with pytest.raises(BuilderError, match="padding must be"):
        g.conv2d(g.param((1, 1, 4, 4)), g.param((1, 1, 3, 3)), padding=(1, 2, 3))
    assert len(list(g.block.ops)) == 0  # nothing was appended by failed calls


def test_function_must_return() -> None:
    g = GraphBuilder("f")
    g.param((2,))
    with pytest.raises(BuilderError, match="no results yet"):
        g.module()


def test_slice_bounds_follow_python() -> None:
    assert resolve_slice((10,), [2], [100]) == ([2], [8], [1])
    assert resolve_slice((10,), [-1], [-100], steps=[-3]) == ([9], [4], [-3])
    assert resolve_slice((5, 6), [1], [1], axes=[1]) == ([0, 0], [5, 0], [1, 1])
