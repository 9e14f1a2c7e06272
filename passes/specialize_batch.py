"""`specialize-batch`: a function over a dynamic batch becomes static bodies and a loop.

A public `graph.func` whose tensors have a `?` leading dimension (the batch
symbol of its `lamina.bounds = {N = array<i64: LO, HI>}`) is compiled as
static code: this pass checks that every op treats the samples of the batch
independently, then clones the function into a body over a block of
`block` samples (`@f__batch8`) and a one-sample body (`@f__batch1`) with
every `?` replaced by that count, and records the dynamic entry in the
module attribute `lamina.batch_entries` (backends/llvm/batch_entries.py).
The original function is removed; `lower-to-llvm` emits the entry
`f(N, buffers...)` that runs the block body ⌊N/B⌋ times and the tail
N mod B times on pointers advanced by whole samples.

The bodies then go through the pipeline exactly as a static model of that
batch would (same fusion, layouts, schedules), so per-sample time at N = 1
and N = B is the static build's by construction (docs/dynamic-shapes.md).

An op mixing samples (a reduction or softmax over axis 0, a transpose
moving axis 0, a concat or slice along it, a matmul contracting over it,
a call) is reported at the op, with the advice to pin the batch with
`--input-shape`.

Input invariant: optimization phase; dynamic functions carry `lamina.bounds`.
Output IR: no `?` dimension left; one static public function per body.
Invariants: functions without `?` are untouched.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    DenseArrayBase,
    FunctionType,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.rewriter import Rewriter

from lamina.backends.llvm.batch_entries import (
    BOUNDS_ATTR,
    BatchEntry,
    func_bounds,
    set_batch_entry,
)
from lamina.backends.llvm.entry_points import is_private
from lamina.core.diagnostics import Diagnostic, DiagnosticError, op_error
from lamina.core.pass_base import LaminaPass
from lamina.dialects import graph
from lamina.dialects.graph.control import BOUNDS_SPELLING
from lamina.dialects.lamina import Phase

PIN_ADVICE = "pin the batch with --input-shape (or a static leading dimension)"


def is_batched(ty: Attribute) -> bool:
    """A tensor type whose leading dimension is the batch (`?`)."""
    return isinstance(ty, TensorType) and bool(ty.get_shape()) and ty.get_shape()[0] < 0


def read_bounds(func: graph.FuncOp) -> tuple[str, tuple[int, int]]:
    """The batch symbol and its bounds, or a diagnostic at the function (the
    verifier has already rejected malformed bounds; here they are missing)."""
    bounds = func_bounds(func)
    if bounds is None:
        raise op_error(
            func,
            f"a function over a dynamic batch needs {BOUNDS_SPELLING} "
            "(one symbol: only the leading dimension can be dynamic)",
        )
    return bounds


# ---------------------------------------------------------------------------
# Which ops keep samples apart
# ---------------------------------------------------------------------------


def _axis(attr: Attribute | None, default: int, rank: int) -> int:
    value = attr.value.data if attr is not None else default  # type: ignore[union-attr]
    return value + rank if value < 0 else value


def mixing_reason(op: Operation) -> str | None:
    """Why `op` mixes the samples of a batch (None: it treats them independently)."""
    if not any(is_batched(t) for t in (*op.operand_types, *op.result_types)):
        return None
    if isinstance(op, graph.ConstantOp):
        return None
    rank = len(op.operand_types[0].get_shape()) if op.operands else 0  # type: ignore[union-attr]
    if isinstance(op, graph.MatmulOp):
        lhs, rhs = op.operand_types
        if is_batched(rhs) and len(rhs.get_shape()) <= 2:  # type: ignore[union-attr]
            return "contracts over the batch dimension"
        if is_batched(lhs) and len(lhs.get_shape()) == 1:  # type: ignore[union-attr]
            return "contracts over the batch dimension"
        return None
    if isinstance(op, graph.Conv2dOp):
        layout = op.data_layout.data if op.data_layout is not None else "NCHW"
        if not layout.startswith("N") or is_batched(op.operand_types[1]):
            return "has the batch dimension elsewhere than first (data layout or weights)"
        return None
    if isinstance(op, graph.SoftmaxOp | graph.LayerNormOp):
        if _axis(op.axis, -1, rank) == 0:
            return "normalizes over the batch dimension (axis 0)"
        return None
    if isinstance(
        op, graph.ReduceSumOp | graph.ReduceMeanOp | graph.ReduceMaxOp | graph.ReduceMinOp
    ):
        axes = op.axes.get_values() if op.axes is not None else range(rank)
        if any((a + rank if a < 0 else a) == 0 for a in axes):
            return "reduces over the batch dimension (axis 0)"
        return None
    if isinstance(op, graph.TransposeOp):
        return None if op.perm.get_values()[0] == 0 else "moves the batch dimension (axis 0)"
    if isinstance(op, graph.ConcatOp):
        if _axis(op.axis, 0, rank) == 0:
            return "concatenates along the batch dimension (axis 0)"
        return None
    if isinstance(op, graph.SliceOp):
        if op.sizes.get_values()[0] == DYNAMIC_INDEX:
            return None  # the whole batch (start 0, step 1: the verifier checks)
        return "slices along the batch dimension (axis 0)"
    if isinstance(op, graph.GatherOp):
        data, indices = op.operand_types
        axis = _axis(op.axis, 0, len(data.get_shape()))  # type: ignore[union-attr]
        if (is_batched(data) and axis > 0 and not is_batched(indices)) or (
            not is_batched(data) and axis == 0
        ):
            return None
        return "gathers across the batch dimension"
    if isinstance(op, graph.ReshapeOp | graph.BroadcastToOp):
        return None if is_batched(op.result_types[0]) else "folds the batch dimension away"
    if op.has_trait(graph.GraphCompute) and op.name != "graph.layout_transform":
        return _elementwise_reason(op)
    if isinstance(op, graph.DataflowOp | graph.OutputOp | graph.ReturnOp):
        return None
    if isinstance(op, graph.OnDeviceOp | graph.DeviceCopyOp):
        return None
    return "is not known to treat samples independently"


def _elementwise_reason(op: Operation) -> str | None:
    """Elementwise ops broadcast: every batched operand must span the result's rank."""
    if op.name not in _ELEMENTWISE:
        return "is not known to treat samples independently"
    rank = len(op.result_types[0].get_shape())  # type: ignore[union-attr]
    for ty in op.operand_types:
        if is_batched(ty) and len(ty.get_shape()) != rank:  # type: ignore[union-attr]
            return "broadcasts the batch dimension into another one"
    return None


