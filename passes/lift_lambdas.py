"""`lift-lambdas`: lift inner functions to top-level functions (ingestion → optimization).

TVM's LambdaLifting, the 0→1 transition of apache/tvm #15009 (P2): after this
pass, no later pass has to handle inner functions.

Each `graph.lambda` becomes a top-level `graph.func`. The values the lambda
captures (defined outside it, used inside it, also through nested lambdas)
become the function's leading parameters, in order of first use, and the
lambda is replaced by a `graph.closure` of the new function over them:

    graph.func @f(%x: T) -> !graph.fn<(T) -> T> {
      %l = graph.lambda ... {            // uses %x
      ^bb0(%y: T): ... graph.return %z : T
      } : !graph.fn<(T) -> T>
      graph.return %l : ...
    }
  ⇒
    graph.func @f(%x: T) -> !graph.fn<(T) -> T> {
      %l = graph.closure @f_lambda0(%x) : (T) -> !graph.fn<(T) -> T>
      graph.return %l : ...
    }
    graph.func @f_lambda0(%x: T, %y: T) -> T { ... graph.return %z : T }
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import (
    FunctionType,
    ModuleOp,
    StringAttr,
    UnitAttr,
)
from xdsl.ir import Operation

from lamina.core.diagnostics import Diagnostic, DiagnosticError
from lamina.core.liveness import captured_values
from lamina.core.pass_base import LaminaPass
from lamina.core.phase_invariants import (
    attr_of,
    enclosing_top_level,
    has_unit,
    in_codegen,
    is_impure_call,
    symbol_scope,
)
from lamina.dialects.graph import ClosureOp, FnType, FuncOp
from lamina.dialects.lamina import DeviceAttr, Phase, set_phase


class LambdaNamer:
    """Deterministic, unique names `<enclosing>_lambda<N>` (N counts per enclosing function)."""

    def __init__(self, module: ModuleOp):
        self.taken = {
            sym.data for op in module.ops if isinstance(sym := attr_of(op, "sym_name"), StringAttr)
        }
        self.counters: dict[str, int] = {}

    def fresh(self, enclosing: str) -> str:
        index = self.counters.get(enclosing, 0)
        while f"{enclosing}_lambda{index}" in self.taken:
            index += 1
        self.counters[enclosing] = index + 1
        name = f"{enclosing}_lambda{index}"
        self.taken.add(name)
        return name


def _enclosing_name(top: Operation | None) -> str:
    name = attr_of(top, "sym_name") if top is not None else None
    return name.data if isinstance(name, StringAttr) else "lambda"


def _device(op: Operation) -> DeviceAttr | None:
    device = op.properties.get("device")
    return device if isinstance(device, DeviceAttr) else None


def lift_lambda(module: ModuleOp, lam: Operation, name: str, anchor: Operation) -> Operation:
    """Replace `lam` by a closure of a new top-level function `name`, inserted after `anchor`.

    Returns the new function. Inner lambdas must have been lifted already, so
    every value `lam` needs from outside is an operand of an op inside it.
    """
    captures = captured_values(lam)
    body = lam.regions[0]
    entry = body.blocks.first
    assert entry is not None, "a graph.lambda has a body (checked by its verifier)"
    for index, value in enumerate(captures):
        param = entry.insert_arg(value.type, index)
        param.name_hint = value.name_hint
        value.replace_uses_with_if(param, lambda use: lam.is_ancestor(use.operation))

    terminator = entry.last_op
    results = terminator.operand_types if terminator is not None else ()
    function_type = FunctionType.from_lists(entry.arg_types, results)
    lam.detach_region(body)
    func = FuncOp(name, function_type, body)
    module.body.block.insert_op_after(func, anchor)
    _mark_purity(func, anchor)

    fn_type = lam.results[0].type
    assert isinstance(fn_type, FnType)
    closure = ClosureOp(name, captures, fn_type, device=_device(lam))
    closure.results[0].name_hint = lam.results[0].name_hint
    parent = lam.parent_block()
    assert parent is not None
    parent.insert_op_before(closure, lam)
    lam.results[0].replace_all_uses_with(closure.results[0])
    parent.erase_op(lam)
    return func


def _mark_purity(func: FuncOp, enclosing: Operation) -> None:
    """A lifted function that makes impure calls is `impure`, or `force_pure` when its
    enclosing function asserted purity with `force_pure` (invariant 10 of verify-phase).

    Lambdas nested in `func` were lifted first, so its body holds only its own ops.
    """
    if not any(is_impure_call(op) for op in func.walk()):
        return
    flag = "force_pure" if has_unit(enclosing, "force_pure") else "impure"
    func.properties[flag] = UnitAttr()


def lambdas_to_lift(module: ModuleOp) -> list[Operation]:
    """Every graph.lambda outside target-claimed (`lamina.codegen`) code, in pre-order."""
    return [op for op in module.walk() if op.name == "graph.lambda" and not in_codegen(op)]


def lift_all(module: ModuleOp) -> list[Operation]:
    """Lift every liftable lambda of `module`; return the new functions.

    Names are given in pre-order (an outer lambda gets a smaller number than
    the lambdas nested in it); lambdas are lifted in reverse pre-order, so a
    nested lambda is already a closure when its parent is lifted and its
    captures become captures of the parent (transitive capture).
    """
    namers: dict[ModuleOp, LambdaNamer] = {}
    plan: list[tuple[ModuleOp, Operation, str, Operation]] = []
    for lam in lambdas_to_lift(module):
        scope = symbol_scope(lam)
        namer = namers.setdefault(scope, LambdaNamer(scope))
        top = enclosing_top_level(lam, scope)
        assert top is not None
        plan.append((scope, lam, namer.fresh(_enclosing_name(top)), top))
    # Each function is inserted right after its enclosing one; lifting in
    # reverse pre-order therefore leaves them in pre-order (= name order).
    return [lift_lambda(scope, lam, name, top) for scope, lam, name, top in reversed(plan)]


@dataclass(frozen=True)
class LiftLambdasPass(LaminaPass):
    """Lift every `graph.lambda` to a top-level `graph.func` (ingestion → optimization).

    Input invariant: a verified module in phase ingestion.
    Output IR: no `graph.lambda` outside functions claimed by a target
    (`lamina.codegen`). Each lambda became a top-level `graph.func` named
    `<enclosing>_lambda<N>` (N numbers the lambdas of a top-level function in
    pre-order, skipping names already taken), whose leading parameters are the
    values the lambda captured, in order of first use, followed by the
    lambda's own parameters; the lambda itself was replaced by a
    `graph.closure` of that function over the captured values, with the
    lambda's `!graph.fn` type. A lifted function that makes impure calls is
    marked `impure` (`force_pure` inside a `force_pure` function).
    Invariants: the number of compute ops and the function types of all
    values are unchanged; the module verifies and satisfies the optimization
    phase invariants (`verify-phase`).
    """

    name = "lift-lambdas"
    phases = frozenset({Phase.INGESTION})
    produces = Phase.OPTIMIZATION
    illegal_ops = ("graph.lambda",)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        lift_all(op)
        # The pass manager also records the transition; setting it here keeps
        # the pass correct when applied directly through the Python API.
        set_phase(op, Phase.OPTIMIZATION)

    @classmethod
    def check_legality(cls, module: ModuleOp) -> None:
        """Lambdas inside target-claimed (`lamina.codegen`) code legitimately survive."""
        leftovers = lambdas_to_lift(module)
        if leftovers:
            raise DiagnosticError(
                Diagnostic(f"{cls.name}: failed to lift 'graph.lambda'", lam) for lam in leftovers
            )
