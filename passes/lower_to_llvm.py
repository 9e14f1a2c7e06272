"""`lower-to-llvm`: loop nests, scalar arithmetic and buffers → xDSL's llvm dialect.

The transition into phase `build` (docs/design.md §2, §4). xDSL has no
arith/math/func/cf/memref → llvm conversions of its own in xDSL 0.74, so
every source op gets its own `RewritePattern`, named `<Op>Lowering`, driven
by one greedy `PatternRewriteWalker`. This file holds the patterns for
functions, calls, buffers and control flow; the scalar (`arith`, `math`)
patterns are in `backends/llvm/scalar_patterns.py`, parallel loops in
`backends/llvm/parallel.py`, and the shared type/cast helpers in
`backends/llvm/conversion.py`.

ABI (what `backends/codegen.py` and `backends/jit.py` rely on):

* every memref becomes a bare `!llvm.ptr` to its first element. Shapes are
  static and the memref type's shape *is* the physical layout, row-major
  (or the static strides/offset of a strided layout); a
  `lamina.constraint` only informs `simplify` and is dropped here;
* `loop.func @f(memref..., scalars...)` becomes
  `llvm.func @f(!llvm.ptr {llvm.noalias, lamina.buffer = memref<...>}, ...)`:
  buffer parameters never overlap (destination-passing style), and
  `lamina.buffer` records the memref type for the runtime's checks;
* `index` becomes `i64`.

Type conversion works as in MLIR's dialect conversion: a pattern that needs
an operand in its llvm type asks `to_llvm`, which looks through (or
inserts) a `builtin.unrealized_conversion_cast`, and results are cast back
to their original type for users not lowered yet (`from_llvm`).
`UnrealizedCastFolding` removes cast pairs as they meet; none survives.

xDSL's translator converts blocks in list order, so each function's blocks
are finally sorted in reverse post-order (definitions before uses).
"""

from __future__ import annotations

import functools
import math
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from types import UnionType
from typing import ClassVar, Union, get_args, get_origin

from xdsl.context import Context
from xdsl.dialects import arith, llvm
from xdsl.dialects import memref as memrefd
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    StringAttr,
    UnitAttr,
    UnrealizedConversionCastOp,
    i1,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, Region, SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriterListener,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import BlockInsertPoint, InsertPoint, Rewriter

from lamina.backends.llvm.batch_entries import batch_entries, emit_wrapper
from lamina.backends.llvm.conversion import (
    ALLOC_ALIGNMENT,
    BUFFER_ATTR,
    INTERNAL_ATTR,
    LOOP_HINT_KINDS,
    LOOP_KIND_ATTR,
    MAX_STACK_BYTES,
    aligned_load,
    aligned_store,
    branch,
    call_function,
    call_intrinsic,
    cond_branch,
    constant,
    convert_type,
    declare_function,
    element_size,
    entry_block,
    from_llvm,
    inbounds_gep,
    integer_attr,
    nsw_binop,
    quick,
    replace_with,
    to_llvm,
)
from lamina.backends.llvm.device_runtime import ALLOC_SYMBOL, COPY_SYMBOL, FREE_SYMBOL, device_slot
from lamina.backends.llvm.entry_points import RESULTS_ATTR
from lamina.backends.llvm.errors import ERROR_ATTR, alloc_message, insert_error_exits
from lamina.backends.llvm.parallel import ParallelForLowering, static_trip_count
from lamina.backends.llvm.scalar_patterns import scalar_patterns
from lamina.core.dead_ops import GreedyApplier, is_trivially_dead
from lamina.core.diagnostics import op_error
from lamina.core.locations import locating_walker
from lamina.core.pass_base import LaminaPass
from lamina.core.symbols import SymbolNames
from lamina.core.walk import preorder
from lamina.dialects import loop
from lamina.dialects.lamina import Phase, set_phase
from lamina.dialects.loop import LoopKind
from lamina.target.devices import check_usable_devices
from lamina.target.function_knobs import KNOBS_ATTR
from lamina.target.registry import op_knobs

# ---------------------------------------------------------------------------
# Buffers
# ---------------------------------------------------------------------------


def _element_address(
    buffer: SSAValue, indices: Sequence[SSAValue], rewriter: PatternRewriter
) -> SSAValue:
    """`&buffer[i, j, ...]`: a chain of `getelementptr i8`, one per index, by byte offsets.

    address = ptr + i * stride0 * size + j * stride1 * size + ... + constant   (nsw, inbounds)

    Why this form (docs/performance.md, "Accumulators in memory"): LLVM's
    alias analysis and its store-to-load forwarding must see the rows of a
    register block as one pointer plus different constants, and the zeroing
    loop's stores and the reduction loop's loads of a tile as the same
    address. As one `getelementptr float` by a summed index they were neither:
    LLVM treats a sum with several users (the input and output of a 16 -> 16
    convolution share theirs) as one opaque value and does not split it, and
    where it did split one (one user), the zeroing and the reduction loop
    ended up with differently associated, differently typed addresses. A
    chain has no sums to split or reassociate, each link is already in the
    `i8` form LLVM canonicalizes to, and alias analysis decomposes it term
    by term. The constant part of every index (`%i + 2`, `_split_constant`)
    and the layout offset go into one last link.

    A zero index adds no link: a blocked tensor's accesses are mostly
    `x[0, c, h, w, l]` or `scale[0, c, 0, 0, l]`, and the `mul 0, stride` of
    each zero index was a large share of the llvm ops `lower-to-llvm` built
    for DenseNet-121 (each built, verified, translated and parsed again by
    LLVM, whose instcombine then removed them).
    """
    strides, offset = _layout(buffer)
    return _offset_address(
        to_llvm(buffer, rewriter), zip(indices, strides, strict=True), offset, buffer, rewriter
    )


def _layout(buffer: SSAValue) -> tuple[Sequence[int], int]:
    """The static strides and offset of `buffer`'s memref type."""
    mtype = buffer.type
    assert isinstance(mtype, MemRefType)
    return _type_layout(mtype)


@functools.lru_cache(maxsize=1024)
def _type_layout(mtype: MemRefType) -> tuple[Sequence[int], int]:
    """`_layout` of a memref type, once per type (asked for every access)."""
    strides = mtype.get_strides()
    offset = mtype.get_offset()
    if strides is None or offset is None or None in strides:
        raise ValueError(f"buffer type {mtype} has no static strides")
    return tuple(stride for stride in strides if stride is not None), offset


