"""Epilogue sinking: an elementwise epilogue joins the register blocks of its matmul.

A matmul whose row is split into column blocks (`register_block`) runs its
column blocks outermost, so that each column panel of B is read once while
every row block uses it:

    for jo in [0, N) step NR kind(parallel) {       // N1: the blocked reduction
      for io in [0, M) step MR { C[io.., jo..] = 0; for k { C[io.., jo..] += … } }
    }
    for i in [0, M) { for j in [0, N) kind(vectorized) { C[i, j] = relu(C[i, j] + b[j]) } }

The epilogue (`N2`, bias, activation, residual) loops over the rows, so
`fuse_row_stages` cannot merge it, and it streams the whole of C through
memory once more: 1 MiB for a transformer's 128 x 2048 feed-forward
layer, a parallel region of its own too. `sink_epilogues` tiles N2 like
N1 (split its rows by MR and its row by NR, column blocks outermost) and
fuses it into N1 level by level, so each register block is finished right
after its reduction, while it is still in L1 (or in registers: LLVM
forwards the stored accumulators to the epilogue's loads):

    for jo … { for io … { …reduction…; for jj kind(vectorized) { rows io+0 … io+MR-1 } } }

Legal when iteration (jo, io) of N1 leaves the tile C[io:io+MR, jo:jo+NR]
final and touches nothing else N2 reads: every access of N1 to a buffer
N2 reads that N1 writes lies inside that tile (`_inside_tile`), N2 reads
those buffers only at its own element [i, j], and N1 reads nothing N2
writes (except the tile itself, read by N1 before its epilogue writes it).

A channel-blocked convolution's register block covers its whole row (one
vector of output channels, or F of them once `jam_channel_blocks` runs), so
its N1 is the row-block loop itself, without a column-block loop around it:

    for ow_o in [0, OW) step MR { out[.., ow_o.., :] = 0; for ci … { … } }   // N1
    for ow in [0, OW) { for ki kind(vectorized) { out[.., ow, ki] = relu(… + b[ki]) } }

The epilogue is split by MR only and fused the same way (`_row_tiling`):
each block's accumulators get their bias and activation right after the
reduction instead of in a second pass over the output row. Measured on
MobileNet's 16->96 expansion at 112x112 (AVX-512, one thread, the kernel
alone): the second pass cost 12 % (0.414 ms with bias, 0.366 without);
docs/performance.md, "Short reductions".

A row whose width is not a multiple of MR ends in a tail block (AVX2's 14
columns: 3 blocks of 4 and one of 2; `_sink_with_tail`): the epilogue is
split where the tail starts and each part joins its block. Left after the
row, LLVM fully unrolled the three blocks and forwarded their 36
accumulators to it, where they spilled (MobileNetV2's 576 -> 96 projection
2x slower; docs/performance.md, "Accumulators in memory").

A long epilogue (`_long`: SiLU's sigmoid, a GELU, whose `math` functions
become 25-30-operation polynomials in `schedule-vector-math`) is sunk the
same way but jammed only `_rows_per_step` rows at a time, in a loop over
the block's MR rows:

    for io … { …reduction…; for r in [0, MR) step S { for jj kind(vectorized) { rows io+r … io+r+S-1 } } }

so its code is emitted once per step, not MR times (and once more per
jammed channel block). Jammed whole, EfficientNet-B0's swish was emitted
7, 14 or 21 times per block on AVX-512. S is the fewest rows dividing MR
that hold `epilogue_step_vectors` vectors with the channel blocks jammed
later: one vector per step leaves one exp's chain of dependent operations
per step, which the out-of-order window does not overlap enough (the
network 1 % slower), three (3 channel blocks, or 7 of 14 one-vector rows)
ran as fast as the full jam (docs/performance.md, "Long epilogues").
"""

from __future__ import annotations

from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Block, BlockArgument, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import is_side_effect_free

