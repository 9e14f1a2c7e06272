"""Border splitting: a window reduction's loops split into border strips and a guard-free interior.

A depthwise convolution reads its input in place (`kernels/conv_blocked.py`):
a tap outside the image is a guarded read, `select(o*s + k*d - lo >= 0 and
... < size, x[clamped], 0)`. Evaluated everywhere, the guards cost more
than the zero-padded copy they replace. But each guard is decided for every
tap once the output index `o` is far enough from the image's edge: a loop

    for o in [0, N) { ... guards on o*s + k*d - lo, k in [0, K) ... }

becomes (index-set splitting)

    for o in [0, lo)  { ... }       // border: guards kept
    for o in [lo, hi) { ... }       // interior: every guard holds
    for o in [hi, N)  { ... }       // border

where `[lo, hi)` is the largest range of `o` on which every guard holds for
every value of the loops inside `o`. `simplify` (after `schedule`) then
decides the interior's guards from the loop bounds and drops them with
their clamps: the interior reads `x[o*s + k*d - lo]` with no select.

Which guards: comparisons of a linear form with a constant, under a
`select` or an `andi`, that depend on the split loop's variable and on a
loop inside it (the window's tap) -- the pattern of a window read. A copy's
padding guard (`select(h - 1 >= 0, x[h - 1], 0)` in a loop over `h` alone)
is not one, and stays as it was.

Two moments of `schedule` (passes/schedule.py): the output columns of a
reduction nest (its rows, in `schedule/register_block.py`'s words) are split
before register blocking, so that the interior is blocked with no guard and
a border column keeps the unblocked nest; every other loop -- the output
rows -- after stage fusion, so that a row's epilogue (bias, activation)
stays fused with its convolution and is split with it.

Then (`lanes_outside_taps`), in every window reduction read in place, the
vectorized loop over the lanes moves outside the taps it sat in, which
become `unrolled`, and takes in the vectorized loop before it that zeroes
the same accumulators:

    for lane in [0, 16) kind(vectorized) { C[.., lane] = 0 }
    for kh { for kw { for lane kind(vectorized) { C[.., lane] += guarded x * w } } }

becomes

    for lane in [0, 16) kind(vectorized) {
      C[.., lane] = 0
      for kh kind(unrolled) { for kw kind(unrolled) { C[.., lane] += guarded x * w } }
    }

Each lane is its own output element, so every element still sees the same
operations in the same order. The code LLVM makes is the same kind of
straight-line block (it unrolls the taps either way), but its loop vectorizer
and loop passes meet one loop per piece instead of one per tap: the nine
pieces of a 3x3 window had 70-100 lane loops after LLVM's full unroll, each
planned and costed on its own, and O3 took 0.4-0.5 s per kernel
(docs/compile-speed.md). A window of more than `LANE_TAPS` taps (5x5) keeps
its outer tap loop outside the lane loop: unrolled inside it whole, its
straight-line block was 2.7 times as large for no less O3.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import is_side_effect_free

from lamina.dialects import loop
from lamina.dialects.loop import LoopKind
from lamina.schedule import primitives as prim
from lamina.schedule.dependence import depends_on, disjoint_by_iv
from lamina.schedule.int_analysis import PREDICATES, Analyzer
from lamina.schedule.primitives import ScheduleError
from lamina.schedule.register_block import ReductionNest

_LOWER = {"sge": 0, "sgt": 1}
"""`a pred b` as `a - b >= m`: the predicates that bound the difference below."""
_UPPER = {"slt": -1, "sle": 0}
"""`a pred b` as `a - b <= m`: the predicates that bound the difference above."""


def split_borders(func: loop.FuncOp, *, columns_only: bool = False) -> int:
    """Split the loops of `func` whose window guards an interior range decides
    (see the module docstring); with `columns_only`, only the row loops of
    reduction nests (the output columns). Returns how many loops were split."""
    if columns_only:
        candidates = [
            op
            for op in func.walk()
            if isinstance(op, loop.ForOp) and ReductionNest.match(op) is not None
        ]
    else:
        candidates = [op for op in func.walk() if isinstance(op, loop.ForOp)]
    analyzer = Analyzer()
    count = sum(_split(op, analyzer) for op in candidates if op.parent is not None)
    if not columns_only:
        lanes_outside_taps(func)
    return count


LANE_TAPS = 9
"""The most window taps unrolled inside one lane loop (`lanes_outside_taps`): a
3x3 window whole; of a 5x5 one, a row of taps."""


def lanes_outside_taps(func: loop.FuncOp) -> int:
    """Move the lane loops of `func`'s window reductions read in place outside
    their taps (see the module docstring); returns how many nests changed."""
    nests = [_tap_nest(op) for op in func.walk() if isinstance(op, loop.ForOp)]
    for taps, lanes in filter(None, nests):
        _sink_lanes(_inner_taps(taps), lanes)
    return sum(nest is not None for nest in nests)


def _tap_nest(outer: loop.ForOp) -> tuple[list[loop.ForOp], list[loop.ForOp]] | None:
    """`(taps, lanes)` when `outer` is the outermost loop of a window reduction
    read in place: serial loops of constant bounds, each holding the next (and
    pure index computations), the last holding only vectorized loops of equal
    bounds that each touch their own lane of every buffer they write
    (`disjoint_by_iv`), store sums at indices free of the taps (a
    convolution's reduction over them, not a padded copy's rows, not a max
    pool) and select on a guard of a tap."""
    if not _is_tap_loop(outer):
        return None
    parent = outer.parent_op()
    if _is_tap_loop(parent) and _loops_in(parent) == [outer]:
        return None  # not the outermost loop of its nest
    taps = [outer]
    while len(inner := _loops_in(taps[-1])) == 1 and _is_tap_loop(inner[0]):
        taps.append(inner[0])
    lanes = _loops_in(taps[-1])
    body = [op for t in taps for op in prim.body_ops(t) if not isinstance(op, loop.ForOp)]
    if not lanes or any(op.regions or not is_side_effect_free(op) for op in body):
        return None
    if not all(_is_lane_loop(f, lanes[0]) for f in lanes) or not disjoint_by_iv(lanes):
        return None
    ivs = [t.induction_var for t in taps]
    stores = [op for f in lanes for op in f.walk() if isinstance(op, loop.StoreOp)]
    if any(depends_on(i, iv) for op in stores for i in op.indices for iv in ivs):
        return None
    if not all(isinstance(op.value.owner, arith.AddfOp) for op in stores):
        return None  # a sum (a convolution), not a max pool: its code stays as it was
    selects = [op for f in lanes for op in f.walk() if isinstance(op, arith.SelectOp)]
    if not any(_guards_with(op, ivs) for op in selects):
        return None
    return taps, lanes


def _loops_in(for_op: Operation | None) -> list[loop.ForOp]:
    if not isinstance(for_op, loop.ForOp):
        return []
    return [op for op in prim.body_ops(for_op) if isinstance(op, loop.ForOp)]


def _is_tap_loop(op: Operation | None) -> bool:
    """A serial loop of constant bounds without loop-carried values."""
    if not isinstance(op, loop.ForOp) or op.iter_args or op.kind_name != LoopKind.SERIAL:
        return False
    try:
        prim.bounds(op)
    except ScheduleError:
        return False
    return True


def _is_lane_loop(op: loop.ForOp, first: loop.ForOp) -> bool:
    """A vectorized loop with `first`'s constant bounds and no loop inside."""
    if op.kind_name != LoopKind.VECTORIZED or op.iter_args:
        return False
    try:
        if prim.bounds(op) != prim.bounds(first):
            return False
    except ScheduleError:
        return False
    return not any(isinstance(inner, loop.ForOp) for inner in op.body.walk())


