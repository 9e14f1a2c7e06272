"""Reductions over axes: `reduce_sum`, `reduce_mean`, `reduce_max`, `reduce_min` (`axes`
absent: every axis; `keepdims`), and their shape rule.

Their legalization is `kernels/reduce.py`.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import DenseArrayBase, UnitAttr, i64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import irdl_op_definition, opt_prop_def

from lamina.dialects.graph.base import _OneInputOp
from lamina.dialects.graph.common import (
    ShapeError,
    _i64_array,
    _int_values,
    _tensor,
    _unit,
    element_type,
    normalize_axes,
    tensor_shape,
)
from lamina.dialects.lamina import DeviceAttr


def reduce_result_shape(
    shape: Sequence[int], axes: Sequence[int] | None, keepdims: bool
) -> tuple[int, ...]:
    """Shape after reducing `axes` (None: every axis); reduced dims stay as 1 with keepdims."""
    reduced = set(range(len(shape)) if axes is None else normalize_axes(axes, len(shape)))
    if keepdims:
        return tuple(1 if i in reduced else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in reduced)


class _ReduceOp(_OneInputOp):
    """Reduction over `axes` (absent: all axes; negative allowed); `keepdims` keeps them as 1."""

    axes = opt_prop_def(DenseArrayBase.constr(i64))
    keepdims = opt_prop_def(UnitAttr)

    def __init__(
        self,
        input: SSAValue | Operation,
        axes: Sequence[int] | None = None,
        keepdims: bool = False,
        result_type: Attribute | None = None,
        device: DeviceAttr | None = None,
    ):
        value = SSAValue.get(input)
        if result_type is None:
            shape = reduce_result_shape(tensor_shape(value), axes, keepdims)
            result_type = _tensor(element_type(value), shape)
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={"axes": _i64_array(axes), "keepdims": _unit(keepdims), "device": device},
        )

    @property
    def axes_value(self) -> tuple[int, ...]:
        """The normalized reduced axes (every axis when `axes` is absent)."""
        rank = len(tensor_shape(self.input))
        if self.axes is None:
            return tuple(range(rank))
        return normalize_axes(_int_values(self.axes), rank)

    def infer_result_type(self) -> Attribute:
        axes = None if self.axes is None else _int_values(self.axes)
        shape = reduce_result_shape(tensor_shape(self.input), axes, self.keepdims is not None)
        return _tensor(element_type(self.input), shape)


@irdl_op_definition
class ReduceSumOp(_ReduceOp):
    """Sum over `axes`."""

    name = "graph.reduce_sum"


@irdl_op_definition
class ReduceMeanOp(_ReduceOp):
    """Mean over `axes`."""

    name = "graph.reduce_mean"


class _ExtremumOp(_ReduceOp):
    """A reduction without an identity: over an empty axis it is an error, as in NumPy."""

    def infer_result_type(self) -> Attribute:
        shape = tensor_shape(self.input)
        empty = [a for a in self.axes_value if shape[a] == 0]
        if empty:
            raise ShapeError(
                f"{self.name.removeprefix('graph.')} over the empty axis {empty[0]} (extent 0) has no identity "
                "(NumPy raises too); reduce_sum gives 0 and reduce_mean NaN there"
            )
        return super().infer_result_type()


@irdl_op_definition
class ReduceMaxOp(_ExtremumOp):
    """Maximum over `axes` (NaN-propagating). Over an empty axis it is an error (no identity)."""

    name = "graph.reduce_max"


@irdl_op_definition
class ReduceMinOp(_ExtremumOp):
    """Minimum over `axes` (NaN-propagating). Over an empty axis it is an error (no identity)."""

    name = "graph.reduce_min"
