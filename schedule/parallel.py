"""Parallelisation: which loop of a kernel runs on the thread team.

Every decision that puts `kind(parallel)` on a loop, or moves it, is made
here (the knobs are `parallel_*` in `target/schedule_knobs.py`):

* `lower-te` asks `worth_a_team` for the outermost spatial loop of each
  nest: parallel when the nest reads at least `parallel_min_work` tensor
  elements (a gathered read counting `parallel_gather_reads`), since each
  parallel region wakes the sleeping workers;
* register blocking hands `parallel` from the row blocks to the column
  blocks it moved outermost when there are enough of them for every core
  (`distribute_columns`);
* stage fusion fuses a serial stage into a parallel neighbour
  (`kinds_fusable`): the fused loop is parallel;
* `balance_parallel` moves `parallel` from a one-iteration loop to the
  spatial loop it holds, and marks the spatial loop inside a parallel loop
  of few iterations `parallel` too (`lower-to-llvm` collapses the two);
  `share_rows_before_folding` does the latter before storage folding, whose
  reused slices would make the inner loop not spatial (Winograd's tile
  positions);
* `team_for_fused_stages` gives a team to a loop that stage fusion made of
  stages each too small for one, when together they are worth it;
* `share_vector_columns` gives a team to a serial reduction nest whose only
  spatial loop is its vectorized one (a batch-1 classifier's matrix-vector
  product): blocks of that loop's columns become a parallel loop around it.
* `team_for_small_nests` shares a spatial nest below `parallel_min_work`
  but above `parallel_team_min_work` with the workers of a call's thread
  team only (`TEAM_ONLY_ATTR`): outside a team call it runs on the calling
  thread, as before;
* `serial_below_grain`, last, takes `parallel` off every loop of a kernel
  whose whole nest reads fewer than `parallel_grain_work` tensor elements:
  a region shorter than twice its fork/join cost is slower shared.

A loop is only made parallel when its iterations write disjoint elements
(`lower-te`'s spatial loops by construction; `dependence.spatial` otherwise).
"""

from __future__ import annotations

import math

from xdsl.dialects import arith
from xdsl.dialects.builtin import MemRefType, UnitAttr
from xdsl.ir import Block, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from lamina.dialects import loop
from lamina.dialects.loop import ROWS_FIRST_ATTR, TEAM_ONLY_ATTR, LoopKind
from lamina.schedule import primitives as prim
from lamina.schedule.dependence import depends_on, spatial
from lamina.schedule.int_analysis import int_constant
from lamina.schedule.primitives import ScheduleError
from lamina.target.schedule_knobs import ScheduleKnobs


def worth_a_team(points: int, reads: int, gathered: int, knobs: ScheduleKnobs) -> bool:
    """Should a nest of `points` region evaluations, each doing `reads` tensor
    reads of which `gathered` the vectorized loop gathers, run on the thread
    team? Its reads (at least two per point, a gather counting
    `parallel_gather_reads`) must reach `parallel_min_work`."""
    weighted = reads + (knobs.parallel_gather_reads - 1) * gathered
    return points * max(2, weighted) >= knobs.parallel_min_work


def enough_per_core(for_op: loop.ForOp, cores: int, knobs: ScheduleKnobs) -> bool:
    """Does `for_op` have `parallel_min_iterations_per_core` iterations per core?"""
    return prim.trip_count(for_op) >= knobs.parallel_min_iterations_per_core * cores


def distribute_columns(
    columns: loop.ForOp, rows: loop.ForOp, cores: int, knobs: ScheduleKnobs
) -> None:
    """Run the column blocks on threads when there are enough of them for every core
    (one parallel region per kernel); otherwise the row blocks stay parallel."""
    if rows.kind_name != LoopKind.PARALLEL or not enough_per_core(columns, cores, knobs):
        return
    prim.serialize(rows)
    prim.parallelize(columns)


def kinds_fusable(first: loop.ForOp, second: loop.ForOp) -> bool:
    """Same kind, or one parallel and one serial: the fused loop is parallel
    (its iterations are independent, `dependence.disjoint_by_iv`), and the stage
    too small for a thread team of its own (a bias+relu epilogue, below
    `parallel_min_work`) joins its neighbour's instead of running on the
    calling thread alone while the other cores wait."""
    kinds = {first.kind_name, second.kind_name}
    return len(kinds) == 1 or kinds == {LoopKind.PARALLEL, LoopKind.SERIAL}


