"""Register-block rules for Winograd's products (kernels/conv_winograd.py).

Winograd's 16 products `M[a, b, kb, t, ki] += V[a, b, t, cb, ci] * U[a, b, kb,
cb, ci, ki]` are register-blocked like a pointwise convolution (rows = tiles
`t`, the row = one vector of output channels), and `channel_jam` decides how
many output-channel blocks each broadcast of V feeds. Its rule for pointwise
convolutions keeps one block when the jammed weights and a row block's input
overflow L1 (`_fits_l1`): there the weights are reused by every row block and
a jam's shorter rows re-read them from L2. A Winograd product's weights are
reused by few row blocks (16 tiles at 7x7, 49 at 14x14) and stream from L2 or
memory anyway, one slice per tile position, so what the step costs is its
loads: one weight vector and R broadcasts for R FMAs. F blocks feed F*R FMAs
with R + F loads. `winograd_channel_jam` sets the blocks for these nests only,
and `winograd_jam_l1_bytes` caps them at 2 where F blocks' weights overflow L1
on a core with two 512-bit FMA ports (Intel AVX-512), whose FMAs then wait on
the F weight vectors per step that come from L2: 2 blocks leave room for twice
the rows, half the weights per FMA.
"""

from __future__ import annotations

from lamina.dialects import loop
from lamina.target.schedule_knobs import ScheduleKnobs

_POSITIONS = (4, 4)
"""The tile positions (a, b) of F(2x2, 3x3) that lead every buffer of the products."""


def is_winograd_product(row: loop.ForOp) -> bool:
    """Is `row` (a register-blockable reduction's innermost loop) Winograd's
    product? It stores a 5-d buffer (M) and loads a 6-d one it does not store
    (U), both led by the 4 x 4 tile positions and indexed there by the same two
    variables -- the shape `build_winograd_conv2d` emits and nothing else in
    Lamina has."""
    stores = [o for o in row.walk() if isinstance(o, loop.StoreOp)]
    if not stores:
        return False
    m = stores[0]
    if _rank_and_lead(m.buffer) != (5, _POSITIONS):
        return False
    positions = list(m.indices[:2])
    return any(
        isinstance(o, loop.LoadOp)
        and o.buffer is not m.buffer
        and _rank_and_lead(o.buffer) == (6, _POSITIONS)
        and list(o.indices[:2]) == positions
        for o in row.walk()
    )


def _rank_and_lead(buffer) -> tuple[int, tuple[int, ...]] | None:
    """A memref's rank and its first two extents (None for anything else)."""
    shape = getattr(buffer.type, "get_shape", None)
    if shape is None:
        return None
    dims = tuple(shape())
    return len(dims), dims[:2]


def winograd_channel_jam(row: loop.ForOp, blocks: int, knobs: ScheduleKnobs) -> int:
    """Output-channel blocks per step of Winograd's product (innermost loop
    `row`) over `blocks` output-channel blocks: the largest divisor of `blocks`
    up to `winograd_channel_jam` (GoogLeNet's 96 channels, 6 blocks: 3), up to 2
    where the jammed blocks' weights exceed `winograd_jam_l1_bytes`; 0 when
    the knob is 0, `row` is not Winograd's product or only 1 divides (then the
    convolutions' rule, `channel_jam`, decides)."""
    most = knobs.winograd_channel_jam
    if most < 2 or not is_winograd_product(row):
        return 0
    jam = next(f for f in range(min(most, blocks), 0, -1) if blocks % f == 0)
    limit = knobs.winograd_jam_l1_bytes
    if jam > 2 and limit and _slice_bytes(row, jam) > limit:
        # the slice streams from L2: more rows per block, fewer weights per FMA
        jam = next(f for f in range(min(2, blocks), 0, -1) if blocks % f == 0)
    return jam if jam > 1 else 0


def _slice_bytes(row: loop.ForOp, jam: int) -> int:
    """Bytes of `jam` output-channel blocks of the transformed weights U[a, b, kb,
    cb, ci, ki] over all input channels (`jam` x cb x ci x ki elements)."""
    for o in row.walk():
        if isinstance(o, loop.LoadOp) and _rank_and_lead(o.buffer) == (6, _POSITIONS):
            dims = tuple(o.buffer.type.get_shape())
            bits = o.buffer.type.get_element_type().bitwidth
            return jam * dims[3] * dims[4] * dims[5] * bits // 8
    return 0