from lamina.dialects import loop
from lamina.dialects.loop import LoopKind
from lamina.schedule import primitives as prim
from lamina.schedule.dependence import iv_position, same_indices
from lamina.schedule.int_analysis import Analyzer, int_constant
from lamina.schedule.primitives import ScheduleError
from lamina.schedule.register_block import CHANNEL_JAM_ATTR
from lamina.target.schedule_knobs import ScheduleKnobs

MATH_FUNCTION_OPS = 30
"""What one `math` dialect function (exp, tanh, erf, ...) counts for in an
epilogue's length (`_long`): `schedule-vector-math` expands an f32 `exp`
into a polynomial of about 25 operations plus its range reduction."""


def sink_epilogues(func: loop.FuncOp, knobs: ScheduleKnobs | None = None) -> int:
    """Fuse each elementwise epilogue into the column-blocked reduction before
    it (see the module docstring); returns how many were sunk."""
    knobs = knobs or ScheduleKnobs()
    sunk = 0
    blocks = [func.body.blocks[0]] + [
        op.body.block for op in func.walk() if isinstance(op, loop.ForOp)
    ]
    for block in blocks:
        sunk += _sink_in(block, knobs)
    return sunk


def _sink_in(block: Block, knobs: ScheduleKnobs) -> int:
    sunk = 0
    first = block.first_op
    while first is not None:
        second = first.next_op
        if isinstance(first, loop.ForOp) and isinstance(second, loop.ForOp):
            tiling = _tiling(first, second)
            if tiling is not None:
                _sink(first, second, *tiling, step_rows=_step_rows(first, second, knobs))
                sunk += 1
                continue
            third = second.next_op
            if isinstance(third, loop.ForOp) and _sink_with_tail(first, second, third, knobs):
                sunk += 2
                first = second.next_op
                continue
        first = second
    return sunk