def balance_parallel(func: loop.FuncOp, cores: int, knobs: ScheduleKnobs) -> int:
    """Move `parallel` from a top-level loop of one iteration to the loop it
    holds; returns how many moved.

    A blocked convolution on 16 channels has one output-channel block: its
    parallel loop runs on one thread while the other cores idle (the
    ResNet-style CNN's first stage). So has one whose channel blocks are all
    jammed into one micro-kernel step (MobileNetV2's 24-channel projections
    at 56x56: two blocks, one step, 5 % of the network on one thread); the
    jammed copies' channel indices sit beside the loop it holds. The loop
    inside (output rows) is spatial: every buffer written in it is accessed at one fixed index
    position = its induction variable, so its iterations touch disjoint
    elements and may run on any thread -- the same test as row-stage
    fusion. One region per call either way. Then `share_vector_columns`
    (which also splits a panel-packed product with one core).
    """
    if cores < 2:
        return share_vector_columns(func, cores)
    moved = team_for_small_nests(func, cores, knobs)
    for outer in [o for o in func.body.blocks[0].ops if isinstance(o, loop.ForOp)]:
        try:
            if outer.kind_name != LoopKind.PARALLEL or prim.trip_count(outer) != 1:
                continue
        except ScheduleError:
            continue
        inner = _only_loop(outer)
        if inner is None or inner.kind_name != LoopKind.SERIAL:
            continue
        try:
            if not enough_per_core(inner, cores, knobs) or not spatial(inner):
                continue
        except ScheduleError:
            continue
        prim.serialize(outer)
        prim.parallelize(inner)
        moved += 1
    for outer in [o for o in func.body.blocks[0].ops if isinstance(o, loop.ForOp)]:
        if knobs.parallel_rows_first >= 2:
            merge_peeled_rows(outer, knobs, cores)
        share_rows(outer, knobs)
    moved += share_vector_columns(func, cores)
    return moved + serial_below_grain(func, knobs)


def serial_below_grain(func: loop.FuncOp, knobs: ScheduleKnobs) -> int:
    """Make serial every parallel loop of a top-level nest that reads fewer than
    `parallel_grain_work` tensor elements (`_work`); returns how many nests.

    A region of one-thread work W takes about W / 2 + c on two threads, with c its
    fork/join cost: the post, the worker's join, the close, and the worker's share
    of the output read back from its core's cache by the next kernel. Below W = 2c
    the region is slower shared than on the calling thread. ShuffleNetV2 opens
    half of its 120 regions per call on 3-8 us of work (depthwise convolutions at
    7x7 and 14x14, layout transforms, slices, channel shuffles), where c is
    1-5 us. The same iterations run in the same order, so results are unchanged.
    """
    if knobs.parallel_grain_work <= 0:
        return 0
    made = 0
    for top in [o for o in func.body.blocks[0].ops if isinstance(o, loop.ForOp)]:
        shared = [
            o for o in top.walk() if isinstance(o, loop.ForOp) and o.kind_name == LoopKind.PARALLEL
        ]
        if not shared:
            continue
        try:
            if _work(top, knobs) >= knobs.parallel_grain_work:
                continue
        except ScheduleError:  # bounds unknown at compile time: keep the team
            continue
        for for_op in shared:
            prim.serialize(for_op)
            for_op.attributes.pop(TEAM_ONLY_ATTR, None)
        made += 1
    return made


def team_for_small_nests(func: loop.FuncOp, cores: int, knobs: ScheduleKnobs) -> int:
    """Make parallel, for the call team only (`TEAM_ONLY_ATTR`), each top-level
    serial spatial nest without a parallel loop that reads at least
    `parallel_team_min_work` tensor elements (`_work`); returns how many.

    `lower-te` leaves a nest below `parallel_min_work` serial: a libgomp region
    wakes sleeping workers with a futex (20-50 us). In a call's thread team the
    workers spin between kernels, and a region costs a few microseconds, so a
    layout transform, slice, concatenation or channel shuffle of 20-200 us
    (ShuffleNetV2: 19 % of its time on the calling thread at two threads) is
    worth sharing there. A top-level loop of one iteration hands the marking to
    the loop it holds; one of few iterations shares its rows (`share_rows`).
    """
    made = 0
    for top in [o for o in func.body.blocks[0].ops if isinstance(o, loop.ForOp)]:
        target = _small_nest_loop(top, cores, knobs)
        if target is None:
            continue
        prim.parallelize(target)
        target.attributes[TEAM_ONLY_ATTR] = UnitAttr()
        share_rows(target, knobs)
        made += 1
    return made


