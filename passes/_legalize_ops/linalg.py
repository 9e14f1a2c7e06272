"""Legalization of `graph.matmul` (`dialects/graph/linalg.py`): one
`te.compute` reducing over the contraction dimension, with NumPy's 1-D
promotion and broadcast batch dimensions.
"""

from __future__ import annotations

from xdsl.ir import Operation, SSAValue

from lamina.passes._legalize_ops.kernel import (
    Indices,
    KernelBuilder,
    TeEmitter,
    broadcast_indices,
    elt,
    shape_of,
)


def build_matmul(op: Operation, kb: KernelBuilder, inputs: Indices) -> list[SSAValue]:
    """`out[b.., m, n] = sum_k a[bcast(b..), m, k] * b[bcast(b..), k, n]` (NumPy matmul:
    a 1-D lhs drops `m`, a 1-D rhs drops `n`, batch dims broadcast)."""
    a, b = inputs
    sa, sb = shape_of(a), shape_of(b)
    out = shape_of(op.results[0])
    a_vec, b_vec = len(sa) == 1, len(sb) == 1
    n_batch = len(out) - (0 if a_vec else 1) - (0 if b_vec else 1)

    def body(em: TeEmitter, sp: Indices, red: Indices) -> SSAValue:
        (k,) = red
        batch = sp[:n_batch]
        if a_vec:
            a_idx = [k]
        else:
            a_idx = [*broadcast_indices(em, batch, sa[:-2]), sp[n_batch], k]
        if b_vec:
            b_idx = [k]
        else:
            b_idx = [*broadcast_indices(em, batch, sb[:-2]), k, sp[-1]]
        return em.mul(em.read(a, a_idx), em.read(b, b_idx))

    return [kb.compute(out, elt(a), body, reduce_extents=[sa[-1]], combiner="sum")]
