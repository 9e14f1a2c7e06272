"""`fold-constants`: evaluate graph ops on constants at compile time.

Imported models compute on their weights: transposed or reshaped weight
matrices (ONNX `Gemm` with `transB`), BatchNorm scales and shifts, casts of
constant tables, shape-like arithmetic. Evaluating those once, in NumPy, on
the bytes of `graph.constant` (never through Python lists), leaves the
model with the computations that depend on its inputs. Two algebraic
rewrites then fold inference BatchNorm into the convolution before it, as
TVM's `FoldScaleAxis` does.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
)
from xdsl.rewriter import InsertPoint

from lamina.core.dead_ops import GreedyApplier
from lamina.core.dense import dense_attr, dense_value, numpy_dtype
from lamina.core.locations import locating_walker
from lamina.core.pass_base import LaminaPass
from lamina.core.phase_invariants import in_codegen
from lamina.dialects import graph
from lamina.dialects.lamina import Phase
from lamina.dialects.reference import evaluate_op

GROWTH_LIMIT = 1 << 16
"""A fold may produce a constant larger than its inputs (broadcast_to, an
outer-product add) only up to this many elements: beyond, the op stays."""


def constant_of(value: SSAValue) -> np.ndarray | None:
    """The array a `graph.constant` result holds, else None."""
    owner = value.owner
    if isinstance(owner, graph.ConstantOp):
        return dense_value(owner.value)
    return None


NOT_FOLDED = frozenset({"graph.on_device", "graph.device_copy", "graph.layout_transform"})
"""Ops whose constant result would lose what they say: a device (placement is
`plan-devices`' to decide) or a layout constraint (`plan-layouts` hoists
constant transforms itself and records the constraint)."""


def _result_dtype(op: Operation) -> np.dtype:
    return numpy_dtype(graph.element_type(op.results[0]))


class FoldConstantOp(RewritePattern):
    """A compute op whose operands are all `graph.constant` becomes one.

    %w = graph.constant ...; %t = graph.transpose %w  ⇒  %t = graph.constant (transposed)
    """

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if op.name in NOT_FOLDED or not op.has_trait(graph.GraphCompute) or in_codegen(op):
            return
        if not all(isinstance(v.owner, graph.ConstantOp) for v in op.operands):
            return  # before decoding any: a convolution's weight is a copy of megabytes
        values = [constant_of(v) for v in op.operands]
        if any(v is None for v in values):
            return
        size = prod(graph.tensor_shape(op.results[0]))
        if size > max(sum(v.size for v in values), GROWTH_LIMIT):  # type: ignore[union-attr]
            return
        with np.errstate(all="ignore"):
            result = evaluate_op(op, values)  # the reference semantics (dialects/reference.py)
        if result is None:
            return
        result = result.astype(_result_dtype(op))
        if result.shape != graph.tensor_shape(op.results[0]):
            return
        _replace_by_constant(op, result, rewriter)


class FoldCast(RewritePattern):
    """`graph.cast` of a constant: NumPy `astype`, the semantics of `graph.cast`."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, graph.CastOp) or in_codegen(op):
            return
        value = constant_of(op.input)
        if value is None:
            return
        with np.errstate(all="ignore"):
            _replace_by_constant(op, value.astype(_result_dtype(op)), rewriter)


def _replace_by_constant(op: Operation, array: np.ndarray, rewriter: PatternRewriter) -> None:
    const = graph.ConstantOp(dense_attr(array), getattr(op, "device", None))
    const.result.name_hint = op.results[0].name_hint
    rewriter.replace(op, const)


def _channel_scale(scale: np.ndarray, conv: graph.Conv2dOp) -> np.ndarray | None:
    """`scale` as one factor per output channel (shape O), if it varies only along C."""
    out = graph.tensor_shape(conv.result)
    if scale.ndim > len(out):
        return None
    full = np.broadcast_to(scale.reshape((1,) * (len(out) - scale.ndim) + scale.shape), out)
    per_channel = full[:1, :, :1, :1]
    if not np.array_equal(np.broadcast_to(per_channel, out), full):
        return None
    return per_channel.reshape(out[1])