def _guards_with(select: arith.SelectOp, ivs: Sequence[SSAValue]) -> bool:
    """Is `select`'s condition (through `andi`) a comparison that depends on one of `ivs`?"""
    stack = [select.cond]
    while stack:
        owner = stack.pop().owner
        if isinstance(owner, arith.AndIOp):
            stack += [owner.lhs, owner.rhs]
        elif isinstance(owner, arith.CmpiOp):
            if any(depends_on(v, iv) for v in (owner.lhs, owner.rhs) for iv in ivs):
                return True
    return False


def _inner_taps(taps: list[loop.ForOp]) -> list[loop.ForOp]:
    """The innermost taps that go inside the lane loop: at most `LANE_TAPS`
    iterations together, at least the innermost loop."""
    cut, product = len(taps) - 1, prim.trip_count(taps[-1])
    while cut > 0 and product * prim.trip_count(taps[cut - 1]) <= LANE_TAPS:
        cut -= 1
        product *= prim.trip_count(taps[cut])
    return taps[cut:]


def _sink_lanes(taps: list[loop.ForOp], lanes: list[loop.ForOp]) -> None:
    """One vectorized loop (`lanes`' bounds) around `taps`, which become
    `unrolled`, holding the bodies of `lanes` where they were; the vectorized
    loop right before it (the accumulators' zeroing) is fused into it."""
    outer = taps[0]
    lb, ub, step = prim.bounds(lanes[0])
    first, last, stride = (prim.index_constant(outer, v) for v in (lb, ub, step))
    lane = loop.ForOp(first, last, stride, kind=LoopKind.VECTORIZED)
    lane.induction_var.name_hint = lanes[0].induction_var.name_hint
    Rewriter.insert_op(lane, InsertPoint.before(outer))
    for old in lanes:
        old.induction_var.replace_all_uses_with(lane.induction_var)
        at = InsertPoint.before(old)
        for op in prim.body_ops(old):
            op.detach()
            Rewriter.insert_op(op, at)
        Rewriter.erase_op(old)
    outer.detach()
    Rewriter.insert_op(outer, InsertPoint.before(lane.yield_op))
    for tap in taps:
        tap.set_kind(LoopKind.UNROLLED)
    fill = lane.prev_op
    if isinstance(fill, loop.ForOp) and _is_lane_loop(fill, lane) and disjoint_by_iv([fill, lane]):
        prim.fuse(fill, lane)


