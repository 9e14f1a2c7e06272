"""`plan-layouts`: choose buffer layouts at graph level and record them as constraints.

Layout planning (docs/layouts.md; after TVM's buffer-layout design): layouts are decided where the whole graph is
visible and handed down as `#lamina.constraint`s, which kernels compiled
separately can rely on. The pass

1. asks the kernel strategy (`kernels/strategy.py`) for each op's preferred
   layout (`conv2d_block`: conv2d on
   the CPU in `NCHW{c}c` with `c` = the vector lanes) and rewrites the op
   between a pair of `graph.layout_transform`s: data and weight into the
   blocked layouts (padding channels with 0), the result back with `crop`;
2. propagates the blocked layout through elementwise ops, so that
   conv → bias → relu → conv stays blocked: `f(inverse(y))` becomes
   `inverse(f(y))` (a bias is transformed too; its transform is a constant);
3. folds back-to-back inverse transforms away (`F(G(y)) = y` when `F` undoes
   `G` and `y`'s padding already holds `F`'s PAD);
4. hoists transforms of constants to compile time (weights are stored
   pre-transformed; no transform runs for them at run time);
5. records the decision: each blocked graph op carries `lamina.constraint`
   (map, PAD it guarantees, logical shape), and a function result that is a
   blocked tensor carries it in `res_attrs`. `legalize` copies these onto
   kernel boundaries, where `simplify` uses them.

`enable=false` (or the module attribute `lamina.plan_layouts = false`)
turns the pass off, e.g. to compare against the unblocked kernels;
`block=N` overrides the target's channel block (tests use it to be
independent of the host's vector width).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import (
    AffineMapAttr,
    AnyFloat,
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
)
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr, AffineExpr, AffineMap
from xdsl.rewriter import InsertPoint, Rewriter

from lamina.core.diagnostics import op_error
from lamina.core.locations import replace_op, stamp
from lamina.core.pass_base import LaminaPass
from lamina.dialects import graph
from lamina.dialects.lamina import CONSTRAINT_ATTR_NAME, ConstraintAttr, Phase, UndefAttr
from lamina.dialects.layout_maps import LayoutMapError, invert_map, same_map
from lamina.kernels.strategy import conv2d_block, is_depthwise, winograd_pays
from lamina.target.registry import op_knobs

ENABLE_ATTR_NAME = "lamina.plan_layouts"


# ---------------------------------------------------------------------------
# Maps
# ---------------------------------------------------------------------------


def _d(i: int) -> AffineExpr:
    return AffineExpr.dimension(i)


def blocked_data_map(c: int) -> AffineMap:
    """NCHW → NCHW{c}c."""
    return AffineMap(4, 0, (_d(0), _d(1) // c, _d(2), _d(3), _d(1) % c))


def blocked_weight_map(i: int, o: int) -> AffineMap:
    """OIHW → OIHW{i}i{o}o."""
    return AffineMap(4, 0, (_d(0) // o, _d(1) // i, _d(2), _d(3), _d(1) % i, _d(0) % o))


def grouped_weight_map(c: int, g: int) -> AffineMap:
    """OIHW → OIHW{c}i{c}o of a grouped conv2d whose `c`-channel blocks hold
    whole groups of `g` channels (`c % g == 0`): one input block per output
    block, input channel `j` of output channel `o`'s group at its lane in the
    block, `(o floordiv g) * g mod c + j` -- a block-diagonal weight, zero
    (the transform's pad) between groups."""
    lane = ((_d(0) // g) * g) % c + _d(1)
    return AffineMap(4, 0, (_d(0) // c, AffineExpr.constant(0), _d(2), _d(3), lane, _d(0) % c))


def inverse_map(index_map: AffineMap, logical: tuple[int, ...]) -> AffineMap | None:
    """The map from physical back to logical indices (for maps whose groups are
    single dims, possibly tiled and offset), or None. An offset is padding
    before the data and comes back negated: the inverse of `((d0 + 1) floordiv
    4, (d0 + 1) mod 4)` is `(d0, d1) -> (d0 * 4 + d1 - 1)` (with `crop`).
    Memoized: a pure function of immutable values, asked about the same few maps
    thousands of times (DenseNet-121: 1,308 calls, a few dozen distinct)."""
    return _inverse_map(index_map, None if logical is None else tuple(logical))


@functools.lru_cache(maxsize=4096)
def _inverse_map(index_map: AffineMap, logical: tuple[int, ...] | None) -> AffineMap | None:
    try:
        groups = invert_map(index_map, logical)
    except LayoutMapError:
        return None
    results: list[AffineExpr | None] = [None] * index_map.num_dims
    for g in groups:
        if len(g.inner.terms) != 1 or g.inner.terms[0][1] != 1 or g.inner.const < 0:
            return None
        dim = g.inner.terms[0][0]
        if g.plain is not None:
            results[dim] = _d(g.plain)
        elif g.outer is not None and g.inner_pos is not None:
            results[dim] = _d(g.outer) * g.tile + _d(g.inner_pos)
        else:
            return None
        if g.inner.const:
            results[dim] = results[dim] + (-g.inner.const)
    if any(r is None for r in results):
        return None
    return AffineMap(len(index_map.results), 0, tuple(r for r in results if r is not None))


def _transform(value: SSAValue, index_map: AffineMap, pad, result_type=None):
    constraint = ConstraintAttr(AffineMapAttr(index_map), pad)
    return graph.LayoutTransformOp(value, constraint, result_type=result_type)


def _zero(elem) -> FloatAttr | IntegerAttr:
    return FloatAttr(0.0, elem) if isinstance(elem, AnyFloat) else IntegerAttr(0, elem)


# ---------------------------------------------------------------------------
# What a value is known to hold
# ---------------------------------------------------------------------------


def known_constraint(value: SSAValue) -> ConstraintAttr | None:
    """The constraint plan-layouts knows `value` satisfies (with its logical shape)."""
    owner = value.owner
    if isinstance(owner, graph.LayoutTransformOp) and owner.crop is None:
        return owner.constraint.with_logical(graph.tensor_shape(owner.input))
    if isinstance(owner, Operation):
        found = owner.attributes.get(CONSTRAINT_ATTR_NAME)
        if isinstance(found, ConstraintAttr):
            return found
    return None


def _pad_number(constraint: ConstraintAttr | None) -> float | None:
    if constraint is None or isinstance(constraint.pad, UndefAttr):
        return None
    pad = constraint.pad
    return float(pad.value.data) if isinstance(pad, FloatAttr | IntegerAttr) else None


ELEMENTWISE_PAD = {
    "graph.relu": lambda a: max(a, 0.0),
    "graph.neg": lambda a: -a,
    "graph.add": lambda a, b: a + b,
    "graph.sub": lambda a, b: a - b,
    "graph.mul": lambda a, b: a * b,
    "graph.maximum": max,
    "graph.minimum": min,
    "graph.div": lambda a, b: a / b if b else float("nan"),
    "graph.sigmoid": lambda a: 1.0 / (1.0 + math.exp(-a)),
    "graph.tanh": math.tanh,
}
"""What each elementwise op makes of the padding (others: unspecified)."""


def _pad_after(op: Operation, pads: list[float | None], elem) -> FloatAttr | UndefAttr:
    fn = ELEMENTWISE_PAD.get(op.name)
    if fn is None or any(p is None for p in pads) or not isinstance(elem, AnyFloat):
        return UndefAttr()
    return FloatAttr(float(fn(*pads)) + 0.0, elem)  # + 0.0: no -0.0 pad


# ---------------------------------------------------------------------------
# The rewrites
# ---------------------------------------------------------------------------


def block_conv2d(op: graph.Conv2dOp, blocks: tuple[int, int], winograd: bool = False) -> None:
    """conv2d(x, w) → crop(conv2d_blocked(block(x), block(w))), computed by
    Winograd F(2x2, 3x3) when `winograd` and it pays (`winograd_pays`)."""
    elem = graph.element_type(op.data)
    zero = _zero(elem)
    c, o = blocks
    depthwise = is_depthwise(op)
    grouped = op.groups_value != 1 and not depthwise
    i = 1 if depthwise else c
    x = _blocked_input(op.data, c, zero, op.device)
    gated: list[Operation] = []
    if grouped and graph.tensor_shape(op.weight)[1] < c:  # blocks of whole groups
        w = _grouped_weight(op, c)
    elif GATED_WEIGHT_ATTR in getattr(op.weight.owner, "attributes", {}):
        gated = _blocked_gated_weight(op, i, o, zero)
        w = gated[-1]
    else:
        w = _transform(op.weight, blocked_weight_map(i, o), zero)
    out_map = blocked_data_map(o)
    logical = graph.tensor_shape(op.results[0])
    conv = graph.Conv2dOp(
        x,
        w,
        strides=op.strides_value,
        padding=op.padding_value,
        dilation=op.dilation_value,
        groups=op.groups_value if depthwise or grouped else None,
        data_layout=f"NCHW{c}c",
        kernel_layout=f"OIHW{i}i{o}o",
        device=op.device,
    )
    chosen = op.attributes.get(graph.CONV_ALGORITHM_ATTR)  # a user's choice stays
    constant = isinstance(op.weight.owner, graph.ConstantOp)
    knobs = op_knobs(op)  # per convolution: its knobs (`conv` is not in the module yet)
    winograd = winograd and knobs.conv_winograd == 1
    if chosen is None and winograd and c > 1 and winograd_pays(conv, constant, knobs):
        chosen = StringAttr("winograd")
    if chosen is not None:
        conv.attributes[graph.CONV_ALGORITHM_ATTR] = chosen
    # Padded output channels see only zero-padded weights: they hold 0.
    conv.attributes[CONSTRAINT_ATTR_NAME] = ConstraintAttr(AffineMapAttr(out_map), zero, logical)
    back_map = inverse_map(out_map, logical)
    assert back_map is not None
    back = _transform(conv, back_map, UndefAttr(), result_type=op.results[0].type)
    scaled = op.weight.owner if gated else None
    replace_op(op, [x, *gated[:-1], w, conv, back], [back.results[0]])
    if scaled is not None and not scaled.results[0].uses:
        Rewriter.erase_op(scaled)


GATED_WEIGHT_ATTR = "lamina.gated_weight"
"""Marks the `graph.mul` of a 1x1 conv2d's constant weight by a per-channel gate
(`_gate_into_weights`), which `block_conv2d` blocks as the blocked constant times
the blocked gate."""


def _gate_into_weights(func: graph.FuncOp) -> None:
    """`conv2d(x * g, W)` → `conv2d(x, W * g)` for a 1x1 conv2d (stride 1, no
    padding, one group, constant `W` of `Co x C x 1 x 1`) whose input is a
    feature map `x` (`1 x C x H x W`) times a per-channel scale `g` (`1 x C x 1
    x 1`, a squeeze-and-excitation gate) read by nothing else: the product
    `sum_c x[c] g[c] W[o, c]` is the same, but scaling `W` costs `Co x C`
    multiplies instead of `C x H x W` and no scaled copy of the feature map is
    written and read back. Only when `100 * Co <= percent * H * W`
    (`conv_gate_weights_percent`); `g`'s shape broadcasts against `W`'s as it
    is."""
    for conv in [o for o in func.walk() if isinstance(o, graph.Conv2dOp)]:
        scaled = conv.data.owner
        if not isinstance(scaled, graph.MulOp) or not conv.data.has_one_use():
            continue
        if not isinstance(conv.weight.owner, graph.ConstantOp):
            continue
        if conv.data_layout_value != "NCHW" or conv.kernel_layout_value != "OIHW":
            continue
        if conv.groups_value != 1 or conv.strides_value != (1, 1) or any(conv.padding_value):
            continue
        out_channels, channels, kh, kw = graph.tensor_shape(conv.weight)
        if (kh, kw) != (1, 1):
            continue
        shapes = [graph.tensor_shape(v) for v in scaled.operands]
        gate = next((n for n, s in enumerate(shapes) if s == (1, channels, 1, 1)), None)
        if gate is None or len(shapes[1 - gate]) != 4 or shapes[1 - gate][0] != 1:
            continue
        _, _, h, w = shapes[1 - gate]
        if h * w == 1 or 100 * out_channels > op_knobs(conv).conv_gate_weights_percent * h * w:
            continue
        g, x = scaled.operands[gate], scaled.operands[1 - gate]
        weight = graph.MulOp(conv.weight, g, device=conv.device)
        weight.attributes[GATED_WEIGHT_ATTR] = UnitAttr()
        stamp(weight, conv.location)
        Rewriter.insert_op(weight, InsertPoint.before(conv))
        conv.operands = [x, weight.results[0]]
        Rewriter.erase_op(scaled)


def _blocked_gated_weight(op: graph.Conv2dOp, i: int, o: int, zero) -> list[Operation]:
    """The blocked weight of `conv2d(x, W * g)` (`_gate_into_weights`): the
    blocked constant `W` (`OIHW{i}i{o}o`, hoisted to compile time) times the
    blocked gate `g` reshaped to `1 x C/i x 1 x 1 x i x 1` (its lanes the
    weight's input lanes). Padded input lanes of `W` are 0; `g`'s are padded
    with 0 too when the channels do not fill the last block (its own pad
    may be anything, and 0 times an unknown NaN would not be 0)."""
    scaled = op.weight.owner
    assert isinstance(scaled, graph.MulOp)
    weight, g = scaled.lhs, scaled.rhs
    channels = graph.tensor_shape(g)[1]
    elem = graph.element_type(g)
    wb = _transform(weight, blocked_weight_map(i, o), zero)
    pad = zero if channels % i else UndefAttr()
    gb = _transform(g, blocked_data_map(i), pad)
    g6 = graph.ReshapeOp(gb, TensorType(elem, (1, -(-channels // i), 1, 1, i, 1)), device=op.device)
    w = graph.MulOp(wb, g6, device=op.device)
    return [wb, gb, g6, w]


def _blocked_input(value: SSAValue, c: int, zero, device) -> Operation:
    """`value` in `NCHW{c}c`. With blocks of one channel (a stem's 3 input
    channels) that is the same memory as `NCHW`: a reshape, which the
    convolution's kernel reads through (`fuse-ops`), instead of a transform
    kernel that copied the network's input on every run (62-74 us of
    MobileNetV2's AVX2 build, in every network)."""
    if c == 1 and not isinstance(value.owner, graph.LayoutTransformOp):
        shape = (*graph.tensor_shape(value), 1)
        return graph.ReshapeOp(value, TensorType(graph.element_type(value), shape), device=device)
    return _transform(value, blocked_data_map(c), zero)


def _grouped_weight(op: graph.Conv2dOp, c: int) -> graph.LayoutTransformOp:
    """The block-diagonal weight transform of a grouped conv2d whose blocks hold
    whole groups (`grouped_weight_map`), typed `C/c x 1 x KH x KW x c x c`."""
    out_channels, g, kh, kw = graph.tensor_shape(op.weight)
    elem = graph.element_type(op.weight)
    shape = (-(-out_channels // c), 1, kh, kw, c, c)
    return _transform(op.weight, grouped_weight_map(c, g), _zero(elem), TensorType(elem, shape))


def _inverse_source(value: SSAValue) -> tuple[graph.LayoutTransformOp, ConstraintAttr] | None:
    """`value = G(y)` where G undoes the known constraint of y: (G, y's constraint)."""
    owner = value.owner
    if not isinstance(owner, graph.LayoutTransformOp):
        return None
    known = known_constraint(owner.input)
    if known is None or known.logical_shape != graph.tensor_shape(value):
        return None
    back = inverse_map(known.index_map.data, known.logical_shape)
    if back is None or not same_map(back, owner.constraint.index_map.data):
        return None
    return owner, known


def annotate(op: Operation) -> bool:
    """An elementwise op on blocked values (all with one constraint, none
    broadcast) records the constraint of its result; True if it did."""
    if not isinstance(op, graph.UNARY_OPS + graph.BINARY_OPS):
        return False
    if CONSTRAINT_ATTR_NAME in op.attributes:
        return False
    known = [known_constraint(v) for v in op.operands]
    first = known[0]
    if first is None or any(
        k is None or k.index_map != first.index_map or k.logical != first.logical for k in known
    ):
        return False
    if any(v.type != op.results[0].type for v in op.operands):
        return False
    elem = graph.element_type(op.results[0])
    pad = _pad_after(op, [_pad_number(k) for k in known], elem)
    op.attributes[CONSTRAINT_ATTR_NAME] = ConstraintAttr(first.index_map, pad, first.logical_shape)
    return True


def propagate(op: Operation) -> bool:
    """`f(G(y), ...)` → `G(f(y, ...))` for an elementwise `f`; True if rewritten."""
    if not isinstance(op, graph.UNARY_OPS + graph.BINARY_OPS):
        return False
    sources = [_inverse_source(v) for v in op.operands]
    present = [s for s in sources if s is not None]
    if not present:
        return False
    # The largest blocked operand leads (a feature map, not the scale it is multiplied by).
    inverse, known = max(present, key=lambda s: math.prod(graph.tensor_shape(s[0].input)))
    physical_type = inverse.input.type
    new_operands: list[SSAValue] = []
    pads: list[float | None] = []
    pre: list[Operation] = []
    for value, source in zip(op.operands, sources, strict=True):
        if source is not None and _broadcasts_blocked(source, known, physical_type):
            new_operands.append(source[0].input)
            pads.append(_pad_number(source[1]))
            continue
        if all(d == 1 for d in graph.tensor_shape(value)):
            # A scalar (relu6's bounds) broadcasts against any layout: only its rank changes.
            scalar = _as_rank(value, len(graph.tensor_shape(physical_type)))
            pre.extend(scalar)
            new_operands.append(scalar[-1].results[0] if scalar else value)
            pads.append(_constant_number(value))
            continue
        moved = _broadcast_operand(value, known, graph.tensor_shape(op.results[0]))
        if moved is None:
            return False
        pre.extend(moved)
        new_operands.append(moved[-1].results[0])
        pads.append(0.0)
    elem = graph.element_type(op.results[0])
    shape = graph.broadcast_shapes(*(graph.tensor_shape(v) for v in new_operands))
    if shape != graph.tensor_shape(physical_type):
        return False
    new = op.__class__.create(
        operands=new_operands,
        result_types=[TensorType(elem, shape)],
        properties=dict(op.properties),
        attributes=dict(op.attributes),
    )
    new.attributes[CONSTRAINT_ATTR_NAME] = ConstraintAttr(
        known.index_map, _pad_after(op, pads, elem), known.logical_shape
    )
    back = _transform(new, inverse.constraint.index_map.data, UndefAttr(), op.results[0].type)
    replace_op(op, [*pre, new, back], [back.results[0]])
    return True


def _broadcasts_blocked(source, known: ConstraintAttr, physical_type) -> bool:
    """Is the blocked operand `source` usable as it is against a result of
    `physical_type` in the layout `known`: the same type, or the same map
    and a physical shape that broadcasts (a squeeze-and-excitation scale,
    `N x C/c x 1 x 1 x c`, against its feature map)?"""
    inverse, constraint = source
    if inverse.input.type == physical_type:
        return True
    if constraint.index_map != known.index_map:
        return False
    got, full = graph.tensor_shape(inverse.input), graph.tensor_shape(physical_type)
    if len(got) != len(full) or known.logical_shape is None:
        return False
    same_channels = constraint.logical_shape[1] == known.logical_shape[1]
    return same_channels and all(g in (f, 1) for g, f in zip(got, full, strict=True))


def _as_rank(value: SSAValue, rank: int) -> list[Operation]:
    """The one-element `value` with `rank` dims of 1 (no op if it has them).

    A constant (relu6's and hardswish's bounds) becomes a constant of that
    shape, not a reshape of it: nothing folds after `plan-layouts`, so a
    reshape stayed a kernel of its own, called on every run once per bound
    (70 calls per MobileNetV2 run)."""
    if len(graph.tensor_shape(value)) == rank:
        return []
    owner = value.owner
    if isinstance(owner, graph.ConstantOp) and isinstance(owner.value, DenseIntOrFPElementsAttr):
        from lamina.core.dense import dense_attr, dense_value

        return [graph.ConstantOp(dense_attr(dense_value(owner.value).reshape((1,) * rank)))]
    return [graph.ReshapeOp(value, TensorType(graph.element_type(value), (1,) * rank))]


def _constant_number(value: SSAValue) -> float | None:
    """The number a one-element constant holds (None: not a constant)."""
    owner = value.owner
    if not isinstance(owner, graph.ConstantOp):
        return None
    dense = owner.value
    if not isinstance(dense, DenseIntOrFPElementsAttr):
        return None
    values = dense.get_values()
    return float(values[0]) if len(values) >= 1 else None


def propagate_concat(op: Operation) -> bool:
    """`concat(G(y1), x2, ..., axis=1)` → `G(concat(y1, F(x2), ..., axis=1))` for
    channel-blocked values whose channel counts are whole blocks (the blocks
    then simply follow each other; no slot is padding). An operand that is
    not blocked (a pool's result) is transformed into the block layout: a
    copy, as the concat of it was. Keeps DenseNet's, GoogLeNet's and
    SqueezeNet's concatenations between blocked convolutions blocked."""
    if not isinstance(op, graph.ConcatOp) or op.axis_value != 1:
        return False
    sources = [_channel_blocked_source(v) for v in op.inputs]
    lead = next((s for s in sources if s is not None), None)
    if lead is None:
        return False
    known = lead[1]
    c = graph.tensor_shape(lead[0].input)[4]
    if any(graph.tensor_shape(v)[1] % c for v in op.inputs):
        return False
    pre: list[Operation] = []
    operands: list[SSAValue] = []
    for value, source in zip(op.inputs, sources, strict=True):
        if source is not None and source[1].index_map == known.index_map:
            operands.append(source[0].input)
            continue
        pre.append(_transform(value, known.index_map.data, _zero(graph.element_type(value))))
        operands.append(pre[-1].results[0])
    logical = graph.tensor_shape(op.results[0])
    new = graph.ConcatOp(operands, axis=1, device=op.device)
    zero = _zero(graph.element_type(op.results[0]))
    new.attributes[CONSTRAINT_ATTR_NAME] = ConstraintAttr(known.index_map, zero, logical)
    back_map = inverse_map(known.index_map.data, logical)
    assert back_map is not None
    back = _transform(new, back_map, UndefAttr(), op.results[0].type)
    replace_op(op, [*pre, new, back], [back.results[0]])
    return True


def _channel_blocked_source(value: SSAValue):
    """`_inverse_source(value)` when its input is channel-blocked data (`NCHW{c}c`
    by `blocked_data_map`, no padding before the data), else None."""
    source = _inverse_source(value)
    if source is None:
        return None
    shape = graph.tensor_shape(source[0].input)
    if len(shape) != 5 or source[1].index_map.data != blocked_data_map(shape[4]):
        return None
    return source


POOL_OPS = (graph.MaxPool2dOp, graph.AvgPool2dOp, graph.GlobalAvgPool2dOp)


def propagate_pool(op: Operation) -> bool:
    """`pool(G(y))` → `G(pool(y))` for a channel-blocked `y`: the pools window
    dims 2 and 3 of `NCHW{c}c` as of NCHW, each lane its own channel, so the
    blocked chain goes on through a network's pools (GoogLeNet's and
    SqueezeNet's max pools, the squeeze-and-excitation blocks' global
    average pools). Padded channels keep their value: every window holds
    at least one real element, all equal to the pad."""
    source = _channel_blocked_source(op.input) if isinstance(op, POOL_OPS) else None
    if source is None:
        return False
    y, known = source[0].input, source[1]
    probe = op.__class__.create(
        operands=[y], result_types=[op.results[0].type], properties=dict(op.properties)
    )
    result_type = probe.infer_result_type()  # the pool's own shape rule, on the 5-D input
    probe.drop_all_references()
    new = op.__class__.create(
        operands=[y],
        result_types=[result_type],
        properties=dict(op.properties),
        attributes=dict(op.attributes),
    )
    logical = graph.tensor_shape(op.results[0])
    new.attributes[CONSTRAINT_ATTR_NAME] = ConstraintAttr(known.index_map, known.pad, logical)
    back_map = inverse_map(known.index_map.data, logical)
    assert back_map is not None
    back = _transform(new, back_map, UndefAttr(), op.results[0].type)
    replace_op(op, [new, back], [back.results[0]])
    return True


def propagate_mean(op: Operation) -> bool:
    """`reduce_mean(G(y), axes=[2, 3])` → a global average pool of the
    channel-blocked `y` (`N x C/c x 1 x 1 x c`), transformed back to `N x C x
    1 x 1` (and reshaped to `N x C` without `keepdims`): ShuffleNetV2's last
    `mean([2, 3])`, which otherwise transformed its whole 1024-channel 7x7
    input to `NCHW` for a reduction over each channel's row (47 + 18 us of
    a 4.9 ms run). The mean is the same sum divided by H*W."""
    if not isinstance(op, graph.ReduceMeanOp):
        return False
    shape = graph.tensor_shape(op.input)
    if len(shape) != 4 or sorted(a % 4 for a in op.axes_value) != [2, 3]:
        return False
    source = _channel_blocked_source(op.input)
    if source is None:
        return False
    y, known = source[0].input, source[1]
    elem = graph.element_type(op.input)
    physical = graph.tensor_shape(y)
    pooled_type = TensorType(elem, (*physical[:2], 1, 1, physical[4]))
    pool = graph.GlobalAvgPool2dOp(y, result_type=pooled_type, device=op.device)
    logical = (*shape[:2], 1, 1)
    pool.attributes[CONSTRAINT_ATTR_NAME] = ConstraintAttr(known.index_map, known.pad, logical)
    back_map = inverse_map(known.index_map.data, logical)
    assert back_map is not None
    back = _transform(pool, back_map, UndefAttr(), TensorType(elem, logical))
    ops: list[Operation] = [pool, back]
    if graph.tensor_shape(op.results[0]) != logical:
        ops.append(graph.ReshapeOp(back, op.results[0].type, device=op.device))
    replace_op(op, ops, [ops[-1].results[0]])
    return True


def _broadcast_operand(
    value: SSAValue, known: ConstraintAttr, out_logical: tuple[int, ...]
) -> list[Operation] | None:
    """`value` (e.g. a per-channel bias) moved into the blocked layout, when it
    broadcasts against the blocked result: every dim the map tiles is
    full-size (padding is 0; numpy broadcasting does the rest). A value of
    lower rank (a `64x1x1` bias of an NCHW result) is first reshaped to the
    result's rank, as numpy broadcasting aligns it. Returns the ops to insert,
    the last one producing the moved value."""
    shape = graph.tensor_shape(value)
    index_map = known.index_map.data
    if len(shape) > len(out_logical):
        return None
    shape = (1,) * (len(out_logical) - len(shape)) + shape
    tiled = {d for expr in index_map.results for d in expr.used_dims() if not _is_plain_dim(expr)}
    for d, (got, full) in enumerate(zip(shape, out_logical, strict=True)):
        if got != full and (got != 1 or d in tiled):
            return None
    ops: list[Operation] = []
    if shape != graph.tensor_shape(value):
        elem = graph.element_type(value)
        ops.append(graph.ReshapeOp(value, TensorType(elem, shape)))
        value = ops[-1].results[0]
    ops.append(_transform(value, index_map, _zero(graph.element_type(value))))
    return ops


def _is_plain_dim(expr: AffineExpr) -> bool:
    return isinstance(expr, AffineDimExpr)


def fold(op: graph.LayoutTransformOp) -> bool:
    """`F(G(y))` → `y` when F undoes G (the pair plan-layouts builds) and y's
    padding already holds F's PAD; True if folded."""
    forward = op.input.owner
    if (
        isinstance(forward, graph.LayoutTransformOp)
        and forward.crop is None
        and _inverse_source(op.results[0]) is not None
        and op.results[0].type == forward.input.type
    ):
        # G(F(x)) with G undoing F: x itself (F only added padding).
        op.results[0].replace_all_uses_with(forward.input)
        Rewriter.erase_op(op)
        return True
    source = _inverse_source(op.input)
    if source is None:
        return False
    inverse, known = source
    y = inverse.input
    if op.crop is not None or op.results[0].type != y.type:
        return False
    if op.constraint.index_map != known.index_map:
        return False
    if not isinstance(op.constraint.pad, UndefAttr) and op.constraint.pad != known.pad:
        return False
    op.results[0].replace_all_uses_with(y)
    Rewriter.erase_op(op)
    if not inverse.results[0].uses:
        Rewriter.erase_op(inverse)
    return True


def hoist_constant(op: graph.LayoutTransformOp) -> bool:
    """`layout_transform(constant)` → the transformed constant (compile time).

    Bytes in, bytes out (no Python number per weight), through the same
    scatter as the reference evaluator (`layout_maps.apply_layout`)."""
    from lamina.core.dense import dense_attr, dense_view
    from lamina.dialects.layout_maps import apply_layout

    source = op.input.owner
    reshape = source if isinstance(source, graph.ReshapeOp) else None
    if reshape is not None:
        source = reshape.input.owner  # a constant reshaped to the result's rank
    if not isinstance(source, graph.ConstantOp):
        return False
    if not isinstance(source.value, DenseIntOrFPElementsAttr):
        return False
    pad = _pad_number(op.constraint)
    data = dense_view(source.value).reshape(graph.tensor_shape(op.input))
    out_shape = graph.tensor_shape(op.results[0])
    out = apply_layout(data, op.constraint.index_map.data, out_shape, pad or 0, contiguous=False)
    replace_op(op, graph.ConstantOp(dense_attr(out)))
    for dead in (reshape, source):
        if dead is not None and not dead.results[0].uses:
            Rewriter.erase_op(dead)
    return True


def record_boundaries(func: graph.FuncOp) -> None:
    """A function result known to be blocked says so in `res_attrs`."""
    ret = func.get_return_op()
    if ret is None:
        return
    entries = (
        list(func.res_attrs.data) if func.res_attrs else [DictionaryAttr({})] * len(ret.arguments)
    )
    changed = False
    for n, value in enumerate(ret.arguments):
        known = known_constraint(value)
        if known is not None and CONSTRAINT_ATTR_NAME not in entries[n].data:
            entries[n] = DictionaryAttr({**entries[n].data, CONSTRAINT_ATTR_NAME: known})
            changed = True
    if changed:
        func.res_attrs = ArrayAttr(entries)


@dataclass(frozen=True)
class PlanLayoutsPass(LaminaPass):
    """Choose blocked layouts per op (target preference), keep chains blocked, record the constraints.

    Input invariant: phase `optimization`; graph compute ops on tensors.

    Output IR: each `graph.conv2d` the target wants blocked (CPU: f32/f64,
    `NCHW`/`OIHW`, one group, depthwise, or groups whose width divides or
    is a multiple of `c`) is a blocked conv2d (`NCHW{c}c`, `OIHW{c}i{c}o`,
    `c` = vector lanes; depthwise `OIHW1i{c}o`; grouped with a
    block-diagonal weight when blocks hold whole groups) between
    `graph.layout_transform`s
    (data/weight padded with 0, result cropped back); elementwise ops on
    blocked values stay blocked (the inverse transform moves past them);
    back-to-back inverse transforms are folded; transforms of constants are
    constants; blocked graph ops carry `lamina.constraint` (map, the PAD
    they guarantee or `#lamina.undef`, logical shape), blocked function
    results carry it in `res_attrs`. A blocked 3x3 stride-1 conv2d with
    constant weights (or with an output of at least 14x14, when the
    weights are a parameter) also records `lamina.algorithm = "winograd"`
    (legalize computes it by Winograd F(2x2, 3x3); `winograd=false`, the
    knob `conv_winograd = 0` (the module's or the op's own `lamina.knobs`), or
    `lamina.algorithm = "direct"` on the op, keeps the direct kernel).

    Invariants: every function computes the same values; running the pass
    twice equals running it once; `enable=false` (or the module attribute
    `lamina.plan_layouts = false`) leaves the module unchanged.
    """

    name = "plan-layouts"

    phases: ClassVar[frozenset[Phase]] = frozenset({Phase.OPTIMIZATION})

    enable: bool = True
    block: int = 0
    """Channel block for conv2d; 0: the target's preference (vector lanes)."""
    winograd: bool = True
    """Let 3x3 stride-1 convolutions use Winograd F(2x2, 3x3) where it pays."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.block < 0:
            raise op_error(
                op, f"plan-layouts: block must be >= 1 (0: the target's), got {self.block}"
            )
        flag = op.attributes.get(ENABLE_ATTR_NAME)
        if not self.enable or (isinstance(flag, IntegerAttr) and not flag.value.data):
            return
        funcs = [f for f in op.ops if isinstance(f, graph.FuncOp) and not f.is_declaration]
        for func in funcs:
            _gate_into_weights(func)
            for conv in [o for o in func.walk() if isinstance(o, graph.Conv2dOp)]:
                if (c := conv2d_block(conv, self.block)) is not None:
                    block_conv2d(conv, c, self.winograd)
            _fixpoint(func)
            for t in [o for o in func.walk() if isinstance(o, graph.LayoutTransformOp)]:
                hoist_constant(t)
            record_boundaries(func)


def _fixpoint(func: graph.FuncOp) -> None:
    """Propagate and fold until nothing changes."""
    changed = True
    while changed:
        changed = False
        for o in list(func.walk()):
            if o.parent is None:
                continue
            if isinstance(o, graph.LayoutTransformOp):
                changed |= fold(o)
            else:
                changed |= (
                    propagate(o)
                    or propagate_concat(o)
                    or propagate_pool(o)
                    or propagate_mean(o)
                    or annotate(o)
                )
        for o in list(func.walk()):
            if isinstance(o, graph.LayoutTransformOp) and not o.results[0].uses:
                Rewriter.erase_op(o)
    _share_transforms(func)


def _share_transforms(func: graph.FuncOp) -> None:
    """One transform per value and layout: a value not produced blocked that
    several blocked ops read (a max pool's result read by a convolution and
    by the residual add after it; DenseNet's first concatenation input, read
    by six) got a transform per reader, each a copy kernel called on every
    run (nothing after `plan-layouts` merges them). Later ones in a block
    read the first one's result instead."""
    for block in func.body.blocks:
        seen: dict[tuple, graph.LayoutTransformOp] = {}
        for o in list(block.ops):
            if not isinstance(o, graph.LayoutTransformOp):
                continue
            key = (o.input, o.constraint, o.crop is not None, o.results[0].type)
            first = seen.setdefault(key, o)
            if first is not o:
                o.results[0].replace_all_uses_with(first.results[0])
                Rewriter.erase_op(o)


__all__ = ["PlanLayoutsPass", "conv2d_block", "inverse_map"]
