"""Artifact directories: `Executable.save` / `lamina-compile -o DIR/` and `lamina.runtime.load`.

Every test runs real code: the library is linked by the system C compiler,
loaded with ctypes (often in a fresh process, to prove the compiler is not
needed) and its results are compared with NumPy's.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import lamina
from lamina.frontends.builder import GraphBuilder
from lamina.runtime import artifact

ROOT = Path(__file__).resolve().parent.parent
MLP = ROOT / "examples" / "mlp.mlir"


def _mlp_inputs(exe, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(i.shape) * 0.1).astype(i.dtype) for i in exe.get_inputs()]


def _mlp_reference(x, w1, b1, w2, b2, w3, b3) -> np.ndarray:
    h = np.maximum(x @ w1 + b1, 0)
    return np.maximum(h @ w2 + b2, 0) @ w3 + b3


@pytest.fixture(scope="module")
def mlp_dir(tmp_path_factory) -> Path:
    exe = lamina.compile(MLP, cache=False)
    path = tmp_path_factory.mktemp("artifacts") / "mlp.lamina"
    exe.save(path)
    return path


def _weights_model() -> tuple[object, list[np.ndarray], np.ndarray]:
    """A model whose weights are constants (they go to weights.bin), its input, the answer."""
    rng = np.random.default_rng(1)
    w1 = rng.standard_normal((64, 128)).astype(np.float32)
    w2 = rng.standard_normal((128, 10)).astype(np.float32)
    g = GraphBuilder()
    x = g.param((8, 64), name="x")
    y = g.matmul(g.relu(g.matmul(x, g.constant(w1))), g.constant(w2), name="logits")
    g.ret(y)
    xs = rng.standard_normal((8, 64)).astype(np.float32)
    return g.module(), [xs], np.maximum(xs @ w1, 0) @ w2


@pytest.fixture(scope="module")
def weights_dir(tmp_path_factory) -> Path:
    module, _, _ = _weights_model()
    path = tmp_path_factory.mktemp("artifacts") / "weights.lamina"
    lamina.compile(module, cache=False).save(path)
    return path


def _run_python(script: str, timeout: float = 120) -> str:
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_saved_mlp_runs_in_a_process_without_the_compiler(mlp_dir: Path):
    assert sorted(p.name for p in mlp_dir.iterdir()) == ["manifest.json", "model.so", "weights.bin"]
    out = _run_python(
        f"""
        import sys, json
        import numpy as np
        import lamina.runtime
        exe = lamina.runtime.load({str(mlp_dir)!r})
        rng = np.random.default_rng(0)
        args = [(rng.standard_normal(i.shape) * 0.1).astype(i.dtype) for i in exe.get_inputs()]
        y = exe.run("main", *args)
        np.save({str(mlp_dir / "y.npy")!r}, y)
        loaded = [m for m in sys.modules if m.split(".")[0] in ("xdsl", "llvmlite")
                  or m.startswith(("lamina.passes", "lamina.driver", "lamina.backends",
                                   "lamina.core", "lamina.dialects", "lamina.target"))]
        print(json.dumps(loaded))
        """
    )
    assert json.loads(out) == []
    y = np.load(mlp_dir / "y.npy")
    (mlp_dir / "y.npy").unlink()
    exe = lamina.compile(MLP)
    args = _mlp_inputs(exe)
    np.testing.assert_allclose(y, _mlp_reference(*args), rtol=1e-4, atol=1e-4)


def test_weights_live_in_their_own_file_and_are_mapped(weights_dir: Path):
    _, inputs, expected = _weights_model()
    manifest = json.loads((weights_dir / "manifest.json").read_text())
    assert manifest["weights"]["size"] >= (64 * 128 + 128 * 10) * 4
    assert (weights_dir / "model.so").stat().st_size < 64 * 128 * 4  # not in the library
    np.save(weights_dir / "x.npy", inputs[0])
    out = _run_python(
        f"""
        import numpy as np, lamina.runtime
        exe = lamina.runtime.load({str(weights_dir)!r})
        x = np.load({str(weights_dir / "x.npy")!r})
        np.save({str(weights_dir / "y.npy")!r}, exe.run("main", x))
        print(any("weights.bin" in line for line in open("/proc/self/maps")))
        """
    )
    assert out.strip() == "True"
    y = np.load(weights_dir / "y.npy")
    (weights_dir / "y.npy").unlink()
    (weights_dir / "x.npy").unlink()
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-3)


def test_manifest_describes_entries_cpu_and_files(weights_dir: Path):
    manifest = json.loads((weights_dir / "manifest.json").read_text())
    assert manifest["format_version"] == artifact.FORMAT_VERSION
    assert manifest["lamina_version"] == lamina.__version__
    main = manifest["entries"]["main"]
    assert main["symbol"] == "lamina_main"
    assert main["inputs"] == [{"name": "x", "dtype": "float32", "shape": [8, 64]}]
    assert main["outputs"] == [{"name": "logits", "dtype": "float32", "shape": [8, 10]}]
    assert manifest["cpu"]["name"] and "sse2" in manifest["cpu"]["features"]
    assert manifest["threading"] in ("libgomp", "none")
    for record in (manifest["library"], manifest["weights"]):
        assert record["size"] == (weights_dir / record["file"]).stat().st_size
        assert record["sha256"] == artifact.sha256_file(weights_dir / record["file"])
