"""The C ABI of `lamina-compile` outputs (docs/abi.md): it links, it runs, it matches NumPy.

Every code block of docs/abi.md runs here, in order, in a scratch directory:
shell blocks with bash, `driver.c` is compiled by the system C compiler and
linked with the object file, the Python block calls the shared library with
ctypes; the C declarations shown must be what `lamina-compile` writes in the
header; the driver's printed logits are compared with the same MLP in NumPy.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
ABI_DOC = ROOT / "docs" / "abi.md"
FENCE = re.compile(r"^```(\w+)\n(.*?)^```", re.MULTILINE | re.DOTALL)

needs_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="no system C compiler")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def _compile(*args: str | Path, cwd: Path, env: dict[str, str] | None = None):
    cmd = [sys.executable, "-m", "lamina.tools.lamina_compile", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env or _env())


def _fill(n: int, seed: int) -> np.ndarray:
    """docs/abi.md's `fill` in float32, operation for operation."""
    pattern = ((np.arange(n) * 7 + seed) % 17).astype(np.float32)
    return (pattern / np.float32(17.0) - np.float32(0.5)) / np.float32(8.0)


def _mlp_reference() -> np.ndarray:
    x = _fill(64 * 784, 1).reshape(64, 784)
    w1, b1 = _fill(784 * 512, 2).reshape(784, 512), _fill(512, 3)
    w2, b2 = _fill(512 * 512, 4).reshape(512, 512), _fill(512, 5)
    w3, b3 = _fill(512 * 10, 6).reshape(512, 10), _fill(10, 7)
    hidden = np.maximum(np.maximum(x @ w1 + b1, 0) @ w2 + b2, 0)
    return hidden @ w3 + b3


@needs_cc
def test_every_abi_snippet_runs_and_the_c_driver_matches_numpy(tmp_path):
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    blocks = FENCE.findall(ABI_DOC.read_text())
    assert [lang for lang, _ in blocks].count("sh") >= 3, "docs/abi.md lost its commands"
    latest_header = None
    for lang, body in blocks:
        if lang == "sh":
            proc = subprocess.run(
                ["bash", "-euo", "pipefail", "-c", body],
                cwd=tmp_path,
                env=_env(),
                capture_output=True,
                text=True,
            )
            assert proc.returncode == 0, f"{body}\n{proc.stdout}\n{proc.stderr}"
            headers = sorted(tmp_path.glob("*.h"), key=lambda p: p.stat().st_mtime)
            latest_header = headers[-1] if headers else latest_header
        elif lang == "mlir":
            (tmp_path / "signature.mlir").write_text(body)
            assert _compile("signature.mlir", "-o", "signature.o", cwd=tmp_path).returncode == 0
            latest_header = tmp_path / "signature.h"
        elif lang == "c" and (name := re.match(r"/\* (\w+\.c)", body)):
            (tmp_path / name[1]).write_text(body)
        elif lang == "c":
            assert latest_header is not None, f"no header to hold:\n{body}"
            assert body.strip() in latest_header.read_text(), f"not in {latest_header.name}"
        elif lang == "python":
            proc = subprocess.run(
                [sys.executable, "-c", body], cwd=tmp_path, capture_output=True, text=True
            )
            assert proc.returncode == 0, proc.stderr
        else:
            pytest.fail(f"docs/abi.md has a {lang} block this test does not run")
    logits = np.loadtxt(tmp_path / "logits.txt", dtype=np.float64).reshape(64, 10)
    expected = _mlp_reference()
    np.testing.assert_allclose(logits, expected, rtol=1e-4, atol=1e-5 * np.abs(expected).max())


MATMUL = """\
graph.func @main(%a: tensor<3x5xf32>, %b: tensor<5x4xf32>) -> tensor<3x4xf32> {
  %c = graph.matmul %a, %b : (tensor<3x5xf32>, tensor<5x4xf32>) -> tensor<3x4xf32>
  graph.return %c : tensor<3x4xf32>
}
"""


@pytest.fixture()
def program(tmp_path: Path) -> Path:
    path = tmp_path / "mm.mlir"
    path.write_text(MATMUL)
    return path


def test_no_exported_symbol_is_main_and_the_prefix_is_configurable(program, tmp_path):
    assert _compile(program, "-o", "mm.ll", cwd=tmp_path).returncode == 0
    ir = (tmp_path / "mm.ll").read_text()
    assert "define void @lamina_main(" in ir and "@main(" not in ir
    assert (
        "void lamina_main(const float *arg0, const float *arg1, float *out0);"
        in (tmp_path / "mm.h").read_text()
    )
    proc = _compile(program, "-o", "p.ll", "--symbol-prefix", "net_", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "define void @net_main(" in (tmp_path / "p.ll").read_text()
    assert "void net_main(" in (tmp_path / "p.h").read_text()


@pytest.mark.parametrize(
    "prefix, message",
    [("", "would be exported as 'main'"), ("9x", "is not the start of a C identifier")],
)
def test_a_prefix_that_breaks_c_is_an_error_and_leaves_no_files(program, tmp_path, prefix, message):
    proc = _compile(program, "-o", "out.o", "--symbol-prefix", prefix, cwd=tmp_path)
    assert proc.returncode == 1 and message in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "out.o").exists() and not (tmp_path / "out.h").exists()


