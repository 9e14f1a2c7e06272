"""Compile statistics: `lamina.compile(..., stats=True)` and `lamina-run --stats`."""

from __future__ import annotations

import subprocess
import sys

import lamina

PROGRAM = """\
graph.func @main(%a: tensor<8xf32>) -> tensor<8xf32> {
  %e = graph.exp %a : (tensor<8xf32>) -> tensor<8xf32>
  graph.return %e : tensor<8xf32>
}
"""

PHASES = ["parse + verify", "ingestion", "optimization", "lowering", "codegen"]
LLVM_STEPS = [
    "llvm: translate (llvm dialect -> LLVM IR)",
    "llvm: parse + verify",
    "llvm: optimize (O3)",
    "llvm: code generation",
]


def test_stats_has_a_row_per_phase_and_llvm_step(tmp_path, monkeypatch):
    monkeypatch.setenv("LAMINA_CACHE_DIR", str(tmp_path))
    exe = lamina.compile(PROGRAM, stats=True)
    stats = exe.stats
    names = [row.name for row in stats.rows]
    setup = ["import compiler", "parse + verify", "build pipeline"]
    assert names == ["cache lookup", *setup, *PHASES[1:], *LLVM_STEPS, "cache write", "(other)"]
    assert stats.cache_hit is False
    for name in PHASES:
        row = stats.row(name)
        assert row.seconds > 0 and row.python_peak_bytes > 0 and row.rss_peak_bytes > 0
    assert stats.row("llvm: optimize (O3)").depth == 1
    top = sum(row.seconds for row in stats.rows if row.depth == 0)  # (other): the rest
    assert abs(stats.total_seconds - top) < 1e-9
    assert exe.timings["total"] == stats.total_seconds
    hit = lamina.compile(PROGRAM, stats=True).stats
    assert hit.cache_hit is True and [r.name for r in hit.rows][:1] == ["cache lookup"]
    assert {r.name for r in hit.rows} <= {"cache lookup", "(other)"}
    assert "disk cache: hit" in hit.format()


def test_no_stats_unless_asked_and_cache_off_is_reported():
    assert lamina.compile(PROGRAM, cache=False).stats is None
    stats = lamina.compile(PROGRAM, cache=False, stats=True).stats
    assert stats.cache_hit is None and stats.row("cache lookup") is None
    assert "disk cache: off" in stats.format()
    assert [r["name"] for r in stats.as_dict()["rows"]][:2] == ["import compiler", "parse + verify"]


def test_lamina_run_stats(tmp_path):
    path = tmp_path / "p.mlir"
    path.write_text(PROGRAM)
    env_run = [sys.executable, "-m", "lamina.tools.lamina_run", str(path), "--stats"]
    first = subprocess.run(env_run, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    assert "compile statistics (disk cache: miss)" in first.stdout
    assert "llvm: optimize (O3)" in first.stdout and "out0: float32[8]" in first.stdout
    second = subprocess.run(env_run, capture_output=True, text=True)
    assert "compile statistics (disk cache: hit)" in second.stdout
    quiet = subprocess.run(env_run[:-1], capture_output=True, text=True)
    assert "compile statistics" not in quiet.stdout
