"""Kernel strategies: which algorithm and blocking computes an op on the CPU target.

One table of decisions that the graph passes and the kernel builders both
consult, so they never disagree (TVM's op strategy): `plan-layouts` asks
which layout a conv2d is blocked in (`conv2d_block`) and whether it is
computed by Winograd (`winograd_pays`, recorded as `lamina.algorithm`);
the conv2d builders read that record back (`conv2d_algorithm`); the matmul
builder asks which column panels the micro-kernel will read
(`packed_rhs_columns`, the same `choose_block` that `schedule` applies).
The thresholds are knobs (`target/schedule_knobs.py`), read from the module's
target.
"""

from __future__ import annotations

from xdsl.dialects.builtin import AnyFloat, StringAttr
from xdsl.ir import Operation, SSAValue

from lamina.dialects import graph
from lamina.schedule.register_block import choose_block
from lamina.target.registry import op_facts, op_knobs
from lamina.target.schedule_knobs import ScheduleKnobs


def conv2d_algorithm(op: graph.Conv2dOp) -> str:
    """How a blocked conv2d is computed: `winograd` when `plan-layouts` (or the
    user) recorded it in `lamina.algorithm`, else `direct`."""
    algorithm = op.attributes.get(graph.CONV_ALGORITHM_ATTR)
    if isinstance(algorithm, StringAttr) and algorithm.data == "winograd":
        return "winograd"
    return "direct"


def packed_rhs_columns(op: Operation, m: int, n: int, element_bits: int) -> int | None:
    """The panel width NR when the micro-kernel of an M x N product splits its
    columns into whole blocks (the pre-packed constant right-hand side of
    `kernels/linalg.py` is stored in panels of NR); None when it does not."""
    block = choose_block(m, n, element_bits, op_facts(op), op_knobs(op))
    if block is None or block.rows < 2 or block.columns >= n or n % block.columns:
        return None
    return block.columns


def conv2d_block(op: graph.Conv2dOp, block: int = 0) -> tuple[int, int] | None:
    """The (input, output) channel blocks the CPU target wants for `op` (None:
    keep NCHW): the vector lanes of its element type, so that the innermost
    output-channel loop fills one vector register (`block` > 0 forces that
    block on both sides, as does the `conv_channel_block` knob).

    Only when the output has at least half a block of channels: `schedule`
    keeps a block of output columns x one vector of output channels in
    registers, each weight vector feeding one FMA per column, which beats
    the NCHW kernel (accumulating along the output row in memory) on every
    shape measured (benchmarks/bench_layouts.py, AVX-512: 3x3 64->64 56x56
    1.8x faster, 1x1 1.3x, stride 2 1.9x). An input of fewer than half a
    block of channels (a stem on 3 colour channels) would multiply 5x the
    products by padding; it is read with input block 1 (`NCHW1c` is NCHW's
    own bytes) when the result feeds only blocked convolutions (through
    elementwise ops): the output is then produced blocked, with no
    transform (measured, the ResNet-style CNN, 3x3 3->16 at 64x64: 1.19 ->
    1.13 ms), through max pools and concatenations of whole blocks
    (DenseNet's stem, whose pool is the first input of its first block's
    concatenations: its NCHW kernel took 1.6x onnxruntime's time, the first
    layers blocked 0.77x the time of the NCHW ones, docs/performance.md, "DenseNet's
    stem, blocked"). A stem followed by anything else stays
    NCHW, where the blocked result would have to be transformed back at full
    resolution (ResNet-18: 24.4 -> 25.0 ms). A pointwise (1x1, stride 1,
    unpadded) convolution whose input is not blocked already stays NCHW
    too: there it is a matrix product whose rows (output channels)
    `schedule` blocks in registers, with no transform in or out (measured,
    1x64x56x56 64->64: 0.42 ms NCHW, 0.5-0.8 ms blocked, half of it the two
    transforms). The lanes come from the facts the module records for its
    cpu target (`lamina.targets` options, else the host's), so a module
    compiled for 256-bit vectors blocks by 8 on any host."""
    elem = graph.element_type(op.data)
    if not isinstance(elem, AnyFloat):
        return None
    if op.data_layout_value != "NCHW" or op.kernel_layout_value != "OIHW":
        return None
    shapes = (graph.tensor_shape(v) for v in (*op.operands, op.results[0]))
    if any(0 in s for s in shapes):
        return None
    lanes = block or op_knobs(op).conv_channel_block or op_facts(op).lanes(elem.bitwidth)
    if lanes <= 1:
        return None
    if op.groups_value != 1 and not is_depthwise(op):
        return (lanes, lanes) if grouped_block_reads(op, lanes) is not None else None
    if block or is_depthwise(op):
        return lanes, lanes
    cin, cout = graph.tensor_shape(op.data)[1], graph.tensor_shape(op.results[0])[1]
    if cout * 2 < lanes or _pointwise_on_nchw(op):
        return None
    if cin * 2 >= lanes:
        return lanes, lanes
    return (1, lanes) if _feeds_only_blocked_convs(op.results[0], lanes) else None


