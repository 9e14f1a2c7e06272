"""Contractions: `graph.matmul` with `numpy.matmul` semantics (batched,
1-D promotion, broadcast batch dimensions) and its shape rule.

Its legalization is `kernels/linalg.py`.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.irdl import irdl_op_definition

from lamina.dialects.graph.base import _LhsRhsOp
from lamina.dialects.graph.common import ShapeError, broadcast_shapes, shape_str


def matmul_result_shape(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...]:
    """`numpy.matmul` result shape: 1-D operands are promoted then squeezed,
    leading (batch) dimensions broadcast."""
    if not a or not b:
        raise ShapeError(
            f"matmul operands must have rank >= 1, got lhs {shape_str(a)} and rhs {shape_str(b)}"
        )
    lhs = (1, *a) if len(a) == 1 else tuple(a)
    rhs = (*b, 1) if len(b) == 1 else tuple(b)
    if lhs[-1] != rhs[-2]:
        raise ShapeError(
            f"contraction dimension mismatch: lhs has K = {lhs[-1]}, rhs has K = {rhs[-2]} "
            f"(lhs {shape_str(a)}, rhs {shape_str(b)})"
        )
    try:
        batch = broadcast_shapes(lhs[:-2], rhs[:-2])
    except ShapeError as err:
        raise ShapeError(f"batch dimensions: {err}") from None
    result = (*batch, lhs[-2], rhs[-1])
    if len(a) == 1:
        result = result[:-2] + result[-1:]
    if len(b) == 1:
        result = result[:-1]
    return result


@irdl_op_definition
class MatmulOp(_LhsRhsOp):
    """Matrix product with `numpy.matmul` semantics (batched, 1-D promotion,
    broadcast batch dimensions)."""

    name = "graph.matmul"

    result_shape = staticmethod(matmul_result_shape)
