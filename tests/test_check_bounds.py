"""`--check-bounds`: an out-of-bounds access stops with kernel, buffer and index.

The programs are hand-written loop code (phase `lowering`) with a deliberate
off-by-one; `lamina.results` marks the trailing result buffer so `run` can
call them like graph programs (backends/llvm/entry_points.py).
"""

from __future__ import annotations

import ctypes
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import lamina

SHIFT = """\
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @shift(%a: memref<8xf32>, %out: memref<8xf32>) attributes {lamina.results = 1 : i64} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    loop.for %i = %c0 to %c8 step %c1 {
      %j = arith.addi %i, %c1 : index
      %v = loop.load %a[%j] : memref<8xf32>
      loop.store %v, %out[%i] : memref<8xf32>
    }
    loop.return
  }
}
"""

# A parallel kernel (outlined and run by GOMP_parallel) writes one row too low;
# the host must stop right after the call instead of running the second kernel.
PARALLEL = """\
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func private @rows(%a: memref<4x3xf32>, %out: memref<4x3xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    loop.for %i = %c0 to %c4 step %c1 kind(parallel) {
      %r = arith.subi %i, %c1 : index
      loop.for %j = %c0 to %c3 step %c1 {
        %v = loop.load %a[%i, %j] : memref<4x3xf32>
        loop.store %v, %out[%r, %j] : memref<4x3xf32>
      }
    }
    loop.return
  }
  loop.func private @mark(%out: memref<4x3xf32>) {
    %c3 = arith.constant 3 : index
    %c2 = arith.constant 2 : index
    %v = arith.constant 42.0 : f32
    loop.store %v, %out[%c3, %c2] : memref<4x3xf32>
    loop.return
  }
  loop.func @main(%a: memref<4x3xf32>, %out: memref<4x3xf32>) attributes {lamina.results = 1 : i64} {
    loop.call @rows(%a, %out) : (memref<4x3xf32>, memref<4x3xf32>) -> ()
    loop.call @mark(%out) : (memref<4x3xf32>) -> ()
    loop.return
  }
}
"""

GRAPH = """\
graph.func @main(%x: tensor<2x3x5xf32>, %w: tensor<5x4xf32>) -> tensor<2x4xf32> {
  %m = graph.matmul %x, %w : (tensor<2x3x5xf32>, tensor<5x4xf32>) -> tensor<2x3x4xf32>
  %s = graph.softmax %m {axis = -1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %r = graph.reduce_max %s {axes = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  graph.return %r : tensor<2x4xf32>
}
"""


def test_out_of_bounds_load_is_caught_with_kernel_buffer_and_index():
    exe = lamina.compile(SHIFT, check_bounds=True)
    a = np.arange(8, dtype=np.float32)
    for _ in range(2):  # the error is cleared after it is raised
        with pytest.raises(lamina.LaminaRuntimeError) as err:
            exe.run("shift", a)
        assert str(err.value) == (
            "kernel @shift: index (8) is out of bounds of buffer %a of shape 8 in loop.load "
            "(--check-bounds)"
        )


def test_negative_index_in_a_parallel_kernel_stops_the_host():
    exe = lamina.compile(PARALLEL, check_bounds=True)
    with pytest.raises(lamina.LaminaRuntimeError, match=r"kernel @rows.*index \(-1, [0-2]\).*%out"):
        exe.run("main", np.ones((4, 3), np.float32))


def test_in_bounds_programs_give_the_same_results():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 5), dtype=np.float32)
    w = rng.standard_normal((5, 4), dtype=np.float32)
    plain = lamina.compile(GRAPH).run("main", x, w)
    checked = lamina.compile(GRAPH, check_bounds=True).run("main", x, w)
    np.testing.assert_array_equal(plain, checked)


def _tool(name: str, *args: str | Path) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", f"lamina.tools.{name}", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def test_lamina_run_check_bounds(tmp_path):
    program = tmp_path / "shift.mlir"
    program.write_text(SHIFT)
    result = _tool("lamina_run", program, "--entry", "shift", "--check-bounds")
    assert result.returncode == 1
    assert "error: kernel @shift: index (8) is out of bounds of buffer %a" in result.stderr
    assert "Traceback" not in result.stderr


