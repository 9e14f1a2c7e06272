"""Pixel rows of an NCHW pointwise convolution: its H x W image as one row of H*W pixels.

A pointwise (1x1, stride 1, unpadded) convolution on an NCHW image that is
not channel-blocked stays NCHW (`kernels/strategy.py`): a matrix product of
the weights (output x input channels) by the pixels, whose register block
keeps output channels x one image row of columns. `lower-te` emits it as

    for c { for h { for w kind(vectorized) { t[0, c, h, w] = 0 }
                    for k { for w kind(vectorized) { t[0, c, h, w] += x[0, k, h, w] * w[c, k] } } } }

and register blocking makes the output channels its rows and one image row
(56 columns at 56x56) its row. 56 columns are no whole number of 16-lane
vectors: LLVM vectorized the row as 7 vectors of 8 lanes, 4 channels x 7
accumulators and the broadcasts took 33 registers and spilled, and every
FMA was half as wide as the core's (21 % of the FMA peak on Emerald Rapids).

The convolution reads and writes every pixel at its own position, so it is
the same product on a 1 x H*W image: `flatten_nchw_pixels` removes the row
loop `h` of each such nest (its variable becomes 0) and runs every column
loop `w` inside it over the H*W pixels, the buffers seen as `[N, C, 1,
H*W]` through `loop.reshape` (parameters; temporaries are allocated so:
`schedule/row_flattening.py`'s `_collapse_buffers`). Register blocking then
tiles the 3136-pixel row with whole 2-vector blocks of 8 channels (8 x 32
accumulators, as a matmul's micro-kernel) and its column-block loop.

The rule applies to a function as a whole or not at all: every access to
the collapsed buffers must sit in such a nest and index dimensions 2 and 3
with the nest's row and column variables (or their sums with 0), every
buffer must be a rank-4 row-major `[., ., H, W]` parameter or temporary
without a padding constraint, and one nest must hold a reduction. Every
element is computed by the same operations in the same order. Governed by
`conv_nchw_flat_pixels` (measured in docs/performance.md, "Pointwise
convolutions on two 512-bit FMA pipes").
"""

from __future__ import annotations

from xdsl.dialects.builtin import MemRefType, NoneAttr
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from lamina.dialects import loop
from lamina.schedule.int_analysis import int_constant
from lamina.schedule.primitives import body_ops, index_constant
from lamina.schedule.row_flattening import (
    ROW,
    Access,
    _claim_image,
    _collapse_buffers,
    _collapsible,
    _index_uses,
    _Plan,
)
from lamina.target.schedule_knobs import ScheduleKnobs


def flatten_nchw_pixels(func: loop.FuncOp, knobs: ScheduleKnobs) -> int:
    """Run the pixels of `func`'s NCHW pointwise convolution as one row (see the
    module docstring) when `conv_nchw_flat_pixels` is set and the image has at
    least that many pixels; returns the nests flattened."""
    if not knobs.conv_nchw_flat_pixels or func.is_declaration:
        return 0
    plan = _Plan()
    nests: list[tuple[loop.ForOp, list[loop.ForOp]]] = []
    for op in func.walk():
        if not isinstance(op, loop.ForOp) or any(r.is_ancestor(op) for r, _ in nests):
            continue
        found = _row_nest(op, plan)
        if found is not None:
            nests.append((op, found))
    if plan.image is None or not any(_has_reduction(r, cols) for r, cols in nests):
        return 0
    height, width = plan.image
    if height * width < knobs.conv_nchw_flat_pixels:
        return 0
    if not all(_collapsible(func, buffer, plan) for buffer in plan.buffers):
        return 0
    _collapse_buffers(func, plan, 1, height * width)
    for rows, columns in nests:
        for column in columns:
            column.operands = [column.lb, index_constant(rows, height * width), column.step]
        rows.induction_var.replace_all_uses_with(index_constant(rows, 0))
        for op in body_ops(rows):
            op.detach()
            Rewriter.insert_op(op, InsertPoint.before(rows))
        Rewriter.erase_op(rows)
    return len(nests)


