"""Loop transformations on the `loop` dialect: the building blocks of `schedule`.

Each primitive rewrites one `loop.for` nest in place and keeps its meaning
*given the legality condition stated in its docstring*; the caller (the
default schedules of `schedule`, or a user's `lamina.schedule` directive)
is responsible for that condition, as with TVM's schedule primitives.
All of them need loops with constant bounds (`arith.constant` operands),
which is what `lower-te` emits.

    split(L, f)           for i in [lb, ub)          → for o in [lb, lb+m·f) step f
                                                          for ii in [0, f)   (i = o + ii)
                                                        + a tail loop over [lb+m·f, ub)
    interchange(L)        for a { for b { S } }      → for b { for a { S } }
    fuse(L1, L2)          for i { S1 }; for i { S2 } → for i { S1; S2 }
    unroll(L)             for i in [0, f) { S(i) }   → S(0); …; S(f-1)
    unroll_and_jam(L)     for i in [0, f) { for j { S(i, j) } }
                                                     → for j { S(0, j); …; S(f-1, j) }
    vectorize(L), parallelize(L), serialize(L)       → set `kind`
    pack(L, buffer)       copies the tile of `buffer` the nest `L` reads into a
                          contiguous local buffer before `L`, and reads it there

`unroll_and_jam` is what makes a register-blocked micro-kernel: jamming the
rows of a matmul tile into its innermost (vectorized) loop puts MR × NR
accumulators at addresses invariant in the reduction loop, which LLVM then
keeps in vector registers across it (LICM promotion, checked in the
assembly: `vfmadd231ps %zmm, %zmm, %zmm` with no load/store of C).
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod

from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import is_side_effect_free

from lamina.dialects import loop
from lamina.dialects.loop import LoopKind
from lamina.schedule.int_analysis import int_constant


class ScheduleError(Exception):
    """A primitive cannot be applied to this loop (the message says why)."""


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


def bounds(for_op: loop.ForOp) -> tuple[int, int, int]:
    """`(lb, ub, step)` of a loop with constant bounds."""
    values = [int_constant(v) for v in (for_op.lb, for_op.ub, for_op.step)]
    if any(v is None for v in values):
        raise ScheduleError("needs constant loop bounds")
    lb, ub, step = values
    assert lb is not None and ub is not None and step is not None
    if step <= 0:
        raise ScheduleError("needs a positive step")
    return lb, ub, step


def trip_count(for_op: loop.ForOp) -> int:
    lb, ub, step = bounds(for_op)
    return max(0, -(-(ub - lb) // step))


def index_constant(near: Operation, value: int) -> SSAValue:
    """An index constant defined at the top of the enclosing function (reused if present)."""
    func = near
    while not isinstance(func, loop.FuncOp):
        parent = func.parent_op()
        if parent is None:
            raise ScheduleError("loop is not inside a loop.func")
        func = parent
    block = func.body.blocks[0]
    for op in block.ops:
        if (
            isinstance(op, arith.ConstantOp)
            and isinstance(op.value, IntegerAttr)
            and isinstance(op.result.type, IndexType)
            and op.value.value.data == value
        ):
            return op.result
    const = arith.ConstantOp(IntegerAttr(value, IndexType()))
    const.result.name_hint = f"c{value}"
    Rewriter.insert_op(const, InsertPoint.at_start(block))
    return const.result


def body_ops(for_op: loop.ForOp) -> list[Operation]:
    """The body's ops without its terminator."""
    return [op for op in for_op.body.block.ops if not isinstance(op, loop.YieldOp)]


def _no_iter_args(for_op: loop.ForOp, primitive: str) -> None:
    if for_op.iter_args:
        raise ScheduleError(f"{primitive} needs a loop without iter_args")


def _new_loop(
    near: Operation, lb: int, ub: int, step: int, kind: str, name: str | None
) -> loop.ForOp:
    new = loop.ForOp(
        index_constant(near, lb), index_constant(near, ub), index_constant(near, step), kind=kind
    )
    if name:
        new.induction_var.name_hint = name
    return new


