"""The phase checker (core/phase_invariants.py, the pass passes/verify_phase.py) and the ingestion passes' phase contracts."""

from __future__ import annotations

import re

import pytest
from xdsl.dialects.builtin import ModuleOp, StringAttr, SymbolRefAttr
from xdsl.traits import SymbolTable

import lamina.core.phase_invariants as phase_invariants
from lamina.core.context import make_context
from lamina.core.diagnostics import DiagnosticError, parse_module, verify_module
from lamina.core.pass_manager import PassManager
from lamina.core.phase_invariants import INVARIANTS, check_phase, invariants_for
from lamina.core.registry import get_pass_class
from lamina.dialects.graph import ClosureOp
from lamina.dialects.lamina import PHASE_ATTR_NAME, Phase, get_phase, set_phase
from lamina.passes.verify_phase import VerifyPhasePass

T = "tensor<4xf32>"
FN = f"!graph.fn<({T}) -> {T}>"

# One module breaking invariants 1, 4, 5, 6 and 7 when read in phase lowering,
# but none of the ingestion invariants (9, 10).
MANY = f"""
builtin.module {{
  graph.func @many(%x: {T}) -> {T} {{
    %r = graph.dataflow -> {T} {{
      %a = graph.relu %x : ({T}) -> {T}
      %f = graph.lambda (%y: {T}) -> {T} {{
        graph.return %y : {T}
      }}
      %b = graph.invoke %f(%a) {{pure}} : ({FN}, {T}) -> {T}
      graph.output %b : {T}
    }}
    graph.return %r : {T}
  }}
}}
"""


def parse(text: str, phase: Phase | None = None) -> ModuleOp:
    module = parse_module(make_context(), text, "test.mlir")
    verify_module(module)
    if phase is not None:
        set_phase(module, phase)
    return module


def numbers(diagnostics) -> list[int]:
    """The invariant number each diagnostic names."""
    return [int(re.search(r"invariant (\d+) violated", d.message).group(1)) for d in diagnostics]


# ---------------------------------------------------------------------------
# Numbering and phases of the invariants
# ---------------------------------------------------------------------------


def test_invariants_are_numbered_one_to_ten_in_the_docstring():
    assert sorted(INVARIANTS) == list(range(1, 11))
    doc = phase_invariants.__doc__
    for number, inv in INVARIANTS.items():
        assert re.search(rf"^\s*{number}\. \[{inv.since.label}\]", doc, re.MULTILINE), number


def test_invariants_grow_with_the_phase():
    assert [i.number for i in invariants_for(Phase.INGESTION)] == [9, 10]
    assert [i.number for i in invariants_for(Phase.OPTIMIZATION)] == [1, 2, 3, 9, 10]
    assert [i.number for i in invariants_for(Phase.LOWERING)] == [1, 2, 3, 4, 5, 6, 7, 9, 10]
    assert [i.number for i in invariants_for(Phase.BUILD)] == [8]


# ---------------------------------------------------------------------------
# check_phase
# ---------------------------------------------------------------------------


def test_every_violation_is_reported_in_ir_order():
    module = parse(MANY)
    diagnostics = check_phase(module, Phase.LOWERING)
    assert numbers(diagnostics) == [6, 4, 5, 1, 7]
    assert [d.op.name for d in diagnostics] == [
        "graph.func",
        "graph.dataflow",
        "graph.relu",
        "graph.lambda",
        "graph.invoke",
    ]
    for d in diagnostics:
        assert d.message.startswith("phase 'lowering' invariant ")
        assert d.resolved_location() is not None and d.resolved_location().file == "test.mlir"


def test_message_names_phase_invariant_and_fix():
    module = parse(MANY)
    dataflow = check_phase(module, Phase.LOWERING)[1]
    assert dataflow.message == (
        "phase 'lowering' invariant 4 violated: 'graph.dataflow' is not allowed from phase "
        "lowering on (run legalize to flatten dataflow blocks)"
    )
    assert dataflow.format().startswith("test.mlir:4:5: error: phase 'lowering' invariant 4")


