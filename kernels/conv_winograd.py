"""Winograd F(2x2, 3x3) for a channel-blocked 3x3 stride-1 `graph.conv2d` → te.

A 3x3 convolution computes each 2x2 output tile from a 4x4 input tile with
16 products per (input, output) channel pair instead of 36 (Lavin & Gray,
"Fast Algorithms for Convolutional Neural Networks"): in the transformed
domain the convolution is 16 independent matrix products, one per tile
position (a, b), which `schedule` blocks in registers like any matmul. The
kernel is four `te.compute`s:

    U[a, b, kb, cb, ci, ki] = sum_{kh, kw} G[a, kh] G[b, kw] w[kb, cb, kh, kw, ci, ki]
    V[a, b, t, cb, ci]      = sum_{i, j} Bt[a, i] Bt[b, j] xp[n, cb, 2th+i, 2tw+j, ci]
    M[a, b, kb, t, ki]      = sum_{cb, ci} V[a, b, t, cb, ci] * U[a, b, kb, cb, ci, ki]
    y[n, kb, oh, ow, ki]    = sum_{a, b} At[oh%2, a] At[ow%2, b] M[a, b, kb, t(oh/2, ow/2), ki]

with `t = (n*TH + th)*TW + tw` the flat tile index (TH x TW tiles of 2x2
outputs per image) and the standard F(2, 3) matrices

    Bt = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]
    G  = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]
    At = [1 1 1 0; 0 1 -1 -1]

Every row of Bt and At has at most three nonzeros, so V and y are not
written as reductions (which would multiply by the zeros): row `a` of Bt is
`e[p] + s*e[q]` and a row of At is `e[1] + s*(e[2] + e[q])`, and the body
reads only those rows, chosen by index arithmetic on `a` (or the output
parity). V reads `xp`, the data zero-padded so that every tile lies inside
it (`window_input`), kept in its own buffer (`te.MATERIALIZE_ATTR`):
inlined, each of V's reads would clamp and select. The innermost loop of
every stage is the channel block, contiguous in every buffer; channels
past the data's logical count (an undef pad) are masked to 0.

Where V and M of a single image exceed `winograd_chunk_bytes` (M went to L3
between the products and the output transform), the tile rows run in chunks
(`winograd_chunks`): V[p, s, a, b, tt, cb, ci] and M[p, s, a, b, kb, tt, ki]
hold chunk `p * S + s` (P groups, one per core, of S chunks of R tile rows;
`tt` = tile row in the chunk x TW + tile column), the padded input covers the
chunks' P * S * R tile rows, and the output transform reads chunk
`(oh div 2R) div S, (oh div 2R) mod S`; `schedule` then runs each chunk's
three stages one after the other (schedule/winograd.py,
`chunk_winograd_stages`).

Why: the direct blocked kernel is bound by its FMAs (about 80 % of peak on
AVX-512); 2.25x fewer products is the only way past that. The transforms
cost O(C) per tile instead of O(C*K), and the weight transform O(C*K) per
call (0.5 % of the products at 56x56, 8 % at 14x14; `plan-layouts` only
asks for Winograd where it pays). Results differ from the direct
convolution by rounding (relative error ~1e-6 in f32), not by
reassociation alone: the algorithm is an explicit choice, recorded as
`lamina.algorithm = "winograd"` on the op (docs/performance.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import AnyFloat, TensorType, UnitAttr
from xdsl.ir import Operation, SSAValue

from lamina.dialects import graph, te
from lamina.kernels.kernel import KernelBuilder, TeEmitter, elt, shape_of
from lamina.kernels.window import Window, window_input
from lamina.target.registry import op_facts, op_knobs

# Row a of Bt is e[P] + S*e[Q]; row r of At is e[1] + S*(e[2] + e[Q]).
_BT_P, _BT_Q, _BT_S = (0, 1, 2, 1), (2, 2, 1, 3), (-1.0, 1.0, -1.0, -1.0)
_AT_Q, _AT_S = (0, 3), (1.0, -1.0)
_G = ((1.0, 0.0, 0.0), (0.5, 0.5, 0.5), (0.5, -0.5, 0.5), (0.0, 0.0, 1.0))


def build_winograd_conv2d(
    op: Operation, kb: KernelBuilder, inputs: list[SSAValue], channels: tuple[int, int] | None
) -> list[SSAValue]:
    """The te.computes of the module docstring; `channels`: the physical channel
    slots `[first, end)` that hold the data's logical channels, when known
    (those outside are masked)."""
    assert isinstance(op, graph.Conv2dOp)
    data, weight = inputs
    t = elt(data)
    n, cb, _, _, c = shape_of(data)
    kblocks, _, _, _, _, o = shape_of(weight)
    _, _, oh, ow, _ = shape_of(op.results[0])
    tiles = (-(-oh // 2), -(-ow // 2))
    count = n * tiles[0] * tiles[1]
    top, left, _, _ = op.padding_value
    bits = t.bitwidth if isinstance(t, AnyFloat) else 32
    chunks = winograd_chunks(op, n, tiles, (cb * c, kblocks * o), bits)
    tile_rows = tiles[0] if chunks is None else chunks.padded_rows
    # Every 4x4 tile inside the padded data: rows [2*th, 2*th + 4) of 2*TH + 2.
    windows = [Window(2, 2, 1, top, tile_rows, 4), Window(3, 2, 1, left, tiles[1], 4)]
    source = window_input(kb, data, windows, 0).tensor
    if source is not data:
        source.owner.attributes[te.MATERIALIZE_ATTR] = UnitAttr()
    # U, V and M loop over (a, b) first: `schedule` fuses them into one parallel
    # loop, where M reads the slices of U and V just written. Constant weights
    # are transformed at compile time (a parameter of the kernel).
    u_type = TensorType(t, [4, 4, kblocks, cb, c, o])
    u = kb.derived_input(weight, winograd_weights, u_type)
    if u is None:
        u = kb.compute(u_type.get_shape(), t, _weight_body(weight, t), reduce_extents=[3, 3])
    if chunks is not None:
        return [_chunked_stages(op, kb, source, u, tiles, chunks, channels)]
    v = kb.compute([4, 4, count, cb, c], t, _input_body(source, tiles, channels))

    def product(em: TeEmitter, sp: list[SSAValue], red: list[SSAValue]) -> SSAValue:
        a, b, k, tile, ki = sp
        cbi, ci = red
        return em.mul(em.read(v, [a, b, tile, cbi, ci]), em.read(u, [a, b, k, cbi, ci, ki]))

    m = kb.compute([4, 4, kblocks, count, o], t, product, reduce_extents=[cb, c])
    return [kb.compute(shape_of(op.results[0]), t, _output_body(m, tiles))]


@dataclass(frozen=True)
class Chunks:
    """Tile rows in chunks: `groups` (the threads' share, a parallel loop) of
    `per_group` chunks (a serial loop) of `rows` tile rows each."""

    rows: int
    groups: int
    per_group: int

    @property
    def padded_rows(self) -> int:
        """Tile rows the chunks cover (the last ones may lie below the image)."""
        return self.rows * self.groups * self.per_group


def winograd_chunks(
    op: Operation, batch: int, tiles: tuple[int, int], channels: tuple[int, int], bits: int
) -> Chunks | None:
    """How a single image's tile rows are chunked (None: not chunked), given the
    input and output channel slots `channels` (C, K): when the transformed
    input V and the products M of all tiles (16 x tiles x (C + K) elements)
    exceed `winograd_chunk_bytes`, chunks of `CHUNK_MIN_TILES` tiles or more
    (one tile row at 28 tiles a row), each group of chunks a thread's share.
    Each chunk reads all the transformed weights U (16 x C x K): only where
    they and a chunk's V and M take at most three quarters of L2 (128 -> 128
    at 28x28, 1.2 MiB of 2: 0.91x the time; 128 -> 192, 1.8 MiB: 1.02x); and
    not where the last group's share of tile rows would leave more than an
    eighth of them idle."""
    budget = op_knobs(op).winograd_chunk_bytes
    facts = op_facts(op)
    tile_rows, tile_cols = tiles
    row_bytes = 16 * tile_cols * sum(channels) * bits // 8
    if not budget or batch != 1 or tile_rows * row_bytes <= budget:
        return None
    rows = -(-CHUNK_MIN_TILES // tile_cols)
    weight_bytes = 16 * channels[0] * channels[1] * bits // 8
    if 4 * (weight_bytes + rows * row_bytes) > 3 * facts.l2_bytes:
        return None
    groups = max(1, facts.cores)
    per_group = -(-tile_rows // (groups * rows))
    padded = rows * groups * per_group
    if per_group < 2 or 8 * (padded - tile_rows) > tile_rows:
        return None
    return Chunks(rows, groups, per_group)


CHUNK_MIN_TILES = 14
"""Fewest tiles in a chunk of whole tile rows (`winograd_chunks`): one row of 14
or 28 tiles (28x28 and 56x56 images) was measured; fewer tiles per chunk make
short register blocks of tiles."""


def _chunked_stages(
    op: Operation,
    kb: KernelBuilder,
    source: SSAValue,
    u: SSAValue,
    tiles: tuple[int, int],
    chunks: Chunks,
    channels: tuple[int, int] | None,
) -> SSAValue:
    """V, M and y over chunks of tile rows: V[p, s, a, b, tt, cb, ci] and M[p, s,
    a, b, kb, tt, ki] hold chunk `p * S + s`'s tiles (`tt` = tile row in the chunk
    x TW + tile column), and y reads chunk `(oh / 2R) div S`, `(oh / 2R) mod S`
    -- the form `chunk_winograd_stages` (schedule/winograd.py) recognises to run
    the three per chunk."""
    t = elt(source)
    _, cb, _, _, c = shape_of(source)
    kblocks, o = shape_of(u)[2], shape_of(u)[5]
    tw_count = tiles[1]
    per = chunks.rows * tw_count
    lead = [chunks.groups, chunks.per_group]

    def tile_at(em: TeEmitter, p: SSAValue, s: SSAValue, tt: SSAValue):
        chunk = em.affine([(p, chunks.per_group), (s, 1)])
        th = em.affine([(chunk, chunks.rows), (em.idiv(tt, tw_count), 1)])
        return em.index(0), th, em.irem(tt, tw_count)

    def input_body(em: TeEmitter, sp: list[SSAValue], red: list[SSAValue]) -> SSAValue:
        p, s, a, b, tt, cbi, ci = sp
        return _transform_input(em, source, tile_at(em, p, s, tt), a, b, cbi, ci, channels)

    v = kb.compute([*lead, 4, 4, per, cb, c], t, input_body)

    def product(em: TeEmitter, sp: list[SSAValue], red: list[SSAValue]) -> SSAValue:
        p, s, a, b, k, tt, ki = sp
        cbi, ci = red
        return em.mul(em.read(v, [p, s, a, b, tt, cbi, ci]), em.read(u, [a, b, k, cbi, ci, ki]))

    m = kb.compute([*lead, 4, 4, kblocks, per, o], t, product, reduce_extents=[cb, c])

    def output_body(em: TeEmitter, sp: list[SSAValue], _: list[SSAValue]) -> SSAValue:
        _image, k, oh, ow, ki = sp
        chunk = em.idiv(oh, 2 * chunks.rows)
        p = em.idiv(chunk, chunks.per_group) if chunks.groups > 1 else em.index(0)
        s = em.irem(chunk, chunks.per_group)
        tt = em.affine([(em.irem(em.idiv(oh, 2), chunks.rows), tw_count), (em.idiv(ow, 2), 1)])
        return _transform_output(em, lambda a, b: em.read(m, [p, s, a, b, k, tt, ki]), oh, ow, t)

    return kb.compute(shape_of(op.results[0]), t, output_body)


def winograd_weights(w: np.ndarray) -> np.ndarray:
    """U = G w G^T for blocked weights `w[kb, cb, kh, kw, ci, ki]`, as
    `U[a, b, kb, cb, ci, ki]` (in float64, then w's type)."""
    g = np.array(_G)
    return np.einsum("ah,bw,kchwio->abkcio", g, g, w.astype(np.float64)).astype(w.dtype)


def _pick(em: TeEmitter, i: SSAValue, table: Sequence[int | float], t=None) -> SSAValue:
    """`table[i]` as a chain of selects (an index, or a constant of type `t`)."""

    def const(x):
        return em.index(int(x)) if t is None else em.const(x, t)

    value = const(table[-1])
    for k in range(len(table) - 2, -1, -1):
        value = em.select(em.cmpi("eq", i, k), const(table[k]), value)
    return value


def _weight_body(weight: SSAValue, t):
    def body(em: TeEmitter, sp: list[SSAValue], red: list[SSAValue]) -> SSAValue:
        a, b, k, cbi, ci, ki = sp
        kh, kw = red
        g = [
            _pick(em, em.affine([(x, 3), (r, 1)]), [v for row in _G for v in row], t)
            for x, r in ((a, kh), (b, kw))
        ]
        return em.mul(em.mul(g[0], g[1]), em.read(weight, [k, cbi, kh, kw, ci, ki]))

    return body


def _input_body(source: SSAValue, tiles, channels: tuple[int, int] | None):
    """V's body: `source` is the data zero-padded so that every tile lies inside it."""
    th_count, tw_count = tiles

    def body(em: TeEmitter, sp: list[SSAValue], _: list[SSAValue]) -> SSAValue:
        a, b, tile, cbi, ci = sp
        tw = em.irem(tile, tw_count)
        th = em.irem(em.idiv(tile, tw_count), th_count)
        image = em.idiv(tile, tw_count * th_count)
        return _transform_input(em, source, (image, th, tw), a, b, cbi, ci, channels)

    return body


def _transform_input(
    em: TeEmitter,
    source: SSAValue,
    tile: tuple[SSAValue, SSAValue, SSAValue],
    a: SSAValue,
    b: SSAValue,
    cbi: SSAValue,
    ci: SSAValue,
    channels: tuple[int, int] | None,
) -> SSAValue:
    """Element (a, b) of Bt d B for the 4x4 tile `(image, th, tw)` of `source`."""
    t = elt(source)
    _, cblocks, _, _, c = shape_of(source)
    image, th, tw = tile

    def at(i: SSAValue, j: SSAValue) -> SSAValue:
        row, col = em.affine([(th, 2), (i, 1)]), em.affine([(tw, 2), (j, 1)])
        return em.read(source, [image, cbi, row, col, ci])

    p = [_pick(em, x, _BT_P) for x in (a, b)]
    q = [_pick(em, x, _BT_Q) for x in (a, b)]
    s = [_pick(em, x, _BT_S, t) for x in (a, b)]
    row_p = em.add(at(p[0], p[1]), em.mul(s[1], at(p[0], q[1])))
    row_q = em.add(at(q[0], p[1]), em.mul(s[1], at(q[0], q[1])))
    value = em.add(row_p, em.mul(s[0], row_q))
    inside = channel_mask(em, em.affine([(cbi, c), (ci, 1)]), channels, cblocks * c)
    if inside is None:
        return value
    return em.select(inside, value, em.const(0, t))


def _output_body(m: SSAValue, tiles):
    th_count, tw_count = tiles
    t = elt(m)

    def body(em: TeEmitter, sp: list[SSAValue], _: list[SSAValue]) -> SSAValue:
        image, k, oh, ow, ki = sp
        tile = em.affine(
            [(image, th_count * tw_count), (em.idiv(oh, 2), tw_count), (em.idiv(ow, 2), 1)]
        )
        return _transform_output(em, lambda a, b: em.read(m, [a, b, k, tile, ki]), oh, ow, t)

    return body


def _transform_output(
    em: TeEmitter, product: Callable[[SSAValue, SSAValue], SSAValue], oh, ow, t
) -> SSAValue:
    """Output (oh, ow) of At M A, `product(a, b)` reading M at the output's tile."""
    r, s = em.irem(oh, 2), em.irem(ow, 2)
    rows = [em.index(1), em.index(2), _pick(em, r, _AT_Q)]
    cols = [em.index(1), em.index(2), _pick(em, s, _AT_Q)]
    sign = [_pick(em, r, _AT_S, t), _pick(em, s, _AT_S, t)]

    def row(a: SSAValue) -> SSAValue:
        x = [product(a, bb) for bb in cols]
        return em.add(x[0], em.mul(sign[1], em.add(x[1], x[2])))

    y = [row(a) for a in rows]
    return em.add(y[0], em.mul(sign[0], em.add(y[1], y[2])))


def channel_mask(
    em: TeEmitter, channel: SSAValue, span: tuple[int, int] | None, slots: int
) -> SSAValue | None:
    """The condition that physical channel slot `channel` holds data (None:
    every one of the `slots` slots does)."""
    if span is None:
        return None
    first, end = span
    conds = []
    if first > 0:
        conds.append(em.cmpi("sge", channel, first))
    if end < slots:
        conds.append(em.cmpi("slt", channel, end))
    return em.and_(conds)