def _move_body(src: loop.ForOp, dst: loop.ForOp) -> None:
    """Move `src`'s body ops (not its yield) to the end of `dst`'s body."""
    at = InsertPoint.before(dst.yield_op)
    for op in body_ops(src):
        op.detach()
        Rewriter.insert_op(op, at)


# ---------------------------------------------------------------------------
# primitives
# ---------------------------------------------------------------------------


def split(for_op: loop.ForOp, factor: int) -> tuple[loop.ForOp, loop.ForOp, loop.ForOp | None]:
    """Strip-mine `for_op` by `factor`: `(outer, inner, tail)`.

    The outer loop keeps a `parallel` kind, the inner one `vectorized` or
    `unrolled`; `tail` (a copy of the original loop over the last
    `extent mod factor` iterations, None when there are none) keeps the
    original kind but `parallel`, which is not worth a thread team there.
    Always legal: the iterations run in the same order.
    """
    _no_iter_args(for_op, "split")
    if factor < 1:
        raise ScheduleError("split needs a factor ≥ 1")
    lb, ub, step = bounds(for_op)
    trips = trip_count(for_op)
    main = trips // factor * factor
    kind = for_op.kind_name
    name = for_op.induction_var.name_hint or "i"
    tail = None
    if main < trips:
        tail = for_op.clone()
        if kind == LoopKind.PARALLEL:
            tail.set_kind(LoopKind.SERIAL)
        tail.operands[0] = index_constant(for_op, lb + main * step)
        Rewriter.insert_op(tail, InsertPoint.after(for_op))
    outer = _new_loop(
        for_op,
        lb,
        lb + main * step,
        step * factor,
        LoopKind.PARALLEL if kind == LoopKind.PARALLEL else LoopKind.SERIAL,
        f"{name}o",
    )
    inner = _new_loop(
        for_op,
        0,
        factor * step,
        step,
        kind if kind != LoopKind.PARALLEL else LoopKind.SERIAL,
        f"{name}i",
    )
    Rewriter.insert_op(outer, InsertPoint.before(for_op))
    Rewriter.insert_op(inner, InsertPoint.before(outer.yield_op))
    iv = arith.AddiOp(outer.induction_var, inner.induction_var)
    iv.result.name_hint = name
    Rewriter.insert_op(iv, InsertPoint.before(inner.yield_op))
    for_op.induction_var.replace_all_uses_with(iv.result)
    _move_body(for_op, inner)
    Rewriter.erase_op(for_op)
    return outer, inner, tail


def interchange(outer: loop.ForOp) -> loop.ForOp:
    """Swap `outer` with the single loop its body holds; returns the new outer loop.

    Besides that loop, `outer`'s body may hold pure index computations
    (e.g. `split`'s `i = o + ii`); they move into the new inner loop.
    Legal when the iterations of the pair may run in either order (e.g. one
    of them is a spatial loop writing disjoint elements); the inner loop's
    bounds must not depend on `outer`.
    """
    _no_iter_args(outer, "interchange")
    ops = body_ops(outer)
    loops = [op for op in ops if isinstance(op, loop.ForOp)]
    others = [op for op in ops if not isinstance(op, loop.ForOp)]
    if len(loops) != 1 or any(op.regions or not is_side_effect_free(op) for op in others):
        raise ScheduleError(
            "interchange needs a loop whose body is one loop (and pure index computations)"
        )
    inner = loops[0]
    _no_iter_args(inner, "interchange")
    hoisted = {r for op in others for r in op.results}
    if any(v is outer.induction_var or v in hoisted for v in (inner.lb, inner.ub, inner.step)):
        raise ScheduleError("interchange needs inner bounds independent of the outer loop")
    inner.detach()
    Rewriter.insert_op(inner, InsertPoint.before(outer))
    outer.detach()
    inner_body = body_ops(inner)
    Rewriter.insert_op(outer, InsertPoint.before(inner.yield_op))
    for op in inner_body:
        op.detach()
        Rewriter.insert_op(op, InsertPoint.before(outer.yield_op))
    return inner