def _small_nest_loop(top: loop.ForOp, cores: int, knobs: ScheduleKnobs) -> loop.ForOp | None:
    """The loop of `top`'s nest that `team_for_small_nests` makes parallel, or None."""
    if top.kind_name != LoopKind.SERIAL or top.iter_args:
        return None
    if any(isinstance(o, loop.ForOp) and o.kind_name == LoopKind.PARALLEL for o in top.walk()):
        return None
    try:
        if _work(top, knobs) < knobs.parallel_team_min_work:
            return None
        target = top
        while prim.trip_count(target) == 1 and (inner := _only_loop(target)) is not None:
            target = inner
        if target.kind_name != LoopKind.SERIAL or target.iter_args:
            return None
        if not (spatial(target) or _disjoint_blocks(target)):
            return None
        if knobs.parallel_rows_first >= 2 and not enough_per_core(target, cores, knobs):
            merge_peeled_rows(target, knobs, cores, serial=True)
        if enough_per_core(target, cores, knobs) or _rows_to_share(target, cores, knobs):
            return target
    except ScheduleError:
        return None
    return None


def _disjoint_blocks(for_op: loop.ForOp) -> bool:
    """Does each iteration of `for_op` (step S) write its own block of S elements: every
    buffer written in it accessed, at one fixed position, at `iv + j` with `j` the
    variable of a loop inside it from 0 to S by 1 (or at `iv`), and nowhere else by
    `iv`? `dependence.spatial` asks for `iv` itself: a layout transform out of
    NCHW16c walks the channels in blocks of 16 (`i = io + ii`, ShuffleNetV2's
    1024x7x7 before its pool, 0.7 % of the network)."""
    step = int_constant(for_op.step)
    if step is None or step < 2 or for_op.iter_args:
        return False
    inner = {
        o.induction_var
        for o in for_op.walk()
        if isinstance(o, loop.ForOp) and o is not for_op and prim.bounds(o) == (0, step, 1)
    }
    if any(isinstance(o, loop.CallOp) for o in for_op.walk()):
        return False
    ops = [o for o in for_op.walk() if isinstance(o, loop.LoadOp | loop.StoreOp)]
    written = {o.buffer for o in ops if isinstance(o, loop.StoreOp)}
    position: dict = {}
    for access in ops:
        if access.buffer not in written:
            continue
        iv = for_op.induction_var
        varying = [d for d, index in enumerate(access.indices) if depends_on(index, iv)]
        if len(varying) != 1 or not _block_index(access.indices[varying[0]], iv, inner):
            return False
        if position.setdefault(access.buffer, varying[0]) != varying[0]:
            return False
    return bool(written)


def _block_index(index, iv, inner: set) -> bool:
    """Is `index` `iv` or `iv + j` (either order) with `j` in `inner`?"""
    if index is iv:
        return True
    owner = index.owner
    if not isinstance(owner, arith.AddiOp):
        return False
    return (owner.lhs is iv and owner.rhs in inner) or (owner.rhs is iv and owner.lhs in inner)


def _rows_to_share(outer: loop.ForOp, cores: int, knobs: ScheduleKnobs) -> bool:
    """Would `share_rows` give a parallel `outer` enough iterations per core?"""
    inner = _only_loop(outer)
    if inner is None or not 2 <= prim.trip_count(outer) < knobs.parallel_collapse_below:
        return False
    if inner.kind_name != LoopKind.SERIAL or inner.iter_args or not spatial(inner):
        return False
    trips = prim.trip_count(outer) * prim.trip_count(inner)
    return trips >= knobs.parallel_min_iterations_per_core * cores


def _work(for_op: loop.ForOp, knobs: ScheduleKnobs) -> int:
    """Tensor reads of one execution of `for_op`, a read that a vectorized loop gathers
    (its index varies along the loop other than as the last one's unit step)
    counting `parallel_gather_reads`, as `lower-te` counts them (`worth_a_team`)."""
    own = 0
    for op in prim.body_ops(for_op):
        if isinstance(op, loop.LoadOp):
            own += knobs.parallel_gather_reads if _gathered(op, for_op) else 1
        elif isinstance(op, loop.ForOp):
            own += _work(op, knobs)
    return prim.trip_count(for_op) * own


