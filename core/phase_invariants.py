"""The well-formed checker: what a module may contain in each phase (docs/design.md §2, §5).

Like TVM's `well_formed.cc`, the invariants are numbered, and every diagnostic
names the phase, the invariant's number and what to run to fix it:

    phase 'lowering' invariant 4 violated: 'graph.dataflow' is not allowed from
    phase lowering on (run legalize to flatten dataflow blocks)

Invariants, for a module in phase >= the phase in brackets:

 1. [optimization] No `graph.lambda`: inner functions are lifted to top-level
    `graph.func`s by `lift-lambdas`. Exception: a function (or op) carrying
    `lamina.codegen` was claimed by a target and may keep its inner structure.
 2. [optimization] Every `graph.closure` names a top-level `graph.func`.
 3. [optimization] Only ops of the dialects `builtin`, `graph`, `te`, `loop`,
    `llvm`, `arith` and `math` (scalar arithmetic inside te/loop regions).
 4. [lowering] No `graph.dataflow` (legalize flattens dataflow blocks), except
    inside a `lamina.codegen` function.
 5. [lowering] No graph op with the `GraphCompute` trait: every tensor op was
    legalized into `graph.call_te` / `graph.call_loop` / `graph.call_extern`,
    except ops claimed by a target (`lamina.codegen` on the op or its function).
 6. [lowering] Every `graph.func` is `impure` or `force_pure` (purity tracking
    removed).
 7. [lowering] No `graph.call_extern` and no `graph.invoke` carries `pure`.
 8. [build] Nothing but `builtin.module` and `llvm.*` ops. In the build phase
    this invariant subsumes 1-7, 9 and 10, which are therefore not checked
    separately (one diagnostic per offending op).
 9. [ingestion] A `graph.dataflow` block holds only pure ops: graph compute
    ops, `graph.constant`, closures, device/layout ops, `graph.call` of a pure
    (or `force_pure`) function, `graph.call_te` / `graph.call_loop` (pure by
    destination-passing style), `graph.call_extern` / `graph.invoke` with
    `pure`, nested dataflow blocks, and side-effect-free upstream ops
    (`arith.constant`, ...). A `graph.lambda` inside a dataflow block is pure
    (creating it runs nothing).
10. [ingestion] A pure `graph.func` (neither `impure` nor `force_pure`) calls
    nothing impure: no `graph.call` of an `impure` function, no
    `graph.call_extern` / `graph.invoke` without `pure`. The body of an inner
    `graph.lambda` is a function of its own, not executed by creating it: its
    calls are not the enclosing function's (`lift-lambdas` marks a lifted
    function that makes impure calls `impure`).

Invariants 9 and 10 hold in every phase; from phase lowering on they are
vacuous (no dataflow blocks, no pure functions).

API: `check_phase(module, phase=None) -> list[Diagnostic]` (the pass manager
calls it after every transition); the pass `verify-phase`
(passes/verify_phase.py) raises a DiagnosticError listing every violation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp, StringAttr, SymbolRefAttr, UnregisteredOp
from xdsl.ir import Attribute, Operation
from xdsl.traits import is_side_effect_free
from xdsl.utils.exceptions import VerifyException

from lamina.core.diagnostics import Diagnostic, op_name
from lamina.core.symbols import lookup_symbol
from lamina.core.walk import preorder
from lamina.dialects.graph import GraphCompute
from lamina.dialects.lamina import Phase, codegen_target, get_phase


@dataclass(frozen=True)
class Invariant:
    """One numbered phase invariant: the phase it starts in and a one-line statement."""

    number: int
    since: Phase
    text: str


INVARIANTS: dict[int, Invariant] = {
    inv.number: inv
    for inv in (
        Invariant(1, Phase.OPTIMIZATION, "no 'graph.lambda' (inner functions are lifted)"),
        Invariant(2, Phase.OPTIMIZATION, "every 'graph.closure' names a top-level 'graph.func'"),
        Invariant(
            3,
            Phase.OPTIMIZATION,
            "only builtin, graph, te, loop, llvm, arith and math ops",
        ),
        Invariant(4, Phase.LOWERING, "no 'graph.dataflow'"),
        Invariant(5, Phase.LOWERING, "no graph compute op (GraphCompute trait)"),
        Invariant(6, Phase.LOWERING, "every 'graph.func' is 'impure' or 'force_pure'"),
        Invariant(7, Phase.LOWERING, "no 'graph.call_extern' or 'graph.invoke' carries 'pure'"),
        Invariant(8, Phase.BUILD, "only 'builtin.module' and 'llvm.*' ops"),
        Invariant(9, Phase.INGESTION, "a 'graph.dataflow' block holds only pure ops"),
        Invariant(10, Phase.INGESTION, "a pure 'graph.func' calls nothing impure"),
    )
}

OPTIMIZATION_DIALECTS = frozenset({"builtin", "graph", "te", "loop", "llvm", "arith", "math"})
"""Dialects whose ops may appear from phase optimization on (invariant 3)."""

IMPURE_CALL_OPS = frozenset({"graph.call", "graph.call_extern", "graph.invoke"})


# ---------------------------------------------------------------------------
# Small queries on graph ops, by name (the checker must also judge IR that
# does not verify, so it relies on names and attributes only)
# ---------------------------------------------------------------------------


def attr_of(op: Operation, name: str) -> Attribute | None:
    """A property or attribute of `op` (the generic form may put either)."""
    found = op.properties.get(name)
    return found if found is not None else op.attributes.get(name)


def has_unit(op: Operation, name: str) -> bool:
    """Whether `op` carries the unit flag `name` (as a property or attribute)."""
    return attr_of(op, name) is not None


def callee_name(op: Operation) -> str | None:
    """The symbol named by `op`'s `callee` (a symbol reference or a string)."""
    callee = attr_of(op, "callee")
    if isinstance(callee, SymbolRefAttr):
        return callee.root_reference.data
    if isinstance(callee, StringAttr):
        return callee.data
    return None