def fuse(first: loop.ForOp, second: loop.ForOp) -> loop.ForOp:
    """Move the body of `second` (the next loop after `first`, same bounds) into `first`.

    Legal when iteration `i` of `second` only reads what iterations `≤ i`
    of `first` wrote (a producer/consumer pair over the same tile).
    """
    _no_iter_args(first, "fuse")
    _no_iter_args(second, "fuse")
    if first.next_op is not second:
        raise ScheduleError("fuse needs the second loop to follow the first directly")
    if bounds(first) != bounds(second):
        raise ScheduleError("fuse needs loops with the same bounds")
    second.induction_var.replace_all_uses_with(first.induction_var)
    _move_body(second, first)
    Rewriter.erase_op(second)
    return first


def _clone_into(op: Operation, mapper: dict[SSAValue, SSAValue], at: InsertPoint) -> None:
    new = op.clone(value_mapper=mapper)
    Rewriter.insert_op(new, at)
    for old, res in zip(op.results, new.results, strict=True):
        mapper[old] = res


def unroll(for_op: loop.ForOp) -> None:
    """Replace `for_op` (constant trip count) by that many copies of its body.

    Always legal (same order). Loop-carried values flow from copy to copy.
    """
    lb, _, step = bounds(for_op)
    carried = list(for_op.iter_args)
    at = InsertPoint.before(for_op)
    for t in range(trip_count(for_op)):
        mapper: dict[SSAValue, SSAValue] = {
            for_op.induction_var: index_constant(for_op, lb + t * step)
        }
        mapper.update(zip(for_op.region_iter_args, carried, strict=True))
        for op in body_ops(for_op):
            _clone_into(op, mapper, at)
        carried = [mapper.get(v, v) for v in for_op.yield_op.operands]
    for result, value in zip(for_op.res, carried, strict=True):
        result.replace_all_uses_with(value)
    Rewriter.erase_op(for_op)


def unroll_and_jam(for_op: loop.ForOp, *, jam_vectorized: bool = True) -> None:
    """Unroll `for_op` (constant trip count) and jam the copies into its inner loops.

    Inner loops without iter_args whose bounds do not depend on `for_op`
    stay single loops holding every copy of their body; every other op is
    copied once per iteration. Legal when the iterations of `for_op` are
    independent of each other (a spatial loop of a compute). Without
    `jam_vectorized`, a `vectorized` inner loop is copied whole per
    iteration instead (one loop per row of a register block: LLVM then
    emits each row's FMAs right after its broadcast, see
    schedule/register_block.py).
    """
    _no_iter_args(for_op, "unroll-and-jam")
    lb, _, step = bounds(for_op)
    mappers = [
        {for_op.induction_var: index_constant(for_op, lb + t * step)}
        for t in range(trip_count(for_op))
    ]
    _jam(body_ops(for_op), mappers, InsertPoint.before(for_op), jam_vectorized)
    Rewriter.erase_op(for_op)


def _jam(
    ops: Sequence[Operation],
    mappers: list[dict[SSAValue, SSAValue]],
    at: InsertPoint,
    jam_vectorized: bool = True,
) -> None:
    for op in ops:
        if (
            isinstance(op, loop.ForOp)
            and not op.iter_args
            and _same_in_all(op, mappers)
            and (jam_vectorized or op.kind_name != LoopKind.VECTORIZED)
        ):
            m0 = mappers[0]
            new = loop.ForOp(*(m0.get(v, v) for v in (op.lb, op.ub, op.step)), kind=op.kind_name)
            new.induction_var.name_hint = op.induction_var.name_hint
            Rewriter.insert_op(new, at)
            inner = [{**m, op.induction_var: new.induction_var} for m in mappers]
            _jam(body_ops(op), inner, InsertPoint.before(new.yield_op), jam_vectorized)
        elif _invariant_across(op, mappers):
            _clone_into(op, mappers[0], at)
            for mapper in mappers[1:]:
                mapper.update(zip(op.results, (mappers[0][r] for r in op.results), strict=True))
        else:
            for mapper in mappers:
                _clone_into(op, mapper, at)


