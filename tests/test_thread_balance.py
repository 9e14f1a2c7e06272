"""Two-thread balance: classifier columns shared in packed panels, balanced chunks, and the
structural bound tool (docs/performance.md, "Where two threads lose")."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import lamina
from lamina.backends import codegen
from lamina.backends.llvm.parallel import (
    CHUNKS_PER_THREAD,
    MAX_CHUNK_FACTOR,
    _makespan,
    balanced_chunk,
)
from lamina.runtime import native_setup
from lamina.schedule.parallel import vector_column_panel
from lamina.target.schedule_knobs import ScheduleKnobs

ROOT = Path(__file__).resolve().parent.parent
KNOBS = ScheduleKnobs()


def test_balanced_chunk_splits_the_blocks_evenly():
    assert balanced_chunk(36, 2) == 3  # default 5: 20/16
    assert balanced_chunk(42, 2) == 3  # default 6: 24/18
    assert balanced_chunk(64, 2) is None  # default 8 already splits 32/32
    assert balanced_chunk(9, 2) is None  # 5/4 whatever the chunk
    assert balanced_chunk(36, 1) is None


def test_balanced_chunk_is_never_worse_and_bounded():
    for threads in (2, 3, 4):
        for n in range(2, 400):
            default = max(1, -(-n // (threads * CHUNKS_PER_THREAD)))
            chunk = balanced_chunk(n, threads) or default
            assert chunk <= default
            assert _makespan(n, chunk, threads) <= _makespan(n, default, threads)
            assert -(-n // chunk) <= MAX_CHUNK_FACTOR * -(-n // default)


def test_balanced_chunk_of_a_huge_loop_tries_one_size_per_chunk_count():
    """A 2**31-element loop (tests/test_trust_regressions.py's relu) has 2e8 chunk sizes
    between the default and the smallest; trying each kept its compile from ending."""
    for n in (2**31, 2**27 + 5, 10**6 + 3):
        default = -(-n // (2 * CHUNKS_PER_THREAD))
        chunk = balanced_chunk(n, 2) or default
        assert _makespan(n, chunk, 2) <= _makespan(n, default, 2)
        assert -(-n // chunk) <= MAX_CHUNK_FACTOR * -(-n // default)


def test_vector_column_panel_divides_the_columns():
    assert vector_column_panel(1000, 1280, 2, KNOBS) == 250
    assert vector_column_panel(1280, 960, 2, KNOBS) == 320
    assert vector_column_panel(1000, 1280, 1, KNOBS) is None  # one core
    assert vector_column_panel(1000, 16, 2, KNOBS) is None  # too little work for a team
    assert vector_column_panel(997, 1280, 2, KNOBS) is None  # a prime: no even blocks
    off = KNOBS.replace(parallel_column_blocks_per_core=0)
    assert vector_column_panel(1000, 1280, 2, off) is None


def _classifier(tmp_path: Path) -> tuple[Path, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    w = rng.standard_normal((1000, 1280)).astype(np.float32) / 32
    b = rng.standard_normal(1000).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1)],
        "classifier",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1280])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1000])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")],
    )
    path = tmp_path / "classifier.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    x = rng.standard_normal((1, 1280)).astype(np.float32)
    return path, x, x @ w.T + b


def test_classifier_shares_its_columns_and_keeps_numerics(tmp_path):
    path, x, want = _classifier(tmp_path)
    exe = lamina.compile(path, targets=["cpu{cores=2}"], profile=True, cache=False)
    serial = lamina.compile(
        path, targets=["cpu{cores=2 parallel_column_blocks_per_core=0}"], cache=False
    )
    profile = exe.profile("main", x, runs=2)
    assert profile.regions_per_run == 1  # the product's 4 column blocks
    assert any(k.iterations == 4 for k in profile.kernels)
    before = native_setup.get_max_threads()
    try:
        for threads in (1, 2):
            codegen.set_num_threads(threads)
            got = exe.run("main", x)
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
            np.testing.assert_array_equal(got, serial.run("main", x))  # same order of sums
    finally:
        codegen.set_num_threads(before)


@pytest.mark.skipif(shutil.which("cc") is None, reason="the shim needs a C compiler")
def test_thread_bound_tool_reports_the_classifier(tmp_path):
    path, _, _ = _classifier(tmp_path)
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_thread_bound.py"), str(path), "--runs", "2", "--gaps",
         "--taper", "2"],
        capture_output=True, text=True, check=True, timeout=600,
    ).stdout  # fmt: skip
    line = next(row for row in out.splitlines() if row.startswith("classifier"))
    fields = line.split()
    amdahl = float(fields[fields.index("Amdahl") + 1])
    on_demand = float(fields[fields.index("demand") + 1])
    assert "regions 1" in line
    assert 1.0 < on_demand <= amdahl <= 2.0
    # a worker 1.2x slower per chunk (default --worker-slow) lowers the bound; tapered
    # chunks give back part of it, never less
    slower = float(fields[fields.index("slower") + 1].rstrip(","))
    tapered = float(fields[fields.index("tapered") + 2].rstrip(")"))
    assert 1.0 < slower <= on_demand + 1e-9 and slower - 1e-9 <= tapered <= amdahl
