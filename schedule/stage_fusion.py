"""Stage fusion: adjacent loops over the same rows become one loop.

Adjacent top-level loops over the same rows whose shared buffers are only
accessed at row = induction variable (softmax's max, exp, sum and divide
stages; layer_norm's) are fused into one loop (`fuse_row_stages`): one
parallel region per kernel instead of one per stage. A stage that `lower-te`
left serial (too little work for a thread team of its own: a bias+relu
epilogue, a padded copy) joins a parallel neighbour's loop rather than
running on the calling thread while the other cores wait.
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.ir import Block
from xdsl.rewriter import InsertPoint, Rewriter

from lamina.dialects import loop
from lamina.dialects.loop import LoopKind
from lamina.schedule import primitives as prim
from lamina.schedule.dependence import disjoint_by_iv
from lamina.schedule.parallel import kinds_fusable
from lamina.schedule.primitives import ScheduleError
from lamina.schedule.winograd import chunk_winograd_stages, fuse_winograd_chunks


def fuse_row_stages(func: loop.FuncOp) -> int:
    """Fuse adjacent loops over the same rows into one; returns how many fused.

    A multi-stage kernel (softmax: max, exp, sum, divide; a convolution and
    its bias+relu epilogue) is a chain of top-level loops over the same rows,
    each a parallel region of its own (a thread-team wake-up each, ~15 µs at
    two threads) that streams the intermediate buffer through memory once
    more. When every buffer the two loops share is accessed at one fixed
    index position = the loop's induction variable in both, iteration i of
    the second only needs iteration i of the first, and one loop (one region)
    does both. Fusion recurses: the fused body's now-adjacent inner loops
    (a convolution's output rows and its epilogue's) fuse the same way, so
    the epilogue reads a row the convolution just wrote, still in L1.
    A Winograd convolution in chunks of tile rows fuses its three chunked
    stages first (schedule/winograd.py, `fuse_winograd_chunks`).
    """
    block = func.body.blocks[0]
    _gather_allocations(block)
    fused, chunks = fuse_winograd_chunks(chunk_winograd_stages(func))
    for body in chunks:  # a Winograd chunk's stages, by tile position
        fused += _fuse_adjacent(body)
    return fused + _fuse_adjacent(block)


def _fuse_adjacent(block: Block) -> int:
    fused = 0
    first = block.first_op
    while first is not None:
        second = first.next_op
        if (
            isinstance(first, loop.ForOp)
            and isinstance(second, loop.ForOp)
            and kinds_fusable(first, second)
            and _row_stages_fusable(first, second)
        ):
            parallel = second.kind_name == LoopKind.PARALLEL
            prim.fuse(first, second)
            if parallel:
                prim.parallelize(first)
            fused += 1 + _fuse_adjacent(first.body.blocks[0])
            continue
        first = second
    return fused


def _gather_allocations(block: Block) -> None:
    """Allocations and constants go before the first loop and frees before the
    terminator, so the stages between them become adjacent (a longer buffer
    life, nothing else)."""
    loops = [op for op in block.ops if isinstance(op, loop.ForOp)]
    if len(loops) < 2 or block.last_op is None:
        return
    for op in list(block.ops):
        if isinstance(op, loop.AllocOp | arith.ConstantOp) and not op.operands:
            op.detach()
            Rewriter.insert_op(op, InsertPoint.before(loops[0]))
        elif isinstance(op, loop.FreeOp):
            op.detach()
            Rewriter.insert_op(op, InsertPoint.before(block.last_op))


def _row_stages_fusable(first: loop.ForOp, second: loop.ForOp) -> bool:
    try:
        if prim.bounds(first) != prim.bounds(second):
            return False
    except ScheduleError:
        return False
    return disjoint_by_iv([first, second])


__all__ = ["fuse_row_stages"]
