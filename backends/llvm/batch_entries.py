"""Entry points over a dynamic batch: the record `specialize-batch` leaves, and the wrapper.

`specialize-batch` replaces a graph function over `?x...` tensors by static
bodies (a block of B samples and a one-sample tail, both ordinary public
functions) and records in the module attribute `lamina.batch_entries` what
the dynamic entry was::

    lamina.batch_entries = {main = {symbol = "N", bounds = array<i64: 1, 64>,
        bodies = [@main__batch8, @main__batch1], sizes = array<i64: 8, 1>,
        params = array<i64: 1, 0>, results = array<i64: 1>}}

(`params`/`results`: 1 where the leading dimension is the batch). The
record survives every phase; `lower-to-llvm` then emits the entry itself,
`void main(int64_t N, inputs..., outputs...)`, which calls the B-sample
body ⌊N/B⌋ times and the tail N mod B times, each on pointers advanced by
whole samples (docs/dynamic-shapes.md). Static bodies keep static
schedules, so a sample costs what it costs in a static build.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import llvm
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    UnitAttr,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from lamina.backends.llvm.conversion import NSW
from lamina.dialects.graph.control import BOUNDS_ATTR, parse_bounds

BATCH_ENTRIES_ATTR = "lamina.batch_entries"
"""Module attribute: entry name → the record of a dynamic-batch entry (above)."""

"""On a `graph.func` over a dynamic batch: `{N = array<i64: LO, HI>}`, the symbol and its
inclusive bounds."""

SIZE_ATTR = "lamina.size"
"""On a wrapper's integer parameter: the symbol whose size it passes (`"N"`)."""


@dataclass(frozen=True)
class BatchEntry:
    """A dynamic-batch entry point: its symbol, bounds and static bodies."""

    name: str
    symbol: str
    bounds: tuple[int, int]
    bodies: tuple[tuple[int, str], ...]
    """(samples per call, body function), largest first; the last takes one sample."""
    params: tuple[bool, ...]
    results: tuple[bool, ...]

    def to_attr(self) -> DictionaryAttr:
        return DictionaryAttr(
            {
                "symbol": StringAttr(self.symbol),
                "bounds": DenseArrayBase.from_list(i64, list(self.bounds)),
                "bodies": ArrayAttr([SymbolRefAttr(name) for _, name in self.bodies]),
                "sizes": DenseArrayBase.from_list(i64, [size for size, _ in self.bodies]),
                "params": DenseArrayBase.from_list(i64, [int(b) for b in self.params]),
                "results": DenseArrayBase.from_list(i64, [int(b) for b in self.results]),
            }
        )


def _ints(attr: Attribute) -> tuple[int, ...]:
    assert isinstance(attr, DenseArrayBase)
    return tuple(int(v) for v in attr.get_values())


def batch_entries(module: ModuleOp) -> dict[str, BatchEntry]:
    """The dynamic-batch entries recorded in `module` (none before `specialize-batch`)."""
    record = module.attributes.get(BATCH_ENTRIES_ATTR)
    if not isinstance(record, DictionaryAttr):
        return {}
    entries: dict[str, BatchEntry] = {}
    for name, value in record.data.items():
        assert isinstance(value, DictionaryAttr)
        fields = value.data
        symbol = fields["symbol"]
        bodies = fields["bodies"]
        assert isinstance(symbol, StringAttr) and isinstance(bodies, ArrayAttr)
        lo, hi = _ints(fields["bounds"])
        names = [ref.root_reference.data for ref in bodies.data if isinstance(ref, SymbolRefAttr)]
        entries[name] = BatchEntry(
            name,
            symbol.data,
            (lo, hi),
            tuple(zip(_ints(fields["sizes"]), names, strict=True)),
            tuple(bool(b) for b in _ints(fields["params"])),
            tuple(bool(b) for b in _ints(fields["results"])),
        )
    return entries


def func_bounds(func: Operation) -> tuple[str, tuple[int, int]] | None:
    """The batch symbol and bounds in a function's `lamina.bounds`, None if absent
    (the `graph.func` verifier rejects a malformed one)."""
    attr = func.attributes.get(BOUNDS_ATTR)
    return None if attr is None else parse_bounds(attr)


def set_batch_entry(module: ModuleOp, entry: BatchEntry) -> None:
    """Record `entry` in the module attribute (beside the entries already there)."""
    record = module.attributes.get(BATCH_ENTRIES_ATTR)
    current = dict(record.data) if isinstance(record, DictionaryAttr) else {}
    current[entry.name] = entry.to_attr()
    module.attributes[BATCH_ENTRIES_ATTR] = DictionaryAttr(current)


def _sample_elements(ty: Attribute) -> int:
    """Elements of one sample of a batched buffer (its shape without the leading dim)."""
    assert isinstance(ty, MemRefType)
    count = 1
    for dim in ty.get_shape()[1:]:
        count *= dim
    return count


