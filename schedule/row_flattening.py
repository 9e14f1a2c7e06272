"""Row flattening: a 1x1 convolution's image as one row of H*W pixels.

A channel-blocked convolution (`NCHW{c}c`, `kernels/conv_blocked.py`)
leaves its output pixels as two loops, rows `oh` and columns `ow`, and the
register block tiles the columns of each row (`schedule/register_block.py`):
7 or 14 columns leave a short block per row (7 as 4 + 3 on AVX2), 28 a
tail. A pointwise (1x1, stride 1, unpadded) convolution reads and writes
every pixel at its own position, so it is the same convolution on a 1 x H*W
image, whose single row of 49, 196 or 784 pixels the register block tiles
with one tail per image at most. Its buffers are contiguous, so the 1 x H*W
image is the same memory: the kernel's parameters are seen through
`loop.reshape` (no copy), its temporaries are allocated in that shape, and
the two loops become one over the pixels `p`, the access `[.., oh, ow, ..]`
becoming `[.., 0, p, ..]`. No division or remainder of `p` appears
anywhere: every access that used `oh` and `ow` used them as a pair.

On several cores the loop over output-channel blocks runs in parallel, and
when it has few iterations the threads share blocks x rows
(`share_rows` in `schedule/parallel.py`): the image then becomes G rows of
H*W/G pixels, the fewest rows that keep the threads that many iterations
(`_flat_rows`); the loops keep their variables, now indexing the G x H*W/G
view. Where even H rows are needed, the kernel stays as it is; so it does
when its output-channel blocks are not jammed (`_flat_rows` says why).

It applies to a function as a whole or not at all. Each nest
`for oh in [0, H) { for ow in [0, W) { ... } }` (constant bounds, serial,
nothing else in the `oh` loop) whose loop variables (or their sums with 0)
serve only as indices 2 and 3 of rank-5 row-major buffers of shape
[., ., H, W, .] is flattened, when every access to those buffers lies in
such a nest, each buffer is a parameter or a temporary (without a
constraint) that nothing else uses, no parameter's constraint records
padding (`simplify` reads those on the parameter itself, not through a
view), and one of the nests holds a reduction (the convolution: a serial
loop inside; an elementwise kernel is left as it is). Every element is
computed by the same operations in the same order: the pixels are visited
in the order of the two loops.

The stages of the flattened kernel are nests over the same pixel rows, so
stage fusion, write-through, epilogue sinking and channel jamming treat
them as before. Governed by the knob `conv_flatten_rows`, the widest image row flattened
(measured in
docs/performance.md, "Pointwise convolutions").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from xdsl.dialects import arith
from xdsl.dialects.builtin import MemRefType, NoneAttr
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from lamina.dialects import loop
from lamina.dialects.lamina import CONSTRAINT_ATTR_NAME, ConstraintAttr
from lamina.schedule.int_analysis import int_constant
from lamina.schedule.primitives import body_ops, index_constant
from lamina.schedule.register_block import CHUNK_JAM
from lamina.target.schedule_knobs import ScheduleKnobs

ROW = 2
"""Index of the row dimension of a channel-blocked buffer `[N, C/c, H, W, c]` (the column's is 3)."""

Access = loop.LoadOp | loop.StoreOp


@dataclass
class _Plan:
    """The nests to flatten, each as (rows loop, columns loop), and the buffers they collapse."""

    nests: list[tuple[loop.ForOp, loop.ForOp]] = field(default_factory=list)
    buffers: list[SSAValue] = field(default_factory=list)
    accesses: set[Operation] = field(default_factory=set)
    image: tuple[int, int] | None = None
    """(H, W) of every collapsed buffer."""


def flatten_rows(func: loop.FuncOp, cores: int, knobs: ScheduleKnobs) -> int:
    """Run the pixels of `func`'s pointwise convolution as one row, or as few rows
    as leave `cores` threads enough to share (see the module docstring), when the
    image rows have at most `conv_flatten_rows` columns; returns the nests flattened."""
    if not (knobs.conv_flatten_rows or knobs.conv_chunk_min_channels) or func.is_declaration:
        return 0
    plan = _plan(func)
    if plan is None or plan.image is None:
        return 0
    height, width = plan.image
    if width > knobs.conv_flatten_rows and not _chunked(plan, knobs):
        return 0
    rows = _flat_rows(plan, cores, knobs)
    if rows >= height:
        return 0
    _collapse_buffers(func, plan, rows, height * width // rows)
    for outer, columns in plan.nests:
        _regroup(outer, columns, rows, height * width // rows)
    return len(plan.nests)


def _chunked(plan: _Plan, knobs: ScheduleKnobs) -> bool:
    """Will the convolution's reduction be chunked (`conv_chunk_min_channels`:
    every convolution nest reduces over at least that many input channels)?
    Then its image is flattened whatever its width, so that a chunk's
    weights serve every register block of the image (`chunk_reductions` in
    schedule/register_block.py); only when `CHUNK_JAM` divides its
    output-channel blocks (the jam it then gets)."""
    if not knobs.conv_chunk_min_channels or not knobs.conv_reduction_chunk:
        return False
    nests = [(rows, columns) for rows, columns in plan.nests if _has_reduction(columns)]
    return bool(nests) and all(
        _reduced_channels(columns) >= knobs.conv_chunk_min_channels
        and _channel_jam(rows, knobs)[0] % CHUNK_JAM == 0
        for rows, columns in nests
    )


def _reduced_channels(columns: loop.ForOp) -> int:
    """The product of the trip counts of the serial loops in a pixel nest's
    columns loop (a pointwise convolution's input-channel blocks x channels)."""
    count = 1
    for op in columns.body.walk():
        if isinstance(op, loop.ForOp) and op.kind_name == loop.LoopKind.SERIAL:
            lb, ub, step = (int_constant(v) for v in (op.lb, op.ub, op.step))
            if lb is None or ub is None or step != 1:
                return 0
            count *= ub - lb
    return count


def _flat_rows(plan: _Plan, cores: int, knobs: ScheduleKnobs) -> int:
    """Rows G of the flat image (G x H*W/G): H (the image as it is) when the
    convolution's output-channel blocks are not jammed; 1 when the loop over
    its jammed steps has threads enough of its own; else the fewest that
    give the parallel loop `parallel_collapse_below` iterations with the rows
    it shares (`share_rows` in `schedule/parallel.py`), a divisor of H*W.

    Not jammed (blocks that no `conv_channel_jam_choices` divides, 125 for
    1000 channels on AVX2), a step keeps up to 12 rows of one block, which a
    row of 13 columns fills as 7 + 6; flat, 169 pixels as 14 x 12 + 1 took
    1.07x the time (512->1000 at 13x13). Jammed (2-3 blocks a step, 4-6
    rows), a 7- or 14-column row leaves short blocks the flat row does not.
    With few steps (64 channels: 8 blocks on AVX2, 4 steps of 2) the threads
    share steps x rows; one row of 784 pixels would leave them 4, a
    4 x 196 image 16, an 8 x 98 one 32. Where no divisor of H*W below H gives
    that many (a 7x7 image: 49 pixels are 1 or 7 rows), the image is still one
    row when the steps give every core `conv_flatten_min_steps_per_core`."""
    height, width = plan.image or (1, 1)
    convolutions = [rows for rows, columns in plan.nests if _has_reduction(columns)]
    jams = [_channel_jam(rows, knobs) for rows in convolutions]
    if any(jam == 1 for _, jam in jams):
        return height
    steps = min(blocks // jam for blocks, jam in jams)
    if cores < 2 or steps >= knobs.parallel_collapse_below:
        return 1
    pixels = height * width
    wanted = -(-knobs.parallel_collapse_below // steps)
    rows = next(g for g in range(1, height + 1) if pixels % g == 0 and g >= wanted or g == height)
    if (
        rows == height
        and knobs.conv_flatten_min_steps_per_core
        and (steps >= knobs.conv_flatten_min_steps_per_core * cores)
    ):
        return 1  # no divisor shares enough; the steps alone still give every core several
    return rows


def _channel_jam(rows: loop.ForOp, knobs: ScheduleKnobs) -> tuple[int, int]:
    """(blocks, jam): the iterations of the loop around a pixel nest (its
    output-channel blocks) and how many of them register blocking will jam
    into a step (`channel_jam` in `schedule/register_block.py`:
    `conv_channel_jam`, else the first of `conv_channel_jam_choices`
    dividing them); (1, 1) without such a loop."""
    parent = rows.parent_op()
    if not isinstance(parent, loop.ForOp) or int_constant(parent.ub) is None:
        return 1, 1
    blocks = _extent(parent)
    choices = (
        (knobs.conv_channel_jam,) if knobs.conv_channel_jam else knobs.conv_channel_jam_choices
    )
    return blocks, next((f for f in choices if f <= blocks and blocks % f == 0), 1)


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
    if not _claim_image(plan, accesses, height, width, _pixel_buffer):
        return None
    return columns


def _claim_image(
    plan: _Plan,
    accesses: Sequence[Operation],
    height: int,
    width: int,
    fits: Callable[[object, int, int], bool],
) -> bool:
    """Record `accesses` and their buffers in `plan` for a `height` x `width` image,
    if every buffer `fits` it and the function has no other image shape (shared
    with schedule/pixel_rows.py)."""
    if plan.image not in (None, (height, width)):
        return False  # one image shape per function
    for access in accesses:
        assert isinstance(access, Access)
        if not fits(access.buffer.type, height, width):
            return False
    plan.image = (height, width)
    for access in accesses:
        assert isinstance(access, Access)
        if access.buffer not in plan.buffers:
            plan.buffers.append(access.buffer)
    plan.accesses.update(accesses)
    return True


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
    if not isinstance(buffer, BlockArgument):
        # a temporary's constraint maps to its 5-D shape
        return isinstance(buffer.owner, loop.AllocOp) and buffer.owner.constraint is None
    if buffer.block is not func.body.blocks[0]:
        return False
    constraint = func.arg_attr(buffer.index, CONSTRAINT_ATTR_NAME)
    return not isinstance(constraint, ConstraintAttr) or _no_padding(constraint, buffer.type)


def _no_padding(constraint: ConstraintAttr, mtype: object) -> bool:
    """A constraint whose logical shape fills the whole buffer: one that records
    padding tells `simplify` which guards to drop, on this parameter only."""
    if constraint.logical_shape is None:
        return True
    assert isinstance(mtype, MemRefType)
    return math.prod(constraint.logical_shape) == math.prod(mtype.get_shape())


def _flat_type(mtype: MemRefType, rows: int, row: int) -> MemRefType:
    shape = list(mtype.get_shape())
    shape[ROW : ROW + 2] = [rows, row]
    return MemRefType(mtype.element_type, shape, mtype.layout, mtype.memory_space)


def _collapse_buffers(func: loop.FuncOp, plan: _Plan, rows: int, row: int) -> None:
    """Parameters are seen through a `loop.reshape` at the top of `func`;
    temporaries are allocated in the flat shape `rows x row`."""
    entry = func.body.blocks[0]
    at = InsertPoint.at_start(entry)
    for buffer in sorted(plan.buffers, key=_parameter_order):
        mtype = buffer.type
        assert isinstance(mtype, MemRefType)
        flat = _flat_type(mtype, rows, row)
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


def _parameter_order(buffer: SSAValue) -> int:
    """Parameters in their order, then temporaries (in the order found)."""
    return buffer.index if isinstance(buffer, BlockArgument) else 1 << 30


def _regroup(outer: loop.ForOp, columns: loop.ForOp, rows: int, row: int) -> None:
    """The rows and columns loops over `rows x row` pixels: the same loop
    variables index the flat buffers, element `g*row + p` the pixel the two
    loops reach in that iteration; one row is one loop, as lower-te emits a
    1 x H*W image."""
    outer.operands = [outer.lb, index_constant(outer, rows), outer.step]
    columns.operands = [columns.lb, index_constant(outer, row), columns.step]
    if rows != 1:
        return
    outer.induction_var.replace_all_uses_with(index_constant(outer, 0))
    columns.detach()
    Rewriter.insert_op(columns, InsertPoint.before(outer))
    Rewriter.erase_op(outer)


__all__ = ["flatten_rows"]
