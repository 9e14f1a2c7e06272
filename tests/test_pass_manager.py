"""The phase-aware pass manager and named pipelines (core/pass_manager.py, driver/pipeline.py)."""

from __future__ import annotations

import io
from dataclasses import dataclass

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from lamina.core.context import make_context
from lamina.core.diagnostics import DiagnosticError, parse_module
from lamina.core.pass_base import ALL_PHASES, LaminaPass
from lamina.core.pass_manager import (
    PassManager,
    PipelineSpecError,
    parse_pass_pipeline,
    pipeline_spec_string,
)
from lamina.core.registry import pass_names
from lamina.dialects.lamina import Phase, get_phase, set_phase
from lamina.driver.pipeline import (
    PIPELINES,
    HookPoint,
    PipelineError,
    Stage,
    format_pipeline,
    pipeline_entries,
    pipeline_passes,
)

MATMUL = """\
graph.func @main(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %c = graph.matmul %a, %b : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  graph.return %c : tensor<2x4xf32>
}
"""


def module(phase: Phase = Phase.INGESTION) -> ModuleOp:
    parsed = parse_module(make_context(), MATMUL, "m.mlir")
    if phase != Phase.INGESTION:
        set_phase(parsed, phase)
    return parsed


@dataclass(frozen=True)
class Noop(LaminaPass):
    """Does nothing, in any phase."""

    name = "test-noop"
    phases = ALL_PHASES

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        pass


@dataclass(frozen=True)
class IngestOnly(Noop):
    name = "test-ingest-only"
    phases = frozenset({Phase.INGESTION})


@dataclass(frozen=True)
class LoweringOnly(Noop):
    name = "test-lowering-only"
    phases = frozenset({Phase.LOWERING})


@dataclass(frozen=True)
class ToOptimization(Noop):
    name = "test-to-optimization"
    phases = frozenset({Phase.INGESTION})
    produces = Phase.OPTIMIZATION


@dataclass(frozen=True)
class ToOptimizationLeavingMatmul(ToOptimization):
    name = "test-leaves-matmul"
    illegal_ops = ("graph.matmul",)


@dataclass(frozen=True)
class BackToIngestion(Noop):
    name = "test-back"
    produces = Phase.INGESTION


@dataclass(frozen=True)
class SneakyPhaseChange(Noop):
    name = "test-sneaky"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        set_phase(op, Phase.LOWERING)


@dataclass(frozen=True)
class BreaksIR(Noop):
    """Erases the function's terminator, which the verifier must catch."""

    name = "test-breaks-ir"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for inner in list(op.walk()):
            if inner.name == "graph.return":
                inner.detach()
                inner.erase(safe_erase=False)


def run(passes, mod=None, **options):
    mod = mod if mod is not None else module()
    PassManager(passes, **options).run(make_context(), mod)
    return mod


def message(err: pytest.ExceptionInfo[DiagnosticError]) -> str:
    return err.value.format()


def test_transition_records_the_new_phase():
    assert get_phase(run([ToOptimization()])) == Phase.OPTIMIZATION


def test_wrong_phase_is_refused_with_the_transition_to_run():
    with pytest.raises(DiagnosticError) as err:
        run([LoweringOnly()])
    text = message(err)
    assert text.startswith("m.mlir:1:1: error: pass 'test-lowering-only' cannot run in phase")
    assert "it runs in: lowering" in text
    assert "run 'lift-lambdas', then 'legalize' first" in text


def test_phases_never_move_backwards():
    with pytest.raises(DiagnosticError) as err:
        run([IngestOnly()], module(Phase.OPTIMIZATION))
    assert "phases only move forward" in message(err)
    with pytest.raises(DiagnosticError) as err:
        run([BackToIngestion()], module(Phase.OPTIMIZATION))
    assert "would move the module back" in message(err)


def test_only_transitions_may_change_the_phase():
    with pytest.raises(DiagnosticError) as err:
        run([SneakyPhaseChange()])
    assert "only a transition pass may change it" in message(err)


def test_illegal_ops_surviving_a_transition_are_reported_at_the_op():
    with pytest.raises(DiagnosticError) as err:
        run([ToOptimizationLeavingMatmul()])
    assert "m.mlir:2:3: error: test-leaves-matmul: failed to legalize operation 'graph.matmul'" in (
        message(err)
    )