def _invariant_across(op: Operation, mappers: list[dict[SSAValue, SSAValue]]) -> bool:
    """Would every copy of `op` be the same computation (pure or a load, same operands)?

    Such an op is emitted once: a load of an address every copy reads
    cannot see another copy's store, since the copies are independent.
    """
    if op.regions or isinstance(op, loop.StoreOp) or not op.results:
        return False
    if not (isinstance(op, loop.LoadOp) or is_side_effect_free(op)):
        return False
    return all(all(m.get(v, v) is mappers[0].get(v, v) for m in mappers) for v in op.operands)


def _same_in_all(for_op: loop.ForOp, mappers: list[dict[SSAValue, SSAValue]]) -> bool:
    """Are the loop's bounds the same values in every copy?"""
    return all(
        all(m.get(v, v) is mappers[0].get(v, v) for m in mappers)
        for v in (for_op.lb, for_op.ub, for_op.step)
    )


def set_kind(for_op: loop.ForOp, kind: LoopKind) -> None:
    """Set `for_op`'s kind; the caller checks legality."""
    for_op.set_kind(kind)


def vectorize(for_op: loop.ForOp) -> None:
    """Mark `for_op` `vectorized` (LLVM is asked to vectorize it; a hint, always legal)."""
    set_kind(for_op, LoopKind.VECTORIZED)


def serialize(for_op: loop.ForOp) -> None:
    """Mark `for_op` `serial` (its iterations run in order on one thread; always legal)."""
    set_kind(for_op, LoopKind.SERIAL)


def parallelize(for_op: loop.ForOp) -> None:
    """Mark `for_op` `parallel`. Legal when its iterations write disjoint memory."""
    _no_iter_args(for_op, "parallelize")
    set_kind(for_op, LoopKind.PARALLEL)


def pack(for_op: loop.ForOp, buffer: SSAValue, max_bytes: int | None = None) -> SSAValue:
    """Copy the part of `buffer` that the nest `for_op` reads into a contiguous local buffer.

    The tile is the box of indices the nest's `loop.load`s of `buffer` can
    reach, given the constant bounds of the loops inside `for_op` (indices
    must be sums of induction variables of those loops and values invariant
    in `for_op`; index arithmetic on invariant values, e.g. a head's column
    offset `h * 64` that a fused reshape left in the loop body, is hoisted
    before `for_op` first). Before `for_op` a copy nest fills a
    `loop.alloc {scope = "local"}` of the tile's shape; the loads read it
    (index minus the tile's origin); it is freed after `for_op`. The tile
    keeps `buffer`'s dimension order, except that the dimension a
    vectorized loop of the nest walks goes last: a transposed operand
    (`B[j, k]` read along `j`) is transposed once by the copy instead of
    gathered on every use. Legal when the nest does not write `buffer`.
    """
    loads = [op for op in for_op.walk() if isinstance(op, loop.LoadOp) and op.buffer is buffer]
    if not loads:
        raise ScheduleError("pack: the loop does not read this buffer")
    if any(isinstance(op, loop.StoreOp) and op.buffer is buffer for op in for_op.walk()):
        raise ScheduleError("pack: the loop writes this buffer")
    memref = buffer.type
    assert isinstance(memref, MemRefType)
    rank = len(memref.get_shape())
    for load in loads:
        for index in load.indices:
            _hoist_invariant(index, for_op)
    sums: dict[tuple[SSAValue, SSAValue], SSAValue] = {}
    boxes = [_index_box(load.indices, for_op, sums) for load in loads]
    origins: list[SSAValue] = []
    extents: list[int] = []
    for d in range(rank):
        origin = {box[d][0] for box in boxes}
        if len(origin) != 1:
            raise ScheduleError("pack: the loads do not share one tile origin")
        origins.append(origin.pop())
        extents.append(max(box[d][1] for box in boxes))
    tile_bytes = prod(extents) * memref.element_type.bitwidth // 8  # type: ignore[attr-defined]
    if max_bytes is not None and tile_bytes > max_bytes:
        raise ScheduleError(f"pack: the tile ({tile_bytes} bytes) exceeds {max_bytes} bytes")
    order = _tile_order(loads, for_op, rank)
    tile = loop.AllocOp(MemRefType(memref.element_type, [extents[d] for d in order]), scope="local")
    Rewriter.insert_op(tile, InsertPoint.before(for_op))
    _copy_nest(buffer, tile.results[0], origins, extents, order, InsertPoint.before(for_op), for_op)
    for load in loads:
        local = [_offset_of(i, for_op, InsertPoint.before(load)) for i in load.indices]
        new = loop.LoadOp(tile.results[0], [local[d] for d in order])
        Rewriter.insert_op(new, InsertPoint.before(load))
        load.results[0].replace_all_uses_with(new.results[0])
        Rewriter.erase_op(load)
    Rewriter.insert_op(loop.FreeOp(tile.results[0]), InsertPoint.after(for_op))
    return tile.results[0]


