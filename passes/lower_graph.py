"""`lower-graph`: graph functions → host `loop.func`s that allocate, call and copy buffers.

The last step of bufferization (Relax's VMBuiltinLower / call_tir lowering).
A graph function over tensors becomes a destination-passing loop function
over memrefs, whose body is straight-line host code::

    graph.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
      %t = graph.call_loop @k1(%x) : (tensor<4xf32>) -> tensor<4xf32>
      %y = graph.call_loop @k2(%t) : (tensor<4xf32>) -> tensor<4xf32>
      graph.return %y : tensor<4xf32>
    }
        ⇓
    loop.func @main(%x: memref<4xf32>, %out0: memref<4xf32>) {
      %t = loop.alloc : memref<4xf32>          // an intermediate
      loop.call @k1(%x, %t) : (memref<4xf32>, memref<4xf32>) -> ()
      loop.call @k2(%t, %out0) : ...           // a result: straight into the
      loop.free %t : memref<4xf32>             //   caller's output buffer
      loop.return
    }

Which buffer a value lives in: a parameter's is the parameter; a value
returned by the function is written straight into the caller's output
buffer (its first return position); any other value produced by a call or
copy gets a `loop.alloc` (on the op's `device`), freed right after its last
use. If `plan-memory` ran before, values it assigned to one storage slot
share one allocation (`STORAGE_ATTR`). Constants become internal constant
`llvm.mlir.global`s (see `ConstantPool`). An output that cannot be computed
in place (a returned parameter or constant, a value returned twice) is
filled with `loop.copy`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from math import prod
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import llvm
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    SymbolRefAttr,
    TensorType,
    UnrealizedConversionCastOp,
)
from xdsl.ir import Attribute, Block, Operation, OpResult, SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from lamina.backends.llvm.entry_points import RESULTS_ATTR
from lamina.core.devices import device_of
from lamina.core.diagnostics import op_error
from lamina.core.liveness import BlockOrder
from lamina.core.locations import locating_walker, stamp_trailing
from lamina.core.pass_base import LaminaPass
from lamina.core.symbols import lookup_symbol
from lamina.dialects import graph, loop
from lamina.dialects.lamina import (
    CONSTRAINT_ATTR_NAME,
    ConstraintAttr,
    DeviceAttr,
    Phase,
    codegen_target,
)
from lamina.passes.lower_te import buffer_type, symbol_names, to_buffer_types
from lamina.passes.specialize_closures import describe_function_value, resolve_invokes

STORAGE_ATTR = "lamina.storage"
"""Op attribute written by `plan-memory` at graph level: `array<i64: s0, ...>`, one
storage slot per result (-1: not planned). Results with one slot share a buffer."""

CONSTANT_PREFIX = "__lamina_constant"
"""Name prefix of the `llvm.mlir.global`s holding `graph.constant` values."""


# ---------------------------------------------------------------------------
# Module-level state: constant globals
# ---------------------------------------------------------------------------


@dataclass
class ConstantPool:
    """One internal constant `llvm.mlir.global` per distinct `graph.constant` value.

    A constant buffer is `llvm.mlir.addressof @g` seen as a memref through
    `builtin.unrealized_conversion_cast` (the row-major element array the
    `lower-to-llvm` ABI expects behind a memref): the data stays one dense
    attribute, never one store per element, and `lower-to-llvm` looks through
    the cast like through its own.
    """

    module: ModuleOp
    taken: set[str]
    by_value: dict[DenseIntOrFPElementsAttr, str] = field(default_factory=dict)

    def global_for(self, value: DenseIntOrFPElementsAttr) -> str:
        if value in self.by_value:
            return self.by_value[value]
        name, n = CONSTANT_PREFIX, 0
        while name in self.taken:
            n += 1
            name = f"{CONSTANT_PREFIX}_{n}"
        self.taken.add(name)
        ttype = value.get_type()
        count = prod(ttype.get_shape())
        glob = llvm.GlobalOp(
            llvm.LLVMArrayType(count, ttype.get_element_type()),
            name,
            "internal",
            constant=True,
            value=value,
        )
        self.module.body.block.add_op(glob)
        self.by_value[value] = name
        return name

    def buffer(self, value: DenseIntOrFPElementsAttr, block: Block, name_hint: str | None):
        """Emit the constant's buffer at the end of `block` and return it."""
        address = llvm.AddressOfOp(self.global_for(value), llvm.LLVMPointerType())
        cast = UnrealizedConversionCastOp.get([address.result], [buffer_type(value.get_type())])
        cast.results[0].name_hint = name_hint
        block.add_ops([address, cast])
        return cast.results[0]


