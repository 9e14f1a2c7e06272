"""Ahead-of-time outputs with weights: `.so` and `.o` built from units, weights outside LLVM.

A model whose weights are constants (detached from the LLVM IR, backends/codegen.py
`_weights_assembly`) is compiled to a shared library and to an object file; both
run and match NumPy, the library from a copy elsewhere (no side file), and two
models' object files link into one program. A failure to write the temporary
weights file is a one-line error that leaves no output behind.
"""

from __future__ import annotations

import ctypes
import errno
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from lamina.frontends.builder import GraphBuilder

needs_cc = pytest.mark.skipif(
    shutil.which("cc") is None or shutil.which("objcopy") is None,
    reason="no system C compiler or objcopy",
)


def _call(library: Path, symbol: str, xs: np.ndarray) -> np.ndarray:
    out = np.zeros((8, 10), np.float32)
    getattr(ctypes.CDLL(str(library)), symbol)(
        xs.ctypes.data_as(ctypes.c_void_p), out.ctypes.data_as(ctypes.c_void_p)
    )
    return out


def _compile(tmp_path: Path, *args: str | Path) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "lamina.tools.lamina_compile", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)


@pytest.fixture()
def program(tmp_path: Path, weights_model):
    module, xs, expected = weights_model()
    path = tmp_path / "net.mlir"
    path.write_text(str(module))
    return path, xs, expected


@needs_cc
def test_a_library_holds_its_weights_read_only_and_runs_from_a_copy(program, tmp_path):
    path, xs, expected = program
    proc = _compile(tmp_path, path, "-o", "net.so")
    assert proc.returncode == 0, proc.stderr
    symbols = subprocess.run(["nm", tmp_path / "net.so"], capture_output=True, text=True).stdout
    weights = [line.split() for line in symbols.splitlines() if "__lamina_w_" in line]
    assert len(weights) == 2, symbols  # both matrices detached ...
    assert all(kind in ("r", "R") for _, kind, _ in weights)  # ... into read-only data
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    copy = Path(shutil.copy(tmp_path / "net.so", elsewhere / "moved.so"))
    (tmp_path / "net.so").unlink()
    np.testing.assert_allclose(_call(copy, "lamina_main", xs), expected, rtol=1e-4, atol=1e-3)


@needs_cc
def test_two_models_object_files_link_into_one_program(program, tmp_path):
    path, xs, expected = program
    for prefix in ("a_", "b_"):  # the same kernels and weights: their symbols are local
        proc = _compile(tmp_path, path, "-o", f"{prefix}net.o", "--symbol-prefix", prefix)
        assert proc.returncode == 0, proc.stderr
    library = tmp_path / "both.so"
    link = subprocess.run(
        ["cc", "-shared", "-o", library, tmp_path / "a_net.o", tmp_path / "b_net.o", "-lm"]
        + ["-lgomp"],
        capture_output=True,
        text=True,
    )
    assert link.returncode == 0, link.stderr
    for symbol in ("a_main", "b_main"):
        np.testing.assert_allclose(_call(library, symbol, xs), expected, rtol=1e-4, atol=1e-3)


@needs_cc
@pytest.mark.parametrize("suffix", [".so", ".o"])
def test_an_unwritable_weights_file_is_one_line_and_leaves_nothing(
    program, tmp_path, monkeypatch, capsys, suffix
):
    from lamina.backends import codegen
    from lamina.tools.cli import guarded_main
    from lamina.tools.lamina_compile import run

    def full(constants, path):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(codegen, "write_weights", full)
    path, _, _ = program
    out = tmp_path / f"net{suffix}"
    assert guarded_main("lamina-compile", lambda: run([str(path), "-o", str(out)])) == 1
    err = capsys.readouterr().err.strip()
    assert "cannot write the temporary weights file" in err and "No space left" in err, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["net.mlir"]


@needs_cc
@pytest.mark.parametrize("suffix", [".so", ".o"])
def test_a_failing_c_compiler_is_one_line_and_leaves_nothing(
    program, tmp_path, monkeypatch, capsys, suffix
):
    from lamina.tools.cli import guarded_main
    from lamina.tools.lamina_compile import run

    monkeypatch.setenv("CC", "false")  # found, but assembling and linking fail
    path, _, _ = program
    out = tmp_path / f"net{suffix}"
    assert guarded_main("lamina-compile", lambda: run([str(path), "-o", str(out)])) == 1
    err = capsys.readouterr().err.strip()
    assert "codegen:" in err and "failed" in err, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["net.mlir"]


@needs_cc
def test_a_library_is_the_same_whichever_process_lowers_its_kernels(tmp_path, monkeypatch):
    """Part of the kernels lowered and compiled by a forked process (as `lamina.compile`
    does, backends/parallel_lowering.py), all in one process, or reused from the first
    build's kernel cache: the same library, byte for byte."""
    g = GraphBuilder()
    x = g.param((4, 16, 8, 8), name="x")
    rng = np.random.default_rng(5)
    for i in range(8):  # eight distinct kernels: enough for a fork (MIN_KERNELS)
        w = rng.standard_normal((16, 16, 3, 3)).astype(np.float32) * 0.1
        x = g.relu(g.conv2d(x, g.constant(w), padding=(1 + i % 2, 1 + i % 2)))
    g.ret(x)
    (tmp_path / "net.mlir").write_text(str(g.module()))
    from lamina.backends import kernel_cache, kernel_reuse, parallel_lowering
    from lamina.tools.lamina_compile import run

    forks = []
    start = parallel_lowering.start
    monkeypatch.setattr(parallel_lowering, "start", lambda *a: forks.append(a[-1]) or start(*a))
    libraries = []
    for processes, cache in (("2", "a"), ("1", "b"), ("1", "a")):
        monkeypatch.setenv("LAMINA_LOWER_PROCESSES", processes)
        monkeypatch.setenv("LAMINA_CACHE_DIR", str(tmp_path / cache))
        kernel_reuse.clear()
        kernel_cache.clear()
        out = tmp_path / f"net{len(libraries)}.so"
        assert run([str(tmp_path / "net.mlir"), "-o", str(out)]) == 0
        libraries.append(out.read_bytes())
    assert forks == [False]  # the first build forked (for position-independent code)
    third = kernel_cache.stats()
    assert third["built"] == 0 and third["disk"] >= 8  # the third build compiled no kernel
    assert libraries[0] == libraries[1] == libraries[2]