def _feeds_only_blocked_convs(value: SSAValue, lanes: int, depth: int = 8) -> bool:
    """Is every use of `value` (through a few elementwise ops) the data of a
    conv2d that will be blocked too (one group, at least `lanes / 2` output
    channels; its input, `value`'s channels, has that many already)?

    `depth` elementwise ops deep: a hardswish after the bias is five
    (`x * max(min(x / 6 + 0.5, 1), 0)`), and MobileNetV3-Large's stem reaches
    its next 1x1 convolution through a residual add after them. At 4 that
    stem stayed NCHW and its 16 channels at 112x112 were transformed (twice)
    on every run."""
    uses = list(value.uses)
    if not uses:
        return False
    for use in uses:
        user = use.operation
        if isinstance(user, graph.Conv2dOp) and use.index == 0:
            wide = graph.tensor_shape(user.results[0])[1] * 2 >= lanes
            grouped = grouped_block_reads(user, lanes) is not None
            if (user.groups_value == 1 or is_depthwise(user) or grouped) and wide:
                continue
            return False
        if depth and isinstance(user, graph.UNARY_OPS + graph.BINARY_OPS + _POOLS):
            if _feeds_only_blocked_convs(user.results[0], lanes, depth - 1):
                continue
        if depth and _blocked_concat(user, lanes):
            if _feeds_only_blocked_convs(user.results[0], lanes, depth - 1):
                continue
        return False
    return True


def _blocked_concat(op: Operation, lanes: int) -> bool:
    """A concatenation along the channels of whole blocks of `lanes` channels, which
    `plan-layouts` keeps blocked (`propagate_concat`): DenseNet's, whose first input
    is the stem's max pool. Its stem stayed NCHW before, and the NCHW kernel of a
    7x7 stride-2 3 -> 64 convolution took 1.6x onnxruntime's time."""
    if not isinstance(op, graph.ConcatOp) or op.axis_value != 1:
        return False
    return all(graph.tensor_shape(v)[1] % lanes == 0 for v in op.inputs)


def is_depthwise(op: graph.Conv2dOp) -> bool:
    """One filter per channel (groups = input = output channels, NCHW/OIHW):
    blocked as data `NCHW{c}c`, weight `OIHW1i{c}o`, the channels in the
    vector lanes (`kernels/conv_blocked.py`). Kept in NCHW, the direct kernel
    vectorizes along the output row, one channel at a time (measured, 3x3
    576 channels at 14x14 with bias and relu6: 0.26 ms against
    onnxruntime's 0.09), and every pointwise convolution around it would
    transform its layout in and out."""
    if op.data_layout_value != "NCHW" or op.kernel_layout_value != "OIHW":
        return False
    groups = op.groups_value
    channels = graph.tensor_shape(op.data)[1]
    o, i = graph.tensor_shape(op.weight)[:2]
    return groups > 1 and groups == channels == o and i == 1


def grouped_block_reads(op: graph.Conv2dOp, lanes: int) -> int | None:
    """The input blocks each output block of a grouped conv2d (1 < groups <
    channels) reads when it is blocked by `lanes` channels, or None when it
    stays NCHW. Blocked, data `NCHW{c}c` and weight `OIHW{c}i{c}o` (physical
    `C/c x B x KH x KW x c x c`): a group of `g` channels (in and out alike)
    that is a run of whole blocks (`g % c == 0`) is a standard blocked conv
    over its `B = g / c` input blocks, no product wasted; blocks holding
    `c / g` whole groups (`c % g == 0`) read their own block (`B = 1`)
    through a block-diagonal weight (zero outside each group, hence `c / g`
    times the products of the grouped conv, but the fast kernel's FMA per
    broadcast: `kernels/conv_blocked.py`). The weight must be a constant
    then (its layout map is not one `layout_transform` lowers at run time).
    Other shapes (input and output groups of different widths, a width
    neither a divisor nor a multiple of `c`) stay NCHW. Only from
    `conv_grouped_min_width` channels per group (measured there)."""
    if op.data_layout_value != "NCHW" or op.kernel_layout_value != "OIHW":
        return None
    groups = op.groups_value
    if groups <= 1 or is_depthwise(op) or lanes <= 1:
        return None
    o, g = graph.tensor_shape(op.weight)[:2]
    if o != groups * g or g < op_knobs(op).conv_grouped_min_width:
        return None  # output groups of another width than the input's
    if g % lanes == 0:
        return g // lanes
    if lanes % g == 0 and isinstance(op.weight.owner, graph.ConstantOp):
        return 1
    return None