def _gathered(load: loop.LoadOp, for_op: loop.ForOp) -> bool:
    """Does the vectorized loop `for_op` gather `load` (strided along it)?"""
    if for_op.kind_name != LoopKind.VECTORIZED or not load.indices:
        return False
    iv = for_op.induction_var
    *leading, last = load.indices
    if any(depends_on(index, iv) for index in leading):
        return True
    return depends_on(last, iv) and not _unit_step(last, iv)


def _unit_step(index, iv) -> bool:
    """Is `index` `iv`, or `iv` plus a value that does not depend on it?"""
    if index is iv:
        return True
    owner = index.owner
    if isinstance(owner, arith.AddiOp):
        lhs, rhs = owner.lhs, owner.rhs
        return (lhs is iv and not depends_on(rhs, iv)) or (rhs is iv and not depends_on(lhs, iv))
    return False


def share_rows(outer: loop.ForOp, knobs: ScheduleKnobs) -> bool:
    """Mark the loop inside a parallel loop of fewer than `parallel_collapse_below`
    iterations `parallel` too, when it is the body's only loop (beside index
    arithmetic), has constant bounds and is spatial; `lower-to-llvm` then
    collapses the two, and the threads share outer x inner iterations.

    A batch-1 convolution's parallel loop runs over output-channel blocks (2-12
    in MobileNetV2): on two threads 9 blocks split 5/4, and a worker that wakes
    late leaves 2 blocks both to the calling thread; blocks x rows do not.
    Returns whether it marked one.
    """
    try:
        if outer.kind_name != LoopKind.PARALLEL:
            return False
        trips = prim.trip_count(outer)
    except ScheduleError:
        return False
    if not 2 <= trips < knobs.parallel_collapse_below:
        return False
    inner = _only_loop(outer)
    if inner is None:
        return False
    try:
        if (
            inner.kind_name != LoopKind.SERIAL
            or inner.iter_args
            or prim.trip_count(inner) < 2
            or not spatial(inner)
        ):
            return False
    except ScheduleError:
        return False
    prim.parallelize(inner)
    if knobs.parallel_rows_first == 1 and rows_first_reads_less(outer, inner):
        outer.attributes[ROWS_FIRST_ATTR] = UnitAttr()
    elif knobs.parallel_rows_first >= 2 and rows_first_crosses_less(
        outer, inner, knobs.parallel_rows_first
    ):
        outer.attributes[ROWS_FIRST_ATTR] = UnitAttr()
    return True


def rows_first_reads_less(outer: loop.ForOp, inner: loop.ForOp) -> bool:
    """Would each thread read less if the threads split `inner`'s iterations (rows) of
    every `outer` iteration (blocks) than `outer`'s of every row? `ROWS_FIRST_ATTR`.

    Collapsed blocks x rows and split in two ranges, each thread runs about half of
    the blocks over all rows: it reads every buffer indexed by the row only (a
    pointwise convolution's input) in full, and half of those indexed by the block
    only (its weights). Split by rows, the other way round. So rows first when the
    buffers defined outside the nest and read at indices that depend on the row but
    not the block hold more bytes than those that depend on the block but not the
    row: a 1x1 convolution at 14x14 to 128 channels reads 196 pixels of every input
    channel and 128 weights of it. (A depthwise convolution's input depends on both
    and its weights on the block: blocks first, as before.)
    """
    by_row: dict[SSAValue, int] = {}
    by_block: dict[SSAValue, int] = {}
    for op in inner.walk():
        if not isinstance(op, loop.LoadOp) or prim.defined_inside(op.buffer, outer):
            continue
        row = any(depends_on(i, inner.induction_var) for i in op.indices)
        block = any(depends_on(i, outer.induction_var) for i in op.indices)
        if row != block:
            (by_row if row else by_block)[op.buffer] = _bytes(op.buffer.type)
    return sum(by_row.values()) > sum(by_block.values())


