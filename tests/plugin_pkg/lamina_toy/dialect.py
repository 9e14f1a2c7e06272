from typing import ClassVar

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Dialect
from xdsl.irdl import (
    IRDLOperation,
    VarConstraint,
    base,
    irdl_op_definition,
    operand_def,
    result_def,
)


@irdl_op_definition
class DoubleOp(IRDLOperation):
    """`toy.double %x : tensor<4xf32>`: twice its operand, element-wise."""

    name = "toy.double"
    T: ClassVar = VarConstraint("T", base(TensorType))
    input = operand_def(T)
    result = result_def(T)
    assembly_format = "$input attr-dict `:` type($input)"


Toy = Dialect("toy", [DoubleOp], [])
