"""Neural-network ops over NCHW images and feature axes: `conv2d` (including
the channel-blocked layouts `plan-layouts` produces), `max_pool2d`,
`avg_pool2d`, `global_avg_pool2d`, `softmax` and `layer_norm`, with their
sliding-window shape rules (`conv2d_output_shape`, `pool2d_output_shape`,
`blocked_conv_layout`, `normalize_padding2d`).

Their legalization is `kernels/nn.py` (blocked conv2d:
`kernels/conv_blocked.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    I64,
    AnyFloat,
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, opt_prop_def, prop_def, result_def
from xdsl.utils.exceptions import VerifyException

from lamina.dialects.graph.base import _ComputeOp, _OneInputOp
from lamina.dialects.graph.common import (
    ShapeError,
    _axis_value,
    _check_float,
    _check_length,
    _check_positive,
    _check_same_element_type,
    _i64,
    _i64_array,
    _int_values,
    _ints,
    _tensor,
    element_type,
    shape_str,
    tensor_shape,
)
from lamina.dialects.lamina import DeviceAttr


def normalize_padding2d(padding: Sequence[int]) -> tuple[int, int, int, int]:
    """`(top, left, bottom, right)` from a 2-entry (symmetric) or 4-entry padding."""
    _check_length("padding", padding, (2, 4))
    if any(p < 0 for p in padding):
        raise ShapeError(f"padding must be non-negative, got {list(padding)}")
    if len(padding) == 2:
        return (padding[0], padding[1], padding[0], padding[1])
    return (padding[0], padding[1], padding[2], padding[3])


def _window_output(
    dim_name: str, size: int, kernel: int, stride: int, pad: int, dilation: int = 1
) -> int:
    """Output extent of one sliding-window dimension; must be >= 1."""
    effective = dilation * (kernel - 1) + 1
    out = (size + pad - effective) // stride + 1
    if out < 1:
        raise ShapeError(
            f"output {dim_name} would be {out}: the (dilated) kernel extent {effective} is "
            f"larger than the padded input extent {size + pad}"
        )
    return out


def _layout_index(layout: str, letters: str, what: str) -> dict[str, int]:
    """Position of each of `letters` in `layout` (a permutation of them)."""
    if sorted(layout) != sorted(letters):
        raise ShapeError(f'{what} must be a permutation of "{letters}", got "{layout}"')
    return {c: layout.index(c) for c in letters}


def conv2d_output_shape(
    data: Sequence[int],
    weight: Sequence[int],
    strides: Sequence[int] = (1, 1),
    padding: Sequence[int] = (0, 0, 0, 0),
    dilation: Sequence[int] = (1, 1),
    groups: int = 1,
    data_layout: str = "NCHW",
    kernel_layout: str = "OIHW",
) -> tuple[int, ...]:
    """Result shape of a 2-D convolution (in `data_layout`).

    out = (in + pad_before + pad_after - dilation * (kernel - 1) - 1) // stride + 1;
    the weight's input channels times `groups` must equal the data's channels.
    Channel-blocked layouts (`NCHW8c` data, `OIHW8i8o` weight; see
    `blocked_conv_layout`) compute the convolution of the unblocked tensors.
    """
    blocked = blocked_conv_layout(data_layout, kernel_layout)
    if blocked is not None:
        return _blocked_conv2d_output_shape(
            data, weight, blocked, strides, padding, dilation, groups
        )
    if len(data) != 4 or len(weight) != 4:
        raise ShapeError(
            f"conv2d expects 4-D data and weight, got data {shape_str(data)} "
            f"and weight {shape_str(weight)}"
        )
    d = _layout_index(data_layout, "NCHW", "data_layout")
    k = _layout_index(kernel_layout, "OIHW", "kernel_layout")
    _check_length("strides", strides, (2,))
    _check_length("dilation", dilation, (2,))
    _check_positive("strides", strides)
    _check_positive("dilation", dilation)
    top, left, bottom, right = normalize_padding2d(padding)
    if groups <= 0:
        raise ShapeError(f"groups must be positive, got {groups}")
    channels, in_per_group, out_channels = data[d["C"]], weight[k["I"]], weight[k["O"]]
    if channels != groups * in_per_group:
        raise ShapeError(
            f"input channels {channels} do not match groups * weight input channels = "
            f"{groups} * {in_per_group} = {groups * in_per_group}"
        )
    if out_channels % groups:
        raise ShapeError(f"output channels {out_channels} are not divisible by groups = {groups}")
    out_h = _window_output(
        "height", data[d["H"]], weight[k["H"]], strides[0], top + bottom, dilation[0]
    )
    out_w = _window_output(
        "width", data[d["W"]], weight[k["W"]], strides[1], left + right, dilation[1]
    )
    result = [0] * 4
    result[d["N"]], result[d["C"]] = data[d["N"]], out_channels
    result[d["H"]], result[d["W"]] = out_h, out_w
    return tuple(result)


def blocked_conv_layout(data_layout: str, kernel_layout: str) -> tuple[int, int, int] | None:
    """(c, i, o) of a channel-blocked conv2d: data `NCHW{c}c` (physical
    `N x C/c x H x W x c`), weight `OIHW{i}i{o}o` (`O/o x I/i x KH x KW x i x o`);
    None for the plain layouts. Raises on a malformed blocked layout."""
    import re

    data = re.fullmatch(r"NCHW(\d+)c", data_layout)
    kernel = re.fullmatch(r"OIHW(\d+)i(\d+)o", kernel_layout)
    if data is None and kernel is None:
        return None
    if data is None or kernel is None:
        raise ShapeError(
            f'a blocked conv2d needs both layouts blocked (data "NCHW<c>c", kernel '
            f'"OIHW<i>i<o>o"), got "{data_layout}" and "{kernel_layout}"'
        )
    c, i, o = int(data.group(1)), int(kernel.group(1)), int(kernel.group(2))
    depthwise = i == 1 and o == c  # `OIHW1i{c}o`: one input channel per output channel
    if (c != i and not depthwise) or c <= 0 or o <= 0:
        raise ShapeError(
            f"data block {c} must equal the kernel input block {i} (and be > 0), "
            f"or the kernel be depthwise (OIHW1i{c}o)"
        )
    return c, i, o


def _blocked_conv2d_output_shape(
    data: Sequence[int],
    weight: Sequence[int],
    blocks: tuple[int, int, int],
    strides: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    groups: int,
) -> tuple[int, ...]:
    """`N x O/o x OH x OW x o`, via the unblocked convolution's shape. With
    groups > 1 the convolution is depthwise (weight `C/c x 1 x KH x KW x 1 x
    c`, each channel its own filter; `groups` is the logical channel count,
    the padded channels of the last block compute 0 from zero filters) or
    grouped (weight `C/c x B x KH x KW x c x c`, `i = o = c`: output block
    `k` reads the `B` input blocks of its group; `B = 1` when a block holds
    whole groups, its weight block-diagonal; `groups` is the logical group
    count; kernels/conv_blocked.py)."""
    c, i, o = blocks
    if len(data) != 5 or len(weight) != 6:
        raise ShapeError(
            f"a blocked conv2d expects 5-D data and 6-D weight, got data {shape_str(data)} "
            f"and weight {shape_str(weight)}"
        )
    if data[4] != c or weight[4] != i or weight[5] != o:
        raise ShapeError(
            f"block extents of data {shape_str(data)} / weight {shape_str(weight)} do not match "
            f"the layouts' blocks c={c}, i={i}, o={o}"
        )
    grouped = groups != 1 and i == c == o and i > 1
    if grouped:
        _check_blocked_grouped(data, weight, groups)
    depthwise = groups != 1 and not grouped  # `OIHW1i{c}o`, one filter a channel
    if depthwise and (i != 1 or o != c or weight[1] != 1 or weight[0] != data[1]):
        raise ShapeError(
            f"a blocked conv2d with groups > 1 must be depthwise: data N x C/{c} x H x W x {c},"
            f" weight C/{c} x 1 x KH x KW x 1 x {c}, got data {shape_str(data)} and weight "
            f"{shape_str(weight)}"
        )
    n, h, w_ = data[0], data[2], data[3]
    plain = conv2d_output_shape(
        (n, data[1] * c, h, w_),
        (weight[0] * o, data[1] * c if grouped else weight[1] * i, weight[2], weight[3]),
        strides,
        padding,
        dilation,
        groups=data[1] * c if depthwise else 1,
    )
    return (n, weight[0], plain[2], plain[3], o)


def _check_blocked_grouped(data: Sequence[int], weight: Sequence[int], groups: int) -> None:
    """A channel-blocked grouped conv2d (`_blocked_conv2d_output_shape`) has as
    many output blocks as input blocks, each reading `B` whole input blocks of
    its group (`B` divides the block count; with `B > 1` the groups are
    exactly `C/c / B` runs of blocks). Its output shape is then the one of a
    dense convolution over the same blocks."""
    c = data[4]
    blocks, reads = data[1], weight[1]
    wrong_reads = reads < 1 or blocks % reads or (reads > 1 and groups * reads != blocks)
    if weight[0] != blocks or wrong_reads:
        raise ShapeError(
            f"a blocked grouped conv2d needs data N x C/{c} x H x W x {c} and weight C/{c} x B x "
            f"KH x KW x {c} x {c} with B dividing C/{c} (B > 1: groups = C/{c} / B), got data "
            f"{shape_str(data)}, weight {shape_str(weight)} and groups = {groups}"
        )


def pool2d_output_shape(
    data: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int] = (1, 1),
    padding: Sequence[int] = (0, 0, 0, 0),
) -> tuple[int, ...]:
    """Result shape of a 2-D max/avg pool over an NCHW tensor, or a
    channel-blocked `NCHW{c}c` one (5-D: the block dimension is carried
    through, each lane its own channel; `plan-layouts` produces it).

    Each padding must be smaller than the kernel (ONNX), so that every window
    holds at least one real element (avg_pool2d divides by that count).
    """
    if len(data) not in (4, 5):
        raise ShapeError(
            f"pooling expects a 4-D NCHW (or 5-D NCHW<c>c) input, got {shape_str(data)}"
        )
    _check_length("kernel", kernel, (2,))
    _check_length("strides", strides, (2,))
    _check_positive("kernel", kernel)
    _check_positive("strides", strides)
    top, left, bottom, right = normalize_padding2d(padding)
    for pad, size, which in ((top, kernel[0], "top"), (bottom, kernel[0], "bottom"),
                             (left, kernel[1], "left"), (right, kernel[1], "right")):  # fmt: skip
        if pad >= size:
            raise ShapeError(f"{which} padding {pad} must be smaller than the kernel extent {size}")
    out_h = _window_output("height", data[2], kernel[0], strides[0], top + bottom)
    out_w = _window_output("width", data[3], kernel[1], strides[1], left + right)
    return (data[0], data[1], out_h, out_w, *data[4:])


class _Window2dOp(_ComputeOp):
    """Sliding-window ops (conv2d, pooling): `strides` (2 entries, default 1)
    and `padding` (`top, left, bottom, right` or 2 symmetric entries, default 0)."""

    strides = opt_prop_def(DenseArrayBase.constr(i64))
    padding = opt_prop_def(DenseArrayBase.constr(i64))

    @property
    def strides_value(self) -> tuple[int, ...]:
        return _ints(self.strides, (1, 1))

    @property
    def padding_value(self) -> tuple[int, int, int, int]:
        """Padding as `(top, left, bottom, right)`."""
        return normalize_padding2d(_ints(self.padding, (0, 0, 0, 0)))


@irdl_op_definition
class Conv2dOp(_Window2dOp):
    """2-D convolution of `data` (default NCHW) with `weight` (default OIHW).

    `strides`, `dilation` (2 entries, default 1), `padding` (`top, left,
    bottom, right`, default 0), `groups` (default 1). Bias is a separate `add`.
    """

    name = "graph.conv2d"

    data = operand_def(TensorType)
    weight = operand_def(TensorType)
    result = result_def(TensorType)
    # `strides` and `padding` again, so that they keep their place before `dilation`:
    # properties parsed from the attribute dictionary print in declaration order.
    strides = opt_prop_def(DenseArrayBase.constr(i64))
    padding = opt_prop_def(DenseArrayBase.constr(i64))
    dilation = opt_prop_def(DenseArrayBase.constr(i64))
    groups = opt_prop_def(IntegerAttr[I64])
    data_layout = opt_prop_def(StringAttr)
    kernel_layout = opt_prop_def(StringAttr)

    def __init__(
        self,
        data: SSAValue | Operation,
        weight: SSAValue | Operation,
        *,
        strides: Sequence[int] | None = None,
        padding: Sequence[int] | None = None,
        dilation: Sequence[int] | None = None,
        groups: int | None = None,
        data_layout: str | None = None,
        kernel_layout: str | None = None,
        result_type: Attribute | None = None,
        device: DeviceAttr | None = None,
    ):
        props: dict[str, Attribute | None] = {
            "strides": _i64_array(strides),
            "padding": _i64_array(padding),
            "dilation": _i64_array(dilation),
            "groups": _i64(groups),
            "data_layout": StringAttr(data_layout) if data_layout else None,
            "kernel_layout": StringAttr(kernel_layout) if kernel_layout else None,
            "device": device,
        }
        if result_type is None:
            dv, wv = SSAValue.get(data), SSAValue.get(weight)
            shape = conv2d_output_shape(
                tensor_shape(dv),
                tensor_shape(wv),
                strides or (1, 1),
                padding or (0, 0, 0, 0),
                dilation or (1, 1),
                groups or 1,
                data_layout or "NCHW",
                kernel_layout or "OIHW",
            )
            result_type = _tensor(element_type(dv), shape)
        super().__init__(operands=[data, weight], result_types=[result_type], properties=props)

    @property
    def dilation_value(self) -> tuple[int, ...]:
        return _ints(self.dilation, (1, 1))

    @property
    def groups_value(self) -> int:
        return self.groups.value.data if self.groups is not None else 1

    @property
    def data_layout_value(self) -> str:
        return self.data_layout.data if self.data_layout is not None else "NCHW"

    @property
    def kernel_layout_value(self) -> str:
        return self.kernel_layout.data if self.kernel_layout is not None else "OIHW"

    VERIFIES_LOCALLY: ClassVar[bool] = True  # reads its types and attributes only

    def verify_(self) -> None:
        super().verify_()
        algorithm = self.attributes.get(CONV_ALGORITHM_ATTR)
        if algorithm is None:
            return
        if not isinstance(algorithm, StringAttr) or algorithm.data not in CONV_ALGORITHMS:
            raise VerifyException(
                f"{CONV_ALGORITHM_ATTR} must be one of "
                f"{', '.join(repr(a) for a in CONV_ALGORITHMS)}, got {algorithm}"
            )
        if algorithm.data == "winograd" and (why := winograd_unsupported(self)) is not None:
            raise VerifyException(f'{CONV_ALGORITHM_ATTR} = "winograd": {why}')

    def infer_result_type(self) -> Attribute:
        elem = _check_same_element_type([self.data, self.weight], ["data", "weight"])
        shape = conv2d_output_shape(
            tensor_shape(self.data),
            tensor_shape(self.weight),
            self.strides_value,
            _ints(self.padding, (0, 0, 0, 0)),
            self.dilation_value,
            self.groups_value,
            self.data_layout_value,
            self.kernel_layout_value,
        )
        return _tensor(elem, shape)


CONV_ALGORITHM_ATTR = "lamina.algorithm"
"""Discardable attribute of `graph.conv2d`: how `legalize` computes it, `"direct"`
(the default) or `"winograd"` (F(2x2, 3x3); docs/performance.md). `plan-layouts`
sets it where the target prefers Winograd; a user may set it too."""

CONV_ALGORITHMS = ("direct", "winograd")


def winograd_unsupported(op: Conv2dOp) -> str | None:
    """Why `op` cannot be computed by Winograd F(2x2, 3x3); None when it can."""
    if blocked_conv_layout(op.data_layout_value, op.kernel_layout_value) is None:
        return "it needs the channel-blocked layouts (NCHW<c>c, OIHW<c>i<o>o)"
    return winograd_shape_unsupported(op)


def winograd_shape_unsupported(op: Conv2dOp) -> str | None:
    """Why `op`'s shape and attributes rule out Winograd F(2x2, 3x3), whatever its
    layout (a convolution as imported, before `plan-layouts` blocks it); None when
    they do not."""
    kh, kw = tensor_shape(op.weight)[2:4]
    if (kh, kw) != (3, 3):
        return f"it needs a 3x3 kernel, got {kh}x{kw}"
    if op.strides_value != (1, 1) or op.dilation_value != (1, 1):
        return "it needs strides and dilation 1"
    if op.groups_value != 1:
        return "it needs groups = 1"
    if not isinstance(element_type(op.data), AnyFloat):
        return "it needs a floating-point element type"
    return None


class _Pool2dOp(_Window2dOp, _OneInputOp):
    """2-D pooling over an NCHW tensor, or a channel-blocked `NCHW{c}c` one (5-D, the
    block carried through): `kernel`, `strides` (default 1), `padding` (default 0)."""

    kernel = prop_def(DenseArrayBase.constr(i64))

    def __init__(
        self,
        input: SSAValue | Operation,
        kernel: Sequence[int],
        *,
        strides: Sequence[int] | None = None,
        padding: Sequence[int] | None = None,
        result_type: Attribute | None = None,
        device: DeviceAttr | None = None,
    ):
        value = SSAValue.get(input)
        if result_type is None:
            shape = pool2d_output_shape(
                tensor_shape(value), kernel, strides or (1, 1), padding or (0, 0, 0, 0)
            )
            result_type = _tensor(element_type(value), shape)
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={
                "kernel": _i64_array(kernel),
                "strides": _i64_array(strides),
                "padding": _i64_array(padding),
                "device": device,
            },
        )

    @property
    def kernel_value(self) -> tuple[int, ...]:
        return _int_values(self.kernel)

    def infer_result_type(self) -> Attribute:
        shape = pool2d_output_shape(
            tensor_shape(self.input),
            self.kernel_value,
            self.strides_value,
            _ints(self.padding, (0, 0, 0, 0)),
        )
        return _tensor(element_type(self.input), shape)


@irdl_op_definition
class MaxPool2dOp(_Pool2dOp):
    """2-D max pooling; padding counts as -inf."""

    name = "graph.max_pool2d"


@irdl_op_definition
class AvgPool2dOp(_Pool2dOp):
    """2-D average pooling; divides by the number of non-padding elements (ONNX default)."""

    name = "graph.avg_pool2d"


@irdl_op_definition
class GlobalAvgPool2dOp(_OneInputOp):
    """Mean over H and W of an NCHW tensor: N x C x 1 x 1 (of a channel-blocked
    `NCHW{c}c` one: N x C/c x 1 x 1 x c)."""

    name = "graph.global_avg_pool2d"

    def __init__(
        self,
        input: SSAValue | Operation,
        result_type: Attribute | None = None,
        device: DeviceAttr | None = None,
    ):
        value = SSAValue.get(input)
        if result_type is None:
            shape = tensor_shape(value)
            result_type = _tensor(element_type(value), (*shape[:2], 1, 1, *shape[4:]))
        super().__init__(
            operands=[input], result_types=[result_type], properties={"device": device}
        )

    def infer_result_type(self) -> Attribute:
        shape = tensor_shape(self.input)
        if len(shape) not in (4, 5):
            raise ShapeError(f"expected a 4-D NCHW (or 5-D NCHW<c>c) input, got {shape_str(shape)}")
        return _tensor(element_type(self.input), (*shape[:2], 1, 1, *shape[4:]))


@irdl_op_definition
class SoftmaxOp(_OneInputOp):
    """Softmax along `axis` (default -1)."""

    name = "graph.softmax"

    axis = opt_prop_def(IntegerAttr[I64])

    def __init__(
        self,
        input: SSAValue | Operation,
        axis: int | None = None,
        device: DeviceAttr | None = None,
    ):
        super().__init__(
            operands=[input],
            result_types=[SSAValue.get(input).type],
            properties={"axis": _i64(axis), "device": device},
        )

    @property
    def axis_value(self) -> int:
        """The normalized (non-negative) softmax axis."""
        return _axis_value(self.axis, -1, self.input)

    def infer_result_type(self) -> Attribute:
        _check_float(self.input)
        self.axis_value  # noqa: B018 - validates the axis
        return self.input.type


@irdl_op_definition
class LayerNormOp(_ComputeOp):
    """Layer normalization of `x` over the axes from `axis` (default -1) to the
    last (as ONNX), scaled by `gamma` and shifted by `beta` (shape x.shape[axis:])."""

    name = "graph.layer_norm"

    input = operand_def(TensorType)
    gamma = operand_def(TensorType)
    beta = operand_def(TensorType)
    result = result_def(TensorType)
    axis = opt_prop_def(IntegerAttr[I64])
    epsilon = opt_prop_def(FloatAttr)

    DEFAULT_EPSILON: ClassVar[float] = 1e-5

    def __init__(
        self,
        input: SSAValue | Operation,
        gamma: SSAValue | Operation,
        beta: SSAValue | Operation,
        axis: int | None = None,
        epsilon: float | None = None,
        device: DeviceAttr | None = None,
    ):
        value = SSAValue.get(input)
        eps = FloatAttr(epsilon, element_type(value)) if epsilon is not None else None  # type: ignore[arg-type]
        super().__init__(
            operands=[input, gamma, beta],
            result_types=[value.type],
            properties={"axis": _i64(axis), "epsilon": eps, "device": device},
        )

    @property
    def axis_value(self) -> int:
        return _axis_value(self.axis, -1, self.input)

    @property
    def epsilon_value(self) -> float:
        return self.epsilon.value.data if self.epsilon is not None else self.DEFAULT_EPSILON

    def infer_result_type(self) -> Attribute:
        _check_same_element_type([self.input, self.gamma, self.beta], ["x", "gamma", "beta"])
        _check_float(self.input)
        if self.epsilon is not None and self.epsilon.value.data <= 0:
            raise ShapeError(f"epsilon must be positive, got {self.epsilon.value.data}")
        expected = tensor_shape(self.input)[self.axis_value :]
        for name, value in (("gamma", self.gamma), ("beta", self.beta)):
            if tensor_shape(value) != expected:
                raise ShapeError(
                    f"{name} shape {shape_str(tensor_shape(value))} does not match the "
                    f"normalized shape {shape_str(expected)} (x.shape[{self.axis_value}:])"
                )
        return self.input.type
