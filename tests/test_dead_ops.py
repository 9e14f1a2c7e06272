"""core/dead_ops.py's dead-code check answers as xDSL's does, op for op.

The check decides at the first effect that settles it, and the passes'
appliers (`GreedyApplier`) remove the same ops as xDSL's applier would: a
real compile of a CNN asks it of every op its passes visit, and both checks
must agree on each; and a few hand-built loops cover the cases (a store
inside, only loads inside, an allocation of a value defined inside or
outside, an op with unknown effects).
"""

from __future__ import annotations

import numpy as np
from test_parallel_lowering import WEIGHTS, X, program, reference
from xdsl.dialects import arith, memref, scf, test
from xdsl.dialects.builtin import FloatAttr, IndexType, f32
from xdsl.ir import Block, Operation, Region
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.transforms import dead_code_elimination as xdsl_dce

import lamina
from lamina.backends import codegen, kernel_cache, kernel_reuse
from lamina.core import dead_ops


def test_a_compile_removes_what_xdsl_would(monkeypatch):
    monkeypatch.setenv("LAMINA_CACHE", "0")
    monkeypatch.setenv("LAMINA_LOWER_PROCESSES", "1")  # every pass in this process
    seen: list[tuple[str, bool]] = []
    fast = dead_ops.is_trivially_dead

    def both(op: Operation) -> bool:
        answer = fast(op)
        assert answer == xdsl_dce.is_trivially_dead(op), op.name
        seen.append((op.name, answer))
        return answer

    monkeypatch.setattr(dead_ops, "is_trivially_dead", both)
    codegen.clear_cache()
    kernel_cache.clear()
    kernel_reuse.clear()
    exe = lamina.compile(program(), cache=False)
    assert len(seen) > 1000 and any(dead for _, dead in seen)
    assert any(name.startswith("loop.") and not dead for name, dead in seen)
    np.testing.assert_allclose(exe.run("main", X, *WEIGHTS), reference(), rtol=1e-4, atol=1e-4)


def _index(value: int = 0) -> arith.ConstantOp:
    return arith.ConstantOp.from_int_and_width(value, IndexType())


def _loop(*body: Operation) -> scf.ForOp:
    """`scf.for` over 0..4 whose body is `body`, then the yield."""
    bound = _index(4)
    block = Block(arg_types=[IndexType()])
    block.add_ops([*body, scf.YieldOp()])
    loop = scf.ForOp(bound.result, bound.result, bound.result, [], Region(block))
    Block([bound])
    return loop


def _buffer() -> memref.AllocOp:
    return memref.AllocOp.get(f32, shape=[4])


def test_loops_with_and_without_effects():
    outside, zero, one = _buffer(), _index(), arith.ConstantOp(FloatAttr(1.0, f32))
    Block([outside, zero, one])
    cases = {  # name → (loop, dead?)
        "store": (_loop(memref.StoreOp.get(one, outside, [zero])), False),
        "load": (_loop(memref.LoadOp.get(outside, [zero])), True),
        "alloc inside": (_loop(_buffer()), False),  # its effect names no value: kept
        "store in an inner loop": (
            _loop(_index(1), _loop(memref.StoreOp.get(one, outside, [zero]))),
            False,
        ),
        "loads in an inner loop": (
            _loop(_loop(memref.LoadOp.get(outside, [zero])), _index(2)),
            True,
        ),
        "unknown effects": (_loop(test.TestOp()), False),
        "pure": (_loop(_index(1)), True),
    }
    for name, (loop, dead) in cases.items():
        assert xdsl_dce.is_trivially_dead(loop) == dead, name  # the reference
        assert dead_ops.is_trivially_dead(loop) == dead, name


def test_a_used_result_or_a_terminator_is_live():
    zero = _index()
    assert dead_ops.is_trivially_dead(zero)  # a constant nobody reads
    Block([zero, _loop(memref.LoadOp.get(_buffer(), [zero]))])
    assert not dead_ops.is_trivially_dead(zero)  # now read
    assert not dead_ops.is_trivially_dead(scf.YieldOp())
    assert not xdsl_dce.is_trivially_dead(scf.YieldOp())


def test_the_applier_tries_only_the_patterns_of_the_ops_type():
    """A pattern declared for other op types is not called; the others are, in order,
    until one rewrites (the union and undeclared patterns included)."""
    calls: list[str] = []

    class OnAdd(RewritePattern):
        @op_type_rewrite_pattern
        def match_and_rewrite(self, op: arith.AddfOp, rewriter: PatternRewriter) -> None:
            calls.append(f"add:{op.name}")

    class OnMulOrAdd(RewritePattern):
        @op_type_rewrite_pattern
        def match_and_rewrite(
            self, op: arith.MulfOp | arith.AddfOp, rewriter: PatternRewriter
        ) -> None:
            calls.append(f"mul|add:{op.name}")

    class Any(RewritePattern):
        def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
            calls.append(f"any:{op.name}")

    assert dead_ops._expected_types(Any()) is None
    assert dead_ops._expected_types(OnAdd()) is arith.AddfOp
    one = arith.ConstantOp(FloatAttr(1.0, f32))
    add = arith.AddfOp(one, one)
    mul = arith.MulfOp(add, add)
    keep = test.TestOp([mul.result])
    region = Region(Block([one, add, mul, keep]))
    applier = dead_ops.GreedyApplier([OnAdd(), OnMulOrAdd(), Any()])
    PatternRewriteWalker(applier, apply_recursively=False).rewrite_region(region)
    assert calls == [
        "any:arith.constant",
        "add:arith.addf",
        "mul|add:arith.addf",
        "any:arith.addf",
        "mul|add:arith.mulf",
        "any:arith.mulf",
        "any:test.op",
    ]
