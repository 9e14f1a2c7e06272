"""`schedule`: loop transformations — register-blocked micro-kernels and user directives.

`lower-te` leaves each `te.compute` as a loop nest whose innermost loop walks
memory contiguously. For a reduction whose innermost loop is *spatial*
(matmul's `j`, a convolution's output column), that nest is

    for i {                                   // L: the loop around the row
      for j kind(vectorized) { C[i, j] = 0 }              // F: fill
      for k … { for j kind(vectorized) { C[i, j] += A[i, k] * B[k, j] } }   // R
    }

which loads and stores C on every k: three memory operations per FMA, at
most half of peak even from L1. The default schedule turns it into a
register-blocked micro-kernel (`register_block`), with sizes chosen from
the target's vector width and register count (`cpu_facts`):

    for io step MR kind(parallel) {           // split(L, MR); the tail rows
      for jo step NR {                        //   keep the original nest
        C[io+0.., jo..jo+NR] = 0  …  C[io+MR-1.., …] = 0
        for k … {
          for jj in [0, NR) kind(vectorized) {              // unroll-and-jam(L)
            C[io+0, jo+jj] += A[io+0, k] * B[k, jo+jj]
            …                                               // MR rows
            C[io+MR-1, jo+jj] += A[io+MR-1, k] * B[k, jo+jj]
          }
        }
      }
    }

Index divisions that ranges make affine (a fused reshape's `(256*i + k) /
256`) are rewritten first (`simplify`'s rules), so that tiles and packed
panels see sums of loop variables; a panel of an operand read down its
columns is stored transposed (`pack`).

NR = nv vectors (nv ≤ 4 dividing the row, preferring 2) and MR rows such
that MR·nv accumulators + nv B vectors + MR broadcasts fit the vector
registers: up to 10×32 on AVX-512 (8×32 at M = 1024), 4×16 on AVX2. The C tile's addresses are invariant in `k`, so LLVM
keeps the MR·nv accumulators in registers across the reduction loop
(checked in the assembly). Batched matmuls (the `b` loop outside `L`),
matmuls in MLPs/attention match the same shape. A nest whose rows do not
share the vector loaded along the row (a convolution's output rows read
different input rows) is not blocked by default: there the layout's
channel blocking is what pays (`register_block` directive still applies).

Adjacent top-level loops over the same rows whose shared buffers are only
accessed at row = induction variable (softmax's max, exp, sum and divide
stages; layer_norm's) are fused into one loop (`fuse_row_stages`): one
parallel region per kernel instead of one per stage. A stage that `lower-te`
left serial (too little work for a thread team of its own: a bias+relu
epilogue, a padded copy) joins a parallel neighbour's loop rather than
running on the calling thread while the other cores wait.

A float division in a vectorized loop by a value invariant in it
(softmax's `e / sum`) is marked `fastmath<arcp>`: LLVM multiplies by one
reciprocal instead of dividing every vector (`reciprocal_divisions`).

A local temporary whose every access indexes one dimension by the same
serial loop's variable keeps a single slice along it (`contract_temporaries`,
storage folding): after fusion, Winograd's input transform is written and
read per tile position and stays in L2.

A copy whose vectorized loop gathers (reading out of a channel-blocked
layout) gets the loop that walks the gathered cache lines just outside the
vectorized one (`_gather_reuse`): the gathers sharing a line run back to back.
In every loop function, f32 `math.exp` and `math.tanh` become polynomials
(`_vector_math`): a libm call per element blocks vectorization.

Elementwise nests and reductions along the contiguous axis are left as
`lower-te` emits them: their innermost loop is already contiguous and
vectorized, and their outer loop parallel when worth it.

A loop carrying `lamina.schedule = "<primitive>"` is transformed by that
primitive instead (see `_schedule_primitives`; the function then gets no
default schedule): `split(F)`, `interchange`, `fuse` (with the next loop),
`unroll`, `unroll_and_jam`, `vectorize`, `parallel`, `pack(N)` (copy the
tile of the function's argument N the nest reads into a local buffer) and
`register_block` (the default micro-kernel on this loop, as L above).

Input invariant: phase `lowering`; `loop.func`s as `lower-te` emits them.
Output IR: the same functions with transformed loop nests; every
`lamina.schedule` directive applied and removed.
Invariants: results are unchanged up to floating-point reassociation of
nothing (each output element is accumulated in the same order), except that
a division by a loop-invariant value may round as a multiplication by its
reciprocal (within an ulp); a directive
that cannot be applied is a diagnostic at its loop.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import MemRefType, ModuleOp, StringAttr
from xdsl.dialects.utils.fast_math import FastMathFlag
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import is_side_effect_free

from lamina.core.diagnostics import op_error
from lamina.core.pass_base import LaminaPass
from lamina.dialects import loop
from lamina.dialects.lamina import Phase
from lamina.passes import _schedule_primitives as prim
from lamina.passes._gather_reuse import reuse_gathered_lines
from lamina.passes._int_analysis import int_constant
from lamina.passes._schedule_primitives import ScheduleError
from lamina.passes._vector_math import expand_transcendentals
from lamina.passes.simplify import make_indices_affine
from lamina.target.cpu_facts import CpuFacts

DIRECTIVE_ATTR = "lamina.schedule"
"""Discardable attribute on a `loop.for`: the primitive to apply to it."""

MAX_VECTORS_PER_ROW = 4
"""At most this many vectors per accumulator row (NR = nv × lanes)."""


@dataclass(frozen=True)
class BlockShape:
    """A register block: `rows` × `columns` accumulators, `vectors` registers per row."""

    rows: int
    vectors: int
    columns: int


def choose_block(m: int, n: int, element_bits: int, facts: CpuFacts) -> BlockShape | None:
    """The register block for an M × N output tile, or None when blocking cannot help.

    Vectors per row: nv = 2, 1, 4 or 3 (the first whose nv·lanes divides N),
    or the whole row when it is at most 4 vectors long -- also a row of at
    least half a vector (a classifier's 10 outputs: one masked vector per row,
    2x faster than accumulating the row in memory). Rows: as many as
    leave room for MR·nv accumulators, nv B vectors and MR broadcasts (LLVM
    hoists all MR broadcasts of a step before its FMAs; measured on AVX-512:
    8 × 32 beats 12 × 32 and 14 × 32, which spill); preferably a divisor of
    M (no tail rows).
    """
    lanes = facts.lanes(element_bits)
    if 2 * n < lanes:
        return None
    vectors = next((nv for nv in (2, 1, 4, 3) if n % (nv * lanes) == 0), None)
    if vectors is not None:
        columns = vectors * lanes
    elif n <= MAX_VECTORS_PER_ROW * lanes:
        vectors, columns = -(-n // lanes), n
    else:
        return None
    most = max(1, (facts.vector_registers - vectors) // (vectors + 1))
    if m <= most:
        rows = m
    else:
        rows = next((r for r in range(most, (most + 1) // 2 - 1, -1) if m % r == 0), most)
    return BlockShape(rows, vectors, columns)


@dataclass
class ReductionNest:
    """`L { F; R }`: a reduction that accumulates rows in memory (see the module docstring)."""

    outer: loop.ForOp
    fill: loop.ForOp
    reduction: loop.ForOp
    row: loop.ForOp
    """The innermost loop of `reduction` (same bounds as `fill`)."""

    @staticmethod
    def match(op: loop.ForOp) -> ReductionNest | None:
        ops = prim.body_ops(op)
        if op.iter_args or len(ops) != 2 or not all(isinstance(o, loop.ForOp) for o in ops):
            return None
        fill, reduction = ops
        assert isinstance(fill, loop.ForOp) and isinstance(reduction, loop.ForOp)
        if fill.kind_name != "vectorized" or any(
            isinstance(o, loop.ForOp) for o in fill.walk() if o is not fill
        ):
            return None
        row = reduction
        while True:
            inner = prim.body_ops(row)
            if row.iter_args:
                return None
            if len(inner) == 1 and isinstance(inner[0], loop.ForOp):
                row = inner[0]
                continue
            break
        if row is reduction or row.kind_name != "vectorized":
            return None
        if any(isinstance(o, loop.ForOp) for o in row.walk() if o is not row):
            return None
        try:
            if prim.bounds(row) != prim.bounds(fill) or prim.bounds(op)[2] != 1:
                return None
            _ = [prim.bounds(o) for o in reduction.walk() if isinstance(o, loop.ForOp)]
        except ScheduleError:
            return None
        return ReductionNest(op, fill, reduction, row)

    def element_bits(self) -> int:
        for o in self.row.walk():
            if isinstance(o, loop.StoreOp):
                memref = o.buffer.type
                assert isinstance(memref, MemRefType)
                return memref.element_type.bitwidth  # type: ignore[attr-defined]
        return 32


def register_block(nest: ReductionNest, shape: BlockShape, facts: CpuFacts) -> loop.ForOp:
    """Apply the micro-kernel schedule of the module docstring; returns its outermost loop.

    When the row is split into column blocks, the column-block loop goes
    outermost and the operands read along the row (B of a matmul) are
    packed per column block into a contiguous local panel when the panel
    fits half of L2 and enough row blocks share it (`PACK_MIN_ROW_BLOCKS`):
    B's rows are often a power of two apart (4 KiB at N = 1024), which maps
    a whole unpacked panel onto a few L1 sets.
    """
    rows_outer, rows_inner, _ = prim.split(nest.outer, shape.rows)
    top = rows_outer
    if shape.columns < prim.trip_count(nest.fill):
        streamed = _row_operands(nest)
        fill_outer, _, _ = prim.split(nest.fill, shape.columns)
        row_outer, _, _ = prim.split(nest.row, shape.columns)
        while (parent := row_outer.parent_op()) is not rows_inner:
            assert isinstance(parent, loop.ForOp)
            row_outer = prim.interchange(parent)
        columns = prim.fuse(fill_outer, row_outer)
        prim.interchange(rows_inner)
        top = prim.interchange(rows_outer)
        assert top is columns
        _distribute(columns, rows_outer, facts.cores)
        for buffer in streamed:
            if not _pack_pays(rows_outer, buffer):
                continue
            try:
                prim.pack(rows_outer, buffer, max_bytes=facts.l2_bytes // 2)
            except ScheduleError:
                pass  # not a plain tile (e.g. a strided convolution input): read in place
    prim.unroll_and_jam(rows_inner)
    return top


PACK_MIN_ROW_BLOCKS = 32
"""Row blocks that must share a column panel read in place (along its rows)
before copying it into a contiguous panel pays. The copy reads the panel
once more, from L3 or memory, before any FMA; read in place, the first row
block streams it (the hardware prefetcher follows the constant row stride)
overlapped with its FMAs, and the other row blocks find it in L2. Measured,
AVX-512, one thread, packed -> in place: 64x784 @ 784x512 0.51 -> 0.46 ms,
192x784 @ 784x512 1.42 -> 1.38, 64x1024 @ 1024x1024 1.46 -> 1.34, matmul
256 and 512 equal; matmul 1024 (128 row blocks) 19.9 -> 21.8 ms, so it
stays packed. A panel read down its columns (attention's K^T) is always
packed: the copy transposes it once instead of gathering on every use
(attention 0.87 -> 1.12 ms unpacked)."""


def _pack_pays(rows: loop.ForOp, buffer: SSAValue) -> bool:
    """Copy `buffer`'s panel for the row-block loop `rows` (see `PACK_MIN_ROW_BLOCKS`)?"""
    return prim.pack_transposes(rows, buffer) or prim.trip_count(rows) >= PACK_MIN_ROW_BLOCKS


def _row_operands(nest: ReductionNest) -> list[SSAValue]:
    """Buffers the innermost loop reads along the row (other than the destination)."""
    written = {o.buffer for o in nest.row.walk() if isinstance(o, loop.StoreOp)}
    iv = nest.row.induction_var
    found: list[SSAValue] = []
    for o in nest.row.walk():
        if isinstance(o, loop.LoadOp) and o.buffer not in written and o.buffer not in found:
            if any(_depends_on(i, iv) for i in o.indices):
                found.append(o.buffer)
    return found


def _reused_across_rows(nest: ReductionNest) -> bool:
    """Does every row of a block read the same vector along the row (B[k, j] of a
    matmul)? Only then do rows share loads; a convolution's rows (`oh`) read
    different input rows, so blocking them only adds register pressure
    (measured: 1.8x slower on a 3x3 conv at 56x56)."""
    outer_iv = nest.outer.induction_var
    for buffer in _row_operands(nest):
        loads = [o for o in nest.row.walk() if isinstance(o, loop.LoadOp) and o.buffer is buffer]
        if all(not _depends_on(i, outer_iv) for load in loads for i in load.indices):
            return True
    return False


def _depends_on(value: SSAValue, iv: SSAValue) -> bool:
    if value is iv:
        return True
    owner = value.owner
    return isinstance(owner, Operation) and any(_depends_on(v, iv) for v in owner.operands)


def _distribute(columns: loop.ForOp, rows: loop.ForOp, cores: int) -> None:
    """Run the column blocks on threads when there are enough of them for every core
    (one parallel region per kernel); otherwise the row blocks stay parallel."""
    if rows.kind_name != "parallel" or prim.trip_count(columns) < 2 * cores:
        return
    rows.properties.pop("kind", None)
    prim.parallelize(columns)


def fuse_row_stages(func: loop.FuncOp) -> int:
    """Fuse adjacent loops over the same rows into one; returns how many fused.

    A multi-stage kernel (softmax: max, exp, sum, divide; a convolution and
    its bias+relu epilogue) is a chain of top-level loops over the same rows,
    each a parallel region of its own (a thread-team wake-up each, ~15 µs at
    two threads) that streams the intermediate buffer through memory once
    more. When every buffer the two loops share is accessed at one fixed
    index position = the loop's induction variable in both, iteration i of
    the second only needs iteration i of the first, and one loop (one region)
    does both. Fusion recurses: the fused body's now-adjacent inner loops
    (a convolution's output rows and its epilogue's) fuse the same way, so
    the epilogue reads a row the convolution just wrote, still in L1.
    """
    block = func.body.blocks[0]
    _gather_allocations(block)
    return _fuse_adjacent(block)


def _fuse_adjacent(block: Block) -> int:
    fused = 0
    first = block.first_op
    while first is not None:
        second = first.next_op
        if (
            isinstance(first, loop.ForOp)
            and isinstance(second, loop.ForOp)
            and _kinds_fusable(first, second)
            and _row_stages_fusable(first, second)
        ):
            parallel = second.kind_name == "parallel"
            prim.fuse(first, second)
            if parallel:
                prim.parallelize(first)
            fused += 1 + _fuse_adjacent(first.body.blocks[0])
            continue
        first = second
    return fused


def contract_temporaries(func: loop.FuncOp) -> int:
    """Drop a local temporary's dimensions that one serial loop indexes; returns
    how many dimensions were dropped.

    When every access of a temporary has, at position d, the induction
    variable of the same serial loop, iteration i only ever touches slice i:
    one slice reused by every iteration holds the same values when they are
    needed (TVM's storage folding). After `fuse_row_stages` the stages of a
    kernel often run per slice like that -- Winograd's input transform V is
    written and read per tile position (a, b) -- and the contracted buffer
    stays in L2 instead of streaming a call's worth of slices through memory
    (V: 3.2 MiB → 800 KiB at 56x56 with 64 channels; `a` is parallel and
    keeps its slices, one per thread). A parallel loop's dimension is never
    dropped: its iterations run at the same time.
    """
    dropped = 0
    for alloc in [o for o in func.walk() if isinstance(o, loop.AllocOp)]:
        if alloc.scope.data != "local" or alloc.constraint is not None:
            continue
        while (d := _contractible_dim(alloc)) is not None:
            alloc = _drop_dim(alloc, d)
            dropped += 1
    return dropped


def _contractible_dim(alloc: loop.AllocOp) -> int | None:
    buf = alloc.results[0]
    accesses = [u.operation for u in buf.uses]
    if not accesses or any(
        not isinstance(a, loop.LoadOp | loop.StoreOp | loop.FreeOp) for a in accesses
    ):
        return None
    indexed = [a for a in accesses if not isinstance(a, loop.FreeOp)]
    if not indexed:
        return None
    for d in range(len(indexed[0].indices)):
        iv = indexed[0].indices[d]
        owner = iv.owner if isinstance(iv, BlockArgument) else None
        for_op = owner.parent_op() if owner is not None else None
        if not isinstance(for_op, loop.ForOp) or for_op.induction_var is not iv:
            continue
        if for_op.kind_name == "parallel" or for_op.is_ancestor(alloc):
            continue
        if all(a.indices[d] is iv for a in indexed):
            return d
    return None


def _drop_dim(alloc: loop.AllocOp, d: int) -> loop.AllocOp:
    """A new allocation without dimension `d`, its accesses rewritten to it."""
    mtype = alloc.results[0].type
    assert isinstance(mtype, MemRefType)
    shape = [n for i, n in enumerate(mtype.get_shape()) if i != d]
    new = loop.AllocOp(MemRefType(mtype.element_type, shape), alloc.device, None, "local")
    new.results[0].name_hint = alloc.results[0].name_hint
    Rewriter.insert_op(new, InsertPoint.before(alloc))
    buf = new.results[0]
    for use in list(alloc.results[0].uses):
        access = use.operation
        if isinstance(access, loop.LoadOp):
            indices = [v for i, v in enumerate(access.indices) if i != d]
            replacement: Operation = loop.LoadOp(buf, indices)
        elif isinstance(access, loop.StoreOp):
            indices = [v for i, v in enumerate(access.indices) if i != d]
            replacement = loop.StoreOp(access.value, buf, indices)
        else:
            replacement = loop.FreeOp(buf)
        replacement.attributes |= access.attributes
        Rewriter.replace_op(access, replacement)
    Rewriter.erase_op(alloc)
    return new


def write_through_output(func: loop.FuncOp) -> int:
    """Compute into the output buffer instead of a temporary the epilogue copies
    from; returns how many temporaries were replaced.

    A fused kernel `y = relu(conv(x) + b)` accumulates the convolution in a
    local temporary `t` and its epilogue reads `t[I]` to write `out[I]`.
    When every load of `t` sits in a loop body that stores `out` at exactly
    the same indices, and `out` is accessed nowhere else, `out` itself can
    hold the partial sums: each element is read by the epilogue right
    before it is overwritten, at the same place. This drops a temporary of
    the output's size (allocated and freed on every call: 0.15 ms of a
    2.5 ms 56x56 convolution, in page faults when the allocator trims it).
    """
    args = {a: [] for a in func.body.blocks[0].args}
    allocs = []
    for o in func.walk():
        if isinstance(o, loop.LoadOp | loop.StoreOp) and o.buffer in args:
            args[o.buffer].append(o)
        elif isinstance(o, loop.AllocOp) and o.scope.data == "local":
            allocs.append(o)
    replaced = 0
    for alloc in allocs:
        temp = alloc.results[0]
        out = _written_through(temp, args)
        if out is None:
            continue
        for use in list(temp.uses):
            if isinstance(use.operation, loop.FreeOp):
                Rewriter.erase_op(use.operation)
        temp.replace_all_uses_with(out)
        Rewriter.erase_op(alloc)
        args[out] = []  # one temporary per output
        replaced += 1
    return replaced


def _written_through(temp: SSAValue, args: dict) -> SSAValue | None:
    """The output argument that can hold `temp`'s values (see `write_through_output`).

    Loads of `temp` either feed a store of one output argument at the same
    indices (the epilogue) or a store back to `temp` at the same indices
    (accumulation); that output is only stored to, by those epilogues; and
    every store to `temp` comes before every epilogue in program order.
    """
    users = [u.operation for u in temp.uses]
    if any(not isinstance(o, loop.LoadOp | loop.StoreOp | loop.FreeOp) for o in users):
        return None
    epilogue_stores: dict[SSAValue, list[loop.StoreOp]] = {}
    for load in (o for o in users if isinstance(o, loop.LoadOp)):
        block = load.parent_block()
        ops = list(block.ops)  # type: ignore[union-attr]
        stores = [o for o in ops if isinstance(o, loop.StoreOp)]
        after = ops[ops.index(load) :]
        if any(
            o.buffer is temp and _same_indices(o.indices, load.indices)
            for o in stores
            if o in after
        ):
            continue  # accumulation: read-modify-write of the same element
        found = [
            o
            for o in stores
            if o.buffer in args
            and o.buffer.type == temp.type
            and _same_indices(o.indices, load.indices)
        ]
        if len({o.buffer for o in found}) != 1:
            return None
        epilogue_stores.setdefault(found[0].buffer, []).extend(found)
    if len(epilogue_stores) != 1:
        return None
    ((out, stores),) = epilogue_stores.items()
    if {id(o) for o in args[out]} != {id(o) for o in stores}:
        return None  # the output is read, or written elsewhere
    order = {id(o): n for n, o in enumerate(_enclosing_func_op(temp).walk())}
    last_temp_store = max(order[id(o)] for o in users if isinstance(o, loop.StoreOp))
    if any(order[id(o)] < last_temp_store for o in stores):
        return None
    return out


def _enclosing_func_op(value: SSAValue) -> Operation:
    op = value.owner
    assert isinstance(op, Operation)
    while not isinstance(op, loop.FuncOp):
        parent = op.parent_op()
        assert parent is not None
        op = parent
    return op


def _same_indices(first, second) -> bool:
    """Equal index lists (the same values, or constants of the same value)."""
    return len(first) == len(second) and all(
        a is b or (int_constant(a) is not None and int_constant(a) == int_constant(b))
        for a, b in zip(first, second, strict=True)
    )


def reciprocal_divisions(func: loop.FuncOp) -> int:
    """Mark `arcp` the float divisions of a vectorized loop by a value invariant in
    it; returns how many.

    softmax's `e / sum` divides a whole row by one sum: a vector division per
    16 elements (`vdivps` is ~6x slower than `vmulps` on Zen 4; measured:
    a quarter of softmax's time). With `arcp` LLVM's LICM computes `1 / sum`
    once before the loop and multiplies (within an ulp of the division).
    """
    marked = 0
    for for_op in [o for o in func.walk() if isinstance(o, loop.ForOp)]:
        if for_op.kind_name != "vectorized":
            continue
        for div in [o for o in prim.body_ops(for_op) if isinstance(o, arith.DivfOp)]:
            if not _varies_in(div.rhs, for_op):
                flags = {*div.fastmath.data, FastMathFlag.ALLOW_RECIP}
                div.fastmath = arith.FastMathFlagsAttr(list(flags))
                marked += 1
    return marked


def _varies_in(value: SSAValue, for_op: loop.ForOp) -> bool:
    """Can `value` differ between iterations of `for_op` (its iv, or a load
    from a buffer the loop stores to, at any index)?"""
    owner = value.owner
    if not isinstance(owner, Operation) or not for_op.is_ancestor(owner):
        return value is for_op.induction_var
    if isinstance(owner, loop.LoadOp):
        if any(isinstance(o, loop.StoreOp) and o.buffer is owner.buffer for o in for_op.walk()):
            return True
    elif owner.regions or not is_side_effect_free(owner):
        return True
    return any(_varies_in(v, for_op) for v in owner.operands)


def balance_parallel(func: loop.FuncOp, cores: int) -> int:
    """Move `parallel` from a top-level loop of one iteration to the loop it
    holds; returns how many moved.

    A blocked convolution on 16 channels has one output-channel block: its
    parallel loop runs on one thread while the other cores idle (the
    ResNet-style CNN's first stage). The loop inside (output rows) is
    spatial: every buffer written in it is accessed at one fixed index
    position = its induction variable, so its iterations touch disjoint
    elements and may run on any thread -- the same test as row-stage
    fusion. One region per call either way.
    """
    if cores < 2:
        return 0
    moved = 0
    for outer in [o for o in func.body.blocks[0].ops if isinstance(o, loop.ForOp)]:
        try:
            if outer.kind_name != "parallel" or prim.trip_count(outer) != 1:
                continue
        except ScheduleError:
            continue
        inner = prim.body_ops(outer)
        if (
            len(inner) != 1
            or not isinstance(inner[0], loop.ForOp)
            or inner[0].kind_name != "serial"
        ):
            continue
        try:
            if prim.trip_count(inner[0]) < 2 * cores or not _spatial(inner[0]):
                continue
        except ScheduleError:
            continue
        outer.properties.pop("kind", None)
        prim.parallelize(inner[0])
        moved += 1
    return moved


def _spatial(for_op: loop.ForOp) -> bool:
    """Do the iterations of `for_op` touch disjoint elements of every buffer written in it?"""
    return _disjoint_by_iv([for_op])


def _disjoint_by_iv(loops: list[loop.ForOp]) -> bool:
    """Is every buffer written in `loops` accessed, in each loop, only at one
    fixed index position holding exactly that loop's induction variable?
    Then iteration i of any of them touches only slice i (no calls, no
    loop-carried values)."""
    if any(lp.iter_args or any(isinstance(o, loop.CallOp) for o in lp.walk()) for lp in loops):
        return False
    accesses = {
        lp: [o for o in lp.walk() if isinstance(o, loop.LoadOp | loop.StoreOp)] for lp in loops
    }
    written = {o.buffer for ops in accesses.values() for o in ops if isinstance(o, loop.StoreOp)}
    position: dict[SSAValue, int] = {}
    for lp, ops in accesses.items():
        for o in ops:
            if o.buffer not in written:
                continue
            at = _iv_position(o.indices, lp.induction_var)
            if at is None or position.setdefault(o.buffer, at) != at:
                return False
    return True


def _gather_allocations(block: Block) -> None:
    """Allocations and constants go before the first loop and frees before the
    terminator, so the stages between them become adjacent (a longer buffer
    life, nothing else)."""
    loops = [op for op in block.ops if isinstance(op, loop.ForOp)]
    if len(loops) < 2 or block.last_op is None:
        return
    for op in list(block.ops):
        if isinstance(op, loop.AllocOp | arith.ConstantOp) and not op.operands:
            op.detach()
            Rewriter.insert_op(op, InsertPoint.before(loops[0]))
        elif isinstance(op, loop.FreeOp):
            op.detach()
            Rewriter.insert_op(op, InsertPoint.before(block.last_op))


def _kinds_fusable(first: loop.ForOp, second: loop.ForOp) -> bool:
    """Same kind, or one parallel and one serial: the fused loop is parallel
    (its iterations are independent, `_disjoint_by_iv`), and the stage too
    small for a thread team of its own (a bias+relu epilogue, `lower-te`'s
    `PARALLEL_MIN_WORK`) joins its neighbour's instead of running on the
    calling thread alone while the other cores wait."""
    kinds = {first.kind_name, second.kind_name}
    return len(kinds) == 1 or kinds == {"parallel", "serial"}


def _row_stages_fusable(first: loop.ForOp, second: loop.ForOp) -> bool:
    try:
        if prim.bounds(first) != prim.bounds(second):
            return False
    except ScheduleError:
        return False
    return _disjoint_by_iv([first, second])


def _iv_position(indices, iv: SSAValue) -> int | None:
    """The index position holding exactly `iv` (None: none, or `iv` used elsewhere too)."""
    at = [d for d, index in enumerate(indices) if index is iv]
    if len(at) != 1 or any(_depends_on(i, iv) for d, i in enumerate(indices) if d != at[0]):
        return None
    return at[0]


def default_schedule(func: loop.FuncOp, facts: CpuFacts) -> int:
    """Register-block every reduction nest of `func`; returns how many were blocked."""
    nests = [
        nest
        for op in func.walk()
        if isinstance(op, loop.ForOp) and (nest := ReductionNest.match(op)) is not None
    ]
    blocked = 0
    for nest in nests:
        if not _reused_across_rows(nest):
            nest = _rows_from_enclosing(nest)
            if nest is None:
                continue
        shape = choose_block(
            prim.trip_count(nest.outer), prim.trip_count(nest.fill), nest.element_bits(), facts
        )
        if shape is not None and shape.rows > 1:
            register_block(nest, shape, facts)
            blocked += 1
    return blocked


def _rows_from_enclosing(nest: ReductionNest) -> ReductionNest | None:
    """Block the loop around the nest instead, when its rows share the row's loads.

    An NCHW convolution's nest is `for o { for h { fill; reduce } }`: rows
    `h` read different input rows, but rows `o` (output channels) all read
    the same input vector `x[c, h+kh, w+kw]` with a broadcast weight each.
    Interchanging `o` inside `h` makes them the nest's rows: each input
    vector then feeds one FMA per blocked output channel (a pointwise
    convolution runs ~2x faster). The parallel kind stays outermost.
    """
    enclosing = nest.outer.parent_op()
    if not isinstance(enclosing, loop.ForOp) or enclosing.iter_args:
        return None
    if prim.body_ops(enclosing) != [nest.outer] or nest.outer.iter_args:
        return None
    iv = enclosing.induction_var
    if not any(
        isinstance(o, loop.StoreOp) and any(_depends_on(i, iv) for i in o.indices)
        for o in nest.row.walk()
    ):
        return None  # not a spatial loop of the result
    kind = enclosing.properties.get("kind")
    try:
        top = prim.interchange(enclosing)
    except ScheduleError:
        return None
    if kind is not None:
        top.properties["kind"] = kind
        enclosing.properties.pop("kind", None)
    moved = ReductionNest.match(enclosing)
    if moved is None or not _reused_across_rows(moved):
        return None
    return moved


_DIRECTIVE = re.compile(r"^\s*(\w+)\s*(?:\(\s*(\d+)\s*\))?\s*$")


def apply_directive(op: loop.ForOp, text: str, facts: CpuFacts) -> None:
    """Apply one `lamina.schedule` directive to its loop (ScheduleError if it cannot)."""
    match = _DIRECTIVE.match(text)
    if match is None:
        raise ScheduleError(f"cannot parse schedule directive '{text}'")
    name, arg = match.group(1), match.group(2)
    needs_arg = {"split", "pack"}
    if (name in needs_arg) != (arg is not None):
        raise ScheduleError(
            f"'{name}' takes {'one integer argument' if name in needs_arg else 'no argument'}"
        )
    if name == "split":
        prim.split(op, int(arg))
    elif name == "pack":
        func = _enclosing_func(op)
        index = int(arg)
        if index >= len(func.body.blocks[0].args):
            raise ScheduleError(f"pack: the function has no argument {index}")
        prim.pack(op, func.body.blocks[0].args[index])
    elif name == "fuse":
        second = op.next_op
        if not isinstance(second, loop.ForOp):
            raise ScheduleError("fuse needs a loop right after this one")
        prim.fuse(op, second)
    elif name == "register_block":
        _register_block_directive(op, facts)
    elif name in _SIMPLE:
        _SIMPLE[name](op)
    else:
        known = ", ".join(sorted({"split", "pack", "fuse", "register_block", *_SIMPLE}))
        raise ScheduleError(f"unknown schedule primitive '{name}' (known: {known})")


_SIMPLE = {
    "interchange": prim.interchange,
    "unroll": prim.unroll,
    "unroll_and_jam": prim.unroll_and_jam,
    "vectorize": prim.vectorize,
    "parallel": prim.parallelize,
}


def _register_block_directive(op: loop.ForOp, facts: CpuFacts) -> None:
    nest = ReductionNest.match(op)
    if nest is None:
        raise ScheduleError(
            "register_block needs a loop holding a vectorized fill loop and a "
            "reduction nest ending in a vectorized loop with the same bounds"
        )
    shape = choose_block(
        prim.trip_count(op), prim.trip_count(nest.fill), nest.element_bits(), facts
    )
    if shape is None:
        raise ScheduleError("register_block: the rows are too short to block")
    register_block(nest, shape, facts)


def _enclosing_func(op: loop.ForOp) -> loop.FuncOp:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, loop.FuncOp):
        parent = parent.parent_op()
    if parent is None:
        raise ScheduleError("the loop is not inside a loop.func")
    return parent