def _offset_address(
    ptr: SSAValue,
    terms: Iterable[tuple[SSAValue, int]],
    offset: int,
    buffer: SSAValue,
    rewriter: PatternRewriter,
) -> SSAValue:
    """`ptr + offset + sum(index * stride)` (strides and offset in elements of
    `buffer`'s type) as a chain of `getelementptr`s, one per variable term, then
    one for the constant part (`ptr` itself when there is nothing to add).

    Every link is in bounds when each index is within its dimension: the
    terms are not negative (a negative constant part stays in its index,
    `_split_constant`), so each partial sum lies between `ptr` and the
    address. Arithmetic an earlier access of the same block built already is
    reused (`_AddressCache`), as LLVM's EarlyCSE would reuse it."""
    cache = _addresses.at(rewriter)
    element, size = _gep_unit(buffer)
    offset *= size
    address = ptr
    for whole, stride in _merge_quotient_remainder(_split_sums(list(terms))):
        index, constant_part = _split_constant(whole)
        offset += constant_part * stride * size
        if index is None:
            continue  # a constant index: all in the offset
        index = _look_through(index)  # one key for an index and its cast
        term = cache.get(("mul", index, stride * size))
        if term is None:
            term = to_llvm(index, rewriter)
            if stride * size != 1:
                term = rewriter.insert(
                    nsw_binop(llvm.MulOp, term, constant(stride * size, i64, rewriter))
                ).res
            cache.put(("mul", index, stride * size), term)
        address = _cached_gep(cache, address, term, element, rewriter)
    if offset:
        off = cache.get(("offset", offset))
        if off is None:
            off = constant(offset, i64, rewriter)
            cache.put(("offset", offset), off)
        address = _cached_gep(cache, address, off, element, rewriter)
    return address


def _cached_gep(
    cache: _BlockValues,
    ptr: SSAValue,
    index: SSAValue,
    element: Attribute,
    rewriter: PatternRewriter,
) -> SSAValue:
    """`getelementptr inbounds element, ptr, index`, reused if the block has it already."""
    address = cache.get(("gep", ptr, index, element))
    if address is None:
        address = rewriter.insert(inbounds_gep(ptr, index, element)).result
        cache.put(("gep", ptr, index, element), address)
    return address


_I8 = IntegerType(8)


def _gep_unit(buffer: SSAValue) -> tuple[Attribute, int]:
    """The `getelementptr` source type of `buffer`'s accesses and its size in bytes.

    `i8` and the element's size (addresses as byte offsets) for buffers of
    scalars; the element type itself and 1 for vectors and `i1` (LLVM's
    allocation size of those is not their bit width over 8) and for stack
    buffers (llvmlite gives an `alloca` a typed pointer, and refuses a
    store of a `float` through the `i8*` a byte `getelementptr` of it is)."""
    mtype = buffer.type
    assert isinstance(mtype, MemRefType)
    element = mtype.element_type
    bytes_size = _byte_unit(element)
    if bytes_size and not _is_stack_buffer(buffer):
        return _I8, bytes_size
    return convert_type(element), 1


@functools.lru_cache(maxsize=256)
def _byte_unit(element: Attribute) -> int:
    """The size of a scalar element addressed in bytes (0: addressed by its own type)."""
    scalar = isinstance(element, Float16Type | Float32Type | Float64Type | IndexType) or (
        isinstance(element, IntegerType) and element.width.data % 8 == 0
    )
    return element_size(element) if scalar else 0


def _merge_quotient_remainder(terms: list[tuple[SSAValue, int]]) -> list[tuple[SSAValue, int]]:
    """`(x / k) * (s * k) + (x % k) * s` (unsigned) as the one term `x * s`.

    A layout transform reads `x[c / 16, c % 16]` of a blocked buffer. In one
    summed index LLVM's instcombine folded that back to `c` (and the copy
    of a 1x960x1x1 tensor to one `memcpy`); in a chain of `getelementptr`s
    nothing adds the two terms, so they are merged here."""
    parts: dict[tuple[SSAValue, int], dict[tuple[str, int], int]] = {}
    for position, (index, stride) in enumerate(terms):
        owner = _look_through(index).owner
        if isinstance(owner, arith.DivUIOp | llvm.UDivOp | arith.RemUIOp | llvm.URemOp):
            divisor = _constant_index(owner.rhs)
            if divisor:
                kind = "div" if isinstance(owner, arith.DivUIOp | llvm.UDivOp) else "rem"
                key = (_look_through(owner.lhs), divisor)
                parts.setdefault(key, {})[kind, stride] = position
    merged: dict[int, tuple[SSAValue, int] | None] = {}
    for (x, divisor), found in parts.items():
        for (kind, stride), rem_at in found.items():
            div_at = found.get(("div", stride * divisor))
            if kind == "rem" and div_at is not None and not {div_at, rem_at} & merged.keys():
                merged[div_at], merged[rem_at] = (x, stride), None
    if not merged:
        return terms
    kept = (merged.get(position, term) for position, term in enumerate(terms))
    return [term for term in kept if term is not None]


def _split_sums(terms: list[tuple[SSAValue, int]]) -> list[tuple[SSAValue, int]]:
    """`(a + b) * s` as the two terms `a * s` and `b * s`, for sums of two
    variable parts (`head * 64 + column` after a head split): in one link the
    sum, which the loop IR adds without `nsw`, keeps LLVM's scalar evolution
    from bounding the address, and the loop vectorizer from checking its
    aliasing (the attention block's per-head matmul was not vectorized)."""
    out: list[tuple[SSAValue, int]] = []
    for index, stride in terms:
        owner = _look_through(index).owner
        if type(owner) in _ADD_OPS:
            lhs, rhs = owner._operands  # pyright: ignore[reportPrivateUsage, reportOptionalMemberAccess]
            if _constant_index(lhs) is None and _constant_index(rhs) is None:
                out += [(lhs, stride), (rhs, stride)]
                continue
        out.append((index, stride))
    return out


_ADD_OPS = (arith.AddiOp, llvm.AddOp)
"""The integer additions' classes (neither has a subclass): compared, as `_look_through` does."""


def _look_through(value: SSAValue) -> SSAValue:
    """`value` without a one-input `unrealized_conversion_cast` around it.

    Asked about every index of every access (DenseNet-121: 170,000 times), so
    it compares the owner's class (the cast has no subclass) and reads its
    operands (the cast's only operands are its inputs): `isinstance` of an op
    class goes through `ABCMeta.__instancecheck__` and `owner.inputs` through
    xDSL's operand descriptor, together most of this function's time."""
    owner = value.owner
    if type(owner) is UnrealizedConversionCastOp:
        # The operand tuple itself, unpacked: `owner.operands[0]` built a view object
        # and went through `SSAValues.__getitem__`.
        inputs = owner._operands  # pyright: ignore[reportPrivateUsage, reportOptionalMemberAccess]
        if len(inputs) == 1:
            (single,) = inputs
            return single
    return value


def _split_constant(index: SSAValue) -> tuple[SSAValue | None, int]:
    """`index` as `base + c` with `c >= 0` (`base` None when `index` is a constant).

    The rows of a register block are `%i + 1`, `%i + 2`, ...: their addresses
    then share the links up to `%i`'s and differ in the constant, which is
    what LLVM's alias analysis needs to keep the block's accumulators in
    registers. A negative `c` stays in the index (`(%h - 1) * stride` is
    not below `ptr`; `%h * stride` could pass the buffer's end)."""
    whole, total = index, 0
    for _ in range(8):
        value = _constant_index(index)
        if value is not None:
            return None, total + value
        owner = _look_through(index).owner
        if type(owner) not in _ADD_OPS:
            break
        lhs, rhs = owner._operands  # pyright: ignore[reportPrivateUsage, reportOptionalMemberAccess]
        value = _constant_index(rhs)
        if value is None:
            lhs, rhs = rhs, lhs
            value = _constant_index(rhs)
        if value is None:
            break
        index, total = lhs, total + value
    if total < 0:
        return whole, 0
    return index, total


