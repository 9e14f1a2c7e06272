"""The trait and base classes of graph ops, shared by every op family.

`GraphCompute` marks the ops `legalize` turns into kernel calls;
`_DeviceOp` gives every graph op its optional `device`; `_ComputeOp`
(pure, functional-type syntax, `verify_` = static shapes, or `?` only in the
leading (batch) dimension, + `infer_result_type`)
and its one/two-operand refinements (`_OneInputOp`, `_RetypeOp`, `_LhsRhsOp`)
are what the family modules derive from, so a family module only states its
operands, properties and shape rule.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import DYNAMIC_INDEX, TensorType
from xdsl.ir import Attribute, Block, Operation, SSAValue
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


def _check_batch_dynamic(kind: str, index: int, ty: Attribute) -> bool:
    """Whether `ty` is a tensor with a dynamic (batch) leading dimension; a `?` elsewhere
    is an error (only the leading dimension can be symbolic, docs/dynamic-shapes.md)."""
    if not isinstance(ty, TensorType) or ty.has_static_shape():
        return False
    shape = ty.get_shape()
    if any(d == DYNAMIC_INDEX for d in shape[1:]) or shape[0] != DYNAMIC_INDEX:
        raise VerifyException(
            f"{kind} #{index}: only the leading (batch) dimension may be dynamic, got {ty}"
        )
    return True


def _probe_size(types: Sequence[Attribute]) -> int:
    """A size equal to no static dimension of `types` (the stand-in for `?`)."""
    sizes = {d for t in types if isinstance(t, TensorType) for d in t.get_shape()}
    probe = 7919
    while probe in sizes:
        probe += 2
    return probe


def _unprobe(message: str, probe: int) -> str:
    """A message about the probe op in terms of `?`: the probe size reads `?`, a multiple
    of it (an element count) `k×?`."""

    def word(match: re.Match[str]) -> str:
        value = int(match.group())
        if value == probe:
            return "?"
        return f"{value // probe}×?" if value > probe and value % probe == 0 else match.group()

    return re.sub(r"(?<!\d)\d+(?!\d)", word, message)


def _with_batch(ty: Attribute, probe: int, back: bool = False) -> Attribute:
    """`?xS` → `PxS` (or, with `back`, `PxS` → `?xS`); other types unchanged."""
    if not isinstance(ty, TensorType):
        return ty
    old, new = (probe, DYNAMIC_INDEX) if back else (DYNAMIC_INDEX, probe)
    shape = [new if d == old else d for d in ty.get_shape()]
    return TensorType(ty.element_type, shape, ty.encoding)


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
        dynamic = False
        for kind, values in (("operand", self.operands), ("result", self.results)):
            for index, val in enumerate(values):
                dynamic |= _check_batch_dynamic(kind, index, val.type)
        if dynamic:
            self._verify_with_probe()
            return
        try:
            inferred = self.infer_result_type()
        except ShapeError as err:
            raise VerifyException(str(err)) from None
        _check_result_type(self.results[0].type, inferred)

    def _verify_with_probe(self) -> None:
        """Verify an op over `?x...` tensors as the same op over `Px...` tensors.

        Every `?` of a function stands for the one batch symbol `N`
        (docs/dynamic-shapes.md), so the shape rules hold for all N exactly
        when they hold for one size P that no static dimension of the op
        equals: the rules only copy, compare and multiply dimensions, and a
        rule mixing N with a static size (a reshape turning `?x4` into `?x2`)
        fails for P. The inferred `P` is read back as `?`.
        """
        types = [v.type for v in (*self.operands, *self.results)]
        probe = _probe_size(types)
        block = Block(arg_types=[_with_batch(t, probe) for t in self.operand_types])
        twin = type(self).create(
            operands=list(block.args),
            result_types=[_with_batch(t, probe) for t in self.result_types],
            properties=dict(self.properties),
            attributes=dict(self.attributes),
        )
        try:
            inferred = twin.infer_result_type()
        except ShapeError as err:
            raise VerifyException(_unprobe(str(err), probe)) from None
        finally:
            twin.drop_all_references()
        try:
            _check_result_type(self.results[0].type, _with_batch(inferred, probe, back=True))
        except VerifyException as err:
            raise VerifyException(_unprobe(str(err), probe)) from None


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
