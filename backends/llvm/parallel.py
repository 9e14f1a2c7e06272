"""Parallel loops on OpenMP's runtime (libgomp), for `lower-to-llvm`.

A `loop.for ... kind(parallel)` without iter_args is outlined and run by
`GOMP_parallel`, the entry point GCC itself emits for `#pragma omp
parallel` (docs/design.md §7: a real threading runtime, not a Python pool):

    loop.func @f(...) {                      llvm.func @f(...) {
      loop.for %i = %lb to %ub step %s         %ctx = llvm.alloca 1 x !llvm.struct<(captures)>
          kind(parallel) {            ──▶       llvm.store <each capture>, %ctx[0, k]
        body(%i, captures)                     llvm.call @GOMP_parallel(@f_par0_omp, %ctx, 0, 0)
      }                                      }
                                             llvm.func @f_par0_omp(%ctx) {   // every thread
                                               captures = load %ctx[0, k]
                                               while a chunk [lo, hi) is left:
                                                 llvm.call @f_par0(captures, lo, hi)
                                             }
                                             loop.func @f_par0(captures, %lo, %hi) {
                                               loop.for %i = %lo to %hi step %s { body }
                                             }

The outlined `loop.func` is then lowered like any other. Parallel loops
nested inside the outlined body run serially (one level of parallelism).
The number of threads is OpenMP's default, which `backends/codegen.py`
sets from `LAMINA_NUM_THREADS` (else all cores) before libgomp loads.

The generated code names only libgomp's entry points; with one thread team
per call (`LAMINA_CALL_TEAM=1`) the JIT links `GOMP_parallel` and the
`GOMP_loop_dynamic_*` calls to runtime/call_team.py instead, which runs the
regions of a call on one team (docs/performance.md, Threads).
"""

from __future__ import annotations

from collections.abc import Iterable

from xdsl.dialects import arith, llvm
from xdsl.dialects.builtin import (
    Float64Type,
    FunctionType,
    IndexType,
    IntegerAttr,
    IntegerType,
    UnitAttr,
    UnrealizedConversionCastOp,
    i8,
    i32,
    i64,
)
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from lamina.backends.llvm.conversion import (
    INTERNAL_ATTR,
    constant_gep,
    convert_type,
    declare_function,
    element_size,
    entry_block,
    integer_attr,
    module_of,
    quick,
    to_llvm,
)
from lamina.core.liveness import captured_values
from lamina.core.symbols import SymbolNames
from lamina.dialects import loop
from lamina.dialects.loop import ROWS_FIRST_ATTR, TEAM_ONLY_ATTR, LoopKind
from lamina.target.registry import op_facts

GOMP_PARALLEL = "GOMP_parallel"
PTR = llvm.LLVMPointerType()


def _inside(inner: Operation | None, op: Operation) -> bool:
    """Is `inner` `op` or nested in it?"""
    while inner is not None:
        if inner is op:
            return True
        inner = inner.parent_op()
    return False


def _constant_chain(value: SSAValue) -> list[Operation] | None:
    """The ops computing `value` if it is a constant (possibly behind one conversion cast)."""
    owner = value.owner
    if isinstance(owner, UnrealizedConversionCastOp):
        inner = owner.inputs[0].owner
        if isinstance(inner, arith.ConstantOp | llvm.ConstantOp):
            return [inner, owner]
        return None
    if isinstance(owner, arith.ConstantOp | llvm.ConstantOp):
        return [owner]
    return None


def _enclosing_function_name(op: Operation) -> str:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, loop.FuncOp | llvm.FuncOp):
        parent = parent.parent_op()
    return parent.sym_name.data if parent is not None else "kernel"