class _BlockValues:
    """Address values built in one block, by what they compute; a value is returned
    only while its op is still in that block (not erased or moved by a split)."""

    def __init__(self, block: Block | None):
        self.block = block
        self.values: dict[tuple, SSAValue] = {}
        self.last: Operation | None = None
        """The op built last: every value here is defined before it or by it."""

    def get(self, key: tuple) -> SSAValue | None:
        value = self.values.get(key)
        if value is None or self.block is None:
            return None
        owner = value.owner
        if not isinstance(owner, Operation) or owner.parent is not self.block:
            del self.values[key]
            return None
        return value

    def put(self, key: tuple, value: SSAValue) -> None:
        if self.block is None:
            return
        self.values[key] = value
        if isinstance(value.owner, Operation):
            self.last = value.owner


class _AddressCache(threading.local):
    """Common subexpressions of the address arithmetic of a block's accesses.

    Every load and store computes its terms `index * stride` and a chain of
    `getelementptr`s; the accesses of one block (an unrolled register block, a
    window) repeat most of it (`%n * 12544`, `%h * 896`, the links up to
    them...): on MobileNet-V3, 35 % of the kernels' LLVM instructions were such
    repeats (measured with summed indices),
    each built, verified and translated here, printed, parsed by LLVM and
    removed by its EarlyCSE. Values are reused within a block only, and only
    from accesses before the one being lowered: the accesses of a block are
    normally lowered in order, and the cache is dropped whenever the access
    being lowered is not found within `REACH` ops after the last value built
    (an access lowered out of order, another block). Which values are reused
    depends on the IR alone (deterministic)."""

    REACH = 256

    def __init__(self) -> None:
        self.current = _BlockValues(None)

    def reset(self) -> None:
        self.current = _BlockValues(None)

    def at(self, rewriter: PatternRewriter) -> _BlockValues:
        """The values usable at `rewriter`'s insertion point (before its current op)."""
        point = rewriter.insertion_point
        block, before = point.block, point.insert_before
        current = self.current
        if before is not None and current.block is block and _reaches(current.last, before):
            return current
        self.current = _BlockValues(block if before is not None else None)
        return self.current


def _reaches(start: Operation | None, target: Operation) -> bool:
    """Is `target` at most `_AddressCache.REACH` ops after `start` in its block?"""
    op, steps = start, 0
    while op is not None and steps <= _AddressCache.REACH:
        if op is target:
            return True
        op, steps = op.next_op, steps + 1
    return False


_addresses = _AddressCache()


class SelectChainLowering(RewritePattern):
    """A select between loads (a concatenation's chain) → one load from a selected address.

    A concatenation (`kernels/shape.py`, `build_concat`) reads every input at a
    clamped index and selects one by the axis index:
    `select(i < 4, in0[0, min(i, 3), h, w, l], select(i < 6, in1[..], in2[..]))`.
    Lowered load by load, LLVM's O3 found the conditions invariant in the
    inner loops and unswitched them (non-trivial loop unswitching), copying
    the row loop once per condition and vectorizing and unrolling every copy
    again: up to 0.6 s of O3 for one of DenseNet-121's fused
    `concat + batch norm + relu` kernels, 2.8 s of its 8.8 s of O3 in all.

    Here the chain selects addresses instead of values: each input's address
    without the terms every input shares (the same index with the same
    stride, `h`, `w`, `l` above), the same select tree over those addresses,
    then the shared terms and one load. The selected base depends on the
    outer loop variables only, so LICM hoists the whole chain out of the
    row loop and LLVM has nothing to unswitch; the inner loop reads one
    input per element, as the unswitched copies did. Every address of the
    chain is in bounds (the indices are clamped), and the element loaded is
    the one the select would have picked: the results are the same bytes.

    Only roots are rewritten (a select no other chain select uses); a load
    with other uses is kept for them.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.SelectOp, rewriter: PatternRewriter, /):
        if not _is_chain(op) or any(_is_chain(use.operation) for use in op.result.uses):
            return
        if not _nothing_written_before(op, list(_chain_ops(op.result))):
            return
        loads = list(_chain_loads(op.result))
        try:
            layouts = [_layout(load.buffer) for load in loads]
        except ValueError:
            return
        first = loads[0]
        if any(len(load.indices) != len(first.indices) for load in loads):
            return
        if len({_gep_unit(load.buffer) for load in loads}) != 1:
            return  # one address arithmetic for all: same units (a stack buffer's differ)
        shared = [
            d
            for d, index in enumerate(first.indices)
            if all(
                load.indices[d] is index and strides[d] == layouts[0][0][d]
                for load, (strides, _) in zip(loads, layouts, strict=True)
            )
        ]
        bases = {
            load: _offset_address(
                to_llvm(load.buffer, rewriter),
                [(index, strides[d]) for d, index in enumerate(load.indices) if d not in shared],
                offset,
                load.buffer,
                rewriter,
            )
            for load, (strides, offset) in zip(loads, layouts, strict=True)
        }

        def pick(value: SSAValue) -> SSAValue:
            owner = value.owner
            if isinstance(owner, loop.LoadOp):
                return bases[owner]
            assert isinstance(owner, arith.SelectOp)
            lhs, rhs = pick(owner.lhs), pick(owner.rhs)
            return rewriter.insert(quick(llvm.SelectOp, owner.cond, lhs, rhs)).res

        strides = layouts[0][0]
        address = _offset_address(
            pick(op.result),
            [(first.indices[d], strides[d]) for d in shared],
            0,
            first.buffer,
            rewriter,
        )
        ty = op.result.type
        load = rewriter.insert(aligned_load(address, convert_type(ty), element_size(ty)))
        chain = list(_chain_ops(op.result))
        replace_with(op, rewriter, load)
        for dead in reversed(chain):
            if dead is not op and not dead.results[0].uses:
                rewriter.erase(dead)


def _is_chain(op: Operation) -> bool:
    """A select of a float or integer (not index) between loads of loop
    buffers or such selects."""
    if not isinstance(op, arith.SelectOp) or isinstance(op.result.type, IndexType):
        return False
    return all(
        isinstance(side.owner, loop.LoadOp)
        or (isinstance(side.owner, Operation) and _is_chain(side.owner))
        for side in (op.lhs, op.rhs)
    )


def _chain_ops(value: SSAValue) -> Iterator[Operation]:
    """The selects and loads of a chain, each before the select that uses it."""
    owner = value.owner
    assert isinstance(owner, Operation)
    if isinstance(owner, arith.SelectOp):
        yield from _chain_ops(owner.lhs)
        yield from _chain_ops(owner.rhs)
    yield owner


def _nothing_written_before(root: Operation, chain: list[Operation]) -> bool:
    """Is every op of the chain in `root`'s block, with nothing between the first of
    them and `root` that may write memory? The chain's one load happens at `root`,
    so a store between a load and the select would otherwise be seen by it."""
    block = root.parent_block()
    pending = {o for o in chain if o is not root}
    if any(o.parent_block() is not block for o in pending):
        return False
    at = root.prev_op
    while pending and at is not None:
        if at in pending:
            pending.discard(at)
        elif at.regions or isinstance(
            at, loop.StoreOp | loop.CopyOp | loop.CallOp | loop.FreeOp | memrefd.StoreOp
        ):
            return False
        at = at.prev_op
    return not pending


def _chain_loads(value: SSAValue) -> Iterator[loop.LoadOp]:
    return (op for op in _chain_ops(value) if isinstance(op, loop.LoadOp))


def _access_error(op: Operation, err: ValueError):
    return op_error(op, f"cannot lower this access to LLVM: {err}")


class LoadLowering(RewritePattern):
    """`loop.load %buf[%i, %j]` / `memref.load` → `getelementptr` + aligned `llvm.load`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: loop.LoadOp | memrefd.LoadOp, rewriter: PatternRewriter, /):
        buffer = op.buffer if isinstance(op, loop.LoadOp) else op.memref
        try:
            address = _element_address(buffer, op.indices, rewriter)
        except ValueError as err:
            raise _access_error(op, err) from None
        ty = convert_type(op.results[0].type)
        load = aligned_load(address, ty, element_size(op.results[0].type))
        replace_with(op, rewriter, rewriter.insert(load))