def merge_peeled_rows(
    outer: loop.ForOp, knobs: ScheduleKnobs, cores: int, serial: bool = False
) -> bool:
    """Merge the row loops of a parallel loop of few blocks into one loop over all the
    rows, each iteration running the part its row belongs to (`loop.if` on the row),
    so that `share_rows` can collapse blocks x rows; returns whether it merged.

    A depthwise convolution's blocks hold its rows peeled at the padding
    (`for b { for h in [0, 1) {..}; for h in [1, 13) {..}; for h in [13, 14) {..} }`,
    ShuffleNetV2's and the MobileNets' 3x3 depthwise layers of 4-15 channel blocks;
    with `serial`, also a serial loop, which `team_for_small_nests` may then share),
    so its threads split the blocks while the pointwise convolutions and layout
    transforms around it split the rows (`parallel_rows_first`): each thread then
    reads half of its input from the other core's cache, and the next kernel half of
    its output. Merged (`for h in [0, 14) { if h < 1 {..} else if h < 13 {..} else
    {..} }`) the rows are shared like theirs. The loops must be serial, without
    iter_args, of step 1 and constant bounds, each starting where the one before it
    ended, and at least `PEELED_ROWS_PER_CORE` rows per core: split by rows, each
    thread also reads the rows next to its own (a 3x3 convolution's halo), which the
    other thread wrote -- measured on ShuffleNetV2, the merged depthwise convolutions
    at 28x28 took 0.7x their time at two threads, those at 14x14 and 7x7 1.2-1.8x.
    Only with `parallel_rows_first` >= 2. The rows run the same code in the same
    order, so the merged loop is serial as the parts were, and `share_rows` shares it
    only if it is spatial (each row writes its own elements)."""
    try:
        if outer.iter_args or (outer.kind_name != LoopKind.PARALLEL and not serial):
            return False
        if not 2 <= prim.trip_count(outer) < knobs.parallel_collapse_below:
            return False
        parts = [o for o in prim.body_ops(outer) if isinstance(o, loop.ForOp)]
        others = [o for o in prim.body_ops(outer) if not isinstance(o, loop.ForOp)]
        if len(parts) < 2 or any(not o.name.startswith("arith.") for o in others):
            return False
        ranges = [prim.bounds(p) for p in parts]
    except ScheduleError:
        return False
    if ranges[-1][1] - ranges[0][0] < PEELED_ROWS_PER_CORE * cores:
        return False
    if any(p.kind_name != LoopKind.SERIAL or p.iter_args for p in parts):
        return False
    if any(step != 1 for _, _, step in ranges):
        return False
    if any(ranges[k][1] != ranges[k + 1][0] for k in range(len(ranges) - 1)):
        return False
    merged = loop.ForOp(
        prim.index_constant(outer, ranges[0][0]), prim.index_constant(outer, ranges[-1][1]),
        prim.index_constant(outer, 1),
    )  # fmt: skip
    merged.induction_var.name_hint = parts[0].induction_var.name_hint
    Rewriter.insert_op(merged, InsertPoint.before(outer.yield_op))
    row = merged.induction_var
    at = InsertPoint.before(merged.yield_op)
    for k, part in enumerate(parts):
        if k < len(parts) - 1:
            below = arith.CmpiOp(row, prim.index_constant(outer, ranges[k][1]), "ult")
            branch = loop.IfOp(below, else_region=Region(Block([loop.YieldOp()])))
            Rewriter.insert_op([below, branch], at)
            then_block = branch.then_region.block
            target = InsertPoint.before(then_block.last_op)  # its implicit yield
            at = InsertPoint.before(branch.else_region.block.last_op)
        else:
            target = at
        part.induction_var.replace_all_uses_with(row)
        for op in prim.body_ops(part):
            op.detach()
            Rewriter.insert_op(op, target)
        part.detach()
        part.erase()
    return True


PEELED_ROWS_PER_CORE = 8
"""Fewest rows per core for which `merge_peeled_rows` merges peeled row loops."""


def rows_first_crosses_less(outer: loop.ForOp, inner: loop.ForOp, cross: int) -> bool:
    """Rows first (`ROWS_FIRST_ATTR`, `parallel_rows_first` = `cross` >= 2) unless the
    buffers read at indices that depend on the block only (weights, read by both
    threads when they split the rows) hold more than `cross` times the bytes of those
    read at indices that depend on the row (the input: by the row only, or by the
    row and the block), which split by blocks each thread reads partly from the other
    core's cache when the kernel before split the rows.

    A cache line the other core wrote costs several times one streamed from memory or
    the shared cache (about 330 ns from one vCPU to the other on the 2-vCPU Xeon VM,
    docs/environment.md), while weights are written once and only read. So in a chain
    of kernels that all split rows each thread reads what it wrote itself: a layout
    transform, a slice or a depthwise convolution (input indexed by row and block, a
    few hundred bytes of weights per block) take rows first here, where
    `rows_first_reads_less` keeps their blocks; a pointwise convolution at 7x7 whose
    weights are ten times its input keeps its blocks. So does a nest that reads or
    writes rows of a buffer that are not whole cache lines (`_whole_lines`: a layout
    transform or channel shuffle from or into NCHW at 14x14, 56 bytes a row), where
    two threads splitting the rows would write the same line in every channel plane,
    or read lines the other thread wrote."""
    by_row: dict[SSAValue, int] = {}
    by_block: dict[SSAValue, int] = {}
    for op in inner.walk():
        if isinstance(op, loop.LoadOp | loop.StoreOp) and not _whole_lines(op, inner.induction_var):
            return False
        if not isinstance(op, loop.LoadOp) or prim.defined_inside(op.buffer, outer):
            continue
        row = any(depends_on(i, inner.induction_var) for i in op.indices)
        block = any(depends_on(i, outer.induction_var) for i in op.indices)
        if row:
            by_row[op.buffer] = _bytes(op.buffer.type)
        elif block:
            by_block[op.buffer] = _bytes(op.buffer.type)
    return sum(by_block.values()) <= cross * sum(by_row.values())


