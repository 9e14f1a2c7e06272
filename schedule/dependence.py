"""Dependence and disjointness tests the scheduling rules share.

A rule may reorder, fuse or parallelise loops only when their iterations are
independent. The test used throughout is the simplest that covers what
`lower-te` emits: every buffer written in a loop is accessed, in that loop,
at one fixed index position holding exactly the loop's induction variable
(`disjoint_by_iv`) -- then iteration i touches only slice i of it. Stage
fusion, parallel balancing and gather reuse all ask this question.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import Operation, SSAValue
from xdsl.traits import is_side_effect_free

from lamina.dialects import loop
from lamina.schedule.int_analysis import int_constant


def depends_on(value: SSAValue, iv: SSAValue) -> bool:
    """Is `value` computed from `iv` (through any chain of operations)?"""
    if value is iv:
        return True
    owner = value.owner
    return isinstance(owner, Operation) and any(depends_on(v, iv) for v in owner.operands)


def iv_position(indices: Sequence[SSAValue], iv: SSAValue) -> int | None:
    """The index position holding exactly `iv` (None: none, or `iv` used elsewhere too)."""
    at = [d for d, index in enumerate(indices) if index is iv]
    if len(at) != 1 or any(depends_on(i, iv) for d, i in enumerate(indices) if d != at[0]):
        return None
    return at[0]


def disjoint_by_iv(loops: list[loop.ForOp]) -> bool:
    """Is every buffer written in `loops` accessed, in each loop, only at one
    fixed index position holding exactly that loop's induction variable?
    Then iteration i of any of them touches only slice i (no calls, no
    loop-carried values)."""
    if any(lp.iter_args or any(isinstance(o, loop.CallOp) for o in lp.walk()) for lp in loops):
        return False
    accesses = {
        lp: [o for o in lp.walk() if isinstance(o, loop.LoadOp | loop.StoreOp)] for lp in loops
    }
    written = {o.buffer for ops in accesses.values() for o in ops if isinstance(o, loop.StoreOp)}
    position: dict[SSAValue, int] = {}
    for lp, ops in accesses.items():
        for o in ops:
            if o.buffer not in written:
                continue
            at = iv_position(o.indices, lp.induction_var)
            if at is None or position.setdefault(o.buffer, at) != at:
                return False
    return True


def spatial(for_op: loop.ForOp) -> bool:
    """Do the iterations of `for_op` touch disjoint elements of every buffer written in it?"""
    return disjoint_by_iv([for_op])


def varies_in(value: SSAValue, for_op: loop.ForOp) -> bool:
    """Can `value` differ between iterations of `for_op` (its iv, or a load
    from a buffer the loop stores to, at any index)?"""
    owner = value.owner
    if not isinstance(owner, Operation) or not for_op.is_ancestor(owner):
        return value is for_op.induction_var
    if isinstance(owner, loop.LoadOp):
        if any(isinstance(o, loop.StoreOp) and o.buffer is owner.buffer for o in for_op.walk()):
            return True
    elif owner.regions or not is_side_effect_free(owner):
        return True
    return any(varies_in(v, for_op) for v in owner.operands)


def same_indices(first: Sequence[SSAValue], second: Sequence[SSAValue]) -> bool:
    """Equal index lists (the same values, or constants of the same value)."""
    return len(first) == len(second) and all(
        a is b or (int_constant(a) is not None and int_constant(a) == int_constant(b))
        for a, b in zip(first, second, strict=True)
    )


__all__ = [
    "depends_on",
    "disjoint_by_iv",
    "iv_position",
    "same_indices",
    "spatial",
    "varies_in",
]