# ---------------------------------------------------------------------------
# One graph.func body → host code
# ---------------------------------------------------------------------------

WRITING_OPS = (
    graph.CallLoopOp,
    graph.CallExternOp,
    graph.CallOp,
    graph.InvokeOp,
    graph.DeviceCopyOp,
)
"""Ops whose results are written into destination buffers the caller provides."""


@dataclass(frozen=True)
class BufferSpec:
    """What a `loop.alloc` for one graph value looks like: type, device, layout."""

    type: MemRefType
    device: DeviceAttr | None
    constraint: ConstraintAttr | None


def result_buffer_spec(op: Operation, index: int) -> BufferSpec | None:
    """The buffer of result `index` of `op` when the caller allocates it (DPS), else None.

    None for results that need no buffer of their own: function values,
    results of ops that are not calls or copies (constants, `on_device`
    aliases), and results of a `graph.call_loop` whose callee returns its
    buffers. Shared with `plan-memory`, which plans exactly these buffers.
    """
    if not isinstance(op, WRITING_OPS) or not isinstance(op.results[index].type, TensorType):
        return None
    device = device_of(op.results[index])  # a call's results: where its callee delivers each
    constraint = None
    if isinstance(op, graph.CallLoopOp):
        callee = lookup_symbol(op, op.callee)
        if isinstance(callee, loop.FuncOp):
            if callee.function_type.outputs.data:
                return None
            attr = callee.arg_attr(len(op.arguments) + index, CONSTRAINT_ATTR_NAME)
            constraint = attr if isinstance(attr, ConstraintAttr) else None
    return BufferSpec(
        buffer_type(op.results[index].type),
        device if isinstance(device, DeviceAttr) else None,
        constraint,
    )


