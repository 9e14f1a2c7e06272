"""`lamina-run` and `lamina-compile` as a user runs them (subprocesses).

User errors exit 1 with an `error:` line and never a traceback; a `.so` from
`lamina-compile` is callable through ctypes with the ABI of docs/abi.md.
"""

from __future__ import annotations

import ctypes
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

MATMUL_RELU = """\
graph.func @main(%a: tensor<3x5xf32>, %b: tensor<5x4xf32>) -> tensor<3x4xf32> {
  %c = graph.matmul %a, %b : (tensor<3x5xf32>, tensor<5x4xf32>) -> tensor<3x4xf32>
  %r = graph.relu %c : (tensor<3x4xf32>) -> tensor<3x4xf32>
  graph.return %r : tensor<3x4xf32>
}
"""


def _tool(name: str, *args: str | Path) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", f"lamina.tools.{name}", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


@pytest.fixture()
def program(tmp_path: Path) -> Path:
    path = tmp_path / "mm.mlir"
    path.write_text(MATMUL_RELU)
    return path


def _inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    return [
        rng.standard_normal((3, 5)).astype(np.float32),
        rng.standard_normal((5, 4)).astype(np.float32),
    ]


def _expected(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.maximum(a @ b, 0)


def test_run_random_inputs_prints_a_summary_and_timing(program):
    proc = _tool("lamina_run", program, "--random-inputs", "--seed", "7", "--repeat", "3")
    assert proc.returncode == 0, proc.stderr
    assert "out0: float32[3, 4]" in proc.stdout
    assert "ms/iter over 3 iterations" in proc.stdout


def test_run_npz_round_trip(program, tmp_path):
    a, b = _inputs()
    np.savez(tmp_path / "in.npz", arg0=a, arg1=b)
    proc = _tool(
        "lamina_run", program, "--inputs", tmp_path / "in.npz", "--output", tmp_path / "out.npz"
    )
    assert proc.returncode == 0, proc.stderr
    with np.load(tmp_path / "out.npz") as out:
        np.testing.assert_allclose(out["out0"], _expected(a, b), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "make_args, message",
    [
        (lambda p, t: [t / "missing.mlir"], "No such file or directory"),
        (lambda p, t: [p, "--bogus"], "unrecognized arguments: --bogus"),
        (lambda p, t: [p, "--entry", "nope"], "no entry function 'nope'"),
        (lambda p, t: [p, "--repeat", "-1"], "--repeat must be >= 0"),
        (lambda p, t: [p, "--inputs", t / "partial.npz"], "missing arg1"),
        (
            lambda p, t: [p, "--inputs", t / "badshape.npz"],
            r"argument 1: expected shape (5, 4), got (4, 5)",
        ),
        (lambda p, t: [t / "broken.mlir"], "broken.mlir:1:18: error:"),
    ],
)
def test_run_user_errors_exit_1_without_traceback(program, tmp_path, make_args, message):
    a, b = _inputs()
    np.savez(tmp_path / "partial.npz", arg0=a)
    np.savez(tmp_path / "badshape.npz", arg0=a, arg1=b.T.copy())
    (tmp_path / "broken.mlir").write_text("graph.func @main(")
    proc = _tool("lamina_run", *make_args(program, tmp_path))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout


def test_compile_shared_library_is_callable_through_ctypes(program, tmp_path):
    lib_path = tmp_path / "mm.so"
    proc = _tool("lamina_compile", program, "-o", lib_path)
    assert proc.returncode == 0, proc.stderr
    lib = ctypes.CDLL(str(lib_path))
    lib.lamina_main.argtypes = [ctypes.c_void_p] * 3
    lib.lamina_main.restype = None
    a, b = _inputs()
    out = np.empty((3, 4), np.float32)
    lib.lamina_main(*(x.ctypes.data_as(ctypes.c_void_p) for x in (a, b, out)))
    np.testing.assert_allclose(out, _expected(a, b), rtol=1e-5, atol=1e-6)


def test_compile_object_and_llvm_ir(program, tmp_path):
    assert _tool("lamina_compile", program, "-o", tmp_path / "mm.o").returncode == 0
    assert (tmp_path / "mm.o").read_bytes()[:4] == b"\x7fELF"
    assert _tool("lamina_compile", program, "-o", tmp_path / "mm.ll").returncode == 0
    assert "define void @lamina_main(" in (tmp_path / "mm.ll").read_text()


def test_compile_rejects_an_unknown_output_kind(program, tmp_path):
    proc = _tool("lamina_compile", program, "-o", tmp_path / "mm.txt")
    assert proc.returncode == 1
    assert "cannot infer the output kind" in proc.stderr and "Traceback" not in proc.stderr


def test_unwritable_outputs_are_user_errors(program, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    for args in (
        ["--pipeline", "default", "--dump-phases-to", blocker],
        ["-o", tmp_path / "missing-dir" / "out.mlir"],
    ):
        proc = _tool("lamina_opt", program, *args)
        assert proc.returncode == 1, proc.stderr
        assert "error:" in proc.stderr and "Traceback" not in proc.stderr
