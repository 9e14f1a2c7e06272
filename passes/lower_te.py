"""`lower-te`: tensor-expression functions → loop nests over buffers.

Each `te.func @f` becomes a `loop.func @f_loop` in destination-passing style
and every `graph.call_te @f(...)` becomes `graph.call_loop @f_loop(...)`
(the graph level keeps its tensor semantics; `lower-graph` bufferizes it).

How one `te.compute` is lowered (TVM's `te.create_prim_func` analog)::

    %c = te.compute [M, N] reduce [K] combiner(sum) (%i, %j, %k) {
      ...  te.read %a[%i, %k] ...  te.yield %v
    }
        ⇓
    loop.for %i = 0 to M step 1 kind(parallel) {        // spatial nest, row-major:
      loop.for %j = 0 to N step 1 {                     // the innermost loop walks the
        %r = loop.for %k = 0 to K step 1                //  last (contiguous) dimension
               iter_args(%acc = <init>) -> (f32) {      // reduction nest: accumulate
          ...  loop.load %a_buf[%i, %k] ...             //  in iter_args
          %n = arith.addf %acc, %v : f32
          loop.yield %n : f32
        }
        loop.store %r, %c_buf[%i, %j]
      }
    }

The destination `%c_buf` is the caller's output buffer when `%c` is
returned, otherwise a `loop.alloc {scope = "local"}` temporary freed after
its last reader (a DAG such as softmax's max → exp → sum → div).
"""

from __future__ import annotations

from collections.abc import Sequence
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
    MemRefType,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    TensorType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import ConstantLike

from lamina.core.diagnostics import op_error
from lamina.core.pass_base import LaminaPass
from lamina.dialects import graph, loop, te
from lamina.dialects.lamina import CONSTRAINT_ATTR_NAME, Phase

LOOP_SUFFIX = "_loop"
"""`te.func @f` becomes `loop.func @f_loop`."""

PARALLEL_MIN_WORK = 1 << 14
"""Region evaluations below which a nest stays serial: forking a thread team
(`GOMP_parallel`) costs several microseconds, more than such a nest computes."""

SCRATCH_SCOPE = "local"
"""Memory scope of the temporaries holding intermediate `te.compute` results."""


def buffer_type(tensor: Attribute) -> MemRefType:
    """The row-major buffer holding a statically shaped tensor: `memref<same shape>`."""
    assert isinstance(tensor, TensorType)
    return MemRefType(tensor.element_type, tensor.get_shape())


def to_buffer_types(types: Sequence[Attribute]) -> list[Attribute]:
    """Tensors become buffers; anything else (already a buffer or a scalar) is kept."""
    return [buffer_type(t) if isinstance(t, TensorType) else t for t in types]


# ---------------------------------------------------------------------------
# Scalar building blocks
# ---------------------------------------------------------------------------


def combine(combiner: str, acc: SSAValue, value: SSAValue) -> Operation:
    """The op folding `value` into the accumulator `acc` with `combiner`.

    Floats: addf, mulf, maximumf, minimumf (NaN-propagating, as NumPy's max/min).
    Integers: addi, muli, maxsi, minsi; on i1 max/min are or/and (te's identities).
    """
    ty = acc.type
    if isinstance(ty, AnyFloat):
        float_ops = {
            "sum": arith.AddfOp,
            "prod": arith.MulfOp,
            "max": arith.MaximumfOp,
            "min": arith.MinimumfOp,
        }
        return float_ops[combiner](acc, value)
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