@dataclass
class BodyLowering:
    """Emits the host code of `source` (a graph.func) into `target` (a fresh loop.func)."""

    source: graph.FuncOp
    target: loop.FuncOp
    constants: ConstantPool
    buffers: dict[SSAValue, SSAValue] = field(default_factory=dict)
    """Tensors → their buffers (and scalars → their clones)."""
    in_place: dict[SSAValue, SSAValue] = field(default_factory=dict)
    """Returned values → the output buffer they are computed in."""
    slots: dict[int, SSAValue] = field(default_factory=dict)
    """plan-memory storage slot → its buffer."""
    allocated: list[SSAValue] = field(default_factory=list)

    @property
    def block(self) -> Block:
        return self.target.body.block

    def run(self) -> None:
        buffered = [a for a in self.source.args if not isinstance(a.type, graph.FnType)]
        n_in = len(buffered)
        outs = list(self.block.args[n_in:])
        for old, new in zip(buffered, self.block.args[:n_in], strict=True):
            self.buffers[old] = new
            new.name_hint = old.name_hint
        for n, out in enumerate(outs):
            out.name_hint = f"out{n}"
        ret = self.source.body.block.last_op
        if not isinstance(ret, graph.ReturnOp):
            raise op_error(self.source, "body must end with graph.return")
        self._assign_outputs(ret, outs)
        for op in self.source.body.block.ops:
            if op is not ret:
                self._lower(op)
                stamp_trailing(self.block, op.location)  # its allocs/calls/copies: its line
        for value, out in zip(ret.arguments, outs, strict=True):
            if self.in_place.get(value) is not out:
                self.block.add_op(loop.CopyOp(self._buffer(value, ret), out))
        self._insert_frees()
        self.block.add_op(loop.ReturnOp())

    def _assign_outputs(self, ret: graph.ReturnOp, outs: Sequence[SSAValue]) -> None:
        """A returned call/copy result is produced straight into its first output buffer."""
        for value, out in zip(ret.arguments, outs, strict=True):
            if value not in self.in_place and _has_destination(value):
                self.in_place[value] = out

    # -- buffers -----------------------------------------------------------------

    def _buffer(self, value: SSAValue, user: Operation) -> SSAValue:
        if value in self.buffers:
            return self.buffers[value]
        if isinstance(value.type, graph.FnType):
            index = next((i for i, v in enumerate(user.operands) if v is value), 0)
            raise op_error(
                user,
                f"cannot lower a use of a function value: operand #{index} is "
                f"{describe_function_value(value)}; host code has no function values "
                "(specialize-closures turns a graph.call passing a graph.closure into a call "
                "of a specialized callee)",
            )
        raise op_error(user, "operand has no buffer (it is not produced by a lowered op)")

    def _destination(self, op: Operation, index: int) -> SSAValue:
        """Where result `index` of `op` is written: an output, a planned slot or a new alloc."""
        value = op.results[index]
        if value in self.in_place:
            dest = self.in_place[value]
        else:
            spec = result_buffer_spec(op, index)
            assert spec is not None, f"{op.name} result #{index} has no destination"
            slot = _storage_slot(op, index)
            if slot is not None and slot in self.slots:
                dest = self.slots[slot]
            else:
                alloc = loop.AllocOp(spec.type, spec.device, spec.constraint)
                alloc.result.name_hint = value.name_hint
                self.block.add_op(alloc)
                self.allocated.append(alloc.result)
                dest = alloc.result
                if slot is not None:
                    self.slots[slot] = dest
        self.buffers[value] = dest
        return dest

    def _insert_frees(self) -> None:
        """`loop.free` each allocation right after the last op using it."""
        order = BlockOrder(self.block)
        for buffer in self.allocated:
            last = order.last_user(buffer)
            free = loop.FreeOp(buffer)
            if last is None:
                self.block.add_op(free)
            else:
                self.block.insert_op_after(free, last)

    # -- ops -----------------------------------------------------------------------

    def _lower(self, op: Operation) -> None:
        match op:
            case graph.CallLoopOp():
                self._call_loop(op)
            case graph.CallExternOp():
                self._call(op, SymbolRefAttr(op.callee.data), op.arguments)
            case graph.CallOp():
                self._call(op, op.callee, op.arguments)
            case graph.ClosureOp():
                pass  # invokes of it were resolved (`resolve_invokes`); other uses fail
            case graph.InvokeOp():
                raise op_error(
                    op,
                    "cannot resolve the callee statically: the function value is "
                    f"{describe_function_value(op.fn)}",
                )
            case graph.ConstantOp():
                buffer = self.constants.buffer(op.value, self.block, op.result.name_hint)
                self.buffers[op.result] = buffer
            case graph.DeviceCopyOp():
                dest = self._destination(op, 0)
                self.block.add_op(loop.CopyOp(self._buffer(op.input, op), dest, op.src, op.dst))
            case graph.OnDeviceOp():
                self.buffers[op.result] = self._buffer(op.input, op)
            case _:
                self._generic(op)

    def _call(self, op: Operation, callee: SymbolRefAttr, arguments: Sequence[SSAValue]) -> None:
        """`loop.call @callee(inputs..., destinations...)`."""
        for result in op.results:
            if isinstance(result.type, graph.FnType):
                raise op_error(
                    op,
                    "cannot lower a call returning a function value to host code: "
                    f"{describe_function_value(result)}",
                )
        inputs = [self._buffer(v, op) for v in arguments]
        dests = [self._destination(op, i) for i in range(len(op.results))]
        call = loop.CallOp(callee, [*inputs, *dests])
        call.attributes |= _kept_attributes(op)
        self.block.add_op(call)

    def _call_loop(self, op: graph.CallLoopOp) -> None:
        """DPS callee: inputs then outputs. A callee that returns its buffers is called
        directly and its results are the values' buffers."""
        callee = lookup_symbol(op, op.callee)
        if isinstance(callee, loop.FuncOp) and callee.function_type.outputs.data:
            inputs = [self._buffer(v, op) for v in op.arguments]
            call = loop.CallOp(op.callee, inputs, callee.function_type.outputs.data)
            self.block.add_op(call)
            self.buffers.update(zip(op.results, call.res, strict=True))
            return
        inputs = [self._buffer(v, op) for v in op.arguments]
        dests = [self._destination(op, i) for i in range(len(op.results))]
        call = loop.CallOp(op.callee, [*inputs, *dests])
        call.attributes |= _kept_attributes(op)
        self.block.add_op(call)

    def _generic(self, op: Operation) -> None:
        """Scalar code is kept as is; any other op over tensors cannot be lowered here."""
        if any(
            isinstance(t, TensorType | graph.FnType) for t in (*op.operand_types, *op.result_types)
        ):
            hint = ""
            if any(isinstance(t, graph.FnType) for t in (*op.operand_types, *op.result_types)):
                hint = (
                    " (it computes a function value at run time; host code has no function "
                    "values, only calls of functions known at compile time)"
                )
            elif codegen_target(op) is not None:
                hint = (
                    f" (it is claimed by target '{codegen_target(op)}', whose "
                    "lower-claimed hook did not run: compile with that target)"
                )
            elif op.has_trait(graph.GraphCompute):
                hint = " (run legalize and lower-te first)"
            elif isinstance(op, graph.CallTeOp):
                hint = " (run lower-te first)"
            raise op_error(op, f"lower-graph cannot lower this op{hint}")
        clone = op.clone(value_mapper=dict(self.buffers))
        self.block.add_op(clone)
        self.buffers.update(zip(op.results, clone.results, strict=True))