class StoreLowering(RewritePattern):
    """`loop.store %v, %buf[%i, %j]` / `memref.store` → `getelementptr` + aligned `llvm.store`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: loop.StoreOp | memrefd.StoreOp, rewriter: PatternRewriter, /):
        buffer = op.buffer if isinstance(op, loop.StoreOp) else op.memref
        try:
            address = _element_address(buffer, op.indices, rewriter)
        except ValueError as err:
            raise _access_error(op, err) from None
        value = to_llvm(op.value, rewriter)
        rewriter.insert(aligned_store(value, address, element_size(op.value.type)))
        rewriter.erase(op)


class PrefetchLowering(RewritePattern):
    """`loop.prefetch %buf[%i, %j]` → `getelementptr` + `llvm.prefetch(ptr, read,
    locality, data)`: x86's `prefetcht0`/`prefetcht1`, which never faults."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: loop.PrefetchOp, rewriter: PatternRewriter, /):
        try:
            address = _element_address(op.buffer, op.indices, rewriter)
        except ValueError as err:
            raise _access_error(op, err) from None
        flags = [constant(v, i32, rewriter) for v in (0, op.locality, 1)]
        call_intrinsic(rewriter, "llvm.prefetch.p0", [address, *flags], None)
        rewriter.erase(op)


def _buffer_bytes(mtype: MemRefType) -> int:
    return math.prod(mtype.get_shape()) * element_size(mtype.element_type)


def _is_stack_alloc(op: Operation) -> bool:
    """A `loop.alloc` small enough and `local` enough to live on the stack."""
    return (
        isinstance(op, loop.AllocOp)
        and op.scope.data == "local"
        and _buffer_bytes(op.result.type) <= MAX_STACK_BYTES
    )


def _is_stack_buffer(value: SSAValue) -> bool:
    """Does `value` come from a stack allocation (lowered or not)?"""
    owner = value.owner
    if isinstance(owner, UnrealizedConversionCastOp):
        return isinstance(owner.inputs[0].owner, llvm.AllocaOp)
    return isinstance(owner, Operation) and _is_stack_alloc(owner)


class AllocLowering(RewritePattern):
    """`loop.alloc` / `memref.alloc` → `aligned_alloc(64, bytes)`; small `local` ones → `llvm.alloca`.

    The byte count is rounded up to a multiple of the alignment, as C11's
    `aligned_alloc` requires. A stack buffer is allocated once, in the
    function's entry block, so that a loop around it does not grow the stack.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: loop.AllocOp | memrefd.AllocOp, rewriter: PatternRewriter, /):
        mtype = op.results[0].type
        assert isinstance(mtype, MemRefType)
        if not mtype.has_static_shape():
            raise op_error(op, f"cannot allocate {mtype}: shapes must be static")
        if _is_stack_alloc(op):
            at = InsertPoint.at_start(entry_block(op))
            count = constant(math.prod(mtype.get_shape()), i64, rewriter, at)
            alloca = llvm.AllocaOp(count, convert_type(mtype.element_type), ALLOC_ALIGNMENT)
            rewriter.insert(alloca, InsertPoint.after(count.owner))
            replace_with(op, rewriter, alloca)
            return
        size = -(-max(_buffer_bytes(mtype), 1) // ALLOC_ALIGNMENT) * ALLOC_ALIGNMENT
        if isinstance(
            op, loop.AllocOp
        ):  # on its device's allocator (backends/llvm/device_runtime.py)
            slot = constant(device_slot(op, op.device), i64, rewriter)
            args = [slot, constant(size, i64, rewriter)]
            call = call_function(op, rewriter, ALLOC_SYMBOL, args, llvm.LLVMPointerType())
            call.attributes[ERROR_ATTR] = StringAttr(alloc_message(op, size))  # NULL → error
            replace_with(op, rewriter, call)
            return
        args = [constant(ALLOC_ALIGNMENT, i64, rewriter), constant(size, i64, rewriter)]
        call = call_function(op, rewriter, "aligned_alloc", args, llvm.LLVMPointerType())
        call.attributes[ERROR_ATTR] = StringAttr(alloc_message(op, size))  # NULL → error
        replace_with(op, rewriter, call)


class FreeLowering(RewritePattern):
    """`loop.free` / `memref.dealloc` → `free(ptr)`; nothing for a stack buffer."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: loop.FreeOp | memrefd.DeallocOp, rewriter: PatternRewriter, /):
        buffer = op.operands[0]
        if not _is_stack_buffer(buffer):
            name = FREE_SYMBOL if isinstance(op, loop.FreeOp) else "free"
            call_function(op, rewriter, name, [to_llvm(buffer, rewriter)], None)
        rewriter.erase(op)


class ReshapeLowering(RewritePattern):
    """`loop.reshape` → nothing: its result is the source's pointer (both row-major, contiguous)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: loop.ReshapeOp, rewriter: PatternRewriter, /):
        replace_with(op, rewriter, to_llvm(op.source, rewriter))


class CopyLowering(RewritePattern):
    """`loop.copy` / `memref.copy` → `llvm.memcpy` of the whole (contiguous) buffer.

    A copy between two different devices (`src` != `dst`) goes through the
    device runtime, which also counts the bytes copied to `dst`.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: loop.CopyOp | memrefd.CopyOp, rewriter: PatternRewriter, /):
        source, target = op.operands[0], op.operands[1]
        size = min(_buffer_bytes(source.type), _buffer_bytes(target.type))
        if isinstance(op, loop.CopyOp) and op.src is not None and op.dst not in (None, op.src):
            slots = [device_slot(op, op.dst), device_slot(op, op.src)]
            args = [constant(s, i64, rewriter) for s in slots]
            args += [to_llvm(target, rewriter), to_llvm(source, rewriter)]
            call_function(op, rewriter, COPY_SYMBOL, [*args, constant(size, i64, rewriter)], None)
            rewriter.erase(op)
            return
        args = [
            _plain_ptr(to_llvm(target, rewriter), rewriter),
            _plain_ptr(to_llvm(source, rewriter), rewriter),
            constant(size, i64, rewriter),
            constant(0, i1, rewriter),
        ]
        call_intrinsic(rewriter, "llvm.memcpy.p0.p0.i64", args, None)
        rewriter.erase(op)