_ELEMENTWISE = frozenset(
    f"graph.{name}"
    for name in (
        "add sub mul div maximum minimum pow compare neg exp log sqrt rsqrt tanh sigmoid "
        "erf relu gelu cast where max_pool2d avg_pool2d global_avg_pool2d"
    ).split()
)
"""Ops that compute each sample from the same sample (pools: NCHW, batch first)."""


def check_independent(func: graph.FuncOp) -> None:
    """Every op of `func` keeps samples apart, else a diagnostic at each op that does not."""
    problems = []
    for op in func.body.walk():
        reason = mixing_reason(op)
        if reason is not None:
            problems.append(
                Diagnostic(
                    f"'{op.name}' {reason}, so it mixes the samples of the dynamic batch "
                    f"and cannot be compiled for every batch size; {PIN_ADVICE}",
                    op,
                )
            )
    if problems:
        raise DiagnosticError(problems)


# ---------------------------------------------------------------------------
# Cloning into static bodies
# ---------------------------------------------------------------------------


def _static(ty: Attribute, size: int) -> Attribute:
    if not is_batched(ty):
        return ty
    assert isinstance(ty, TensorType)
    shape = [size if d == DYNAMIC_INDEX or d < 0 else d for d in ty.get_shape()]
    return TensorType(ty.element_type, shape, ty.encoding)