def _has_destination(value: SSAValue) -> bool:
    """Is `value` the result of an op writing it into a caller-provided buffer?"""
    return isinstance(value, OpResult) and result_buffer_spec(value.op, value.index) is not None


def _storage_slot(op: Operation, index: int) -> int | None:
    """The plan-memory storage slot of result `index` of `op`, if planned."""
    attr = op.attributes.get(STORAGE_ATTR)
    if not isinstance(attr, DenseArrayBase):
        return None
    slots = attr.get_values()
    if index >= len(slots) or slots[index] < 0:
        return None
    return int(slots[index])


def _kept_attributes(op: Operation) -> dict[str, Attribute]:
    """Discardable attributes that survive lowering (not plan-memory's bookkeeping)."""
    return {k: v for k, v in op.attributes.items() if k != STORAGE_ATTR}


# ---------------------------------------------------------------------------
# Signatures, patterns and the pass
# ---------------------------------------------------------------------------


def host_signature(
    func: graph.FuncOp,
) -> tuple[list[Attribute], ArrayAttr[DictionaryAttr] | None]:
    """Input buffers then one output buffer per result; arg/res attrs concatenated.

    Function-typed parameters have no buffer and are left out: lower-graph
    only lowers direct calls, so an invoke of such a parameter is reported
    at the invoke (and passing a function value at the call); a function
    specialize-closures resolved has none.
    """
    inputs, outputs = func.signature
    for i, t in enumerate(outputs):
        if isinstance(t, graph.FnType):
            raise op_error(
                func,
                f"cannot lower function-typed result #{i} ({t}): host code has no closures "
                "(specialize-closures only resolves a returned graph.closure built in the "
                "function's body, in the function's callers)",
            )
    kept = [i for i, t in enumerate(inputs) if not isinstance(t, graph.FnType)]
    params = to_buffer_types([*(inputs[i] for i in kept), *outputs])
    if func.arg_attrs is None and func.res_attrs is None:
        return params, None
    empty = DictionaryAttr({})
    arg_attrs = list(func.arg_attrs.data) if func.arg_attrs else [empty] * len(inputs)
    res_attrs = list(func.res_attrs.data) if func.res_attrs else [empty] * len(outputs)
    return params, ArrayAttr([*(arg_attrs[i] for i in kept), *res_attrs])


