"""Placement ops: `graph.on_device` (a constraint `plan-devices` honours) and
`graph.device_copy` (the copy `plan-devices` inserts between devices). Both
keep their operand's type; see docs/devices.md.
"""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from lamina.dialects.graph.base import COMPUTE_FORMAT
from lamina.dialects.graph.common import _check_result_type, attr_syntax
from lamina.dialects.lamina import DeviceAttr


class _SameTypeOp(IRDLOperation):
    """tensor -> tensor of the same type."""

    input = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = COMPUTE_FORMAT

    def verify_(self) -> None:
        _check_result_type(self.result.type, self.input.type)


@irdl_op_definition
class OnDeviceOp(_SameTypeOp):
    """The value is produced on / lives on `device` (a constraint for plan-devices).

    Example: `%y = graph.on_device %x {device = #lamina.device<"gpu", 0>} : (tensor<4xf32>) -> tensor<4xf32>`
    """

    name = "graph.on_device"

    device = prop_def(DeviceAttr)

    def __init__(self, input: SSAValue | Operation, device: DeviceAttr):
        super().__init__(
            operands=[input], result_types=[SSAValue.get(input).type], properties={"device": device}
        )


@irdl_op_definition
class DeviceCopyOp(_SameTypeOp):
    """Explicit copy of a tensor from device `src` to device `dst`."""

    name = "graph.device_copy"

    src = prop_def(DeviceAttr)
    dst = prop_def(DeviceAttr)
    device = opt_prop_def(DeviceAttr)
    """Where the copy's result lives; when present it must equal `dst`."""

    def __init__(self, input: SSAValue | Operation, src: DeviceAttr, dst: DeviceAttr):
        super().__init__(
            operands=[input],
            result_types=[SSAValue.get(input).type],
            properties={"src": src, "dst": dst},
        )

    def verify_(self) -> None:
        super().verify_()
        if self.device is not None and self.device != self.dst:
            raise VerifyException(
                f"device {attr_syntax(self.device)} of the copy's result does not match its "
                f"dst {attr_syntax(self.dst)}"
            )
