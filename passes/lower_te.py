"""`lower-te`: tensor-expression functions → loop nests over buffers.

Each `te.func @f` becomes a `loop.func @f_loop` in destination-passing style
and every `graph.call_te @f(...)` becomes `graph.call_loop @f_loop(...)`
(the graph level keeps its tensor semantics; `lower-graph` bufferizes it).

How one `te.compute` is lowered (TVM's `te.create_prim_func` analog): one
loop per index variable of its region, ordered so that the innermost loop
walks memory contiguously (`schedule/loop_order.py`'s `choose_innermost` scores every
index variable by how the region's reads and the result store move when it
steps). An elementwise compute keeps its dimensions in order with the chosen
one moved innermost. A reduction whose best innermost loop is a reduction
dimension (a row-sum over the last axis) accumulates in `iter_args`::

    %s = te.compute [M] reduce [K] combiner(sum) (%i, %k) { te.read %a[%i, %k] ... }
        ⇓
    loop.for %i = 0 to M step 1 {
      %r = loop.for %k = 0 to K step 1 iter_args(%acc = <init>) -> (f32) {
        ... loop.load %a_buf[%i, %k] ...  %n = arith.addf %acc, %v ...  loop.yield %n
      }
      loop.store %r, %s_buf[%i]
    }

one whose best innermost loop is a spatial dimension (matmul's `j`, a
convolution's output column) accumulates in the destination buffer, which
the region never reads (a noalias output parameter or a local temporary)::

    %c = te.compute [M, N] reduce [K] combiner(sum) (%i, %j, %k) {
      ... te.read %a[%i, %k] ... te.read %b[%k, %j] ...
    }
        ⇓
    loop.for %i = 0 to M step 1 kind(parallel) {        // outer spatial dims
      loop.for %j = 0 to N step 1 kind(vectorized) {    // the row starts at init
        loop.store <init>, %c_buf[%i, %j]
      }
      loop.for %k = 0 to K step 1 {                     // the reduction dims
        loop.for %j = 0 to N step 1 kind(vectorized) {  // contiguous in c and b
          ... %acc = loop.load %c_buf[%i, %j]  %n = arith.addf %acc, %v
          loop.store %n, %c_buf[%i, %j]
        }
      }
    }

A dimension of extent 1 gets no loop (its index is the constant 0).

The destination `%c_buf` is the caller's output buffer when `%c` is
returned, otherwise a `loop.alloc {scope = "local"}` temporary freed after
its last reader (a DAG such as softmax's max → exp → sum → div).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from math import prod
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    AnyFloat,
    ArrayAttr,
    DictionaryAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    TensorType,
)
from xdsl.dialects.utils.fast_math import FastMathFlag
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import ConstantLike

from lamina.core.diagnostics import op_error
from lamina.core.liveness import BlockOrder
from lamina.core.locations import locating_walker
from lamina.core.pass_base import LaminaPass
from lamina.dialects import graph, loop, te
from lamina.dialects.lamina import CONSTRAINT_ATTR_NAME, Phase
from lamina.dialects.loop import LoopKind, buffer_type, to_buffer_types
from lamina.schedule.loop_order import Innermost, choose_innermost, gathered_reads
from lamina.schedule.parallel import worth_a_team
from lamina.target.registry import op_knobs
from lamina.target.schedule_knobs import ScheduleKnobs

LOOP_SUFFIX = "_loop"
"""`te.func @f` becomes `loop.func @f_loop`."""

SCRATCH_SCOPE = "local"
"""Memory scope of the temporaries holding intermediate `te.compute` results."""


def _moved_last(axes: Iterable[int], last: int) -> list[int]:
    """`axes` in order, but with `last` moved to the end."""
    return [*(a for a in axes if a != last), last]


# ---------------------------------------------------------------------------
# Scalar building blocks
# ---------------------------------------------------------------------------


def combine(
    combiner: str, acc: SSAValue, value: SSAValue, *, reassociate: bool = False
) -> Operation:
    """The op folding `value` into the accumulator `acc` with `combiner`.

    Floats: addf, mulf, maximumf, minimumf (NaN-propagating, as NumPy's max/min).
    Integers: addi, muli, maxsi, minsi; on i1 max/min are or/and (te's identities).
    With `reassociate`, a float sum or product carries `fastmath<reassoc>`:
    the fold may be regrouped, which lets LLVM vectorize a loop-carried
    accumulator into partial sums (NumPy sums pairwise, not in order, either).
    """
    ty = acc.type
    if isinstance(ty, AnyFloat):
        float_ops = {
            "sum": arith.AddfOp,
            "prod": arith.MulfOp,
            "max": arith.MaximumfOp,
            "min": arith.MinimumfOp,
        }
        flags = None
        if reassociate and combiner in ("sum", "prod"):
            flags = arith.FastMathFlagsAttr([FastMathFlag.REASSOC])
        return float_ops[combiner](acc, value, flags=flags)
    if isinstance(ty, IntegerType) and ty.width.data == 1 and combiner in ("max", "min"):
        return (arith.OrIOp if combiner == "max" else arith.AndIOp)(acc, value)
    int_ops = {
        "sum": arith.AddiOp,
        "prod": arith.MuliOp,
        "max": arith.MaxSIOp,
        "min": arith.MinSIOp,
    }
    return int_ops[combiner](acc, value)


@dataclass
class FunctionScope:
    """Where the ops of one loop.func go, with index constants shared by every nest.

    Constants are appended to the function's top-level block when first asked
    for, which is always before the nest that uses them is appended, so they
    dominate every use.
    """

    block: Block
    constants: dict[Attribute, SSAValue] = field(default_factory=dict)

    def add(self, op: Operation) -> Operation:
        self.block.add_op(op)
        return op

    def constant(self, value: Attribute, name_hint: str) -> SSAValue:
        """`arith.constant value`, created once per function."""
        if value not in self.constants:
            const = arith.ConstantOp(value)
            const.result.name_hint = name_hint
            self.add(const)
            self.constants[value] = const.result
        return self.constants[value]

    def index(self, value: int) -> SSAValue:
        return self.constant(IntegerAttr(value, IndexType()), f"c{value}")


# ---------------------------------------------------------------------------
# One te.compute → one loop nest
# ---------------------------------------------------------------------------


Body = Callable[[InsertPoint, dict[int, SSAValue], int], None]
"""Code emitted inside a loop nest: `(where, index value per axis, enclosing loop count)`."""


@dataclass
class ComputeLowering:
    """Lowers one `te.compute` into a loop nest storing into `dest`.

    `buffers` maps the tensors of the te.func (its arguments and earlier
    compute results) to their buffers; `outer` maps other values of the
    te.func's top level (scalar constants) to their clones.

    An *axis* is a block argument of the compute's region: the spatial
    dimensions, then the reduction dimensions. The innermost loop is chosen
    by `choose_innermost` (the axis walking memory contiguously); an axis of
    extent 1 gets no loop (its index is the constant 0).
    """

    compute: te.ComputeOp
    dest: SSAValue
    scope: FunctionScope
    buffers: dict[SSAValue, SSAValue]
    outer: dict[SSAValue, SSAValue]
    inner: Innermost | None = field(default=None, init=False)
    """The innermost loop's axis, chosen when the nest is emitted."""
    knobs: ScheduleKnobs = field(default_factory=ScheduleKnobs, init=False)
    """The module's tuning knobs (`target/schedule_knobs.py`), read when the nest is emitted."""

    @property
    def rank(self) -> int:
        return len(self.compute.shape_values)

    @property
    def extents(self) -> tuple[int, ...]:
        return (*self.compute.shape_values, *self.compute.reduce_values)

    def emit(self) -> None:
        self.knobs = op_knobs(self.compute)
        inner = self.inner = choose_innermost(self.compute, self.knobs)
        spatial = list(range(self.rank))
        reduction = list(range(self.rank, len(self.extents)))
        # Built in a detached block, then moved: the index constants the nest
        # asks for are appended to the function block first, so they dominate it.
        staging = Block()
        top = InsertPoint.at_end(staging)
        if inner is None:  # a 0-d elementwise result: one element, no loop
            self._store_element(top, {}, 0)
        elif not self.compute.is_reduction:
            order = [*_moved_last(spatial, inner.axis)]
            self._nest(order, top, {}, 0, self._store_element, vector=True)
        elif inner.is_reduction:
            self._nest(spatial, top, {}, 0, self._reduce_in_register(inner.axis), vector=False)
        else:
            self._nest(
                [a for a in spatial if a != inner.axis],
                top,
                {},
                0,
                self._reduce_in_memory(inner.axis, reduction),
                vector=False,
            )
        for op in list(staging.ops):
            op.detach()
            self.scope.add(op)

    # -- loop nests ------------------------------------------------------------

    def _nest(
        self,
        axes: Sequence[int],
        at: InsertPoint,
        ivs: dict[int, SSAValue],
        depth: int,
        body: Body,
        *,
        vector: bool,
        parallel: bool = True,
    ) -> None:
        """Loops over `axes` (outer → inner) at `at` with `body` inside.

        `depth` counts the loops already around `at`. With `vector`, the
        innermost loop emitted here is the nest's innermost and has no
        loop-carried dependence: `kind(vectorized)` unless it is a top-level
        loop. A top-level spatial loop (with `parallel`) runs on a thread team
        when the nest is worth it (see `_kind`).
        """
        if not axes:
            body(at, ivs, depth)
            return
        axis, rest = axes[0], axes[1:]
        extent = self.extents[axis]
        if extent == 1:
            ivs = {**ivs, axis: self.scope.index(0)}
            self._nest(rest, at, ivs, depth, body, vector=vector, parallel=parallel)
            return
        innermost = vector and all(self.extents[a] == 1 for a in rest)
        for_op = loop.ForOp(
            self.scope.index(0),
            self.scope.index(extent),
            self.scope.index(1),
            kind=self._kind(axis, depth, innermost=innermost, parallel=parallel),
        )
        iv = for_op.induction_var
        iv.name_hint = self._iv_name(axis)
        Rewriter.insert_op(for_op, at)
        inside = InsertPoint.before(for_op.body.block.last_op)  # type: ignore[arg-type]
        self._nest(rest, inside, {**ivs, axis: iv}, depth + 1, body, vector=vector)

    def _kind(self, axis: int, depth: int, *, innermost: bool, parallel: bool) -> LoopKind:
        """Outermost spatial loop: parallel when worth a thread team (iterations
        write disjoint elements and only read other buffers, so it is always
        safe); innermost loop without loop-carried dependence, inside another
        loop: vectorized (a hint)."""
        if depth == 0 and parallel and axis < self.rank and self._worth_a_team():
            return LoopKind.PARALLEL
        if innermost and depth > 0:
            return LoopKind.VECTORIZED
        return LoopKind.SERIAL

    def _iv_name(self, axis: int) -> str:
        return f"i{axis}" if axis < self.rank else f"k{axis - self.rank}"

    def _worth_a_team(self) -> bool:
        """Does the nest read enough to run on the thread team
        (`schedule/parallel.py`)? Reads gathered by the vectorized loop count
        only in a spatial nest."""
        reads = sum(isinstance(o, te.ReadOp) for o in self.compute.body.block.ops)
        gathered = 0
        if self.inner is not None and not self.compute.is_reduction:
            gathered = gathered_reads(self.compute, self.inner)
        return worth_a_team(prod(self.extents), reads, gathered, self.knobs)

    # -- bodies ----------------------------------------------------------------------

    def _spatial(self, ivs: dict[int, SSAValue]) -> list[SSAValue]:
        return [ivs[a] for a in range(self.rank)]

    def _store_element(self, at: InsertPoint, ivs: dict[int, SSAValue], depth: int) -> None:
        """An elementwise point: compute the element and store it."""
        value = self._clone_body(ivs, at)
        Rewriter.insert_op(loop.StoreOp(value, self.dest, self._spatial(ivs)), at)

    def _reduce_in_register(self, inner: int) -> Body:
        """A reduction whose innermost loop is reduction axis `inner`: per result
        element, a nest of `iter_args` loops (`inner` last) folding into a
        register from `init`, then one store."""

        def body(at: InsertPoint, ivs: dict[int, SSAValue], depth: int) -> None:
            axes = _moved_last(range(self.rank, len(self.extents)), inner)
            value = self._fold(axes, at, ivs, self._init())
            Rewriter.insert_op(loop.StoreOp(value, self.dest, self._spatial(ivs)), at)

        return body

    def _fold(
        self, axes: Sequence[int], at: InsertPoint, ivs: dict[int, SSAValue], acc: SSAValue
    ) -> SSAValue:
        """`iter_args` loops over reduction `axes` combining the region's values into
        `acc`; returns the final accumulator."""
        if not axes:
            value = self._clone_body(ivs, at)
            step = combine(self._combiner(), acc, value, reassociate=True)
            Rewriter.insert_op(step, at)
            return step.results[0]
        axis, rest = axes[0], axes[1:]
        extent = self.extents[axis]
        if extent == 1:
            return self._fold(rest, at, {**ivs, axis: self.scope.index(0)}, acc)
        for_op = loop.ForOp(
            self.scope.index(0),
            self.scope.index(extent),
            self.scope.index(1),
            iter_args=[acc],
            body=Block(arg_types=[IndexType(), acc.type]),
        )
        riv, inner_acc = for_op.body.block.args
        riv.name_hint, inner_acc.name_hint = self._iv_name(axis), "acc"
        Rewriter.insert_op(for_op, at)
        end = InsertPoint.at_end(for_op.body.block)
        result = self._fold(rest, end, {**ivs, axis: riv}, inner_acc)
        Rewriter.insert_op(loop.YieldOp(result), end)
        return for_op.res[0]

    def _reduce_in_memory(self, inner: int, reduction: Sequence[int]) -> Body:
        """A reduction whose innermost loop is spatial axis `inner`: per row along
        `inner`, store `init` into the row, then the reduction loops around a
        loop over `inner` that loads, combines and stores each element. The
        destination is the compute's own buffer (a noalias output parameter or
        a local temporary), which the region cannot read."""

        def body(at: InsertPoint, ivs: dict[int, SSAValue], depth: int) -> None:
            init = self._init()

            def fill(at: InsertPoint, ivs: dict[int, SSAValue], depth: int) -> None:
                Rewriter.insert_op(loop.StoreOp(init, self.dest, self._spatial(ivs)), at)

            self._nest([inner], at, ivs, depth, fill, vector=True, parallel=False)
            self._nest(
                [*reduction, inner], at, ivs, depth, self._accumulate, vector=True, parallel=False
            )

        return body

    def _accumulate(self, at: InsertPoint, ivs: dict[int, SSAValue], depth: int) -> None:
        """`dest[i] = combine(dest[i], region(i, k))`."""
        value = self._clone_body(ivs, at)
        index = self._spatial(ivs)
        old = loop.LoadOp(self.dest, index)
        old.results[0].name_hint = "acc"
        step = combine(self._combiner(), old.results[0], value)
        Rewriter.insert_op([old, step], at)
        Rewriter.insert_op(loop.StoreOp(step.results[0], self.dest, index), at)

    def _init(self) -> SSAValue:
        init_attr = self.compute.init_value()
        assert init_attr is not None
        return self.scope.constant(init_attr, "init")

    def _combiner(self) -> str:
        assert self.compute.combiner is not None
        return self.compute.combiner.data

    def _clone_body(self, ivs: dict[int, SSAValue], at: InsertPoint) -> SSAValue:
        """Clone the compute region at `at` with axis `a` bound to `ivs[a]` (reads →
        loads, undef → loop.undef); return the value its `te.yield` yields."""
        mapper: dict[SSAValue, SSAValue] = dict(self.outer)
        block = self.compute.body.block
        mapper.update((arg, ivs[a]) for a, arg in enumerate(block.args))
        for op in block.ops:
            if isinstance(op, te.YieldOp):
                return mapper.get(op.value, op.value)
            new = self._lower_scalar_op(op, mapper)
            Rewriter.insert_op(new, at)
            for old, result in zip(op.results, new.results, strict=True):
                mapper[old] = result
                result.name_hint = old.name_hint
        raise op_error(self.compute, "region must end with te.yield")

    def _lower_scalar_op(self, op: Operation, mapper: dict[SSAValue, SSAValue]) -> Operation:
        if isinstance(op, te.ReadOp):
            buffer = self.buffers.get(op.tensor)
            if buffer is None:
                raise op_error(op, "reads a tensor that is neither a parameter nor a te.compute")
            return loop.LoadOp(buffer, [mapper.get(i, i) for i in op.indices])
        if isinstance(op, te.UndefOp):
            return loop.UndefOp(op.result.type)
        for nested in op.walk():
            if nested is not op and nested.dialect_name() == "te":
                raise op_error(nested, "lower-te cannot lower a te op nested in another op")
        return op.clone(value_mapper=mapper)


# ---------------------------------------------------------------------------
# te.func → loop.func
# ---------------------------------------------------------------------------


def loop_func_name(te_name: str, taken: set[str]) -> str:
    """`f_loop`, or `f_loop_1`, ... when that name is taken."""
    name, n = te_name + LOOP_SUFFIX, 0
    while name in taken:
        n += 1
        name = f"{te_name}{LOOP_SUFFIX}_{n}"
    return name


def dps_signature(func: te.FuncOp) -> tuple[list[Attribute], ArrayAttr[DictionaryAttr] | None]:
    """Parameters of the loop.func: input buffers then one output buffer per result,
    with the te.func's arg and res attribute dictionaries (device, constraint)."""
    inputs, outputs = func.function_type.inputs.data, func.function_type.outputs.data
    params = to_buffer_types([*inputs, *outputs])
    if func.arg_attrs is None and func.res_attrs is None:
        return params, None
    empty = DictionaryAttr({})
    arg_attrs = list(func.arg_attrs.data) if func.arg_attrs else [empty] * len(inputs)
    res_attrs = list(func.res_attrs.data) if func.res_attrs else [empty] * len(outputs)
    return params, ArrayAttr([*arg_attrs, *res_attrs])


def lower_te_func(func: te.FuncOp, name: str) -> loop.FuncOp:
    """The destination-passing `loop.func @name` computing what `func` returns."""
    params, arg_attrs = dps_signature(func)
    visibility = func.sym_visibility
    if func.is_declaration:
        return loop.FuncOp(name, (params, []), None, visibility, arg_attrs=arg_attrs)
    new = loop.FuncOp(name, (params, []), visibility=visibility, arg_attrs=arg_attrs)
    FuncBodyLowering(func, new).run()
    return new


@dataclass
class FuncBodyLowering:
    """Fills the body of `target` (a fresh loop.func) from the te.func `source`."""

    source: te.FuncOp
    target: loop.FuncOp
    buffers: dict[SSAValue, SSAValue] = field(default_factory=dict)
    outer: dict[SSAValue, SSAValue] = field(default_factory=dict)

    def run(self) -> None:
        block = self.target.body.block
        scope = FunctionScope(block)
        n_in = len(self.source.args)
        outs = list(block.args[n_in:])
        for old, new in zip(self.source.args, block.args[:n_in], strict=True):
            self.buffers[old] = new
            new.name_hint = old.name_hint
        for n, out in enumerate(outs):
            out.name_hint = f"out{n}"
        ret = self.source.get_return_op()
        if ret is None:
            raise op_error(self.source, "body must end with te.return")
        dests = self._destinations(ret, outs)
        self._record_output_constraints(ret, n_in)
        temporaries: list[SSAValue] = []
        for op in self.source.body.block.ops:
            if isinstance(op, te.ComputeOp):
                dest = dests.get(op.result) or self._alloc(op, scope, temporaries)
                self.buffers[op.result] = dest
                ComputeLowering(op, dest, scope, self.buffers, self.outer).emit()
            elif op.has_trait(ConstantLike) and not _has_tensor_result(op):
                clone = scope.add(op.clone())
                self.outer.update(zip(op.results, clone.results, strict=True))
            elif op.has_trait(ConstantLike):
                raise op_error(
                    op,
                    "lower-te cannot lower a tensor constant inside a te.func "
                    "(pass it as a parameter, e.g. from a graph.constant)",
                )
            elif not isinstance(op, te.ReturnOp):
                raise op_error(op, "lower-te can only lower te.compute and scalar constants")
        self._copy_unwritten_results(ret, outs, dests, scope)
        self._free(temporaries, scope)
        scope.add(loop.ReturnOp())

    @staticmethod
    def _destinations(ret: te.ReturnOp, outs: Sequence[SSAValue]) -> dict[SSAValue, SSAValue]:
        """Each returned te.compute result is computed straight into the first output
        buffer it is returned in; other outputs are filled by copies."""
        dests: dict[SSAValue, SSAValue] = {}
        for value, out in zip(ret.arguments, outs, strict=True):
            if isinstance(value.owner, te.ComputeOp) and value not in dests:
                dests[value] = out
        return dests

    def _record_output_constraints(self, ret: te.ReturnOp, n_in: int) -> None:
        """An output computed by a te.compute with a `constraint` says so in its
        `lamina.constraint` argument attribute (unless the te.func already did)."""
        attrs = list(self.target.arg_attrs.data) if self.target.arg_attrs else None
        for j, value in enumerate(ret.arguments):
            owner = value.owner
            if not isinstance(owner, te.ComputeOp) or owner.constraint is None:
                continue
            if attrs is None:
                attrs = [DictionaryAttr({})] * len(self.target.args)
            entry = dict(attrs[n_in + j].data)
            entry.setdefault(CONSTRAINT_ATTR_NAME, owner.constraint)
            attrs[n_in + j] = DictionaryAttr(entry)
        if attrs is not None:
            self.target.arg_attrs = ArrayAttr(attrs)

    def _alloc(
        self, compute: te.ComputeOp, scope: FunctionScope, temporaries: list[SSAValue]
    ) -> SSAValue:
        alloc = loop.AllocOp(
            buffer_type(compute.result.type), constraint=compute.constraint, scope=SCRATCH_SCOPE
        )
        alloc.result.name_hint = "tmp"
        scope.add(alloc)
        temporaries.append(alloc.result)
        return alloc.result

    def _copy_unwritten_results(
        self,
        ret: te.ReturnOp,
        outs: Sequence[SSAValue],
        dests: dict[SSAValue, SSAValue],
        scope: FunctionScope,
    ) -> None:
        """Outputs not computed in place (a returned parameter, a value returned twice)."""
        for value, out in zip(ret.arguments, outs, strict=True):
            if dests.get(value) is out:
                continue
            source = self.buffers.get(value)
            if source is None:
                raise op_error(ret, "can only return parameters and te.compute results")
            scope.add(loop.CopyOp(source, out))

    @staticmethod
    def _free(temporaries: Sequence[SSAValue], scope: FunctionScope) -> None:
        """Free each temporary right after the last top-level op that uses it."""
        order = BlockOrder(scope.block)
        for buffer in temporaries:
            last = order.last_user(buffer)
            free = loop.FreeOp(buffer)
            if last is None:
                scope.add(free)
            else:
                scope.block.insert_op_after(free, last)


def _has_tensor_result(op: Operation) -> bool:
    return any(isinstance(t, TensorType) for t in op.result_types)


# ---------------------------------------------------------------------------
# Patterns and pass
# ---------------------------------------------------------------------------


@dataclass
class TeFuncLowering(RewritePattern):
    """`te.func @f` ⇒ `loop.func @f_loop` (DPS); records the new name in `renamed`."""

    renamed: dict[str, str]
    taken: set[str]

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: te.FuncOp, rewriter: PatternRewriter, /):
        old = op.sym_name.data
        new_name = loop_func_name(old, self.taken)
        self.taken.add(new_name)
        self.renamed[old] = new_name
        rewriter.replace(op, lower_te_func(op, new_name), [])


@dataclass
class CallTeLowering(RewritePattern):
    """`graph.call_te @f(...)` ⇒ `graph.call_loop @f_loop(...)`, same tensors in and out."""

    renamed: dict[str, str]

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.CallTeOp, rewriter: PatternRewriter, /):
        callee = op.callee.root_reference.data
        if callee not in self.renamed:
            raise op_error(op, f"callee @{callee} is not a te.func of this module")
        new = graph.CallLoopOp(
            SymbolRefAttr(self.renamed[callee]),
            list(op.arguments),
            list(op.res.types),
            device=op.device,
        )
        new.attributes |= op.attributes
        rewriter.replace(op, new)