def test_lamina_compile_check_bounds_reports_through_the_c_abi(tmp_path):
    program = tmp_path / "shift.mlir"
    program.write_text(SHIFT)
    so = tmp_path / "shift.so"
    result = _tool("lamina_compile", program, "--check-bounds", "-o", so)
    assert result.returncode == 0, result.stderr
    lib = ctypes.CDLL(str(so))
    lib.lamina_shift.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    a, out = np.ones(8, np.float32), np.zeros(8, np.float32)
    lib.lamina_shift(a.ctypes.data, out.ctypes.data)  # the C ABI prefix (docs/abi.md)
    message = ctypes.c_int64.in_dll(lib, "lamina_error").value
    values = (ctypes.c_int64 * 4).in_dll(lib, "lamina_error_values")
    template = ctypes.string_at(message).decode()
    assert template.format(*values) == (
        "kernel @shift: index (8) is out of bounds of buffer %a of shape 8 in loop.load "
        "(--check-bounds)"
    )


def test_docs_example_runs_as_shown(tmp_path):
    """docs/runtime-errors.md: its program and the output it shows."""
    doc = (Path(__file__).parents[1] / "docs" / "runtime-errors.md").read_text()
    program = doc.split("```mlir\n", 1)[1].split("```", 1)[0]
    console = doc.split("```console\n", 1)[1].split("```", 1)[0].splitlines()
    assert console[0] == "$ lamina-run shift.mlir --entry shift --check-bounds"
    (tmp_path / "shift.mlir").write_text(program)
    result = _tool("lamina_run", tmp_path / "shift.mlir", "--entry", "shift", "--check-bounds")
    assert result.returncode == 1
    assert result.stderr.strip() == console[1]


# A kernel that computes for a while (a sum of `a`, 512 times) before an access at
# an index read from its input: calls from several threads overlap, some in bounds,
# some not.
PICK = """\
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @pick(%a: memref<512xf32>, %i: memref<1xi64>, %out: memref<1xf32>) attributes {lamina.results = 1 : i64} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = arith.constant 512 : index
    %z = arith.constant 0.0 : f32
    loop.store %z, %out[%c0] : memref<1xf32>
    loop.for %r = %c0 to %n step %c1 {
      loop.for %t = %c0 to %n step %c1 {
        %v = loop.load %a[%t] : memref<512xf32>
        %o = loop.load %out[%c0] : memref<1xf32>
        %s = arith.addf %o, %v : f32
        loop.store %s, %out[%c0] : memref<1xf32>
      }
    }
    %k = loop.load %i[%c0] : memref<1xi64>
    %j = arith.index_cast %k : i64 to index
    %v = loop.load %a[%j] : memref<512xf32>
    loop.store %v, %out[%c0] : memref<1xf32>
    loop.return
  }
}
"""


def test_concurrent_failing_and_succeeding_calls_never_return_a_wrong_result():
    """4 threads x 40 calls of one module, a third of them out of bounds. The error
    globals are per module (docs/runtime-errors.md): a failing call raises an
    out-of-bounds error (its own, or a concurrent call's), a succeeding call returns
    the right value or, if an error was recorded while it ran, raises one that says
    so; none returns a wrong value, and the module keeps working afterwards."""
    from concurrent.futures import ThreadPoolExecutor

    exe = lamina.compile(PICK, check_bounds=True)
    a = np.arange(512, dtype=np.float32)
    indices = [600 + t if (t + c) % 3 == 0 else 7 + t for t in range(4) for c in range(40)]

    def call(index: int) -> tuple[int, object]:
        try:
            return index, exe.run("pick", a, np.array([index], np.int64))[0]
        except lamina.LaminaRuntimeError as err:
            return index, str(err)

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(call, indices))
    succeeded = 0
    for index, result in results:
        if index >= 512:
            assert isinstance(result, str) and "index (6" in result and "out of bounds" in result
        elif isinstance(result, str):
            assert "out of bounds" in result and "recorded while this call ran" in result
        else:
            assert result == a[index]
            succeeded += 1
    assert succeeded > 0
    assert exe.run("pick", a, np.array([5], np.int64))[0] == 5.0  # the globals were cleared
