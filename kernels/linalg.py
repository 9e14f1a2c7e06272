"""Legalization of `graph.matmul` (`dialects/graph/linalg.py`): one
`te.compute` reducing over the contraction dimension, with NumPy's 1-D
promotion and broadcast batch dimensions.

A constant 2-D right-hand side is stored pre-packed for the micro-kernel:
`P[jb, k, r] = B[k, jb*NR + r]` (panels of NR columns, the register block's
width that `schedule` will choose for this product), computed at compile
time (`KernelBuilder.derived_input`). The kernel reads `B[k, j]` as
`P[j / NR, k, j % NR]`; once `schedule` splits `j` into column blocks the
read is contiguous within the panel, and the copy of each panel that
`schedule` otherwise makes on every call (`pack`) has nothing left to do.
The parameter records the layout as its `lamina.constraint`.

A product of one row (a batch-1 classifier) has no register block; its
constant matrix is stored in the panels whose columns the threads share
(`vector_column_panel`, schedule/parallel.py), each one contiguous.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import AffineMapAttr, AnyFloat, FloatAttr, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from lamina.dialects.lamina import ConstraintAttr
from lamina.kernels.kernel import (
    Indices,
    KernelBuilder,
    TeEmitter,
    broadcast_indices,
    elt,
    shape_of,
)
from lamina.kernels.strategy import packed_rhs_columns
from lamina.schedule.parallel import vector_column_panel
from lamina.target.registry import op_facts, op_knobs


def build_matmul(op: Operation, kb: KernelBuilder, inputs: Indices) -> list[SSAValue]:
    """`out[b.., m, n] = sum_k a[bcast(b..), m, k] * b[bcast(b..), k, n]` (NumPy matmul:
    a 1-D lhs drops `m`, a 1-D rhs drops `n`, batch dims broadcast)."""
    a, b = inputs
    sa, sb = shape_of(a), shape_of(b)
    out = shape_of(op.results[0])
    a_vec, b_vec = len(sa) == 1, len(sb) == 1
    n_batch = len(out) - (0 if a_vec else 1) - (0 if b_vec else 1)

    panel = _packed_rhs(op, kb, b, out) if len(sb) == 2 and not a_vec else None

    def body(em: TeEmitter, sp: Indices, red: Indices) -> SSAValue:
        (k,) = red
        batch = sp[:n_batch]
        if a_vec:
            a_idx = [k]
        else:
            a_idx = [*broadcast_indices(em, batch, sa[:-2]), sp[n_batch], k]
        if panel is not None:
            packed, nr = panel
            j = sp[-1]
            return em.mul(em.read(a, a_idx), em.read(packed, [em.idiv(j, nr), k, em.irem(j, nr)]))
        if b_vec:
            b_idx = [k]
        else:
            b_idx = [*broadcast_indices(em, batch, sb[:-2]), k, sp[-1]]
        return em.mul(em.read(a, a_idx), em.read(b, b_idx))

    return [kb.compute(out, elt(a), body, reduce_extents=[sa[-1]], combiner="sum")]


def _packed_rhs(
    op: Operation, kb: KernelBuilder, b: SSAValue, out: tuple[int, ...]
) -> tuple[SSAValue, int] | None:
    """The pre-packed constant rhs and its panel width NR, when the micro-kernel
    splits the columns into blocks (module docstring); None otherwise."""
    k, n = shape_of(b)
    elem = elt(b)
    if not isinstance(elem, AnyFloat):
        return None
    nr = packed_rhs_columns(op, out[-2], n, elem.bitwidth)
    if nr is None and out == (1, n):  # a matrix-vector product whose columns the threads share
        nr = vector_column_panel(n, k, op_facts(op).cores, op_knobs(op))
    if nr is None:
        return None
    packed_type = TensorType(elem, [n // nr, k, nr])
    layout = AffineMap(
        2, 0, (AffineExpr.dimension(1) // nr, AffineExpr.dimension(0), AffineExpr.dimension(1) % nr)
    )
    constraint = ConstraintAttr(AffineMapAttr(layout), FloatAttr(0.0, elem), (k, n))
    packed = kb.derived_input(b, lambda w: pack_panels(w, nr), packed_type, constraint)
    return None if packed is None else (packed, nr)


def pack_panels(b: np.ndarray, nr: int) -> np.ndarray:
    """`P[jb, k, r] = b[k, jb*nr + r]` for a `K x N` matrix (N a multiple of nr)."""
    k, n = b.shape
    return np.ascontiguousarray(b.reshape(k, n // nr, nr).transpose(1, 0, 2))
