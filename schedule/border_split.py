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
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from lamina.dialects import loop
from lamina.dialects.loop import LoopKind
from lamina.schedule import primitives as prim
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
    return sum(_split(op, analyzer) for op in candidates if op.parent is not None)


def interior(for_op: loop.ForOp, analyzer: Analyzer) -> tuple[int, int] | None:
    """The range `[lo, hi)` of `for_op`'s variable on which every window guard
    in its body holds for every value of the loops inside it; None when the
    loop has no such guard (or cannot be split: bounds not constant, a step
    other than 1, loop-carried values, not serial)."""
    if for_op.iter_args or for_op.kind_name != LoopKind.SERIAL:
        return None
    try:
        lb, ub, step = prim.bounds(for_op)
    except ScheduleError:
        return None
    if step != 1:
        return None
    lo, hi, found = lb, ub, False
    for cmp in _window_guards(for_op):
        bound = _guard_bound(cmp, for_op, analyzer)
        if bound is None:
            continue
        found = True
        lo, hi = max(lo, bound[0]), min(hi, bound[1])
    return (lo, hi) if found else None


def _split(for_op: loop.ForOp, analyzer: Analyzer) -> bool:
    """Split `for_op` into border strips and its interior; True if it did."""
    found = interior(for_op, analyzer)
    if found is None:
        return False
    lb, ub, _ = prim.bounds(for_op)
    lo, hi = found
    if lo >= hi or (lo <= lb and hi >= ub):
        return False  # no interior, or no border
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
    cmp: arith.CmpiOp, for_op: loop.ForOp, analyzer: Analyzer
) -> tuple[int, int] | None:
    """The range `[lo, hi)` of the loop variable on which `cmp` holds for every
    value of the loops inside `for_op`; None when `cmp` is not a window guard
    of this loop."""
    pred = PREDICATES[cmp.predicate.value.data]
    if pred not in _LOWER and pred not in _UPPER:
        return None
    terms, const = _difference(cmp.lhs, cmp.rhs, analyzer)
    iv = for_op.induction_var
    coef = terms.pop(iv, 0)
    if not coef or not terms:
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


__all__ = ["interior", "split_borders"]