def _retype(value: SSAValue, size: int) -> None:
    if is_batched(value.type):
        Rewriter.replace_value_with_new_type(value, _static(value.type, size))


def static_body(func: graph.FuncOp, name: str, size: int) -> graph.FuncOp:
    """A clone of `func` named `name` with every `?` replaced by `size`."""
    body = func.clone()
    body.properties["sym_name"] = StringAttr(name)
    body.attributes.pop(BOUNDS_ATTR, None)
    for block_op in [body, *body.body.walk()]:
        for region in block_op.regions:
            for block in region.blocks:
                for arg in list(block.args):
                    _retype(arg, size)
        if block_op is not body:
            for result in list(block_op.results):
                _retype(result, size)
            _static_properties(block_op, size)
    ftype = func.function_type
    body.properties["function_type"] = FunctionType.from_lists(
        [_static(t, size) for t in ftype.inputs.data],
        [_static(t, size) for t in ftype.outputs.data],
    )
    return body


def _static_properties(op: Operation, size: int) -> None:
    """A `?` (DYNAMIC_INDEX) in an integer-array property (a slice's size over the whole
    batch) becomes `size`."""
    for key, value in list(op.properties.items()):
        if isinstance(value, DenseArrayBase):
            values = [int(v) for v in value.get_values()]
            if DYNAMIC_INDEX in values:
                values = [size if v == DYNAMIC_INDEX else v for v in values]
                op.properties[key] = DenseArrayBase.from_list(value.elt_type, values)


def body_sizes(block: int, bounds: tuple[int, int]) -> list[int]:
    """Samples per call of each body, largest first: `block` (capped by the upper bound), 1."""
    size = max(1, min(block, bounds[1]))
    return [size, 1] if size > 1 else [1]


@dataclass(frozen=True)
class SpecializeBatchPass(LaminaPass):
    """Clone each function over a dynamic batch into static bodies of `block` samples and 1.

    Input invariant: optimization phase; a function with a `?` leading
    dimension carries `lamina.bounds = {N = array<i64: LO, HI>}`.
    Output IR: the function is replaced by public static bodies `@f__batchB`
    and `@f__batch1`, recorded in the module attribute
    `lamina.batch_entries`; `lower-to-llvm` emits `@f(N, buffers...)` looping
    over them. An op mixing samples is a located error.
    Invariants: static functions are untouched; the bodies compile like a
    static model of B or 1 samples.
    """

    name = "specialize-batch"

    block: int = 8
    """Samples per call of the large body (capped by the batch's upper bound)."""

    phases: ClassVar[frozenset[Phase]] = frozenset({Phase.OPTIMIZATION})

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for func in list(op.ops):
            if isinstance(func, graph.FuncOp) and _is_dynamic(func):
                self._specialize(op, func)

    def _specialize(self, module: ModuleOp, func: graph.FuncOp) -> None:
        symbol, bounds = read_bounds(func)
        if is_private(func):
            raise op_error(func, "only public (entry) functions can have a dynamic batch")
        check_independent(func)
        name = func.sym_name.data
        ftype = func.function_type
        bodies = []
        for size in body_sizes(self.block, bounds):
            body = static_body(func, f"{name}__batch{size}", size)
            module.body.block.insert_op_before(body, func)
            bodies.append((size, body.sym_name.data))
        entry = BatchEntry(
            name,
            symbol,
            bounds,
            tuple(bodies),
            tuple(is_batched(t) for t in ftype.inputs.data),
            tuple(is_batched(t) for t in ftype.outputs.data),
        )
        set_batch_entry(module, entry)
        func.detach()
        func.erase()


def _is_dynamic(func: graph.FuncOp) -> bool:
    types: Sequence[Attribute] = [*func.function_type.inputs.data, *func.function_type.outputs.data]
    if any(is_batched(t) for t in types):
        return True
    return any(is_batched(t) for op in func.body.walk() for t in op.result_types)


__all__ = ["BOUNDS_ATTR", "SpecializeBatchPass", "check_independent", "mixing_reason"]
