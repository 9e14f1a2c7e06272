"""Register blocking: reductions that accumulate rows in memory become micro-kernels.

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

    for io step MR kind(parallel) {           // split(L, MR); the M mod MR tail
      for jo step NR {                        //   rows: one block of their height
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
that MR·nv accumulators + nv B vectors + the broadcasts fit the vector
registers: up to 10×32 on AVX-512 (8×32 at M = 1024; one broadcast per
row, LLVM hoists them), 6×16 on AVX2 (one broadcast register,
`block_broadcast_registers`: each row then keeps its own vectorized loop
inside the jammed reduction, so that LLVM broadcasts a row's A element
right before its FMAs instead of hoisting all six and spilling). The C
tile's addresses are invariant in `k`, so LLVM keeps the MR·nv
accumulators in registers across the reduction loop (checked in the
assembly). Batched matmuls (the `b` loop outside `L`),
matmuls in MLPs/attention match the same shape. A row that no vector count
divides (attention's scores over 197 tokens) is split: whole column blocks
as above, then the last columns as rows of one short vector. A nest whose rows do not
share the vector loaded along the row (a convolution's output rows read
different input rows) is not blocked by default: there the layout's
channel blocking is what pays (`register_block` directive still applies).

A channel-blocked pointwise convolution (`out[n, ko, oh, ow, ki]`, rows =
output columns, the row = one vector of output channels) whose output row
is longer than one register block also computes F output-channel blocks
per input broadcast: `block_reductions` sizes the rows for F x rows
accumulators and marks the `ko` loop; `jam_channel_blocks` (after stage
fusion, so that the epilogue is jammed too) splits it by F and
unroll-and-jams the F blocks (`channel_jam`; docs/performance.md,
"Pointwise convolutions").
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr, MemRefType
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from lamina.dialects import loop
from lamina.dialects.loop import LoopKind
from lamina.schedule import primitives as prim
from lamina.schedule.dependence import depends_on
from lamina.schedule.int_analysis import int_constant
from lamina.schedule.packing import pack_group, pack_panels, panels_by_block
from lamina.schedule.parallel import distribute_columns
from lamina.schedule.primitives import ScheduleError
from lamina.schedule.weight_prefetch import (
    prefetch_next_blocks,
    prefetch_next_chunk,
    prefetch_next_step,
)
from lamina.schedule.winograd import winograd_channel_jam
from lamina.target.cpu_facts import CpuFacts
from lamina.target.schedule_knobs import ScheduleKnobs


@dataclass(frozen=True)
class BlockShape:
    """A register block: `rows` × `columns` accumulators, `vectors` registers per row."""

    rows: int
    vectors: int
    columns: int


def choose_block(
    m: int,
    n: int,
    element_bits: int,
    facts: CpuFacts,
    knobs: ScheduleKnobs | None = None,
    jam: int = 1,
) -> BlockShape | None:
    """The register block for an M × N output tile, or None when blocking cannot help.

    Vectors per row: nv = 2, 1, 4 or 3 (the first of `block_vector_choices`
    whose nv·lanes divides N), or the whole row when it is at most
    `block_max_vectors` vectors long -- also a row of at
    least half a vector (a classifier's 10 outputs: one masked vector per row,
    2x faster than accumulating the row in memory). Rows: as many as
    leave room for MR·nv accumulators, nv B vectors and the broadcasts
    (`max_block_rows`: MR of them where LLVM hoists all MR broadcasts of a
    step before its FMAs, measured on AVX-512: 8 × 32 beats 12 × 32 and
    14 × 32, which spill; `block_broadcast_registers` at 16 registers);
    preferably a divisor of M (no tail rows); `block_rows` forces that many.
    """
    knobs = knobs or ScheduleKnobs.for_cpu(facts)
    lanes = facts.lanes(element_bits)
    if 2 * n < lanes:
        return None
    vectors = next((nv for nv in knobs.block_vector_choices if n % (nv * lanes) == 0), None)
    if vectors is not None:
        columns = vectors * lanes
    elif n <= knobs.block_max_vectors * lanes:
        vectors, columns = -(-n // lanes), n
    else:
        return None
    if knobs.block_rows:
        return BlockShape(min(m, knobs.block_rows), vectors, columns)
    most = max_block_rows(vectors * jam, facts.vector_registers, knobs.block_broadcast_registers)
    if m <= most:
        return BlockShape(m, vectors, columns)
    if jam > 1 and knobs.block_broadcast_registers and knobs.conv_channel_jam_everywhere:
        return BlockShape(balanced_rows(m, most), vectors, columns)
    if knobs.block_broadcast_registers and vectors * jam > 1:
        return BlockShape(_cheapest_rows(m, most, vectors * jam), vectors, columns)
    # A divisor of M leaves no tail rows (a shorter block of their own). With one
    # broadcast register and one vector per row (14 rows of 8 lanes, e.g. a
    # 1x1 convolution computed as weights @ pixels in NCHW) the largest block is
    # taken only when its tail is at most 1/32 of M: 64 output channels as 8
    # blocks of 8 (on a packed panel) were 7 % faster than 4 of 14 and a tail.
    divisor = next((r for r in range(most, (most - 1) // 2, -1) if m % r == 0), None)
    if divisor is None or (knobs.block_broadcast_registers and 32 * (m % most) <= m):
        return BlockShape(most, vectors, columns)
    return BlockShape(divisor, vectors, columns)


FMA_ACCUMULATORS = 8
"""Independent accumulators that keep both FMA pipes busy (4 cycles of latency
× 2 pipes on Zen 3/4 and on Intel since Skylake): a block with fewer waits on
its own FMAs."""


def _cheapest_rows(m: int, most: int, vectors: int) -> int:
    """Rows per block (most/2..most) that cover M rows in the fewest cycles, ties to the larger.

    With 16 registers the blocks are small (6 × 16 at most) and each reduction
    step of a block costs max(MR·NR, 8) / 2 cycles of FMAs plus about one of
    its own (NR B loads, loop): a tail block of two rows is latency-bound, so
    M = 8 takes 4 + 4 rows, while M = 16, 32, 64 take 6-row blocks and a tail
    of 4 or 2 rather than 4-row blocks (measured on the AVX2 build, one thread,
    M × 512 @ 512 × 512: M = 64 0.333 → 0.311 ms, M = 40 0.213 → 0.201,
    M = 16 0.095 → 0.091; M = 8 4 + 4 0.054 against 6 + 2 0.058 ms).
    """

    def step(rows: int) -> float:
        return max(rows * vectors, FMA_ACCUMULATORS) / 2 + 1

    def cycles(rows: int) -> float:
        return (m // rows) * step(rows) + (step(m % rows) if m % rows else 0)

    return min(range(most, (most - 1) // 2, -1), key=lambda r: (cycles(r), -r))


def balanced_rows(m: int, most: int) -> int:
    """Rows per block (at most `most`, at least half of it) whose smallest block,
    the M mod MR tail or a whole block, is the largest; the larger rows on a tie.

    For the channel-jammed convolution blocks of 16 registers (one broadcast
    register: F blocks leave room for (15 - F) / F rows), where the tail is
    what costs: 14 columns as 6 + 6 + 2 rows x 2 blocks leave a block of 4
    accumulators, half the FMA latency x 2 pipes an AVX2 core needs in
    flight; 5 + 5 + 4 keep 8-10. So 7 -> 4 + 3, 14 -> 5 + 5 + 4, 16 -> 6 +
    6 + 4, 49 (Winograd's 7 x 7 tiles) -> 9 x 5 + 4, 56 -> 14 x 4."""
    candidates = range(most, (most - 1) // 2, -1)
    return max(candidates, key=lambda r: (m % r or r, r))


def max_block_rows(vectors: int, registers: int, broadcasts: int) -> int:
    """Most rows MR such that MR·nv accumulators, nv B vectors and the broadcasts
    (`broadcasts` registers, or MR of them when 0) fit `registers`."""
    if broadcasts:
        return max(1, (registers - vectors - broadcasts) // vectors)
    return max(1, (registers - vectors) // (vectors + 1))


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
        if fill.kind_name != LoopKind.VECTORIZED or any(
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
        if row is reduction or row.kind_name != LoopKind.VECTORIZED:
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

    def block(self, facts: CpuFacts, knobs: ScheduleKnobs, jam: int = 1) -> BlockShape | None:
        """`choose_block` for this nest's rows and row (`jam` blocks per row)."""
        return choose_block(
            prim.trip_count(self.outer),
            prim.trip_count(self.fill),
            self.element_bits(),
            facts,
            knobs,
            jam,
        )

    def element_bits(self) -> int:
        for o in self.row.walk():
            if isinstance(o, loop.StoreOp):
                memref = o.buffer.type
                assert isinstance(memref, MemRefType)
                return memref.element_type.bitwidth  # type: ignore[attr-defined]
        return 32


def register_block(
    nest: ReductionNest, shape: BlockShape, cores: int, knobs: ScheduleKnobs
) -> loop.ForOp:
    """Apply the micro-kernel schedule of the module docstring; returns its outermost loop.

    When the row is split into column blocks, the column-block loop goes
    outermost and the operands read along the row (B of a matmul) are
    packed per column block into a contiguous local panel when the panel
    fits half of L2 and enough row blocks share it (`schedule/packing.py`):
    B's rows are often a power of two apart (4 KiB at N = 1024), which maps
    a whole unpacked panel onto a few L1 sets.
    """
    top = None
    columns_inside = False
    if shape.columns < prim.trip_count(nest.fill):
        if knobs.block_rows_outside_columns:
            _columns_inside(nest, shape)
            columns_inside = True
        else:
            group = panel_group(nest, shape, knobs)
            top = _columns_outermost(nest, shape, knobs, group)
            columns_inside = group > 1
    rows_outer, rows_inner, tail = prim.split(nest.outer, shape.rows)
    if top is None:
        top = rows_outer
    else:
        distribute_columns(top, rows_outer, cores, knobs)
    prim.unroll_and_jam(rows_inner, jam_vectorized=not knobs.block_broadcast_registers)
    if tail is not None and columns_inside:  # tail rows { columns { F; R } }: swap them
        tail = prim.body_ops(prim.interchange(tail))[0]
        assert isinstance(tail, loop.ForOp)
    if tail is not None and (tail_nest := ReductionNest.match(tail)) is not None:
        _block_tail(tail_nest, shape, cores, knobs)
    return top


def _columns_inside(nest: ReductionNest, shape: BlockShape) -> None:
    """Split the row into column blocks whose loop stays inside the rows
    (`block_rows_outside_columns`): `L { columns { F; R } }`, so that the row
    blocks, split from L afterwards, each visit every column block."""
    _blocks_inside(nest.outer, nest.fill, nest.row, shape.columns)


def _blocks_inside(rows: loop.ForOp, fill: loop.ForOp, row: loop.ForOp, columns: int) -> None:
    """`rows { F; R }` -> `rows { blocks { F; R } }`: `fill` and `row` split by
    `columns`, their block loops fused just inside `rows`."""
    fill_outer, _, _ = prim.split(fill, columns)
    row_outer, _, _ = prim.split(row, columns)
    while (parent := row_outer.parent_op()) is not rows:
        assert isinstance(parent, loop.ForOp)
        row_outer = prim.interchange(parent)
    prim.fuse(fill_outer, row_outer)


def panel_group(nest: ReductionNest, shape: BlockShape, knobs: ScheduleKnobs) -> int:
    """Column blocks per packed panel of a matmul (`matmul_panel_group`), 1 for
    one: the largest count up to the knob that divides the row's blocks and
    whose panel (K x count x NR elements) fits `pack_max_bytes`, when the
    operand the rows broadcast (A) takes more than half of L2 (`pack_max_bytes`)
    and is read in place. Each row block then computes `count` column blocks
    one after the other on the rows of A it has just read: A streams from L3
    once per group rather than once per column block (docs/performance.md,
    "Matmul 1024: column blocks in groups")."""
    if knobs.matmul_panel_group < 2 or prim.body_ops(nest.reduction) != [nest.row]:
        return 1
    blocks = prim.trip_count(nest.fill) // shape.columns
    if prim.trip_count(nest.fill) % shape.columns or blocks < 2:
        return 1
    if _broadcast_bytes(nest) <= knobs.pack_max_bytes:
        return 1
    step_bytes = shape.columns * nest.element_bits() // 8
    steps = prim.trip_count(nest.reduction)
    return next(
        (
            g
            for g in range(min(knobs.matmul_panel_group, blocks), 1, -1)
            if blocks % g == 0 and g * steps * step_bytes <= knobs.pack_max_bytes
        ),
        1,
    )


def _columns_outermost(
    nest: ReductionNest, shape: BlockShape, knobs: ScheduleKnobs, group: int = 1
) -> loop.ForOp:
    """Split the row into column blocks and move their loop outside the rows; returns it.

    The rows are split into blocks afterwards, inside the column-block loop,
    so the M mod MR tail rows run there too: on its threads and on the
    panel packed for the column block (`pack_panels`, which decides on the
    number of row blocks that share the panel). Split first, the tail was
    a nest of its own after the column loop, serial and reading B in place
    (on AVX2 the 4 tail rows of M = 64 cost more than the 6-row blocks
    saved).
    """
    streamed = _row_operands(nest)
    fill_outer, fill_inner, _ = prim.split(nest.fill, shape.columns * group)
    row_outer, row_inner, _ = prim.split(nest.row, shape.columns * group)
    while (parent := row_outer.parent_op()) is not nest.outer:
        assert isinstance(parent, loop.ForOp)
        row_outer = prim.interchange(parent)
    columns = prim.fuse(fill_outer, row_outer)
    top = prim.interchange(nest.outer)
    assert top is columns
    row_blocks = prim.trip_count(nest.outer) // shape.rows
    if group == 1:
        pack_panels(nest.outer, streamed, knobs, row_blocks=row_blocks)
        return columns
    tiles = pack_group(nest.outer, streamed, knobs, row_blocks)
    _blocks_inside(nest.outer, fill_inner, row_inner, shape.columns)  # rows { blocks { F; R } }
    for tile in tiles:
        panels_by_block(tile, shape.columns)
    return columns


def _block_tail(nest: ReductionNest, shape: BlockShape, cores: int, knobs: ScheduleKnobs) -> None:
    """The M mod MR rows after the blocks get a block of their own height.

    Left as the original nest they accumulate in memory, and a pre-packed
    constant operand is read there through its panel index (`j / NR`,
    `j mod NR`), which does not vectorize: ViT-B/16's 197 rows left 7 such
    rows per MLP matmul, 8 GFLOP/s for the whole matmul against 53 at 190
    rows. As one short block they run the micro-kernel like the others."""
    register_block(
        nest, BlockShape(prim.trip_count(nest.outer), shape.vectors, shape.columns), cores, knobs
    )


def _row_operands(nest: ReductionNest) -> list[SSAValue]:
    """Buffers the innermost loop reads along the row (other than the destination)."""
    written = {o.buffer for o in nest.row.walk() if isinstance(o, loop.StoreOp)}
    iv = nest.row.induction_var
    found: list[SSAValue] = []
    for o in nest.row.walk():
        if isinstance(o, loop.LoadOp) and o.buffer not in written and o.buffer not in found:
            if any(depends_on(i, iv) for i in o.indices):
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
        if all(not depends_on(i, outer_iv) for load in loads for i in load.indices):
            return True
    return False


def block_reductions(func: loop.FuncOp, facts: CpuFacts, base_knobs: ScheduleKnobs) -> int:
    """Register-block every reduction nest of `func`; returns how many were blocked."""
    nests = [
        nest
        for op in func.walk()
        if isinstance(op, loop.ForOp) and (nest := ReductionNest.match(op)) is not None
    ]
    blocked = 0
    for nest in nests:
        knobs = base_knobs
        if not _reused_across_rows(nest):
            nest = _rows_from_enclosing(nest)
            if nest is None:
                continue
            channels, jam = None, 1
        else:
            channels, group = _channel_blocks_loop(nest)
            if channels is not None and not group and _wide_direct(nest, facts, knobs):
                knobs = knobs.replace(block_broadcast_registers=1)
            jam = channel_jam(nest, channels, facts, knobs, group) if channels is not None else 1
            if channels is None:
                knobs = _short_reduction_knobs(nest, facts, knobs)
        shape_knobs = _row_vector_knobs(nest, knobs)
        if jam > 1 and _wide_stem(nest, knobs):
            shape_knobs = shape_knobs.replace(block_broadcast_registers=1)
        shape = nest.block(facts, shape_knobs, jam)
        m, n = prim.trip_count(nest.outer), prim.trip_count(nest.fill)
        if (
            shape is None
            and jam == 1
            and m > 1
            and (whole := _whole_columns(n, nest.element_bits(), facts, knobs))
        ):
            copy = _split_column_tail(nest, whole)
            rows = max_block_rows(1, facts.vector_registers, knobs.block_broadcast_registers)
            register_block(copy, BlockShape(min(m, rows), 1, n - whole), facts.cores, knobs)
            shape = choose_block(m, whole, nest.element_bits(), facts, knobs)
        if shape is not None and shape.rows > 1:
            whole_row = shape.columns == prim.trip_count(nest.fill)
            chunk = reduction_chunk(nest, jam, shape, facts, knobs) if channels else 0
            rows_jam = direct_row_jam(nest, jam, shape, facts, knobs) if jam > 1 else 0
            if channels is None and whole_row and shape.rows < m:
                _pack_strided_panels(nest, knobs)
            register_block(nest, shape, facts.cores, knobs)
            if channels is not None and whole_row:
                if jam > 1:
                    channels.attributes[CHANNEL_JAM_ATTR] = IntegerAttr(jam, 64)
                    if rows_jam:
                        channels.attributes[ROW_JAM_ATTR] = IntegerAttr(rows_jam, 64)
                        if knobs.conv_direct_prefetch:
                            channels.attributes[STEP_PREFETCH_ATTR] = IntegerAttr(
                                knobs.conv_direct_prefetch, 64
                            )
                if chunk:
                    channels.attributes[REDUCTION_CHUNK_ATTR] = IntegerAttr(chunk, 64)
                    if knobs.conv_chunk_prefetch:
                        channels.attributes[CHUNK_PREFETCH_ATTR] = IntegerAttr(
                            knobs.conv_chunk_prefetch, 64
                        )
                        if knobs.conv_chunk_prefetch_spread:
                            channels.attributes[CHUNK_SPREAD_ATTR] = IntegerAttr(1, 64)
            blocked += 1
    return blocked


_SHORT_REDUCTION_MIN = 16
"""Fewest reduction steps `_short_reduction_knobs` jams: shorter reductions
(K = 3 or 8) were not measured and keep their blocks."""


def _short_reduction_knobs(
    nest: ReductionNest, facts: CpuFacts, knobs: ScheduleKnobs
) -> ScheduleKnobs:
    """`knobs` for a matmul nest, with no register kept for one broadcast at a
    time when its reduction has 16 to `block_jam_max_reduction` steps and
    its row spans two vectors or more (the 3-step reductions of one
    vector per row that MobileNetV2 has are left as they were: not
    measured).

    With a broadcast register (16 vector registers) each row keeps its own
    vectorized loop, and LLVM leaves the block's zero fill in memory: the
    accumulators are stored as zeros and loaded back before the reduction
    loop. Over 256-2048 steps that costs little; attention's Q.K^T (32
    steps per 6 x 16 block) spent half its time on those reloads. Jammed,
    the fill becomes register zeroing, as on AVX-512."""
    steps = prim.trip_count(nest.reduction)
    lanes = facts.vector_bits // nest.element_bits()
    if (
        knobs.block_broadcast_registers
        and _SHORT_REDUCTION_MIN <= steps <= knobs.block_jam_max_reduction
        and prim.trip_count(nest.fill) >= 2 * lanes
    ):
        return knobs.replace(block_broadcast_registers=0)
    return knobs


def _pack_strided_panels(nest: ReductionNest, knobs: ScheduleKnobs) -> int:
    """Pack the operands a whole-row matmul block reads along its row when
    their rows lie further apart than the row is long; returns how many.

    Attention's probabilities @ V read V in place from the QKV projection:
    32 columns of rows 768 floats (3 KiB) apart, whose 128 rows fall into 8
    of L1's 64 sets, so every row block fetched V_h from L2 again. Copied
    once per head into a contiguous 16 KiB panel, all the row blocks find it
    in L1. An operand whose rows are the row (B of K x N with N = NR) is
    contiguous already; one the copy would transpose is `pack_panels`' case."""
    iv = nest.row.induction_var
    n = prim.trip_count(nest.row)
    packed = 0
    for buffer in _row_operands(nest):
        memref = buffer.type
        loads = [o for o in nest.row.walk() if isinstance(o, loop.LoadOp) and o.buffer is buffer]
        if (
            not isinstance(memref, MemRefType)
            or memref.get_shape()[-1] <= n
            or not all(depends_on(o.indices[-1], iv) for o in loads)
            or prim.pack_transposes(nest.outer, buffer)
        ):
            continue
        try:
            prim.pack(nest.outer, buffer, max_bytes=knobs.pack_max_bytes)
            packed += 1
        except ScheduleError:
            pass  # not a plain tile: read in place
    return packed


def _row_vector_knobs(nest: ReductionNest, knobs: ScheduleKnobs) -> ScheduleKnobs:
    """The knobs `choose_block` sizes this nest's rows with: a nest whose every
    row reads a vector of its own (a depthwise convolution's output column
    `ow` reads `x[.., ow*s + kw, j]` along the lanes `j`; only the weight is
    shared) counts one register per row for it (`block_broadcast_registers`
    0, as with 32 registers), not the one broadcast register of a matmul's
    row. LLVM keeps the input vectors that neighbouring columns share across
    the taps (column `ow`'s tap `kw + s` is column `ow + 1`'s tap `kw`) in
    registers, and with 16 the 11- and 9-column blocks of 3x3 depthwise
    kernels spilled them to the stack. Measured on the AVX2 build (Zen 4,
    one thread, MobileNetV2's kernels called back to back, fastest of 15):
    96 channels, stride 2 at 112x112, 11 -> 5 columns 172 -> 148 us (7: 139);
    144 channels at 56x56, 9 -> 6 columns 171 -> 145 us."""
    if knobs.block_broadcast_registers and _rows_read_own_vectors(nest):
        return knobs.replace(block_broadcast_registers=0)
    return knobs


def _rows_read_own_vectors(nest: ReductionNest) -> bool:
    """Does the row loop load a vector that depends on the block's row (the outer
    loop), other than the accumulator it stores to?"""
    outer_iv, row_iv = nest.outer.induction_var, nest.row.induction_var
    stored = {o.buffer for o in nest.row.walk() if isinstance(o, loop.StoreOp)}
    return any(
        isinstance(o, loop.LoadOp)
        and o.buffer not in stored
        and any(depends_on(i, outer_iv) for i in o.indices)
        and any(depends_on(i, row_iv) for i in o.indices)
        for o in nest.row.walk()
    )


def _whole_columns(n: int, element_bits: int, facts: CpuFacts, knobs: ScheduleKnobs) -> int:
    """The longest prefix of a row of `n` columns that whole column blocks cover, when
    `n` has no block of its own (0: none, or too short to be worth a micro-kernel)."""
    lanes = facts.lanes(element_bits)
    width = max(knobs.block_vector_choices[0], 1) * lanes
    if n <= knobs.block_max_vectors * lanes or n < 2 * width:
        return 0
    return n - n % width


def _split_column_tail(nest: ReductionNest, whole: int) -> ReductionNest:
    """Split the nest's columns at `whole`: the nest keeps [0, whole), which whole
    column blocks cover, and a copy after it, returned, computes the last
    `n - whole` columns (the caller blocks it as rows of one short vector).
    Attention's scores over 197 tokens (ViT-B/16: Q · Kᵀ with N = 197) had no
    micro-kernel at all: no vector count divides 197 columns. Measured, 12 heads
    of 197 x 64 x 197, AVX-512, one thread: 41.8 GFLOP/s unblocked, 52 with the
    5 tail columns accumulating in memory, 72 with them blocked (192 columns
    alone: 92)."""
    tail = nest.outer.clone()
    Rewriter.insert_op(tail, InsertPoint.after(nest.outer))
    if tail.kind_name == LoopKind.PARALLEL:
        tail.set_kind(LoopKind.SERIAL)
    copy = ReductionNest.match(tail)
    assert copy is not None, "a clone of a matched nest matches"
    cut = prim.index_constant(nest.outer, whole)
    for loop_op in (nest.fill, nest.row):
        loop_op.operands[1] = cut
    for loop_op in (copy.fill, copy.row):
        loop_op.operands[0] = cut
    return copy


CHANNEL_JAM_ATTR = "lamina.jam_channels"
"""Marks the output-channel-block loop of a blocked convolution whose
micro-kernel `jam_channel_blocks` widens (the number of blocks per step)."""

ROW_JAM_ATTR = "lamina.jam_rows"
"""Marks the output-channel-block loop of a direct convolution whose output
rows `jam_channel_blocks` also jams (`conv_direct_row_jam`): the number of
image rows per step."""

REDUCTION_CHUNK_ATTR = "lamina.reduction_chunk"
"""Marks the output-channel-block loop of a jammed pointwise convolution whose
reduction `jam_channel_blocks` chunks (`chunk_reductions`): the number of
input-channel blocks per chunk."""

CHUNK_PREFETCH_ATTR = "lamina.chunk_prefetch"
"""Cache level (`llvm.prefetch` locality) a chunked pointwise convolution
prefetches its next chunk's weights into (`conv_chunk_prefetch`,
`prefetch_next_chunk`), set with `REDUCTION_CHUNK_ATTR`."""

STEP_PREFETCH_ATTR = "lamina.step_prefetch"
"""Set with `ROW_JAM_ATTR` (`conv_direct_prefetch`): the cache level a
row-jammed direct convolution prefetches its next output-channel step's
weights into, spread over the current step's row passes
(`prefetch_next_step`)."""

CHUNK_SPREAD_ATTR = "lamina.chunk_prefetch_spread"
"""Set with `CHUNK_PREFETCH_ATTR` (`conv_chunk_prefetch_spread`): the
prefetches are spread over every input-channel step of the register blocks."""


def _channel_blocks_loop(nest: ReductionNest) -> tuple[loop.ForOp | None, int]:
    """The loop over output-channel blocks around a channel-blocked
    convolution's nest (`ko` of `out[n, ko, oh, ow, ki]`), or None; and its
    group: 0 for a dense convolution, G for a grouped one whose G
    consecutive output-channel blocks share their input blocks.

    It encloses the nest through loops whose body is one loop, indexes the
    result and the operand every row shares (the weight `w[ko, cb, .., ki]`),
    but no operand that depends on the rows (the input `x[n, cb, oh, ow,
    ci]`, broadcast per row): one broadcast then feeds an FMA per channel
    block. A grouped convolution's input is indexed by `ko / G * G + cb`
    (`_group_of`): the G blocks of one group read the same input, so up to G
    of them share a broadcast. A matmul's batch loop indexes both operands
    and is never taken.
    """
    outer_iv = nest.outer.induction_var
    stores = [o for o in nest.row.walk() if isinstance(o, loop.StoreOp)]
    written = {o.buffer for o in stores}
    loads = [o for o in nest.row.walk() if isinstance(o, loop.LoadOp) and o.buffer not in written]
    row_loads = [o for o in loads if any(depends_on(i, outer_iv) for i in o.indices)]
    candidate = nest.outer.parent_op()
    while isinstance(candidate, loop.ForOp) and not candidate.iter_args:
        iv = candidate.induction_var
        group = _group_of([i for o in row_loads for i in o.indices], iv)
        if (
            candidate.kind_name != LoopKind.VECTORIZED
            and any(depends_on(i, iv) for o in stores for i in o.indices)
            and any(depends_on(i, iv) for o in loads if o not in row_loads for i in o.indices)
            and group is not None
        ):
            return candidate, group
        parent = candidate.parent_op()
        if not isinstance(parent, loop.ForOp) or len(prim.body_ops(parent)) != 1:
            return None, 0
        candidate = parent
    return None, 0


def _group_of(indices: list[SSAValue], iv: SSAValue) -> int | None:
    """0 when no index depends on `iv`; G when each reaches it only through
    `iv / G` (one G for all: a grouped convolution's input-block index);
    None for any other dependence."""
    groups: set[int] = set()

    def visit(value: SSAValue) -> bool:
        if value is iv:
            return False
        owner = value.owner
        if isinstance(owner, arith.DivUIOp) and owner.lhs is iv:
            g = int_constant(owner.rhs)
            if g is None or g < 1:
                return False
            groups.add(g)
            return True
        return not isinstance(owner, Operation) or all(visit(v) for v in owner.operands)

    if not all(visit(i) for i in indices) or len(groups) > 1:
        return None
    return groups.pop() if groups else 0


def channel_jam(
    nest: ReductionNest,
    channels: loop.ForOp,
    facts: CpuFacts,
    knobs: ScheduleKnobs,
    group: int = 0,
) -> int:
    """Output-channel blocks F per micro-kernel step of a channel-blocked
    convolution: `conv_channel_jam` when set, else for a pointwise (1x1)
    convolution whose output row is longer than one one-block register
    block (28 or 56 columns: 14 rows on AVX-512 and on AVX2), the first of
    `conv_channel_jam_choices` dividing the blocks; else 1.

    Measured (one thread, the 1x1 kernel alone, medians of interleaved
    rounds against onnxruntime's own kernel time, docs/performance.md,
    "Pointwise convolutions"): on such rows two blocks per step gain up to
    1.2x (AVX-512 24->144 at 56x56, 40->240 at 28x28; AVX2 144->24 at
    56x56, 64->256 at 56x56) and lose nowhere; on a row of 7 or 14 columns
    (one block of 7 or 14 rows already) they gain nothing on AVX-512 and
    lose up to 1.2x on AVX2, where 2 blocks leave room for 6 rows only, so
    the row gets an unblocked tail. Nor when the F blocks' weights and the
    row block's input overflow L1 (`_fits_l1`).

    On 16 registers (`conv_channel_jam_everywhere`, AVX2) the jam applies to
    every row length and footprint, and to direct convolutions whose
    reduction steps through whole input-channel blocks (`_channel_steps`):
    there a one-block step is R broadcast loads + 1 weight load for R FMAs,
    more loads than two FMA pipes are fed per cycle, and F blocks cut it to
    R + F loads for R·F FMAs; the rows are balanced (`balanced_rows`) so
    that no block is left with a tail of 1-2 rows (what lost before).
    Measured, AVX2 build, one thread, the rule off -> on
    (docs/performance.md, "AVX2 convolutions: channel jam everywhere"):
    1024->256 at 14x14 0.94x the time, 512->2048 at 7x7 0.92x, 512->128 at
    28x28 (overflows L1) 0.92x, 3x3 stride 2 128->128 at 56x56 0.69x,
    Winograd's products at 7x7 (512->512) 0.74x; none slower."""
    trips = prim.trip_count(channels)
    everywhere = knobs.conv_channel_jam_everywhere
    if knobs.conv_channel_jam:
        choices: tuple[int, ...] = (knobs.conv_channel_jam,)
    elif winograd := winograd_channel_jam(nest.row, trips, knobs):  # schedule/winograd.py
        return winograd
    elif knobs.conv_pointwise_jam_max and not everywhere and not group and _pointwise(nest):
        return _wide_pointwise_jam(nest, trips, facts, knobs)
    elif (
        knobs.conv_direct_jam_max
        and not everywhere
        and not group
        and not _pointwise(nest)
        and _channel_steps(nest, facts)
    ):
        return _wide_pointwise_jam(nest, trips, facts, knobs, knobs.conv_direct_jam_max)
    elif _wide_stem(nest, knobs) and not group:
        return next(
            (f for f in range(min(knobs.conv_stem_jam_wide, trips), 1, -1) if trips % f == 0), 1
        )
    else:
        one = nest.block(facts, knobs)
        if one is None:
            return 1
        if everywhere:
            stem = knobs.conv_stem_channel_jam and _one_channel_blocks(nest)
            if not (_pointwise(nest) or _channel_steps(nest, facts) or stem):
                return 1
        elif one.rows >= prim.trip_count(nest.outer) or not _pointwise(nest):
            return 1
        choices = knobs.conv_channel_jam_choices
    if group:  # a grouped convolution: only blocks of one group share their input
        if (
            not knobs.conv_channel_jam
            and prim.trip_count(nest.outer) < knobs.conv_grouped_jam_min_row
        ):
            return 1
        choices = tuple(f for f in choices if group % f == 0)
    jam = next((f for f in choices if f <= trips and trips % f == 0), 1)
    if knobs.conv_channel_jam or jam == 1 or everywhere or _fits_l1(nest, jam, facts, knobs):
        return jam
    return 1


def _wide_direct(nest: ReductionNest, facts: CpuFacts, knobs: ScheduleKnobs) -> bool:
    """Does `conv_direct_row_jam` size this nest's register block: a dense
    direct convolution jammed by `conv_direct_jam_max` (not pointwise, its
    reduction stepping through whole input-channel blocks) on 32 registers?
    Its rows are then sized for one broadcast register, as a wide stem's
    (`_wide_stem`): LLVM broadcasts each input element once and feeds the F
    blocks' FMAs from it."""
    return (
        knobs.conv_direct_row_jam > 0
        and knobs.conv_direct_jam_max > 0
        and not knobs.conv_channel_jam_everywhere
        and not knobs.conv_channel_jam
        and not _pointwise(nest)
        and _channel_steps(nest, facts)
    )


def direct_row_jam(
    nest: ReductionNest, jam: int, shape: BlockShape, facts: CpuFacts, knobs: ScheduleKnobs
) -> int:
    """Output rows per step of a jammed direct convolution (`conv_direct_row_jam`),
    0 for one: where one register block of `jam` output-channel blocks covers
    the whole output row (R columns), the largest J up to the knob and the
    image's rows whose J x F x R accumulators, F weight vectors and one
    broadcast register fit the vector registers. `_jam_rows` unrolls and jams
    the row loop by J; the rows left over are a step of their own.

    A 7-column row of 2 blocks (ResNet's 3x3 stride-2 512 -> 512 to 7x7;
    4 blocks would leave 6 + 1 columns) loads a weight vector per 7 FMAs and
    re-reads the blocks' 590 KiB of weights from L2 for every output row; two
    rows per step halve both."""
    most = knobs.conv_direct_row_jam
    if most < 2 or not _wide_direct(nest, facts, knobs):
        return 0
    if shape.rows < prim.trip_count(nest.outer):
        return 0
    image = nest.outer.parent_op()
    image_rows = prim.trip_count(image) if isinstance(image, loop.ForOp) else 0
    accumulators = jam * shape.rows * shape.vectors
    for rows in range(min(most, image_rows), 1, -1):
        if rows * accumulators + jam * shape.vectors + 1 <= facts.vector_registers:
            return rows
    return 0


def _wide_pointwise_jam(
    nest: ReductionNest, trips: int, facts: CpuFacts, knobs: ScheduleKnobs, most: int = 0
) -> int:
    """Blocks per step of a pointwise convolution on a core with two 512-bit
    FMA pipes (`conv_pointwise_jam_max`): the largest F down to 2 dividing
    the `trips` output-channel blocks whose register block has two rows or
    more (`block_reductions` leaves a one-row block unblocked) and fits the
    registers (`_most_rows`; a larger F is skipped, not the end of the
    search) and leaves no tail block of fewer than half its rows, on any row
    length and L1 footprint; 1 when none does.

    One block per step of R rows loads R broadcasts and a weight vector for
    R FMAs: two FMA pipes wait on the loads (ResNet-50's 1x1 kernels ran at
    39-72 % of the FMA peak on Emerald Rapids). F blocks load R + F for R*F.
    At 7 columns 4 blocks fit 5 rows (5 + 2, a short block that measured
    1.02-1.17x onnxruntime against 0.83-0.87x for 7 rows x 2 or 3).

    `most`: the largest F tried (default `conv_pointwise_jam_max`); a direct
    convolution's is `conv_direct_jam_max`."""
    m = prim.trip_count(nest.outer)
    fitting = []
    for jam in range(min(most or knobs.conv_pointwise_jam_max, trips), 1, -1):
        shape = nest.block(facts, knobs, jam)
        if shape is None or not 2 <= shape.rows <= _most_rows(shape, jam, facts, knobs):
            continue  # no register block for F blocks (one row is not blocked): try fewer
        tail = m % shape.rows if shape.rows < m else 0
        if not tail or 2 * tail >= shape.rows:
            fitting.append(jam)
    # A divisor of the blocks first; else the fewest blocks left over (a tail
    # step of one block: 7 blocks as 3 + 3 + 1), the larger F on a tie.
    return min(fitting, key=lambda f: (trips % f, -f), default=1)


def _most_rows(shape: BlockShape, jam: int, facts: CpuFacts, knobs: ScheduleKnobs) -> int:
    """Most rows whose `jam` blocks of `shape` fit the vector registers
    (`max_block_rows`, at least 1). `choose_block` gives at least one row, so a
    user's `conv_pointwise_jam_max` of 16 at one vector per row would jam 16
    accumulators, 16 weights and a broadcast into 32 registers (spilled)
    rather than 8 blocks of 2 rows."""
    return max_block_rows(
        shape.vectors * jam, facts.vector_registers, knobs.block_broadcast_registers
    )


def _fits_l1(nest: ReductionNest, jam: int, facts: CpuFacts, knobs: ScheduleKnobs) -> bool:
    """Do the weights of `jam` output-channel blocks and the input of one row
    block (all input channels) fit L1 together? Else the jam's shorter row
    block re-reads them from L2: measured, ResNet-50's 256->64 at 56x56 and
    512->128 at 28x28 (40 and 80 KiB on AVX-512) lost 2-15 % with two
    blocks, while every jammed shape that gained needs at most 30 KiB."""
    bits = nest.element_bits()
    shape = nest.block(facts, knobs, jam)
    if shape is None:
        return False
    channels = 1
    for o in nest.reduction.walk():
        if isinstance(o, loop.ForOp) and o is not nest.row:
            channels *= prim.trip_count(o)
    return channels * (jam * shape.columns + shape.rows) * bits // 8 <= facts.l1d_bytes


def reduction_chunk(
    nest: ReductionNest, jam: int, shape: BlockShape, facts: CpuFacts, knobs: ScheduleKnobs
) -> int:
    """Input-channel blocks per reduction chunk of a pointwise convolution
    (`conv_reduction_chunk`), 0 for none: the largest divisor of its
    input-channel blocks that holds at most the knob's channels, when its
    `jam` blocks' weights and one register block's input over all input
    channels take more than half of L1 (else both stay in L1 unchunked),
    its input more than half of L2 (an input L2 holds streamed fast enough:
    chunking MobileNetV2's 576->96 at 14x14 took 1.10x the time) and there
    is more than one chunk. With `conv_chunk_min_channels` the input's size
    is not asked: the convolutions with that many input channels or more
    are chunked, the others not, and only with `CHUNK_JAM` blocks per step
    and rows of `_CHUNK_MIN_ROW_BLOCKS` register blocks or more (a flat pixel
    row, `schedule-flatten-rows`)."""
    if not knobs.conv_reduction_chunk or not _pointwise(nest):
        return 0
    loops = [o for o in nest.reduction.walk() if isinstance(o, loop.ForOp) and o is not nest.row]
    if len(loops) != 2:  # the input-channel blocks and the channels of a block
        return 0
    blocks, lanes = prim.trip_count(loops[0]), prim.trip_count(loops[1])
    footprint = blocks * lanes * (jam * shape.columns + shape.rows) * nest.element_bits() // 8
    if 2 * footprint <= facts.l1d_bytes:
        return 0
    if knobs.conv_chunk_min_channels:
        if blocks * lanes < knobs.conv_chunk_min_channels:
            return 0
        if jam != CHUNK_JAM or prim.trip_count(nest.outer) < _CHUNK_MIN_ROW_BLOCKS * shape.rows:
            return 0
    elif 2 * _broadcast_bytes(nest) <= facts.l2_bytes:
        return 0
    chunk = next(
        (d for d in range(knobs.conv_reduction_chunk // lanes, 0, -1) if blocks % d == 0), 0
    )
    return chunk if 1 < chunk < blocks else 0


CHUNK_JAM = 4
"""Output-channel blocks per step of the pointwise convolutions that
`conv_chunk_min_channels` chunks: 4 blocks keep 5 rows (20 accumulators, 4
weight vectors per 20 FMAs), whose weights unchunked stream from L2 at 64
bytes per 5 FMAs. Two blocks of 10 rows read half of that per FMA, and
chunking them lost: SqueezeNet's 512->1000 at 13x13 (63 blocks, 2 per step)
took 1.05x the time (Emerald Rapids, the kernel alone, 21 interleaved
rounds). `schedule-flatten-rows` flattens only images whose output-channel
blocks this divides."""

_CHUNK_MIN_ROW_BLOCKS = 4
"""Fewest register blocks a row must have for `conv_chunk_min_channels` to chunk
its reduction: a chunk's weights are read from L2 once per row and kept in L1
for its blocks. The 7- and 14-column rows that flattening leaves as they are
(MobileNetV2's 576->96 at 14x14, two blocks of 5 and a tail; EfficientNet-B0's
672->112 and 1152->192) took 1.02-1.05x the time chunked (Emerald Rapids, the
kernel alone, 21 interleaved rounds)."""


def _broadcast_bytes(nest: ReductionNest) -> int:
    """Size of the operand the rows broadcast from (a convolution's input)."""
    for o in _broadcast_loads(nest):
        if isinstance(kind := o.buffer.type, MemRefType):
            count = 1
            for d in kind.get_shape():
                count *= d
            return count * kind.element_type.bitwidth // 8  # type: ignore[attr-defined]
    return 0


def _pointwise(nest: ReductionNest) -> bool:
    """Is the reduction over the input channels only (a 1x1 convolution: at
    most two loops, the channel blocks and the channels in a block, around
    the row; one when the input is a single block, whose loop `lower-te`
    drops)? A window's loops (`kh`, `kw`) index the input's rows or columns
    added to an output position's variable; a channel loop indexes a
    dimension of its own. Missing the single-block case left MobileNet's
    16-channel expansions at 112x112 with one output-channel block per step
    (docs/performance.md, "Short reductions")."""
    loops = [o for o in nest.reduction.walk() if isinstance(o, loop.ForOp) and o is not nest.row]
    if not 1 <= len(loops) <= 2:
        return False
    reduced = [o.induction_var for o in loops]
    spatial = [
        o.induction_var
        for o in _enclosing_loops(nest.reduction)
        if o.kind_name != LoopKind.VECTORIZED
    ]
    outer_iv = nest.outer.induction_var
    for o in nest.row.walk():
        if not isinstance(o, loop.LoadOp) or not any(depends_on(i, outer_iv) for i in o.indices):
            continue
        for index in o.indices:
            if any(depends_on(index, r) for r in reduced) and any(
                depends_on(index, s) for s in spatial
            ):
                return False
    return True


def _enclosing_loops(op: loop.ForOp) -> list[loop.ForOp]:
    """The loops around `op`, innermost first."""
    found = []
    parent = op.parent_op()
    while isinstance(parent, loop.ForOp):
        found.append(parent)
        parent = parent.parent_op()
    return found


def _channel_steps(nest: ReductionNest, facts: CpuFacts) -> bool:
    """Is the reduction's innermost step a whole block of input channels (the
    loop around the row walks one vector's worth of them)? A stem read as
    `NCHW1c` (3 input channels) steps through its window columns there
    instead (`_one_channel_blocks`).

    Any number of input-channel blocks qualifies. 16->32 and 32->64 channels
    (2 and 4 blocks; 3x3 stride 2 at 64x64 and 32x32) once took 3.4x and 2.8x
    the one-block time jammed, and a gate of 8 blocks kept them unjammed: the
    cause was not the block count but the 32 and 16 output rows, a power of
    two, by which `lower-to-llvm` divided the flat index of the collapsed
    parallel loop (channel-block pairs x rows), so that LLVM could not tell
    the two jammed blocks' accumulators apart (`_row_by_row` in
    backends/llvm/parallel.py). With that fixed, jamming them takes 0.92x and
    0.88x the one-block time (AVX2 build, one thread, docs/performance.md
    "Jammed accumulators and collapsed loops")."""
    inner = nest.row.parent_op()
    if not isinstance(inner, loop.ForOp) or inner is nest.reduction.parent_op():
        return False
    return prim.trip_count(inner) == facts.lanes(nest.element_bits())


def _one_channel_blocks(nest: ReductionNest) -> bool:
    """Does each row broadcast its input from blocks of one channel (a stem,
    3 input channels read as `NCHW1c`, its reduction stepping through the
    window's columns)? Its one-block step is R broadcasts + 1 weight load
    for R FMAs, as in any direct convolution, and two output-channel blocks
    per broadcast pay there too. Measured, AVX2 build, one thread, the
    kernel alone (thread CPU time, medians of 30 interleaved rounds), one
    block -> two: 3x3 stride 2, 3->32 at 224x224 (MobileNet's,
    EfficientNet's stem) 345 -> 253 us; 7x7 stride 2, 3->64 (ResNet's)
    2780 -> 2323 us. (Once measured 2.3x slower jammed: that was before
    the jammed blocks' accumulators stayed in registers, "Jammed
    accumulators and collapsed loops" in docs/performance.md.)"""
    for o in _broadcast_loads(nest):
        kind = o.buffer.type
        if isinstance(kind, MemRefType) and kind.get_shape()[-1] == 1:
            return True
    return False


def _wide_stem(nest: ReductionNest, knobs: ScheduleKnobs) -> bool:
    """Does `conv_stem_jam_wide` jam this nest: a stem (`_one_channel_blocks`) on
    32 registers (`conv_channel_jam_everywhere` 0)? Its jammed rows are sized for
    one broadcast register (`block_reductions`): LLVM broadcasts each input
    element once into a register and feeds the F blocks' FMAs from it, so F x R
    accumulators, F weights and that register fill the 32 (2 blocks x 14
    rows), where the hoisted-broadcast rule of `max_block_rows` gave 10 rows
    and a 2-row tail on 112 columns. Measured on Emerald Rapids (one thread,
    ResNet's 7x7 stride-2 3->64 stem inside the network's first layers, the
    kernel alone, interleaved rounds): one block of 14 rows 2.86 ms, 2 blocks
    of 10 rows 2.14 (jam 4 of 4-7 rows 1.87-1.92), 2 blocks of 14 rows 1.77;
    onnxruntime's node 2.04 (docs/performance.md, "Stems on two 512-bit FMA
    pipes")."""
    return (
        knobs.conv_stem_jam_wide > 1
        and not knobs.conv_channel_jam_everywhere
        and _one_channel_blocks(nest)
    )


def _broadcast_loads(nest: ReductionNest) -> Iterator[loop.LoadOp]:
    """The row's loads of a buffer it does not store that move with the outer
    loop: the operand whose elements the register block broadcasts."""
    outer_iv = nest.outer.induction_var
    stored = {o.buffer for o in nest.row.walk() if isinstance(o, loop.StoreOp)}
    for o in nest.row.walk():
        if (
            isinstance(o, loop.LoadOp)
            and o.buffer not in stored
            and any(depends_on(i, outer_iv) for i in o.indices)
        ):
            yield o


def jam_channel_blocks(func: loop.FuncOp, prefetch_locality: int = 0) -> int:
    """Widen each marked convolution micro-kernel to F output-channel blocks:
    split the channel-block loop by F and unroll-and-jam the F blocks into
    every loop below it (the rows, the reduction, the fused epilogue). Run
    after `fuse_row_stages` so that the epilogue, fused by then, is jammed
    with its convolution. With `prefetch_locality` (`conv_weight_prefetch`),
    an unchunked jammed pointwise convolution also prefetches the next
    blocks' weights (`schedule/weight_prefetch.py`). Returns how many loops
    were jammed."""
    marks = (CHANNEL_JAM_ATTR, REDUCTION_CHUNK_ATTR, ROW_JAM_ATTR)
    marked = [
        o
        for o in func.walk()
        if isinstance(o, loop.ForOp) and any(m in o.attributes for m in marks)
    ]
    jammed = 0
    for channels in marked:
        attr = channels.attributes.pop(CHANNEL_JAM_ATTR, None)
        chunk = channels.attributes.pop(REDUCTION_CHUNK_ATTR, None)
        ahead = channels.attributes.pop(CHUNK_PREFETCH_ATTR, None)
        spread = channels.attributes.pop(CHUNK_SPREAD_ATTR, None) is not None
        rows = channels.attributes.pop(ROW_JAM_ATTR, None)
        step_ahead = channels.attributes.pop(STEP_PREFETCH_ATTR, None)
        outer = channels
        if isinstance(attr, IntegerAttr):
            outer, inner, _ = prim.split(channels, attr.value.data)
            prim.unroll_and_jam(inner)
            jammed += 1
            if isinstance(rows, IntegerAttr):
                _jam_rows(outer, rows.value.data)
                if isinstance(step_ahead, IntegerAttr):
                    prefetch_next_step(outer, step_ahead.value.data)
            if prefetch_locality and not isinstance(chunk, IntegerAttr):
                prefetch_next_blocks(outer, attr.value.data, prefetch_locality)
        if isinstance(chunk, IntegerAttr):
            locality = ahead.value.data if isinstance(ahead, IntegerAttr) else 0
            chunk_reductions(outer, chunk.value.data, locality if attr is not None else 0, spread)
    return jammed


def _jam_rows(channels: loop.ForOp, rows: int) -> None:
    """Unroll-and-jam the output-row loop, the one loop inside the jammed
    channel-block loop `channels`, by `rows` (`direct_row_jam`): split by
    `rows`, the rows left over (`split`'s tail) a loop of their own."""
    loops = [o for o in prim.body_ops(channels) if isinstance(o, loop.ForOp)]
    if len(loops) != 1 or loops[0].iter_args or prim.trip_count(loops[0]) < rows:
        return
    _, inner, _ = prim.split(loops[0], rows)
    prim.unroll_and_jam(inner)


def chunk_reductions(
    channels: loop.ForOp, chunk: int, prefetch_locality: int = 0, spread: bool = False
) -> int:
    """Split the reduction of every row of register blocks under `channels`
    into chunks of `chunk` input-channel blocks, the chunk loop outside the
    blocks (docs/performance.md, "Reduction chunks of the AVX2 pointwise
    convolutions"):

        for blocks { fill; for cb { R }; epilogue }
    ->  for blocks { fill }
        for cbo step chunk { for blocks { for cbi { R } } }
        for blocks { epilogue }

    Legal because each block writes its own output tile: the fill, every
    chunk's sums and the epilogue still reach each tile in order. A chunk's
    weights then stay in L1 across the row's blocks, and each block's
    accumulators are loaded and stored once per chunk (LLVM keeps them in
    registers across `cbi`, whose addresses they do not depend on). A loop of
    one block (the row's tail block) is left alone: nothing shares its
    chunk. With `prefetch_locality` (`conv_chunk_prefetch`), each block of
    a chunk first prefetches its share of the next chunk's weights
    (`prefetch_next_chunk`), or with `spread` (`conv_chunk_prefetch_spread`)
    each step of its `cbi` a few lines of them. Returns how many block loops
    were chunked."""
    rows = [
        o
        for o in channels.walk()
        if isinstance(o, loop.ForOp) and o is not channels and _block_reduction(o) is not None
    ]
    chunked = 0
    for blocks in rows:
        reduction = _block_reduction(blocks)
        assert reduction is not None
        trips = prim.trip_count(reduction)
        if prim.trip_count(blocks) < 2 or trips <= chunk or trips % chunk:
            continue
        at = prim.body_ops(blocks).index(reduction)
        fill, epilogue = blocks.clone(), blocks.clone()
        Rewriter.insert_op(fill, InsertPoint.before(blocks))
        Rewriter.insert_op(epilogue, InsertPoint.after(blocks))
        for part, keep in ((fill, range(at)), (blocks, (at,)), (epilogue, range(at + 1, 10**9))):
            for i, op in enumerate(prim.body_ops(part)):
                if op.regions and i not in keep:
                    Rewriter.erase_op(op)
        prim.split(reduction, chunk)
        chunks = prim.interchange(blocks)
        if prefetch_locality:
            prefetch_next_chunk(channels, chunks, blocks, chunk, prefetch_locality, spread)
        chunked += 1
    return chunked


def _block_reduction(blocks: loop.ForOp) -> loop.ForOp | None:
    """The reduction loop of a loop over register blocks (a row's blocks after
    `register_block`: vectorized fills, one serial reduction loop whose body is
    one loop, the epilogue), else None."""
    if blocks.iter_args:
        return None
    loops = [o for o in prim.body_ops(blocks) if isinstance(o, loop.ForOp)]
    serial = [o for o in loops if o.kind_name != LoopKind.VECTORIZED]
    if len(serial) != 1 or len(loops) < 2 or serial[0].iter_args:
        return None
    inner = prim.body_ops(serial[0])
    if len(inner) != 1 or not isinstance(inner[0], loop.ForOp):
        return None
    return serial[0]


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
        isinstance(o, loop.StoreOp) and any(depends_on(i, iv) for i in o.indices)
        for o in nest.row.walk()
    ):
        return None  # not a spatial loop of the result
    kind = enclosing.kind_name
    try:
        top = prim.interchange(enclosing)
    except ScheduleError:
        return None
    if kind != LoopKind.SERIAL:
        prim.set_kind(top, kind)
        prim.serialize(enclosing)
    moved = ReductionNest.match(enclosing)
    if moved is None or not _reused_across_rows(moved):
        return None
    return moved


__all__ = [
    "BlockShape",
    "ReductionNest",
    "block_reductions",
    "channel_jam",
    "CHUNK_JAM",
    "chunk_reductions",
    "choose_block",
    "jam_channel_blocks",
    "register_block",
]
