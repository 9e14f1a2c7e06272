"""`graph.layout_transform`: moving a tensor into the physical layout of a
`#lamina.constraint`, and `layout_transform_shape`, the padding rule that
gives the physical shape of an affine layout map (exact bounds by interval
arithmetic, refined by evaluating the map where the domain is small).

Its legalization is `kernels/layout.py`; see docs/layouts.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from math import prod
from typing import TypeGuard

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
    the bounds exact (e.g. `(d0 + 2 * d1) mod 2` never reaches 1 when d0 < 1).
    Memoized: `plan-layouts` asks for the same few maps on the same shapes
    thousands of times (DenseNet-121: 12,000 calls, a NumPy grid each)."""
    return _exact_bounds_of(expr, tuple(dims))


@lru_cache(maxsize=4096)
def _exact_bounds_of(expr: AffineExpr, dims: tuple[int, ...]) -> tuple[int, int]:
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


def layout_transform_shape(
    shape: Sequence[int], index_map: AffineMap, crop: bool = False
) -> tuple[int, ...]:
    """The physical shape of a layout constraint (the padding rule of docs/layouts.md): a
    result `e mod m` has extent `m`, `e floordiv m` has ⌈extent(e)/m⌉, any other
    result its maximum over the logical domain + 1. So
    `(d0) -> (d0 floordiv 8, d0 mod 8)` on 20 gives 3x8, and on 3 gives 1x8:
    the 5 slots no element reaches are padding; `((d0 + 1) floordiv 4, (d0 +
    1) mod 4)` on 14 gives 4x4 with one slot of padding before the data.

    A result that can be negative would put an element before slot 0: an
    error, unless the transform crops (`crop`: the inverse of a left-padded
    layout, `(d0, d1) -> (d0 * 4 + d1 - 1)`, whose negative positions are the
    dropped padding); then only the non-negative part of the image counts."""
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
        if lo < 0 and not crop:
            raise ShapeError(
                f"constraint map result #{i} ({expr}) can be negative (minimum {lo}) on the "
                f"operand shape {list(shape)}: an element would land before slot 0 (padding "
                "at the start is a positive offset, e.g. `d0 + 1`; only a transform marked "
                "`crop` may drop what falls outside)"
            )
        if not crop and _is_mod(expr) and _exact_bounds(expr.lhs, shape)[0] < 0:
            raise ShapeError(
                f"constraint map result #{i} ({expr}) wraps negative positions around to the "
                "end of the axis: an element before slot 0 would land in the last slots (padding "
                "at the start is a positive offset, e.g. `(d0 + 1) floordiv 4, (d0 + 1) mod 4`)"
            )
        result.append(max(_padded_extent(expr, shape, hi + 1), 0))
    return tuple(result)


def _is_mod(expr: AffineExpr) -> TypeGuard[AffineBinaryOpExpr]:
    return isinstance(expr, AffineBinaryOpExpr) and expr.kind == AffineBinaryOpKind.Mod


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
    slots no element reaches hold PAD (or are unspecified for `#lamina.undef`):
    before the data when the map adds an offset (`d0 + 1`), after it where a
    tile is not full. A result that is not a `mod` may be declared longer than
    the image, which pads after the data too (`(d0 + 1)` on 4 elements into 6
    slots: a halo of one on each side). The map must be injective on the
    operand. With `crop` (the inverse of a padded layout) the declared result
    may be smaller than the map's image, and the map may reach negative
    positions: elements whose image falls outside the result (the padding)
    are dropped.
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
        shape, index_map = tensor_shape(value), constraint.index_map.data
        if result_type is None:
            result_type = _tensor(element_type(value), layout_transform_shape(shape, index_map))
        assert isinstance(result_type, TensorType)
        image = layout_transform_shape(shape, index_map, crop=True)
        got = tuple(result_type.get_shape())
        crop = _reaches_negative(shape, index_map) or any(
            g < s for g, s in zip(got, image, strict=False)
        )
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
        shape = layout_transform_shape(operand, index_map, crop=self.crop is not None)
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
            if all(g >= s for g, s in zip(got, shape, strict=True)):
                _check_trailing_padding(index_map, got, shape)
                shape = tuple(got)
        logical = self.constraint.logical_shape
        if logical is not None and logical != tuple(operand):
            raise ShapeError(
                f"constraint logical shape {list(logical)} does not match the operand shape "
                f"{list(operand)}"
            )
        return _tensor(elem, shape)


def _reaches_negative(shape: Sequence[int], index_map: AffineMap) -> bool:
    """Whether some result of `index_map` is negative on the box `shape`."""
    if any(d == 0 for d in shape) or index_map.num_dims != len(shape):
        return False
    return any(_exact_bounds(e, shape)[0] < 0 for e in index_map.results)


def _check_trailing_padding(index_map: AffineMap, got: Sequence[int], image: Sequence[int]):
    """A result declared longer than its image pads after the data, which only
    makes sense where the slot number grows with the data: a `mod` result
    wraps around, so its extent is exactly its modulus."""
    for i, (expr, g, s) in enumerate(zip(index_map.results, got, image, strict=True)):
        if g > s and _is_mod(expr):
            raise ShapeError(
                f"result dimension #{i} is `{expr}`: its extent is {s}, got {g} (only a result "
                "that is not a `mod` may be declared longer than the image to pad after the data)"
            )
