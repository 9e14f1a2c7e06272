"""Elementwise compute ops: binary arithmetic with NumPy broadcasting
(`add`, `sub`, `mul`, `div`, `maximum`, `minimum`, `pow`), comparisons to `i1`
(`compare`), unary math (`neg`, `exp`, ..., `relu`, `gelu`), `cast` (NumPy
`astype`) and `where`.

Their legalization is `kernels/elementwise.py`.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import StringAttr, TensorType, i1
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, opt_prop_def, prop_def, result_def

from lamina.dialects.graph.base import _ComputeOp, _LhsRhsOp, _OneInputOp, _RetypeOp
from lamina.dialects.graph.common import (
    ShapeError,
    _check_float,
    _check_same_element_type,
    _tensor,
    broadcast_shapes,
    element_type,
    shape_str,
    tensor_shape,
)
from lamina.dialects.lamina import DeviceAttr


class _BinaryOp(_LhsRhsOp):
    """Elementwise binary op with NumPy broadcasting; operands share an element type."""

    result_shape = staticmethod(broadcast_shapes)


@irdl_op_definition
class AddOp(_BinaryOp):
    """Elementwise `lhs + rhs` with NumPy broadcasting."""

    name = "graph.add"


@irdl_op_definition
class SubOp(_BinaryOp):
    """Elementwise `lhs - rhs` with NumPy broadcasting."""

    name = "graph.sub"


@irdl_op_definition
class MulOp(_BinaryOp):
    """Elementwise `lhs * rhs` with NumPy broadcasting."""

    name = "graph.mul"


@irdl_op_definition
class DivOp(_BinaryOp):
    """Elementwise `lhs / rhs` with NumPy broadcasting (integer division truncates)."""

    name = "graph.div"


@irdl_op_definition
class MaximumOp(_BinaryOp):
    """Elementwise maximum with NumPy broadcasting."""

    name = "graph.maximum"


@irdl_op_definition
class MinimumOp(_BinaryOp):
    """Elementwise minimum with NumPy broadcasting."""

    name = "graph.minimum"


@irdl_op_definition
class PowOp(_BinaryOp):
    """Elementwise `lhs ** rhs` (C `pow`) with NumPy broadcasting; float operands only."""

    name = "graph.pow"

    def infer_result_type(self) -> Attribute:
        _check_float(self.lhs)
        return super().infer_result_type()


COMPARE_PREDICATES = ("eq", "ne", "lt", "le", "gt", "ge")
"""`graph.compare` predicates. On floats every one but `ne` is false when an
operand is NaN, and `ne` is true (NumPy); integers compare signed, i1 as 0 < 1."""


@irdl_op_definition
class CompareOp(_LhsRhsOp):
    """Elementwise comparison `lhs <predicate> rhs` with NumPy broadcasting: an
    `i1` tensor (NumPy `equal`, `less`, ...; ONNX `Equal`, `Less`, ...)."""

    name = "graph.compare"

    predicate = prop_def(StringAttr)
    result_shape = staticmethod(broadcast_shapes)

    def __init__(
        self,
        lhs: SSAValue | Operation,
        rhs: SSAValue | Operation,
        predicate: str,
        device: DeviceAttr | None = None,
    ):
        lv, rv = SSAValue.get(lhs), SSAValue.get(rhs)
        result_type = _tensor(i1, broadcast_shapes(tensor_shape(lv), tensor_shape(rv)))
        super().__init__(lhs, rhs, result_type, device)
        self.properties["predicate"] = StringAttr(predicate)

    def infer_result_type(self) -> Attribute:
        if self.predicate.data not in COMPARE_PREDICATES:
            raise ShapeError(
                f"predicate must be one of {', '.join(COMPARE_PREDICATES)}, "
                f'got "{self.predicate.data}"'
            )
        _check_same_element_type([self.lhs, self.rhs], ["lhs", "rhs"])
        return _tensor(i1, broadcast_shapes(tensor_shape(self.lhs), tensor_shape(self.rhs)))


class _UnaryOp(_OneInputOp):
    """Elementwise unary op: the result has the operand's type."""

    FLOAT_ONLY: ClassVar[bool] = True

    def __init__(
        self,
        input: SSAValue | Operation,
        result_type: Attribute | None = None,
        device: DeviceAttr | None = None,
        **props: Attribute | None,
    ):
        if result_type is None:
            result_type = SSAValue.get(input).type
        super().__init__(
            operands=[input], result_types=[result_type], properties={"device": device, **props}
        )

    def infer_result_type(self) -> Attribute:
        if self.FLOAT_ONLY:
            _check_float(self.input)
        return self.input.type


