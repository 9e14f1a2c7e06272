"""lower-to-llvm's shortcuts build what the plain xDSL way builds (docs/compile-speed.md,
"lower-to-llvm without the idle work").

* `quick` / `branch` / `cond_branch` build an llvm op through `create` once the
  constructor has shown what it builds: the ops must equal the constructor's,
  property for property.
* The pass's walker skips the ops no pattern would touch and the walk that
  would only confirm nothing is left: the lowered module must print the same
  as with xDSL's own walker, on whole example programs (loops, parallel loops,
  reductions, concatenations, error exits).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from xdsl.dialects import llvm
from xdsl.dialects.builtin import IntegerAttr, f32, i1, i32, i64
from xdsl.dialects.utils.fast_math import FastMathFlag
from xdsl.ir import Block, Operation
from xdsl.pattern_rewriter import PatternRewriteWalker

from lamina.backends.llvm.conversion import branch, cond_branch, quick
from lamina.core.context import make_context
from lamina.core.diagnostics import parse_module
from lamina.driver.pipeline import passes_for_module
from lamina.passes import lower_to_llvm
from lamina.passes.lower_to_llvm import LowerToLLVMPass
from lamina.target.devices import with_device_check

EXAMPLES = Path(__file__).parent.parent / "examples"


def _same_op(built: Operation, expected: Operation) -> None:
    assert type(built) is type(expected)
    assert built.properties == expected.properties
    assert built.attributes == expected.attributes
    assert built.result_types == expected.result_types
    assert list(built.operands) == list(expected.operands)
    assert list(built.successors) == list(expected.successors)


def test_quick_ops_equal_the_constructors_ops():
    block = Block(arg_types=[i64, i64, i1, f32, i32])
    x, y, c, f, n = block.args
    fast = llvm.FastMathAttr(None)
    cases = [
        (llvm.AddOp, (x, y), {}),
        (llvm.SDivOp, (x, y), {}),
        (llvm.FAddOp, (f, f, fast), {}),
        (llvm.FMulOp, (f, f, llvm.FastMathAttr((FastMathFlag.ALLOW_CONTRACT,))), {}),
        (llvm.ICmpOp, (x, y, IntegerAttr(2, i64)), {}),
        (llvm.FCmpOp, (f, f, "olt"), {}),
        (llvm.SelectOp, (c, x, y), {}),
        (llvm.SExtOp, (n, i64), {}),
        (llvm.ZExtOp, (c, i64), {}),
        (llvm.FNegOp, (f, fast), {}),
        (llvm.CallOp, ("f", x, y), {"return_type": i64}),
        (llvm.CallOp, ("g", x), {}),
    ]
    for _ in range(2):  # the first call per key runs the constructor, the second `create`s
        for cls, args, kwargs in cases:
            _same_op(quick(cls, *args, **kwargs), cls(*args, **kwargs))
    dest = Block()
    _same_op(branch(dest, [x, y]), llvm.BrOp(dest, x, y))
    _same_op(cond_branch(c, dest, block), llvm.CondBrOp(c, dest, [], block, []))


def test_quick_calls_a_constructor_that_does_more_than_a_recipe():
    """A successor among the arguments: never a recipe, always the constructor."""
    block = Block(arg_types=[i64])
    dest = Block()
    for _ in range(2):
        _same_op(quick(llvm.BrOp, dest, block.args[0]), llvm.BrOp(dest, block.args[0]))


def test_the_recipes_are_bounded_and_refill_to_the_same_ops(monkeypatch):
    """`RECIPES_BOUND`: a full table is emptied before a new recipe goes in; the ops
    built afterwards still equal the constructors' (the table refills from them)."""
    from lamina.backends.llvm import conversion

    monkeypatch.setattr(conversion, "RECIPES_BOUND", 3)
    monkeypatch.setattr(conversion, "_RECIPES", {})
    block = Block(arg_types=[i64, i64, i32, f32])
    x, y, n, f = block.args
    cases = [
        (llvm.AddOp, (x, y)),
        (llvm.SubOp, (x, y)),
        (llvm.MulOp, (x, y)),
        (llvm.SExtOp, (n, i64)),
        (llvm.FNegOp, (f, llvm.FastMathAttr(None))),
    ]
    for _ in range(3):
        for cls, args in cases:
            _same_op(quick(cls, *args), cls(*args))
            assert len(conversion._RECIPES) <= 3


@dataclass(eq=False, repr=False)
class _PlainWalker(PatternRewriteWalker):
    """xDSL's walker as it is (the `dispatch` the pass hands over is unused)."""

    dispatch: object = None


def _before_lowering(name: str):
    ctx = make_context()
    module = parse_module(ctx, (EXAMPLES / name).read_text(), name)
    passes = with_device_check(passes_for_module("default", module, None))
    at = next(i for i, p in enumerate(passes) if p.name == "lower-to-llvm")
    for p in passes[:at]:
        p.apply(ctx, module)
    return module


@pytest.mark.parametrize("name", ["cnn.mlir", "attention.mlir", "residual.mlir"])
def test_skipping_walker_lowers_as_xdsls_walker(name, monkeypatch):
    module = _before_lowering(name)
    fast = module.clone()
    LowerToLLVMPass().apply(make_context(), fast)
    monkeypatch.setattr(lower_to_llvm, "_LoweringWalker", _PlainWalker)
    plain = module.clone()
    LowerToLLVMPass().apply(make_context(), plain)
    assert str(fast) == str(plain)
    assert any(isinstance(op, llvm.FuncOp) for op in fast.ops)