def test_phase_defaults_to_the_module_attribute():
    assert check_phase(parse(MANY)) == []  # no lamina.phase: ingestion
    assert numbers(check_phase(parse(MANY, Phase.OPTIMIZATION))) == [1]
    assert numbers(check_phase(parse(MANY, Phase.LOWERING))) == [6, 4, 5, 1, 7]


def test_explicit_phase_overrides_the_module_attribute():
    module = parse(MANY, Phase.LOWERING)
    assert check_phase(module, Phase.INGESTION) == []
    assert numbers(check_phase(module, Phase.OPTIMIZATION)) == [1]


def test_build_phase_reports_each_op_once():
    diagnostics = check_phase(parse(MANY), Phase.BUILD)
    assert set(numbers(diagnostics)) == {8}
    assert len(diagnostics) == sum(1 for op in parse(MANY).walk()) - 1


def test_bad_phase_attribute_is_a_diagnostic():
    module = parse(MANY)
    module.attributes[PHASE_ATTR_NAME] = StringAttr("lowering")
    diagnostics = check_phase(module)
    assert len(diagnostics) == 1
    assert "must be a #lamina.phase" in diagnostics[0].message


def test_closure_of_a_missing_function_breaks_invariant_2():
    """The graph.closure verifier rejects this too; the checker judges unverified IR."""
    module = parse(
        f"""
        builtin.module attributes {{lamina.phase = #lamina.phase<optimization>}} {{
          graph.func @target(%w: {T}, %y: {T}) -> {T} {{
            graph.return %y : {T}
          }}
          graph.func @user(%w: {T}) -> {FN} {{
            %c = graph.closure @target(%w) : ({T}) -> {FN}
            graph.return %c : {FN}
          }}
        }}
        """
    )
    assert check_phase(module) == []
    closure = next(op for op in module.walk() if isinstance(op, ClosureOp))
    closure.properties["callee"] = SymbolRefAttr("nowhere")
    (diagnostic,) = check_phase(module)
    assert diagnostic.op is closure
    assert diagnostic.message.startswith(
        "phase 'optimization' invariant 2 violated: 'graph.closure' callee @nowhere is not "
        "a top-level 'graph.func'"
    )


def test_codegen_functions_keep_their_inner_structure():
    module = parse(MANY, Phase.LOWERING)
    func = next(op for op in module.walk() if op.name == "graph.func")
    func.attributes["lamina.codegen"] = StringAttr("cblas")
    # Only the purity-tracking invariants (6, 7) still apply to claimed code.
    assert numbers(check_phase(module)) == [6, 7]


def test_ingestion_invariants_hold_in_every_phase():
    text = f"""
    builtin.module {{
      graph.func @f(%x: {T}) -> {T} {{
        %a = graph.call_extern "print"(%x) : ({T}) -> {T}
        graph.return %a : {T}
      }}
    }}
    """
    assert numbers(check_phase(parse(text), Phase.INGESTION)) == [10]
    assert numbers(check_phase(parse(text), Phase.OPTIMIZATION)) == [10]


def test_force_pure_callee_is_pure_for_callers():
    text = f"""
    builtin.module {{
      graph.func @forced(%x: {T}) -> {T} attributes {{force_pure}} {{
        %a = graph.call_extern "print"(%x) : ({T}) -> {T}
        graph.return %a : {T}
      }}
      graph.func @effect(%x: {T}) -> {T} attributes {{impure}} {{
        graph.return %x : {T}
      }}
      graph.func @caller(%x: {T}) -> {T} {{
        %a = graph.call @forced(%x) : ({T}) -> {T}
        %b = graph.call @effect(%a) : ({T}) -> {T}
        graph.return %b : {T}
      }}
    }}
    """
    (diagnostic,) = check_phase(parse(text))
    assert diagnostic.message.startswith(
        "phase 'ingestion' invariant 10 violated: pure 'graph.func' @caller calls impure "
        "'graph.call' (@effect)"
    )