def is_func_pure(func: Operation) -> bool:
    """A `graph.func` is pure unless it carries `impure` (docs/design.md §3.2)."""
    return not has_unit(func, "impure")


def is_tracked_pure_func(func: Operation) -> bool:
    """Neither `impure` nor `force_pure`: the function's purity is checked (invariant 10)."""
    return not has_unit(func, "impure") and not has_unit(func, "force_pure")


def symbol_scope(op: Operation) -> ModuleOp:
    """The innermost `builtin.module` around `op`: the symbol table its symbols resolve in."""
    parent = op.parent_op()
    while not isinstance(parent, ModuleOp):
        if parent is None:
            raise ValueError(f"'{op.name}' is not inside a builtin.module")
        parent = parent.parent_op()
    return parent


def top_level_func(user: Operation, name: str | None) -> Operation | None:
    """The `graph.func` called `name` at the top level of `user`'s module, if there is one."""
    if name is None:
        return None
    scope = symbol_scope(user)
    found = lookup_symbol(scope, name)
    if found is None or found.name != "graph.func" or found.parent_op() is not scope:
        return None
    return found


def is_impure_call(op: Operation) -> bool:
    """Whether `op` is a call that may have side effects (invariants 9, 10).

    `graph.call_extern` and `graph.invoke` are impure unless marked `pure`; a
    `graph.call` is impure when its callee is an `impure` function. A call
    whose callee does not resolve is left to the op verifiers.
    """
    if op.name in ("graph.call_extern", "graph.invoke"):
        return not has_unit(op, "pure")
    if op.name == "graph.call":
        callee = top_level_func(op, callee_name(op))
        return callee is not None and not is_func_pure(callee)
    return False


def is_pure_in_dataflow(op: Operation, module: ModuleOp) -> bool:
    """Whether `op` may appear in a dataflow block (invariant 9).

    Graph ops have value semantics, so every graph op but the impure calls and
    the function-level ops (`graph.func`, `graph.return`) is pure; other
    dialects' ops must declare themselves side-effect free.
    """
    if op.name in IMPURE_CALL_OPS:
        return not is_impure_call(op)
    if op.name in ("graph.func", "graph.return"):
        return False
    if op.dialect_name() == "graph":
        return True
    return is_side_effect_free(op)