CACHE_LINE_BYTES = 64
"""What two cores exchange at a time: rows split between threads should be whole lines."""


def _whole_lines(access: loop.LoadOp | loop.StoreOp, row: SSAValue) -> bool:
    """Does each value of `row` select whole cache lines of what `access` reads or writes: the
    elements after the first index that depends on `row` span a multiple of 64 bytes
    (a static buffer; True when no index depends on `row`)?"""
    ty = access.buffer.type
    if not isinstance(ty, MemRefType) or any(d < 0 for d in ty.get_shape()):
        return False
    dims = [d for d, index in enumerate(access.indices) if depends_on(index, row)]
    if not dims:
        return True
    width = max(1, getattr(ty.element_type, "bitwidth", 32) // 8)
    span = math.prod(ty.get_shape()[dims[0] + 1 :]) * width
    return span % CACHE_LINE_BYTES == 0


def _bytes(ty) -> int:
    """Bytes of a static memref type (0 for anything else)."""
    if not isinstance(ty, MemRefType) or any(d < 0 for d in ty.get_shape()):
        return 0
    width = getattr(ty.element_type, "bitwidth", 32)
    return math.prod(ty.get_shape()) * max(1, width // 8)


def share_rows_before_folding(
    func: loop.FuncOp, cores: int, knobs: ScheduleKnobs, budget: int
) -> int:
    """`share_rows` on every top-level loop before storage folding (with two cores or
    more), where the local temporaries it keeps unfolded hold at most `budget` bytes
    (the L2 cache); returns how many loops it marked.

    After stage fusion, a Winograd convolution's stages run in one parallel loop over
    the 4 rows of tile positions, each holding a serial loop over the 4 columns in
    which the input transform V is written and the products read it. Storage folding
    drops V's column dimension (one slice reused by the 4 columns), which makes that
    loop not spatial, so `share_rows` (in `balance_parallel`, after folding) could not
    collapse it: two threads shared 4 iterations, and a worker slower by 20 % per
    iteration made every such region last 1.2x its half (72 % of ResNet-18 and 47 %
    of GoogLeNet in regions of fewer than 8 iterations, docs/performance.md "Where
    two threads lose"). Marked parallel first, the column loop keeps its slices
    (folding never drops a parallel loop's dimension) and `lower-to-llvm` collapses
    the 16 tile positions. A V larger than the L2 cache made one thread 3.6-10 %
    slower (DenseNet-121's 128 channels at 56x56: 6.4 MiB), so it stays folded; with
    one core nothing changes."""
    if cores < 2:
        return 0
    marked = 0
    for outer in [o for o in func.body.blocks[0].ops if isinstance(o, loop.ForOp)]:
        inner = _only_loop(outer)
        if inner is None or _unfolded_bytes(func, inner) > budget:
            continue
        marked += share_rows(outer, knobs)
    return marked


def _unfolded_bytes(func: loop.FuncOp, inner: loop.ForOp) -> int:
    """Bytes of the local temporaries accessed only inside `inner`, each access indexed
    by its variable: what storage folding would shrink by `inner`'s trip count, and
    keeps whole once `inner` is parallel."""
    iv = inner.induction_var
    total = 0
    for alloc in [o for o in func.walk() if isinstance(o, loop.AllocOp)]:
        mtype = alloc.results[0].type
        if alloc.scope.data != "local" or not isinstance(mtype, MemRefType):
            continue
        accesses = [
            u.operation
            for u in alloc.results[0].uses
            if isinstance(u.operation, loop.LoadOp | loop.StoreOp)
        ]
        if accesses and all(inner.is_ancestor(a) and iv in a.indices for a in accesses):
            width = getattr(mtype.element_type, "bitwidth", 32)  # floats and integers
            total += math.prod(mtype.get_shape()) * width // 8
    return total


def team_for_fused_stages(func: loop.FuncOp, cores: int, knobs: ScheduleKnobs) -> int:
    """Make parallel each top-level serial loop holding two or more loops (stages
    fused by `fuse_row_stages`) that together read `parallel_min_work` tensor
    elements (for the call team only: `parallel_team_min_work`), is spatial
    and has `parallel_min_iterations_per_core` iterations per core; returns
    how many. Run before storage folding, which would fold
    a temporary the stages share into one slice along the serial loop.

    `lower-te` offers a nest the team when its own work is worth a region;
    a squeeze-and-excitation block's excitation (a 1x1 convolution on a 1x1
    image, 240 -> 960 channels in MobileNetV3) and its gating multiply are
    each below that, but fused over their 60 channel blocks they are one
    loop of 0.6 M reads, 1-2 % of the network, that ran on one thread.
    Below `parallel_min_work` but at `parallel_team_min_work` (`_work`) the loop
    is shared with a call's thread team only (`TEAM_ONLY_ATTR`, as
    `team_for_small_nests`): MobileNetV3-Large's 1x1 excitations of 0.5 M reads.
    """
    if cores < 2:
        return 0
    made = 0
    for top in [o for o in func.body.blocks[0].ops if isinstance(o, loop.ForOp)]:
        stages = [o for o in prim.body_ops(top) if isinstance(o, loop.ForOp)]
        if top.kind_name != LoopKind.SERIAL or top.iter_args or len(stages) < 2:
            continue
        if any(isinstance(o, loop.ForOp) and o.kind_name == LoopKind.PARALLEL for o in top.walk()):
            continue
        try:
            if not enough_per_core(top, cores, knobs) or not spatial(top):
                continue
            small = _reads(top) < knobs.parallel_min_work
            if small and _work(top, knobs) < knobs.parallel_team_min_work:
                continue
        except ScheduleError:
            continue
        prim.parallelize(top)
        if small:
            top.attributes[TEAM_ONLY_ATTR] = UnitAttr()
        made += 1
    return made


def _reads(for_op: loop.ForOp) -> int:
    """Tensor reads of one execution of `for_op` (each load times its loops' trip counts)."""
    loads = sum(isinstance(o, loop.LoadOp) for o in prim.body_ops(for_op))
    inner = sum(_reads(o) for o in prim.body_ops(for_op) if isinstance(o, loop.ForOp))
    return prim.trip_count(for_op) * (loads + inner)


def vector_column_panel(columns: int, depth: int, cores: int, knobs: ScheduleKnobs) -> int | None:
    """Columns per block when a matrix-vector product of `depth` rows and
    `columns` columns shares its columns among `cores` threads; None when it
    does not (one core, too little work for a team, or no divisor).

    The blocks divide the columns evenly into a multiple of `cores`, at least
    `parallel_column_blocks_per_core` per core (1000 classifier outputs on two
    cores: 4 blocks of 250). The matmul builder stores a constant matrix of
    such a product in panels of this width (`kernels/linalg.py`), so that each
    block streams one contiguous panel: blocks of a row-major matrix read
    1 KiB of every 4 KiB row and took 1.25-1.5x the time of whole rows on one
    thread (hardware prefetch follows long runs), where panels take none more.
    """
    per_core = knobs.parallel_column_blocks_per_core
    if cores < 2 or per_core < 1 or not worth_a_team(depth * columns, 3, 0, knobs):
        return None
    first = per_core * cores
    for blocks in range(first, 4 * first + 1, cores):
        if columns % blocks == 0 and columns // blocks >= MIN_PANEL_COLUMNS:
            return columns // blocks
    return None


MIN_PANEL_COLUMNS = 16
"""`vector_column_panel` makes no block narrower than this many columns (a cache line of f32)."""


def share_vector_columns(func: loop.FuncOp, cores: int) -> int:
    """Give the thread team to each top-level serial reduction nest whose only
    spatial loop is its innermost, vectorized one and that streams a matrix
    stored in panels (`vector_column_panel`); returns how many.

    A batch-1 classifier is a matrix-vector product, `for k { for j
    vectorized { y[j] += x[k] * P[j / W, k, j % W] } }`, its constant weights
    pre-packed in panels of W columns (`kernels/linalg.py`, which decides
    with `vector_column_panel` whether the product is worth sharing).
    `lower-te` offers the team to a nest's outermost spatial loop, and here
    that is the vectorized one, so the product (3-5 % of MobileNetV2/V3 and
    ShuffleNetV2 at one thread, docs/performance.md "Threads") ran on the
    calling thread alone. Its columns are independent (every buffer written
    is indexed by `j` at one fixed position): `j` is split by the panels'
    width and the blocks move around the nest, each reducing over `k` in the
    original order and streaming one panel:

        loop.for %jo = 0 to N step W kind(parallel) {
          loop.for %k ... { loop.for %ji = 0 to W kind(vectorized) { %j = %jo + %ji ... } }
        }

    The split follows the layout whatever the cores (it also turns `j / W`
    into a loop variable); the block loop is parallel with two cores or more.
    """
    shared = 0
    for top in [o for o in func.body.blocks[0].ops if isinstance(o, loop.ForOp)]:
        chain = _reduction_chain(top)
        width = _panel_width(chain[-1]) if chain is not None else None
        if chain is None or width is None:
            continue
        _hoist_column_blocks(chain, width, parallel=cores >= 2)
        shared += 1
    return shared


def _reduction_chain(top: loop.ForOp) -> list[loop.ForOp] | None:
    """`top` and the loops nested in it, one per level (beside index arithmetic),
    down to an innermost vectorized loop from 0 with step 1 that is spatial,
    when `top` is serial, not spatial and has no iter_args (None otherwise)."""
    chain = [top]
    while chain[-1].kind_name == LoopKind.SERIAL and not chain[-1].iter_args:
        inner = _only_loop(chain[-1])
        if inner is None:
            return None
        chain.append(inner)
    vec = chain[-1]
    if len(chain) < 2 or vec.kind_name != LoopKind.VECTORIZED or vec.iter_args:
        return None
    if any(isinstance(o, loop.ForOp) for o in prim.body_ops(vec)):
        return None
    try:
        if prim.bounds(vec)[::2] != (0, 1) or any(prim.trip_count(lp) < 1 for lp in chain):
            return None
        return chain if spatial(vec) and not spatial(top) else None
    except ScheduleError:
        return None


def _panel_width(vec: loop.ForOp) -> int | None:
    """The width W of the panels `vec` reads a buffer it does not write in (its last
    index `vec`'s variable mod W, its last dimension W), when W divides the
    loop's columns into two blocks or more; else None."""
    columns = prim.trip_count(vec)
    written = {o.buffer for o in prim.body_ops(vec) if isinstance(o, loop.StoreOp)}
    for load in [o for o in prim.body_ops(vec) if isinstance(o, loop.LoadOp)]:
        shape = load.buffer.type.get_shape() if isinstance(load.buffer.type, MemRefType) else ()
        if load.buffer in written or not load.indices or not shape:
            continue
        last = load.indices[-1].owner
        if not isinstance(last, arith.RemUIOp) or last.lhs is not vec.induction_var:
            continue
        width = int_constant(last.rhs)
        if width == shape[-1] and width is not None and columns % width == 0 and columns > width:
            return width
    return None


def _hoist_column_blocks(chain: list[loop.ForOp], width: int, parallel: bool) -> None:
    """Split the innermost loop of `chain` by `width` and move its blocks
    outermost (each loop of `chain` holds only the next), parallel or not."""
    outer, _, tail = prim.split(chain[-1], width)
    assert tail is None, "_panel_width divides the columns"
    outer.induction_var.name_hint = "cols"
    for holder in reversed(chain[:-1]):
        outer = prim.interchange(holder)
    if parallel:
        prim.parallelize(outer)


def _only_loop(outer: loop.ForOp) -> loop.ForOp | None:
    """The loop `outer`'s body holds beside index arithmetic only (the jammed
    copies' channel indices `jam_channel_blocks` defines there), or None."""
    loops = [o for o in prim.body_ops(outer) if isinstance(o, loop.ForOp)]
    others = [o for o in prim.body_ops(outer) if not isinstance(o, loop.ForOp)]
    if len(loops) != 1 or any(not o.name.startswith("arith.") for o in others):
        return None
    return loops[0]


__all__ = [
    "TEAM_ONLY_ATTR",
    "balance_parallel",
    "distribute_columns",
    "kinds_fusable",
    "share_rows",
    "share_rows_before_folding",
    "share_vector_columns",
    "team_for_fused_stages",
    "team_for_small_nests",
    "vector_column_panel",
    "worth_a_team",
]
