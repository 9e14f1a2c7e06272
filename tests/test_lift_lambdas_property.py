"""Property tests: lift-lambdas (and normalize) on random graph programs.

Hypothesis builds graph functions whose bodies mix compute ops, constants,
nested lambdas (capturing values of every enclosing scope, and other
lambdas), invocations and nested dataflow blocks. After lift-lambdas the
module must verify, satisfy the optimization-phase invariants, contain no
lambda, and keep its structure (the same compute ops, one new function per
lambda, every closure's callee a top-level function of the matching type)
and its meaning (the NumPy reference evaluator gives the same results).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, ModuleOp, TensorType, f32
from xdsl.ir import Block, Operation, SSAValue
from xdsl.traits import SymbolTable

from lamina.core.context import make_context
from lamina.core.diagnostics import verify_module
from lamina.core.phase_invariants import check_phase
from lamina.dialects.graph import (
    AddOp,
    CallOp,
    ClosureOp,
    ConstantOp,
    DataflowOp,
    ExpOp,
    FnType,
    FuncOp,
    GraphCompute,
    InvokeOp,
    LambdaOp,
    MulOp,
    NegOp,
    OutputOp,
    ReluOp,
    ReturnOp,
)
from lamina.dialects.lamina import Phase, get_phase
from lamina.dialects.reference import evaluate
from lamina.passes.lift_lambdas import LiftLambdasPass
from lamina.passes.normalize import NormalizePass

T = TensorType(f32, [4])
FN = FnType([T], [T])
SETTINGS = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@dataclass
class Scope:
    """Values visible where ops are being added (the enclosing scopes' too)."""

    tensors: list[SSAValue]
    fns: list[SSAValue] = field(default_factory=list)

    def child(self, *tensors: SSAValue) -> Scope:
        return Scope([*self.tensors, *tensors], list(self.fns))


def add_ops(draw, block: Block, scope: Scope, depth: int, may_effect: bool) -> SSAValue:
    """Fill `block` with 1-5 random ops; return a tensor value to yield from it.

    `may_effect`: the block may call the impure `@effect` (the body of an
    impure function or of a lambda, not a dataflow block nor a pure function).
    """

    def pick() -> SSAValue:
        # Draw an index, not a value: hypothesis keeps the repr of what it draws.
        return scope.tensors[draw(st.integers(0, len(scope.tensors) - 1))]

    for _ in range(draw(st.integers(1, 5))):
        kinds = ["unary", "binary", "constant"]
        if depth < 3:
            kinds += ["lambda", "dataflow"]
        if scope.fns:
            kinds += ["invoke", "invoke"]
        if may_effect:
            kinds += ["effect"]
        kind = draw(st.sampled_from(kinds))
        if kind == "unary":
            op = draw(st.sampled_from([ExpOp, NegOp, ReluOp]))(pick())
        elif kind == "binary":
            op = draw(st.sampled_from([AddOp, MulOp]))(pick(), pick())
        elif kind == "constant":
            op = ConstantOp(DenseIntOrFPElementsAttr.from_list(T, [1.0, 2.0, 3.0, 4.0]))
        elif kind == "effect":
            op = CallOp("effect", [pick()], [T])
        elif kind == "invoke":
            fn = scope.fns[draw(st.integers(0, len(scope.fns) - 1))]
            op = InvokeOp(fn, [pick()], pure=True)
        elif kind == "lambda":
            op = LambdaOp([T], [T])
            inner = op.body.block
            result = add_ops(draw, inner, scope.child(inner.args[0]), depth + 1, True)
            inner.add_op(ReturnOp(result))
        else:
            op = DataflowOp([T])
            inner = op.body.block
            inner.add_op(OutputOp(add_ops(draw, inner, scope.child(), depth + 1, False)))
        block.add_op(op)
        if op.results[0].type == FN:
            scope.fns.append(op.results[0])
        else:
            scope.tensors.append(op.results[0])
    return scope.tensors[-1]


class Program:
    """A generated module; hypothesis reports it as IR text (ModuleOp's repr is huge).

    Not a dataclass: hypothesis pretty-prints dataclasses field by field.
    """

    def __init__(self, module: ModuleOp):
        self.module = module

    def __repr__(self) -> str:
        return str(self.module)


@st.composite
def graph_programs(draw) -> Program:
    """A module of 1-2 graph functions `(T, T) -> T` (pure or `impure`) with random
    bodies, and the impure identity `@effect` they may call."""
    effect = FuncOp("effect", ([T], [T]), impure=True)
    effect.body.block.add_op(ReturnOp(effect.body.block.args[0]))
    funcs: list[Operation] = [effect]
    for index in range(draw(st.integers(1, 2))):
        impure = draw(st.booleans())
        func = FuncOp(f"f{index}", ([T, T], [T]), impure=impure)
        block = func.body.block
        result = add_ops(draw, block, Scope(list(block.args)), 0, impure)
        block.add_op(ReturnOp(result))
        funcs.append(func)
    if draw(st.booleans()):  # a name lift-lambdas must not reuse
        taken = FuncOp("f0_lambda0", ([], []))
        taken.body.block.add_op(ReturnOp())
        funcs.append(taken)
    module = ModuleOp(funcs)
    verify_module(module)
    return Program(module)


def op_counts(module: ModuleOp) -> Counter[str]:
    return Counter(op.name for op in module.walk() if op.has_trait(GraphCompute))


def check_purity(module: ModuleOp) -> None:
    """A function that calls `@effect` itself is `impure` (lifted ones included)."""
    for func in module.body.block.ops:
        assert isinstance(func, FuncOp)
        calls_effect = any(
            isinstance(op, CallOp) and op.callee.root_reference.data == "effect"
            for op in func.walk()
        )
        if calls_effect:
            assert func.impure is not None, func.sym_name.data


def check_closures(module: ModuleOp) -> None:
    """Every closure names a top-level graph.func whose type matches the closure's."""
    for closure in (op for op in module.walk() if isinstance(op, ClosureOp)):
        callee = SymbolTable.lookup_symbol(module, closure.callee)
        assert isinstance(callee, FuncOp) and callee.parent_op() is module
        inputs, outputs = callee.signature
        captured = tuple(closure.captures.types)
        assert inputs[: len(captured)] == captured
        assert closure.result.type == FnType(inputs[len(captured) :], outputs)


INPUTS = (
    np.array([0.5, -1.0, 2.0, -0.25], np.float32),
    np.array([1.5, 0.0, -2.0, 3.0], np.float32),
)


def results(module: ModuleOp) -> dict[str, tuple[np.ndarray, ...]]:
    """What each entry function `f<N>` computes on fixed inputs."""
    names = [op.sym_name.data for op in module.body.block.ops if isinstance(op, FuncOp)]
    with np.errstate(all="ignore"):
        return {n: evaluate(module, n, *INPUTS) for n in names if n in ("f0", "f1")}


def assert_same_results(before, after) -> None:
    assert before.keys() == after.keys()
    for name in before:
        for got, want in zip(after[name], before[name], strict=True):
            np.testing.assert_array_equal(got, want)


@SETTINGS
@given(graph_programs())
def test_lift_lambdas_preserves_structure(program: Program):
    module = program.module
    expected = results(module)
    lambdas = sum(isinstance(op, LambdaOp) for op in module.walk())
    funcs = len(module.body.block.ops)
    computes = op_counts(module)

    LiftLambdasPass().apply(make_context(), module)

    verify_module(module)
    assert check_phase(module, Phase.OPTIMIZATION) == []
    assert get_phase(module) is Phase.OPTIMIZATION
    assert not any(isinstance(op, LambdaOp) for op in module.walk())
    assert len(module.body.block.ops) == funcs + lambdas
    assert all(isinstance(op, FuncOp) for op in module.body.block.ops)
    assert sum(isinstance(op, ClosureOp) for op in module.walk()) == lambdas
    assert op_counts(module) == computes
    check_closures(module)
    check_purity(module)
    assert_same_results(expected, results(module))


@SETTINGS
@given(graph_programs())
def test_lift_lambdas_is_deterministic(program: Program):
    module = program.module
    clone = module.clone()
    LiftLambdasPass().apply(make_context(), module)
    LiftLambdasPass().apply(make_context(), clone)
    assert str(module) == str(clone)
    names = [op.sym_name.data for op in module.body.block.ops]
    assert len(names) == len(set(names))


@SETTINGS
@given(graph_programs())
def test_normalize_is_idempotent_and_keeps_the_module_valid(program: Program):
    module = program.module
    expected = results(module)
    NormalizePass().apply(make_context(), module)
    verify_module(module)
    assert check_phase(module) == []
    once = str(module)
    NormalizePass().apply(make_context(), module)
    assert str(module) == once
    nested = [
        op
        for op in module.walk()
        if isinstance(op, DataflowOp) and isinstance(op.parent_op(), DataflowOp)
    ]
    assert nested == []

    assert_same_results(expected, results(module))

    LiftLambdasPass().apply(make_context(), module)
    verify_module(module)
    assert check_phase(module) == []
    assert_same_results(expected, results(module))