@dataclass(frozen=True)
class SchedulePass(LaminaPass):
    """Loop schedules: register-blocked micro-kernels by default, `lamina.schedule` directives on request.

    Input invariant: phase `lowering`; loop nests as `lower-te` emits them.
    Output IR: reduction nests accumulating rows in memory become
    register-blocked micro-kernels (sizes from the target's vector width and
    register count); loops with a `lamina.schedule` directive are transformed
    by that primitive instead; divisions by a loop-invariant value in a
    vectorized loop carry `fastmath<arcp>`.
    Invariants: every output element is computed by the same operations in
    the same order (a division by a loop-invariant value may become a
    multiplication by its reciprocal, within an ulp); a directive that
    cannot apply is a diagnostic at its loop.
    """

    name = "schedule"
    phases: ClassVar[frozenset[Phase]] = frozenset({Phase.LOWERING})
    requires: ClassVar[tuple[str, ...]] = ("lower-te",)

    vector_bits: int = 0
    """Override the host's vector width (bits; 0: detect), e.g. 256 on an AVX-512 host."""
    vector_registers: int = 0
    """Override the host's vector register count (0: detect)."""
    cores: int = 0
    """Override the number of cores parallel loops are balanced for (0: detect)."""
    default: bool = True
    """Apply the default schedules to functions without directives."""
    polynomial_math: bool = True
    """Expand f32 `math.exp`/`math.tanh` into vectorizable polynomials (`_vector_math`)."""

    def facts(self, module: ModuleOp) -> CpuFacts:
        """The module's cpu target facts (`lamina.targets`, else the host's), then
        this pass's overrides; an impossible override is a diagnostic, never
        silently a different kernel."""
        from lamina.target.registry import module_facts

        if self.vector_bits not in (0, 128, 256, 512):
            raise op_error(
                module,
                f"schedule: vector_bits must be 128, 256 or 512 (0: the target's), got {self.vector_bits}",
            )
        if self.vector_registers and not 8 <= self.vector_registers <= 64:
            raise op_error(
                module,
                f"schedule: vector_registers must be 8..64 (0: the target's), got {self.vector_registers}",
            )
        if self.cores < 0:
            raise op_error(module, f"schedule: cores must be >= 1 (0: detect), got {self.cores}")
        facts = module_facts(module)
        if self.vector_bits:
            facts = facts.replace(vector_bits=self.vector_bits)
        if self.vector_registers:
            facts = facts.replace(vector_registers=self.vector_registers)
        if self.cores:
            facts = facts.replace(cores=self.cores)
        return facts

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        facts = self.facts(op)
        for func in [f for f in op.walk() if isinstance(f, loop.FuncOp)]:
            directed = [
                o
                for o in func.walk()
                if isinstance(o, loop.ForOp) and DIRECTIVE_ATTR in o.attributes
            ]
            if directed:
                for loop_op in directed:
                    self._apply_directive(loop_op, facts)
            elif self.default:
                make_indices_affine(func)
                reuse_gathered_lines(func)
                default_schedule(func, facts)  # first: fusing stages would hide the nests
                fuse_row_stages(func)
                write_through_output(func)
                contract_temporaries(func)  # after: the output beats any temporary
                balance_parallel(func, facts.cores)
                reciprocal_divisions(func)
            if self.polynomial_math:
                expand_transcendentals(func)

    @staticmethod
    def _apply_directive(op: loop.ForOp, facts: CpuFacts) -> None:
        attr = op.attributes.pop(DIRECTIVE_ATTR)
        if not isinstance(attr, StringAttr):
            raise op_error(op, f"'{DIRECTIVE_ATTR}' must be a string attribute")
        try:
            apply_directive(op, attr.data, facts)
        except ScheduleError as err:
            raise op_error(op, f"schedule: {err}") from None
