"""core/walk.py: `preorder` lists exactly the ops `Operation.walk()` yields, in order;
`lazy_preorder` (the walk of a compile, `fast_walks`) yields them as lazily."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.ir import Block, Operation, Region

from lamina.core.context import make_context
from lamina.core.diagnostics import parse_module
from lamina.core.walk import fast_walks, lazy_preorder, preorder
from lamina.driver.pipeline import passes_for_module

_XDSL_OP_WALK, _XDSL_BLOCK_WALK, _XDSL_REGION_WALK = Operation.walk, Block.walk, Region.walk
ORDERS = [(False, False), (True, False), (False, True), (True, True)]

EXAMPLES = Path(__file__).parent.parent / "examples"


@pytest.mark.parametrize("name", ["cnn.mlir", "attention.mlir", "residual.mlir"])
def test_preorder_is_walks_order_in_every_phase(name):
    """At every pass of the default pipeline (graph functions, te kernels, loop nests,
    parallel loops, the llvm dialect), on the module and on each of its ops."""
    ctx = make_context()
    module = parse_module(ctx, (EXAMPLES / name).read_text(), name)
    for p in passes_for_module("default", module, None):
        p.apply(ctx, module)
        walked = list(module.walk())
        listed = preorder(module)
        assert len(listed) == len(walked)
        assert all(a is b for a, b in zip(listed, walked, strict=True))
        for op in walked[1:200]:
            assert preorder(op) == list(op.walk())
        for op in walked[1:200]:
            assert list(lazy_preorder(op)) == list(op.walk())
        assert all(a is b for a, b in zip(lazy_preorder(module), walked, strict=True))
        for reverse, region_first in ORDERS:
            order = {"reverse": reverse, "region_first": region_first}
            xdsl = list(module.walk(**order))
            with fast_walks():
                assert list(module.walk(**order)) == xdsl
                for op in walked[:200]:
                    assert list(op.walk(**order)) == list(_XDSL_OP_WALK(op, **order))
                    for region in op.regions:
                        assert list(region.walk(**order)) == list(
                            _XDSL_REGION_WALK(region, **order)
                        )
                        for block in region.blocks:
                            assert list(block.walk(**order)) == list(
                                _XDSL_BLOCK_WALK(block, **order)
                            )


def _module():
    ctx = make_context()
    module = parse_module(ctx, (EXAMPLES / "cnn.mlir").read_text(), "cnn.mlir")
    for p in passes_for_module("default", module, None):
        p.apply(ctx, module)
    return module


def _mutating(walk, module, rounds):
    """What a walk yields while its caller erases, moves and inserts ops as it goes:
    every third op with no regions and no uses is erased, an op's region is emptied
    when the walk reaches it, and a clone is inserted after every fifth op."""
    seen = []
    for i, op in enumerate(walk(module)):
        seen.append(op.name)
        if i >= rounds:
            break
        if op is module or op.parent is None:
            continue
        if i % 7 == 3 and op.regions:
            for region in op.regions:
                for block in list(region.blocks)[1:]:
                    region.detach_block(block)
        elif i % 3 == 0 and not op.regions and not any(r.uses for r in op.results):
            if op.parent.last_op is not op:  # keep every block terminated
                op.detach()
        elif i % 5 == 0 and not op.regions:
            op.parent.insert_op_after(op.clone(), op)
    return seen


@pytest.mark.parametrize(("reverse", "region_first"), ORDERS)
def test_lazy_preorder_follows_changes_as_xdsls_walk_does(reverse, region_first):
    def xdsl(m):
        return m.walk(reverse=reverse, region_first=region_first)

    def region(m):  # the module's own op first or last, as `Operation.walk` places it
        if not region_first:
            yield m
        yield from m.body.walk(reverse=reverse, region_first=region_first)
        if region_first:
            yield m

    for rounds in (50, 400, 3000):
        expected = _mutating(xdsl, _module(), rounds)
        assert _mutating(lambda m: lazy_preorder(m, reverse, region_first), _module(), rounds) == (
            expected
        )
        with fast_walks():
            assert _mutating(xdsl, _module(), rounds) == expected
            assert _mutating(region, _module(), rounds) == expected


def test_fast_walks_is_scoped_and_keeps_other_orders():
    module = _module()
    original = Operation.walk, Block.walk, Region.walk
    with fast_walks():
        with fast_walks():
            assert Operation.walk is not original[0]
            assert [op.name for op in module.walk()] == [op.name for op in preorder(module)]
        reverse = list(module.walk(reverse=True, region_first=True))
    assert (Operation.walk, Block.walk, Region.walk) == original
    assert reverse == list(module.walk(reverse=True, region_first=True))
    assert reverse[-1] is module
