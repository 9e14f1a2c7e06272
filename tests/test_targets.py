"""The target registry, target hooks in the pipeline, and the cblas target against cpu/NumPy."""

from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np
import pytest
from op_cases import CASES, OpCase, module_of
from xdsl.dialects.builtin import ModuleOp, f32, f64
from xdsl.passes import ModulePass

import lamina
from lamina.dialects import graph
from lamina.driver.hooks import read_module_targets
from lamina.driver.pipeline import PipelineError, pipeline_passes
from lamina.target import cblas
from lamina.target.registry import (
    Target,
    TargetError,
    check_target_available,
    get_target,
    register_target,
    target_names,
    unregister_target,
)

# ---------------------------------------------------------------------------
# The registry
# ---------------------------------------------------------------------------


def test_builtin_targets_and_aliases():
    assert {"cpu", "cblas"} <= set(target_names())
    assert get_target("host") is get_target("cpu")
    assert get_target("cblas").device_kind == "cpu"
    assert get_target("cblas").extends == "cpu"


def test_unknown_target_has_a_did_you_mean():
    with pytest.raises(TargetError, match=r"unknown target 'cbals' \(did you mean 'cblas'\?\)"):
        get_target("cbals")
    with pytest.raises(lamina.DiagnosticError, match="unknown target 'cbals'"):
        lamina.compile(MM, targets=["cbals"])


def test_bad_target_definitions_are_refused():
    with pytest.raises(TargetError, match="unknown hook point 'build_' .*did you mean 'build'"):
        Target("x", hooks={"build_": ["cse"]})
    with pytest.raises(TargetError, match="must also lower them"):
        Target("x", claim=lambda op: True)
    with pytest.raises(TargetError, match="unknown option 'vector_width'"):
        Target("x", options={"vector_width": 256})
    with pytest.raises(TargetError, match="is a list of integers.*tuning-records file"):
        lamina.compile(MM, targets=["cpu{block_vector_choices=1}"])
    with pytest.raises(TargetError, match="already registered"):
        register_target(Target("cpu"))


def test_code_generation_facts_come_from_the_host_and_options_override_them():
    host = get_target("cpu").facts
    assert host.vector_bits in (128, 256, 512) and host.cores >= 1
    narrow = Target("narrow", options={"vector_bits": 128, "cores": 1}).facts
    assert (narrow.vector_bits, narrow.cores, narrow.cpu_name) == (128, 1, host.cpu_name)


# ---------------------------------------------------------------------------
# Hooks in the pipeline
# ---------------------------------------------------------------------------

MM = """
graph.func @main(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %c: tensor<16xf32>) -> tensor<4x16xf32> {
  %m = graph.matmul %a, %b : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %r = graph.add %m, %c : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  graph.return %r : tensor<4x16xf32>
}
"""


@dataclass(frozen=True)
class CountOps(ModulePass):
    """A plain xDSL pass (no phase contract) used as a hook."""

    name = "test-count-ops"

    def apply(self, ctx, op):
        op.attributes.pop("test.seen", None)


@pytest.fixture
def scratch_target():
    """Register targets for one test, and forget them after it."""
    names = []

    def register(target: Target) -> Target:
        names.append(target.name)
        return register_target(target)

    yield register
    for name in names:
        unregister_target(name)


def test_hook_instances_run_in_place_and_are_recorded(scratch_target):
    scratch_target(Target("counting", extends="cpu", hooks={"build": [CountOps()]}))
    passes = pipeline_passes("default", ["counting"])
    names = [p.name for p in passes]
    assert names.index("lower-graph") < names.index("test-count-ops") < names.index("lower-to-llvm")
    exe = lamina.compile(MM, targets=["counting"])
    assert read_module_targets(exe.llvm_module) == ["cpu", "counting"]


def test_a_plain_xdsl_pass_runs_in_every_phase_before_build(scratch_target):
    from lamina.core.pass_manager import check_pass_phase
    from lamina.dialects.lamina import Phase, set_phase

    scratch_target(Target("ok", extends="cpu", hooks={"lowering": [CountOps()]}))
    assert "test-count-ops" in [p.name for p in pipeline_passes("default", ["ok"])]
    module = ModuleOp([])
    for phase in (Phase.INGESTION, Phase.OPTIMIZATION, Phase.LOWERING):
        set_phase(module, phase)
        check_pass_phase(CountOps(), module)
    set_phase(module, Phase.BUILD)
    with pytest.raises(
        lamina.DiagnosticError, match="'test-count-ops' cannot run in phase 'build'"
    ):
        check_pass_phase(CountOps(), module)


