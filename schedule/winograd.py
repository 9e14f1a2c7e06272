"""Winograd schedule rules (kernels/conv_winograd.py): register blocks of the products, chunks.

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

A Winograd convolution in chunks of tile rows (kernels/conv_winograd.py,
`winograd_chunks`) gets its output transform the chunk loops of its input
transform and products (`chunk_winograd_stages`), and the three fuse over them
(`fuse_winograd_chunks`, called by `fuse_row_stages`): per chunk, V, M and the
output rows, with one chunk of V and M kept per group (storage folding), in L2.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import is_side_effect_free

from lamina.dialects import loop
from lamina.dialects.loop import LoopKind
from lamina.schedule import primitives as prim
from lamina.schedule.int_analysis import int_constant
from lamina.target.schedule_knobs import ScheduleKnobs

_POSITIONS = (4, 4)
"""The tile positions (a, b) of F(2x2, 3x3) that lead every buffer of the products."""


def is_winograd_product(row: loop.ForOp) -> bool:
    """Is `row` (a register-blockable reduction's innermost loop) Winograd's
    product? It stores a 5-d buffer (M) and loads a 6-d one it does not store
    (U), both led by the 4 x 4 tile positions and indexed there by the same two
    variables -- the shape `build_winograd_conv2d` emits and nothing else in
    Lamina has. A chunked M (7-d) has the positions after the two chunk
    dimensions."""
    stores = [o for o in row.walk() if isinstance(o, loop.StoreOp)]
    if not stores:
        return False
    m = stores[0]
    if _positions_at(m.buffer, 5, 0):
        positions = list(m.indices[:2])
    elif _positions_at(m.buffer, 7, 2):
        positions = list(m.indices[2:4])
    else:
        return False
    return any(
        isinstance(o, loop.LoadOp)
        and o.buffer is not m.buffer
        and _positions_at(o.buffer, 6, 0)
        and list(o.indices[:2]) == positions
        for o in row.walk()
    )


def _shape(buffer) -> tuple[int, ...]:
    shape = getattr(buffer.type, "get_shape", None)
    return () if shape is None else tuple(shape())


def _positions_at(buffer, rank: int, at: int) -> bool:
    """Is `buffer` a memref of `rank` dimensions with the 4 x 4 tile positions at `at`?"""
    shape = _shape(buffer)
    return len(shape) == rank and shape[at : at + 2] == _POSITIONS


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
        if isinstance(o, loop.LoadOp) and _positions_at(o.buffer, 6, 0):
            dims = tuple(o.buffer.type.get_shape())
            bits = o.buffer.type.get_element_type().bitwidth
            return jam * dims[3] * dims[4] * dims[5] * bits // 8
    return 0


# -- chunks of tile rows (kernels/conv_winograd.py, `winograd_chunks`) ------------------


@dataclass
class WinogradChunks:
    """A chunked Winograd kernel's nests, found by `chunk_winograd_stages`: the
    products' buffer M[P, S, 4, 4, kb, tt, ki], the products' nest, and the
    output transform's loop over chunk groups (or over chunks when P = 1), which
    runs after the input transform and the products; `fuse_winograd_chunks`
    makes the three one loop."""

    products: SSAValue
    products_nest: loop.ForOp
    output: loop.ForOp
    loops: int
    """The chunk loops around the output transform: 2 (groups, chunks), or 1."""


def chunk_winograd_stages(func: loop.FuncOp) -> list[WinogradChunks]:
    """Give a chunked Winograd kernel's output transform the chunk loops of its
    products: `for kb, oh, ow` becomes `for p (parallel), s { for kb, oh in
    [2R (p S + s), min(2R (p S + s + 1), OH)), ow }`, reading M at [p, s, ...]
    instead of the chunk it computed from `oh`; and the products' and the input
    transform's loop over the S chunks of a group serial, whose temporaries
    storage folding then keeps one chunk of (so they stay in L2).

    The kernel's M is a local [P, S, 4, 4, KB, T, lanes] temporary written in one
    top-level nest and read in a later one, the output transform, at `[(oh div
    2R) div S, (oh div 2R) mod S, ...]` (`[0, (oh div 2R) mod S, ...]` for P = 1),
    `oh` a loop of that nest whose enclosing loops each hold only the next --
    the form `build_winograd_conv2d` emits for chunks and nothing else in
    Lamina has. Legal: the output transform's iterations are independent (it
    writes each output element once from M), so any order of them computes the
    same; chunk (p, s) of the output reads only M's slice (p, s)."""
    found: list[WinogradChunks] = []
    top = [o for o in func.body.blocks[0].ops if isinstance(o, loop.ForOp)]
    for alloc in [o for o in func.body.blocks[0].ops if isinstance(o, loop.AllocOp)]:
        m = alloc.results[0]
        if alloc.scope.data != "local" or not _positions_at(m, 7, 2):
            continue
        groups, per_group = _shape(m)[:2]
        accesses = [u.operation for u in m.uses if not isinstance(u.operation, loop.FreeOp)]
        writers = {_top_loop(a, top) for a in accesses if isinstance(a, loop.StoreOp)}
        producer = writers.pop() if len(writers) == 1 else None
        if producer is None:
            continue
        loads = [a for a in accesses if isinstance(a, loop.LoadOp) and not producer.is_ancestor(a)]
        readers = {_top_loop(a, top) for a in loads}
        nest = readers.pop() if len(readers) == 1 else None
        if nest is None or top.index(nest) < top.index(producer):
            continue
        found_chunks = [_chunk_of(a, groups, per_group) for a in loads]
        pattern = [c for c in found_chunks if c is not None]
        if not pattern or len(pattern) < len(found_chunks) or len(set(pattern)) != 1:
            continue
        rows_iv, rows_per_chunk = pattern[0]
        chain = _chain_to(nest, rows_iv)
        if chain is None:
            continue
        output = _wrap_in_chunks(nest, chain[-1], groups, per_group, rows_per_chunk)
        chunk = output if groups == 1 else _only_for(output)
        assert chunk is not None
        for a in loads:  # operands: the buffer, then the indices
            if groups > 1:
                a.operands[1] = output.induction_var
            a.operands[2] = chunk.induction_var
        if groups == 1:
            _serialize_chunks(top, per_group)
        found.append(WinogradChunks(m, producer, output, 1 if groups == 1 else 2))
    return found


