"""`schedule`'s loop order for copies that gather: reuse each gathered cache line.

A layout transform back from a channel-blocked layout,

    for c in [0, 64) { for h { for w kind(vectorized) {
      out[c, h, w] = in[c / 16, h, w, c % 16] } } }

writes along `w` but reads with a stride of 16 elements: every vector is
a gather touching 16 cache lines, of which it uses one element each. The
other 15 elements of those lines are read by the iterations `c+1 … c+15`,
which come a whole `h × w` plane later, after the lines have left L1 (the
plane is 800 KiB for 64×56×56 f32). Splitting `c` by the period 16 and
moving its inner part just outside the vectorized loop,

    for co step 16 { for h { for ci in [0, 16) { for w kind(vectorized) {
      out[co + ci, h, w] = in[co / 16, h, w, ci] } } } }

makes the 16 gathers that share those lines consecutive: a conv2d's
output transform (1×64×56×56 f32) goes from 150 to 90 µs (`simplify`
then turns `(co + ci) % 16` into `ci`, knowing `co` steps by 16).

Legal because the nest only permutes independent iterations: every loop's
iterations write disjoint elements (each written buffer is indexed by the
loop's own variable at one fixed position) and no written buffer is read.
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import MemRefType
from xdsl.traits import is_side_effect_free

from lamina.dialects import loop
from lamina.dialects.loop import LoopKind
from lamina.schedule import primitives as prim
from lamina.schedule.dependence import disjoint_by_iv
from lamina.schedule.int_analysis import int_constant
from lamina.schedule.primitives import ScheduleError
from lamina.target.schedule_knobs import ScheduleKnobs


def reuse_gathered_lines(func: loop.FuncOp, knobs: ScheduleKnobs) -> int:
    """Reorder every top-level copy nest of `func` whose vectorized loop gathers
    (see the module docstring; lines of `gather_line_bytes`); returns how many
    nests changed."""
    changed = 0
    for top in [op for op in func.body.blocks[0].ops if isinstance(op, loop.ForOp)]:
        nest = _perfect_nest(top)
        if nest is None or not _permutable(nest):
            continue
        try:
            changed += _sink_gather_period(nest, knobs.gather_line_bytes)
        except ScheduleError:
            continue  # a shape the primitives refuse: the nest stays as it was
    return changed


def _perfect_nest(top: loop.ForOp) -> list[loop.ForOp] | None:
    """`top` and the loops it holds, each the only loop of its parent's body (beside
    pure index computations), ending in a vectorized loop without inner loops."""
    nest = [top]
    while True:
        ops = prim.body_ops(nest[-1])
        loops = [op for op in ops if isinstance(op, loop.ForOp)]
        if not loops:
            break
        if len(loops) != 1 or any(
            op.regions or not is_side_effect_free(op) for op in ops if op is not loops[0]
        ):
            return None
        nest.append(loops[0])
    if len(nest) < 3 or nest[-1].kind_name != LoopKind.VECTORIZED:
        return None
    return nest  # iter_args and calls are refused by `_permutable`


def _permutable(nest: list[loop.ForOp]) -> bool:
    """May the nest's iterations run in any order? Each loop writes disjoint
    elements and nothing written is read."""
    accesses = [o for o in nest[0].walk() if isinstance(o, loop.LoadOp | loop.StoreOp)]
    written = {o.buffer for o in accesses if isinstance(o, loop.StoreOp)}
    if any(isinstance(o, loop.LoadOp) and o.buffer in written for o in accesses):
        return False
    return all(disjoint_by_iv([lp]) for lp in nest)


def _sink_gather_period(nest: list[loop.ForOp], line_bytes: int) -> int:
    """Split and sink the loop that walks the gathered lines of the first load whose
    contiguous index varies only with a loop two or more levels out."""
    inner = nest[-1]
    for load in [o for o in inner.walk() if isinstance(o, loop.LoadOp)]:
        found = _period_loop(load, nest, line_bytes)
        if found is None:
            continue
        k, period = found
        target = nest[k]
        if prim.trip_count(target) > period:
            if prim.bounds(target)[0] != 0 or prim.trip_count(target) % period:
                continue
            _outer, target, _tail = prim.split(target, period)
        while (held := _held_loop(target)) is not None and held is not inner:
            prim.interchange(target)  # `target` moves one level in
        return 1
    return 0


def _period_loop(
    load: loop.LoadOp, nest: list[loop.ForOp], line_bytes: int
) -> tuple[int, int] | None:
    """(k, period) when `load`'s last index is `iv_k` or `iv_k % period` of loop k,
    at least two levels outside the vectorized loop, and `period` elements fit a
    cache line."""
    if not load.indices:
        return None
    last = load.indices[-1]
    period = None
    if isinstance(last.owner, arith.RemUIOp | arith.RemSIOp):
        period = int_constant(last.owner.rhs)
        last = last.owner.lhs
    ivs = [lp.induction_var for lp in nest]
    if last not in ivs:
        return None
    k = ivs.index(last)
    if k > len(nest) - 3:
        return None  # already just outside the vectorized loop (or it is the vectorized loop)
    memref = load.buffer.type
    assert isinstance(memref, MemRefType)
    line = line_bytes // max(1, memref.element_type.bitwidth // 8)
    period = period or line
    if period < 2 or period > line:
        return None
    return k, period


def _held_loop(for_op: loop.ForOp) -> loop.ForOp | None:
    return next((op for op in prim.body_ops(for_op) if isinstance(op, loop.ForOp)), None)


__all__ = ["reuse_gathered_lines"]