def test_a_hook_that_breaks_an_invariant_is_named(scratch_target):
    @dataclass(frozen=True)
    class UnLegalize(ModulePass):
        """Puts a graph compute op back after legalize: invariant 5 of phase lowering."""

        name = "test-unlegalize"

        def apply(self, ctx, op):
            func = next(o for o in op.ops if isinstance(o, graph.FuncOp))
            ret = func.body.block.last_op
            neg = graph.NegOp(ret.operands[0])
            func.body.block.insert_op_before(neg, ret)
            ret.operands[0] = neg.result

    scratch_target(Target("broken", extends="cpu", hooks={"lowering": [UnLegalize()]}))
    with pytest.raises(lamina.DiagnosticError) as info:
        lamina.compile(MM, targets=["broken"])
    text = info.value.format()
    assert (
        "hook pass 'test-unlegalize' of target 'broken' (hook point lowering) broke an "
        "invariant: phase 'lowering' invariant 5 violated: graph compute op 'graph.neg'"
    ) in text


def test_a_hook_where_its_pass_cannot_run_is_refused(scratch_target):
    scratch_target(Target("late", extends="cpu", hooks={"build": ["normalize"]}))
    with pytest.raises(PipelineError, match="hook pass 'normalize' of target 'late'.*cannot run"):
        pipeline_passes("default", ["late"])
    scratch_target(Target("moving", extends="cpu", hooks={"optimization": ["legalize"]}))
    with pytest.raises(PipelineError, match="is a transition pass; hooks may not change"):
        pipeline_passes("default", ["moving"])


def test_the_later_of_two_claims_is_refused_naming_both(scratch_target):
    scratch_target(
        Target("rival", claim=lambda op: isinstance(op, graph.MatmulOp), lower=lambda op: None)
    )
    with pytest.raises(lamina.DiagnosticError) as info:
        lamina.compile(MM, targets=["cblas", "rival"])
    assert (
        "'graph.matmul' is already claimed by target 'cblas'; target 'rival' cannot claim it "
        "too (the later claim is refused)"
    ) in info.value.format()


def test_the_module_targets_attribute_is_honoured():
    text = (
        MM.replace(
            "graph.func @main",
            'builtin.module attributes {lamina.targets = {cpu = [#lamina.target<"cpu">, '
            '#lamina.target<"cblas">]}} {\ngraph.func @main',
            1,
        )
        + "}\n"
    )
    exe = lamina.compile(text)
    assert "scipy_cblas_sgemm" in str(exe.llvm_module)
    bad = MM.replace("graph.func @main", "builtin.module attributes {lamina.targets = 3} {\ngraph.func @main", 1) + "}\n"  # fmt: skip
    with pytest.raises(lamina.DiagnosticError, match="'lamina.targets' must be a dictionary"):
        lamina.compile(bad)


def test_missing_openblas_names_the_package(monkeypatch):
    cblas.openblas.cache_clear()
    monkeypatch.setitem(sys.modules, "scipy_openblas32", None)
    try:
        with pytest.raises(TargetError, match=r"scipy-openblas32.*pip install 'lamina\[blas\]'"):
            check_target_available("cblas")
        with pytest.raises(lamina.DiagnosticError, match="scipy-openblas32"):
            lamina.compile(MM, targets=["cblas"])
    finally:
        cblas.openblas.cache_clear()


# ---------------------------------------------------------------------------
# cblas numerics: equal to the cpu target (and NumPy)
# ---------------------------------------------------------------------------

MATMUL_CASES = [
    c for c in CASES if c.op_name == "graph.matmul" and c.arg_types[0].element_type in (f32, f64)
]


def _compile_cases(cases: list[OpCase], target: str) -> lamina.Executable:
    module: ModuleOp = module_of([case.func(f"case{i}") for i, case in enumerate(cases)])
    return lamina.compile(module, targets=[target])


def test_cblas_equals_cpu_on_the_op_suite_matmul_cases():
    assert len(MATMUL_CASES) >= 14
    by_cblas = _compile_cases(MATMUL_CASES, "cblas")
    by_cpu = _compile_cases(MATMUL_CASES, "cpu")
    text = str(by_cblas.llvm_module)
    assert text.count("llvm.call @scipy_cblas_") >= 10  # most cases are claimed
    for i, case in enumerate(MATMUL_CASES):
        arrays = case.sample()
        got, want = by_cblas.run(f"case{i}", *arrays), by_cpu.run(f"case{i}", *arrays)
        np.testing.assert_allclose(got, want, rtol=case.rtol, atol=case.atol, err_msg=case.id)
        case.check(np.asarray(got), arrays)


