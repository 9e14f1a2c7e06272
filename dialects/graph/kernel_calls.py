"""Calls from the graph level into lower levels, in destination-passing style:
`graph.call_te` (a `te.func`), `graph.call_loop` (a `loop.func`) and
`graph.call_extern` (a native symbol). `legalize` produces them from the
compute ops; their verifiers accept the callee either returning its results
or taking one output buffer per result.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import FunctionType, ShapedType, StringAttr, TensorType, UnitAttr
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.utils.exceptions import VerifyException

from lamina.dialects.common import type_list
from lamina.dialects.graph.base import _DeviceOp
from lamina.dialects.graph.common import _unit
from lamina.dialects.graph.control import CALL_FORMAT, _CalleeSymbolUser, _CallOp, _PureFlagEffects
from lamina.dialects.lamina import DeviceAttr


def _same_data_types(got: Sequence[Attribute], expected: Sequence[Attribute]) -> bool:
    """Tensors/memrefs correspond when shapes and element types agree (other types: equal)."""
    if len(got) != len(expected):
        return False
    for a, b in zip(got, expected, strict=True):
        if isinstance(a, ShapedType) and isinstance(b, ShapedType):
            if a.get_shape() != b.get_shape() or a.get_element_type() != b.get_element_type():
                return False
        elif a != b:
            return False
    return True


class _KernelCallOp(_CallOp):
    """DPS call of a lower-level function: tensor args -> freshly allocated tensors."""

    arguments = var_operand_def(TensorType)
    res = var_result_def(TensorType)

    traits = traits_def(_CalleeSymbolUser())

    def verify_symbol_uses(self) -> None:
        callee = self._resolve_callee()
        if callee is None:
            return
        ftype = callee.properties.get("function_type")
        if isinstance(ftype, FunctionType):
            self._check_kernel_signature(ftype.inputs.data, ftype.outputs.data)

    def _check_kernel_signature(
        self, params: Sequence[Attribute], results: Sequence[Attribute]
    ) -> None:
        """The callee either takes the arguments and returns the results, or
        (destination-passing style) takes the arguments followed by one output
        per result and returns nothing. Buffers match tensors by shape and
        element type."""
        args, outs = list(self.arguments.types), list(self.res.types)
        direct = _same_data_types(params, args) and _same_data_types(results, outs)
        dps = not results and _same_data_types(params, args + outs)
        if not (direct or dps):
            raise VerifyException(
                f"call types {type_list(args)} -> {type_list(outs)} do not match callee "
                f"{self.callee} of type {type_list(params)} -> {type_list(results)} (expected "
                f"the same arguments and results, or destination-passing style: arguments "
                f"then outputs, no results)"
            )


@irdl_op_definition
class CallTeOp(_KernelCallOp):
    """Call a `te.func` (call_tir analog before lowering).

    Example: `%r = graph.call_te @add_kernel(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>`
    """

    name = "graph.call_te"
    CALLEE_OP_NAME: ClassVar[str] = "te.func"


@irdl_op_definition
class CallLoopOp(_KernelCallOp):
    """Call a `loop.func` (call_tir)."""

    name = "graph.call_loop"
    CALLEE_OP_NAME: ClassVar[str] = "loop.func"


@irdl_op_definition
class CallExternOp(_DeviceOp):
    """Call an external function by name (call_dps_packed); `pure` marks it effect-free.

    Example: `%r = graph.call_extern "cblas_sgemm"(%a, %b) {pure} : (...) -> tensor<4x4xf32>`
    """

    name = "graph.call_extern"

    arguments = var_operand_def(TensorType)
    res = var_result_def(TensorType)
    callee = prop_def(StringAttr)
    pure = opt_prop_def(UnitAttr)

    traits = traits_def(_PureFlagEffects())
    assembly_format = CALL_FORMAT

    def __init__(
        self,
        callee: str,
        arguments: Sequence[SSAValue | Operation],
        result_types: Sequence[Attribute],
        pure: bool = False,
        device: DeviceAttr | None = None,
    ):
        super().__init__(
            operands=[arguments],
            result_types=[result_types],
            properties={"callee": StringAttr(callee), "pure": _unit(pure), "device": device},
        )

    def verify_(self) -> None:
        if not self.callee.data:
            raise VerifyException("callee name must not be empty")
