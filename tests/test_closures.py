"""End to end: programs with lambdas, closures and higher-order functions compile.

Each program is compiled with `lamina.compile` (the default pipeline, which
specializes closures away) and run natively; the NumPy reference evaluator
interprets the ORIGINAL program (lambdas, closures and invokes directly), so
the two share nothing but the input text. A hypothesis property test does
the same for random programs mixing nested lambdas, invokes, higher-order
functions, functions returning closures and closures capturing closures.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, ModuleOp, TensorType, f32
from xdsl.ir import Block, Region, SSAValue

import lamina
from lamina.core.context import make_context
from lamina.core.diagnostics import DiagnosticError, parse_module, verify_module
from lamina.core.pass_manager import PassManager, parse_pass_pipeline
from lamina.core.phase_invariants import check_phase
from lamina.dialects.graph import (
    AddOp,
    CallOp,
    ClosureOp,
    ConstantOp,
    DataflowOp,
    FnType,
    FuncOp,
    InvokeOp,
    LambdaOp,
    MulOp,
    NegOp,
    OutputOp,
    ReluOp,
    ReturnOp,
    SubOp,
    TanhOp,
)
from lamina.dialects.reference import evaluate
from lamina.passes.specialize_closures import is_internal

T = "tensor<4xf32>"
FN = f"!graph.fn<({T}) -> {T}>"
X = np.array([0.5, -1.0, 2.0, -0.25], np.float32)
W = np.array([1.5, 0.0, -2.0, 3.0], np.float32)

LIBRARY = f"""
  graph.func @effect(%x: {T}) -> {T} attributes {{impure}} {{
    graph.return %x : {T}
  }}
  graph.func @apply(%f: {FN}, %x: {T}) -> {T} {{
    %y = graph.invoke %f(%x) {{pure}} : ({T}) -> {T}
    graph.return %y : {T}
  }}
  graph.func @twice(%f: {FN}, %x: {T}) -> {T} {{
    %y = graph.call @apply(%f, %x) : ({FN}, {T}) -> {T}
    %z = graph.call @apply(%f, %y) : ({FN}, {T}) -> {T}
    graph.return %z : {T}
  }}
  graph.func @compose(%f: {FN}, %g: {FN}) -> {FN} {{
    %h = graph.lambda (%a: {T}) -> {T} {{
      %b = graph.invoke %f(%a) {{pure}} : ({T}) -> {T}
      %c = graph.invoke %g(%b) {{pure}} : ({T}) -> {T}
      graph.return %c : {T}
    }}
    graph.return %h : {FN}
  }}
  graph.func @make_scale(%w: {T}) -> {FN} {{
    %f = graph.lambda (%a: {T}) -> {T} {{
      %b = graph.mul %a, %w : ({T}, {T}) -> {T}
      graph.return %b : {T}
    }}
    graph.return %f : {FN}
  }}
"""


def program(main_body: str) -> str:
    """The library of higher-order functions plus `@main(%x, %w)` with `main_body`."""
    return (
        f"builtin.module {{{LIBRARY}"
        f"  graph.func @main(%x: {T}, %w: {T}) -> {T} {{\n{main_body}\n  }}\n}}\n"
    )


def compiled_and_reference(text: str, *inputs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(native result, reference result on the original program) of `@main`."""
    reference = evaluate(parse_module(make_context(), text, "ref.mlir"), "main", *inputs)[0]
    native = lamina.compile(text).run("main", *inputs)
    return native, reference


