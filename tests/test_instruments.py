"""The same instruments in every tool, located diagnostics, and the smaller API items.

`lamina-run`, `lamina-compile` and `lamina.compile(...)` share lamina-opt's
instruments (tools/cli.py, driver/instruments.py): targets, a timing report
whose rows include LLVM's optimization and code generation, IR dumps after
every pass, phase dumps and progress under `-v`. Ops created by passes keep
the location of the op they came from (core/locations.py).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, FusedLoc, ModuleOp, StringAttr, UnknownLoc
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

import lamina
from lamina.core.diagnostics import DiagnosticError
from lamina.dialects import graph
from lamina.dialects.lamina import Phase
from lamina.driver.pipeline import PIPELINES, Stage, format_pipeline, pipeline_passes
from lamina.tools import lamina_compile, lamina_run

ADD_RELU = """\
graph.func @main(%x: tensor<2x3xf32>, %bias: tensor<3xf32>) -> tensor<2x3xf32> {
  %y = graph.add %x, %bias : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %z = graph.relu %y : (tensor<2x3xf32>) -> tensor<2x3xf32>
  graph.return %z : tensor<2x3xf32>
}
"""


@pytest.fixture()
def program(tmp_path: Path) -> Path:
    path = tmp_path / "add_relu.mlir"
    path.write_text(ADD_RELU)
    return path


def _inputs():
    rng = np.random.default_rng(1)
    return rng.standard_normal((2, 3)).astype(np.float32), rng.standard_normal(3).astype(np.float32)


# -- the tools -----------------------------------------------------------------


def test_run_pass_timing_has_llvm_rows_and_explains_the_compile(program, capsys):
    assert lamina_run.run([str(program), "--pass-timing"]) == 0
    err = capsys.readouterr().err
    assert "Execution time report" in err
    for row in ("legalize", "lower-to-llvm", "(verifier)", "llvm: optimize (O3)"):
        assert row in err
    assert "llvm: code generation" in err or "cache hit" in err


def test_run_verbose_reports_progress_by_phase(program, capsys):
    assert lamina_run.run([str(program), "-v"]) == 0
    err = capsys.readouterr().err
    for phase in ("optimization", "lowering", "build"):
        assert f"entering phase {phase}" in err
    assert "codegen:" in err


def test_run_prints_ir_after_every_pass_and_dumps_phases(program, tmp_path, capsys):
    dumps = tmp_path / "phases"
    assert (
        lamina_run.run([str(program), "--print-ir-after-all", "--dump-phases-to", str(dumps)]) == 0
    )
    assert "// -----// IR Dump After legalize //----- //" in capsys.readouterr().err
    names = sorted(p.name for p in dumps.iterdir())
    assert names == ["0_ingestion.mlir", "1_optimization.mlir", "2_lowering.mlir", "3_build.mlir"]
    assert "llvm.func @main" in (dumps / "3_build.mlir").read_text()


def test_run_and_compile_accept_targets_and_reject_unknown_ones(program, tmp_path, capsys):
    assert lamina_run.run([str(program), "--target", "cpu"]) == 0
    with pytest.raises(DiagnosticError, match="unknown target 'tpu'"):
        lamina_run.run([str(program), "--target", "tpu"])
    with pytest.raises(DiagnosticError, match="unknown target 'tpu'"):
        lamina_compile.run([str(program), "-o", str(tmp_path / "x.o"), "-t", "tpu"])
    assert not (tmp_path / "x.o").exists()


def test_print_pipeline_in_run_and_compile(program, capsys):
    assert lamina_run.run([str(program), "--print-pipeline"]) == 0
    assert "lower-to-llvm   (transition to build)" in capsys.readouterr().out
    assert lamina_compile.run([str(program), "--print-pipeline"]) == 0
    assert "legalize   (transition to lowering)" in capsys.readouterr().out


def test_compile_pass_timing_has_llvm_rows(program, tmp_path, capsys):
    out = tmp_path / "a.o"
    assert lamina_compile.run([str(program), "-o", str(out), "--pass-timing", "-v"]) == 0
    err = capsys.readouterr().err
    assert "llvm: optimize (O3)" in err and "llvm: code generation" in err
    assert "codegen: LLVM optimization and .o output" in err


def test_run_inputs_npz_keyed_by_parameter_names(program, tmp_path, capsys):
    x, bias = _inputs()
    np.savez(tmp_path / "named.npz", x=x, bias=bias)
    np.savez(tmp_path / "mixed.npz", arg0=x, bias=bias)
    for name in ("named.npz", "mixed.npz"):
        out = tmp_path / f"out_{name}"
        args = [str(program), "--inputs", str(tmp_path / name), "--output", str(out)]
        assert lamina_run.run(args) == 0
        with np.load(out) as results:
            np.testing.assert_allclose(results["out0"], np.maximum(x + bias, 0), rtol=1e-6)
    np.savez(tmp_path / "wrong.npz", x=x)
    with pytest.raises(lamina_run.UsageError, match=r"missing arg1 \(or bias\)"):
        lamina_run.run([str(program), "--inputs", str(tmp_path / "wrong.npz")])


# -- the Python API ------------------------------------------------------------------


def test_compile_takes_a_path(program):
    x, bias = _inputs()
    for source in (program, str(program)):
        exe = lamina.compile(source)
        np.testing.assert_allclose(exe.run("main", x, bias), np.maximum(x + bias, 0), rtol=1e-6)
    with pytest.raises(FileNotFoundError):
        lamina.compile(str(program.parent / "missing.mlir"))


def test_compile_accepts_the_instruments(program, tmp_path, capsys):
    lamina.compile(
        ADD_RELU, pass_timing=True, print_ir_after_all=True, dump_phases_to=tmp_path / "d"
    )
    err = capsys.readouterr().err
    assert "IR Dump After lower-te" in err and "Execution time report" in err
    assert (tmp_path / "d" / "2_lowering.mlir").exists()


def test_str_of_a_diagnostic_error_is_located():
    bad = ADD_RELU.replace(
        "%z = graph.relu %y : (tensor<2x3xf32>) -> tensor<2x3xf32>\n  graph.return %z",
        "%z = graph.relu %y : (tensor<2x3xf32>) -> tensor<3x2xf32>\n  graph.return %y",
    )
    with pytest.raises(DiagnosticError) as info:
        lamina.compile(bad, filename="model.mlir")
    assert str(info.value).startswith("model.mlir:3:3: error: 'graph.relu' op")


# -- locations through passes ---------------------------------------------------------------


class _ReluToNeg(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ReluOp, rewriter: PatternRewriter) -> None:
        rewriter.replace(op, graph.NegOp(op.operands[0], op.results[0].type))


class _RewritingPass(ModulePass):
    name = "test-relu-to-neg"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from lamina.core.locations import locating_walker

        locating_walker(_ReluToNeg()).rewrite_module(op)


class _PlainRewritingPass(ModulePass):
    name = "test-relu-to-neg-plain"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(_ReluToNeg()).rewrite_module(op)


def _parsed(text: str) -> ModuleOp:
    from lamina.driver.lowering import parse_source

    return parse_source(text, "src.mlir")


def test_ops_created_by_a_pattern_take_the_matched_ops_location():
    from lamina.core.pass_manager import PassManager

    module = _parsed(ADD_RELU)
    PassManager([_RewritingPass()]).run(Context(), module)
    neg = next(op for op in module.walk() if isinstance(op, graph.NegOp))
    assert neg.location == FileLineColLoc(StringAttr("src.mlir"), *_int_attrs(3, 3))


def test_a_plain_walker_is_not_patched_and_its_new_ops_take_the_enclosing_location():
    from lamina.core.pass_manager import PassManager

    insert = PatternRewriter.insert
    module = _parsed(ADD_RELU)
    PassManager([_PlainRewritingPass()]).run(Context(), module)
    assert PatternRewriter.insert is insert  # no process-wide patch of xDSL's rewriter
    neg = next(op for op in module.walk() if isinstance(op, graph.NegOp))
    func = neg.parent_op()
    assert func is not None and neg.location == func.location


def _int_attrs(*values: int):
    from xdsl.dialects.builtin import IntAttr

    return tuple(IntAttr(v) for v in values)


def test_a_new_function_takes_the_fused_location_of_its_callers():
    from lamina.core.locations import fill_unknown_locations
    from lamina.core.pass_manager import PassManager, parse_pass_pipeline

    text = ADD_RELU.replace("%z = graph.relu %y", "%w = graph.relu %y").replace(
        "graph.return %z",
        "%z = graph.relu %w : (tensor<2x3xf32>) -> tensor<2x3xf32>\n  graph.return %z",
    )
    module = _parsed(text)
    # Without fuse-ops, legalize makes one relu kernel for both relus.
    PassManager(parse_pass_pipeline("normalize,lift-lambdas,legalize")).run(Context(), module)
    relu_kernels = [
        op for op in module.ops if "relu" in getattr(getattr(op, "sym_name", None), "data", "")
    ]
    assert len(relu_kernels) == 1
    loc = relu_kernels[0].location
    assert isinstance(loc, FusedLoc)
    assert [(inner.line.data, inner.column.data) for inner in loc.locations] == [(3, 3), (4, 3)]
    fill_unknown_locations(module)  # idempotent: nothing left without a location
    assert not any(isinstance(op.location, UnknownLoc) for op in module.walk() if op is not module)


# -- pipelines --------------------------------------------------------------------------


def test_a_pass_instance_in_a_pipeline_stage(monkeypatch):
    from lamina.passes.cse import CsePass

    stage = Stage(Phase.INGESTION, (CsePass(), "normalize"), None)
    monkeypatch.setitem(PIPELINES, "with-instance", (stage,))
    passes = pipeline_passes("with-instance")
    assert isinstance(passes[0], CsePass) and passes[1].name == "normalize"
    assert "  cse\n  normalize\n" in format_pipeline("with-instance")


# -- the docs' worked examples -------------------------------------------------------------

ROOT = Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^```(\w+)\n(.*?)^```", re.MULTILINE | re.DOTALL)


@pytest.mark.parametrize("page", ["instruments.md", "environment.md"])
def test_every_command_of_the_page_runs(page, tmp_path):
    """Shell and Python blocks run in order; `text` blocks are sample output."""
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    blocks = FENCE.findall((ROOT / "docs" / page).read_text())
    assert any(lang == "sh" for lang, _ in blocks)
    for lang, body in blocks:
        if lang == "text":
            continue
        cmd = ["bash", "-euo", "pipefail", "-c", body] if lang == "sh" else [sys.executable]
        assert lang in ("sh", "python"), f"{page} has a {lang} block this test does not run"
        proc = subprocess.run(
            cmd if lang == "sh" else [*cmd, "-c", body],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, f"{body}\n{proc.stdout}\n{proc.stderr}"
        if lang == "python":
            assert "['main']" in proc.stdout and "llvm: code generation" in proc.stderr


# -- one clock, one set of rows -------------------------------------------------------


def test_pass_timing_stats_and_verbose_agree(program):
    """`--pass-timing`, `--stats`, `-v` and the `compile:` line read one clock: the same
    total, the same phase rows (also with `-v --stats` together), and `-v`'s stamps
    on that clock (the phase is entered after the rows before it)."""
    result = subprocess.run(
        [sys.executable, "-m", "lamina.tools.lamina_run", str(program)]
        + ["--pass-timing", "-v", "--stats", "--no-progress"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    out, err = result.stdout, result.stderr
    report_total = float(re.search(r"Total Execution Time: ([\d.]+) seconds", err).group(1))
    stats_total = float(re.search(r"^  total +([\d.]+)$", out, re.M).group(1))
    compile_line = float(re.search(r"^compile: ([\d.]+) ms$", out, re.M).group(1))
    done = float(re.search(r"\[ *([\d.]+) s\] done", err).group(1))
    assert round(report_total * 1e3, 1) == stats_total == compile_line
    # One clock: the stamps differ only by the reads between them (a loaded machine
    # can preempt the process there for tens of ms; a second clock was off by seconds).
    assert abs(done - report_total) < 0.05

    stats_rows = dict(re.findall(r"^ +(\S[\w +():>-]*?) {2,}([\d.]+)(?: |$)", out, re.M))
    report_rows = dict(
        (name, float(sec))
        for sec, name in re.findall(r"^ +([\d.]+) \( *[\d.]+%\) +(\S.*)$", err, re.M)
    )
    phases = ["parse + verify", "build pipeline", "ingestion", "optimization", "lowering"]
    for row in [*phases, "codegen", "llvm: optimize (O3)"]:
        assert row in stats_rows, (row, out)
        assert abs(report_rows[row] * 1e3 - float(stats_rows[row])) < 0.06, row
    top = [float(stats_rows[r]) for r in [*phases, "import compiler", "codegen", "(other)"]]
    assert abs(sum(top) - stats_total) < 0.5  # the rows add up to the total

    stamps = dict(
        (phase, float(t)) for t, phase in re.findall(r"\[ *([\d.]+) s\] entering phase (\w+)", err)
    )
    before = sum(float(stats_rows[r]) for r in ["import compiler", *phases[:2]]) / 1e3
    assert stamps["ingestion"] >= before - 0.05
    assert stamps["build"] - stamps["lowering"] <= float(stats_rows["lowering"]) / 1e3 + 0.05
    assert "kernels: " in out and "parallel build: " in out and "cores busy" in err


def test_compile_stats_with_instruments_keep_the_phase_rows(capsys):
    exe = lamina.compile(ADD_RELU, cache=False, stats=True, verbose=True)
    names = [row.name for row in exe.stats.rows]
    for phase in ("parse + verify", "ingestion", "optimization", "lowering", "codegen"):
        assert phase in names
    assert exe.timings["total"] == exe.stats.total_seconds
    assert f"[{exe.stats.total_seconds:7.2f} s] done" in capsys.readouterr().err