def pack_transposes(for_op: loop.ForOp, buffer: SSAValue) -> bool:
    """Would `pack(for_op, buffer)` store the tile transposed (the nest's
    vectorized loops walk a dimension of `buffer` other than its last)?"""
    loads = [op for op in for_op.walk() if isinstance(op, loop.LoadOp) and op.buffer is buffer]
    memref = buffer.type
    if not loads or not isinstance(memref, MemRefType):
        return False
    rank = len(memref.get_shape())
    return _tile_order(loads, for_op, rank) != list(range(rank))


_HOISTABLE = (arith.ConstantOp, arith.AddiOp, arith.SubiOp, arith.MuliOp)
_BY_CONSTANT = (arith.DivUIOp, arith.RemUIOp, arith.FloorDivSIOp, arith.RemSIOp, arith.DivSIOp)


def _hoist_invariant(value: SSAValue, nest: loop.ForOp) -> bool:
    """Move the pure index arithmetic computing `value` inside `nest` before it when
    it depends on nothing defined inside (loop-invariant code motion); True when
    `value` is then defined outside `nest`."""
    if not defined_inside(value, nest):
        return True
    op = value.owner
    if not isinstance(op, Operation) or not (  # pure, and no division by zero
        isinstance(op, _HOISTABLE)
        or (isinstance(op, _BY_CONSTANT) and (int_constant(op.operands[1]) or 0) > 0)
    ):
        return False
    hoisted = [_hoist_invariant(operand, nest) for operand in op.operands]  # each, even
    if not all(hoisted):  # when another depends on the nest: `64*h + k` hoists `64*h`
        return False
    op.detach()
    Rewriter.insert_op(op, InsertPoint.before(nest))
    return True


def _tile_order(loads: Sequence[loop.LoadOp], nest: loop.ForOp, rank: int) -> list[int]:
    """The tile's dimensions, `buffer`'s order with the one that the nest's
    vectorized loops walk moved last (unchanged when that is not one dimension)."""
    ivs = [
        o.induction_var
        for o in nest.walk()
        if isinstance(o, loop.ForOp) and o is not nest and o.kind_name == LoopKind.VECTORIZED
    ]
    walked = {
        d
        for load in loads
        for d, index in enumerate(load.indices)
        if any(_uses(index, iv, nest) for iv in ivs)
    }
    if len(walked) != 1 or rank < 2:
        return list(range(rank))
    (last,) = walked
    return [d for d in range(rank) if d != last] + [last]


def _uses(value: SSAValue, iv: SSAValue, nest: loop.ForOp) -> bool:
    """Does `value` (computed inside `nest`) depend on the induction variable `iv`?"""
    if value is iv:
        return True
    owner = value.owner
    return (
        isinstance(owner, Operation)
        and defined_inside(value, nest)
        and any(_uses(v, iv, nest) for v in owner.operands)
    )


def _index_box(
    indices: Sequence[SSAValue], nest: loop.ForOp, sums: dict[tuple[SSAValue, SSAValue], SSAValue]
) -> list[tuple[SSAValue, int]]:
    """Per index: (origin value defined outside `nest`, extent reached inside it)."""
    return [_decompose(i, nest, sums) for i in indices]