@dataclass
class ComputeLowering:
    """Lowers one `te.compute` into a loop nest storing into `dest`.

    `buffers` maps the tensors of the te.func (its arguments and earlier
    compute results) to their buffers; `outer` maps other values of the
    te.func's top level (scalar constants) to their clones.
    """

    compute: te.ComputeOp
    dest: SSAValue
    scope: FunctionScope
    buffers: dict[SSAValue, SSAValue]
    outer: dict[SSAValue, SSAValue]

    def emit(self) -> None:
        shape = self.compute.shape_values
        if shape:
            self.scope.add(self._spatial_nest(shape, 0, []))
        else:  # a 0-d result: one element, no spatial loop
            self._element(InsertPoint.at_end(self.scope.block), [])

    def _spatial_nest(self, shape: Sequence[int], dim: int, ivs: list[SSAValue]) -> loop.ForOp:
        """The loop over spatial dimension `dim` (and, inside, the deeper ones)."""
        kind = self._spatial_kind(len(shape), dim)
        for_op = loop.ForOp(
            self.scope.index(0), self.scope.index(shape[dim]), self.scope.index(1), kind=kind
        )
        iv = for_op.induction_var
        iv.name_hint = f"i{dim}"
        body = for_op.body.block
        if dim + 1 < len(shape):
            body.insert_op_before(self._spatial_nest(shape, dim + 1, [*ivs, iv]), body.last_op)
        else:
            self._element(InsertPoint.before(body.last_op), [*ivs, iv])  # type: ignore[arg-type]
        return for_op

    def _spatial_kind(self, rank: int, dim: int) -> str:
        """Outermost: parallel when worth a thread team (iterations write disjoint
        elements and only read other buffers, so it is always safe); innermost of a
        non-reduction nest of rank ≥ 2: vectorized (a hint)."""
        if dim == 0 and self.compute.shape_values[0] > 1 and self._work() >= PARALLEL_MIN_WORK:
            return "parallel"
        if dim == rank - 1 and dim > 0 and not self.compute.is_reduction:
            return "vectorized"
        return "serial"

    def _work(self) -> int:
        """How many times the region runs: every spatial and reduction point."""
        return prod(self.compute.shape_values) * prod(self.compute.reduce_values)

    def _element(self, at: InsertPoint, ivs: list[SSAValue]) -> None:
        """Compute and store one element at `ivs`, inserting the code at `at`."""
        if self.compute.is_reduction:
            value = self._reduction(ivs, at)
        else:
            value = self._clone_body(ivs, [], at)
        Rewriter.insert_op(loop.StoreOp(value, self.dest, ivs), at)

    def _reduction(self, ivs: list[SSAValue], at: InsertPoint) -> SSAValue:
        """The reduction nest around the body; returns the accumulated value."""
        init_attr = self.compute.init_value()
        assert init_attr is not None and self.compute.combiner is not None
        init = self.scope.constant(init_attr, "init")
        combiner = self.compute.combiner.data
        extents = self.compute.reduce_values

        def nest(dim: int, acc_in: SSAValue, rivs: list[SSAValue]) -> loop.ForOp:
            for_op = loop.ForOp(
                self.scope.index(0),
                self.scope.index(extents[dim]),
                self.scope.index(1),
                iter_args=[acc_in],
                body=Block(arg_types=[IndexType(), acc_in.type]),
            )
            riv, acc = for_op.body.block.args
            riv.name_hint, acc.name_hint = f"k{dim}", "acc"
            block = for_op.body.block
            end = InsertPoint.at_end(block)
            if dim + 1 < len(extents):
                inner = nest(dim + 1, acc, [*rivs, riv])
                Rewriter.insert_op(inner, end)
                next_acc = inner.res[0]
            else:
                value = self._clone_body(ivs, [*rivs, riv], end)
                step = combine(combiner, acc, value)
                Rewriter.insert_op(step, end)
                next_acc = step.results[0]
            Rewriter.insert_op(loop.YieldOp(next_acc), end)
            return for_op

        outer = nest(0, init, [])
        Rewriter.insert_op(outer, at)
        return outer.res[0]

    def _clone_body(
        self, spatial: Sequence[SSAValue], reduction: Sequence[SSAValue], at: InsertPoint
    ) -> SSAValue:
        """Clone the compute region at `at` (reads → loads, undef → loop.undef); return the
        value its `te.yield` yields."""
        mapper: dict[SSAValue, SSAValue] = dict(self.outer)
        block = self.compute.body.block
        mapper.update(zip(block.args, [*spatial, *reduction], strict=True))
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
        for buffer in temporaries:
            last = _last_top_level_user(buffer, scope.block)
            free = loop.FreeOp(buffer)
            if last is None:
                scope.add(free)
            else:
                scope.block.insert_op_after(free, last)


def _has_tensor_result(op: Operation) -> bool:
    return any(isinstance(t, TensorType) for t in op.result_types)


def _last_top_level_user(value: SSAValue, block: Block) -> Operation | None:
    """The last op of `block` that uses `value` itself or in a nested region."""
    last: Operation | None = None
    last_index = -1
    for use in value.uses:
        op = block.find_ancestor_op_in_block(use.operation)
        if op is None:
            continue
        index = block.get_operation_index(op)
        if index > last_index:
            last, last_index = op, index
    return last


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
    `te.compute` becomes a loop nest over its shape (innermost loop = last
    dimension; outermost `kind(parallel)` when the nest evaluates its region
    at least `PARALLEL_MIN_WORK` times, innermost spatial loop of an
    elementwise nest `kind(vectorized)`), a reduction an inner nest
    accumulating in `iter_args` from `init` (default: the combiner's
    identity), then a `loop.store`. Returned computes are stored straight
    into their output buffer; intermediate ones into `loop.alloc {scope =
    "local"}` temporaries, `loop.free`d after their last reader; an output
    that is a parameter or a value returned twice is filled with
    `loop.copy`. `te.read` → `loop.load`, `te.undef` → `loop.undef`.
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
        PatternRewriteWalker(
            TeFuncLowering(renamed, taken), apply_recursively=False
        ).rewrite_module(op)
        PatternRewriteWalker(CallTeLowering(renamed), apply_recursively=False).rewrite_module(op)
        self.check_legality(op)


__all__ = ["LowerTePass", "buffer_type", "combine", "lower_te_func", "to_buffer_types"]
