"""Weight prefetch: a jammed pointwise convolution asks for its next blocks' weights early.

A channel-blocked pointwise convolution whose micro-kernel jams F output-channel
blocks (`jam_channel_blocks`) reads, for each step of its channel loop, the
weights of F blocks over all input channels (F x C_in x one vector: 18 KiB for
192 -> 1152 on AVX2) while its pixel blocks reuse them from L1. In a network
every convolution's weights were evicted by the others' since the last call
(EfficientNet-B0 holds 21 MB of them), so the first pixel block of each step
waits for its weights from L3 or memory, three streams at a time: measured on
AVX2, a 192 -> 1152 expansion at 7x7 took 1.3x its time alone when eight such
layers with their own weights ran in turn (docs/performance.md, "Weight
prefetch in the AVX2 pointwise convolutions"). Here every step of the input
channels' lane loop also prefetches, into L2 (`conv_weight_prefetch`
locality), the same weights of the blocks the next step of the channel loop
computes:

    for co in [0, C) step F kind(parallel) {          // F jammed blocks
      for px … { for ci … { for k … {
        prefetch w[min(co + F + j, C - 1), ci, 0, 0, k, 0]   for j < F
        for lane kind(vectorized) { … w[co + j, ci, 0, 0, k, lane] … }
    } } } }

A prefetch never faults and changes no value; the last step's index is
clamped to the last block so that every address stays inside the buffer.

A pointwise convolution whose reduction is chunked (`chunk_reductions`: the
chunk loop outside the row's register blocks, each chunk's F x chunk weights
kept in L1 across the blocks) reads its next chunk's weights from L3 or
memory when its first block starts it: the blocks after it re-read L1, so
the hardware prefetchers see no stream to follow, and 4 streams of 512
lines start cold at every chunk (ResNet-50's 512->2048 at 7x7: 4 chunks x 32
steps per call). `prefetch_next_chunk` spreads the next chunk's lines over
the current chunk's register blocks, into L2 (`conv_chunk_prefetch`
locality; L1 holds the current chunk); after the last chunk of a step, the
next step's first chunk:

    for co in [0, C) step F kind(parallel) {
      for cbo in [0, I) step chunk {
        for px in G blocks {
          n = cbo + chunk; w = n / I; c = n - w * I   // next chunk, next step
          for ci in px's share of [0, chunk) { for k step line { for j < F {
            prefetch w[min(co + j + w * F, C - 1), c + ci, 0, 0, k, 0]
          } } }
          for cbi … { R }
    } } }

With `spread` (`conv_chunk_prefetch_spread`) the same lines are dealt out over
every step of `cbi` instead, a few per step (`_spread_lines`): a block's
share at its head is up to 64 prefetches at once, more than the core keeps
in flight, while the 8 x 9 steps of a 7x7 image's chunk take 8 lines each:

        for px in G blocks {
          for cbi in [0, S) {
            for u in [s * share, min((s + 1) * share, U)) {   // s = px * S + cbi
              ci = u / (rows / line); k = u % (rows / line) * line
              prefetch w[min(co + j + w * F, C - 1), c + ci, 0, 0, k, 0]   for j < F
            }
            for lane … { R }
        } }

LLVM still keeps the accumulators in registers across `cbi`: a prefetch writes
nothing the program reads.
"""

from __future__ import annotations

from typing import NamedTuple

from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from lamina.dialects import loop
from lamina.dialects.loop import LoopKind
from lamina.schedule import primitives as prim
from lamina.schedule.int_analysis import int_constant