def _decompose(
    value: SSAValue, nest: loop.ForOp, sums: dict[tuple[SSAValue, SSAValue], SSAValue]
) -> tuple[SSAValue, int]:
    """`value = origin + Σ ivs of loops inside nest` → (origin, max offset + 1).

    Two outside parts (`64*h + (j0 + jj)`: a head's offset and a column
    block's) make one origin, their sum emitted before `nest` once per pair
    (`sums`), so that every load of the tile names the same origin value."""
    if not defined_inside(value, nest):
        return value, 1
    owner = value.owner
    if isinstance(owner, Block):
        loop_op = owner.parent_op()
        if isinstance(loop_op, loop.ForOp) and value is loop_op.induction_var:
            lb, ub, step = bounds(loop_op)
            if lb != 0:
                raise ScheduleError("pack: inner loops must start at 0")
            zero = index_constant(nest, 0)
            return zero, ub - step + 1
    if isinstance(owner, arith.AddiOp):
        lhs, rhs = (_decompose(v, nest, sums) for v in (owner.lhs, owner.rhs))
        if _is_zero(lhs[0]):
            return rhs[0], lhs[1] + rhs[1] - 1
        if _is_zero(rhs[0]):
            return lhs[0], lhs[1] + rhs[1] - 1
        if (lhs[0], rhs[0]) not in sums:
            add = arith.AddiOp(lhs[0], rhs[0])
            Rewriter.insert_op(add, InsertPoint.before(nest))
            sums[lhs[0], rhs[0]] = add.result
        return sums[lhs[0], rhs[0]], lhs[1] + rhs[1] - 1
    raise ScheduleError("pack: an index is not an origin plus induction variables")


def _is_zero(value: SSAValue) -> bool:
    return int_constant(value) == 0


def defined_inside(value: SSAValue, nest: loop.ForOp) -> bool:
    """Is `value` defined in `nest` (a local temporary, a loop variable of it or inside)?"""
    owner = value.owner
    op = owner.parent_op() if isinstance(owner, Block) else owner
    while op is not None:
        if op is nest:
            return True
        op = op.parent_op()
    return False


def _offset_of(value: SSAValue, nest: loop.ForOp, at: InsertPoint) -> SSAValue:
    """The part of an index that varies inside `nest` (its origin dropped), emitted at `at`."""
    if not defined_inside(value, nest):
        return index_constant(nest, 0)
    owner = value.owner
    if isinstance(owner, arith.AddiOp):
        lhs, rhs = (_offset_of(v, nest, at) for v in (owner.lhs, owner.rhs))
        if _is_zero(lhs):
            return rhs
        if _is_zero(rhs):
            return lhs
        add = arith.AddiOp(lhs, rhs)
        Rewriter.insert_op(add, at)
        return add.result
    return value


def _copy_nest(
    src: SSAValue,
    dst: SSAValue,
    origins: Sequence[SSAValue],
    extents: Sequence[int],
    order: Sequence[int],
    at: InsertPoint,
    near: Operation,
) -> None:
    """`dst[t[order]] = src[origin + t]` for every t in the tile: loops in the tile's
    dimension order, the innermost vectorized (its stores contiguous)."""
    ivs: list[SSAValue] = [None] * len(extents)  # type: ignore[list-item]
    for position, d in enumerate(order):
        kind = (
            LoopKind.VECTORIZED if position == len(order) - 1 and position > 0 else LoopKind.SERIAL
        )
        copy_loop = _new_loop(near, 0, extents[d], 1, kind, f"p{position}")
        Rewriter.insert_op(copy_loop, at)
        ivs[d] = copy_loop.induction_var
        at = InsertPoint.before(copy_loop.yield_op)
    src_index = []
    for origin, iv in zip(origins, ivs, strict=True):
        if _is_zero(origin):
            src_index.append(iv)
        else:
            add = arith.AddiOp(origin, iv)
            Rewriter.insert_op(add, at)
            src_index.append(add.result)
    value = loop.LoadOp(src, src_index)
    Rewriter.insert_op([value, loop.StoreOp(value.results[0], dst, [ivs[d] for d in order])], at)


__all__ = [
    "ScheduleError",
    "defined_inside",
    "bounds",
    "fuse",
    "interchange",
    "pack",
    "parallelize",
    "split",
    "trip_count",
    "unroll",
    "unroll_and_jam",
    "vectorize",
]
