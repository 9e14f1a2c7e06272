"""Per-op tensor-expression builders for `legalize` (graph compute op → te.func body).

Each builder receives the graph op, a `KernelBuilder` and the te values that
stand for the op's operands (the te.func parameters, or, in a fused kernel,
results of earlier builders), adds one or more `te.compute` ops to the
kernel and returns the te values of the op's results. A te.func is a DAG of
`te.compute` (softmax and layer_norm already use several), so a fused kernel
is several builder calls on one `KernelBuilder`.

Index conventions (docs/design.md §3.2 semantics):

* NumPy broadcasting: operand dim j of rank r sits under output dim
  `j + R - r`; a size-1 operand dim is read at index 0.
* Out-of-bounds reads never happen. Where an index may leave the operand
  (padding, concat, layout padding) the index is *clamped* into bounds and
  the value is chosen with `arith.select` on an in-bounds condition:
  branch-free, and every `te.read` is safe to execute unconditionally.
  Guards are emitted only on the sides that can actually go out of bounds
  (no padding, no guard).
* Padded windows (conv2d, max/avg pooling) first materialise the padded
  input as its own elementwise `te.compute` (`window_input`, the only place
  that clamps), so the window reduction reads it at the affine
  `o*stride + k*dilation`: a clamped index inside the reduction is not
  affine in the output column and vectorizes into masked gathers. A strided
  last axis is also split into stride phases there, so the output column
  reads at unit stride.
* Reductions use `reduce_extents` + `combiner` and start from te's default
  `init`, the combiner's identity (0 for sum, −∞ or the smallest integer
  for max). A reduction over an empty domain is the identity everywhere.
* Scalar semantics (`te_emit.ScalarEmitter`): NumPy's, except that integer
  division truncates toward zero (C, TVM `truncdiv`) and never traps
  (`x / 0` is 0, `MIN / -1` wraps); i1 `+`/`*`/max/min are or/and/or/and;
  `cast` is NumPy `astype` (float → int truncates toward zero, → i1 is
  `!= 0`, i1 → number is 0/1); sigmoid and softmax are overflow-free.

The builders are grouped by op family, in modules named as the families of
`dialects/graph/` (an op's definition and its legalization sit in
`dialects/graph/<family>.py` and `kernels/<family>.py`):
`kernel` (the `KernelBuilder` and shared index helpers), `elementwise`,
`linalg`, `nn`, `reduce`, `shape` and `layout`; the channel-blocked conv2d
is `kernels/conv_blocked.py` (Winograd: `kernels/conv_winograd.py`),
sliding windows `kernels/window.py`, and the choices between algorithms
and blockings `kernels/strategy.py`. This module holds the dispatch table
`BUILDERS` and `build_kernel`, and re-exports what `legalize` and
`fuse-ops` use.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    StringAttr,
)
from xdsl.ir import Operation, SSAValue

from lamina.core.dense import dense_attr, dense_value, numpy_dtype
from lamina.core.diagnostics import op_error
from lamina.dialects import graph, te
from lamina.dialects.lamina import ConstraintAttr
from lamina.kernels.elementwise import (
    BINARY,
    UNARY,
    build_binary,
    build_cast,
    build_compare,
    build_unary,
    build_where,
    convert_scalar,
)
from lamina.kernels.kernel import (
    Body,
    DerivedInput,
    Indices,
    KernelBuilder,
    TeEmitter,
)
from lamina.kernels.layout import build_layout_transform
from lamina.kernels.linalg import build_matmul
from lamina.kernels.nn import (
    build_avg_pool2d,
    build_conv2d,
    build_global_avg_pool2d,
    build_layer_norm,
    build_max_pool2d,
    build_softmax,
)
from lamina.kernels.reduce import build_reduce
from lamina.kernels.shape import (
    build_broadcast_to,
    build_concat,
    build_gather,
    build_reshape,
    build_slice,
    build_transpose,
)
from lamina.kernels.window import Window, WindowInput, window_input

Builder = Callable[[Operation, KernelBuilder, Indices], list[SSAValue]]


BUILDERS: dict[str, Builder] = {
    **{name: build_binary for name in BINARY},
    **{name: build_unary for name in (*UNARY, "graph.gelu")},
    "graph.matmul": build_matmul,
    "graph.conv2d": build_conv2d,
    "graph.max_pool2d": build_max_pool2d,
    "graph.avg_pool2d": build_avg_pool2d,
    "graph.global_avg_pool2d": build_global_avg_pool2d,
    "graph.softmax": build_softmax,
    "graph.layer_norm": build_layer_norm,
    "graph.reduce_sum": build_reduce,
    "graph.reduce_mean": build_reduce,
    "graph.reduce_max": build_reduce,
    "graph.reduce_min": build_reduce,
    "graph.reshape": build_reshape,
    "graph.transpose": build_transpose,
    "graph.concat": build_concat,
    "graph.broadcast_to": build_broadcast_to,
    "graph.cast": build_cast,
    "graph.layout_transform": build_layout_transform,
    "graph.gather": build_gather,
    "graph.slice": build_slice,
    "graph.where": build_where,
    "graph.compare": build_compare,
}
"""Graph compute op name → te builder."""


def build_kernel(
    name: str,
    ops: Sequence[Operation],
    inputs: Sequence[SSAValue],
    outputs: Sequence[SSAValue],
    constraints: Sequence[ConstraintAttr | None] = (),
) -> te.FuncOp:
    """One `te.func @name(inputs) -> outputs` computing the graph compute `ops`
    (in order; each op's operands are `inputs` or results of earlier `ops`).

    `legalize` calls it with a single op; a fusion pass can pass a whole
    group, which becomes one DAG of `te.compute`.
    """
    return build_kernel_deriving(name, ops, inputs, outputs, constraints)[0]


@dataclass(frozen=True)
class KernelParameters:
    """How a call passes its inputs to a kernel: all but `dropped` (positions
    in the inputs), then a constant per `derived` parameter."""

    derived: tuple[DerivedInput, ...] = ()
    dropped: tuple[int, ...] = ()

    def arg_constraints(
        self, constraints: Sequence[ConstraintAttr | None]
    ) -> list[ConstraintAttr | None]:
        """The constraints of the kernel's parameters, from its inputs' ones."""
        kept = [c for n, c in enumerate(constraints) if n not in self.dropped]
        return [*kept, *(d.constraint for d in self.derived)]

    def call_operands(self, inputs: Sequence[SSAValue]) -> tuple[list[SSAValue], list[Operation]]:
        """The call's operands, and the `graph.constant`s to insert before it."""
        constants = derived_constants(self.derived, inputs)
        kept = [v for n, v in enumerate(inputs) if n not in self.dropped]
        return [*kept, *(c.results[0] for c in constants)], constants


def build_kernel_deriving(
    name: str,
    ops: Sequence[Operation],
    inputs: Sequence[SSAValue],
    outputs: Sequence[SSAValue],
    constraints: Sequence[ConstraintAttr | None] = (),
) -> tuple[te.FuncOp, KernelParameters]:
    """`build_kernel`, with how its calls pass their inputs: the parameters
    the builders derived from constant inputs (`KernelBuilder.derived_input`)
    come after the inputs, and inputs read only through them are dropped."""
    kb = KernelBuilder([v.type for v in inputs], [is_constant(v) for v in inputs])
    if constraints:
        kb.operand_constraints = list(constraints)
    values: dict[SSAValue, SSAValue] = dict(zip(inputs, kb.args, strict=True))
    for index, op in enumerate(ops):
        missing = [i for i, v in enumerate(op.operands) if v not in values]
        if missing:
            raise op_error(
                op, f"operand #{missing[0]} is neither a kernel input nor computed before"
            )
        operands = [values[v] for v in op.operands]
        if index == 0 and list(op.operands) == list(inputs):
            # By position: `graph.add %x, %x` must still read two parameters, since
            # the kernel is shared with calls passing two different tensors.
            operands = list(kb.args)
        results = BUILDERS[op.name](op, kb, operands)
        values.update(zip(op.results, results, strict=True))
    for index, value in enumerate(inputs):
        splat = splat_value(value)
        if splat is not None:
            kb.inline_splat(index, splat)
    func = kb.finish(name, [values[v] for v in outputs])
    return func, KernelParameters(tuple(kb.derived), tuple(kb.dropped))


def may_derive(op: Operation) -> bool:
    """Does `op`'s builder derive parameters from constant operands? Its kernel
    then depends on which operands are constants (part of the sharing key):
    Winograd's transformed weights, a matmul's packed rhs."""
    if isinstance(op, graph.MatmulOp):  # a constant rhs is stored pre-packed
        return True
    algorithm = op.attributes.get(graph.CONV_ALGORITHM_ATTR)
    return isinstance(op, graph.Conv2dOp) and algorithm == StringAttr("winograd")


def is_constant(value: SSAValue) -> bool:
    """Is `value` a dense `graph.constant` (a test only: nothing is decoded)?"""
    owner = value.owner
    return isinstance(owner, graph.ConstantOp) and isinstance(owner.value, DenseIntOrFPElementsAttr)


def splat_value(value: SSAValue) -> float | None:
    """The value of every element of `value` when it is a float `graph.constant`
    stored as one element (a splat, or a tensor of one element), else None.
    Kernels read such inputs as literals (`KernelBuilder.inline_splat`), so
    the value is part of what makes two ops share a kernel (`splat_operands`).
    Nothing larger than one element is decoded."""
    owner = value.owner
    if not isinstance(owner, graph.ConstantOp) or not isinstance(
        owner.value, DenseIntOrFPElementsAttr
    ):
        return None
    element = owner.value.get_element_type()
    if not isinstance(element, Float16Type | Float32Type | Float64Type):
        return None
    data = owner.value.data.data
    if len(data) != numpy_dtype(element).itemsize:
        return None
    return float(dense_value(owner.value).reshape(-1)[0])


def splat_operands(op: Operation) -> tuple[tuple[int, str], ...]:
    """The operands of `op` its kernel reads as literals (`splat_value`), with
    their values: part of the key of the kernels `legalize` and `fuse-ops` share."""
    values = ((n, splat_value(v)) for n, v in enumerate(op.operands))
    return tuple((n, repr(v)) for n, v in values if v is not None)


def derived_constants(
    derived: Sequence[DerivedInput], inputs: Sequence[SSAValue]
) -> list[Operation]:
    """The `graph.constant`s a call of a kernel passes after `inputs`."""
    ops: list[Operation] = []
    for d in derived:
        owner = inputs[d.source].owner
        assert isinstance(owner, graph.ConstantOp), "a derived parameter needs a constant operand"
        source = dense_value(owner.value)  # type: ignore[arg-type]
        array = np.asarray(d.fn(source), dtype=source.dtype)
        ops.append(graph.ConstantOp(dense_attr(array)))
    return ops


__all__ = [
    "BINARY", "BUILDERS", "UNARY", "Body", "Builder", "DerivedInput", "Indices", "KernelBuilder",
    "KernelParameters",
    "TeEmitter", "Window", "WindowInput", "build_kernel", "build_kernel_deriving",
    "convert_scalar", "derived_constants", "is_constant", "may_derive", "splat_operands",
    "splat_value", "window_input",
]  # fmt: skip