def prefetch_next_blocks(channels: loop.ForOp, jam: int, locality: int) -> int:
    """Put the prefetch nest of the docstring at the head of the jammed channel
    loop `channels` (step `jam`, after `unroll_and_jam`); returns how many
    buffers it prefetches (0 or 1). Only pointwise weights (`[O, I, 1, 1, i, o]`,
    a function argument) indexed by the jammed block are prefetched, so
    direct and Winograd convolutions are left alone."""
    bound = int_constant(channels.ub)
    if bound is None or locality <= 0:
        return 0
    iv = channels.body.block.args[0]
    weights = {id(load.buffer): load for load in _weight_loads(channels, iv)}
    if len(weights) != 1:
        return 0
    (load,) = weights.values()
    mtype = load.buffer.type
    assert isinstance(mtype, MemRefType)
    return int(_insert_nest(load.buffer, mtype, iv, jam, bound - 1, locality, channels))


def _weight_loads(channels: loop.ForOp, iv: SSAValue) -> list[loop.LoadOp]:
    """The loads under `channels` of pointwise weights (a 6-d function argument
    `[O, I, 1, 1, i, o]`) whose first index is `iv` + a constant."""
    found = []
    for op in channels.walk():
        if not isinstance(op, loop.LoadOp) or not isinstance(op.buffer, BlockArgument):
            continue
        mtype = op.buffer.type
        assert isinstance(mtype, MemRefType)
        shape = mtype.get_shape()
        if len(shape) == 6 and shape[2] == shape[3] == 1 and _offset(op.indices[0], iv) is not None:
            found.append(op)
    return found