def test_assembly_and_bitcode_outputs(program, tmp_path):
    assert _compile(program, "-o", "mm.s", cwd=tmp_path).returncode == 0
    assert "lamina_main:" in (tmp_path / "mm.s").read_text()
    assert _compile(program, "-o", "mm.bc", cwd=tmp_path).returncode == 0
    assert (tmp_path / "mm.bc").read_bytes()[:4] == b"BC\xc0\xde"


def test_a_shared_library_without_a_c_compiler_is_a_clear_error(program, tmp_path):
    env = {k: v for k, v in _env().items() if k != "CC"}
    env["PATH"] = str(tmp_path / "empty-bin")
    proc = _compile(program, "-o", "mm.so", cwd=tmp_path, env=env)
    assert proc.returncode == 1, proc.stderr
    assert "needs a system C compiler" in proc.stderr and "Traceback" not in proc.stderr
    assert sorted(p.name for p in tmp_path.glob("mm.*")) == ["mm.mlir"]


def test_an_already_lowered_input_still_gets_a_header(program, tmp_path):
    lowered = subprocess.run(
        [sys.executable, "-m", "lamina.tools.lamina_opt", str(program), "--compile-to", "build"],
        capture_output=True,
        text=True,
    )
    assert lowered.returncode == 0, lowered.stderr
    (tmp_path / "low.mlir").write_text(lowered.stdout)
    assert _compile("low.mlir", "-o", "low.o", cwd=tmp_path).returncode == 0
    header = (tmp_path / "low.h").read_text()
    # lower-graph records the result count (`lamina.results`), so even build-phase
    # text declares typed parameters and results.
    assert "void lamina_main(const float *arg0, const float *arg1, float *out0);" in header


FFN = """
builtin.module {
  graph.func @main(%x: tensor<128x256xf32>, %w1: tensor<256x2048xf32>, %w2: tensor<2048x256xf32>) -> tensor<128x256xf32> {
    %h = graph.matmul %x, %w1 : (tensor<128x256xf32>, tensor<256x2048xf32>) -> tensor<128x2048xf32>
    %r = graph.relu %h : (tensor<128x2048xf32>) -> tensor<128x2048xf32>
    %y = graph.matmul %r, %w2 : (tensor<128x2048xf32>, tensor<2048x256xf32>) -> tensor<128x256xf32>
    %z = graph.add %y, %x : (tensor<128x256xf32>, tensor<128x256xf32>) -> tensor<128x256xf32>
    %h2 = graph.matmul %z, %w1 : (tensor<128x256xf32>, tensor<256x2048xf32>) -> tensor<128x2048xf32>
    %r2 = graph.relu %h2 : (tensor<128x2048xf32>) -> tensor<128x2048xf32>
    %y2 = graph.matmul %r2, %w2 : (tensor<128x2048xf32>, tensor<2048x256xf32>) -> tensor<128x256xf32>
    graph.return %y2 : tensor<128x256xf32>
  }
}
"""

FAULTS_DRIVER = """
import ctypes, resource, sys
import numpy as np
# glibc maps blocks of 64 KiB and more fresh and unmaps them on free (a fixed
# M_MMAP_THRESHOLD; by default it adapts, and whether a call then faults
# depends on the heap's layout, as in the worker threads' arenas).
assert ctypes.CDLL(None).mallopt(-3, 65536) == 1
f = ctypes.CDLL(sys.argv[1]).lamina_main
f.argtypes = [ctypes.c_void_p] * 4
shapes = (128, 256), (256, 2048), (2048, 256), (128, 256)
args = [np.full(s, 1 / 64, np.float32) for s in shapes]
for _ in range(3):
    f(*(a.ctypes.data for a in args))
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(5):
    f(*(a.ctypes.data for a in args))
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 5)
y = 2048 * (256 / 64**2 / 64) + 1 / 64  # first block, plus the residual
assert abs(args[3][0, 0] - 2048 * (256 * y / 64 / 64)) < 1e-3 * args[3][0, 0]
"""


@needs_cc
def test_a_library_reuses_its_temporaries_instead_of_faulting_them_in(tmp_path):
    """The device runtime keeps freed temporaries for the next call. Without
    that, a call whose temporaries glibc unmapped or trimmed after the last
    one page-faults them in again (1,100 faults per call of the transformer
    encoder in a lean process, 17 % of its time; how often glibc does so
    depends on its heap's layout, so the driver makes it do so always).
    Counted, not timed."""
    (tmp_path / "ffn.mlir").write_text(FFN)
    done = _compile("ffn.mlir", "-o", "ffn.so", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    env = _env() | {"OMP_NUM_THREADS": "2"}
    run = subprocess.run([sys.executable, "-c", FAULTS_DRIVER, str(tmp_path / "ffn.so")],
                         capture_output=True, text=True, env=env)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert float(run.stdout) < 16, run.stdout
