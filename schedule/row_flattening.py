"""Row flattening: a 1x1 convolution's image as one row of H*W pixels.

A channel-blocked convolution (`NCHW{c}c`, `kernels/conv_blocked.py`)
leaves its output pixels as two loops, rows `oh` and columns `ow`, and the
register block tiles the columns of each row (`schedule/register_block.py`):
7 or 14 columns leave a short block per row (7 as 4 + 3 on AVX2), 28 a
tail. A pointwise (1x1, stride 1, unpadded) convolution reads and writes
every pixel at its own position, so it is the same convolution on a 1 x H*W
image, whose single row of 49, 196 or 784 pixels the register block tiles
with one tail per image at most. Its buffers are contiguous, so the 1 x H*W
image is the same memory: the kernel's arguments are seen through
`loop.reshape` (no copy), its temporaries are allocated in that shape, and
the two loops become one over the pixels `p`, the access `[.., oh, ow, ..]`
becoming `[.., 0, p, ..]`. No division or remainder of `p` appears
anywhere: every access that used `oh` and `ow` used them as a pair.

It applies to a function as a whole or not at all. Each nest
`for oh in [0, H) { for ow in [0, W) { ... } }` (constant bounds, serial,
nothing else in the `oh` loop) whose loop variables (or their sums with 0)
serve only as indices 2 and 3 of rank-5 row-major buffers of shape
[., ., H, W, .] is flattened, when every access to those buffers lies in
such a nest, each buffer is a parameter or a temporary that nothing else
uses, no constraint of theirs records padding (`simplify` reads those on
the buffers themselves), and one of the nests holds a reduction (the
convolution: a serial loop inside; an elementwise kernel is left as it
is). Every element is computed by the same operations in the same order:
`p = oh*W + ow` runs through the pixels in the order of the two loops.

The stages of the flattened kernel are nests over the same pixel row, so
stage fusion, epilogue sinking and channel jamming treat them as before;
the parallel loop over output-channel blocks shares the row's blocks
(`parallel_collapse_below`) as it shared the rows. Governed by the knob
`conv_flatten_rows` (measured in docs/performance.md, "Pointwise
convolutions").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from xdsl.dialects import arith
from xdsl.dialects.builtin import MemRefType, NoneAttr
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from lamina.dialects import loop
from lamina.dialects.lamina import ConstraintAttr
from lamina.passes.simplify import buffer_constraint
from lamina.schedule.int_analysis import int_constant
from lamina.schedule.primitives import body_ops, index_constant
from lamina.target.schedule_knobs import ScheduleKnobs

ROW = 2
"""Index of the row dimension of a channel-blocked buffer `[N, C/c, H, W, c]` (the column's is 3)."""

Access = loop.LoadOp | loop.StoreOp


@dataclass
class _Plan:
    """The nests to flatten, each as (rows loop, columns loop), and the buffers they collapse."""

    nests: list[tuple[loop.ForOp, loop.ForOp]] = field(default_factory=list)
    buffers: dict[SSAValue, tuple[int, int]] = field(default_factory=dict)
    accesses: set[Operation] = field(default_factory=set)


def flatten_rows(func: loop.FuncOp, knobs: ScheduleKnobs) -> int:
    """Run the pixels of `func`'s pointwise convolution as one row (see the module
    docstring) when the knob `conv_flatten_rows` is on; returns the nests flattened."""
    if not knobs.conv_flatten_rows or func.is_declaration:
        return 0
    plan = _plan(func)
    if plan is None:
        return 0
    _collapse_buffers(func, plan)
    for rows, columns in plan.nests:
        _merge(rows, columns)
    return len(plan.nests)


def _plan(func: loop.FuncOp) -> _Plan | None:
    """The flattening of `func`, or None when some access or buffer forbids it."""
    plan = _Plan()
    for op in func.walk():
        if isinstance(op, loop.ForOp) and not _inside_planned(op, plan):
            found = _pixel_nest(op, plan)
            if found is not None:
                plan.nests.append((op, found))
    if not any(_has_reduction(columns) for _, columns in plan.nests):
        return None
    for buffer in plan.buffers:
        if not _collapsible(func, buffer, plan):
            return None
    return plan


def _inside_planned(op: loop.ForOp, plan: _Plan) -> bool:
    return any(columns.is_ancestor(op) for _, columns in plan.nests)


def _pixel_nest(rows: loop.ForOp, plan: _Plan) -> loop.ForOp | None:
    """The columns loop when `rows` and it form a pixel nest (see the module docstring);
    its accesses and buffers are added to `plan`."""
    if not _plain(rows):
        return None
    inner = body_ops(rows)
    if len(inner) != 1 or not isinstance(inner[0], loop.ForOp) or not _plain(inner[0]):
        return None
    columns = inner[0]
    height, width = _extent(rows), _extent(columns)
    row_uses = _index_uses(rows.induction_var)
    column_uses = _index_uses(columns.induction_var)
    if row_uses is None or column_uses is None:
        return None
    if {op for op, _ in row_uses} != {op for op, _ in column_uses}:
        return None
    if any(pos != ROW for _, pos in row_uses) or any(pos != ROW + 1 for _, pos in column_uses):
        return None
    accesses = [op for op, _ in row_uses]
    if len(accesses) != len(set(accesses)) or len(column_uses) != len(accesses):
        return None  # a loop variable twice in one access
    found: dict[SSAValue, tuple[int, int]] = {}
    for access in accesses:
        assert isinstance(access, Access)
        if not _pixel_buffer(access.buffer.type, height, width):
            return None
        found[access.buffer] = (height, width)
    if any(plan.buffers.get(b, shape) != shape for b, shape in found.items()):
        return None
    plan.buffers.update(found)
    plan.accesses.update(accesses)
    return columns


def _plain(for_op: loop.ForOp) -> bool:
    """A serial loop from 0 in steps of 1 to a constant of at least 2, carrying nothing."""
    if for_op.iter_args or for_op.kind_name != loop.LoopKind.SERIAL:
        return False
    if int_constant(for_op.lb) != 0 or int_constant(for_op.step) != 1:
        return False
    ub = int_constant(for_op.ub)
    return ub is not None and ub >= 2


def _extent(for_op: loop.ForOp) -> int:
    ub = int_constant(for_op.ub)
    assert ub is not None
    return ub


def _index_uses(iv: SSAValue) -> list[tuple[Operation, int]] | None:
    """(access, index position) of every use of `iv`, through sums with 0; None
    when `iv` has any other use (a product, a comparison, a bound)."""
    found: list[tuple[Operation, int]] = []
    for use in iv.uses:
        user = use.operation
        if isinstance(user, arith.AddiOp):
            other = user.rhs if use.index == 0 else user.lhs
            if int_constant(other) != 0:
                return None
            deeper = _index_uses(user.result)
            if deeper is None:
                return None
            found += deeper
        elif isinstance(user, Access) and use.index >= _first_index(user):
            found.append((user, use.index - _first_index(user)))
        else:
            return None
    return found


def _first_index(access: Access) -> int:
    """The operand number of an access's first index."""
    return 1 if isinstance(access, loop.LoadOp) else 2


def _pixel_buffer(mtype: object, height: int, width: int) -> bool:
    """A row-major rank-5 buffer `[., ., height, width, .]`."""
    return (
        isinstance(mtype, MemRefType)
        and isinstance(mtype.layout, NoneAttr)
        and mtype.get_num_dims() == 5
        and tuple(mtype.get_shape()[ROW : ROW + 2]) == (height, width)
    )


def _has_reduction(columns: loop.ForOp) -> bool:
    """Does the columns loop hold a serial loop (a reduction, as lower-te emits one)?"""
    return any(
        isinstance(op, loop.ForOp) and op.kind_name == loop.LoopKind.SERIAL
        for op in columns.body.walk()
    )


def _collapsible(func: loop.FuncOp, buffer: SSAValue, plan: _Plan) -> bool:
    """Is every use of `buffer` a planned access (or its free), and is it a parameter
    of `func` or a temporary, with no padding recorded in its constraint?"""
    for use in buffer.uses:
        if isinstance(use.operation, loop.FreeOp):
            continue
        if use.operation not in plan.accesses:
            return False
    if isinstance(buffer, BlockArgument):
        if buffer.block is not func.body.blocks[0]:
            return False
    elif not isinstance(buffer.owner, loop.AllocOp) or buffer.owner.constraint is not None:
        return False  # a temporary's constraint maps to its 5-D shape
    return _no_padding(buffer_constraint(buffer), buffer.type)


def _no_padding(constraint: ConstraintAttr | None, mtype: object) -> bool:
    """A constraint whose logical shape fills the whole buffer (or none): one that
    records padding tells `simplify` which guards to drop, on this buffer only."""
    if constraint is None or constraint.logical_shape is None:
        return True
    assert isinstance(mtype, MemRefType)
    return math.prod(constraint.logical_shape) == math.prod(mtype.get_shape())


def _flat_type(mtype: MemRefType, height: int, width: int) -> MemRefType:
    shape = list(mtype.get_shape())
    shape[ROW : ROW + 2] = [1, height * width]
    return MemRefType(mtype.element_type, shape, mtype.layout, mtype.memory_space)


def _collapse_buffers(func: loop.FuncOp, plan: _Plan) -> None:
    """Parameters are seen through a `loop.reshape` at the top of `func`;
    temporaries are allocated in the flat shape."""
    entry = func.body.blocks[0]
    at = InsertPoint.at_start(entry)
    for buffer, (height, width) in sorted(plan.buffers.items(), key=_parameter_order):
        mtype = buffer.type
        assert isinstance(mtype, MemRefType)
        flat = _flat_type(mtype, height, width)
        if isinstance(buffer, BlockArgument):
            view = loop.ReshapeOp(buffer, flat)
            Rewriter.insert_op(view, at)
            at = InsertPoint.after(view)
            buffer.replace_uses_with_if(view.result, lambda use, v=view: use.operation is not v)
            continue
        alloc = buffer.owner
        assert isinstance(alloc, loop.AllocOp)
        new = loop.AllocOp(flat, alloc.device, alloc.constraint, alloc.scope.data)
        new.result.name_hint = alloc.result.name_hint
        Rewriter.replace_op(alloc, new)


def _parameter_order(item: tuple[SSAValue, tuple[int, int]]) -> int:
    """Parameters in their order, then temporaries (in the order found)."""
    buffer = item[0]
    return buffer.index if isinstance(buffer, BlockArgument) else 1 << 30


def _merge(rows: loop.ForOp, columns: loop.ForOp) -> None:
    """One loop over the `H*W` pixels in place of the rows and columns loops."""
    pixels = _extent(rows) * _extent(columns)
    rows.induction_var.replace_all_uses_with(index_constant(rows, 0))
    columns.operands = [columns.lb, index_constant(rows, pixels), columns.step]
    columns.detach()
    Rewriter.insert_op(columns, InsertPoint.before(rows))
    Rewriter.erase_op(rows)


__all__ = ["flatten_rows"]
