"""An IRDL op's named single operand or result (`op.lhs`, `op.res`) read from its tuple.

xDSL's accessor for a named operand or result that comes before any variadic
one (`BeforeVariadicSingleAccessor`, most named operands and results) asks
`get_op_constructs` (a `match` on the construct), which builds an `OpOperands`
view of the op for every operand read, then indexes the view, which indexes
`SSAValues`, whose `__getitem__` is Python code. The lowering reads `op.lhs`,
`op.value`, `op.res` ... hundreds of thousands of times per network. Within
`fast_accessors` (a compile, driver/lowering.py) those two cases read the op's
operand tuple or result tuple directly: the same object, or the same
`IndexError`. Every other accessor, construct and a read from the class itself
go to xDSL's `__get__`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from xdsl.ir import Operation
from xdsl.irdl.operations import BaseAccessor, BeforeVariadicSingleAccessor, VarIRConstruct

from lamina.core.scoped_patch import ScopedPatch

_OPERAND, _RESULT = VarIRConstruct.OPERAND, VarIRConstruct.RESULT
_item = tuple.__getitem__  # what `SSAValues.__getitem__` does with an int
_XDSL_GET = BaseAccessor.__get__


def _get(self: BeforeVariadicSingleAccessor, obj: Operation, objtype: Any = None) -> Any:
    if obj is not None:
        construct = self.construct
        if construct is _OPERAND:
            return _item(obj._operands, self.idx)  # noqa: SLF001 - what `OpOperands` indexes
        if construct is _RESULT:
            return _item(obj.results, self.idx)
    return _XDSL_GET(self, obj, objtype)


_PATCH = ScopedPatch(BeforeVariadicSingleAccessor, "__get__", _get)


@contextmanager
def fast_accessors() -> Iterator[None]:
    """Within the block, named single operands and results are read directly (same
    values). Reentrant and thread-safe (`core/scoped_patch.py`)."""
    with _PATCH.active():
        yield


__all__ = ["fast_accessors"]