def _row_nest(rows: loop.ForOp, plan: _Plan) -> list[loop.ForOp] | None:
    """The column loops inside `rows` when `rows` is an image-row loop of an NCHW
    nest: each use of its variable is index 2 of an access whose index 3 is the
    variable of a column loop inside it, and those column loops' variables are
    used only so. Accesses and buffers are added to `plan`."""
    if not _plain(rows, serial=True):
        return None
    row_uses = _index_uses(rows.induction_var)
    if not row_uses or any(pos != ROW for _, pos in row_uses):
        return None
    accesses = [op for op, _ in row_uses]
    if len(accesses) != len(set(accesses)):
        return None
    columns: list[loop.ForOp] = []
    for access in accesses:
        assert isinstance(access, Access)
        if not _rank_4(access.buffer.type):
            return None
        column = _column_loop(access, rows)
        if column is None:
            return None
        if column not in columns:
            columns.append(column)
    width = int_constant(columns[0].ub) if columns else None
    height = int_constant(rows.ub)
    if width is None or height is None:
        return None
    column_accesses: set[Operation] = set()
    for column in columns:
        if int_constant(column.ub) != width:
            return None
        uses = _index_uses(column.induction_var)
        if uses is None or any(pos != ROW + 1 for _, pos in uses):
            return None
        column_accesses.update(op for op, _ in uses)
    if column_accesses != set(accesses):
        return None
    if not _claim_image(plan, accesses, height, width, _image_buffer):
        return None
    return columns


def _column_loop(access: Access, rows: loop.ForOp) -> loop.ForOp | None:
    """The plain loop inside `rows` whose variable (or its sum with 0) is the
    access's index 3."""
    first = 1 if isinstance(access, loop.LoadOp) else 2
    index: SSAValue = access.operands[first + ROW + 1]
    while (owner := index.owner) is not None and not isinstance(owner, loop.ForOp):
        if (
            isinstance(owner, Operation)
            and owner.name == "arith.addi"
            and int_constant(owner.operands[1]) == 0
        ):
            index = owner.operands[0]
            continue
        break
    for candidate in rows.walk():
        if (
            isinstance(candidate, loop.ForOp)
            and candidate is not rows
            and candidate.induction_var is index
            and _plain(candidate, serial=False)
        ):
            return candidate
    return None


def _plain(for_op: loop.ForOp, serial: bool) -> bool:
    """From 0 in steps of 1 to a constant of at least 2, carrying nothing; a serial
    loop (`serial`) or a vectorized one."""
    kinds = (loop.LoopKind.SERIAL,) if serial else (loop.LoopKind.VECTORIZED,)
    if for_op.iter_args or for_op.kind_name not in kinds:
        return False
    if int_constant(for_op.lb) != 0 or int_constant(for_op.step) != 1:
        return False
    ub = int_constant(for_op.ub)
    return ub is not None and ub >= 2


def _rank_4(mtype: object) -> bool:
    return isinstance(mtype, MemRefType) and mtype.get_num_dims() == 4


def _image_buffer(mtype: object, height: int, width: int) -> bool:
    """A row-major rank-4 buffer `[., ., height, width]`."""
    return (
        isinstance(mtype, MemRefType)
        and isinstance(mtype.layout, NoneAttr)
        and mtype.get_num_dims() == 4
        and tuple(mtype.get_shape()[ROW : ROW + 2]) == (height, width)
    )


def _has_reduction(rows: loop.ForOp, columns: list[loop.ForOp]) -> bool:
    """Does the row loop hold a serial loop other than its column loops (a reduction)?"""
    return any(
        isinstance(op, loop.ForOp)
        and op is not rows
        and op not in columns
        and op.kind_name == loop.LoopKind.SERIAL
        for op in rows.walk()
    )


__all__ = ["flatten_nchw_pixels"]