def _plain_ptr(value: SSAValue, rewriter: PatternRewriter) -> SSAValue:
    """`value` through a ptr → ptr bitcast. The address of a constant global
    translates to a pointer typed by the global's array type, and the memcpy
    intrinsic is declared once, with its first call's argument types: two
    copies from constants of different shapes would not agree. LLVM folds it."""
    return rewriter.insert(llvm.BitcastOp(value, llvm.LLVMPointerType())).results[0]


class UndefLowering(RewritePattern):
    """`loop.undef` → `llvm.mlir.undef` (any value; `simplify` usually removed its stores)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: loop.UndefOp, rewriter: PatternRewriter, /):
        replace_with(op, rewriter, rewriter.insert(llvm.UndefOp(convert_type(op.result.type))))


class AssumeLowering(RewritePattern):
    """`loop.assume %c` → `llvm.assume(%c)`, so LLVM may rely on it too."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: loop.AssumeOp, rewriter: PatternRewriter, /):
        call_intrinsic(rewriter, "llvm.assume", [to_llvm(op.cond, rewriter)], None)
        rewriter.erase(op)


# ---------------------------------------------------------------------------
# Functions and calls
# ---------------------------------------------------------------------------


def _function_type(op: Operation, inputs: Sequence[Attribute], outputs: Sequence[Attribute]):
    if len(outputs) > 1:
        raise op_error(
            op, f"cannot lower a function with {len(outputs)} results to LLVM (at most 1)"
        )
    output = convert_type(outputs[0]) if outputs else llvm.LLVMVoidType()
    return llvm.LLVMFunctionType([convert_type(t) for t in inputs], output)


def _arg_attrs(inputs: Sequence[Attribute]) -> ArrayAttr[DictionaryAttr]:
    """`{llvm.noalias, lamina.buffer = <memref>}` for buffers, `{}` for scalars."""
    entries = []
    for ty in inputs:
        if isinstance(ty, MemRefType):
            entries.append(DictionaryAttr({"llvm.noalias": UnitAttr(), BUFFER_ATTR: ty}))
        else:
            entries.append(DictionaryAttr({}))
    return ArrayAttr(entries)


class FuncLowering(RewritePattern):
    """`loop.func` → `llvm.func` with the converted signature (see the module docstring's ABI).

    The body moves over unchanged; each entry-block argument gets its llvm
    type and is cast back for the (not yet lowered) ops that use it. A
    function the compiler created itself (`lamina.internal`, e.g. an
    outlined parallel loop body) and every `private` function (kernels made by
    legalize/lower-te) get internal linkage: only host functions are exported.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: loop.FuncOp, rewriter: PatternRewriter, /):
        inputs, outputs = op.function_type.inputs.data, op.function_type.outputs.data
        fn_type = _function_type(op, inputs, outputs)
        body = rewriter.move_region_contents_to_new_regions(op.body)
        private = op.sym_visibility is not None and op.sym_visibility.data == "private"
        internal = (INTERNAL_ATTR in op.attributes or private) and bool(body.blocks)
        new = llvm.FuncOp(
            op.sym_name.data,
            fn_type,
            linkage=llvm.LinkageAttr("internal" if internal else "external"),
            body=body,
            other_props={"arg_attrs": _arg_attrs(inputs)} if inputs else None,
        )
        if RESULTS_ATTR in op.attributes:  # an entry point: keep its results count
            new.attributes[RESULTS_ATTR] = op.attributes[RESULTS_ATTR]
        if KNOBS_ATTR in op.attributes:  # the kernel's own knobs, for its loops' hints
            new.attributes[KNOBS_ATTR] = op.attributes[KNOBS_ATTR]
        if body.blocks:
            _retype_block_args(body.blocks[0], rewriter)
        rewriter.replace(op, new)


def _retype_block_args(block: Block, rewriter: PatternRewriter) -> None:
    """Give every argument of `block` its llvm type; old uses see a cast of the new argument."""
    for index, arg in enumerate(list(block.args)):
        target = convert_type(arg.type)
        if target == arg.type:
            continue
        new_arg = rewriter.insert_block_argument(block, index, target)
        new_arg.name_hint = arg.name_hint
        cast = UnrealizedConversionCastOp.create(operands=[new_arg], result_types=[arg.type])
        rewriter.insert(cast, InsertPoint.at_start(block))
        rewriter.replace_all_uses_with(arg, cast.results[0])
        rewriter.erase_block_argument(arg)


class ReturnLowering(RewritePattern):
    """`loop.return [%v]` → `llvm.return [%v]`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: loop.ReturnOp, rewriter: PatternRewriter, /):
        values = [to_llvm(v, rewriter) for v in op.operands]
        if len(values) > 1:
            raise op_error(op, f"cannot return {len(values)} values from an llvm.func")
        rewriter.replace(op, llvm.ReturnOp(values[0] if values else None))


class CallLowering(RewritePattern):
    """`loop.call @f(args)` → `llvm.call @f(args)`; an external `@f` is declared in the module."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: loop.CallOp, rewriter: PatternRewriter, /):
        name = op.callee.root_reference.data
        fn_type = _function_type(op, op.arguments.types, op.res.types)
        declare_function(op, rewriter, name, fn_type.inputs.data, fn_type.output)
        args = [to_llvm(v, rewriter) for v in op.arguments]
        result = None if isinstance(fn_type.output, llvm.LLVMVoidType) else fn_type.output
        call = rewriter.insert(quick(llvm.CallOp, name, *args, return_type=result))
        replace_with(op, rewriter, call if result is not None else None)


# ---------------------------------------------------------------------------
# Structured control flow
# ---------------------------------------------------------------------------


def _lower_yields(
    region_blocks: Sequence[Block],
    rewriter: PatternRewriter,
    make_branch: Callable[[list[SSAValue], InsertPoint], Operation],
) -> None:
    """Replace each `loop.yield` terminating one of `region_blocks` by `make_branch(values)`."""
    for block in region_blocks:
        term = block.last_op
        if not isinstance(term, loop.YieldOp):
            continue
        at = InsertPoint.before(term)
        values = [to_llvm(v, rewriter, at) for v in term.operands]
        rewriter.insert(make_branch(values, at), at)
        rewriter.erase(term)


def _hint_kind(op: loop.ForOp) -> str:
    """The loop kind codegen sees: `vectorized` loops of a constant trip count in
    whole vectors are told apart from those with a remainder (`vectorized-tail`),
    which LLVM may still unroll and vectorize its own way (a padded row's
    clamped border reads would become gathers, backends/codegen.py). Whole
    vectors: a multiple of the `whole_vector_lanes` knob (target/schedule_knobs.py).
    A constant trip count below one whole vector is `vectorized-short`: not
    unrolled (LLVM unrolled such a loop and the constant loops around it into
    one block of thousands of scalar copies, seconds of SLP vectorizer and
    instruction scheduling; docs/compile-speed.md)."""
    kind = op.kind.data
    if kind != LoopKind.VECTORIZED:
        return kind.value
    bounds = [_constant_index(v) for v in (op.lb, op.ub, op.step)]
    if None in bounds:
        return "vectorized-tail"
    lb, ub, step = bounds
    trips = max(0, -(-(ub - lb) // step))
    whole = op_knobs(op).whole_vector_lanes
    if 0 < trips < whole:
        return "vectorized-short"
    return "vectorized" if trips % whole == 0 else "vectorized-tail"


def _constant_index(value: SSAValue) -> int | None:
    """The value of an index constant, before or after its own lowering."""
    owner = _look_through(value).owner
    if type(owner) in _CONSTANT_OPS:  # a class comparison: see _look_through
        assert isinstance(owner, arith.ConstantOp | llvm.ConstantOp)  # for the type checker
        if isinstance(owner.value, IntegerAttr):
            return owner.value.value.data
    return None


_CONSTANT_OPS = (arith.ConstantOp, llvm.ConstantOp)
"""The constant ops' classes (neither has a subclass): `_constant_index` compares classes."""


