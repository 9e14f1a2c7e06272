"""Winograd's weight transforms on threads during `fuse-ops` (passes/_derived_prefetch.py):
the module is the same as when the pass computes them itself, the transforms
are the same bits, and the program still matches NumPy."""

from __future__ import annotations

import json

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp

import lamina
from lamina.core.context import make_context
from lamina.core.dense import dense_value
from lamina.core.diagnostics import parse_module
from lamina.core.pass_manager import PassManager, parse_pass_pipeline
from lamina.kernels.conv_winograd import winograd_weights
from lamina.passes._derived_prefetch import WinogradPrefetch, _winograd_weights

RNG = np.random.default_rng(25)
TO_PLAN = (
    "normalize,lift-lambdas,specialize-batch,canonicalize,cse,specialize-closures,"
    "fold-constants,plan-devices,plan-layouts"
)


def _type(shape) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xf32>"


def _program() -> tuple[str, np.ndarray, list[np.ndarray]]:
    """Three 3x3 convolutions (two sharing a kernel) with constant weights, then relu."""
    x = RNG.standard_normal((1, 16, 14, 14)).astype(np.float32)
    weights = [RNG.standard_normal((16, 16, 3, 3)).astype(np.float32) for _ in range(3)]
    t, wt = _type(x.shape), _type(weights[0].shape)
    pads = "{padding = array<i64: 1, 1, 1, 1>}"
    consts = "\n".join(
        f"  %w{i} = graph.constant dense<{json.dumps(w.tolist())}> : {wt}"
        for i, w in enumerate(weights)
    )
    text = f"""
graph.func @main(%x: {t}) -> {t} {{
{consts}
  %0 = graph.conv2d %x, %w0 {pads} : ({t}, {wt}) -> {t}
  %1 = graph.conv2d %0, %w1 {pads} : ({t}, {wt}) -> {t}
  %2 = graph.conv2d %1, %w2 {pads} : ({t}, {wt}) -> {t}
  %3 = graph.relu %2 : ({t}) -> {t}
  graph.return %3 : {t}
}}"""
    return text, x, weights


def _planned(text: str) -> ModuleOp:
    ctx = make_context()
    module = parse_module(ctx, text)
    PassManager(parse_pass_pipeline(TO_PLAN)).run(ctx, module)
    return module


def _fused(text: str, threads: str, monkeypatch) -> str:
    monkeypatch.setenv("LAMINA_BUILD_THREADS", threads)
    module = _planned(text)
    PassManager(parse_pass_pipeline("fuse-ops,legalize")).run(make_context(), module)
    return str(module)


def test_the_module_is_the_same_with_and_without_the_threads(monkeypatch) -> None:
    text, _, _ = _program()
    serial = _fused(text, "1", monkeypatch)
    assert serial == _fused(text, "2", monkeypatch)
    # plan-layouts chose Winograd (its 16 products), so the transforms were derived
    assert "te.compute [4, 4, " in serial


def test_the_threads_compute_the_transforms_bit_for_bit(monkeypatch) -> None:
    monkeypatch.setenv("LAMINA_BUILD_THREADS", "2")
    module = _planned(_program()[0])
    weights = _winograd_weights(module)
    assert len(weights) == 3
    prefetch = WinogradPrefetch(module)
    taken = 0
    try:
        for attr in weights:
            got = prefetch._take(attr)  # noqa: SLF001 - what the pass takes
            expected = winograd_weights(dense_value(attr))
            if got is not None:  # None: not started, the pass computes it itself
                assert got.dtype == expected.dtype
                assert got.tobytes() == expected.tobytes()
                taken += 1
        assert taken >= 1  # two threads started at once: the first two at least were running
        assert prefetch._take(weights[0]) is None  # noqa: SLF001 - each result is taken once
    finally:
        prefetch.close()


@pytest.mark.parametrize("threads", ["1", "2"])
def test_the_compiled_program_matches_numpy(threads: str, monkeypatch) -> None:
    monkeypatch.setenv("LAMINA_BUILD_THREADS", threads)
    text, x, weights = _program()
    expected = x.astype(np.float64)
    for w in weights:
        padded = np.pad(expected, ((0, 0), (0, 0), (1, 1), (1, 1)))
        out = np.zeros_like(expected)
        for i in range(3):
            for j in range(3):
                window = padded[:, :, i : i + 14, j : j + 14]
                out += np.einsum("nchw,oc->nohw", window, w[:, :, i, j].astype(np.float64))
        expected = out
    got = lamina.compile(text, cache=False).run("main", x)
    np.testing.assert_allclose(got, np.maximum(expected, 0), rtol=1e-3, atol=1e-3)