class ParallelForLowering(RewritePattern):
    """`loop.for kind(parallel)` (no iter_args) → outlined body run by `GOMP_parallel`.

    See the module docstring for the shape of the result. A parallel loop
    with iter_args (a reduction) is left to `ForLowering` and runs serially.
    A parallel loop holding one parallel loop is collapsed with it first
    (`collapse_nested`).

    `names`: the module's symbol names, owned by the pass running this pattern,
    which reports every op its rewriter inserts to it (`SymbolNames.observe`);
    the outlined functions' names are taken from it. Without it (or for another
    module), each loop's names are collected anew (one scan per parallel loop).
    """

    def __init__(self, names: SymbolNames | None = None) -> None:
        self.names = names

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: loop.ForOp, rewriter: PatternRewriter, /):
        if op.kind.data != LoopKind.PARALLEL or op.iter_args:
            return
        collapse_nested(op, rewriter)
        module = module_of(op)
        names = self.names
        if names is None or names.block is not module.body.block:
            names = SymbolNames(module)
        base = names.fresh(f"{_enclosing_function_name(op)}_par")
        header = [op.lb, op.ub, op.step]
        used = captured_values(op)
        captures = [v for v in used if _constant_chain(v) is None]
        declare_omp_queries(op, rewriter)
        iterations = static_trip_count(op)
        cores = op_facts(op).cores
        best = balanced_chunk(iterations, cores) if iterations is not None else None
        whole = BLOCKS_IN_CHUNK_ATTR in op.attributes
        balanced = None if best is None else (cores, best)
        trampoline = _trampoline(base, header, captures, balanced, whole_alone=whole)
        outlined = _outline(op, base, captures, used)
        at_module = InsertPoint.at_end(module.body.block)
        rewriter.insert(outlined, at_module)
        rewriter.insert(trampoline, at_module)
        threads = 1 if TEAM_ONLY_ATTR in op.attributes else 0
        call = _call_site(op, trampoline.sym_name.data, [*header, *captures], rewriter, threads)
        if iterations is not None:
            call.attributes[ITERATIONS_ATTR] = IntegerAttr(iterations, i64)
        rewriter.erase(op)


ITERATIONS_ATTR = "lamina.iterations"
"""On a `GOMP_parallel` call: the parallel loop's trip count, when it is a constant
(what the threads share; the kernel profile reports it, passes/profile_kernels.py)."""


