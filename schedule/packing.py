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

from xdsl.ir import SSAValue

from lamina.dialects import loop
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


__all__ = ["pack_panels", "pack_pays"]
