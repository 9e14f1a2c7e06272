"""Legalization of the reductions (`dialects/graph/reduce.py`):
reduce_sum, reduce_mean (the sum divided by the count), reduce_max and reduce_min.
"""

from __future__ import annotations

from math import prod

from xdsl.ir import Operation, SSAValue

from lamina.dialects import graph
from lamina.kernels.kernel import Indices, KernelBuilder, TeEmitter, elt, shape_of


def build_reduce(op: Operation, kb: KernelBuilder, inputs: Indices) -> list[SSAValue]:
    """`out[kept] = combine_{reduced} x[...]`; reduce_mean divides the sum by the count.

    Input dim d reads the next reduction index if d is reduced, else the next
    spatial index (with keepdims the reduced output dims are 1 and skipped).
    """
    assert isinstance(
        op, graph.ReduceSumOp | graph.ReduceMeanOp | graph.ReduceMaxOp | graph.ReduceMinOp
    )
    (x,) = inputs
    shape, t = shape_of(x), elt(x)
    axes = sorted(op.axes_value)
    keepdims = op.keepdims is not None
    out = shape_of(op.results[0])
    extents = [shape[a] for a in axes]

    def body(em: TeEmitter, sp: Indices, red: Indices) -> SSAValue:
        idx: Indices = []
        spatial, reduction = iter(sp), iter(red)
        for d in range(len(shape)):
            if d in axes:
                idx.append(next(reduction))
                if keepdims:
                    next(spatial)
            else:
                idx.append(next(spatial))
        return em.read(x, idx)

    if op.name in ("graph.reduce_max", "graph.reduce_min"):
        return [kb.compute(out, t, body, extents, combiner=op.name.removeprefix("graph.reduce_"))]
    total = kb.compute(out, t, body, extents, combiner="sum")
    if op.name == "graph.reduce_sum":
        return [total]
    count = prod(extents)
    return [kb.compute(out, t, lambda em, sp, _: em.div(em.read(total, sp), em.const(count, t)))]
