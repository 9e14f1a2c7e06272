"""`graph.layout_transform` → `te.compute` (used by `legalize`).

The transform is written in gather form: each slot `p` of the result asks
which operand element lands on it. `layout_maps.invert_map` says how: every
group of map results yields the value of one inner sum `e` (`p[j]`, or
`p[outer] * m + p[inner]` for a `floordiv`/`mod` tile), and `e` decomposes
back into operand dims by floordiv/mod in mixed radix. A slot is the image of
an element when each recovered index lies inside the operand (and divides
exactly); other slots are padding and hold PAD, or `te.undef` for
`#lamina.undef` (which `simplify` turns into "not written at all"). Only the
conditions that can fail on the result's box are emitted, so a blocked
layout of a channel count divisible by the block has none.

The same code runs the other way round: the inverse of a blocked layout is
the map `(.., c, .., ci) -> (.., c * 8 + ci, ..)` on the physical tensor,
whose declared (`crop`) result is the smaller logical tensor. The inverse of
a layout padded at the start has a negative offset (`(d0, d1) -> (d0 * 4 +
d1 - 1)`): result slot `q` reads the physical slot whose sum is `q + 1`, so
the leading padding is never read.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr, IntegerAttr
from xdsl.ir import Operation, SSAValue

from lamina.core.diagnostics import op_error
from lamina.dialects import graph
from lamina.dialects.lamina import UndefAttr
from lamina.dialects.layout_maps import Group, LayoutMapError, invert_map
from lamina.kernels.te_emit import ScalarEmitter


def build_layout_transform(op: Operation, kb, inputs: list[SSAValue]) -> list[SSAValue]:
    """Physical tensor of a `#lamina.constraint`: `out[p] = x[MAP⁻¹(p)]` where `p`
    is the image of an operand element, PAD elsewhere. The te.compute carries
    the constraint (with the operand's shape as its logical shape) unless the
    op crops, whose result is a logical tensor again."""
    assert isinstance(op, graph.LayoutTransformOp)
    (x,) = inputs
    constraint = op.constraint
    logical, physical = graph.tensor_shape(x), graph.tensor_shape(op.results[0])
    try:
        groups = invert_map(constraint.index_map.data, logical)
    except LayoutMapError as err:
        raise op_error(op, f"cannot legalize layout map {constraint.index_map}: {err}") from None
    t = graph.element_type(x)

    def body(em, sp: list[SSAValue], _: list[SSAValue]) -> SSAValue:
        index, conds = logical_indices(em, groups, sp, physical, logical)
        ok = em.and_(conds)
        if ok is None:
            return em.read(x, index)
        zero = em.index(0)
        value = em.read(x, [em.select(ok, i, zero) for i in index])
        if isinstance(constraint.pad, UndefAttr):
            pad = em.undef(t)
        else:
            assert isinstance(constraint.pad, FloatAttr | IntegerAttr)
            pad = em.emit(arith.ConstantOp(constraint.pad))
        return em.select(ok, value, pad)

    recorded = None if op.crop is not None else constraint.with_logical(logical)
    return [kb.compute(physical, t, body, constraint=recorded)]


def logical_indices(
    em: ScalarEmitter,
    groups: Sequence[Group],
    physical_index: Sequence[SSAValue],
    physical: Sequence[int],
    logical: Sequence[int],
) -> tuple[list[SSAValue], list[SSAValue]]:
    """The logical index whose image is `physical_index`, and the conditions
    (i1) under which it exists. Indices are only meaningful where every
    condition holds (callers select a safe index otherwise)."""
    index: list[SSAValue | None] = [None] * len(logical)
    conds: list[SSAValue] = []
    for g in groups:
        value, vmax = _group_value(em, g, physical_index, physical)
        if g.inner.const > 0:  # padding before the data: slots below the offset
            conds.append(em.cmpi("sge", value, g.inner.const))
            value = em.select(conds[-1], em.iadd(value, -g.inner.const), em.index(0))
        elif g.inner.const < 0:  # an inverse that crops leading padding: skip it
            value = em.iadd(value, -g.inner.const)
        vmax -= g.inner.const
        for n, (d, coef) in enumerate(g.inner.terms):
            last = n == len(g.inner.terms) - 1
            if last and coef > 1:
                conds.append(em.cmpi("eq", em.irem(value, coef), 0))
            dim = em.idiv(value, coef)
            if vmax // coef >= logical[d]:
                conds.append(em.cmpi("slt", dim, logical[d]))
            index[d] = dim
            if not last:
                vmax = min(vmax, coef - 1)
                value = em.irem(value, coef)
    return [i if i is not None else em.index(0) for i in index], conds


def _group_value(
    em: ScalarEmitter, g: Group, sp: Sequence[SSAValue], physical: Sequence[int]
) -> tuple[SSAValue, int]:
    """The value of a group's inner sum at the physical index, and its maximum."""
    if g.plain is not None:
        return sp[g.plain], physical[g.plain] - 1
    assert g.inner_pos is not None
    inner_max = min(physical[g.inner_pos], g.tile) - 1
    if g.outer is None:
        return sp[g.inner_pos], inner_max
    value = em.affine([(sp[g.outer], g.tile), (sp[g.inner_pos], 1)])
    return value, (physical[g.outer] - 1) * g.tile + inner_max
