"""Helpers every op family of the graph dialect shares: how messages name
shapes and attributes, the shape rules used by more than one family
(axis normalization, NumPy broadcasting, list-length checks), the encoders
of op properties (`array<i64: ...>`, `i64`, unit flags) and the
expected-vs-got checks of result and element types.

Kept apart from the op definitions so that a family module (`elementwise`,
`nn`, ...) imports what it needs without importing the other families.
Names with a leading underscore are internal to the `graph` package (shared
by its modules, not part of the dialect's Python API); `lamina.dialects.common`
is the cross-dialect counterpart.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

from xdsl.dialects.builtin import AnyFloat, DenseArrayBase, IntegerAttr, TensorType, UnitAttr, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException


class ShapeError(VerifyException):
    """A shape rule was broken; the message compares expected and got."""


def shape_str(shape: Sequence[int]) -> str:
    """`2x3` for (2, 3), `scalar` for () — the short form used in messages."""
    return "x".join(str(d) for d in shape) if shape else "scalar"


def attr_syntax(attr: Attribute) -> str:
    """An attribute as written in the IR (`#lamina.device<"cpu", 0>`), for messages."""
    stream = io.StringIO()
    Printer(stream=stream).print_attribute(attr)
    return stream.getvalue()


def tensor_shape(value: SSAValue | Attribute) -> tuple[int, ...]:
    """The static shape of a tensor value or type."""
    typ = value.type if isinstance(value, SSAValue) else value
    assert isinstance(typ, TensorType)
    return tuple(typ.get_shape())


def element_type(value: SSAValue | Attribute) -> Attribute:
    """The element type of a tensor value or type."""
    typ = value.type if isinstance(value, SSAValue) else value
    assert isinstance(typ, TensorType)
    return typ.get_element_type()


def normalize_axis(axis: int, rank: int) -> int:
    """Map a possibly negative `axis` into `[0, rank)`, as NumPy does."""
    if not -rank <= axis < rank:
        raise ShapeError(
            f"axis {axis} is out of range for rank {rank} (expected {-rank} <= axis < {rank})"
        )
    return axis + rank if axis < 0 else axis


def normalize_axes(axes: Sequence[int], rank: int) -> tuple[int, ...]:
    """Normalize every axis of `axes`; a repeated axis is an error."""
    normalized: list[int] = []
    for axis in axes:
        n = normalize_axis(axis, rank)
        if n in normalized:
            raise ShapeError(f"axis {axis} appears more than once in axes {list(axes)}")
        normalized.append(n)
    return tuple(normalized)


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    """NumPy broadcasting of `shapes` (right-aligned; a 1 stretches)."""
    rank = max((len(s) for s in shapes), default=0)
    result = [1] * rank
    owner: list[tuple[int, ...] | None] = [None] * rank
    for shape in shapes:
        padded = (1,) * (rank - len(shape)) + tuple(shape)
        for dim, size in enumerate(padded):
            if size == result[dim] or size == 1:
                continue
            if result[dim] == 1:
                result[dim], owner[dim] = size, tuple(shape)
                continue
            other = owner[dim] or ()
            raise ShapeError(
                f"operands are not broadcast-compatible: {shape_str(other)} vs "
                f"{shape_str(shape)} (dim {dim}: {result[dim]} vs {size})"
            )
    return tuple(result)


def _check_positive(name: str, values: Sequence[int]) -> None:
    if any(v <= 0 for v in values):
        raise ShapeError(f"{name} must be positive, got {list(values)}")


def _check_length(name: str, values: Sequence[int], lengths: Sequence[int]) -> None:
    if len(values) not in lengths:
        expected = " or ".join(str(n) for n in lengths)
        raise ShapeError(f"{name} must have {expected} entries, got {len(values)}")


def _int_values(attr: DenseArrayBase) -> tuple[int, ...]:
    """The values of an `array<i64: ...>` property."""
    return tuple(int(v) for v in attr.get_values())


def _ints(attr: DenseArrayBase | None, default: Sequence[int]) -> tuple[int, ...]:
    """The values of an optional `array<i64: ...>` property, or `default`."""
    return _int_values(attr) if attr is not None else tuple(default)


def _i64_array(values: Sequence[int] | None) -> DenseArrayBase | None:
    return None if values is None else DenseArrayBase.from_list(i64, list(values))


def _i64(value: int | None) -> IntegerAttr | None:
    return None if value is None else IntegerAttr(value, i64)


def _unit(flag: bool) -> UnitAttr | None:
    return UnitAttr() if flag else None


def _tensor(element: Attribute, shape: Sequence[int]) -> TensorType:
    return TensorType(element, list(shape))


def _check_result_type(got: Attribute, inferred: Attribute) -> None:
    if got != inferred:
        raise VerifyException(f"result type {got} does not match inferred {inferred}")


def _check_same_element_type(values: Sequence[SSAValue], names: Sequence[str]) -> Attribute:
    """All `values` share one element type; returns it."""
    first = element_type(values[0])
    for value, name in zip(values[1:], names[1:], strict=True):
        if element_type(value) != first:
            raise VerifyException(
                f"element type mismatch: {names[0]} has {first}, {name} has {element_type(value)}"
            )
    return first


def _check_float(value: SSAValue) -> None:
    """The tensor `value` has a floating-point element type (exp, softmax, ...)."""
    elem = element_type(value)
    if not isinstance(elem, AnyFloat):
        raise ShapeError(f"expected a floating-point element type, got {elem}")


def _axis(attr: IntegerAttr | None, default: int) -> int:
    return attr.value.data if attr is not None else default


def _axis_value(attr: IntegerAttr | None, default: int, operand: SSAValue) -> int:
    """The optional `axis` property (else `default`), normalized for `operand`'s rank."""
    return normalize_axis(_axis(attr, default), len(tensor_shape(operand)))