DENSE = """
graph.func @main(%x: tensor<{x}x{t}>, %w: tensor<{w}x{t}>, %b: tensor<{b}x{t}>) -> tensor<{o}x{t}> {{
  %m = graph.matmul %x, %w : (tensor<{x}x{t}>, tensor<{w}x{t}>) -> tensor<{o}x{t}>
  %r = graph.add %m, %b : (tensor<{o}x{t}>, tensor<{b}x{t}>) -> tensor<{o}x{t}>
  graph.return %r : tensor<{o}x{t}>
}}
"""


@pytest.mark.parametrize(
    "x, w, b",
    [
        ((5, 7), (7, 3), (3,)),  # dense layer
        ((2, 5, 7), (2, 7, 3), (1, 3)),  # strided batch
        ((2, 5, 7), (7, 3), (5, 3)),  # shared B: one GEMM over stacked rows
        ((5, 7), (4, 7, 3), (4, 1, 3)),  # shared A: stride 0
        ((7,), (2, 7, 3), (3,)),  # 1-D lhs
    ],
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cblas_bias_and_batches_equal_cpu(x, w, b, dtype):
    out = np.matmul(np.zeros(x), np.zeros(w)).shape
    t = "f32" if dtype == np.float32 else "f64"
    dims = {k: "x".join(map(str, v)) for k, v in dict(x=x, w=w, b=b, o=out).items()}
    text = DENSE.format(t=t, **dims)
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s).astype(dtype) for s in (x, w, b)]
    exe = lamina.compile(text, targets=["cblas"])
    assert "scipy_cblas_" in str(exe.llvm_module)
    got = exe.run("main", *args)
    want = lamina.compile(text).run("main", *args)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    np.testing.assert_allclose(got, np.matmul(args[0], args[1]) + args[2], rtol=tol, atol=tol)


def test_module_facts_read_target_options_from_the_module():
    from lamina.core.context import make_context
    from lamina.core.diagnostics import parse_module
    from lamina.target.registry import module_facts

    text = (
        'builtin.module attributes {lamina.targets = {cpu = #lamina.target<"cpu", '
        "{vector_bits = 128 : i64, cores = 1 : i64}>}} {}"
    )
    facts = module_facts(parse_module(make_context(), text, "<t>"))
    assert (facts.vector_bits, facts.cores) == (128, 1)
    assert module_facts(ModuleOp([])) == get_target("cpu").facts
    bad = text.replace("vector_bits", "vector_width")
    with pytest.raises(TargetError, match="unknown option 'vector_width'"):
        module_facts(parse_module(make_context(), bad, "<t>"))


def test_layout_preferences_are_asked_in_target_order(scratch_target):
    from lamina.target.registry import preferred_layout

    marker = graph.ReluOp  # any attribute would do: the hook's answer is passed through
    scratch_target(Target("quiet", layout_preference=lambda op: None))
    scratch_target(Target("blocked", layout_preference=lambda op: "blocked-layout"))
    op = marker.__new__(marker)
    assert preferred_layout(op, ["cpu", "quiet", "blocked"]) == "blocked-layout"
    assert preferred_layout(op, ["cpu", "quiet"]) is None


def test_a_claim_by_a_target_without_a_lowering_is_an_error_at_the_op():
    text = MM.replace("graph.matmul %a, %b", 'graph.matmul %a, %b {lamina.codegen = "cpu"}')
    with pytest.raises(lamina.DiagnosticError) as info:
        lamina.compile(text)
    assert "'graph.matmul' op is claimed by target 'cpu', which does not lower" in (
        info.value.format()
    )


def test_a_crashing_plugin_hook_is_named_not_a_traceback(scratch_target):
    @dataclass(frozen=True)
    class Crash(ModulePass):
        name = "test-crash"

        def apply(self, ctx, op):
            raise ZeroDivisionError("oops")

    scratch_target(Target("crashy", extends="cpu", hooks={"optimization": [Crash()]}))
    with pytest.raises(lamina.DiagnosticError) as info:
        lamina.compile(MM, targets=["crashy"])
    assert (
        "hook pass 'test-crash' of target 'crashy' (hook point optimization) failed: "
        "ZeroDivisionError: oops"
    ) in info.value.format()