@irdl_op_definition
class NegOp(_UnaryOp):
    """Elementwise negation."""

    name = "graph.neg"
    FLOAT_ONLY: ClassVar[bool] = False


@irdl_op_definition
class ExpOp(_UnaryOp):
    """Elementwise e**x."""

    name = "graph.exp"


@irdl_op_definition
class LogOp(_UnaryOp):
    """Elementwise natural logarithm."""

    name = "graph.log"


@irdl_op_definition
class SqrtOp(_UnaryOp):
    """Elementwise square root."""

    name = "graph.sqrt"


@irdl_op_definition
class RsqrtOp(_UnaryOp):
    """Elementwise 1 / sqrt(x)."""

    name = "graph.rsqrt"


@irdl_op_definition
class TanhOp(_UnaryOp):
    """Elementwise hyperbolic tangent."""

    name = "graph.tanh"


@irdl_op_definition
class SigmoidOp(_UnaryOp):
    """Elementwise 1 / (1 + e**-x)."""

    name = "graph.sigmoid"


@irdl_op_definition
class ErfOp(_UnaryOp):
    """Elementwise Gauss error function."""

    name = "graph.erf"


@irdl_op_definition
class ReluOp(_UnaryOp):
    """Elementwise max(x, 0)."""

    name = "graph.relu"
    FLOAT_ONLY: ClassVar[bool] = False


GELU_APPROXIMATIONS = ("none", "tanh")


@irdl_op_definition
class GeluOp(_UnaryOp):
    """GELU: x * Phi(x) with `approximate = "none"` (erf, default) or `"tanh"`."""

    name = "graph.gelu"

    approximate = opt_prop_def(StringAttr)

    def __init__(
        self,
        input: SSAValue | Operation,
        approximate: str | None = None,
        device: DeviceAttr | None = None,
    ):
        approx = StringAttr(approximate) if approximate is not None else None
        super().__init__(input, device=device, approximate=approx)

    @property
    def approximation(self) -> str:
        return self.approximate.data if self.approximate is not None else "none"

    def infer_result_type(self) -> Attribute:
        if self.approximation not in GELU_APPROXIMATIONS:
            raise ShapeError(f'approximate must be "none" or "tanh", got "{self.approximation}"')
        return super().infer_result_type()


@irdl_op_definition
class CastOp(_RetypeOp):
    """Element type conversion to the result type's element type (NumPy `astype`)."""

    name = "graph.cast"

    def infer_result_type(self) -> Attribute:
        src, dst = tensor_shape(self.input), tensor_shape(self.result)
        if src != dst:
            raise ShapeError(
                f"cast must keep the shape: operand {shape_str(src)}, result {shape_str(dst)}"
            )
        return self.result.type


@irdl_op_definition
class WhereOp(_ComputeOp):
    """Elementwise `condition ? lhs : rhs` (an `i1` condition) with NumPy
    broadcasting of all three operands (numpy `where`, ONNX `Where`)."""

    name = "graph.where"

    condition = operand_def(TensorType)
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)

    def __init__(
        self,
        condition: SSAValue | Operation,
        lhs: SSAValue | Operation,
        rhs: SSAValue | Operation,
        device: DeviceAttr | None = None,
    ):
        cv, lv, rv = (SSAValue.get(v) for v in (condition, lhs, rhs))
        shape = broadcast_shapes(tensor_shape(cv), tensor_shape(lv), tensor_shape(rv))
        super().__init__(
            operands=[condition, lhs, rhs],
            result_types=[_tensor(element_type(lv), shape)],
            properties={"device": device},
        )

    def infer_result_type(self) -> Attribute:
        cond = element_type(self.condition)
        if cond != i1:
            raise ShapeError(f"condition must have element type i1, got {cond}")
        elem = _check_same_element_type([self.lhs, self.rhs], ["lhs", "rhs"])
        shape = broadcast_shapes(
            tensor_shape(self.condition), tensor_shape(self.lhs), tensor_shape(self.rhs)
        )
        return _tensor(elem, shape)


BINARY_OPS = (AddOp, SubOp, MulOp, DivOp, MaximumOp, MinimumOp, PowOp)


UNARY_OPS = (NegOp, ExpOp, LogOp, SqrtOp, RsqrtOp, TanhOp, SigmoidOp, ErfOp, ReluOp, GeluOp)