def symbol_names(module: ModuleOp) -> set[str]:
    """Names of the module's top-level symbols."""
    names = set()
    for op in module.ops:
        sym = op.properties.get("sym_name") or op.attributes.get("sym_name")
        if isinstance(sym, StringAttr):
            names.add(sym.data)
    return names


@dataclass(frozen=True)
class LowerTePass(LaminaPass):
    """Lower every `te.func` to a destination-passing `loop.func` of loop nests.

    Input invariant: phase `lowering` (after `legalize`); te.funcs over
    statically shaped tensors whose top level holds only `te.compute`,
    scalar constants and `te.return`.

    Output IR: each `te.func @f(A...) -> (R...)` is replaced by
    `loop.func @f_loop(A_buf..., R_buf...)`: one row-major memref per
    parameter, then one output memref per result, no results. Each
    `te.compute` becomes a loop nest over its dimensions (no loop for an
    extent of 1) whose innermost loop is the dimension along which most
    accesses are contiguous (ties: the result's last dimension, then the
    last reduction dimension); the other dimensions keep their order,
    spatial outside reduction. A reduction with a reduction dimension
    innermost accumulates in `iter_args` from `init` (default: the
    combiner's identity; a float sum or product with `fastmath<reassoc>`,
    so that it vectorizes) and stores once; one with a spatial dimension
    innermost first stores `init` into the row, then loads, combines and
    stores each element inside the reduction loops. The outermost loop is
    `kind(parallel)` when it is a spatial loop around the whole nest and
    the nest reads at least `parallel_min_work` tensor elements (a target option); an
    innermost spatial loop nested in another loop is `kind(vectorized)`.
    Returned computes are stored straight into their output buffer;
    intermediate ones into `loop.alloc {scope = "local"}` temporaries,
    `loop.free`d after their last reader; an output that is a parameter or
    a value returned twice is filled with `loop.copy`. `te.read` →
    `loop.load`, `te.undef` → `loop.undef`.
    Every `graph.call_te @f` becomes `graph.call_loop @f_loop` with the same
    tensor operands and results (and `device`).

    Invariants: no `te` op and no `graph.call_te` remains; graph functions
    keep their tensor semantics; the phase stays `lowering`.
    """

    name = "lower-te"

    phases: ClassVar[frozenset[Phase]] = frozenset({Phase.LOWERING})
    requires: ClassVar[tuple[str, ...]] = ("legalize",)
    illegal_ops: ClassVar[tuple[str, ...]] = ("te.*", "graph.call_te")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        renamed: dict[str, str] = {}
        taken = symbol_names(op)
        locating_walker(TeFuncLowering(renamed, taken), apply_recursively=False).rewrite_module(op)
        locating_walker(CallTeLowering(renamed), apply_recursively=False).rewrite_module(op)
        self.check_legality(op)


__all__ = ["LowerTePass", "buffer_type", "combine", "lower_te_func", "to_buffer_types"]