def interior(for_op: loop.ForOp, analyzer: Analyzer) -> tuple[int, int] | None:
    """The range `[lo, hi)` of `for_op`'s variable on which every window guard
    in its body holds for every value of the loops inside it; None when the
    loop has no such guard (or cannot be split: bounds not constant, a step
    other than 1, loop-carried values, not serial)."""
    lanes = _unrolled_window_lanes(for_op)
    if for_op.iter_args or (for_op.kind_name != LoopKind.SERIAL and not lanes):
        return None
    try:
        lb, ub, step = prim.bounds(for_op)
    except ScheduleError:
        return None
    if step != 1:
        return None
    lo, hi, found = lb, ub, False
    for cmp in _window_guards(for_op):
        bound = _guard_bound(cmp, for_op, analyzer, alone=lanes)
        if bound is None:
            continue
        found = True
        lo, hi = max(lo, bound[0]), min(hi, bound[1])
    return (lo, hi) if found else None


def _unrolled_window_lanes(for_op: loop.ForOp) -> bool:
    """Is `for_op` a vectorized loop over output columns whose body is one
    unrolled window (no loop inside, a `maximumf` over taps read in place: a max
    pool on a plain `NCHW` input, `kernels/nn.py`)? Its guards depend on its
    own variable alone (`select(2*ow - 1 >= 0, x[clamped], -inf)`); evaluated
    in every lane they make each tap a gather. Split, the interior's taps are
    strided loads and only `LANE_PEEL` columns per side keep the guards."""
    if for_op.kind_name != LoopKind.VECTORIZED:
        return False
    body = list(for_op.walk())[1:]
    return not any(isinstance(op, loop.ForOp) for op in body) and any(
        isinstance(op, arith.MaximumfOp) for op in body
    )


LANE_PEEL = 2
"""Most border columns per side peeled off an unrolled window's vectorized loop
(`_unrolled_window_lanes`): a pool's padding is one column or two."""