class FoldScaleIntoConv(RewritePattern):
    """`mul(conv2d(x, W), s)` with a per-channel constant `s` ⇒ `conv2d(x, W·s)`.

    (`W` constant, NCHW/OIHW, the convolution used only here.) This is the
    BatchNorm scale of inference models; its shift stays a bias `add`.
    """

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, graph.MulOp) or in_codegen(op):
            return
        for conv_value, scale_value in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            conv = conv_value.owner
            if not isinstance(conv, graph.Conv2dOp) or not conv_value.has_one_use():
                continue
            if conv.data_layout_value != "NCHW" or conv.kernel_layout_value != "OIHW":
                continue
            weight, scale = constant_of(conv.weight), constant_of(scale_value)
            if weight is None or scale is None or op.result.type != conv.result.type:
                continue
            per_channel = _channel_scale(scale, conv)
            if per_channel is None:
                continue
            scaled = (weight * per_channel.reshape(-1, 1, 1, 1)).astype(weight.dtype)
            new_weight = graph.ConstantOp(dense_attr(scaled))
            new_conv = conv.clone()
            new_conv.operands = (conv.data, new_weight.result)
            rewriter.insert([new_weight, new_conv], InsertPoint.before(conv))
            rewriter.replace(op, [], [new_conv.result])
            rewriter.erase(conv)
            return


class DistributeScaleOverBias(RewritePattern):
    """`mul(add(y, c1), c2)` ⇒ `add(mul(y, c2), c1·c2)` for constants `c1`, `c2`
    when `y` is a convolution: a conv with a bias followed by BatchNorm then
    folds the scale into the conv and merges both shifts."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, graph.MulOp) or in_codegen(op):
            return
        add, c2 = op.lhs.owner, constant_of(op.rhs)
        if not isinstance(add, graph.AddOp) or c2 is None or not add.result.has_one_use():
            return
        y, c1 = add.lhs, constant_of(add.rhs)
        if c1 is None or not isinstance(y.owner, graph.Conv2dOp):
            return
        if op.result.type != y.type:
            return
        bias = graph.ConstantOp(dense_attr((c1 * c2).astype(c1.dtype)))
        scaled = graph.MulOp(y, op.rhs)
        shifted = graph.AddOp(scaled, bias)
        rewriter.replace(op, [bias, scaled, shifted])


class MergeConstantAdds(RewritePattern):
    """`add(add(y, c1), c2)` ⇒ `add(y, c1 + c2)` when the shape of `y` is the result's."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, graph.AddOp) or in_codegen(op):
            return
        inner, c2 = op.lhs.owner, constant_of(op.rhs)
        if not isinstance(inner, graph.AddOp) or c2 is None or not inner.result.has_one_use():
            return
        y, c1 = inner.lhs, constant_of(inner.rhs)
        if c1 is None or y.type != op.result.type:
            return
        total = graph.ConstantOp(dense_attr((c1 + c2).astype(c1.dtype)))
        rewriter.replace(op, [total, graph.AddOp(y, total)])


@dataclass(frozen=True)
class FoldConstantsPass(LaminaPass):
    """Evaluate graph ops whose operands are constants, and fold BatchNorm into convolutions.

    Input invariant: a verified module (graph level).
    Output IR:
      1. no compute op (elementwise arithmetic, matmul, reshape, transpose,
         broadcast_to, concat, cast, reductions, gather, slice, where) whose
         operands are all `graph.constant`: it is replaced by a
         `graph.constant` holding its NumPy-evaluated value (unless the
         result would be more than 65536 elements larger than its inputs);
      2. `mul(conv2d(x, W), s)` with constant `W` and a constant `s` that
         varies only along the output channels becomes `conv2d(x, W·s)`;
         `mul(add(conv, c1), c2)` first becomes `add(mul(conv, c2), c1·c2)`;
      3. `add(add(y, c1), c2)` with constants becomes `add(y, c1 + c2)`;
      4. constants left unused are erased.
      Code claimed by a target (`lamina.codegen`) is left untouched.
    Invariants: the results of every function are unchanged (up to
    floating-point rounding of the folded arithmetic); idempotent; does not
    change the phase.
    """

    name = "fold-constants"
    phases = frozenset({Phase.INGESTION, Phase.OPTIMIZATION})

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        patterns = GreedyApplier(
            [
                FoldConstantOp(),
                FoldCast(),
                DistributeScaleOverBias(),
                FoldScaleIntoConv(),
                MergeConstantAdds(),
            ],
            ctx=ctx,
            folding_enabled=False,
            dce_enabled=True,
        )
        locating_walker(patterns).rewrite_module(op)