def static_trip_count(op: loop.ForOp) -> int | None:
    """`op`'s trip count if its bounds and step are constants, else None."""
    lb, ub, step = (_constant_int(v) for v in (op.lb, op.ub, op.step))
    if lb is None or ub is None or step is None or step <= 0:
        return None
    return max(0, -(-(ub - lb) // step))


def _constant_int(value: SSAValue) -> int | None:
    """`value` as an int if it is an integer constant (possibly behind one cast)."""
    chain = _constant_chain(value)
    const = chain[0] if chain is not None else None
    if not isinstance(const, arith.ConstantOp | llvm.ConstantOp):
        return None
    attr = const.value
    return attr.value.data if isinstance(attr, IntegerAttr) else None


def collapse_nested(op: loop.ForOp, rewriter: PatternRewriter) -> loop.ForOp | None:
    """Turn a parallel loop whose body is one parallel loop of constant bounds
    (beside pure arithmetic) into one parallel loop over their product (None:
    not collapsible). The inner loop's `parallel` says its iterations are
    independent too: `schedule` marks it so in a parallel loop of few
    iterations (`share_rows`, schedule/parallel.py), and the threads then
    share outer x inner iterations instead of a handful of outer ones:

        loop.for %i = a to b step s kind(parallel) {   loop.for %f = 0 to Ni*Nj step 1 kind(parallel) {
          <pure arith>                            ──▶     %i = a + (%f / Nj) * s
          loop.for %j = c to d step t                      %j = c + (%f % Nj) * t
              kind(parallel) { body }                      <pure arith>; body
        }                                                }

    The loop is marked (`COLLAPSED_ATTR`) so that `_outline` runs a chunk of
    `%f` row by row, `%f / Nj` then being a loop variable (`_row_by_row`).

    An outer loop marked `ROWS_FIRST_ATTR` (`share_rows`) takes the inner index
    as the major one instead: `%j = c + (%f / Ni) * t`, `%i = a + (%f % Ni) * s`
    (the threads' ranges of `%f` then split the rows, each covering every outer
    block), and `COLLAPSED_ATTR` is `Ni`.
    """
    outer_trips = static_trip_count(op)
    if outer_trips is None:
        return None
    block = op.body.block
    inners = [o for o in block.ops if isinstance(o, loop.ForOp)]
    if len(inners) != 1:
        return None
    inner = inners[0]
    others = [o for o in block.ops if o is not inner and not isinstance(o, loop.YieldOp)]
    if any(not o.name.startswith("arith.") for o in others) or inner.iter_args:
        return None
    if inner.kind.data != LoopKind.PARALLEL:
        return None
    inner_trips = static_trip_count(inner)
    starts = [_constant_int(v) for v in (op.lb, op.step, inner.lb, inner.step)]
    if inner_trips is None or inner_trips < 2:
        return None
    lb_i, step_i, lb_j, step_j = starts
    if lb_i is None or step_i is None or lb_j is None or step_j is None:
        return None
    index = IndexType()
    bounds = [arith.ConstantOp(IntegerAttr(v, index)) for v in (0, outer_trips * inner_trips, 1)]
    for bound in bounds:
        rewriter.insert(bound, InsertPoint.before(op))
    flat = block.args[0]
    derived: list[Operation] = []

    def emit(new: Operation) -> SSAValue:
        derived.append(new)
        return new.results[0]

    def const(value: int) -> SSAValue:
        return emit(arith.ConstantOp(IntegerAttr(value, index)))

    rows_first = ROWS_FIRST_ATTR in op.attributes
    span = outer_trips if rows_first else inner_trips
    width = const(span)
    major = emit(arith.DivUIOp(flat, width))
    minor = emit(arith.RemUIOp(flat, width))
    if rows_first:
        major, minor = minor, major
    i = emit(arith.AddiOp(const(lb_i), emit(arith.MuliOp(major, const(step_i)))))
    j = emit(arith.AddiOp(const(lb_j), emit(arith.MuliOp(minor, const(step_j)))))
    block.insert_ops_before(derived, block.first_op)  # pyright: ignore[reportArgumentType]
    flat.replace_uses_with_if(i, lambda use: use.operation not in derived)
    inner.body.block.args[0].replace_all_uses_with(j)
    for moved in list(inner.body.block.ops):
        if isinstance(moved, loop.YieldOp):
            continue
        moved.detach()
        block.insert_op_before(moved, inner)
    rewriter.erase(inner)
    for position, bound in enumerate(bounds):
        op.operands[position] = bound.result
    flat.name_hint = "flat"
    op.attributes[COLLAPSED_ATTR] = IntegerAttr(span, i64)
    if not rows_first:
        return op
    op.attributes.pop(ROWS_FIRST_ATTR)
    op.attributes[BLOCKS_IN_CHUNK_ATTR] = UnitAttr()
    return op


COLLAPSED_ATTR = "lamina.collapsed"
"""On a parallel loop `collapse_nested` made: the inner loop's trip count, by which
`_outline` walks a chunk of flat indices row by row (`_row_by_row`)."""


BLOCKS_IN_CHUNK_ATTR = "lamina.blocks_in_chunk"
"""On a collapsed loop (`COLLAPSED_ATTR` N) whose flat index is rows x blocks
(`ROWS_FIRST_ATTR`): `_outline` runs a chunk block by block (`_block_by_block`), and
a thread alone takes all iterations as one chunk (the trampoline's `whole_alone`), so
one thread runs them in the order of blocks x rows, as without `ROWS_FIRST_ATTR`."""


def _outline(
    op: loop.ForOp, name: str, captures: list[SSAValue], used: list[SSAValue]
) -> loop.FuncOp:
    """`loop.func @name(captures..., %lo, %hi, %step)` running the loop serially over [lo, hi).

    `used` are all values from outside the loop (`captured_values`): those that are
    constants are cloned into the body rather than passed (`captures` are the rest),
    so LLVM still sees them (strides, bounds of inner loops).
    """
    types = [v.type for v in captures] + [IndexType()] * 3
    func = loop.FuncOp(name, FunctionType.from_lists(types, []))
    func.attributes[INTERNAL_ATTR] = UnitAttr()
    block = func.body.blocks[0]
    *params, lo, hi, step = block.args
    lo.name_hint, hi.name_hint, step.name_hint = "lo", "hi", "step"

    def in_loop(use) -> bool:
        return _inside(use.operation, op)

    step_chain = _constant_chain(op.step)
    if step_chain is not None:
        step = _clone_chain(step_chain, block)
    for value in used:
        chain = _constant_chain(value)
        if chain is not None:
            value.replace_uses_with_if(_clone_chain(chain, block), in_loop)
    for value, param in zip(captures, params, strict=True):
        param.name_hint = value.name_hint
        value.replace_uses_with_if(param, in_loop)
    body = Region()
    op.body.move_blocks(body)
    for inner in body.walk():
        if isinstance(inner, loop.ForOp) and inner.kind.data == LoopKind.PARALLEL:
            inner.set_kind(LoopKind.SERIAL)
    width = op.attributes.get(COLLAPSED_ATTR)
    if isinstance(width, IntegerAttr) and BLOCKS_IN_CHUNK_ATTR in op.attributes:
        _block_by_block(block, lo, hi, width.value.data, body)
    elif isinstance(width, IntegerAttr):
        _row_by_row(block, lo, hi, width.value.data, body)
    else:
        block.add_op(loop.ForOp(lo, hi, step, [], LoopKind.SERIAL, body))
    block.add_op(loop.ReturnOp())
    return func


def _row_by_row(block: Block, lo: SSAValue, hi: SSAValue, width: int, body: Region) -> None:
    """Add to `block` a chunk [lo, hi) of a collapsed loop's flat indices as two loops, so that
    the outer loop's variable is a loop variable again (`collapse_nested`'s
    `flat / width` becomes `%q`, `flat mod width` becomes `flat - q * width`):

        loop.for %q = lo / width to ceil(hi / width) {
          loop.for %flat = max(lo, q * width) to min(hi, q * width + width) { body }
        }

    Derived from the flat index by a division, the outer variable of a
    power-of-two `width` and step lost its relation to the same variable plus a
    constant: with `width` 32 and step 2, LLVM folds `(flat / 32) * 2` to
    `(flat >> 4) & -2` and that plus 1 to `(flat >> 4) | 1`, which scalar
    evolution cannot subtract. A convolution jamming two output-channel blocks
    (`jam_channel_blocks`: blocks `i` and `i + 1` in a loop of step 2) over
    32 or 64 rows therefore had two accumulator rows LLVM could not prove
    disjoint: it kept them in memory, loaded and stored around every FMA,
    behind a run-time overlap check (AVX2, 3x3 stride 2 16->32 at 64x64:
    3.4x the one-block time, docs/performance.md "Jammed accumulators and
    collapsed loops"). As a loop variable, `q * 2 + 1` is `q * 2` plus 1.
    """
    index = IndexType()
    one = arith.ConstantOp(IntegerAttr(1, index))
    span = arith.ConstantOp(IntegerAttr(width, index))
    last = arith.ConstantOp(IntegerAttr(width - 1, index))
    first_q = arith.DivUIOp(lo, span)
    rounded = arith.AddiOp(hi, last)
    end_q = arith.DivUIOp(rounded, span)
    outer = loop.ForOp(first_q, end_q, one, [], LoopKind.SERIAL)
    outer_block = outer.body.block
    q = outer_block.args[0]
    q.name_hint = "q"
    base = arith.MuliOp(q, span)
    top = arith.AddiOp(base, span)
    start, stop = arith.MaxSIOp(lo, base), arith.MinSIOp(hi, top)
    inner = loop.ForOp(start, stop, one, [], LoopKind.SERIAL, body)
    outer_block.insert_ops_before([base, top, start, stop, inner], outer_block.first_op)  # pyright: ignore[reportArgumentType]
    _derive_from_row(body.block, width, q, base.result)
    block.add_ops([one, span, last, first_q, rounded, end_q, outer])  # pyright: ignore[reportArgumentType]


def _block_by_block(block: Block, lo: SSAValue, hi: SSAValue, width: int, body: Region) -> None:
    """Add to `block` a chunk [lo, hi) of a rows-first collapsed loop's flat indices
    (`flat = row * width + b`, `ROWS_FIRST_ATTR`) block by block, each block's rows
    of the chunk in order:

        loop.for %b = 0 to width {
          loop.for %row = (lo + width - 1 - b) / width to (hi + width - 1 - b) / width {
            body (flat / width: %row, flat mod width: %b)
          }
        }

    The threads split the rows, and a thread still runs one block's rows back to
    back: a pointwise convolution keeps that block's weights in L1 (taken row by
    row, two jammed groups of 4 blocks alternate 64 KiB of weights through a
    48 KiB L1, and ShuffleNetV2's 1x1 convolutions at 14x14 took 1.6x as long).
    """
    index = IndexType()
    zero = arith.ConstantOp(IntegerAttr(0, index))
    one = arith.ConstantOp(IntegerAttr(1, index))
    span = arith.ConstantOp(IntegerAttr(width, index))
    last = arith.ConstantOp(IntegerAttr(width - 1, index))
    low = arith.AddiOp(lo, last)
    high = arith.AddiOp(hi, last)
    outer = loop.ForOp(zero, span, one, [], LoopKind.SERIAL)
    outer_block = outer.body.block
    b = outer_block.args[0]
    b.name_hint = "b"
    start = arith.DivUIOp(arith.SubiOp(low, b), span)
    stop = arith.DivUIOp(arith.SubiOp(high, b), span)
    inner = loop.ForOp(start, stop, one, [], LoopKind.SERIAL, body)
    ops = [start.lhs.owner, start, stop.lhs.owner, stop, inner]
    outer_block.insert_ops_before(ops, outer_block.first_op)  # pyright: ignore[reportArgumentType]
    row = body.block.args[0]
    derived = [
        use.operation
        for use in row.uses
        if isinstance(use.operation, arith.DivUIOp | arith.RemUIOp)
        and use.operation.lhs is row
        and _constant_int(use.operation.rhs) == width
    ]
    if any(use.operation not in derived for use in row.uses):
        scaled = arith.MuliOp(row, span.result)
        flat = arith.AddiOp(scaled, b)
        row.replace_uses_with_if(
            flat.result, lambda use: use.operation is not scaled and use.operation not in derived
        )
        body.block.insert_ops_before([scaled, flat], body.block.first_op)  # pyright: ignore[reportArgumentType]
    for op in derived:
        op.results[0].replace_all_uses_with(row if isinstance(op, arith.DivUIOp) else b)
        op.detach()
        op.erase()
    row.name_hint = "row"
    block.add_ops([zero, one, span, last, low, high, outer])  # pyright: ignore[reportArgumentType]


def _derive_from_row(body: Block, width: int, q: SSAValue, base: SSAValue) -> None:
    """In the body of `_row_by_row`'s inner loop, `collapse_nested`'s
    `flat / width` becomes `q` and `flat mod width` becomes `flat - base`."""
    flat = body.args[0]
    for use in list(flat.uses):
        derived = use.operation
        if not isinstance(derived, arith.DivUIOp | arith.RemUIOp) or derived.lhs is not flat:
            continue
        if _constant_int(derived.rhs) != width:
            continue
        if isinstance(derived, arith.DivUIOp):
            derived.result.replace_all_uses_with(q)
        else:
            offset = arith.SubiOp(flat, base)
            body.insert_op_before(offset, derived)
            derived.result.replace_all_uses_with(offset.result)
        derived.detach()
        derived.erase()


def _clone_chain(chain: list[Operation], block: Block) -> SSAValue:
    """Clone a constant (and the cast behind it) into `block`; return the final value."""
    mapping: dict[SSAValue, SSAValue] = {}
    clone = None
    for original in chain:
        clone = original.clone(value_mapper=mapping)
        block.add_op(clone)
        mapping[original.results[0]] = clone.results[0]
    assert clone is not None
    return clone.results[0]


def _to_slot(value: SSAValue) -> tuple[list[Operation], SSAValue]:
    """Ops turning an llvm-typed scalar or pointer into the i64 stored in a context slot.

    The context is an array of i64 slots rather than an llvm struct: xDSL's
    translator types a struct-field GEP as a pointer to the whole struct
    (and a pointer-typed GEP as the base's type), which llvmlite refuses to
    store through; i64 slots only need GEPs over i64.
    """
    ty = value.type
    match ty:
        case llvm.LLVMPointerType():
            ops: list[Operation] = [llvm.PtrToIntOp(value, i64)]
        case IntegerType() if ty.width.data == 64:
            return [], value
        case IntegerType():
            ops = [llvm.ZExtOp(value, i64)]
        case Float64Type():
            ops = [llvm.BitcastOp(value, i64)]
        case _:  # f32 / f16: through the integer of the same width
            bits = IntegerType(element_size(ty) * 8)
            cast = llvm.BitcastOp(value, bits)
            ops = [cast, llvm.ZExtOp(cast.result, i64)]
    return ops, ops[-1].results[0]


def _from_slot(emit: _Emitter, word: SSAValue, ty) -> SSAValue:
    """The inverse of `_to_slot`, appended to the trampoline."""
    match ty:
        case llvm.LLVMPointerType():
            return emit(quick(llvm.IntToPtrOp, word))
        case IntegerType() if ty.width.data == 64:
            return word
        case IntegerType():
            return emit(quick(llvm.TruncOp, word, ty))
        case Float64Type():
            return emit(quick(llvm.BitcastOp, word, ty))
    bits = IntegerType(element_size(ty) * 8)
    return emit(quick(llvm.BitcastOp, emit(quick(llvm.TruncOp, word, bits)), ty))


def _call_site(
    op: Operation, trampoline: str, values: list[SSAValue], rewriter, threads: int = 0
) -> llvm.CallOp:
    """Pack `values` into stack slots and hand it to `GOMP_parallel(trampoline, ctx, threads, 0)`
    (`threads` 0: OpenMP's default; 1: `TEAM_ONLY_ATTR`)."""
    entry = InsertPoint.at_start(entry_block(op))
    count = rewriter.insert(quick(llvm.ConstantOp, IntegerAttr(len(values), i64), i64), entry)
    ctx = rewriter.insert(quick(llvm.AllocaOp, count, i64, 8), InsertPoint.after(count)).res
    for index, value in enumerate(values):
        ops, word = _to_slot(to_llvm(value, rewriter))
        for conversion in ops:
            rewriter.insert(conversion)
        slot = rewriter.insert(constant_gep(ctx, index, i64)).result
        rewriter.insert(quick(llvm.StoreOp, word, slot, alignment=8))
    fn = rewriter.insert(llvm.AddressOfOp(trampoline, PTR)).result
    zero = rewriter.insert(quick(llvm.ConstantOp, IntegerAttr(0, i32), i32)).result
    team = zero
    if threads:
        team = rewriter.insert(quick(llvm.ConstantOp, IntegerAttr(threads, i32), i32)).result
    declare_function(op, rewriter, GOMP_PARALLEL, [PTR, PTR, i32, i32], llvm.LLVMVoidType())
    return rewriter.insert(quick(llvm.CallOp, GOMP_PARALLEL, fn, ctx, team, zero))


class _Emitter:
    """Appends llvm ops to a block (the trampoline is built from scratch).

    The trampoline's and the call site's ops are built through `quick`
    (conversion.py): the ops the constructors build, without xDSL's checked
    constructor after the first of each kind (DenseNet-121 outlines 148 loops)."""

    def __init__(self, block: Block):
        self.block = block

    def __call__(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        # Callers use the value of ops that have one (a store's None goes unused).
        return op.results[0] if op.results else None  # pyright: ignore[reportReturnType]

    def const(self, value: int) -> SSAValue:
        return self(quick(llvm.ConstantOp, integer_attr(value, i64), i64))

    def icall(self, name: str) -> SSAValue:
        return self(quick(llvm.SExtOp, self(quick(llvm.CallOp, name, return_type=i32)), i64))

    def smin(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self(llvm.CallIntrinsicOp("llvm.smin.i64", [a, b], [i64]))

    def smax(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self(llvm.CallIntrinsicOp("llvm.smax.i64", [a, b], [i64]))


CHUNKS_PER_THREAD = 4
"""A parallel loop's iterations are handed out in about this many chunks per
thread, on demand (libgomp's dynamic schedule): a thread that starts late
(a sleeping worker's futex wake-up) or runs slowly (its core shared with a
NumPy/OpenBLAS or onnxruntime thread still spinning after that library's
own call) takes fewer chunks instead of holding up the whole region, as a
static split into one range per thread did (docs/performance.md, Threads)."""


def balanced_chunk(iterations: int, threads: int) -> int | None:
    """The chunk size that `threads` threads taking chunks on demand finish
    `iterations` equal iterations soonest with, among those no larger than
    the default `ceil(n / (threads * CHUNKS_PER_THREAD))` and giving at most
    `MAX_CHUNK_FACTOR` times its number of chunks (the largest of the best:
    fewest chunks); None when that is the default's own.

    With the default chunk the last chunk is often short and one thread takes
    one chunk more than the other: 36 channel blocks of a depthwise
    convolution (MobileNetV2) in chunks of 5 split 20/16, 42 (EfficientNet-B0)
    in chunks of 6 split 24/18. Chunks of 3 split both evenly (18/18, 21/21).
    A late worker still finds at least as many chunks as with the default.
    """
    if iterations < 2 or threads < 2:
        return None
    default = max(1, -(-iterations // (threads * CHUNKS_PER_THREAD)))
    smallest = max(1, -(-iterations // (threads * CHUNKS_PER_THREAD * MAX_CHUNK_FACTOR)))
    candidates: Iterable[int] = range(default, smallest - 1, -1)
    if default - smallest > MAX_CHUNK_CANDIDATES:  # a huge loop: one size per chunk count
        counts = range(
            threads * CHUNKS_PER_THREAD, threads * CHUNKS_PER_THREAD * MAX_CHUNK_FACTOR + 1
        )
        candidates = sorted({-(-iterations // k) for k in counts}, reverse=True)
    best = min(candidates, key=lambda c: _makespan(iterations, c, threads))
    return None if best == default else best


MAX_CHUNK_FACTOR = 4
"""`balanced_chunk` hands out at most this many times the default number of chunks
(each one an atomic on a line both threads write)."""

MAX_CHUNK_CANDIDATES = 4096
"""`balanced_chunk` tries every chunk size between the default and the smallest when
there are at most this many (loops up to about 40,000 iterations on two threads);
beyond, only the largest size of each chunk count, so the compile time does not grow
with the trip count (a 2**31-element relu has 2e8 sizes in that range)."""


def _makespan(iterations: int, chunk: int, threads: int) -> int:
    """Iterations done by the busiest of `threads` equally fast threads that take
    the chunks in turn (the last chunk holds what is left)."""
    chunks = -(-iterations // chunk)
    short = chunk * chunks - iterations
    loads = [chunk * len(range(t, chunks, threads)) for t in range(threads)]
    loads[(chunks - 1) % threads] -= short
    return max(loads)


GOMP_DYNAMIC_START = "GOMP_loop_dynamic_start"
GOMP_DYNAMIC_NEXT = "GOMP_loop_dynamic_next"
GOMP_END_NOWAIT = "GOMP_loop_end_nowait"


def _trampoline(
    base: str,
    header: list[SSAValue],
    captures: list[SSAValue],
    balanced: tuple[int, int] | None = None,
    whole_alone: bool = False,
) -> llvm.FuncOp:
    """`llvm.func @<base>_omp(%ctx)`: unpack, then call `@<base>` on chunks taken on demand.

    n     = max((ub - lb + step - 1) / step, 0)       trip count
    chunk = max(ceil(n / (nthreads * CHUNKS_PER_THREAD)), 1)
    chunk = nthreads == T ? C : chunk      with balanced = (T, C): `balanced_chunk`
    chunk = nthreads == 1 ? n : chunk      with `whole_alone` (`BLOCKS_IN_CHUNK_ATTR`)
    while GOMP_loop_dynamic_{start,next} hands this thread [s, e):
        @<base>(captures, lb + s * step, lb + e * step, step)
    GOMP_loop_end_nowait()        (GOMP_parallel's own barrier ends the region)
    """
    values = [*header, *captures]
    entry, body, done = Block(arg_types=[PTR]), Block(), Block()
    emit = _Emitter(entry)
    ctx = entry.args[0]
    loaded = []
    for index, value in enumerate(values):
        word = emit(quick(llvm.LoadOp, emit(constant_gep(ctx, index, i64)), i64, alignment=8))
        loaded.append(_from_slot(emit, word, convert_type(value.type)))
    lb_v, ub_v, step_v, *capture_vals = loaded
    one = emit.const(1)
    span = emit(
        quick(llvm.AddOp, emit(quick(llvm.SubOp, ub_v, lb_v)), emit(quick(llvm.SubOp, step_v, one)))
    )
    n = emit.smax(emit(quick(llvm.SDivOp, span, step_v)), emit.const(0))
    threads = emit.icall("omp_get_num_threads")
    pieces = emit(quick(llvm.MulOp, threads, emit.const(CHUNKS_PER_THREAD)))
    chunk = emit(
        quick(llvm.SDivOp, emit(quick(llvm.AddOp, n, emit(quick(llvm.SubOp, pieces, one)))), pieces)
    )
    chunk = emit.smax(chunk, one)
    if balanced is not None:
        team, best = balanced
        same = emit(quick(llvm.ICmpOp, threads, emit.const(team), _EQ))
        chunk = emit(quick(llvm.SelectOp, same, emit.const(best), chunk))
    if whole_alone:
        alone = emit(quick(llvm.ICmpOp, threads, one, _EQ))
        chunk = emit(quick(llvm.SelectOp, alone, emit.smax(n, one), chunk))
    bounds = emit(quick(llvm.AllocaOp, emit.const(2), i64, 8))
    first, last = emit(constant_gep(bounds, 0, i64)), emit(constant_gep(bounds, 1, i64))
    start = quick(llvm.CallOp, GOMP_DYNAMIC_START, emit.const(0), n, one, chunk, first, last,
                        return_type=i8)  # fmt: skip
    emit(llvm.CondBrOp(_true(emit, emit(start)), body, [], done, []))

    emit = _Emitter(body)
    begin = emit(quick(llvm.LoadOp, first, i64, alignment=8))
    end = emit(quick(llvm.LoadOp, last, i64, alignment=8))
    lo = emit(quick(llvm.AddOp, lb_v, emit(quick(llvm.MulOp, begin, step_v))))
    hi = emit(quick(llvm.AddOp, lb_v, emit(quick(llvm.MulOp, end, step_v))))
    emit(llvm.CallOp(base, *capture_vals, lo, hi, step_v))  # a name of its own: no recipe
    more = emit(quick(llvm.CallOp, GOMP_DYNAMIC_NEXT, first, last, return_type=i8))
    emit(llvm.CondBrOp(_true(emit, more), body, [], done, []))

    emit = _Emitter(done)
    emit(quick(llvm.CallOp, GOMP_END_NOWAIT))
    emit(quick(llvm.ReturnOp))
    return llvm.FuncOp(
        f"{base}_omp",
        llvm.LLVMFunctionType([PTR], llvm.LLVMVoidType()),
        linkage=llvm.LinkageAttr("internal"),
        body=Region([entry, body, done]),
    )


def _true(emit: _Emitter, flag: SSAValue) -> SSAValue:
    """The C `bool` libgomp returns (an i8) as an i1."""
    zero = emit(quick(llvm.ConstantOp, integer_attr(0, i8), i8))
    return emit(quick(llvm.ICmpOp, flag, zero, _NE))


_NE = IntegerAttr(llvm.ICmpPredicateFlag("ne").to_int(), i64)
_EQ = IntegerAttr(llvm.ICmpPredicateFlag("eq").to_int(), i64)
"""The `ne` predicate of `_true`'s compare, built once (lower-to-llvm's time, docs/compile-speed.md)."""


def declare_omp_queries(op: Operation, rewriter) -> None:
    """The libgomp entry points every trampoline calls."""
    declare_function(op, rewriter, "omp_get_num_threads", [], i32)
    declare_function(op, rewriter, GOMP_DYNAMIC_START, [i64, i64, i64, i64, PTR, PTR], i8)
    declare_function(op, rewriter, GOMP_DYNAMIC_NEXT, [PTR, PTR], i8)
    declare_function(op, rewriter, GOMP_END_NOWAIT, [], llvm.LLVMVoidType())


__all__ = [
    "ITERATIONS_ATTR",
    "ParallelForLowering",
    "balanced_chunk",
    "static_trip_count",
]
