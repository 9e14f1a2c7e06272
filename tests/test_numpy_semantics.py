"""NumPy-exact semantics where NumPy defines them, and Lamina's documented choice where not.

* float → int `cast`: truncation toward zero; NaN, ±inf and out-of-range
  values give NumPy's x86 results (i32/i64: MIN, "integer indefinite"; i8/i16:
  the low bits of the int32 conversion), which NumPy calls undefined;
* integer `div` (NumPy has none: `np.divide` returns floats): truncation
  toward zero as C and ONNX, `x / 0 == 0` and `MIN / -1 == MIN` (wraps), never a trap;
* reductions over empty axes: sum 0, mean NaN, max a compile-time error.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import lamina

SPECIALS = [np.nan, np.inf, -np.inf, 3e9, -3e9, 1e20, -1e20, 300.7, -300.7, 2.9, -2.9, -0.5,
            0.0, 127.9, -128.9, 32767.5, -32768.5, -2147483648.0]  # fmt: skip
FLOATS = {"f16": np.float16, "f32": np.float32, "f64": np.float64}
INTS = {"i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64}


def _cast_program(n: int, src: str, dst: str) -> str:
    return (
        f"graph.func @main(%x: tensor<{n}x{src}>) -> tensor<{n}x{dst}> {{\n"
        f"  %0 = graph.cast %x : (tensor<{n}x{src}>) -> tensor<{n}x{dst}>\n"
        f"  graph.return %0 : tensor<{n}x{dst}>\n}}\n"
    )


@pytest.mark.parametrize("src", sorted(FLOATS))
@pytest.mark.parametrize("dst", sorted(INTS))
def test_float_to_int_cast_matches_numpy_on_specials(src, dst):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NumPy warns about the invalid values
        x = np.array(SPECIALS, FLOATS[src])
        expected = x.astype(INTS[dst])
    got = lamina.compile(_cast_program(len(x), src, dst)).run("main", x)
    np.testing.assert_array_equal(got, expected)


def test_integer_division_truncates_and_never_traps():
    """NumPy has no int → int true division (`np.divide` gives floats); Lamina's choice is
    C's and ONNX's: toward zero, with NumPy's results for `x / 0` (0) and `MIN / -1` (MIN)."""
    a = np.array([7, -7, 7, -7, 0, -1, -(2**31), 5, -(2**31), 9], np.int32)
    b = np.array([2, 2, -2, -2, 3, 5, -1, 0, 0, -10], np.int32)
    text = (
        "graph.func @main(%a: tensor<10xi32>, %b: tensor<10xi32>) -> tensor<10xi32> {\n"
        "  %0 = graph.div %a, %b : (tensor<10xi32>, tensor<10xi32>) -> tensor<10xi32>\n"
        "  graph.return %0 : tensor<10xi32>\n}\n"
    )
    expected = np.array([3, -3, -3, 3, 0, 0, -(2**31), 0, 0, 0], np.int32)
    np.testing.assert_array_equal(lamina.compile(text).run("main", a, b), expected)


def test_sum_and_mean_over_empty_axes():
    text = (
        "graph.func @main(%a: tensor<2x0xf32>) -> (tensor<2xf32>, tensor<2xf32>) {\n"
        "  %0 = graph.reduce_sum %a {axes = array<i64: 1>} : (tensor<2x0xf32>) -> tensor<2xf32>\n"
        "  %1 = graph.reduce_mean %a {axes = array<i64: 1>} : (tensor<2x0xf32>) -> tensor<2xf32>\n"
        "  graph.return %0, %1 : tensor<2xf32>, tensor<2xf32>\n}\n"
    )
    a = np.zeros((2, 0), np.float32)
    total, mean = lamina.compile(text).run("main", a)
    np.testing.assert_array_equal(total, a.sum(axis=1))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(mean, a.mean(axis=1))


def test_max_over_an_empty_axis_is_an_error_as_in_numpy():
    text = (
        "graph.func @main(%a: tensor<0x3xf32>) -> tensor<3xf32> {\n"
        "  %0 = graph.reduce_max %a {axes = array<i64: 0>} : (tensor<0x3xf32>) -> tensor<3xf32>\n"
        "  graph.return %0 : tensor<3xf32>\n}\n"
    )
    with pytest.raises(ValueError):
        np.zeros((0, 3)).max(axis=0)
    with pytest.raises(lamina.DiagnosticError, match="empty axis 0 .* no identity"):
        lamina.compile(text, filename="m.mlir")