def _split(for_op: loop.ForOp, analyzer: Analyzer) -> bool:
    """Split `for_op` into border strips and its interior; True if it did."""
    found = interior(for_op, analyzer)
    if found is None:
        return False
    lb, ub, _ = prim.bounds(for_op)
    lo, hi = found
    if lo >= hi or (lo <= lb and hi >= ub):
        return False  # no interior, or no border
    if _unrolled_window_lanes(for_op) and (lo - lb > LANE_PEEL or ub - hi > LANE_PEEL):
        return False
    if lo > lb:
        before = for_op.clone()
        before.operands[1] = prim.index_constant(for_op, lo)
        Rewriter.insert_op(before, InsertPoint.before(for_op))
    if hi < ub:
        after = for_op.clone()
        after.operands[0] = prim.index_constant(for_op, hi)
        Rewriter.insert_op(after, InsertPoint.after(for_op))
    for_op.operands[0] = prim.index_constant(for_op, max(lo, lb))
    for_op.operands[1] = prim.index_constant(for_op, min(hi, ub))
    return True


def _window_guards(for_op: loop.ForOp):
    """The comparisons in `for_op`'s body that guard a value (operands of a
    `select`'s condition, directly or through `andi`)."""
    seen: set[Operation] = set()
    for op in for_op.walk():
        if not isinstance(op, arith.SelectOp):
            continue
        stack = [op.cond]
        while stack:
            owner = stack.pop().owner
            if isinstance(owner, arith.AndIOp):
                stack += [owner.lhs, owner.rhs]
            elif isinstance(owner, arith.CmpiOp) and owner not in seen:
                seen.add(owner)
                yield owner


def _guard_bound(
    cmp: arith.CmpiOp, for_op: loop.ForOp, analyzer: Analyzer, *, alone: bool = False
) -> tuple[int, int] | None:
    """The range `[lo, hi)` of the loop variable on which `cmp` holds for every
    value of the loops inside `for_op`; None when `cmp` is not a window guard
    of this loop (with `alone`, a guard on the loop variable alone is one)."""
    pred = PREDICATES[cmp.predicate.value.data]
    if pred not in _LOWER and pred not in _UPPER:
        return None
    terms, const = _difference(cmp.lhs, cmp.rhs, analyzer)
    iv = for_op.induction_var
    coef = terms.pop(iv, 0)
    if not coef or not (terms or alone):
        return None
    rest_lo = rest_hi = const
    for atom, c in terms.items():
        if not _inner_variable(atom, for_op):
            return None
        r = analyzer.range(atom)
        rest_lo += min(c * r.lo, c * r.hi)
        rest_hi += max(c * r.lo, c * r.hi)
    lb, ub, _ = prim.bounds(for_op)
    if pred in _LOWER:  # coef*i + rest >= m for every rest: coef*i >= m - rest_lo
        t = _LOWER[pred] - rest_lo
        return (-(-t // coef), ub) if coef > 0 else (lb, t // coef + 1)
    t = _UPPER[pred] - rest_hi  # coef*i + rest <= m for every rest: coef*i <= m - rest_hi
    return (lb, t // coef + 1) if coef > 0 else (-(-t // coef), ub)


def _difference(a: SSAValue, b: SSAValue, analyzer: Analyzer) -> tuple[dict[SSAValue, int], int]:
    """`a - b` as a linear form: (atom -> coefficient, constant)."""
    a_terms, a_const = analyzer.linear(a)
    b_terms, b_const = analyzer.linear(b)
    terms: dict[SSAValue, int] = dict(a_terms)
    for atom, c in b_terms:
        terms[atom] = terms.get(atom, 0) - c
    return {k: v for k, v in terms.items() if v}, a_const - b_const


def _inner_variable(value: SSAValue, for_op: loop.ForOp) -> bool:
    """Is `value` the induction variable of a loop with constant bounds inside `for_op`?"""
    if not isinstance(value, BlockArgument) or value.index != 0:
        return False
    owner = value.block.parent_op()
    if not isinstance(owner, loop.ForOp) or owner is for_op or not for_op.is_ancestor(owner):
        return False
    try:
        prim.bounds(owner)
    except ScheduleError:
        return False
    return True


__all__ = ["LANE_TAPS", "interior", "lanes_outside_taps", "split_borders"]