def fuse_winograd_chunks(found: list[WinogradChunks]) -> tuple[int, list[Block]]:
    """Fuse each chunked Winograd kernel's input transform, products and output
    transform (`chunk_winograd_stages`), three adjacent top-level nests, over
    their chunk loops: one loop (over groups, holding one over their chunks)
    whose iteration computes V, M and the output of one chunk. Returns how many
    loops fused and the innermost fused bodies, whose stages `fuse_row_stages`
    then fuses by tile position (V and M), as it does over a whole image. Legal:
    chunk (p, s) of the products reads only slice (p, s) of V, and of the output
    transform only slice (p, s) of M, which the same iteration wrote before; the
    output elements it writes are no other chunk's. Fused first, before
    `fuse_row_stages` looks at the top level: the input transform's chunk loop
    might otherwise fuse with another loop of the same trip count (the weight
    transform's over 4 tile rows, with S = 4)."""
    fused = 0
    bodies: list[Block] = []
    for chunks in found:
        products = chunks.products_nest
        stages = [products.prev_op, products, chunks.output]
        if not (
            isinstance(stages[0], loop.ForOp)
            and products.next_op is chunks.output
            and _feeds(stages[0], products)
        ):
            continue
        nests: list[loop.ForOp] = stages  # type: ignore[assignment]
        for depth in range(chunks.loops):
            if not all(_same_bounds(nests[0], n) for n in nests[1:]):
                break
            for n in nests[1:]:
                prim.fuse(nests[0], n)
                fused += 1
            if depth + 1 == chunks.loops:
                bodies.append(nests[0].body.blocks[0])
                break
            nests = [o for o in prim.body_ops(nests[0]) if isinstance(o, loop.ForOp)]
            if len(nests) != 3:
                break
    return fused, bodies


def _feeds(first: loop.ForOp, products: loop.ForOp) -> bool:
    """Does `first` (the input transform) write a chunked temporary `[P, S, 4, 4,
    ...]` that `products` reads?"""
    chunked = {
        o.buffer
        for o in first.walk()
        if isinstance(o, loop.StoreOp) and _positions_at(o.buffer, 7, 2)
    }
    return any(isinstance(o, loop.LoadOp) and o.buffer in chunked for o in products.walk())


def _same_bounds(first: loop.ForOp, second: loop.ForOp) -> bool:
    try:
        return prim.bounds(first) == prim.bounds(second)
    except prim.ScheduleError:
        return False


def _top_loop(op: Operation, top: list[loop.ForOp]) -> loop.ForOp | None:
    return next((t for t in top if t.is_ancestor(op)), None)


