"""xDSL's op translator (llvm dialect → llvmlite), dispatched by the op's class.

`xdsl.backend.llvm.convert_op.convert_op` (xDSL 0.74) finds an op's handler
with one `match` statement whose cases are tried in order, most of them class
patterns (an `isinstance` through `ABCMeta` each). The ops a kernel is made of
come late in that list: a `llvm.mlir.constant` (DenseNet-121: 12,900 of its
68,000 llvm ops) is its last case, after about thirty failed checks, a
`getelementptr` (12,000) after fifteen. `install()` replaces the name
`convert_op` in `xdsl.backend.llvm.convert` (the one place that calls it)
by `convert_op` below, which calls the handler of the ops listed in
`_handlers` directly and passes every other op to xDSL's function.

Each class in `_handlers` is one whose first matching case in xDSL's list is
the one its handler stands for: the classes listed in the cases before it are
checked here to be neither its bases nor in the earlier cases' type tables
(`_check`, when installing), so the same handler runs with the same
arguments, and the LLVM IR is the same.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.backend.llvm import convert as xdsl_convert
from xdsl.backend.llvm import convert_op as xdsl_convert_op
from xdsl.dialects import llvm

_original = xdsl_convert_op.convert_op

_EARLIER_CLASSES: tuple[type, ...] = (
    llvm.ICmpOp,
    llvm.FCmpOp,
    llvm.FNegOp,
    llvm.CallOp,
    llvm.AllocaOp,
    llvm.LoadOp,
    llvm.StoreOp,
    llvm.ExtractValueOp,
    llvm.InsertValueOp,
    llvm.GEPOp,
    llvm.InlineAsmOp,
    llvm.BrOp,
    llvm.CondBrOp,
    llvm.UnreachableOp,
    llvm.SelectOp,
    llvm.MaskedStoreOp,
    llvm.ReturnOp,
    llvm.ZeroOp,
    llvm.UndefOp,
    llvm.AddressOfOp,
    llvm.CallIntrinsicOp,
    llvm.InsertElementOp,
    llvm.ShuffleVectorOp,
    llvm.FMAOp,
    llvm.ConstantOp,
)
"""The classes of xDSL's class patterns, in the order of its cases."""


def _constant(op, builder, val_map, block_map) -> None:
    val_map[op.result] = xdsl_convert_op.create_constant(op.result.type, op.value)


def _plain(handler: Callable) -> Callable:
    """A handler called as `handler(op, builder, val_map)` by xDSL."""
    return lambda op, builder, val_map, block_map: handler(op, builder, val_map)


def _with_blocks(handler: Callable) -> Callable:
    """A branch's handler (xDSL's case applies only with a `block_map`)."""

    def convert(op, builder, val_map, block_map) -> None:
        if block_map is None:
            _original(op, builder, val_map, block_map)
        else:
            handler(op, builder, val_map, block_map)

    return convert


def _xdsl(name: str) -> Callable:
    """xDSL's handler `_convert_<name>` (private to its module: read by name)."""
    return getattr(xdsl_convert_op, f"_convert_{name}")


_handlers: dict[type, Callable] = {
    **{
        cls: _plain(_xdsl(name))
        for cls, name in (
            (llvm.ICmpOp, "icmp"),
            (llvm.FCmpOp, "fcmp"),
            (llvm.CallOp, "call"),
            (llvm.LoadOp, "load"),
            (llvm.StoreOp, "store"),
            (llvm.GEPOp, "getelementptr"),
            (llvm.SelectOp, "select"),
            (llvm.ReturnOp, "return"),
            (llvm.AddressOfOp, "addressof"),
            (llvm.CallIntrinsicOp, "call_intrinsic"),
        )
    },
    llvm.BrOp: _with_blocks(_xdsl("br")),
    llvm.CondBrOp: _with_blocks(_xdsl("condbr")),
    llvm.ConstantOp: _constant,
}


def _check() -> None:
    """Is every class of `_handlers` first matched by its own case in xDSL's list?"""
    tables = (
        xdsl_convert_op._BINARY_OP_MAP,  # pyright: ignore[reportPrivateUsage]
        xdsl_convert_op._CAST_OP_NAMES,  # pyright: ignore[reportPrivateUsage]
        xdsl_convert_op._UNARY_INTRINSIC_MAP,  # pyright: ignore[reportPrivateUsage]
        xdsl_convert_op._BINARY_INTRINSIC_MAP,  # pyright: ignore[reportPrivateUsage]
        xdsl_convert_op._VECTOR_REDUCE_INTRINSIC_MAP,  # pyright: ignore[reportPrivateUsage]
    )
    for cls in _handlers:
        if any(cls in table for table in tables):
            raise RuntimeError(f"{cls.__name__} is in one of xDSL's translation tables")
        position = _EARLIER_CLASSES.index(cls)
        if any(issubclass(cls, earlier) for earlier in _EARLIER_CLASSES[:position]):
            raise RuntimeError(f"{cls.__name__} matches an earlier case of xDSL's translator")


def convert_op(op, builder, val_map, block_map=None) -> None:
    """`xdsl.backend.llvm.convert_op.convert_op`, by a table of the op's class first."""
    handler = _handlers.get(type(op))
    if handler is None:
        _original(op, builder, val_map, block_map)
    else:
        handler(op, builder, val_map, block_map)


def install() -> None:
    """Have xDSL's module translator (`convert_module`) call `convert_op` above."""
    # (`convert_op` is a module global xDSL imports, not one it exports: hence getattr/setattr)
    if getattr(xdsl_convert, "convert_op") is not convert_op:  # noqa: B009
        _check()
        setattr(xdsl_convert, "convert_op", convert_op)  # noqa: B010


__all__ = ["convert_op", "install"]