def winograd_pays(
    op: graph.Conv2dOp, constant_weights: bool, knobs: ScheduleKnobs | None = None
) -> bool:
    """Does the CPU target compute this blocked conv2d by Winograd F(2x2, 3x3)?

    Wherever it applies (3x3, stride and dilation 1) when the weights are
    constant: legalize transforms them at compile time, and 16 products per
    2x2 output tile instead of 36 take the direct kernel's FMA bound away
    (measured, AVX-512, one thread, 3x3 with bias and relu, direct ->
    Winograd: 64->64 at 56x56 2.3 -> 1.5 ms, 256->256 at 14x14 2.1 -> 1.3
    ms, 512->512 at 7x7 2.2 -> 1.9 ms). Weights passed as a parameter are
    transformed on every call: only for outputs of at least
    `winograd_min_output` and transformed weights (16*C*K elements) of at
    most `winograd_max_weight_bytes`, L2 (256->256 at 14x14 streams 4 MiB of
    them through L3 and loses: 2.2 ms against 2.1). `knobs`: the module's
    (default: `op`'s, which a detached op does not have)."""
    if graph.winograd_unsupported(op) is not None:
        return False
    _, _, oh, ow, _ = graph.tensor_shape(op.results[0])
    kb, cb, _, _, ci, ko = graph.tensor_shape(op.weight)
    u_bytes = 16 * kb * cb * ci * ko * graph.element_type(op.data).bitwidth // 8
    knobs = knobs or op_knobs(op)
    if constant_weights:
        # `winograd_direct_below`: a small image with large weights runs direct
        small = oh * ow < knobs.winograd_direct_below
        return not (small and u_bytes > knobs.winograd_max_weight_bytes)
    return oh * ow >= knobs.winograd_min_output and u_bytes <= knobs.winograd_max_weight_bytes


_POOLS = (graph.MaxPool2dOp, graph.AvgPool2dOp)


def _pointwise_on_nchw(op: graph.Conv2dOp) -> bool:
    """A pointwise convolution on a large NCHW image whose input is not
    blocked: a matrix product with a long contiguous row (the image) to
    vectorize. On a small image that row is too short for the vectors and
    the register block (measured, AVX-512, 320->1280 at 7x7 with bias and
    relu6: 3.2 ms NCHW, 0.47 ms blocked with both transforms; 96->576 at
    14x14: 1.1 against 0.36), so it is blocked whatever its input."""
    _, _, kh, kw = graph.tensor_shape(op.weight)
    pointwise = (kh, kw) == (1, 1) and op.strides_value == (1, 1) and not any(op.padding_value)
    _, _, oh, ow = graph.tensor_shape(op.results[0])
    large = oh * ow >= op_knobs(op).conv_nchw_pointwise_min_pixels
    return pointwise and large and not _fed_by_blocked(op.data)


def _fed_by_blocked(value: SSAValue, depth: int = 8) -> bool:
    """Does `value` come (through a few elementwise ops, pools or
    concatenations) from a layout transform, i.e. from a blocked producer
    whose crop plan-layouts will fold away? `depth` 8: DenseNet's first 1x1
    convolution reads its stem's blocked result through seven (bias, relu, max
    pool, concatenation, the batch norm's mul and add, relu); at 4 it stayed
    NCHW, with its input transformed back from the blocked pool and its output
    into the blocks again."""
    owner = value.owner
    if isinstance(owner, graph.LayoutTransformOp):
        return True
    # Concatenations and pools of blocked values stay blocked (plan-layouts).
    passes = graph.UNARY_OPS + graph.BINARY_OPS + _POOLS + (graph.ConcatOp,)
    if depth and isinstance(owner, passes):
        return any(_fed_by_blocked(v, depth - 1) for v in owner.operands)
    return False


__all__ = [
    "conv2d_algorithm",
    "conv2d_block",
    "grouped_block_reads",
    "is_depthwise",
    "packed_rhs_columns",
    "winograd_pays",
]
