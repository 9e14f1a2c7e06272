"""Packing: copy a register-blocked kernel's column panel into a contiguous buffer.

A micro-kernel's column block (`register_block`) reads, for every row block,
the same panel of the operand read along the row (B of a matmul). Read in
place, its rows are often a power of two apart (4 KiB at N = 1024), which
maps the whole panel onto a few L1 sets; copied once into a contiguous local
panel (`primitives.pack`), it streams from L1/L2. The copy pays when enough
row blocks share the panel (`pack_min_row_blocks`) or when it transposes a
panel read down its columns (attention's K^T), and only for panels that fit
`pack_max_bytes` (half of L2).
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Block, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from lamina.dialects import loop
from lamina.dialects.loop import LoopKind
from lamina.schedule import primitives as prim
from lamina.schedule.primitives import ScheduleError
from lamina.target.schedule_knobs import ScheduleKnobs


def pack_pays(
    rows: loop.ForOp, buffer: SSAValue, knobs: ScheduleKnobs, row_blocks: int | None = None
) -> bool:
    """Copy `buffer`'s panel for the row loop `rows` (see `pack_min_row_blocks`)?
    `row_blocks`: the register blocks that will share it (default: `rows`' trip count)."""
    blocks = prim.trip_count(rows) if row_blocks is None else row_blocks
    return prim.pack_transposes(rows, buffer) or blocks >= knobs.pack_min_row_blocks


def pack_panels(
    rows: loop.ForOp,
    streamed: list[SSAValue],
    knobs: ScheduleKnobs,
    row_blocks: int | None = None,
) -> int:
    """Pack, for the row loop `rows`, each of the `streamed` operands whose
    copy pays; returns how many were packed."""
    packed = 0
    for buffer in streamed:
        if not pack_pays(rows, buffer, knobs, row_blocks):
            continue
        try:
            prim.pack(rows, buffer, max_bytes=knobs.pack_max_bytes)
            packed += 1
        except ScheduleError:
            pass  # not a plain tile (e.g. a strided convolution input): read in place
    return packed


def pack_group(
    rows: loop.ForOp, streamed: list[SSAValue], knobs: ScheduleKnobs, row_blocks: int
) -> list[SSAValue]:
    """`pack_panels` for a group of column blocks (`panel_group`): the tiles it made."""
    tiles = []
    for buffer in streamed:
        if not pack_pays(rows, buffer, knobs, row_blocks):
            continue
        try:
            tiles.append(prim.pack(rows, buffer, max_bytes=knobs.pack_max_bytes))
        except ScheduleError:
            pass  # not a plain tile: read in place
    return tiles


def panels_by_block(tile: SSAValue, columns: int) -> bool:
    """Store a packed `K x (g*NR)` tile as `g x K x NR` (`columns` = NR), so that
    each column block's panel is contiguous: every access of the tile must index
    its columns as `x + y`, `y` a vectorized loop over `[0, NR)` (the blocks'
    loads after `_blocks_inside`), or be the copy's store, whose column loop
    is split by NR first. Returns whether the tile was laid out again."""
    alloc = tile.owner
    memref = tile.type
    if not isinstance(alloc, loop.AllocOp) or not isinstance(memref, MemRefType):
        return False
    shape = memref.get_shape()
    if len(shape) != 2 or shape[1] % columns or shape[1] == columns:
        return False
    uses = [u.operation for u in tile.uses]
    stores = [o for o in uses if isinstance(o, loop.StoreOp)]
    loads = [o for o in uses if isinstance(o, loop.LoadOp)]
    if len(stores) != 1 or len(stores) + len(loads) + 1 != len(uses):
        return False
    if not all(_block_split(o.indices[1], columns) for o in loads):
        return False
    copy = stores[0].indices[1].owner
    if not isinstance(copy, Block) or not isinstance(copy.parent_op(), loop.ForOp):
        return False
    copy_loop = copy.parent_op()
    assert isinstance(copy_loop, loop.ForOp)
    if copy_loop.induction_var is not stores[0].indices[1]:
        return False
    prim.split(copy_loop, columns)
    if not _block_split(stores[0].indices[1], columns):
        return False  # cannot happen: split gives `outer + inner`
    new = loop.AllocOp(
        MemRefType(memref.element_type, [shape[1] // columns, shape[0], columns]), scope="local"
    )
    Rewriter.insert_op(new, InsertPoint.before(alloc))
    width = prim.index_constant(alloc, columns)
    for op in list(tile.uses):
        access = op.operation
        if isinstance(access, loop.FreeOp):
            Rewriter.replace_op(access, loop.FreeOp(new.results[0]))
            continue
        assert isinstance(access, loop.LoadOp | loop.StoreOp)
        row, col = access.indices
        block, lane = _block_split(col, columns)  # type: ignore[misc]
        which = arith.DivUIOp(block, width)
        Rewriter.insert_op(which, InsertPoint.before(access))
        index = [which.result, row, lane]
        if isinstance(access, loop.LoadOp):
            Rewriter.replace_op(access, loop.LoadOp(new.results[0], index))
        else:
            Rewriter.replace_op(access, loop.StoreOp(access.value, new.results[0], index))
    Rewriter.erase_op(alloc)
    return True


def _block_split(col: SSAValue, columns: int) -> tuple[SSAValue, SSAValue] | None:
    """`(x, y)` when `col` is `x + y` with `y` the variable of a vectorized loop over [0, NR)."""
    add = col.owner
    if not isinstance(add, arith.AddiOp):
        return None
    for x, y in ((add.lhs, add.rhs), (add.rhs, add.lhs)):
        owner = y.owner
        if isinstance(owner, Block) and isinstance(owner.parent_op(), loop.ForOp):
            inner = owner.parent_op()
            assert isinstance(inner, loop.ForOp)
            if (
                inner.induction_var is y
                and inner.kind_name == LoopKind.VECTORIZED
                and prim.bounds(inner) == (0, columns, 1)
            ):
                return x, y
    return None


__all__ = ["pack_group", "pack_panels", "pack_pays", "panels_by_block"]