class ForLowering(RewritePattern):
    """`loop.for` → a header block with the induction variable and iter_args as block arguments.

    Every kind lowers to this loop (`parallel` ones reach here only as
    reductions, see `ParallelForLowering`). For `vectorized` and `unrolled`
    the back edge carries `lamina.loop_kind`, which codegen turns into
    `llvm.loop.vectorize.enable` (forced vectorization, which also lets LLVM
    reorder a floating-point reduction across lanes; a loop whose trip count
    is not known to be whole vectors is marked `vectorized-tail`, see
    `_hint_kind`) or `llvm.loop.unroll.full` metadata::

        ^pre:     ...ops before the loop...
                  llvm.br ^header(%lb, %init...)
                      │
                      ▼
        ^header(%iv: i64, %acc...):  ◀──────────────┐
                  %c = llvm.icmp "slt" %iv, %ub      │
                  llvm.cond_br %c, ^body, ^exit      │
                      │            │                 │
                      ▼            │                 │
        ^body:    ...loop body (any number of blocks)│
                  %next = llvm.add %iv, %step        │
                  llvm.br ^header(%next, %yield...) ─┘
                                   │
                                   ▼
        ^exit:    ...ops after the loop; the loop's results are the
                  header's iter_args (the header dominates the exit)

    Blocks are placed in this order, which is also a dominance order.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: loop.ForOp, rewriter: PatternRewriter, /):
        pre = op.parent_block()
        if pre is None:
            return
        kind = _hint_kind(op)
        before = InsertPoint.before(op)
        lb, ub, step = (to_llvm(v, rewriter, before) for v in (op.lb, op.ub, op.step))
        inits = [to_llvm(v, rewriter, before) for v in op.iter_args]
        result_types = list(op.res.types)

        exit_block = pre.split_before(op)
        body_first = op.body.blocks[0]
        header = Block(arg_types=[i64, *(convert_type(t) for t in result_types)])
        iv, *carried = header.args
        for new, old in zip(header.args, body_first.args, strict=True):
            new.name_hint = old.name_hint
        # Body block arguments become casts of the header's arguments.
        for old, new in zip(body_first.args, header.args, strict=True):
            rewriter.replace_all_uses_with(
                old, from_llvm(new, old.type, rewriter, InsertPoint.at_end(header))
            )
        for arg in reversed(body_first.args):
            rewriter.erase_block_argument(arg)
        body_blocks = list(op.body.blocks)

        def latch(values: list[SSAValue], at: InsertPoint) -> Operation:
            nxt = rewriter.insert(nsw_binop(llvm.AddOp, iv, step), at).res
            back_edge = branch(header, [nxt, *values])
            if kind in LOOP_HINT_KINDS:
                back_edge.attributes[LOOP_KIND_ATTR] = StringAttr(kind)
            return back_edge

        _lower_yields(body_blocks, rewriter, latch)
        rewriter.inline_region(op.body, BlockInsertPoint.before(exit_block))
        Rewriter.insert_block(header, BlockInsertPoint.before(body_first))

        cond = _icmp_at(rewriter, "slt", iv, ub, InsertPoint.at_end(header))
        rewriter.insert(cond_branch(cond, body_first, exit_block), InsertPoint.at_end(header))
        rewriter.insert(branch(header, [lb, *inits]), InsertPoint.at_end(pre))

        at_exit = InsertPoint.at_start(exit_block)
        results = [
            from_llvm(v, t, rewriter, at_exit) for v, t in zip(carried, result_types, strict=True)
        ]
        rewriter.replace(op, [], results)


def _icmp_at(rewriter: PatternRewriter, pred: str, lhs: SSAValue, rhs: SSAValue, at: InsertPoint):
    flag = llvm.ICmpPredicateFlag(pred)
    return rewriter.insert(quick(llvm.ICmpOp, lhs, rhs, integer_attr(flag.to_int(), i64)), at).res


class IfLowering(RewritePattern):
    """`loop.if` → `llvm.cond_br` to the then/else blocks, which branch to a merge block::

    ^pre:   ...ops before...
            llvm.cond_br %c, ^then, ^else        (^else = ^merge without else region)
             │                │
             ▼                ▼
    ^then:  ...         ^else:  ...
            llvm.br ^merge(%t...)   llvm.br ^merge(%e...)
             │                │
             ▼                ▼
    ^merge(%r...):  ...ops after; the if's results are the block arguments
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: loop.IfOp, rewriter: PatternRewriter, /):
        pre = op.parent_block()
        if pre is None:
            return
        cond = to_llvm(op.cond, rewriter, InsertPoint.before(op))
        result_types = list(op.output.types)
        merge = pre.split_before(op)
        for index, ty in enumerate(result_types):
            rewriter.insert_block_argument(merge, index, convert_type(ty))

        def to_merge(values: list[SSAValue], at: InsertPoint) -> Operation:
            return branch(merge, values)

        targets = []
        for region in (op.then_region, op.else_region):
            if not region.blocks:
                targets.append(merge)
                continue
            targets.append(region.blocks[0])
            _lower_yields(list(region.blocks), rewriter, to_merge)
            rewriter.inline_region(region, BlockInsertPoint.before(merge))
        rewriter.insert(cond_branch(cond, targets[0], targets[1]), InsertPoint.at_end(pre))
        at_merge = InsertPoint.before(op)
        results = [
            from_llvm(v, t, rewriter, at_merge)
            for v, t in zip(merge.args, result_types, strict=True)
        ]
        rewriter.replace(op, [], results)


# ---------------------------------------------------------------------------
# Casts and block order
# ---------------------------------------------------------------------------


