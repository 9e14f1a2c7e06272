"""Channel-blocked `graph.conv2d` (`NCHW{c}c` data, `OIHW{i}i{o}o` weight) → te.

    out[n, ko, oh, ow, ki] = sum_{cb, kh, kw, ci}
        xp[n, cb, oh*sh + kh*dh, ow*sw + kw*dw, ci] * w[ko, cb, kh, kw, ci, ki]

The innermost output dimension is the output-channel block `ki`: it is
contiguous in both the result and the weight, so `lower-te` vectorizes it
and each input element is broadcast into an FMA over `o` output channels at
once (a kernel in NCHW re-reads the input row once per output channel).

Grouped convolutions (1 < groups < channels, `groups` kept on the op) use
the same weight layout, `C/c x B x KH x KW x c x c`, and read their group's
input blocks only:

    out[n, ko, oh, ow, ki] = sum_{cb < B, kh, kw, ci}
        xp[n, first(ko) + cb, oh*sh + kh*dh, ow*sw + kw*dw, ci] * w[ko, cb, kh, kw, ci, ki]

A group of `g = B*c` channels (a run of whole blocks) starts at input
block `first(ko) = ko floordiv B * B`; blocks holding `c/g` whole groups
(`B = 1`, `first(ko) = ko`) take a block-diagonal weight, zero where input
lane `ci` and output lane `ki` belong to different groups: `c/g` times the
grouped conv's products, but each one the fast kernel's broadcast FMA, and
the network stays blocked around it (`kernels/strategy.py`,
`grouped_block_reads`; `plan-layouts` builds the weight,
`grouped_weight_map`). A depthwise conv2d is the other grouped form,
`_depthwise` below.

Padded channels. The blocked tensors are the physical buffers of
`#lamina.constraint`s; the op computes over every physical channel. When
the data's constraint is known (`legalize` passes the operand constraints
into the `KernelBuilder`) and records a logical channel count below the
physical one, the reduction masks the padded channels
(`select(cb*c + ci < C, x*w, 0)`; with `k` channels of padding before the
data, `k <= cb*c + ci < k + C`). Whether the mask is needed is decided
later, at loop level: `simplify` removes it when the constraint says the
padding holds 0 -- even when the producer is another, separately compiled
kernel (the non-local use of docs/layouts.md).
"""

from __future__ import annotations

import math

from xdsl.dialects.builtin import AffineMapAttr, FloatAttr, IntegerAttr
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineMap

from lamina.dialects import graph, te
from lamina.dialects.lamina import ConstraintAttr
from lamina.dialects.layout_maps import LayoutMapError, invert_map
from lamina.kernels.conv_winograd import build_winograd_conv2d, channel_mask
from lamina.kernels.strategy import conv2d_algorithm
from lamina.kernels.window import Window, read_in_place, window_input
from lamina.target.registry import op_knobs


def build_blocked_conv2d(op: Operation, kb, inputs: list[SSAValue]) -> list[SSAValue]:
    """The te.compute of a channel-blocked convolution (see the module docstring)."""
    assert isinstance(op, graph.Conv2dOp)
    data, weight = inputs
    blocks = graph.blocked_conv_layout(op.data_layout_value, op.kernel_layout_value)
    assert blocks is not None
    c = blocks[0]
    if conv2d_algorithm(op) == "winograd":
        channels = _logical_channels(kb.operand_constraints[0], c)
        return build_winograd_conv2d(op, kb, inputs, channels)
    ws, os_ = graph.tensor_shape(weight), graph.tensor_shape(op.results[0])
    (sh, sw), (dh, dw) = op.strides_value, op.dilation_value
    top, left, _, _ = op.padding_value
    win_h = Window(2, sh, dh, top, os_[2], ws[2])
    win_w = Window(3, sw, dw, left, os_[3], ws[3])
    constraint = kb.operand_constraints[0]
    channels = _logical_channels(constraint, c)
    depthwise = op.groups_value != 1 and blocks[1] == 1
    if depthwise and _in_place_pays(op, win_w, graph.tensor_shape(data)[3]):
        return [_depthwise(kb, op, data, weight, (win_h, win_w), channels, c, None)]
    source = window_input(kb, data, [win_h, win_w], 0)
    if source.tensor is not data:
        _constrain_window(source.tensor, constraint, top, left)
    if depthwise:
        return [_depthwise(kb, op, data, weight, (win_h, win_w), channels, c, source)]
    grouped = op.groups_value != 1
    in_blocks = graph.tensor_shape(data)[1]

    def body(em, sp: list[SSAValue], red: list[SSAValue]) -> SSAValue:
        n, ko, oh, ow, ki = sp
        cb, kh, kw, ci = red
        block = _group_block(em, ko, cb, ws[1]) if grouped else cb
        x = source.read(em, [n, block, oh, ow, ci], [(win_h, oh, kh), (win_w, ow, kw)])
        product = em.mul(x, em.read(weight, [ko, cb, kh, kw, ci, ki]))
        physical = in_blocks * c if grouped else ws[1] * c
        inside = channel_mask(em, em.affine([(block, c), (ci, 1)]), channels, physical)
        if inside is None:
            return product
        return em.select(inside, product, em.const(0, graph.element_type(data)))

    extents = [ws[1], ws[2], ws[3], ws[4]]
    return [kb.compute(os_, graph.element_type(data), body, reduce_extents=extents)]


