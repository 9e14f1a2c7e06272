"""Legalization of the data-movement ops (`dialects/graph/shape.py`):
reshape (row-major re-indexing), transpose, concat (a select chain over the
inputs), broadcast_to, gather (wrapped and clamped indices) and slice.
"""

from __future__ import annotations

from bisect import bisect_left
from itertools import accumulate
from operator import mul

from xdsl.dialects import arith
from xdsl.ir import Operation, SSAValue

from lamina.dialects import graph
from lamina.kernels.kernel import (
    Indices,
    KernelBuilder,
    TeEmitter,
    broadcast_indices,
    elt,
    shape_of,
)
from lamina.kernels.te_emit import INDEX
from lamina.schedule.loop_order import row_major_strides


def build_reshape(op: Operation, kb: KernelBuilder, inputs: Indices) -> list[SSAValue]:
    """Row-major re-indexing, one group of dimensions at a time.

    The shapes are cut where both have a dimension boundary at the same
    element count (`1x128x256 -> 1x128x8x32`: {1}, {128}, {256 | 8x32}); in a
    group, `lin = sum out[i]*stride_out[i]` and `in[j] = (lin / stride_in[j]) % S[j]`
    over the group's dimensions only. A split dimension is then read at an
    affine index (`in[2] = 32*i2 + i3`) and a kept one at its own index, with
    no division or remainder for `schedule` to see through (attention's head
    split would otherwise hide a transposed read from packing)."""
    (x,) = inputs
    src, dst = shape_of(x), shape_of(op.results[0])
    groups = _reshape_groups(src, dst)

    def body(em: TeEmitter, sp: Indices, _: Indices) -> SSAValue:
        idx: Indices = []
        for src_dims, dst_dims in groups:
            sizes_out = [dst[d] for d in dst_dims]
            sizes_in = [src[d] for d in src_dims]
            lin = em.affine(
                [
                    (sp[d], stride)
                    for d, stride in zip(dst_dims, row_major_strides(sizes_out), strict=True)
                    if dst[d] != 1
                ]
            )
            first = True
            for size, stride in zip(sizes_in, row_major_strides(sizes_in), strict=True):
                if size == 1:
                    idx.append(em.index(0))
                    continue
                v = em.idiv(lin, stride)
                idx.append(v if first else em.irem(v, size))
                first = False
        return em.read(x, idx)

    return [kb.compute(dst, elt(x), body)]


def _reshape_groups(
    src: tuple[int, ...], dst: tuple[int, ...]
) -> list[tuple[list[int], list[int]]]:
    """The (source dims, result dims) groups of a reshape: cut wherever both
    shapes' running element counts meet (one group of everything for a
    scalar or an empty tensor)."""
    if 0 in src or 0 in dst or not src or not dst:
        return [(list(range(len(src))), list(range(len(dst))))]
    cuts = sorted(set(accumulate(src, mul)) & set(accumulate(dst, mul)))

    def group_of(sizes: tuple[int, ...]) -> list[int]:
        return [bisect_left(cuts, count) for count in accumulate(sizes, mul)]

    src_group, dst_group = group_of(src), group_of(dst)
    return [
        (
            [d for d, g in enumerate(src_group) if g == k],
            [d for d, g in enumerate(dst_group) if g == k],
        )
        for k in range(len(cuts))
    ]


def build_transpose(op: Operation, kb: KernelBuilder, inputs: Indices) -> list[SSAValue]:
    """`out[i0..] = x[j..]` with `j[perm[k]] = i[k]`."""
    assert isinstance(op, graph.TransposeOp)
    (x,) = inputs
    perm = op.perm_value

    def body(em: TeEmitter, sp: Indices, _: Indices) -> SSAValue:
        idx = list(sp)
        for k, p in enumerate(perm):
            idx[p] = sp[k]
        return em.read(x, idx)

    return [kb.compute(shape_of(op.results[0]), elt(x), body)]


def build_concat(op: Operation, kb: KernelBuilder, inputs: Indices) -> list[SSAValue]:
    """`out[.., i, ..]` reads input k where `off_k <= i < off_k + n_k`: a select chain
    from the last input back to the first, each read at a clamped axis index.

    Every read stays in bounds (clamped), so `lower-to-llvm` lowers the chain
    as a select of the inputs' addresses and one load (`SelectChainLowering`):
    the inner loops read one input per element without LLVM unswitching the
    chain per input (docs/compile-speed.md)."""
    assert isinstance(op, graph.ConcatOp)
    axis = op.axis_value
    sizes = [shape_of(a)[axis] for a in inputs]
    offsets = [sum(sizes[:k]) for k in range(len(sizes))]

    def body(em: TeEmitter, sp: Indices, _: Indices) -> SSAValue:
        i = sp[axis]
        value: SSAValue | None = None
        for k in reversed(range(len(inputs))):
            if sizes[k] == 0:
                continue
            local = em.iadd(i, -offsets[k])
            local = em.clamp(local, sizes[k] - 1, lower=k > 0, upper=value is not None)
            read = em.read(inputs[k], [*sp[:axis], local, *sp[axis + 1 :]])
            if value is None:
                value = read
            else:
                value = em.select(em.cmpi("slt", i, offsets[k] + sizes[k]), read, value)
        # Every input is empty along the axis: so is the result, the body never runs.
        return value if value is not None else em.const(0, elt(op.results[0]))

    return [kb.compute(shape_of(op.results[0]), elt(op.results[0]), body)]


def build_broadcast_to(op: Operation, kb: KernelBuilder, inputs: Indices) -> list[SSAValue]:
    """`out[i] = x[bcast(i)]`."""
    (x,) = inputs

    def body(em: TeEmitter, sp: Indices, _: Indices) -> SSAValue:
        return em.read(x, broadcast_indices(em, sp, shape_of(x)))

    return [kb.compute(shape_of(op.results[0]), elt(x), body)]


def build_gather(op: Operation, kb: KernelBuilder, inputs: Indices) -> list[SSAValue]:
    """`out[a.., j.., b..] = data[a.., wrap(indices[j..]), b..]`: a negative index
    counts from the end, and the index is clamped into range so the read
    never leaves the buffer."""
    assert isinstance(op, graph.GatherOp)
    data, indices = inputs
    axis = op.axis_value
    extent = shape_of(data)[axis]
    rank_i = len(shape_of(indices))

    def body(em: TeEmitter, sp: Indices, _: Indices) -> SSAValue:
        raw = em.read(indices, sp[axis : axis + rank_i])
        i = em.emit(arith.IndexCastOp(raw, INDEX))
        i = em.select(em.cmpi("slt", i, 0), em.iadd(i, extent), i)
        i = em.clamp(i, max(extent - 1, 0))
        return em.read(data, [*sp[:axis], i, *sp[axis + rank_i :]])

    return [kb.compute(shape_of(op.results[0]), elt(data), body)]


def build_slice(op: Operation, kb: KernelBuilder, inputs: Indices) -> list[SSAValue]:
    """`out[i] = x[starts + i * steps]` (the verifier keeps every read in bounds)."""
    assert isinstance(op, graph.SliceOp)
    (x,) = inputs
    starts, steps = op.starts_value, op.steps_value

    def body(em: TeEmitter, sp: Indices, _: Indices) -> SSAValue:
        idx = [
            em.affine([(i, step)], start) for i, start, step in zip(sp, starts, steps, strict=True)
        ]
        return em.read(x, idx)

    return [kb.compute(shape_of(op.results[0]), elt(x), body)]