def emit_wrapper(module: ModuleOp, entry: BatchEntry, tail: llvm.FuncOp) -> llvm.FuncOp:
    """`llvm.func @entry(i64 N, buffers...)`: the body calls over N samples (module docstring).

    `tail` is the lowered one-sample body: its `lamina.buffer` argument
    attributes give each buffer's element type and sample size.
    """
    buffers = _tail_buffers(tail)
    batched = (*entry.params, *entry.results)
    ptr = llvm.LLVMPointerType()
    entry_block = Block(arg_types=[i64, *[ptr] * len(buffers)])
    n, pointers = entry_block.args[0], entry_block.args[1:]
    n.name_hint = entry.symbol
    blocks = [entry_block]
    zero = _constant(0)
    entry_block.add_op(zero)
    start: SSAValue = zero.result
    exit_block = Block()
    exit_block.add_op(llvm.ReturnOp())
    loops: list[tuple[Block, Block]] = []
    for size, body in entry.bodies:
        header, step = _call_loop(size, body, n, pointers, buffers, batched)
        loops.append((header, step))
        blocks += [header, step]
    # Chain: entry → loop 1 header; loop k exit → loop k+1 header; last exit → return.
    entry_block.add_op(llvm.BrOp(loops[0][0], start))
    for index, (header, _) in enumerate(loops):
        after = loops[index + 1][0] if index + 1 < len(loops) else exit_block
        _finish_header(header, loops[index][1], after, n, entry.bodies[index][0])
    blocks.append(exit_block)
    arg_attrs = [DictionaryAttr({SIZE_ATTR: StringAttr(entry.symbol)})]
    for ty, is_batched in zip(buffers, batched, strict=True):
        shape = list(ty.get_shape())
        if is_batched:
            shape[0] = -1
        arg_attrs.append(
            DictionaryAttr({"llvm.noalias": UnitAttr(), "lamina.buffer": _retyped(ty, shape)})
        )
    wrapper = llvm.FuncOp(
        entry.name,
        llvm.LLVMFunctionType([i64, *[ptr] * len(buffers)]),
        linkage=llvm.LinkageAttr("external"),
        body=Region(blocks),
        other_props={"arg_attrs": ArrayAttr(arg_attrs)},
    )
    module.body.block.add_op(wrapper)
    return wrapper


def _retyped(ty: MemRefType, shape: Sequence[int]) -> MemRefType:
    return MemRefType(ty.element_type, [DYNAMIC_INDEX if d < 0 else d for d in shape])


def _tail_buffers(tail: llvm.FuncOp) -> list[MemRefType]:
    attrs = tail.arg_attrs.data if tail.arg_attrs is not None else ()
    buffers = []
    for entry in attrs:
        ty = entry.data.get("lamina.buffer") if isinstance(entry, DictionaryAttr) else None
        assert isinstance(ty, MemRefType), "a body's parameters are buffers"
        buffers.append(ty)
    return buffers


def _call_loop(
    size: int,
    body: str,
    n: SSAValue,
    pointers: Sequence[SSAValue],
    buffers: Sequence[MemRefType],
    batched: Sequence[bool],
) -> tuple[Block, Block]:
    """The header (argument: first sample; filled by `_finish_header`) and the step block
    of the loop calling `body` on `size` samples at a time."""
    header = Block(arg_types=[i64])
    first = header.args[0]
    step = Block()
    args: list[SSAValue] = []
    for pointer, ty, is_batched in zip(pointers, buffers, batched, strict=True):
        if not is_batched:
            args.append(pointer)
            continue
        stride = _constant(_sample_elements(ty))
        offset = llvm.MulOp(first, stride.result, overflow=NSW)
        gep = llvm.GEPOp.from_mixed_indices(pointer, [offset.res], ty.element_type)
        step.add_ops([stride, offset, gep])
        args.append(gep.result)
    step.add_op(llvm.CallOp(body, *args))
    return header, step


def _finish_header(header: Block, step: Block, after: Block, n: SSAValue, size: int) -> None:
    """header(i): if i + size <= N: step (call; back to header(i + size)) else after(i)."""
    first = header.args[0]
    width = _constant(size)
    nxt = llvm.AddOp(first, width.result, overflow=NSW)
    ule = IntegerAttr(llvm.ICmpPredicateFlag("ule").to_int(), i64)
    fits = llvm.ICmpOp(nxt.res, n, ule)
    header.add_ops([width, nxt, fits])
    header.add_op(llvm.CondBrOp(fits.res, step, (), after, (first,) if after.args else ()))
    step.add_op(llvm.BrOp(header, nxt.res))


def _constant(value: int) -> llvm.ConstantOp:
    return llvm.ConstantOp(IntegerAttr(value, i64), i64)


__all__ = [
    "BATCH_ENTRIES_ATTR",
    "BOUNDS_ATTR",
    "func_bounds",
    "SIZE_ATTR",
    "BatchEntry",
    "batch_entries",
    "emit_wrapper",
    "set_batch_entry",
]