@dataclass
class GraphFuncLowering(RewritePattern):
    """`graph.func @f(tensors) -> tensors` ⇒ `loop.func @f(buffers..., outputs...)`."""

    constants: ConstantPool

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.FuncOp, rewriter: PatternRewriter, /):
        params, arg_attrs = host_signature(op)
        name = op.sym_name.data
        if op.is_declaration:
            new = loop.FuncOp(name, (params, []), None, "private", arg_attrs=arg_attrs)
        else:
            new = loop.FuncOp(name, (params, []), arg_attrs=arg_attrs)
            BodyLowering(op, new, self.constants).run()
        for key, value in op.attributes.items():
            new.attributes.setdefault(key, value)
        # Which trailing parameters are results: the lowered text stays runnable.
        new.attributes[RESULTS_ATTR] = IntegerAttr(len(op.function_type.outputs), 64)
        rewriter.replace(op, new, [])


@dataclass(frozen=True)
class LowerGraphPass(LaminaPass):
    """Lower graph functions to host `loop.func`s that allocate buffers and call kernels.

    Input invariant: phase `lowering`, after `lower-te` (every kernel call is
    `graph.call_loop` or `graph.call_extern`); graph functions hold only
    calls (`graph.call_loop`, `graph.call_extern`, `graph.call`, and
    `graph.invoke` of a `graph.closure` of the same function),
    `graph.constant`, `graph.device_copy` and `graph.return`.

    Output IR: each `graph.func @f(T...) -> (R...)` is replaced by
    `loop.func @f(T_buf..., R_buf...)`, returning nothing: the caller passes
    one output buffer per result (the entry ABI `void f(const T*...,
    R*...)`). Every call becomes `loop.call` with its input buffers then its
    destination buffers: the output buffer for a returned value, else a
    `loop.alloc {device}` (shared per `plan-memory` storage slot, if
    planned) that is `loop.free`d after its last use. `graph.constant` →
    internal constant `llvm.mlir.global` (row-major element array) +
    `llvm.mlir.addressof` cast to the memref;
    `graph.device_copy` → `loop.copy {src, dst}`; outputs not computed in
    place → `loop.copy`. A `graph.invoke` of a `graph.closure` is first
    made a direct `graph.call` (rule 1 of `specialize-closures`, which
    resolves higher-order functions earlier, in phase optimization); a
    function value that is still invoked, passed or returned is an error at
    the op, saying where the value comes from and why it has no static
    callee.

    Invariants: no `graph` op and no tensor type remain; the phase stays
    `lowering`; symbol names of functions are unchanged.
    """

    name = "lower-graph"

    phases: ClassVar[frozenset[Phase]] = frozenset({Phase.LOWERING})
    requires: ClassVar[tuple[str, ...]] = ("lower-te",)
    illegal_ops: ClassVar[tuple[str, ...]] = ("graph.*", "te.*")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        # Kernels (`loop.func`s by now) hold no graph op: neither walk enters them.
        resolve_invokes(op, only=_not_a_kernel)  # closures legalize's flattening made local
        pool = ConstantPool(op, symbol_names(op))
        locating_walker(
            GraphFuncLowering(pool), only=_not_a_kernel, apply_recursively=False
        ).rewrite_module(op)
        self.check_legality(op)


def _not_a_kernel(op: Operation) -> bool:
    return not isinstance(op, loop.FuncOp)


__all__ = ["LowerGraphPass", "STORAGE_ATTR", "host_signature"]