def _chunk_of(load: loop.LoadOp, groups: int, per_group: int) -> tuple[SSAValue, int] | None:
    """`(oh, 2R)` when `load` reads M at `[(oh div 2R) div S, (oh div 2R) mod S, ...]`
    (`[0, ...]` for one group) with `oh` a loop's induction variable, else None."""
    p_index, s_index = load.indices[0], load.indices[1]
    s_op = s_index.owner
    if not isinstance(s_op, arith.RemUIOp) or int_constant(s_op.rhs) != per_group:
        return None
    chunk = _division(s_op.lhs)
    if chunk is None:
        return None
    if groups == 1:
        return chunk if int_constant(p_index) == 0 else None
    p_op = p_index.owner
    if (
        not isinstance(p_op, arith.DivUIOp)
        or int_constant(p_op.rhs) != per_group
        or _division(p_op.lhs) != chunk
    ):
        return None
    return chunk


def _division(value: SSAValue) -> tuple[SSAValue, int] | None:
    """`(iv, d)` when `value` is `iv div d`, `iv` a loop's induction variable."""
    op = value.owner
    if not isinstance(op, arith.DivUIOp) or not isinstance(op.lhs, BlockArgument):
        return None
    divisor = int_constant(op.rhs)
    owner = op.lhs.owner.parent_op() if isinstance(op.lhs.owner, Block) else None
    if divisor is None or not isinstance(owner, loop.ForOp) or owner.induction_var is not op.lhs:
        return None
    return op.lhs, divisor


def _only_for(outer: loop.ForOp) -> loop.ForOp | None:
    """The one loop `outer`'s body holds beside side-effect-free ops, or None."""
    ops = prim.body_ops(outer)
    loops = [o for o in ops if isinstance(o, loop.ForOp)]
    if len(loops) != 1 or any(
        o.regions or not is_side_effect_free(o) for o in ops if not isinstance(o, loop.ForOp)
    ):
        return None
    return loops[0]


def _chain_to(nest: loop.ForOp, iv: SSAValue) -> list[loop.ForOp] | None:
    """The loops from `nest` down to the one of induction variable `iv`, each the
    only loop of the one before; None when there is no such chain."""
    chain = [nest]
    while chain[-1].induction_var is not iv:
        inner = _only_for(chain[-1])
        if inner is None or inner.iter_args:
            return None
        chain.append(inner)
    return None if chain[0].iter_args else chain


def _wrap_in_chunks(
    nest: loop.ForOp, rows: loop.ForOp, groups: int, per_group: int, span: int
) -> loop.ForOp:
    """Put `nest` in loops over the chunks (p parallel when groups > 1, s serial),
    its loop `rows` over [span * (p S + s), min(span * (p S + s + 1), end))."""
    lb, end, step = prim.bounds(rows)
    if lb != 0 or step != 1:
        raise prim.ScheduleError("the output rows start at 0 with step 1")
    zero, one = prim.index_constant(nest, 0), prim.index_constant(nest, 1)
    s_loop = loop.ForOp(zero, prim.index_constant(nest, per_group), one)
    s_loop.induction_var.name_hint = "chunk"
    outer = s_loop
    if groups > 1:
        outer = loop.ForOp(zero, prim.index_constant(nest, groups), one, kind=LoopKind.PARALLEL)
        outer.induction_var.name_hint = "group"
        Rewriter.insert_op(s_loop, InsertPoint.before(outer.yield_op))
    Rewriter.insert_op(outer, InsertPoint.before(nest))
    at = InsertPoint.before(s_loop.yield_op)
    chunk: SSAValue = s_loop.induction_var
    ops: list[Operation] = []
    if groups > 1:
        base = arith.MuliOp(outer.induction_var, prim.index_constant(nest, per_group))
        total = arith.AddiOp(base, chunk)
        ops += [base, total]
        chunk = total.result
    lo = arith.MuliOp(chunk, prim.index_constant(nest, span))
    next_lo = arith.AddiOp(lo, prim.index_constant(nest, span))
    hi = arith.MinUIOp(next_lo, prim.index_constant(nest, end))
    ops += [lo, next_lo, hi]
    lo.result.name_hint, hi.result.name_hint = "rows_lo", "rows_hi"
    for op in ops:
        Rewriter.insert_op(op, at)
    nest.detach()
    Rewriter.insert_op(nest, at)
    rows.operands[0] = lo.result
    rows.operands[1] = hi.result
    for inner in nest.walk():
        if isinstance(inner, loop.ForOp) and inner.kind_name == LoopKind.PARALLEL:
            prim.serialize(inner)
    return outer


def _serialize_chunks(top: list[loop.ForOp], per_group: int) -> None:
    """With one group the chunk loop is the input transform's and the products'
    outermost loop, which `lower-te` made parallel: serial, so that storage
    folding keeps one chunk of V and M."""
    for nest in top:
        if nest.kind_name == LoopKind.PARALLEL and any(
            isinstance(o, loop.StoreOp) and _shape(o.buffer)[:4] == (1, per_group, *_POSITIONS)
            for o in nest.walk()
        ):
            prim.serialize(nest)
