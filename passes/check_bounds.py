"""`check-bounds`: guard every buffer access so an out-of-bounds index stops with a message.

A debugging aid (`lamina-run --check-bounds`, `lamina-compile --check-bounds`,
`lamina.compile(..., check_bounds=True)` insert it right before
`lower-to-llvm`). Generated code otherwise trusts its indices: a wrong one
corrupts memory silently or crashes far from the cause. With this pass::

    %v = loop.load %buf[%i, %j] : memref<4x8xf32>

becomes::

    %ok = (%i <u 4) and (%j <u 8)          // unsigned: a negative index fails too
    %v = loop.if %ok -> (f32) {
      %x = loop.load %buf[%i, %j] {lamina.bounds_checked} : memref<4x8xf32>
      loop.yield %x : f32
    } else {
      loop.call @__lamina_error_0(%i, %j) : (index, index) -> ()
      %zero = arith.constant 0.0 : f32
      loop.yield %zero : f32
    }

and a store likewise. `@__lamina_error_<k>` is not a real function: it names
the message template recorded in the module attribute `lamina.error_messages`
("kernel @f: index ({0}, {1}) out of bounds of buffer %buf ..."), and
`lower-to-llvm` turns the call into the error exit of
`backends/llvm/errors.py` (record the message and the indices, return at
once; every caller returns too), which `run` raises as `LaminaRuntimeError`.
The out-of-bounds access itself never executes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    AnyFloat,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    UnitAttr,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from lamina.backends.llvm.errors import MAX_VALUES, function_name, register_failure
from lamina.core.pass_base import LaminaPass
from lamina.dialects import loop
from lamina.dialects.lamina import Phase

CHECKED_ATTR = "lamina.bounds_checked"
"""On a `loop.load`/`loop.store` already guarded (so the pass is idempotent)."""


def _zero(ty: Attribute) -> arith.ConstantOp:
    if isinstance(ty, AnyFloat):
        return arith.ConstantOp(FloatAttr(0.0, ty))
    assert isinstance(ty, IntegerType | IndexType)
    return arith.ConstantOp(IntegerAttr(0, ty))


def _buffer_name(buffer: SSAValue) -> str:
    return f"%{buffer.name_hint}" if buffer.name_hint else "(unnamed)"


def _message(access: Operation, buffer: SSAValue, rank: int) -> str:
    """The template backends/llvm/errors.py formats with the index values ({0}..{3})."""
    shape = "x".join(map(str, buffer.type.get_shape()))
    indices = ", ".join(f"{{{i}}}" if i < MAX_VALUES else "?" for i in range(rank))
    return (
        f"kernel @{function_name(access)}: index ({indices}) is out of bounds of buffer "
        f"{_buffer_name(buffer)} of shape {shape} in {access.name} (--check-bounds)"
    )


def _in_bounds(indices: list[SSAValue], shape: list[int], at: InsertPoint) -> SSAValue:
    """`and` over `index <u extent` (an unsigned compare rejects negative indices too)."""
    ops: list[Operation] = []
    result: SSAValue | None = None
    for index, extent in zip(indices, shape, strict=True):
        bound = arith.ConstantOp(IntegerAttr(extent, IndexType()))
        compare = arith.CmpiOp(index, bound, "ult")
        ops += [bound, compare]
        if result is None:
            result = compare.result
        else:
            both = arith.AndIOp(result, compare.result)
            ops.append(both)
            result = both.result
    Rewriter.insert_op(ops, at)
    assert result is not None
    return result


def guard_access(access: loop.LoadOp | loop.StoreOp, module: ModuleOp) -> None:
    """Wrap `access` in a `loop.if` that reports an out-of-bounds index instead."""
    buffer = access.buffer
    mtype = buffer.type
    assert isinstance(mtype, MemRefType)
    shape = list(mtype.get_shape())
    indices = list(access.indices)
    if not shape or any(extent < 0 for extent in shape):
        return  # a 0-d buffer has nothing to check; dynamic extents are not known here
    ok = _in_bounds(indices, shape, InsertPoint.before(access))
    callee = register_failure(module, _message(access, buffer, len(indices)))
    failure: list[Operation] = [loop.CallOp(callee, indices[:MAX_VALUES])]
    if isinstance(access, loop.LoadOp):
        load = loop.LoadOp(buffer, indices)
        load.attributes[CHECKED_ATTR] = UnitAttr()
        zero = _zero(access.result.type)
        guarded = loop.IfOp(
            ok,
            [access.result.type],
            Region(Block([load, loop.YieldOp(load.result)])),
            Region(Block([*failure, zero, loop.YieldOp(zero.result)])),
        )
        Rewriter.replace_op(access, guarded)
        return
    store = loop.StoreOp(access.value, buffer, indices)
    store.attributes[CHECKED_ATTR] = UnitAttr()
    guarded = loop.IfOp(
        ok, [], Region(Block([store, loop.YieldOp()])), Region(Block([*failure, loop.YieldOp()]))
    )
    Rewriter.replace_op(access, guarded, [])


@dataclass(frozen=True)
class CheckBoundsPass(LaminaPass):
    """Guard every `loop.load`/`loop.store` with a bounds check that stops with a message.

    Input invariant: phase `lowering` (run it last, right before
    `lower-to-llvm`, so that no later pass moves or duplicates accesses).

    Output IR: every access to a buffer of rank ≥ 1 sits in a `loop.if` on
    `index <u extent` for each dimension; its else branch calls
    `@__lamina_error_<k>` with the indices, and the module attribute
    `lamina.error_messages` maps that name to the message (kernel, buffer,
    shape, indices). Guarded accesses carry `lamina.bounds_checked`.

    Invariants: results are unchanged for in-bounds programs; running the
    pass twice equals running it once.
    """

    name = "check-bounds"

    phases: ClassVar[frozenset[Phase]] = frozenset({Phase.LOWERING})

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        accesses = [
            access
            for access in op.walk()
            if isinstance(access, loop.LoadOp | loop.StoreOp)
            and CHECKED_ATTR not in access.attributes
        ]
        for access in accesses:
            guard_access(access, op)


__all__ = ["CheckBoundsPass", "guard_access"]
