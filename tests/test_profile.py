"""The per-kernel profiler: `lamina.compile(..., profile=True)`, `Executable.profile`,
`lamina-run --profile`, and docs/performance.md's worked example."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import lamina
from lamina.runtime.executable import LaminaRuntimeError
from lamina.tools.lamina_run import run as lamina_run

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "performance.md"
MLP = ROOT / "examples" / "mlp.mlir"


def _inputs(exe):
    rng = np.random.default_rng(0)
    return [rng.standard_normal(t.shape).astype(np.float32) for t in exe.get_inputs()]


def test_profile_counts_every_kernel_call_and_keeps_numerics():
    plain = lamina.compile(MLP, cache=False)
    exe = lamina.compile(MLP, profile=True, cache=False)
    inputs = _inputs(exe)
    np.testing.assert_array_equal(exe.run("main", *inputs), plain.run("main", *inputs))
    profile = exe.profile("main", *inputs, runs=7, warmup=2)
    assert profile.runs == 7 and profile.entry == "main"
    assert len(profile.kernels) == 3
    assert all(k.calls == 7 for k in profile.kernels)
    assert all(k.symbol.startswith("te_fused_matmul_add") for k in profile.kernels)
    times = [k.total_ms for k in profile.kernels]
    assert times == sorted(times, reverse=True) and times[-1] > 0
    assert 0 < profile.kernel_ms <= profile.wall_ms
    assert sum(k.share for k in profile.kernels) == pytest.approx(
        profile.kernel_ms / profile.wall_ms
    )
    # Each layer's matmul runs on the team: one region per call.
    assert all(k.parallel and k.regions == 1 for k in profile.kernels)
    assert profile.regions_per_run == 3
    big = profile.kernels[0]
    assert big.iterations >= 8
    table = profile.table(top=1)
    assert table.splitlines()[0].startswith("@main: 7 runs")
    assert "(2 more)" in table and "(outside kernels)" in table


def test_profiling_build_compiles_in_units():
    """The clock-reading helpers stay in the host: the kernels are still units of their
    own (built on every core, cached), and the weights stay outside LLVM."""
    exe = lamina.compile(MLP, profile=True, cache=False)
    assert exe.compiled.timings.kernels is not None
    assert len(exe.compiled.timings.kernels) == 3  # the three kernels, no helper


def test_a_program_with_many_kernel_calls_is_profiled():
    """70 kernel calls: the counters (16 bytes a call) pass 1 KiB, the size from which
    constants leave LLVM for the weights blob. The counters are written, so they stay
    a global of the code; in the blob, the build found no counters to read."""
    calls, t = 70, "tensor<8x8xf32>"
    body = [f"  %v0 = graph.matmul %x, %w : ({t}, {t}) -> {t}"]
    body += [f"  %v{i} = graph.matmul %v{i - 1}, %w : ({t}, {t}) -> {t}" for i in range(1, calls)]
    text = "\n".join(
        [
            f"graph.func @main(%x: {t}, %w: {t}) -> {t} {{",
            *body,
            f"  graph.return %v{calls - 1} : {t}",
            "}",
        ]
    )
    exe = lamina.compile(text, profile=True, cache=False)
    x, w = np.eye(8, dtype=np.float32), np.eye(8, dtype=np.float32)
    np.testing.assert_array_equal(exe.run("main", x, w), x)
    profile = exe.profile("main", x, w, runs=3)
    assert sum(k.calls for k in profile.kernels) == 3 * calls


def test_profile_needs_a_profiling_build():
    exe = lamina.compile(MLP, cache=False)
    with pytest.raises(LaminaRuntimeError, match="profile=True"):
        exe.profile("main", *_inputs(exe))


def test_profiling_build_is_cached_apart(tmp_path, monkeypatch):
    monkeypatch.setenv("LAMINA_CACHE_DIR", str(tmp_path))
    plain = lamina.compile(MLP, cache=True)
    profiled = lamina.compile(MLP, cache=True, profile=True)
    again = lamina.compile(MLP, cache=True, profile=True)
    assert again.cache_hit is True
    inputs = _inputs(plain)
    with pytest.raises(LaminaRuntimeError):
        plain.profile("main", *inputs)
    assert len(profiled.profile("main", *inputs, runs=1).kernels) == 3
    assert again.profile("main", *inputs, runs=2).kernels[0].calls == 2


def test_lamina_run_profile_flag(capsys):
    assert lamina_run([str(MLP), "--profile", "--repeat", "12"]) == 0
    out = capsys.readouterr().out
    assert "@main: 12 runs" in out
    assert re.search(
        r"te_fused_matmul_add_relu_64x512xf32_loop +12 +[0-9.]+ +[0-9.]+% +1 region", out
    )


def test_worked_example_runs(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    section = PAGE.read_text().split("## Per-kernel profile")[1].split("\n## ")[0]
    example = re.findall(r"```python\n(.*?)```", section, re.DOTALL)[0]
    exec(compile(example, str(PAGE), "exec"), {})
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("@main: 20 runs") and "3 kernels" in lines[0]
    assert lines[-1].split()[1:] == ["20", "True"]


def test_call_sites_name_their_source_lines(capsys):
    """Each call site keeps the source ops it runs, in order: for a text module their
    `file:line:col`s (an imported model's: its node names, tests/test_onnx_import_tool.py);
    `lamina-run --profile` lists the slowest sites with them."""
    exe = lamina.compile(MLP, profile=True, cache=False)
    profile = exe.profile("main", *_inputs(exe), runs=4)
    lines = MLP.read_text().splitlines()
    assert [s.calls for s in profile.sites] == [4, 4, 4]
    for site in profile.sites:
        assert site.symbol.startswith("te_fused_matmul_add") and site.total_ms > 0
        numbers = [int(op.split(":")[1]) for op in site.ops]
        assert all(op.startswith("mlp.mlir:") for op in site.ops)
        assert numbers == sorted(numbers) and "graph.matmul" in lines[numbers[0] - 1]
    assert sum(s.total_ms for s in profile.sites) == pytest.approx(profile.kernel_ms)
    assert lamina_run([str(MLP), "--profile", "--repeat", "10"]) == 0
    out = capsys.readouterr().out
    assert "@main: 10 runs, 3 call sites" in out
    assert re.search(r"te_fused_matmul_add_relu_64x512xf32_loop +10 .* mlp\.mlir:\d+:\d+, ", out)
