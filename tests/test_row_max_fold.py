"""Maxima folded along long contiguous rows (a softmax's row max, `reduce_max`
over the last axis) are left to LLVM's loop vectorizer as `llvm.maximum`
(`lower-to-llvm`'s `_vectorizable_fold`): the results keep NumPy's semantics,
NaN anywhere in a row gives NaN, and the largest value wins over -0/+0 and
±inf, whatever lane of the vector loop it falls in."""

from __future__ import annotations

import numpy as np
import pytest
from isa_util import BOTH_ISAS

import lamina

ROWS, WIDTH = 6, 128


def _program(op: str) -> str:
    t = f"tensor<{ROWS}x{WIDTH}xf32>"
    if op == "softmax":
        body = f"%0 = graph.softmax %x {{axis = 1 : i64}} : ({t}) -> {t}"
        result = t
    else:
        result = f"tensor<{ROWS}xf32>"
        body = f"%0 = graph.reduce_max %x {{axes = array<i64: 1>}} : ({t}) -> {result}"
    return f"graph.func @main(%x: {t}) -> {result} {{\n  {body}\n  graph.return %0 : {result}\n}}\n"


def _rows() -> np.ndarray:
    """Rows with a special value at a different lane each: NaN, +inf, -inf, a large
    value in the last lane, all -inf but one, and an ordinary row."""
    x = np.random.default_rng(0).standard_normal((ROWS, WIDTH)).astype(np.float32)
    x[0, 37] = np.nan
    x[1, 100] = np.inf
    x[2, 5] = -np.inf
    x[3, WIDTH - 1] = 50.0
    x[4, :] = -np.inf
    x[4, 64] = 1.0
    return x


def test_row_max_matches_numpy_with_nan_and_infinities():
    x = _rows()
    got = lamina.compile(_program("reduce_max")).run("main", x)
    np.testing.assert_array_equal(got, x.max(axis=1))


def test_softmax_rows_match_numpy_with_nan_and_infinities():
    x = _rows()
    with np.errstate(all="ignore"):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        want = e / e.sum(axis=1, keepdims=True)
    got = lamina.compile(_program("softmax")).run("main", x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    assert np.isnan(got[0]).all() and np.isnan(got[1]).all()


@pytest.mark.parametrize("isa", BOTH_ISAS)
def test_softmax_rows_match_numpy_on_both_builds(isa):
    x = np.random.default_rng(1).standard_normal((ROWS, WIDTH)).astype(np.float32) * 10
    e = np.exp(x - x.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True)
    exe = lamina.compile(_program("softmax"), targets=[f"cpu{{isa={isa}}}"])
    np.testing.assert_allclose(exe.run("main", x), want, rtol=1e-5, atol=1e-7)