def _one_weight_buffer(
    loads: list[loop.LoadOp],
) -> tuple[loop.LoadOp, tuple[int, ...], int] | None:
    """The one weight buffer `loads` read (None: none, or several): a load of it, its
    shape, and how many of its rows (of the last dimension's lanes) a 64-byte cache
    line holds, the step between two prefetched addresses."""
    weights = {id(op.buffer): op for op in loads}
    if len(weights) != 1:
        return None
    (load,) = weights.values()
    mtype = load.buffer.type
    assert isinstance(mtype, MemRefType)
    shape = mtype.get_shape()
    bits = getattr(mtype.element_type, "bitwidth", 32)
    return load, shape, max(1, 512 // (shape[-1] * bits))


def _index_constant(v: int) -> arith.ConstantOp:
    """An `index` constant (the prefetches' offsets and bounds)."""
    return arith.ConstantOp(IntegerAttr(v, IndexType()))


def _offset(value: SSAValue, iv: SSAValue) -> int | None:
    """c where `value` is `iv + c` (c a constant), else None."""
    if value is iv:
        return 0
    owner = value.owner
    if isinstance(owner, arith.AddiOp) and owner.lhs is iv:
        return int_constant(owner.rhs)
    return None


def _group_loop(channels: loop.ForOp) -> loop.ForOp | None:
    """The first loop below `channels` with several steps around the reduction
    (the pixel blocks of a flat row, or an image's rows): where the prefetches
    are spread."""
    for op in channels.body.block.ops:
        if isinstance(op, loop.ForOp) and op.kind_name != LoopKind.VECTORIZED:
            trips = prim.trip_count(op)
            if trips is not None and trips >= 2:
                return op
            inner = _group_loop(op)
            if inner is not None:
                return inner
    return None


def _insert_nest(
    buffer: SSAValue,
    mtype: MemRefType,
    iv: SSAValue,
    jam: int,
    last: int,
    locality: int,
    channels: loop.ForOp,
) -> bool:
    """At the head of each step g of the group loop (`_group_loop`, G steps):
    `prefetch buf[min(iv + jam + j, last), ci, 0, 0, k, 0]` for j < jam, ci in
    step g's share of the input-channel blocks (ceil(I / G) of them; none once
    g * share >= I, so a long row of many blocks pays only the empty loop), k
    one per 64-byte line: the next step's weights, spread over this step's pixel
    blocks so that a few lines are in flight at a time, outside the reduction
    (a call inside it would keep LLVM from holding the accumulators in
    registers). Returns whether there was a group loop."""
    group = _group_loop(channels)
    if group is None:
        return False
    trips = prim.trip_count(group)
    lb, step_ = int_constant(group.lb), int_constant(group.step)
    if trips is None or lb is None or step_ is None:
        return False
    _, inputs, _, _, rows, lanes = mtype.get_shape()
    bits = getattr(mtype.element_type, "bitwidth", 32)
    line = max(1, 512 // (lanes * bits))  # rows of lanes per 64-byte line
    share = -(-inputs // trips)

    g = group.body.block.args[0]
    ops: list[Operation] = [
        zero := _index_constant(0),
        one := _index_constant(1),
        first := _index_constant(lb),
    ]
    ops += [
        stride := _index_constant(step_),
        per := _index_constant(share),
        count := _index_constant(inputs),
    ]
    ops += [
        end := _index_constant(last),
        rel := arith.SubiOp(g, first),
        nth := arith.DivUIOp(rel, stride),
    ]
    ops += [lo := arith.MuliOp(nth, per), up := arith.AddiOp(lo, per)]
    ops += [hi := arith.MinSIOp(up, count), channels_ := loop.ForOp(lo, hi, one)]
    ci = channels_.body.block.args[0]
    body: list[Operation] = []
    for k in range(0, rows, line):
        body.append(kk := _index_constant(k))
        for j in range(jam):
            body += [ahead := _index_constant(jam + j), block := arith.AddiOp(iv, ahead)]
            body.append(clamped := arith.MinSIOp(block, end))
            indices = [clamped.result, ci, zero.result, zero.result, kk.result, zero.result]
            body.append(loop.PrefetchOp(buffer, indices, locality))
    Rewriter.insert_op(body, InsertPoint.at_start(channels_.body.block))
    Rewriter.insert_op(ops, InsertPoint.at_start(group.body.block))
    return True


CHUNK_PREFETCH_MAX_BLOCKS = 16
"""Most register blocks a chunked row may have for `prefetch_next_chunk`: a
chunk's cold start is shared by its row's blocks, so a long row (ResNet-50's
14x14 and 28x28 images: 39-156 blocks of 5 pixels) has little to gain, and
measured no gain."""


def prefetch_next_chunk(
    channels: loop.ForOp,
    chunks: loop.ForOp,
    blocks: loop.ForOp,
    chunk: int,
    locality: int,
    spread: bool = False,
) -> bool:
    """Put the chunked prefetch nest of the module docstring at the head of each
    step of `blocks` (a row's register blocks, the one loop of the chunk loop
    `chunks`, whose index counts input-channel blocks in steps of `chunk`), under
    the jammed output-channel loop `channels`. Returns whether it did (one
    pointwise weight buffer indexed by the jammed block, constant bounds)."""
    if locality <= 0:
        return False
    bound, jam = int_constant(channels.ub), int_constant(channels.step)
    trips, lb, step_ = prim.trip_count(blocks), int_constant(blocks.lb), int_constant(blocks.step)
    if None in (bound, jam, lb, step_) or trips < 1:
        return False
    if trips > CHUNK_PREFETCH_MAX_BLOCKS:
        return False
    steps = _chunk_steps(blocks) if spread else None
    if steps is not None and _rows_between(channels, chunks):
        return False
    assert bound is not None and jam is not None and lb is not None and step_ is not None
    iv = channels.body.block.args[0]
    found = _one_weight_buffer(_weight_loads(chunks, iv))
    if found is None:
        return False
    load, (_, inputs, _, _, rows, _), line = found
    share = -(-chunk // trips)

    cbo, g = chunks.body.block.args[0], blocks.body.block.args[0]
    ops: list[Operation] = [
        zero := _index_constant(0),
        one := _index_constant(1),
        first := _index_constant(lb),
    ]
    ops += [
        stride := _index_constant(step_),
        per := _index_constant(share),
        size := _index_constant(chunk),
    ]
    ops += [
        count := _index_constant(inputs),
        width := _index_constant(jam),
        end := _index_constant(bound - 1),
    ]
    ops += [nxt := arith.AddiOp(cbo, size), wrap := arith.DivUIOp(nxt, count)]
    ops += [back := arith.MuliOp(wrap, count), base := arith.SubiOp(nxt, back)]
    ops += [ahead := arith.MuliOp(wrap, width), co := arith.AddiOp(iv, ahead)]
    ops += [rel := arith.SubiOp(g, first), nth := arith.DivUIOp(rel, stride)]
    if steps is not None:
        where = _Next(load.buffer, locality, base, co, end, zero, nth)
        ops += _spread_lines(steps, trips, chunk, rows, line, jam, where)
        Rewriter.insert_op(ops, InsertPoint.at_start(blocks.body.block))
        return True
    ops += [lo := arith.MuliOp(nth, per), up := arith.AddiOp(lo, per)]
    ops += [hi := arith.MinSIOp(up, size), channels_ := loop.ForOp(lo, hi, one)]
    ci = channels_.body.block.args[0]
    body: list[Operation] = [at := arith.AddiOp(base, ci)]
    for k in range(0, rows, line):
        body.append(kk := _index_constant(k))
        for j in range(jam):
            body += [off := _index_constant(j), block := arith.AddiOp(co, off)]
            body.append(clamped := arith.MinSIOp(block, end))
            indices = [clamped.result, at.result, zero.result, zero.result, kk.result, zero.result]
            body.append(loop.PrefetchOp(load.buffer, indices, locality))
    Rewriter.insert_op(body, InsertPoint.at_start(channels_.body.block))
    Rewriter.insert_op(ops, InsertPoint.at_start(blocks.body.block))
    return True


def _rows_between(channels: loop.ForOp, chunks: loop.ForOp) -> bool:
    """Whether a loop of several steps lies between the jammed channel loop and
    the chunk loop: rows of the image that share each output-channel step's
    weights (a 14x14 image two cores split into 4 rows of 49 pixels). Each row
    after the first reads the step's weights from L2 again, and the last chunk
    of a row is followed by the first of the next row, not of the next step, so
    the spread prefetch leaves such rows alone (not measured to gain)."""
    op = chunks.parent_op()
    while op is not None and op is not channels:
        if isinstance(op, loop.ForOp) and (prim.trip_count(op) or 2) > 1:
            return True
        op = op.parent_op()
    return False


def _chunk_steps(blocks: loop.ForOp) -> loop.ForOp | None:
    """The loop over a chunk's input-channel blocks inside a register block (`cbi`:
    the one serial loop of `blocks`' body, from 0 in steps of 1), else None."""
    serial = [
        o
        for o in prim.body_ops(blocks)
        if isinstance(o, loop.ForOp) and o.kind_name != LoopKind.VECTORIZED
    ]
    if len(serial) != 1:
        return None
    (steps,) = serial
    if int_constant(steps.lb) != 0 or int_constant(steps.step) != 1:
        return None
    if prim.trip_count(steps) is None:
        return None
    return steps


class _Next(NamedTuple):
    """Where `prefetch_next_chunk`'s lines are: the weights, the locality, and
    the index values at the head of a register block."""

    buffer: SSAValue
    locality: int
    base: Operation
    """The next chunk's first input-channel block."""
    co: Operation
    """The next chunk's first output-channel block."""
    end: Operation
    """The last output-channel block (the clamp)."""
    zero: Operation
    nth: Operation
    """The register block's number in its row (0-based)."""


def _spread_lines(
    steps: loop.ForOp, blocks: int, chunk: int, rows: int, line: int, jam: int, p: _Next
) -> list[Operation]:
    """`prefetch_next_chunk` spread over every input-channel step of every
    register block: the next chunk's `chunk` x `rows / line` (input-channel
    block, line) units, each `jam` lines (one per jammed block), are dealt out in
    order, `share` of them to step `s = nth * S + cbi` of the `blocks` x S steps,
    so that a few lines are in flight at a time instead of a block's share at
    its head. Inserts the nest at the head of `steps` (`cbi`); returns the ops
    for the head of the register block."""

    per_block = rows // line
    units = chunk * per_block
    trips = prim.trip_count(steps)
    share = -(-units // (blocks * trips))
    head: list[Operation] = [
        width := _index_constant(trips),
        per := _index_constant(share),
        count := _index_constant(units),
    ]
    head += [first := arith.MuliOp(p.nth, width)]
    cbi = steps.body.block.args[0]
    inner: list[Operation] = [one := _index_constant(1), slot := arith.AddiOp(first, cbi)]
    inner += [lo := arith.MuliOp(slot, per), up := arith.AddiOp(lo, per)]
    inner += [hi := arith.MinSIOp(up, count), deal := loop.ForOp(lo, hi, one)]
    u = deal.body.block.args[0]
    body: list[Operation] = [lines := _index_constant(per_block), wide := _index_constant(line)]
    body += [ci := arith.DivUIOp(u, lines), kq := arith.RemUIOp(u, lines)]
    body += [k := arith.MuliOp(kq, wide), at := arith.AddiOp(p.base, ci)]
    zero = p.zero.results[0]
    for j in range(jam):
        body += [off := _index_constant(j), block := arith.AddiOp(p.co, off)]
        body.append(clamped := arith.MinSIOp(block, p.end))
        indices = [clamped.result, at.result, zero, zero, k.result, zero]
        body.append(loop.PrefetchOp(p.buffer, indices, p.locality))
    Rewriter.insert_op(body, InsertPoint.at_start(deal.body.block))
    Rewriter.insert_op(inner, InsertPoint.at_start(steps.body.block))
    return head


def prefetch_next_step(channels: loop.ForOp, locality: int) -> bool:
    """Spread the next output-channel step's weights over the current step of a
    row-jammed direct convolution (`conv_direct_prefetch`): `channels` is the
    jammed output-channel loop (step F), whose body is the row passes (the
    jammed rows' loop and its tail) over the image's register blocks, each a
    reduction nest over input-channel blocks and window taps around one
    serial loop over a block's lanes (`k3`). Each step of that nest, counted
    over every pass (`s`), prefetches `share` of the next step's
    I x KH x KW x (rows / line) lines per jammed block:

        for co in [0, C) step F {
          for pass … { for col … { fill
            for ci { for kh { for kw {                 // s = pass step
              for u in [s * share, min((s + 1) * share, U)) {
                prefetch w[min(co + F + j, C - 1), u / …, …, …, …, 0]   for j < F
              }
              for k3 { R }
          } } } epilogue } }
        }

    Returns whether it did (one 6-d weight buffer indexed by the jammed
    block, constant bounds everywhere)."""
    if locality <= 0:
        return False
    bound, jam = int_constant(channels.ub), int_constant(channels.step)
    if bound is None or jam is None:
        return False
    iv = channels.body.block.args[0]
    found = _one_weight_buffer(_direct_weight_loads(channels, iv))
    if found is None:
        return False
    load, (_, inputs, kh, kw, rows, _), line = found
    per_tap = -(-rows // line)
    units = inputs * kh * kw * per_tap
    sites: list[tuple[list[loop.ForOp], int]] = []  # enclosing loops, steps
    for top in prim.body_ops(channels):
        if not isinstance(top, loop.ForOp):
            continue
        for lanes_loop in _lane_loops(top):
            chain = _chain(top, lanes_loop)
            if chain is None:
                return False
            steps = 1
            for o in chain:
                steps *= prim.trip_count(o)
            sites.append((chain, steps))
    if not sites:
        return False
    total = sum(steps for _, steps in sites)
    share = -(-units // total)

    offset = 0
    for chain, steps in sites:
        ops: list[Operation] = [slot := _index_constant(0)]
        for o in chain:
            lb, st = int_constant(o.lb), int_constant(o.step)
            assert lb is not None and st is not None
            ops += [
                first := _index_constant(lb),
                stride := _index_constant(st),
                trips := _index_constant(prim.trip_count(o)),
            ]
            ops += [rel := arith.SubiOp(o.body.block.args[0], first)]
            ops += [nth := arith.DivUIOp(rel, stride), scaled := arith.MuliOp(slot, trips)]
            ops.append(slot := arith.AddiOp(scaled, nth))
        ops += [shift := _index_constant(offset), at := arith.AddiOp(slot, shift)]
        ops += [
            per := _index_constant(share),
            count := _index_constant(units),
            one := _index_constant(1),
        ]
        ops += [lo := arith.MuliOp(at, per), up := arith.AddiOp(lo, per)]
        ops += [hi := arith.MinSIOp(up, count), deal := loop.ForOp(lo, hi, one)]
        u = deal.body.block.args[0]
        body: list[Operation] = [zero := _index_constant(0), end := _index_constant(bound - 1)]
        body += [
            n_tap := _index_constant(per_tap),
            n_kw := _index_constant(kw),
            n_kh := _index_constant(kh),
            wide := _index_constant(line),
        ]
        body += [tap := arith.DivUIOp(u, n_tap), kq := arith.RemUIOp(u, n_tap)]
        body += [k := arith.MuliOp(kq, wide), col := arith.RemUIOp(tap, n_kw)]
        body += [rest := arith.DivUIOp(tap, n_kw), row := arith.RemUIOp(rest, n_kh)]
        body += [ci := arith.DivUIOp(rest, n_kh)]
        for j in range(jam):
            body += [ahead := _index_constant(jam + j), block := arith.AddiOp(iv, ahead)]
            body.append(clamped := arith.MinSIOp(block, end))
            indices = [clamped.result, ci.result, row.result, col.result, k.result, zero.result]
            body.append(loop.PrefetchOp(load.buffer, indices, locality))
        Rewriter.insert_op(body, InsertPoint.at_start(deal.body.block))
        Rewriter.insert_op(ops, InsertPoint.at_start(chain[-1].body.block))
        offset += steps
    return True


def _direct_weight_loads(channels: loop.ForOp, iv: SSAValue) -> list[loop.LoadOp]:
    """The loads under `channels` of a direct convolution's weights (a 6-d
    function argument `[O, I, KH, KW, i, o]`) whose first index is `iv` + a
    constant."""
    found = []
    for op in channels.walk():
        if not isinstance(op, loop.LoadOp) or not isinstance(op.buffer, BlockArgument):
            continue
        mtype = op.buffer.type
        assert isinstance(mtype, MemRefType)
        if len(mtype.get_shape()) == 6 and _offset(op.indices[0], iv) is not None:
            found.append(op)
    return found


def _lane_loops(top: loop.ForOp) -> list[loop.ForOp]:
    """The serial loops under `top` whose bodies hold the register block's
    vectorized FMAs (a block's lane loop `k3`: a serial loop whose body has
    vectorized loops and no serial one)."""
    found = []
    for op in top.walk():
        if not isinstance(op, loop.ForOp) or op.kind_name == LoopKind.VECTORIZED:
            continue
        inner = [o for o in prim.body_ops(op) if isinstance(o, loop.ForOp)]
        if inner and all(o.kind_name == LoopKind.VECTORIZED for o in inner):
            if any(isinstance(o, arith.MulfOp) for o in op.walk()):
                found.append(op)
    return found


def _chain(top: loop.ForOp, lanes_loop: loop.ForOp) -> list[loop.ForOp] | None:
    """The loops from `top` down to the parent of `lanes_loop`, outermost first,
    each with constant bounds (None otherwise)."""
    chain: list[loop.ForOp] = []
    op = lanes_loop.parent_op()
    while op is not None:
        if not isinstance(op, loop.ForOp):
            return None
        if prim.trip_count(op) is None or int_constant(op.lb) is None:
            return None
        chain.append(op)
        if op is top:
            return chain[::-1]
        op = op.parent_op()
    return None


__all__ = ["prefetch_next_blocks", "prefetch_next_chunk", "prefetch_next_step"]