def is_graph_compute(op: Operation) -> bool:
    """Whether `op` carries the `GraphCompute` trait (an arithmetic/tensor graph op)."""
    return op.has_trait(GraphCompute)


def in_codegen(op: Operation) -> bool:
    """Whether `op` or an ancestor was claimed by a target (`lamina.codegen`)."""
    current: Operation | None = op
    while current is not None:
        if codegen_target(current) is not None:
            return True
        current = current.parent_op()
    return False


def enclosing_top_level(op: Operation, module: ModuleOp) -> Operation | None:
    """The op directly inside `module` that contains `op`."""
    current: Operation | None = op
    while current is not None and current.parent_op() is not module:
        current = current.parent_op()
    return current


# ---------------------------------------------------------------------------
# One check per invariant: each yields (op, what is wrong, what to do)
# ---------------------------------------------------------------------------

Violation = tuple[Operation, str, str]
Check = Callable[[ModuleOp, Sequence[Operation]], Iterator[Violation]]
"""A check gets the module and its ops (module excluded) in IR order: one walk
serves every invariant (xDSL's recursive walk costs microseconds per op)."""


def _forbid_outside_codegen(name: str, phase: str, advice: str) -> Check:
    """A check that `name` ops are gone from `phase` on (code regions excepted)."""

    def check(module: ModuleOp, ops: Sequence[Operation]) -> Iterator[Violation]:
        for op in ops:
            if op.name == name and not in_codegen(op):
                yield op, f"'{name}' is not allowed from phase {phase} on", advice

    return check


check_no_lambda = _forbid_outside_codegen(
    "graph.lambda",
    "optimization",
    "run lift-lambdas to lift inner functions to top-level graph.func",
)
check_no_dataflow = _forbid_outside_codegen(
    "graph.dataflow", "lowering", "run legalize to flatten dataflow blocks"
)


def check_closure_callees(module: ModuleOp, ops: Sequence[Operation]) -> Iterator[Violation]:
    for op in ops:
        if op.name != "graph.closure":
            continue
        name = callee_name(op)
        if top_level_func(op, name) is None:
            yield (
                op,
                f"'graph.closure' callee @{name} is not a top-level 'graph.func'",
                "closures must name a function lifted by lift-lambdas",
            )


def check_dialects(module: ModuleOp, ops: Sequence[Operation]) -> Iterator[Violation]:
    from lamina.core.plugins import dialect_phases

    allowed = ", ".join(sorted(OPTIMIZATION_DIALECTS))
    phase = get_phase(module)
    for op in ops:
        dialect = op.dialect_name()
        if isinstance(op, UnregisteredOp) or (
            dialect not in OPTIMIZATION_DIALECTS and phase not in dialect_phases(dialect)
        ):
            yield (
                op,
                f"'{op_name(op)}' is not allowed from phase optimization on",
                f"only {allowed} ops are; express it with graph, te or loop ops",
            )


def check_no_compute(module: ModuleOp, ops: Sequence[Operation]) -> Iterator[Violation]:
    for op in ops:
        if is_graph_compute(op) and not in_codegen(op):
            yield (
                op,
                f"graph compute op '{op.name}' is not allowed from phase lowering on",
                "run legalize to turn it into graph.call_te, or let a target claim it",
            )


def check_purity_removed(module: ModuleOp, ops: Sequence[Operation]) -> Iterator[Violation]:
    for op in ops:
        if op.name == "graph.func" and is_tracked_pure_func(op):
            yield (
                op,
                f"'graph.func' @{_sym_name(op)} is neither 'impure' nor 'force_pure'",
                "run legalize to remove purity tracking",
            )


def check_no_pure_calls(module: ModuleOp, ops: Sequence[Operation]) -> Iterator[Violation]:
    for op in ops:
        if op.name in ("graph.call_extern", "graph.invoke") and has_unit(op, "pure"):
            yield (
                op,
                f"'{op.name}' carries 'pure', which is not allowed from phase lowering on",
                "run legalize to remove purity tracking",
            )