class UnrealizedCastFolding(RewritePattern):
    """`cast(cast(%x : A → B) : B → A)` → `%x`; unused casts disappear."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: UnrealizedConversionCastOp, rewriter: PatternRewriter, /):
        if not op.results[0].uses:
            rewriter.erase(op)
            return
        producer = op.inputs[0].owner
        if (
            isinstance(producer, UnrealizedConversionCastOp)
            and producer.inputs[0].type == op.results[0].type
        ):
            rewriter.replace(op, [], [producer.inputs[0]])


def _op_types(pattern: RewritePattern) -> tuple[type[Operation], ...]:
    """The op classes `pattern` matches: its `source`, or its `op_type_rewrite_pattern` type.

    () means unknown, and the pattern is tried on every op.
    """
    source = getattr(pattern, "source", None)
    if source is not None:
        return (source,)
    for cell in type(pattern).match_and_rewrite.__closure__ or ():
        value = cell.cell_contents
        if isinstance(value, type) and issubclass(value, Operation):
            return (value,)
        if get_origin(value) in (Union, UnionType):
            return get_args(value)
    return ()


class TypeDispatch(RewritePattern):
    """Try only the patterns written for the op's class (in list order).

    With ~100 patterns, asking each one about every op took most of the
    pass's time; the candidates per op class are computed once.
    """

    def __init__(self, patterns: Sequence[RewritePattern]):
        self.patterns = [(p, _op_types(p)) for p in patterns]
        self.by_type: dict[type[Operation], list[RewritePattern]] = {}

    def candidates(self, op_type: type[Operation]) -> list[RewritePattern]:
        if op_type not in self.by_type:
            self.by_type[op_type] = [
                p for p, types in self.patterns if not types or issubclass(op_type, types)
            ]
        return self.by_type[op_type]

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        for pattern in self.candidates(type(op)):
            pattern.match_and_rewrite(op, rewriter)
            if rewriter.has_done_action:
                return


@dataclass(eq=False, repr=False)
class _LoweringWalker(PatternRewriteWalker):
    """xDSL's greedy walker, with its worklist, its order and its results, that does
    not call the patterns on an op they would leave alone.

    Most ops the walker pops are llvm ops the patterns have just built (DenseNet-121:
    225,000 pops for 41,000 source ops): for each, xDSL reset its rewriter (a new
    insertion point), and the locating, dead-code and type-dispatch layers were
    each called to do nothing. An op of a class `dispatch` has no pattern for,
    and that is not trivially dead, is now skipped; a walk that would skip every
    op is not made (the last walk only confirmed there was nothing left to do).
    Which ops are rewritten, in which order, with which rewriter state, is
    unchanged: the same IR.
    """

    dispatch: TypeDispatch | None = None

    def _idle(self, op: Operation) -> bool:
        """Would the patterns leave `op` as it is? (Only for ops with a parent block.)"""
        assert self.dispatch is not None
        return not self.dispatch.candidates(type(op)) and not is_trivially_dead(op)

    def rewrite_region(self, region: Region) -> bool:
        pattern_listener = self._get_rewriter_listener()
        result = False
        while True:
            self._populate_worklist(region)
            modified = self._process_worklist(pattern_listener)
            result |= modified
            if not self.apply_recursively or not modified:
                return result
            if all(self._idle(op) for op in region.walk()):
                return result

    def _process_worklist(self, listener: PatternRewriterListener) -> bool:
        worklist = self._worklist
        done = False
        if not worklist:
            return done
        op = worklist.pop()
        rewriter = PatternRewriter(op)
        rewriter.extend_from_listener(listener)
        while True:
            block = op.parent_block()
            if block is None or not self._idle(op):
                rewriter.has_done_action = False
                rewriter._current_operation = op  # pyright: ignore[reportPrivateUsage]
                rewriter.insertion_point = InsertPoint.before(op)
                rewriter.name_hint = None
                try:
                    self.pattern.match_and_rewrite(op, rewriter)
                except Exception as err:  # as xDSL's walker: reported at the op
                    op.emit_error(f"Error while applying pattern: {err}", underlying_error=err)
                done |= rewriter.has_done_action
            if not worklist:
                return done
            op = worklist.pop()


def order_blocks(func: llvm.FuncOp) -> None:
    """Sort `func`'s blocks in reverse post-order (xDSL's translator needs defs before uses)."""
    region: Region = func.body
    if len(region.blocks) < 2:
        return
    entry = region.blocks[0]
    seen: set[Block] = set()
    postorder: list[Block] = []
    stack: list[tuple[Block, int]] = [(entry, 0)]
    seen.add(entry)
    while stack:
        block, i = stack.pop()
        # Successors in reverse, so that a loop body comes before the loop exit.
        succs = list(reversed(block.last_op.successors)) if block.last_op else []
        if i < len(succs):
            stack.append((block, i + 1))
            nxt = succs[i]
            if nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, 0))
        else:
            postorder.append(block)
    order = list(reversed(postorder)) + [b for b in region.blocks if b not in seen]
    if order == list(region.blocks):
        return
    for block in order:
        region.detach_block(block)
    region.add_block(order)


# ---------------------------------------------------------------------------
# The pass
# ---------------------------------------------------------------------------

LOOP_PATTERNS: tuple[type[RewritePattern], ...] = (
    FuncLowering, ReturnLowering, CallLowering, ForLowering, IfLowering,
    LoadLowering, StoreLowering, AllocLowering, FreeLowering, CopyLowering, ReshapeLowering,
    UndefLowering, AssumeLowering, PrefetchLowering, UnrealizedCastFolding,
)  # fmt: skip


@dataclass(frozen=True)
class LowerToLLVMPass(LaminaPass):
    """Lower loop functions with arith/math scalar code to the llvm dialect (enters phase build).

    Input invariant: phase `lowering`; every function is a `loop.func` over
    statically shaped memrefs (host buffers) and scalars, its body made of
    `loop`, `arith` and `math` ops (`memref.load/store/alloc/dealloc/copy`
    are accepted too).

    Output IR: only `builtin.module`, `llvm.func` and other `llvm.*` ops.
    Buffers are `!llvm.ptr {llvm.noalias}` parameters pointing at the first
    element of a row-major contiguous array, index is i64, loops are
    header/body/latch CFGs with block arguments, heap buffers come from
    `aligned_alloc(64, n)` / `free`, transcendental functions without an
    LLVM intrinsic call libm. A `parallel` loop (without iter_args) is
    outlined into an internal function run by OpenMP's `GOMP_parallel`;
    `vectorized` / `unrolled` loops mark their back edge for codegen.

    Invariants: blocks of every function are in reverse post-order; no
    `builtin.unrealized_conversion_cast` survives; an op that cannot be
    lowered is reported at the op.
    """

    name = "lower-to-llvm"

    phases: ClassVar[frozenset[Phase]] = frozenset({Phase.LOWERING})
    produces: ClassVar[Phase | None] = Phase.BUILD
    illegal_ops: ClassVar[tuple[str, ...]] = (
        "loop.*", "arith.*", "math.*", "memref.*", "graph.*", "te.*",
        "builtin.unrealized_conversion_cast", "func.*", "scf.*", "cf.*",
    )  # fmt: skip

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        check_usable_devices(op)  # host code for a device no target compiles would be wrong
        # Before the loads are lowered one by one: a chain is rewritten whole.
        try:
            chains = SelectChainLowering()
            locating_walker(
                chains, _LoweringWalker, apply_recursively=False, dispatch=TypeDispatch([chains])
            ).rewrite_module(op)
            _clamps_as_selects(op)
            _addresses.reset()
            # ParallelForLowering must see a parallel loop before ForLowering does.
            # The outlined functions' names: a set this run owns, told of every op
            # the rewriter inserts (core/symbols.py, `SymbolNames`).
            names = SymbolNames(op)
            patterns = [ParallelForLowering(names)]
            patterns += [p() for p in LOOP_PATTERNS]
            patterns += scalar_patterns()
            dispatch = TypeDispatch(patterns)
            locating_walker(
                GreedyApplier([dispatch]),
                _LoweringWalker,
                on_insert=(names.observe,),
                apply_recursively=True,
                dispatch=dispatch,
            ).rewrite_module(op)
        finally:
            _addresses.reset()  # holds no IR after the pass
        self.check_legality(op)
        _emit_batch_entries(op)
        insert_error_exits(op)
        for func in op.ops:
            if isinstance(func, llvm.FuncOp):
                order_blocks(func)
        set_phase(op, Phase.BUILD)


def _clamp_constant(value: SSAValue) -> arith.ConstantOp | None:
    """The float constant (not NaN) that `value` is, or None."""
    owner = value.owner
    if not isinstance(owner, arith.ConstantOp) or not isinstance(owner.value, FloatAttr):
        return None
    return None if math.isnan(owner.value.value.data) else owner


_CLAMP_OPS = (arith.MaximumfOp, arith.MinimumfOp)
"""The float clamps' classes (neither has a subclass)."""