def _group_block(em, ko: SSAValue, cb: SSAValue, reads: int) -> SSAValue:
    """The input block a grouped conv2d's output block `ko` reads as its
    `cb`-th (`kernels/strategy.py`, `grouped_block_reads`): its own when a
    block holds whole groups (`reads` 1, the weight block-diagonal), else
    the `cb`-th of its group's run of `reads` blocks."""
    if reads == 1:
        return ko
    return em.iadd(em.imul(em.idiv(ko, reads), reads), cb)


def _in_place_pays(op: graph.Conv2dOp, win_w: Window, width: int) -> bool:
    """Does a depthwise conv2d read its input in place (see `_depthwise`)? When
    its interior output columns are many enough against its border columns'
    taps (`depthwise_in_place_percent`): a border column is not
    register-blocked, which on a small image (7x7) or with a wide window
    (5x5 at 28x28) costs more than the padded copy saves."""
    first = -(-win_w.lo // win_w.stride)  # the first column whose taps are all inside
    last = (width - 1 - (win_w.kernel - 1) * win_w.dilation + win_w.lo) // win_w.stride
    interior = max(0, min(last + 1, win_w.out_size) - first)
    border_taps = (win_w.out_size - interior) * math.prod(graph.tensor_shape(op.weight)[2:4])
    return interior > 0 and 100 * interior >= op_knobs(op).depthwise_in_place_percent * border_taps


def _depthwise(kb, op, data, weight, windows, channels, c: int, source) -> SSAValue:
    """`out[n, k, oh, ow, j] = sum_{kh, kw} x[n, k, oh*sh + kh*dh - top, ow*sw + kw*dw - left, j]
    * w[k, 0, kh, kw, 0, j]`: each lane its own channel, so the input is read
    as whole vectors (no broadcast) and the window's taps are the reduction.

    The input is read in place (`source` None), not from a zero-padded copy
    (`source`, on small images: `_in_place_pays`): a tap outside
    the image is a guarded read (`select(inside, x[clamped], 0)`). The guard
    depends only on the row and column, never on the lane, so the read stays
    one vector load; and `schedule` splits the output rows and columns into
    border strips and an interior where the loop bounds decide every guard,
    which `simplify` then drops (docs/performance.md, "Depthwise
    convolution"). The copy cost a write and a read of the whole input per
    call, as much memory traffic as the convolution itself."""
    ws, os_ = graph.tensor_shape(weight), graph.tensor_shape(op.results[0])
    elem = graph.element_type(data)

    def body(em, sp: list[SSAValue], red: list[SSAValue]) -> SSAValue:
        n, k, oh, ow, j = sp
        kh, kw = red
        zero = em.const(0, elem)
        first = em.index(0)
        if source is not None:
            x = source.read(em, [n, k, oh, ow, j], [(windows[0], oh, kh), (windows[1], ow, kw)])
        else:
            taps = [(windows[0], oh, kh), (windows[1], ow, kw)]
            x = read_in_place(em, data, [n, k, oh, ow, j], taps, 0)
        product = em.mul(x, em.read(weight, [k, first, kh, kw, first, j]))
        if channels is None:  # every channel slot holds data, or its padding is 0
            return product
        inside = channel_mask(em, em.affine([(k, c), (j, 1)]), channels, ws[0] * c)
        return product if inside is None else em.select(inside, product, zero)

    return kb.compute(os_, elem, body, reduce_extents=[ws[2], ws[3]])


def _constrain_window(
    padded: SSAValue, constraint: ConstraintAttr | None, top: int, left: int
) -> None:
    """The zero-padded copy of the data keeps the data's constraint, shifted by
    the spatial padding, when the data's padding is 0 too (then every slot
    outside the shifted image -- halo and padded channels -- holds 0)."""
    if constraint is None or constraint.logical_shape is None or not _is_zero(constraint.pad):
        return
    results = list(constraint.index_map.data.results)
    if len(results) != 5:
        return
    results[2] = results[2] + top
    results[3] = results[3] + left
    index_map = AffineMap(constraint.index_map.data.num_dims, 0, tuple(results))
    owner = padded.owner
    if isinstance(owner, te.ComputeOp):
        owner.constraint = ConstraintAttr(
            AffineMapAttr(index_map), constraint.pad, constraint.logical_shape
        )


def _is_zero(pad) -> bool:
    return isinstance(pad, FloatAttr | IntegerAttr) and pad.value.data == 0


def _logical_channels(constraint: ConstraintAttr | None, block: int) -> tuple[int, int] | None:
    """The physical channel slots `[first, end)` that hold the data of blocked
    data, when its constraint records the logical shape. `first` is the
    padding before the data (`(d1 + 1) floordiv 8, ..., (d1 + 1) mod 8`: slot
    0 is padding)."""
    if constraint is None or constraint.logical_shape is None:
        return None
    logical = constraint.logical_shape
    if len(logical) != 4:
        return None
    first = 0
    try:
        groups = invert_map(constraint.index_map.data, logical)
    except LayoutMapError:
        groups = []
    for g in groups:
        if g.inner.terms == ((1, 1),):
            first = g.inner.const
    return first, first + logical[1]