def check_build_ops(module: ModuleOp, ops: Sequence[Operation]) -> Iterator[Violation]:
    for op in ops:
        if op.dialect_name() != "llvm" and op.name != "builtin.module":
            yield (
                op,
                f"'{op_name(op)}' is not allowed in phase build (only builtin.module and llvm.* ops)",
                "run lower-to-llvm to lower it",
            )


def check_dataflow_purity(module: ModuleOp, ops: Sequence[Operation]) -> Iterator[Violation]:
    for op in ops:
        if op.name == "graph.dataflow":
            for inner in _dataflow_body(op):
                if not is_pure_in_dataflow(inner, module):
                    yield (
                        inner,
                        f"'{inner.name}' is impure and not allowed in a 'graph.dataflow' block",
                        "move it out of the dataflow block, or mark the call 'pure'",
                    )


def _dataflow_body(dataflow: Operation) -> Iterator[Operation]:
    """Ops executed by a dataflow block itself: not those of nested dataflow
    blocks (checked on their own) nor of lambda bodies (invariant 10)."""
    for region in dataflow.regions:
        for block in region.blocks:
            yield from block.ops


def check_pure_funcs(module: ModuleOp, ops: Sequence[Operation]) -> Iterator[Violation]:
    for func in ops:
        if func.name != "graph.func" or not is_tracked_pure_func(func):
            continue
        for op in own_ops(func):
            if op.name in IMPURE_CALL_OPS and is_impure_call(op):
                yield (
                    op,
                    f"pure 'graph.func' @{_sym_name(func)} calls impure '{op.name}'"
                    + _callee_suffix(op),
                    "mark the function 'impure' (or 'force_pure'), or the call 'pure'",
                )


def own_ops(func: Operation) -> Iterator[Operation]:
    """The ops `func` (or any region op) itself executes: not those in the bodies
    of lambdas nested in it."""
    for region in func.regions:
        for op in region.walk():
            if not _inside_lambda(op, func):
                yield op


def _inside_lambda(op: Operation, func: Operation) -> bool:
    current = op.parent_op()
    while current is not None and current is not func:
        if current.name == "graph.lambda":
            return True
        current = current.parent_op()
    return False


def _sym_name(op: Operation) -> str:
    name = attr_of(op, "sym_name")
    return name.data if isinstance(name, StringAttr) else "<anonymous>"


def _callee_suffix(op: Operation) -> str:
    name = callee_name(op)
    return f" (@{name})" if name is not None else ""


CHECKS: dict[int, Check] = {
    1: check_no_lambda,
    2: check_closure_callees,
    3: check_dialects,
    4: check_no_dataflow,
    5: check_no_compute,
    6: check_purity_removed,
    7: check_no_pure_calls,
    8: check_build_ops,
    9: check_dataflow_purity,
    10: check_pure_funcs,
}


def invariants_for(phase: Phase) -> list[Invariant]:
    """The invariants checked in `phase` (in the build phase, 8 subsumes the others)."""
    if phase is Phase.BUILD:
        return [INVARIANTS[8]]
    return [inv for inv in INVARIANTS.values() if inv.since <= phase]


def violation_message(phase: Phase, number: int, what: str, hint: str) -> str:
    """`phase 'P' invariant N violated: WHAT (HINT)`."""
    return f"phase '{phase.label}' invariant {number} violated: {what} ({hint})"


def check_phase(module: ModuleOp, phase: Phase | None = None) -> list[Diagnostic]:
    """Every violation of the invariants of `phase` in `module`, in IR order.

    `phase` defaults to the module's `lamina.phase` (ingestion when absent).
    The checker never raises for bad IR: it reports.
    """
    if phase is None:
        try:
            phase = get_phase(module)
        except VerifyException as err:
            return [Diagnostic(str(err), module)]
    ops = preorder(module)
    order = {op: index for index, op in enumerate(ops)}
    ops = ops[1:]  # the module itself is first
    found: list[tuple[int, int, Diagnostic]] = []
    for inv in invariants_for(phase):
        for op, what, hint in CHECKS[inv.number](module, ops):
            message = violation_message(phase, inv.number, what, hint)
            found.append((order[op], inv.number, Diagnostic(message, op)))
    found.sort(key=lambda item: item[:2])
    return [diagnostic for _, _, diagnostic in found]
