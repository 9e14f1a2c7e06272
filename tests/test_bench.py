"""benchmarks/bench.py --quick runs every case, checks its numerics and writes the CSV."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench.py"


def test_quick_benchmark_runs_every_case(tmp_path):
    out = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--rounds", "1", "--csv", "b.csv", "--plot", ""],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    with (tmp_path / "b.csv").open() as f:
        rows = list(csv.DictReader(f))
    cases = {row["case"].split()[0] for row in rows}
    assert cases == {"matmul", "mlp", "conv2d", "conv", "resnet-style", "attention"}
    for row in rows:
        assert float(row["lamina_ms"]) > 0 and float(row["numpy_ms"]) > 0
        assert float(row["max_rel_err"]) < 1e-4
        assert 0 < float(row["pct_peak"]) < 150  # against a measured FMA peak
    assert "measured f32 peak" in out.stdout


def test_runtime_benchmark_measures_load_and_threads(tmp_path):
    script = BENCH.parent / "bench_runtime.py"
    out = subprocess.run(
        [sys.executable, str(script), "--models", "mlp", "--rounds", "1", "--seconds", "0.2",
         "--work-dir", str(tmp_path), "--json", "rows.json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    import json

    [row] = json.loads((tmp_path / "rows.json").read_text())
    assert row["model"] == "mlp" and 0 < row["load_call_s_median"] < row["load_s_median"]
    assert row["rps_1_thread"] > 0 and row["rps_2_threads"] > 0
    assert "load average before" in out.stdout


def test_serve_benchmark_checks_every_answer(tmp_path):
    """bench_serve.py on the small MLP: one round of direct loops, Ray Serve and Ray
    alone for one configuration, a short burst whose every answer is checked (exit
    status 1 if one is lost or wrong)."""
    __import__("pytest").importorskip("ray.serve")
    script = BENCH.parent / "bench_serve.py"
    out = subprocess.run(
        [sys.executable, str(script), "--model", "mlp", "--configs", "1x1", "--rounds", "1",
         "--requests", "20", "--sequential", "2", "--work-dir", str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    assert "| 1x1 serve |" in out.stdout and "| 0 / 0 of 22 |" in out.stdout
    assert "Ray alone" in out.stdout and "load average before" in out.stdout


def test_rounds_time_calls_by_the_given_clock():
    """`_rounds` interleaves the calls and reads the clock it is given around each
    (bench_models.py's `--clock cpu` passes `time.thread_time`)."""
    sys.path.insert(0, str(BENCH.parent))
    try:
        import bench
    finally:
        sys.path.remove(str(BENCH.parent))
    ticks = iter(range(100))
    order: list[str] = []
    times = bench._rounds(
        [lambda: order.append("a"), lambda: order.append("b")],
        rounds=3,
        clock=lambda: float(next(ticks)),
    )
    assert order == ["a", "b"] * 4  # one warm-up call each, then three interleaved rounds
    assert times == [[1.0] * 3, [1.0] * 3]  # each call read the clock twice, one tick apart


def test_bench_models_cpu_clock_is_for_one_thread_only():
    script = BENCH.parent / "bench_models.py"
    out = subprocess.run(
        [sys.executable, str(script), "--clock", "cpu", "--threads", "1,2"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 2
    assert "--clock cpu times one thread" in out.stderr


def test_the_peak_kernel_keeps_its_accumulators_in_registers():
    """The FMA peak kernel (bench.py's `PeakProbe`) for AVX-512 and AVX2: every
    accumulator an FMA on a register, no stack traffic, no register shuffles."""
    import re

    sys.path.insert(0, str(BENCH.parent))
    try:
        import bench
    finally:
        sys.path.remove(str(BENCH.parent))
    from lamina.backends.codegen import emit_assembly

    for target, regs in (("cpu{isa=avx512}", 32), ("cpu{isa=avx2}", 16)):
        rows, vectors = bench.PEAK_CHAINS[regs]
        assert rows * vectors + 2 <= regs
        module, flops = bench._peak_module(target)
        asm = emit_assembly(module)
        fmas = len(re.findall(r"vfmadd\w+\s", asm))
        assert fmas and fmas % (rows * vectors) == 0, target  # the loop may be unrolled
        assert "(%rsp)" not in asm, target
        assert not re.search(r"vmovaps\s+%[yz]mm\d+, %[yz]mm\d+", asm), target