CASES = {
    "local_lambda": f"""
    %f = graph.lambda (%a: {T}) -> {T} {{
      %b = graph.sub %a, %w : ({T}, {T}) -> {T}
      graph.return %b : {T}
    }}
    %y = graph.invoke %f(%x) {{pure}} : ({T}) -> {T}
    graph.return %y : {T}""",
    "higher_order_function": f"""
    %f = graph.lambda (%a: {T}) -> {T} {{
      %b = graph.mul %a, %w : ({T}, {T}) -> {T}
      graph.return %b : {T}
    }}
    %y = graph.call @apply(%f, %x) : ({FN}, {T}) -> {T}
    graph.return %y : {T}""",
    "two_closures_one_hof": f"""
    %f = graph.lambda (%a: {T}) -> {T} {{
      %b = graph.add %a, %w : ({T}, {T}) -> {T}
      graph.return %b : {T}
    }}
    %g = graph.lambda (%a: {T}) -> {T} {{
      %b = graph.tanh %a : ({T}) -> {T}
      graph.return %b : {T}
    }}
    %y = graph.call @apply(%f, %x) : ({FN}, {T}) -> {T}
    %z = graph.call @apply(%g, %y) : ({FN}, {T}) -> {T}
    %u = graph.call @apply(%f, %z) : ({FN}, {T}) -> {T}
    graph.return %u : {T}""",
    "nested_hof": f"""
    %f = graph.lambda (%a: {T}) -> {T} {{
      %b = graph.sub %w, %a : ({T}, {T}) -> {T}
      graph.return %b : {T}
    }}
    %y = graph.call @twice(%f, %x) : ({FN}, {T}) -> {T}
    graph.return %y : {T}""",
    "lambda_capturing_lambda": f"""
    %f = graph.lambda (%a: {T}) -> {T} {{
      %b = graph.mul %a, %w : ({T}, {T}) -> {T}
      graph.return %b : {T}
    }}
    %g = graph.lambda (%a: {T}) -> {T} {{
      %b = graph.invoke %f(%a) {{pure}} : ({T}) -> {T}
      %c = graph.add %b, %a : ({T}, {T}) -> {T}
      graph.return %c : {T}
    }}
    %y = graph.call @twice(%g, %x) : ({FN}, {T}) -> {T}
    graph.return %y : {T}""",
    "returned_closure_through_calls": f"""
    %f = graph.call @make_scale(%w) : ({T}) -> {FN}
    %y = graph.call @twice(%f, %x) : ({FN}, {T}) -> {T}
    graph.return %y : {T}""",
    "compose_closures": f"""
    %f = graph.call @make_scale(%w) : ({T}) -> {FN}
    %g = graph.lambda (%a: {T}) -> {T} {{
      %b = graph.relu %a : ({T}) -> {T}
      graph.return %b : {T}
    }}
    %h = graph.call @compose(%f, %g) : ({FN}, {FN}) -> {FN}
    %k = graph.call @compose(%h, %f) : ({FN}, {FN}) -> {FN}
    %y = graph.invoke %k(%x) {{pure}} : ({T}) -> {T}
    graph.return %y : {T}""",
    "closure_out_of_dataflow": f"""
    %f = graph.dataflow -> {FN} {{
      %c = graph.lambda (%a: {T}) -> {T} {{
        %b = graph.add %a, %w : ({T}, {T}) -> {T}
        graph.return %b : {T}
      }}
      graph.output %c : {FN}
    }}
    %y = graph.call @apply(%f, %x) : ({FN}, {T}) -> {T}
    graph.return %y : {T}""",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_closures_compile_and_match_the_reference(name: str):
    native, reference = compiled_and_reference(program(CASES[name]), X, W)
    np.testing.assert_allclose(native, reference, rtol=1e-6, atol=1e-6)


def test_pure_invoke_of_an_impure_function():
    """`pure` on the invoke asserts the call is effect-free: it compiles through a
    `force_pure` wrapper and computes the callee's result."""
    text = f"""builtin.module {{
  graph.func @noisy(%a: {T}) -> {T} attributes {{impure}} {{
    %b = graph.neg %a : ({T}) -> {T}
    graph.return %b : {T}
  }}
  graph.func @main(%x: {T}, %w: {T}) -> {T} {{
    %f = graph.closure @noisy() : () -> {FN}
    %y = graph.invoke %f(%x) {{pure}} : ({T}) -> {T}
    %z = graph.add %y, %w : ({T}, {T}) -> {T}
    graph.return %z : {T}
  }}
}}
"""
    native, reference = compiled_and_reference(text, X, W)
    np.testing.assert_allclose(native, reference, rtol=1e-6)


def test_an_unresolvable_function_value_is_a_located_diagnostic():
    text = f"""builtin.module {{
  graph.func @main(%f: {FN}, %x: {T}) -> {T} {{
    %y = graph.invoke %f(%x) {{pure}} : ({T}) -> {T}
    graph.return %y : {T}
  }}
}}
"""
    with pytest.raises(DiagnosticError) as info:
        lamina.compile(text, filename="entry.mlir")
    message = info.value.format()
    assert "entry.mlir:3:5" in message
    assert "parameter #0 of @main" in message
    assert "an entry function cannot take a function value" in message


# ---------------------------------------------------------------------------
# Property: random programs with nested lambdas and higher-order functions
# ---------------------------------------------------------------------------

TT = TensorType(f32, [4])
FT = FnType([TT], [TT])
SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class Program:
    """A generated module; hypothesis reports it as IR text."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


def add_ops(
    draw, block: Block, tensors: list[SSAValue], fns: list[SSAValue], depth: int, effects: bool
):
    """Fill `block` with 1-6 random ops over the visible values; return a tensor result
    and the function values visible at the end.

    `effects`: the block may call the impure `@effect` (an impure function's
    or a lambda's body; lambdas are invoked `pure`, asserting purity).
    """
    tensors, fns = list(tensors), list(fns)

    def pick(values: list[SSAValue]) -> SSAValue:
        return values[draw(st.integers(0, len(values) - 1))]

    for _ in range(draw(st.integers(1, 6))):
        kinds = ["unary", "binary", "constant", "make_scale"]
        if depth < 2:
            kinds += ["lambda", "lambda", "dataflow"]
        if fns:
            kinds += ["invoke", "apply", "twice", "compose"]
        if effects:
            kinds += ["effect"]
        kind = draw(st.sampled_from(kinds))
        if kind == "unary":
            op = draw(st.sampled_from([NegOp, ReluOp, TanhOp]))(pick(tensors))
        elif kind == "binary":
            op = draw(st.sampled_from([AddOp, SubOp, MulOp]))(pick(tensors), pick(tensors))
        elif kind == "constant":
            op = ConstantOp(DenseIntOrFPElementsAttr.from_list(TT, [0.5, -1.0, 0.25, 2.0]))
        elif kind == "effect":
            op = CallOp("effect", [pick(tensors)], [TT])
        elif kind == "make_scale":
            op = CallOp("make_scale", [pick(tensors)], [FT])
        elif kind == "invoke":
            op = InvokeOp(pick(fns), [pick(tensors)], pure=True)
        elif kind in ("apply", "twice"):
            op = CallOp(kind, [pick(fns), pick(tensors)], [TT])
        elif kind == "compose":
            op = CallOp("compose", [pick(fns), pick(fns)], [FT])
        elif kind == "lambda":
            op = LambdaOp([TT], [TT])
            inner = op.body.block
            body, _ = add_ops(draw, inner, [*tensors, inner.args[0]], fns, depth + 1, True)
            inner.add_op(ReturnOp(body))
        else:
            inner = Block()
            result, inner_fns = add_ops(draw, inner, tensors, fns, depth + 1, False)
            outputs = [result]
            if inner_fns and draw(st.booleans()):  # a function value leaves the block
                outputs.append(inner_fns[-1])
            inner.add_op(OutputOp(*outputs))
            op = DataflowOp([v.type for v in outputs], Region(inner))
        block.add_op(op)
        for value in op.results:
            (fns if value.type == FT else tensors).append(value)
    return tensors[-1], fns


@st.composite
def closure_programs(draw) -> Program:
    """The higher-order library plus a random `@main(%x, %w)`, pure or `impure`."""
    module = parse_module(make_context(), program(f"graph.return %x : {T}"), "lib.mlir")
    main = next(op for op in module.ops if isinstance(op, FuncOp) and op.sym_name.data == "main")
    main.detach()
    impure = draw(st.booleans())
    main = FuncOp("main", ([TT, TT], [TT]), impure=impure)
    block = main.body.block
    block.add_op(ReturnOp(add_ops(draw, block, list(block.args), [], 0, impure)[0]))
    module.body.block.add_op(main)
    verify_module(module)
    return Program(str(module))


def specialized(text: str) -> ModuleOp:
    """The program after the default pipeline's ingestion stage and specialize-closures."""
    module = parse_module(make_context(), text, "prog.mlir")
    PassManager(parse_pass_pipeline("normalize,lift-lambdas,specialize-closures")).run(
        make_context(), module
    )
    return module


@SETTINGS
@given(closure_programs())
def test_random_closure_programs_compile_to_the_reference(prog: Program):
    module = specialized(prog.text)
    assert check_phase(module) == []  # e.g. no pure function calls an impure one
    left = [op.name for op in module.walk() if isinstance(op, InvokeOp | ClosureOp | LambdaOp)]
    assert left == [], "every function value of these programs is statically known"
    assert [
        op.sym_name.data for op in module.ops if isinstance(op, FuncOp) and is_internal(op)
    ] == []
    with np.errstate(all="ignore"):
        native, reference = compiled_and_reference(prog.text, X, W)
    np.testing.assert_allclose(native, reference, rtol=1e-5, atol=1e-5)