def _step_rows(n1: loop.ForOp, n2: loop.ForOp, knobs: ScheduleKnobs) -> int:
    """Rows per step of the sunk epilogue `n2`: 0 (jam every row), or for a
    long one enough rows for `epilogue_step_vectors` vectors (module docstring)."""
    if not _long(n2, knobs.epilogue_jam_max_ops):
        return 0
    return -(-knobs.epilogue_step_vectors // _channel_jam(n1))


def _sink_with_tail(n1: loop.ForOp, tail: loop.ForOp, n2: loop.ForOp, knobs: ScheduleKnobs) -> bool:
    """Sink the epilogue `n2` of a convolution row blocked as `n1` (blocks of
    MR) and `tail` (the last OW mod MR columns, one block): `n2` is split where
    the tail starts and each part joins its block loop, as `_row_tiling` does
    for a row without a tail. MobileNetV2's 576->96 projection at 14x14 on AVX2
    (3 blocks of 4 columns, a tail of 2): left in a second pass, LLVM fully
    unrolled the three blocks and forwarded their 36 accumulators to it, which
    spilled (docs/performance.md, "Accumulators in memory").
    Legal when each part is legal for its block (`_row_tiling`): then the
    tail touches, of what the epilogue reads or writes, only its own columns,
    so the first part can move before it."""
    try:
        lb, mid, _ = prim.bounds(n1)
        tlb, tub, tstep = prim.bounds(tail)
        elb, eub, estep = prim.bounds(n2)
    except ScheduleError:
        return False
    if tlb != mid or (elb, eub, estep) != (lb, tub, 1) or tub - tlb != tstep:
        return False
    if _epilogue_row(n2) is None:
        return False
    rest = n2.clone()
    n2.operands[1] = prim.index_constant(n2, mid)
    rest.operands[0] = prim.index_constant(n2, mid)
    Rewriter.insert_op(rest, InsertPoint.after(n2))
    j_first, j_rest = _epilogue_row(n2), _epilogue_row(rest)
    assert j_first is not None and j_rest is not None
    if not (_row_tiling(n1, n2, j_first) and _row_tiling(tail, rest, j_rest, least_rows=1)):
        Rewriter.erase_op(rest)
        n2.operands[1] = prim.index_constant(n2, eub)
        return False
    step_rows = _step_rows(n1, n2, knobs)
    n2.detach()
    Rewriter.insert_op(n2, InsertPoint.after(n1))
    _sink(n1, n2, [n1], 0, step_rows=step_rows)
    _sink(tail, rest, [tail], 0, step_rows=step_rows)
    return True


def _channel_jam(n1: loop.ForOp) -> int:
    """How many output-channel blocks `jam_channel_blocks` will jam into `n1`'s
    rows (the mark `channel_jam` left on a loop around it), else 1."""
    parent = n1.parent_op()
    while parent is not None:
        if isinstance(parent, loop.ForOp) and CHANNEL_JAM_ATTR in parent.attributes:
            attr = parent.attributes[CHANNEL_JAM_ATTR]
            assert isinstance(attr, IntegerAttr)
            return attr.value.data
        parent = parent.parent_op()
    return 1


def _long(n2: loop.ForOp, jam_max_ops: int) -> bool:
    """Is the epilogue `n2` too long to copy into its block once per row: more
    than `jam_max_ops` operations in its row body, a `math` function counting
    `MATH_FUNCTION_OPS` (what it becomes in `schedule-vector-math`)?"""
    j_loop = _epilogue_row(n2)
    assert j_loop is not None
    ops = prim.body_ops(j_loop)
    length = sum(MATH_FUNCTION_OPS if o.name.startswith("math.") else 1 for o in ops)
    return length > jam_max_ops


def _tiling(n1: loop.ForOp, n2: loop.ForOp) -> tuple[list[loop.ForOp], int] | None:
    """`([io, tail io], NR)` when `n2` can be sunk into the blocks of `n1`, else
    None (`[n1]` and NR 0 for blocks over whole rows, `_row_tiling`)."""
    j_loop = _epilogue_row(n2)
    if j_loop is None:
        return None
    if _row_tiling(n1, n2, j_loop):
        return [n1], 0
    rows = _row_block_loops(n1)
    if not rows:
        return None
    try:
        jlb, jub, nr = prim.bounds(n1)
        spans = [prim.bounds(r) for r in rows]
        rows_covered, columns_covered = (spans[0][0], spans[-1][1], 1), (jlb, jub, 1)
        if prim.bounds(n2) != rows_covered or prim.bounds(j_loop) != columns_covered:
            return None
    except ScheduleError:
        return None
    if spans[0][2] < 2 or (jub - jlb) % nr or any((ub - lb) % mr for lb, ub, mr in spans):
        return None
    if not _legal(n1, rows, n2, n2.induction_var, j_loop.induction_var):
        return None
    return rows, nr


def _row_tiling(n1: loop.ForOp, n2: loop.ForOp, j_loop: loop.ForOp, least_rows: int = 2) -> bool:
    """Is `n1` a row-block loop whose blocks span whole rows
    (a convolution's: its fill is one vectorized loop over the row `j_loop`
    walks, or one per row of the block when its rows are not jammed: AVX2's
    blocks of channel-jammed rows) and `n2` walks its rows one by one (the
    module docstring). A tail block (`_sink_with_tail`) may be one row."""
    if n1.iter_args or n1.kind_name == LoopKind.VECTORIZED:
        return False
    fills = [o for o in prim.body_ops(n1) if isinstance(o, loop.ForOp)][:-1]  # then the reduction
    if not fills or any(f.kind_name != LoopKind.VECTORIZED for f in fills):
        return False
    try:
        ilb, iub, mr = prim.bounds(n1)
        if prim.bounds(n2) != (ilb, iub, 1):
            return False
        if any(prim.bounds(j_loop) != prim.bounds(f) for f in fills):
            return False
    except ScheduleError:
        return False
    if mr < least_rows or (iub - ilb) % mr:
        return False
    return _legal(n1, [n1], n2, n2.induction_var, j_loop.induction_var)


def _row_block_loops(n1: loop.ForOp) -> list[loop.ForOp]:
    """The row-block loop `io` of a column-blocked reduction `n1` (`jo`), and
    the block of its M mod MR tail rows when there is one: the last loops of
    `n1`'s body (before the `loop.free` of a packed panel), each a loop with a
    step above 1 or a single block, the second starting where the first
    ends."""
    if n1.iter_args or n1.kind_name == LoopKind.VECTORIZED:
        return []
    ops = prim.body_ops(n1)
    while ops and isinstance(ops[-1], loop.FreeOp):
        ops = ops[:-1]
    found: list[loop.ForOp] = []
    for op in reversed(ops[-2:]):
        if not isinstance(op, loop.ForOp) or op.iter_args:
            break
        found.insert(0, op)
    try:
        if len(found) == 2 and prim.bounds(found[0])[1] != prim.bounds(found[1])[0]:
            found = found[1:]
    except ScheduleError:
        return []
    return found


def _epilogue_row(n2: loop.ForOp) -> loop.ForOp | None:
    """The loop `j` when `n2` is `for i { for j kind(vectorized) { straight-line ops } }`."""
    inner = prim.body_ops(n2)
    loops = [o for o in inner if isinstance(o, loop.ForOp)]
    if n2.iter_args or len(loops) != 1 or len(inner) != 1:
        return None
    j_loop = loops[0]
    if j_loop.iter_args or j_loop.kind_name != LoopKind.VECTORIZED:
        return None
    for op in prim.body_ops(j_loop):
        if op.regions or not (
            isinstance(op, loop.LoadOp | loop.StoreOp) or is_side_effect_free(op)
        ):
            return None
    return j_loop


def _legal(
    n1: loop.ForOp, rows: list[loop.ForOp], n2: loop.ForOp, i: SSAValue, j: SSAValue
) -> bool:
    """The legality condition of the module docstring."""
    if any(isinstance(o, loop.CallOp) for o in n1.walk()):
        return False
    n1_ops = [o for o in n1.walk() if isinstance(o, loop.LoadOp | loop.StoreOp)]
    n2_ops = [o for o in n2.walk() if isinstance(o, loop.LoadOp | loop.StoreOp)]
    n1_written = {o.buffer for o in n1_ops if isinstance(o, loop.StoreOp)}
    n2_written = {o.buffer for o in n2_ops if isinstance(o, loop.StoreOp)}
    shared = n1_written & {o.buffer for o in n2_ops}
    if not shared:
        return False
    where: tuple[int, int] | None = None
    fixed: dict[SSAValue, list[SSAValue]] = {}
    for o in n2_ops:
        if o.buffer in shared or o.buffer in n2_written:
            row, column = iv_position(o.indices, i), iv_position(o.indices, j)
            if row is None or column is None or where not in (None, (row, column)):
                return False
            where = at = (row, column)
            others = [x for d, x in enumerate(o.indices) if d not in at]
            if not all(_fixed_in(x, n2) for x in others):
                return False
            if not same_indices(fixed.setdefault(o.buffer, others), others):
                return False
    assert where is not None
    analyzer = Analyzer()
    for o in n1_ops:
        if o.buffer in shared or o.buffer in n2_written:
            others = [x for d, x in enumerate(o.indices) if d not in where]
            if o.buffer in fixed and not same_indices(fixed[o.buffer], others):
                return False
            block = next((r for r in rows if r.is_ancestor(o)), None)
            if block is None or not _inside_tile(o.indices, where, block, n1, analyzer):
                return False
    return True


def _fixed_in(index: SSAValue, nest: loop.ForOp) -> bool:
    """Is `index` the same in every iteration of `nest` (a constant, or a value
    defined outside it: a batch loop's variable around both nests)?"""
    if int_constant(index) is not None:
        return True
    block = index.block if isinstance(index, BlockArgument) else index.owner.parent_block()
    return block is None or not nest.is_ancestor(block)


def _inside_tile(
    indices, where: tuple[int, int], rows: loop.ForOp, n1: loop.ForOp, analyzer: Analyzer
) -> bool:
    """Is the access at `io + [0, MR)` in dimension `where[0]`, `jo + [0, NR)` in
    `where[1]`, its offsets ranging over loops inside the row block only, and
    elsewhere at values fixed in `n1` (the caller compares them with the
    epilogue's)?"""
    for d, index in enumerate(indices):
        if d not in where:
            if not _fixed_in(index, n1):
                return False
            continue
        whole = rows is n1 and d == where[1]  # the block spans the row: any column
        tile = rows if d == where[0] else n1
        terms, const = analyzer.linear(index)
        lo = hi = const
        seen = False
        for atom, coef in terms:
            if atom is tile.induction_var and coef == 1 and not whole:
                seen = True
                continue
            if not _iv_inside(atom, rows):
                return False
            r = analyzer.range(atom)
            lo, hi = lo + min(coef * r.lo, coef * r.hi), hi + max(coef * r.lo, coef * r.hi)
        if whole:
            continue  # the epilogue reads the same row, whose every column is final
        tlb, tub, tstep = prim.bounds(tile)
        if not seen and tub - tlb == tstep and tlb <= lo and hi < tub:
            continue  # a one-block loop's columns, written as constants
        if not seen or lo < 0 or hi >= tstep:
            return False
    return True


def _iv_inside(value: SSAValue, rows: loop.ForOp) -> bool:
    """Is `value` the induction variable of a loop nested in `rows`?"""
    for op in rows.walk():
        if isinstance(op, loop.ForOp) and op is not rows and op.induction_var is value:
            return True
    return False


def _sink(
    n1: loop.ForOp, n2: loop.ForOp, rows: list[loop.ForOp], nr: int, *, step_rows: int = 0
) -> None:
    """Tile `n2` like `n1` (its rows split where `n1`'s are, by each part's MR,
    its row by NR, column blocks outermost), fuse it into `n1` and each part's
    row blocks right after the reduction's, and jam the rows into the row
    loop (whole rows, `nr` 0: split by MR only and fuse into `n1`, the row
    blocks); with `step_rows` (a long epilogue) only as many rows as
    `_rows_per_step` gives, in a loop over the block's rows."""
    if not nr:
        row_blocks, in_block, _ = prim.split(n2, prim.bounds(n1)[2])
        prim.fuse(n1, row_blocks)
        _jam_rows(in_block, step_rows)
        return
    parts: list[loop.ForOp] = []
    rest: loop.ForOp | None = n2
    for block in rows:
        assert rest is not None
        row_blocks, in_block, rest = prim.split(rest, prim.bounds(block)[2])
        j_loop = next(o for o in prim.body_ops(in_block) if isinstance(o, loop.ForOp))
        prim.split(j_loop, nr)
        prim.interchange(in_block)
        parts.append(prim.interchange(row_blocks))
    for columns in parts:
        prim.fuse(n1, columns)
    epilogues = prim.body_ops(n1)[-len(rows) :]
    for block, epilogue in zip(rows, epilogues, strict=True):
        assert isinstance(epilogue, loop.ForOp)
        epilogue.detach()
        Rewriter.insert_op(epilogue, InsertPoint.after(block))
        prim.fuse(block, epilogue)
        epilogue_rows = prim.body_ops(block)[-1]
        assert isinstance(epilogue_rows, loop.ForOp)
        _jam_rows(epilogue_rows, step_rows)


def _jam_rows(rows: loop.ForOp, step_rows: int) -> None:
    """Unroll-and-jam the block's row loop `rows`: all of it (`step_rows` 0),
    or `_rows_per_step` rows per iteration of a loop that stays."""
    mr = prim.trip_count(rows)
    step = _rows_per_step(mr, step_rows) if step_rows else mr
    if step == mr:
        prim.unroll_and_jam(rows)
    elif step > 1:
        _, jammed, _ = prim.split(rows, step)
        prim.unroll_and_jam(jammed)


def _rows_per_step(mr: int, least: int) -> int:
    """The fewest of a block's `mr` rows, at least `least`, that divide `mr`
    (else `mr`): a long epilogue's loop over the block then jams that many
    rows per step, enough independent exps in flight to cover one exp's
    latency, its code emitted once per step, not once per row."""
    return next(d for d in range(1, mr + 1) if mr % d == 0 and (d >= least or d == mr))


__all__ = ["sink_epilogues"]