def test_broken_ir_is_caught_after_the_pass_and_a_reproducer_written(tmp_path):
    repro = tmp_path / "repro.mlir"
    with pytest.raises(DiagnosticError) as err:
        run([Noop(), BreaksIR(), Noop()], reproducer_path=repro)
    text = message(err)
    assert "while running pass 'test-breaks-ir'" in text
    assert f"reproducer written to {repro}" in text
    written = repro.read_text()
    assert written.startswith("// configuration: -p 'test-breaks-ir,test-noop'\n")
    assert "graph.return" in written  # the IR *before* the failing pass


def test_verify_each_false_skips_verification():
    run([BreaksIR()], verify_each=False)


@dataclass(frozen=True)
class BreaksIRAndAsks(BreaksIR):
    """Breaks the IR and declares `verify_after`: verified even at boundaries only."""

    name = "test-breaks-ir-and-asks"
    verify_after = True


BOUNDARIES = {"verify_each": False, "verify_boundaries": True}


def test_boundaries_only_catch_broken_ir_at_the_next_transition():
    with pytest.raises(DiagnosticError) as err:
        run([BreaksIR(), Noop(), ToOptimization(), Noop()], **BOUNDARIES)
    assert "while running pass 'test-to-optimization'" in message(err)


def test_boundaries_only_verify_after_the_last_pass():
    with pytest.raises(DiagnosticError) as err:
        run([Noop(), BreaksIR(), Noop()], **BOUNDARIES)
    assert "while running pass 'test-noop'" in message(err)


def test_a_pass_declaring_verify_after_is_verified_at_boundaries_only():
    with pytest.raises(DiagnosticError) as err:
        run([BreaksIRAndAsks(), Noop(), Noop()], **BOUNDARIES)
    assert "while running pass 'test-breaks-ir-and-asks'" in message(err)


def test_boundaries_only_skip_the_passes_inside_a_phase(monkeypatch):
    import lamina.core.pass_manager as pass_manager

    calls: list[int] = []
    original = pass_manager.verify_module
    monkeypatch.setattr(pass_manager, "verify_module", lambda m: calls.append(1) or original(m))
    run([Noop(), Noop(), ToOptimization(), Noop(), Noop()], **BOUNDARIES)
    assert len(calls) == 2  # the transition and the last pass
    calls.clear()
    run([Noop(), Noop(), ToOptimization(), Noop(), Noop()])
    assert len(calls) == 3  # every pass, but the unchanged module is not verified twice


def test_a_compile_verifies_each_pass_only_when_asked(monkeypatch):
    from lamina.core.pass_manager import VERIFY_EACH_ENV, compile_verify_policy

    monkeypatch.delenv(VERIFY_EACH_ENV, raising=False)
    assert compile_verify_policy() == {"verify_each": False, "verify_boundaries": True}
    monkeypatch.setenv(VERIFY_EACH_ENV, "1")
    assert compile_verify_policy() == {"verify_each": True, "verify_boundaries": True}


def test_print_ir_after_all_and_timing():
    dumps, report = io.StringIO(), io.StringIO()
    manager = PassManager(
        [Noop(), ToOptimization()], print_ir_after_all=dumps, timing=True, timing_stream=report
    )
    manager.run(make_context(), module())
    assert "// -----// IR Dump After test-noop //----- //" in dumps.getvalue()
    assert "// -----// IR Dump After test-to-optimization //----- //" in dumps.getvalue()
    assert "#lamina.phase<optimization>" in dumps.getvalue()
    assert "Execution time report" in report.getvalue()
    assert "test-to-optimization" in report.getvalue()
    assert set(manager.pass_times) == {"test-noop", "test-to-optimization"}