@pytest.mark.parametrize("example", ["mlp", "attention"])
def test_examples_on_cblas_equal_cpu(example):
    from pathlib import Path

    text = (Path(__file__).parents[1] / "examples" / f"{example}.mlir").read_text()
    blas, cpu = lamina.compile(text, targets=["cblas"]), lamina.compile(text)
    assert "scipy_cblas_" in str(blas.llvm_module)
    rng = np.random.default_rng(0)
    sig = blas.signatures["main"]
    args = [rng.standard_normal(p.shape).astype(p.dtype) for p in sig.params]
    np.testing.assert_allclose(
        blas.run("main", *args), cpu.run("main", *args), rtol=2e-4, atol=2e-3
    )


def test_target_options_from_the_command_line_spelling_override_the_facts():
    """`targets=["cpu{vector_bits=256 cores=1}"]` (as `--target` spells it) records
    the options in the module and compiles for them; the result is unchanged."""
    import numpy as np

    from lamina.driver.hooks import module_targets, split_target_spec
    from lamina.target.registry import module_facts

    assert split_target_spec("cpu{vector_bits=256, cores=1}") == (
        "cpu",
        {"vector_bits": 256, "cores": 1},
    )
    src = """
    graph.func @main(%a: tensor<33x40xf32>, %b: tensor<40x70xf32>) -> tensor<33x70xf32> {
      %c = graph.matmul %a, %b : (tensor<33x40xf32>, tensor<40x70xf32>) -> tensor<33x70xf32>
      graph.return %c : tensor<33x70xf32>
    }
    """
    from lamina.core.context import make_context
    from lamina.core.diagnostics import parse_module

    module = parse_module(make_context(), src)
    assert module_targets(module, ["cpu{vector_bits=256 cores=1}"]) == ["cpu"]
    facts = module_facts(module)
    assert (facts.vector_bits, facts.cores) == (256, 1)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((33, 40)).astype(np.float32)
    b = rng.standard_normal((40, 70)).astype(np.float32)
    for spec in ("cpu{vector_bits=128}", "cpu{vector_bits=256 vector_registers=16}"):
        got = lamina.compile(src, targets=[spec]).run("main", a, b)
        np.testing.assert_allclose(got, a @ b, rtol=1e-5, atol=1e-5)


def test_tuning_knobs_are_target_options_too():
    """A knob of `target/schedule_knobs.py` is a target option: validated like the facts,
    recorded in the module, read back by `module_knobs`; a facts-derived knob
    follows the facts. A compile with knobs far from the defaults still computes
    the product exactly (the knobs choose a schedule, never the result)."""
    import numpy as np

    from lamina.core.context import make_context
    from lamina.core.diagnostics import parse_module
    from lamina.driver.hooks import module_targets
    from lamina.target.registry import check_target_options, module_knobs
    from lamina.target.schedule_knobs import ScheduleKnobs

    check_target_options("cpu", {"pack_min_row_blocks": 16, "l2_bytes": 1 << 20})
    with pytest.raises(TargetError, match="option 'block_rows' must be >= 0, not -1"):
        check_target_options("cpu", {"block_rows": -1})
    with pytest.raises(TargetError, match="'conv_channel_jam_everywhere' must be 0 .off. or 1"):
        check_target_options("cpu", {"conv_channel_jam_everywhere": 7})
    with pytest.raises(TargetError, match="tuning knobs: .*pack_min_row_blocks"):
        check_target_options("cpu", {"pack_min_rows": 16})
    src = """
    graph.func @main(%a: tensor<64x40xf32>, %b: tensor<40x96xf32>) -> tensor<64x96xf32> {
      %c = graph.matmul %a, %b : (tensor<64x40xf32>, tensor<40x96xf32>) -> tensor<64x96xf32>
      graph.return %c : tensor<64x96xf32>
    }
    """
    spec = "cpu{pack_min_row_blocks=1 block_rows=3 l2_bytes=65536}"
    module = parse_module(make_context(), src)
    module_targets(module, [spec])
    knobs = module_knobs(module)
    assert (knobs.pack_min_row_blocks, knobs.block_rows) == (1, 3)
    assert knobs.pack_max_bytes == 32768  # l2_bytes // 2 of the overridden facts
    assert module_knobs(ModuleOp([])) == ScheduleKnobs.for_cpu(get_target("cpu").facts)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 40)).astype(np.float32)
    b = rng.standard_normal((40, 96)).astype(np.float32)
    got = lamina.compile(src, targets=[spec]).run("main", a, b)
    np.testing.assert_allclose(got, a @ b, rtol=1e-5, atol=1e-5)
