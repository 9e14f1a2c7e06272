"""The verifier counts a region's blocks once per verification (core/diagnostics.py,
`_counted_blocks`): the same diagnostics as xDSL's count, and xDSL's count again
outside a verification and on other threads."""

from __future__ import annotations

import threading

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import ModuleOp, i64
from xdsl.ir import Block, Region
from xdsl.ir.core import RegionBlocks

from lamina.core import diagnostics


def _function(blocks: int, last_terminated: bool) -> tuple[ModuleOp, Region]:
    """A function of `blocks` blocks, each ending with `func.return` except, unless
    `last_terminated`, the last (ending with a constant)."""
    body = []
    for index in range(blocks):
        ops = [arith.ConstantOp.from_int_and_width(index, i64)]
        if index < blocks - 1 or last_terminated:
            ops.append(func.ReturnOp())
        body.append(Block(ops))
    region = Region(body)
    function = func.FuncOp("f", ((), ()), region)
    return ModuleOp([function]), region


def test_a_block_ending_without_a_terminator_is_reported_as_by_xdsl():
    module, _ = _function(3, last_terminated=False)
    found = diagnostics.collect_verify_diagnostics(module)
    assert [d.message for d in found] == [
        "'arith.constant' op Operation arith.constant terminates block in multi-block region "
        "but is not a terminator"
    ]
    module, _ = _function(3, last_terminated=True)
    assert diagnostics.collect_verify_diagnostics(module) == []


def test_the_count_is_xdsls_outside_a_verification_and_on_other_threads():
    module, region = _function(2, last_terminated=True)
    original = RegionBlocks.__len__
    seen: list[int] = []
    with diagnostics._counted_blocks():
        assert len(region.blocks) == 2
        region.add_block(Block([func.ReturnOp()]))  # (no verifier changes the IR)
        assert len(region.blocks) == 2  # counted once in this verification
        worker = threading.Thread(target=lambda: seen.append(len(region.blocks)))
        worker.start()
        worker.join()
    assert seen == [3]  # another thread counts
    assert RegionBlocks.__len__ is original
    assert len(region.blocks) == 3
    assert diagnostics.collect_verify_diagnostics(module) == []
