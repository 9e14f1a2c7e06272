"""`concat-in-place`: the kernels producing a concatenation's inputs write straight into its output.

A host function (after `lower-graph`) that concatenates buffers only kernels
wrote for it::

    %a = loop.alloc : memref<1x4x55x55x16xf32>
    loop.call @conv_a(%x, %wa, %a)
    %b = loop.alloc : memref<1x4x55x55x16xf32>
    loop.call @conv_b(%x, %wb, %b)
    %y = loop.alloc : memref<1x8x55x55x16xf32>
    loop.call @te_concat_1x8x55x55x16xf32_loop(%a, %b, %y) {lamina.concatenation}
    loop.free %a ...

becomes::

    %y = loop.alloc : memref<1x8x55x55x16xf32>
    %p = builtin.unrealized_conversion_cast %y : memref<1x8x55x55x16xf32> to !llvm.ptr
    %a = builtin.unrealized_conversion_cast %p : !llvm.ptr to memref<1x4x55x55x16xf32>
    loop.call @conv_a(%x, %wa, %a)
    %q = llvm.getelementptr inbounds %p[193600] : (!llvm.ptr) -> !llvm.ptr, f32
    %b = builtin.unrealized_conversion_cast %q : !llvm.ptr to memref<1x4x55x55x16xf32>
    loop.call @conv_b(%x, %wb, %b)

Each input is a contiguous range of the output when every dimension before
the concatenated one has extent 1 (batch 1: SqueezeNet's fire modules and
GoogLeNet's inception blocks, channels or whole 16-channel blocks), so the
producers are called on a view of their slice: the kernels are the same
code (kernel reuse and the forked lowering see nothing new), only the host
passes another address, and the copy (a pass over every byte at memory
speed) and the inputs' buffers are gone.

Conditions, each checked in the host's straight-line block: the call is
marked `lamina.concatenation` (what `legalize` puts on the call of a plain
`graph.concat`'s kernel; the kernel's name is not trusted); the output buffer has no padding (its layout's logical
shape fills it; then the inputs, whose physical extents add up to the
output's, have none either and each one's channels are whole blocks);
every input is a distinct buffer of this block's `loop.alloc`s, written by
the nearest call before the concatenation that uses it (as its last
operand: a destination) and read by nothing but the concatenation (its
next use after it is its `loop.free`, or a call or copy writing it anew);
the output buffer is not used between the first producer and the
concatenation. The knob `concat_in_place` (default 1) turns the pass off
(`--target 'cpu{concat_in_place=0}'`).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import llvm
from xdsl.dialects.builtin import (
    DenseArrayBase,
    MemRefType,
    ModuleOp,
    UnrealizedConversionCastOp,
)
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from lamina.core.pass_base import LaminaPass
from lamina.dialects import graph, loop
from lamina.dialects.lamina import (
    CONCATENATION_ATTR_NAME,
    CONSTRAINT_ATTR_NAME,
    ConstraintAttr,
    Phase,
)
from lamina.target.registry import module_knobs


def is_concatenation(call: Operation) -> bool:
    """Is `call` a call of a plain concatenation kernel (`legalize` marks those)?"""
    return CONCATENATION_ATTR_NAME in call.attributes


def concat_in_place(module: ModuleOp) -> int:
    """Rewrite every concatenation of the module docstring; returns how many."""
    funcs = {f.sym_name.data: f for f in module.ops if isinstance(f, loop.FuncOp)}
    replaced: set[str] = set()
    done = 0
    for func in list(funcs.values()):
        if func.is_declaration:
            continue
        block = func.body.block
        for call in [o for o in block.ops if isinstance(o, loop.CallOp)]:
            callee = call.callee.root_reference.data
            if _rewrite(call, block, funcs):
                replaced.add(callee)
                done += 1
    if replaced:
        called = {o.callee.root_reference.data for o in module.walk() if isinstance(o, loop.CallOp)}
        for name in replaced - called:
            # A kernel no one calls any more; a declaration (reused, or lowered by the
            # forked process) stays: its object code is another compile's business.
            if not funcs[name].is_declaration:
                funcs[name].detach()
                funcs[name].erase()
    return done


def keeps_own_buffer(op: Operation) -> bool:
    """Does `plan-memory` leave this graph op's result out of its storage slots?

    A concatenation (a `graph.call_loop` marked `lamina.concatenation`) whose every
    input is the only use of a `graph.call_loop` result may be computed in
    place: its producers then write its buffer before the concatenation's own
    position, where a slot shared with an earlier value (the block's input,
    which the producers read: GoogLeNet's inception blocks of equal width)
    would still be live. Such a concatenation gets a buffer of its own."""
    if not isinstance(op, graph.CallLoopOp):
        return False
    if not is_concatenation(op) or len(op.results) != 1:
        return False
    return all(
        isinstance(v.owner, graph.CallLoopOp) and v.has_one_use() for v in op.arguments
    ) and len(set(op.arguments)) == len(op.arguments)


def _kernel(call: loop.CallOp, funcs: dict[str, loop.FuncOp]) -> loop.FuncOp | None:
    """The callee of `call` when it is a destination-passing kernel of the module."""
    func = funcs.get(call.callee.root_reference.data)
    if func is None or call.res or func.function_type.outputs.data:
        return None
    return func


def _concat_axis(inputs: list[MemRefType], out: MemRefType) -> int | None:
    """The dimension the inputs are concatenated along, when each is a contiguous
    range of `out`: all other dimensions equal, the extents along it adding up to
    `out`'s, every dimension before it of extent 1."""
    shape = list(out.get_shape())
    for axis in range(len(shape)):
        if any(d != 1 for d in shape[:axis]):
            return None
        ok = True
        for kind in inputs:
            dims = list(kind.get_shape())
            if (
                kind.element_type != out.element_type
                or len(dims) != len(shape)
                or dims[:axis] + dims[axis + 1 :] != shape[:axis] + shape[axis + 1 :]
            ):
                ok = False
                break
        if ok and sum(k.get_shape()[axis] for k in inputs) == shape[axis]:
            return axis
    return None


def _padded(buffer: SSAValue, concat: loop.CallOp, funcs: dict[str, loop.FuncOp]) -> bool:
    """Might the concatenation's output hold padding (slots outside its logical shape)?"""
    constraint = None
    if isinstance(buffer.owner, loop.AllocOp):
        constraint = buffer.owner.constraint
    if constraint is None:
        callee = funcs[concat.callee.root_reference.data]
        attr = callee.arg_attr(len(concat.arguments) - 1, CONSTRAINT_ATTR_NAME)
        constraint = attr if isinstance(attr, ConstraintAttr) else None
    if constraint is None:
        return False  # plain row-major: the logical shape is the buffer's
    if not isinstance(constraint.logical, DenseArrayBase):
        return True  # not recorded: assume the worst
    mtype = buffer.type
    assert isinstance(mtype, MemRefType)
    return prod(constraint.logical.get_values()) != prod(mtype.get_shape())


def _uses_in_order(buffer: SSAValue, block: Block) -> list[Operation]:
    """The top-level ops of `block` using `buffer`, in block order."""
    users = {use.operation for use in buffer.uses}
    return [op for op in block.ops if op in users]


def _producer(buffer: SSAValue, concat: loop.CallOp, block: Block, funcs) -> loop.CallOp | None:
    """The call writing `buffer` for `concat` alone, or None."""
    if not isinstance(buffer.owner, loop.AllocOp) or buffer.owner.parent_block() is not block:
        return None
    users = _uses_in_order(buffer, block)
    at = users.index(concat)
    if at == 0 or sum(1 for v in concat.arguments if v is buffer) != 1:
        return None
    producer = users[at - 1]
    if (
        not isinstance(producer, loop.CallOp)
        or _kernel(producer, funcs) is None
        or producer.arguments[-1] is not buffer
        or sum(1 for v in producer.arguments if v is buffer) != 1
        or producer.attributes.get("device") != concat.attributes.get("device")
    ):
        return None
    for later in users[at + 1 :]:  # the value dies at the concatenation
        if isinstance(later, loop.FreeOp):
            break
        if isinstance(later, loop.CopyOp) and later.target is buffer and later.source is not buffer:
            break
        if (
            isinstance(later, loop.CallOp)
            and _kernel(later, funcs) is not None
            and later.arguments[-1] is buffer
            and sum(1 for v in later.arguments if v is buffer) == 1
        ):
            break
        return None
    return producer


def _rewrite(concat: loop.CallOp, block: Block, funcs: dict[str, loop.FuncOp]) -> bool:
    if not is_concatenation(concat):
        return False
    if _kernel(concat, funcs) is None or len(concat.arguments) < 3:
        return False
    *inputs, out = concat.arguments
    if len(set(inputs)) != len(inputs) or out in inputs:
        return False
    out_type = out.type
    kinds = [v.type for v in inputs]
    if not isinstance(out_type, MemRefType) or not all(isinstance(k, MemRefType) for k in kinds):
        return False
    axis = _concat_axis(kinds, out_type)  # pyright: ignore[reportArgumentType]
    if axis is None or _padded(out, concat, funcs):
        return False
    producers = [_producer(v, concat, block, funcs) for v in inputs]
    if any(p is None for p in producers):
        return False
    order = {op: n for n, op in enumerate(block.ops)}
    first = min(producers, key=lambda p: order[p])  # pyright: ignore[reportArgumentType, reportCallIssue]
    assert first is not None
    # The output buffer: defined before the first producer, unused from there on
    # until the concatenation (an earlier value in it is dead by then).
    if any(order[first] <= order[op] < order[concat] for op in _uses_in_order(out, block)):
        return False
    if isinstance(out, BlockArgument):
        if out.block is not block:
            return False
    elif isinstance(out.owner, loop.AllocOp) and out.owner.parent_block() is block:
        if order[out.owner] > order[first]:
            out.owner.detach()
            Rewriter.insert_op(out.owner, InsertPoint.before(first))
    else:
        return False

    base = UnrealizedConversionCastOp.get([out], [llvm.LLVMPointerType()])
    Rewriter.insert_op(base, InsertPoint.before(first))
    element = out_type.element_type
    row = prod(out_type.get_shape()[axis + 1 :])
    offset = 0
    for value, producer in zip(inputs, producers, strict=True):
        assert producer is not None and isinstance(value.type, MemRefType)
        ops: list[Operation] = []
        pointer = base.results[0]
        if offset:
            step = llvm.GEPOp(pointer, [offset * row], element, inbounds=True)
            ops.append(step)
            pointer = step.result
        view = UnrealizedConversionCastOp.get([pointer], [value.type])
        view.results[0].name_hint = value.name_hint
        ops.append(view)
        Rewriter.insert_op(ops, InsertPoint.before(producer))
        producer.operands = [*producer.operands[:-1], view.results[0]]
        offset += value.type.get_shape()[axis]
    Rewriter.erase_op(concat)
    for value in inputs:
        alloc = value.owner
        if all(isinstance(use.operation, loop.FreeOp) for use in value.uses):
            for use in list(value.uses):
                Rewriter.erase_op(use.operation)
            assert isinstance(alloc, Operation)
            Rewriter.erase_op(alloc)
    return True


@dataclass(frozen=True)
class ConcatInPlacePass(LaminaPass):
    """Producers of a concatenation's inputs write into its output; the copy goes.

    Input invariant: phase `lowering`, after `lower-graph` (host functions
    are `loop.func`s of allocations and kernel calls).
    Output IR: every concatenation of the module docstring (kernel calls
    marked `lamina.concatenation` whose inputs kernels wrote for it alone, along a dimension
    with only extents 1 before it, into an output without padding) is gone:
    each producer is called on a view of its slice of the output
    (`builtin.unrealized_conversion_cast` to `!llvm.ptr`, `llvm.getelementptr`
    by the slice's offset, a cast back to the input's memref type), the
    output is allocated before the first producer, the inputs' own
    allocations and frees are removed where nothing else uses them, and a
    concatenation kernel no call uses any more is removed. Nothing happens
    with the knob `concat_in_place=0` (the target's, or this pass's option).
    Invariants: kernels are unchanged; every output element is the same
    value, written once by the same kernel.
    """

    name = "concat-in-place"

    phases: ClassVar[frozenset[Phase]] = frozenset({Phase.LOWERING})
    requires: ClassVar[tuple[str, ...]] = ("lower-graph",)

    concat_in_place: int = 1
    """0 turns the pass off, as the target knob `concat_in_place=0` does."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.concat_in_place and module_knobs(op).concat_in_place:
            concat_in_place(op)


__all__ = ["ConcatInPlacePass", "concat_in_place", "is_concatenation", "keeps_own_buffer"]
