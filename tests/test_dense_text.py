"""Constants survive printing and parsing: core/dense_text.py's printer."""

from __future__ import annotations

import numpy as np
import pytest

from lamina.core.context import make_context
from lamina.core.dense import dense_value
from lamina.core.dense_text import print_module
from lamina.core.diagnostics import parse_module
from lamina.frontends.builder import GraphBuilder


def _round_trip(array: np.ndarray) -> np.ndarray:
    g = GraphBuilder()
    g.ret(g.add(g.param(array.shape, array.dtype), g.constant(array)))
    text = print_module(g.module())
    module = parse_module(make_context(), text, "<test>")
    (constant,) = [op for op in module.walk() if op.name == "graph.constant"]
    return dense_value(constant.value)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_non_finite_values_round_trip(dtype) -> None:
    """xDSL prints infinities and NaNs of a short constant as hex literals that its
    parser reads as integers; such constants are printed as hex data instead."""
    small = np.array([0.5, -np.inf, np.inf, np.nan], dtype)
    np.testing.assert_array_equal(_round_trip(small), small)
    splat = np.full((2, 3), -np.inf, dtype)  # an attention mask
    np.testing.assert_array_equal(_round_trip(splat), splat)


def test_finite_short_constants_stay_readable() -> None:
    g = GraphBuilder()
    g.ret(g.add(g.param((2,)), g.constant(np.array([1.5, -2.0], np.float32))))
    assert "dense<[1.500000e+00, -2.000000e+00]>" in print_module(g.module())
    np.testing.assert_array_equal(_round_trip(np.array([1.5, -2.0], np.float32)), [1.5, -2.0])
