"""A constant matmul rhs stored pre-packed in panels for the micro-kernel
(kernels/linalg.py), compiled to native code and checked
against NumPy: alone, fused with bias and relu, with a batched lhs, shared
by two calls with different constants, and next to a parameter rhs; with
row counts that leave tail rows after the register blocks (197, ViT's
sequence; 13), which get a block of their own."""

from __future__ import annotations

import json

import numpy as np
import pytest

import lamina

RNG = np.random.default_rng(31)


def _type(shape) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xf32>"


def _dense(a: np.ndarray) -> str:
    return f"dense<{json.dumps(a.tolist())}> : {_type(a.shape)}"


@pytest.mark.parametrize(
    "lhs",
    [(64, 128), (3, 40, 128), (1, 197, 128), (13, 128)],
    ids=["2d", "batched", "vit-rows", "tail-1"],
)
def test_constant_rhs_matmul_bias_relu_matches_numpy(lhs) -> None:
    a = RNG.standard_normal(lhs).astype(np.float32)
    b1, b2 = (RNG.standard_normal((128, 256)).astype(np.float32) for _ in range(2))
    bias = RNG.standard_normal((256,)).astype(np.float32)
    out = (*lhs[:-1], 256)
    at, ot = _type(lhs), _type(out)
    text = f"""
    graph.func @main(%a: {at}, %p: {_type(b2.shape)}) -> ({ot}, {ot}, {ot}) {{
      %b1 = graph.constant {_dense(b1)}
      %b2 = graph.constant {_dense(b2)}
      %bias = graph.constant {_dense(bias)}
      %0 = graph.matmul %a, %b1 : ({at}, {_type(b1.shape)}) -> {ot}
      %1 = graph.add %0, %bias : ({ot}, {_type(bias.shape)}) -> {ot}
      %2 = graph.relu %1 : ({ot}) -> {ot}
      %3 = graph.matmul %a, %b2 : ({at}, {_type(b2.shape)}) -> {ot}
      %4 = graph.matmul %a, %p : ({at}, {_type(b2.shape)}) -> {ot}
      graph.return %2, %3, %4 : {ot}, {ot}, {ot}
    }}"""
    relu, second, param = lamina.compile(text).run("main", a, b2)
    a64 = a.astype(np.float64)
    np.testing.assert_allclose(relu, np.maximum(a64 @ b1 + bias, 0), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(second, a64 @ b2, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(param, a64 @ b2, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(("m", "k", "n"), [(197, 64, 197), (50, 64, 50), (77, 40, 77), (12, 8, 37)])
def test_columns_no_block_divides_match_numpy(m, k, n) -> None:
    """Attention's scores over an odd token count (ViT-B/16's 197, ViT-B/32's 50,
    CLIP's 77): whole column blocks, then the tail columns as a block of short rows."""
    a = RNG.standard_normal((2, m, k)).astype(np.float32)
    b = RNG.standard_normal((2, k, n)).astype(np.float32)
    at, bt, ot = _type(a.shape), _type(b.shape), _type((2, m, n))
    text = f"""
    graph.func @main(%a: {at}, %b: {bt}) -> {ot} {{
      %0 = graph.matmul %a, %b : ({at}, {bt}) -> {ot}
      graph.return %0 : {ot}
    }}"""
    for targets in (None, ["cpu{isa=avx2}"]):
        got = lamina.compile(text, targets=targets).run(a, b)
        np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
