"""The examples compile and run end to end and match the NumPy reference to 1e-4.

Both routes a user takes are covered: `lamina.compile` in Python, and the
`lamina-run` command with `.npz` inputs and outputs (docs/design.md §7). The
reference is `lamina.dialects.reference`, which evaluates the graph IR with
NumPy op by op.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import lamina
from lamina.core.context import make_context
from lamina.core.diagnostics import parse_module
from lamina.dialects.reference import evaluate
from lamina.driver.signatures import entry_signatures

EXAMPLES = sorted((Path(__file__).parent.parent / "examples").glob("*.mlir"))


def _inputs(path: Path, seed: int = 0) -> list[np.ndarray]:
    """Inputs of realistic scale: N(0, 1) activations, weights scaled by 1/sqrt(fan-in)."""
    module = parse_module(make_context(), path.read_text(), str(path))
    rng = np.random.default_rng(seed)
    arrays = []
    for i, spec in enumerate(entry_signatures(module)["main"].params):
        scale = 1.0 if i == 0 else 1.0 / np.sqrt(spec.shape[0] if spec.shape else 1)
        arrays.append((rng.standard_normal(spec.shape) * scale).astype(spec.dtype))
    return arrays


def _reference(path: Path, inputs: list[np.ndarray]) -> tuple[np.ndarray, ...]:
    module = parse_module(make_context(), path.read_text(), str(path))
    return evaluate(module, "main", *inputs)


def _assert_close(got: np.ndarray, want: np.ndarray) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype
    scale = max(float(np.max(np.abs(want))), 1e-30)
    err = float(np.max(np.abs(got.astype(np.float64) - want))) / scale
    assert err < 1e-4, f"max relative error {err:.2e}"


def test_there_are_examples():
    assert {p.stem for p in EXAMPLES} >= {"mlp", "cnn", "attention"}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_matches_reference(path: Path):
    inputs = _inputs(path)
    got = lamina.compile(path.read_text(), filename=str(path)).run("main", *inputs)
    got = got if isinstance(got, tuple) else (got,)
    for g, w in zip(got, _reference(path, inputs), strict=True):
        _assert_close(g, w)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_lamina_run_with_npz(path: Path, tmp_path: Path):
    inputs = _inputs(path, seed=1)
    np.savez(tmp_path / "in.npz", **{f"arg{i}": a for i, a in enumerate(inputs)})
    cmd = [sys.executable, "-m", "lamina.tools.lamina_run", str(path)]
    cmd += ["--inputs", str(tmp_path / "in.npz"), "--output", str(tmp_path / "out.npz")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "out0:" in proc.stdout
    with np.load(tmp_path / "out.npz") as out:
        for i, want in enumerate(_reference(path, inputs)):
            _assert_close(out[f"out{i}"], want)
