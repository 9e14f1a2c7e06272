"""The trait and base classes of graph ops, shared by every op family.

`GraphCompute` marks the ops `legalize` turns into kernel calls;
`_DeviceOp` gives every graph op its optional `device`; `_ComputeOp`
(pure, functional-type syntax, `verify_` = static shapes + `infer_result_type`)
and its one/two-operand refinements (`_OneInputOp`, `_RetypeOp`, `_LhsRhsOp`)
are what the family modules derive from, so a family module only states its
operands, properties and shape rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    operand_def,
    opt_prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import OpTrait, Pure
from xdsl.utils.exceptions import VerifyException

from lamina.dialects.graph.common import (
    ShapeError,
    _check_result_type,
    _check_same_element_type,
    _tensor,
    element_type,
    tensor_shape,
)
from lamina.dialects.lamina import DeviceAttr


class GraphCompute(OpTrait):
    """Marks graph arithmetic/tensor ops: all of them are legalized into
    `graph.call_te`/`call_loop`/`call_extern` before the lowering phase."""


class _DeviceOp(IRDLOperation):
    """Shared field: every tensor-producing/consuming graph op may carry `device`."""

    device = opt_prop_def(DeviceAttr)
    irdl_options = (ParsePropInAttrDict(),)


COMPUTE_FORMAT = "operands attr-dict `:` functional-type(operands, results)"


class _ComputeOp(_DeviceOp):
    """Shared shape of compute ops: pure, `GraphCompute`, functional-type syntax."""

    traits = traits_def(Pure(), GraphCompute())
    assembly_format = COMPUTE_FORMAT
    VERIFIES_LOCALLY: ClassVar[bool] = True  # verify_: operand/result types and properties only

    def infer_result_type(self) -> Attribute:
        """The result type implied by the operands' types and the properties (nothing else:
        `verify_` is declared local, so its result is memoized per types and attributes)."""
        raise NotImplementedError

    def verify_(self) -> None:
        for kind, values in (("operand", self.operands), ("result", self.results)):
            for index, val in enumerate(values):
                if isinstance(val.type, TensorType) and not val.type.has_static_shape():
                    raise VerifyException(
                        f"{kind} #{index} must be a statically shaped tensor, got {val.type}"
                    )
        try:
            inferred = self.infer_result_type()
        except ShapeError as err:
            raise VerifyException(str(err)) from None
        _check_result_type(self.results[0].type, inferred)


class _LhsRhsOp(_ComputeOp):
    """`lhs`, `rhs` of one element type; the result shape follows the shape rule
    `result_shape` (inferred by the builder when no result type is given)."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)

    @staticmethod
    def result_shape(lhs: Sequence[int], rhs: Sequence[int]) -> tuple[int, ...]:
        """The shape rule (raises `ShapeError`)."""
        raise NotImplementedError

    def __init__(
        self,
        lhs: SSAValue | Operation,
        rhs: SSAValue | Operation,
        result_type: Attribute | None = None,
        device: DeviceAttr | None = None,
    ):
        if result_type is None:
            lv, rv = SSAValue.get(lhs), SSAValue.get(rhs)
            shape = self.result_shape(tensor_shape(lv), tensor_shape(rv))
            result_type = _tensor(element_type(lv), shape)
        super().__init__(
            operands=[lhs, rhs], result_types=[result_type], properties={"device": device}
        )

    def infer_result_type(self) -> Attribute:
        elem = _check_same_element_type([self.lhs, self.rhs], ["lhs", "rhs"])
        return _tensor(elem, self.result_shape(tensor_shape(self.lhs), tensor_shape(self.rhs)))


class _OneInputOp(_ComputeOp):
    """A compute op over one tensor, `input`."""

    input = operand_def(TensorType)
    result = result_def(TensorType)


class _RetypeOp(_OneInputOp):
    """A one-input op whose result type is given (reshape, broadcast_to, cast);
    `infer_result_type` checks that it is compatible with the input."""

    def __init__(
        self,
        input: SSAValue | Operation,
        result_type: Attribute,
        device: DeviceAttr | None = None,
    ):
        super().__init__(
            operands=[input], result_types=[result_type], properties={"device": device}
        )