def test_dump_phases_writes_the_module_entering_each_phase(tmp_path):
    run([Noop(), ToOptimization(), Noop()], dump_phases_to=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["0_ingestion.mlir", "1_optimization.mlir"]


def test_parse_pass_pipeline_options_and_errors():
    factories = {"test-noop": lambda: Noop}
    assert pipeline_spec_string(parse_pass_pipeline("test-noop,test-noop", factories)) == (
        "test-noop,test-noop"
    )
    with pytest.raises(
        PipelineSpecError, match="unknown pass 'test-nop'.*did you mean 'test-noop'"
    ):
        parse_pass_pipeline("test-nop", factories)
    with pytest.raises(PipelineSpecError, match="invalid options for pass 'test-noop'"):
        parse_pass_pipeline("test-noop{x=1}", factories)
    with pytest.raises(PipelineSpecError, match="malformed"):
        parse_pass_pipeline("test-noop{", factories)


DESIGN_ORDER = [
    "normalize",
    "lift-lambdas",
    "specialize-batch",  # our addition: static bodies of a dynamic batch (docs/dynamic-shapes.md)
    "canonicalize",
    "cse",
    "specialize-closures",  # our addition to docs/design.md §4 (docs/passes.md)
    "fold-constants",
    "plan-devices",
    "plan-layouts",
    "fuse-ops",
    "legalize",
    "lower-te",
    "schedule",
    "simplify",
    "plan-memory",
    "lower-graph",
    "concat-in-place",  # our addition: producers write their slices (docs/design-deviations.md)
    "lower-to-llvm",
]


def _stage_names(stages):
    names = []
    for stage in stages:
        names += [getattr(s, "name", s) for s in stage.steps if not isinstance(s, HookPoint)]
        names += [stage.exit] if stage.exit else []
    return names


def test_default_pipeline_follows_the_design_order():
    assert _stage_names(PIPELINES["default"]) == DESIGN_ORDER
    registered = set(pass_names())
    expected = [n for n in DESIGN_ORDER if n in registered]
    assert [e.name for e in pipeline_entries("default")] == expected


def test_compile_to_stops_before_the_next_transition():
    names = [e.name for e in pipeline_entries("default", stop=Phase.OPTIMIZATION)]
    assert "legalize" not in names and names[-1] in DESIGN_ORDER[3:10]
    names = [e.name for e in pipeline_entries("default", start=Phase.LOWERING)]
    assert names[0] == "lower-te" and names[-1] == "lower-to-llvm"


def test_every_step_of_the_default_pipeline_is_registered_and_shown():
    lines = format_pipeline("default").splitlines()
    assert not any("not registered" in line for line in lines)
    for entry in pipeline_entries("default"):
        assert any(line.startswith(f"  {entry.spec}") for line in lines), entry.spec
    assert all(e.available for e in pipeline_entries("default"))
    assert [p.name for p in pipeline_passes("default")] == [
        e.name for e in pipeline_entries("default")
    ]
    with pytest.raises(PipelineError, match="unknown pipeline"):
        pipeline_entries("nope")


def test_a_pipeline_naming_a_missing_pass_fails_naming_it(monkeypatch):
    monkeypatch.setitem(PIPELINES, "broken", (Stage(Phase.INGESTION, ("no-such-pass",), None),))
    with pytest.raises(PipelineError, match="no-such-pass"):
        pipeline_passes("broken")


@pytest.fixture()
def fancy_target():
    from lamina.target import Target, register_target, unregister_target

    register_target(Target("fancy", hooks={"optimization": ["cse"], "build": [Noop()]}))
    yield
    unregister_target("fancy")


def test_target_hooks_are_expanded_in_place(fancy_target):
    entries = pipeline_entries("default", ["cpu", "fancy"])
    hooked = [(e.spec, e.origin) for e in entries if e.origin.startswith("hook")]
    # A pass instance is spelled by its place among the target's hooks, which -p replays.
    replay = 'target-hook{target="fancy" point="build" index=0}'
    assert hooked == [
        ("cse", "hook optimization (target fancy)"),
        (replay, "hook build (target fancy)"),
    ]
    names = [e.name for e in entries]
    assert names.index("cse") < names.index("cse", 5) < names.index("legalize")
    assert names.index("lower-graph") < names.index("target-hook") < names.index("lower-to-llvm")
    text = format_pipeline("default", ["cpu", "fancy"])
    assert "  [hooks: optimization]\n    cse   (hook optimization (target fancy))" in text
    assert "  [hooks: lowering]   (none)" in text
    assert f"    {replay}   (hook build (target fancy): pass 'test-noop')" in text