def _clamps_as_selects(module: ModuleOp) -> int:
    """Float `maximumf` / `minimumf` as selects x86 codegen makes `maxps` / `minps`
    of; returns how many were rewritten.

    LLVM lowers `llvm.maximum` on x86 as `maxps` plus a NaN check and, for
    the order of -0 and +0, two `blendvps` on the sign: five vector ops per
    max of two variables (a max pool's window), three when one operand is a
    constant (relu). `maxps(a, b)` is `a > b ? a : b` (`b` when either is
    NaN), so:

    - by a constant `c` that is not NaN (relu, relu6, hardswish's clamp):
      `select(c > x, c, x)`, one `maxps`, and a NaN `x` still comes through;
    - of two variables `acc`, `x` (a reduction's accumulator first, as
      `lower-te` combines): `t = select(x > acc, x, acc)` (one `maxps`,
      `acc` when either is NaN) and `select(x != x, x, t)`: three ops, the
      NaN check of `x` off the accumulator's dependence chain; with
      `fastmath<nnan>` (the kernel checks NaN itself, `kernels/nn.py`,
      `_max_pool_taps`) the first select alone, one `maxps`.

    Both still propagate NaN; they differ from `maximumf` only in the sign of
    a zero result (max(-0.0, 0.0) may be -0.0, equal as a number). Runs after
    `SelectChainLowering`, which would read these selects of two loads as a
    choice between addresses. A fold along a long innermost loop stays
    `llvm.maximum` (`_vectorizable_fold`).
    """
    rewritten = 0
    for op in preorder(module):
        # a class comparison, as `_look_through` compares
        if type(op) not in _CLAMP_OPS or _vectorizable_fold(op):
            continue
        beyond = "ogt" if isinstance(op, arith.MaximumfOp) else "olt"
        constant, x = _clamp_constant(op.rhs), op.lhs
        if constant is None:
            constant, x = _clamp_constant(op.lhs), op.rhs
        if constant is not None:
            outside = arith.CmpfOp(constant.result, x, beyond)
            Rewriter.replace_op(op, [outside, arith.SelectOp(outside, constant.result, x)])
        else:
            acc, x = op.lhs, op.rhs
            wins = arith.CmpfOp(x, acc, beyond)
            best = arith.SelectOp(wins, x, acc)
            if "nnan" in op.fastmath.data:  # NaN checked by the kernel (a max pool's window)
                Rewriter.replace_op(op, [wins, best])
            else:
                nan = arith.CmpfOp(x, x, "uno")
                Rewriter.replace_op(op, [wins, best, nan, arith.SelectOp(nan, x, best)])
        rewritten += 1
    return rewritten


_FOLD_MIN_TRIPS = 8
"""Steps of an innermost loop from which its max fold is left to LLVM's loop vectorizer."""


def _vectorizable_fold(op: arith.MaximumfOp | arith.MinimumfOp) -> bool:
    """Whether `op` folds into the accumulator of an innermost serial loop of at
    least `_FOLD_MIN_TRIPS` steps that no vectorized loop encloses (a softmax's
    row max, a `reduce_max` along the contiguous axis).

    LLVM's loop vectorizer reads such a fold of `llvm.maximum` as a max
    reduction (partial maxima in vector lanes, combined after the loop); the
    select form is no reduction it knows, so it stayed a scalar chain of
    compare, mask or, masked move per element, about 5 cycles each (the
    transformer encoder's softmax, 8x128 rows of 128: 260 us, of which the
    row maxima ~170). A max pool's window (a few taps, inside the vectorized
    channel loop) keeps the select form.
    """
    acc = op.lhs
    if not isinstance(acc, BlockArgument) or acc.index == 0:
        return False
    body = acc.owner
    loop_op = body.parent_op() if isinstance(body, Block) else None
    if not isinstance(loop_op, loop.ForOp) or loop_op.kind.data != LoopKind.SERIAL:
        return False
    if any(isinstance(inner, loop.ForOp) for inner in loop_op.body.walk()):
        return False
    trips = static_trip_count(loop_op)
    if trips is None or trips < _FOLD_MIN_TRIPS:
        return False
    outer = loop_op.parent_op()
    while outer is not None:
        if isinstance(outer, loop.ForOp) and outer.kind.data == LoopKind.VECTORIZED:
            return False
        outer = outer.parent_op()
    return True


def _emit_batch_entries(module: ModuleOp) -> None:
    """The entry of each dynamic-batch function: a loop over its static bodies
    (`specialize-batch`; backends/llvm/batch_entries.py)."""
    functions = {f.sym_name.data: f for f in module.ops if isinstance(f, llvm.FuncOp)}
    for entry in batch_entries(module).values():
        if entry.name in functions:  # emitted already (the module was lowered before)
            continue
        tail = functions.get(entry.bodies[-1][1])
        if tail is None or not tail.body.blocks:
            raise op_error(
                module, f"dynamic entry @{entry.name}: its body @{entry.bodies[-1][1]} is missing"
            )
        emit_wrapper(module, entry, tail)


__all__ = ["LowerToLLVMPass", "convert_type", "order_blocks", "BUFFER_ATTR"]