# ---------------------------------------------------------------------------
# The verify-phase pass and the pass contracts
# ---------------------------------------------------------------------------


def test_verify_phase_pass_raises_all_violations():
    module = parse(MANY, Phase.LOWERING)
    with pytest.raises(DiagnosticError) as err:
        VerifyPhasePass().apply(make_context(), module)
    assert numbers(err.value.diagnostics) == [6, 4, 5, 1, 7]


def test_verify_phase_pass_accepts_a_well_formed_module():
    module = parse(MANY)
    VerifyPhasePass().apply(make_context(), module)
    VerifyPhasePass(phase="ingestion").apply(make_context(), module)
    with pytest.raises(DiagnosticError, match="invariant 1 violated"):
        VerifyPhasePass(phase="optimization").apply(make_context(), module)


def test_verify_phase_pass_rejects_an_unknown_phase_option():
    with pytest.raises(DiagnosticError, match="unknown phase 'bogus'"):
        VerifyPhasePass(phase="bogus").apply(make_context(), parse(MANY))


@pytest.mark.parametrize(
    ("flag", "phases", "produces"),
    [
        ("verify-phase", set(Phase), None),
        ("lift-lambdas", {Phase.INGESTION}, Phase.OPTIMIZATION),
        ("normalize", {Phase.INGESTION}, None),
        ("canonicalize", set(Phase), None),
        ("cse", set(Phase), None),
    ],
)
def test_pass_contracts(flag, phases, produces):
    cls = get_pass_class(flag)
    assert set(cls.phases) == phases
    assert cls.produces == produces
    for section in ("Input invariant:", "Output IR:", "Invariants:"):
        assert section in cls.__doc__


def test_ingestion_pipeline_enters_optimization():
    module = parse(MANY)
    passes = [get_pass_class(flag)() for flag in ("normalize", "lift-lambdas")]
    PassManager(passes).run(make_context(), module)
    assert get_phase(module) is Phase.OPTIMIZATION
    assert not any(op.name == "graph.lambda" for op in module.walk())
    assert check_phase(module) == []


def test_lift_lambdas_is_refused_after_ingestion():
    module = parse(MANY, Phase.OPTIMIZATION)
    with pytest.raises(DiagnosticError, match="lift-lambdas"):
        PassManager([get_pass_class("lift-lambdas")()]).run(make_context(), module)


def test_lift_lambdas_sets_the_phase_when_applied_directly():
    module = parse(MANY)
    get_pass_class("lift-lambdas")().apply(make_context(), module)
    assert get_phase(module) is Phase.OPTIMIZATION
    verify_module(module)
    assert check_phase(module) == []


def test_lambda_bodies_are_functions_of_their_own():
    """Creating a lambda calls nothing: its impure calls are not the enclosing function's,
    and lift-lambdas marks the lifted function `impure`."""
    module = parse(
        f"""
        builtin.module {{
          graph.func @g(%x: {T}) -> {FN} {{
            %f = graph.lambda (%y: {T}) -> {T} {{
              %a = graph.call_extern "print"(%y) : ({T}) -> {T}
              graph.return %a : {T}
            }}
            graph.return %f : {FN}
          }}
        }}
        """
    )
    assert check_phase(module) == []
    get_pass_class("lift-lambdas")().apply(make_context(), module)
    lifted = SymbolTable.lookup_symbol(module, "g_lambda0")
    assert lifted is not None and lifted.properties.get("impure") is not None
    assert check_phase(module) == []


def test_pass_docstring_lists_every_invariant():
    doc = VerifyPhasePass.__doc__
    for number, inv in INVARIANTS.items():
        assert re.search(rf"^\s*{number}\. \[{inv.since.label}\]", doc, re.MULTILINE), number
