"""`graph.layout_transform`: moving a tensor into the physical layout of a
`#lamina.constraint`, and `layout_transform_shape`, the padding rule that
gives the physical shape of an affine layout map (exact bounds by interval
arithmetic, refined by evaluating the map where the domain is small).

Its legalization is `kernels/layout.py`; see docs/layouts.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod

from xdsl.dialects.builtin import FloatAttr, IntegerAttr, TensorType, UnitAttr
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.ir.affine import AffineBinaryOpExpr, AffineBinaryOpKind, AffineExpr, AffineMap
from xdsl.ir.affine.affine_expr import AffineConstantExpr, AffineDimExpr
from xdsl.irdl import irdl_op_definition, opt_prop_def, prop_def

from lamina.dialects.graph.base import _OneInputOp
from lamina.dialects.graph.common import ShapeError, _tensor, _unit, element_type, tensor_shape
from lamina.dialects.lamina import ConstraintAttr, DeviceAttr
from lamina.dialects.layout_maps import eval_grid, is_injective


def _expr_bounds(expr: AffineExpr, dims: Sequence[int]) -> tuple[int, int]:
    """Exact [min, max] of an affine expression over the box `0 <= d_i < dims[i]`.

    Interval arithmetic, exact for the semi-affine maps layout constraints use
    (sums of scaled dims, floordiv/ceildiv/mod by positive constants).
    """
    if isinstance(expr, AffineDimExpr):
        return 0, dims[expr.position] - 1
    if isinstance(expr, AffineConstantExpr):
        return expr.value, expr.value
    if not isinstance(expr, AffineBinaryOpExpr):
        raise ShapeError(f"unsupported expression {expr} in a layout map (symbols are not allowed)")
    lo1, hi1 = _expr_bounds(expr.lhs, dims)
    if expr.kind == AffineBinaryOpKind.Add:
        lo2, hi2 = _expr_bounds(expr.rhs, dims)
        return lo1 + lo2, hi1 + hi2
    if not isinstance(expr.rhs, AffineConstantExpr):
        raise ShapeError(f"layout map expression {expr} must have a constant right-hand side")
    c = expr.rhs.value
    if expr.kind == AffineBinaryOpKind.Mul:
        return min(lo1 * c, hi1 * c), max(lo1 * c, hi1 * c)
    if c <= 0:
        raise ShapeError(f"layout map expression {expr} must divide by a positive constant")
    if expr.kind == AffineBinaryOpKind.FloorDiv:
        return lo1 // c, hi1 // c
    if expr.kind == AffineBinaryOpKind.CeilDiv:
        return -(-lo1 // c), -(-hi1 // c)
    # Mod: exact when the range stays inside one period, else the full period.
    if hi1 - lo1 < c and lo1 % c <= hi1 % c:
        return lo1 % c, hi1 % c
    return 0, c - 1


EXACT_BOUNDS_LIMIT = 1 << 22
"""Largest sub-domain (product of the extents of the dims an expression uses)
that `layout_transform_shape` evaluates exhaustively."""


def _exact_bounds(expr: AffineExpr, dims: Sequence[int]) -> tuple[int, int]:
    """[min, max] of `expr` over the box: interval arithmetic validates the
    expression and bounds it; exhaustive evaluation over the dims it uses makes
    the bounds exact (e.g. `(d0 + 2 * d1) mod 2` never reaches 1 when d0 < 1)."""
    lo, hi = _expr_bounds(expr, dims)
    used = sorted(expr.used_dims())
    if prod(dims[d] for d in used) > EXACT_BOUNDS_LIMIT:
        return lo, hi
    import numpy as np  # only layout maps need it; keeps tool start-up light

    axes = np.meshgrid(
        *(np.arange(dims[d], dtype=np.int64) for d in used), indexing="ij", sparse=True
    )
    values = np.asarray(eval_grid(expr, dict(zip(used, axes, strict=True))))
    return int(values.min()), int(values.max())


def layout_transform_shape(shape: Sequence[int], index_map: AffineMap) -> tuple[int, ...]:
    """The physical shape of a layout constraint (seed 002's padding rule): a
    result `e mod m` has extent `m`, `e floordiv m` has ⌈extent(e)/m⌉, any other
    result its maximum over the logical domain + 1. So
    `(d0) -> (d0 floordiv 8, d0 mod 8)` on 20 gives 3x8, and on 3 gives 1x8:
    the 5 slots no element reaches are padding."""
    if index_map.num_dims != len(shape):
        raise ShapeError(
            f"constraint map has {index_map.num_dims} dimensions but the operand has rank "
            f"{len(shape)}"
        )
    if index_map.num_symbols:
        raise ShapeError("constraint map must not have symbols")
    if any(d == 0 for d in shape):
        return tuple(0 for _ in index_map.results)
    result: list[int] = []
    for i, expr in enumerate(index_map.results):
        lo, hi = _exact_bounds(expr, shape)
        if lo < 0:
            raise ShapeError(f"constraint map result #{i} ({expr}) can be negative (minimum {lo})")
        result.append(_padded_extent(expr, shape, hi + 1))
    return tuple(result)


def _padded_extent(expr: AffineExpr, shape: Sequence[int], tight: int) -> int:
    """`m` for `e mod m`, ⌈extent(e)/m⌉ for `e floordiv m`, else `tight`."""
    if not (isinstance(expr, AffineBinaryOpExpr) and isinstance(expr.rhs, AffineConstantExpr)):
        return tight
    m = expr.rhs.value
    if expr.kind == AffineBinaryOpKind.Mod:
        return m
    if expr.kind == AffineBinaryOpKind.FloorDiv:
        inner = _exact_bounds(expr.lhs, shape)[1] + 1
        return -(-inner // m)
    return tight


@irdl_op_definition
class LayoutTransformOp(_OneInputOp):
    """Move a tensor into the physical layout of `constraint` (`#lamina.constraint`).

    Element `x[i]` goes to `result[MAP(i)]`. The result shape follows the map
    (`layout_transform_shape`: `e mod m` → m, `e floordiv m` → ⌈extent(e)/m⌉);
    slots no element reaches hold PAD (or are unspecified for `#lamina.undef`).
    The map must be injective on the operand. With `crop` (the inverse of a
    padded layout) the declared result may be smaller than the map's image:
    elements whose image falls outside it (the padding) are dropped.
    """

    name = "graph.layout_transform"

    constraint = prop_def(ConstraintAttr)
    crop = opt_prop_def(UnitAttr)

    def __init__(
        self,
        input: SSAValue | Operation,
        constraint: ConstraintAttr,
        device: DeviceAttr | None = None,
        result_type: Attribute | None = None,
    ):
        value = SSAValue.get(input)
        if result_type is None:
            shape = layout_transform_shape(tensor_shape(value), constraint.index_map.data)
            result_type = _tensor(element_type(value), shape)
        image = layout_transform_shape(tensor_shape(value), constraint.index_map.data)
        assert isinstance(result_type, TensorType)
        crop = tuple(result_type.get_shape()) != image
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={"constraint": constraint, "device": device, "crop": _unit(crop)},
        )

    def infer_result_type(self) -> Attribute:
        elem = element_type(self.input)
        pad = self.constraint.pad
        if isinstance(pad, FloatAttr | IntegerAttr) and pad.type != elem:
            raise ShapeError(f"pad value type {pad.type} does not match the element type {elem}")
        operand = tensor_shape(self.input)
        index_map = self.constraint.index_map.data
        shape = layout_transform_shape(operand, index_map)
        if not is_injective(index_map, operand):
            raise ShapeError(
                f"constraint map {index_map} is not injective on the operand shape "
                f"{list(operand)} (two elements would share a slot)"
            )
        got = tensor_shape(self.result)
        if self.crop is not None and len(got) == len(shape):
            if any(g > s for g, s in zip(got, shape, strict=True)):
                raise ShapeError(
                    f"cropped result shape {list(got)} exceeds the image {list(shape)} of the map"
                )
            return self.result.type
        if self.crop is None and len(got) == len(shape) and tuple(got) != shape:
            if all(g <= s for g, s in zip(got, shape, strict=True)):
                raise ShapeError(
                    f"result shape {list(got)} is smaller than the map's image {list(shape)}: "
                    "it would lose elements (mark the op `crop` to drop the padding)"
                )
        logical = self.constraint.logical_shape
        if logical is not None and logical != tuple(operand):
            raise ShapeError(
                f"constraint logical shape {list(logical)} does not match the operand shape "
                f"{list(operand)}"
            )
        return _tensor(elem, shape)
