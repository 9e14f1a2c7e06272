"""The `graph` dialect: value-semantics functions over tensors (docs/design.md §3.2).

This is the Relax/Relay level of Lamina. A model enters as `graph.func`s whose
bodies are compute ops on whole tensors (`graph.add`, `graph.matmul`,
`graph.conv2d`, ...), structured by calls, function values (`graph.lambda`,
`graph.closure`, `graph.invoke`) and pure `graph.dataflow` blocks. Devices and
layout constraints are attributes in the IR (`device`, `#lamina.constraint`).

Every op checks shapes and element types in `verify_()`, so that a wrong
shape is a diagnostic at the op and never a crash in a later pass. The shape
rules live in module-level helpers (`broadcast_shapes`, `matmul_result_shape`,
`conv2d_output_shape`, `pool2d_output_shape`, `reduce_result_shape`,
`layout_transform_shape`, ...) that legalization reuses; they raise
`ShapeError` (a `VerifyException`) with an expected-vs-got message.

Syntax::

    graph.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
      %c = graph.constant dense<1.0> : tensor<4xf32>
      %r = graph.dataflow -> tensor<4xf32> {
        %s = graph.add %x, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
        graph.output %s : tensor<4xf32>
      }
      %f = graph.lambda (%y: tensor<4xf32>) -> tensor<4xf32> {
        %z = graph.relu %y : (tensor<4xf32>) -> tensor<4xf32>
        graph.return %z : tensor<4xf32>
      }
      %o = graph.invoke %f(%r) : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, tensor<4xf32>) -> tensor<4xf32>
      graph.return %o : tensor<4xf32>
    }
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence
from math import prod
from typing import TYPE_CHECKING, ClassVar

from xdsl.dialects.builtin import (
    I64,
    AnyFloat,
    ArrayAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    FlatSymbolRefAttrConstr,
    FloatAttr,
    FunctionType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    ShapedType,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
    i1,
    i64,
)
from xdsl.dialects.utils import parse_func_op_like, print_func_op_like
from xdsl.ir import (
    Attribute,
    Block,
    Dialect,
    Operation,
    ParametrizedAttribute,
    Region,
    SSAValue,
    TypeAttribute,
)
from xdsl.ir.affine import AffineBinaryOpExpr, AffineBinaryOpKind, AffineExpr, AffineMap
from xdsl.ir.affine.affine_expr import AffineConstantExpr, AffineDimExpr
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_attr_definition,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_prop_def,
    param_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import (
    ConstantLike,
    EffectInstance,
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    MemoryEffect,
    OpTrait,
    Pure,
    RecursiveMemoryEffect,
    ReturnLike,
    SymbolOpInterface,
    SymbolUserOpInterface,
)
from xdsl.utils.exceptions import VerifyException

from lamina.core.symbols import lookup_symbol
from lamina.dialects.common import type_list, verify_terminator
from lamina.dialects.func_like import FuncLikeCallableInterface, ReturnLikeOp, SymbolFuncOp
from lamina.dialects.lamina import ConstraintAttr, DeviceAttr
from lamina.dialects.layout_maps import eval_grid, is_injective, verify_boundary_constraints

if TYPE_CHECKING:
    pass

# ---------------------------------------------------------------------------
# Formatting helpers for diagnostics
# ---------------------------------------------------------------------------


class ShapeError(VerifyException):
    """A shape rule was broken; the message compares expected and got."""


def shape_str(shape: Sequence[int]) -> str:
    """`2x3` for (2, 3), `scalar` for () — the short form used in messages."""
    return "x".join(str(d) for d in shape) if shape else "scalar"


def attr_syntax(attr: Attribute) -> str:
    """An attribute as written in the IR (`#lamina.device<"cpu", 0>`), for messages."""
    stream = io.StringIO()
    Printer(stream=stream).print_attribute(attr)
    return stream.getvalue()


def tensor_shape(value: SSAValue | Attribute) -> tuple[int, ...]:
    """The static shape of a tensor value or type."""
    typ = value.type if isinstance(value, SSAValue) else value
    assert isinstance(typ, TensorType)
    return tuple(typ.get_shape())


def element_type(value: SSAValue | Attribute) -> Attribute:
    """The element type of a tensor value or type."""
    typ = value.type if isinstance(value, SSAValue) else value
    assert isinstance(typ, TensorType)
    return typ.get_element_type()


# ---------------------------------------------------------------------------
# Shape rules (reused by legalization and the numerics tests)
# ---------------------------------------------------------------------------


def normalize_axis(axis: int, rank: int) -> int:
    """Map a possibly negative `axis` into `[0, rank)`, as NumPy does."""
    if not -rank <= axis < rank:
        raise ShapeError(
            f"axis {axis} is out of range for rank {rank} (expected {-rank} <= axis < {rank})"
        )
    return axis + rank if axis < 0 else axis


def normalize_axes(axes: Sequence[int], rank: int) -> tuple[int, ...]:
    """Normalize every axis of `axes`; a repeated axis is an error."""
    normalized: list[int] = []
    for axis in axes:
        n = normalize_axis(axis, rank)
        if n in normalized:
            raise ShapeError(f"axis {axis} appears more than once in axes {list(axes)}")
        normalized.append(n)
    return tuple(normalized)


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    """NumPy broadcasting of `shapes` (right-aligned; a 1 stretches)."""
    rank = max((len(s) for s in shapes), default=0)
    result = [1] * rank
    owner: list[tuple[int, ...] | None] = [None] * rank
    for shape in shapes:
        padded = (1,) * (rank - len(shape)) + tuple(shape)
        for dim, size in enumerate(padded):
            if size == result[dim] or size == 1:
                continue
            if result[dim] == 1:
                result[dim], owner[dim] = size, tuple(shape)
                continue
            other = owner[dim] or ()
            raise ShapeError(
                f"operands are not broadcast-compatible: {shape_str(other)} vs "
                f"{shape_str(shape)} (dim {dim}: {result[dim]} vs {size})"
            )
    return tuple(result)


def broadcast_to_shape(shape: Sequence[int], target: Sequence[int]) -> tuple[int, ...]:
    """Check that `shape` broadcasts to exactly `target` (NumPy `broadcast_to`)."""
    if len(shape) > len(target):
        raise ShapeError(
            f"operand shape {shape_str(shape)} cannot be broadcast to {shape_str(target)} "
            f"(operand rank {len(shape)} > target rank {len(target)})"
        )
    padded = (1,) * (len(target) - len(shape)) + tuple(shape)
    for dim, (size, want) in enumerate(zip(padded, target, strict=True)):
        if size not in (1, want):
            raise ShapeError(
                f"operand shape {shape_str(shape)} cannot be broadcast to {shape_str(target)} "
                f"(dim {dim}: {size} vs {want})"
            )
    return tuple(target)


def matmul_result_shape(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...]:
    """`numpy.matmul` result shape: 1-D operands are promoted then squeezed,
    leading (batch) dimensions broadcast."""
    if not a or not b:
        raise ShapeError(
            f"matmul operands must have rank >= 1, got lhs {shape_str(a)} and rhs {shape_str(b)}"
        )
    lhs = (1, *a) if len(a) == 1 else tuple(a)
    rhs = (*b, 1) if len(b) == 1 else tuple(b)
    if lhs[-1] != rhs[-2]:
        raise ShapeError(
            f"contraction dimension mismatch: lhs has K = {lhs[-1]}, rhs has K = {rhs[-2]} "
            f"(lhs {shape_str(a)}, rhs {shape_str(b)})"
        )
    try:
        batch = broadcast_shapes(lhs[:-2], rhs[:-2])
    except ShapeError as err:
        raise ShapeError(f"batch dimensions: {err}") from None
    result = (*batch, lhs[-2], rhs[-1])
    if len(a) == 1:
        result = result[:-2] + result[-1:]
    if len(b) == 1:
        result = result[:-1]
    return result


def _check_positive(name: str, values: Sequence[int]) -> None:
    if any(v <= 0 for v in values):
        raise ShapeError(f"{name} must be positive, got {list(values)}")


def _check_length(name: str, values: Sequence[int], lengths: Sequence[int]) -> None:
    if len(values) not in lengths:
        expected = " or ".join(str(n) for n in lengths)
        raise ShapeError(f"{name} must have {expected} entries, got {len(values)}")


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
    if c != i or c <= 0 or o <= 0:
        raise ShapeError(f"data block {c} must equal the kernel input block {i} (and be > 0)")
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
    """`N x O/o x OH x OW x o`, via the unblocked convolution's shape."""
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
    if groups != 1:
        raise ShapeError(f"a blocked conv2d needs groups = 1, got {groups}")
    n, h, w_ = data[0], data[2], data[3]
    plain = conv2d_output_shape(
        (n, data[1] * c, h, w_),
        (weight[0] * o, weight[1] * i, weight[2], weight[3]),
        strides,
        padding,
        dilation,
    )
    return (n, weight[0], plain[2], plain[3], o)


def pool2d_output_shape(
    data: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int] = (1, 1),
    padding: Sequence[int] = (0, 0, 0, 0),
) -> tuple[int, ...]:
    """Result shape of a 2-D max/avg pool over an NCHW tensor.

    Each padding must be smaller than the kernel (ONNX), so that every window
    holds at least one real element (avg_pool2d divides by that count).
    """
    if len(data) != 4:
        raise ShapeError(f"pooling expects a 4-D NCHW input, got {shape_str(data)}")
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
    return (data[0], data[1], out_h, out_w)


def reduce_result_shape(
    shape: Sequence[int], axes: Sequence[int] | None, keepdims: bool
) -> tuple[int, ...]:
    """Shape after reducing `axes` (None: every axis); reduced dims stay as 1 with keepdims."""
    reduced = set(range(len(shape)) if axes is None else normalize_axes(axes, len(shape)))
    if keepdims:
        return tuple(1 if i in reduced else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in reduced)


def transpose_result_shape(shape: Sequence[int], perm: Sequence[int]) -> tuple[int, ...]:
    """`shape` permuted by `perm`, which must be a permutation of range(rank)."""
    if sorted(perm) != list(range(len(shape))):
        raise ShapeError(
            f"perm {list(perm)} is not a permutation of {list(range(len(shape)))} "
            f"(operand rank {len(shape)})"
        )
    return tuple(shape[p] for p in perm)


def concat_result_shape(shapes: Sequence[Sequence[int]], axis: int) -> tuple[int, ...]:
    """Shape of the concatenation of `shapes` along `axis`; other dims must agree."""
    if not shapes:
        raise ShapeError("concat needs at least one operand")
    first = tuple(shapes[0])
    axis = normalize_axis(axis, len(first))
    total = 0
    for index, shape in enumerate(shapes):
        if len(shape) != len(first):
            raise ShapeError(
                f"operand #{index} has rank {len(shape)}, expected {len(first)} "
                f"(the rank of operand #0)"
            )
        for dim, (size, want) in enumerate(zip(shape, first, strict=True)):
            if dim != axis and size != want:
                raise ShapeError(
                    f"operand #{index} has shape {shape_str(shape)}, incompatible with "
                    f"{shape_str(first)} outside the concat axis {axis} (dim {dim}: "
                    f"{size} vs {want})"
                )
        total += shape[axis]
    return first[:axis] + (total,) + first[axis + 1 :]


def _expr_bounds(expr: AffineExpr, dims: Sequence[int]) -> tuple[int, int]:
    """Exact [min, max] of an affine expression over the box `0 <= d_i < dims[i]`.

    Interval arithmetic, exact for the semi-affine maps layout constraints use
    (sums of scaled dims, floordiv/ceildiv/mod by positive constants).
    """
    if isinstance(expr, AffineDimExpr):
        return 0, dims[expr.position] - 1
    if isinstance(expr, AffineConstantExpr):
        return expr.value, expr.value
    if not isinstance(expr, AffineBinaryOpExpr):
        raise ShapeError(f"unsupported expression {expr} in a layout map (symbols are not allowed)")
    lo1, hi1 = _expr_bounds(expr.lhs, dims)
    if expr.kind == AffineBinaryOpKind.Add:
        lo2, hi2 = _expr_bounds(expr.rhs, dims)
        return lo1 + lo2, hi1 + hi2
    if not isinstance(expr.rhs, AffineConstantExpr):
        raise ShapeError(f"layout map expression {expr} must have a constant right-hand side")
    c = expr.rhs.value
    if expr.kind == AffineBinaryOpKind.Mul:
        return min(lo1 * c, hi1 * c), max(lo1 * c, hi1 * c)
    if c <= 0:
        raise ShapeError(f"layout map expression {expr} must divide by a positive constant")
    if expr.kind == AffineBinaryOpKind.FloorDiv:
        return lo1 // c, hi1 // c
    if expr.kind == AffineBinaryOpKind.CeilDiv:
        return -(-lo1 // c), -(-hi1 // c)
    # Mod: exact when the range stays inside one period, else the full period.
    if hi1 - lo1 < c and lo1 % c <= hi1 % c:
        return lo1 % c, hi1 % c
    return 0, c - 1


EXACT_BOUNDS_LIMIT = 1 << 22
"""Largest sub-domain (product of the extents of the dims an expression uses)
that `layout_transform_shape` evaluates exhaustively."""


def _exact_bounds(expr: AffineExpr, dims: Sequence[int]) -> tuple[int, int]:
    """[min, max] of `expr` over the box: interval arithmetic validates the
    expression and bounds it; exhaustive evaluation over the dims it uses makes
    the bounds exact (e.g. `(d0 + 2 * d1) mod 2` never reaches 1 when d0 < 1)."""
    lo, hi = _expr_bounds(expr, dims)
    used = sorted(expr.used_dims())
    if prod(dims[d] for d in used) > EXACT_BOUNDS_LIMIT:
        return lo, hi
    import numpy as np  # only layout maps need it; keeps tool start-up light

    axes = np.meshgrid(
        *(np.arange(dims[d], dtype=np.int64) for d in used), indexing="ij", sparse=True
    )
    values = np.asarray(eval_grid(expr, dict(zip(used, axes, strict=True))))
    return int(values.min()), int(values.max())


def layout_transform_shape(shape: Sequence[int], index_map: AffineMap) -> tuple[int, ...]:
    """The physical shape of a layout constraint (seed 002's padding rule): a
    result `e mod m` has extent `m`, `e floordiv m` has ⌈extent(e)/m⌉, any other
    result its maximum over the logical domain + 1. So
    `(d0) -> (d0 floordiv 8, d0 mod 8)` on 20 gives 3x8, and on 3 gives 1x8:
    the 5 slots no element reaches are padding."""
    if index_map.num_dims != len(shape):
        raise ShapeError(
            f"constraint map has {index_map.num_dims} dimensions but the operand has rank "
            f"{len(shape)}"
        )
    if index_map.num_symbols:
        raise ShapeError("constraint map must not have symbols")
    if any(d == 0 for d in shape):
        return tuple(0 for _ in index_map.results)
    result: list[int] = []
    for i, expr in enumerate(index_map.results):
        lo, hi = _exact_bounds(expr, shape)
        if lo < 0:
            raise ShapeError(f"constraint map result #{i} ({expr}) can be negative (minimum {lo})")
        result.append(_padded_extent(expr, shape, hi + 1))
    return tuple(result)


def _padded_extent(expr: AffineExpr, shape: Sequence[int], tight: int) -> int:
    """`m` for `e mod m`, ⌈extent(e)/m⌉ for `e floordiv m`, else `tight`."""
    if not (isinstance(expr, AffineBinaryOpExpr) and isinstance(expr.rhs, AffineConstantExpr)):
        return tight
    m = expr.rhs.value
    if expr.kind == AffineBinaryOpKind.Mod:
        return m
    if expr.kind == AffineBinaryOpKind.FloorDiv:
        inner = _exact_bounds(expr.lhs, shape)[1] + 1
        return -(-inner // m)
    return tight


# ---------------------------------------------------------------------------
# Types, traits and shared verification helpers
# ---------------------------------------------------------------------------


@irdl_attr_definition
class FnType(ParametrizedAttribute, TypeAttribute):
    """`!graph.fn<(ARGS) -> RESULTS>`: the type of a function value."""

    name = "graph.fn"

    inputs: ArrayAttr[Attribute] = param_def(ArrayAttr[Attribute])
    outputs: ArrayAttr[Attribute] = param_def(ArrayAttr[Attribute])

    def __init__(self, inputs: Iterable[Attribute], outputs: Iterable[Attribute]):
        super().__init__(ArrayAttr(tuple(inputs)), ArrayAttr(tuple(outputs)))

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> tuple[ArrayAttr, ArrayAttr]:
        with parser.in_angle_brackets():
            inputs = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_type)
            parser.parse_punctuation("->")
            outputs = _parse_result_types(parser)
        return (ArrayAttr(inputs), ArrayAttr(outputs))

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<(")
        printer.print_list(self.inputs.data, printer.print_attribute)
        printer.print_string(") -> ")
        _print_result_types(printer, self.outputs.data)
        printer.print_string(">")


def _parse_result_types(parser: AttrParser) -> list[Attribute]:
    """The types after a `->`: one bare type, or a parenthesized (possibly empty) list."""
    types = parser.parse_optional_comma_separated_list(parser.Delimiter.PAREN, parser.parse_type)
    return types if types is not None else [parser.parse_type()]


def _print_result_types(printer: Printer, types: Sequence[Attribute]) -> None:
    """The inverse of `_parse_result_types`: parentheses unless there is exactly one type."""
    if len(types) == 1:
        printer.print_attribute(types[0])
    else:
        printer.print_string("(")
        printer.print_list(types, printer.print_attribute)
        printer.print_string(")")


def _parse_optional_results(parser: Parser) -> list[Attribute]:
    """`-> T` or `-> (T1, T2)` (lambda and dataflow syntax); no arrow: no results."""
    if parser.parse_optional_punctuation("->"):
        return _parse_result_types(parser)
    return []


def _print_optional_results(printer: Printer, types: Sequence[Attribute]) -> None:
    """The inverse of `_parse_optional_results`: nothing when there are no results."""
    if types:
        printer.print_string(" -> ")
        _print_result_types(printer, types)


class GraphCompute(OpTrait):
    """Marks graph arithmetic/tensor ops: all of them are legalized into
    `graph.call_te`/`call_loop`/`call_extern` before the lowering phase."""


def _int_values(attr: DenseArrayBase) -> tuple[int, ...]:
    """The values of an `array<i64: ...>` property."""
    return tuple(int(v) for v in attr.get_values())


def _ints(attr: DenseArrayBase | None, default: Sequence[int]) -> tuple[int, ...]:
    """The values of an optional `array<i64: ...>` property, or `default`."""
    return _int_values(attr) if attr is not None else tuple(default)


def _i64_array(values: Sequence[int] | None) -> DenseArrayBase | None:
    return None if values is None else DenseArrayBase.from_list(i64, list(values))


def _i64(value: int | None) -> IntegerAttr | None:
    return None if value is None else IntegerAttr(value, i64)


def _unit(flag: bool) -> UnitAttr | None:
    return UnitAttr() if flag else None


def _tensor(element: Attribute, shape: Sequence[int]) -> TensorType:
    return TensorType(element, list(shape))


def _check_result_type(got: Attribute, inferred: Attribute) -> None:
    if got != inferred:
        raise VerifyException(f"result type {got} does not match inferred {inferred}")


def _check_same_element_type(values: Sequence[SSAValue], names: Sequence[str]) -> Attribute:
    """All `values` share one element type; returns it."""
    first = element_type(values[0])
    for value, name in zip(values[1:], names[1:], strict=True):
        if element_type(value) != first:
            raise VerifyException(
                f"element type mismatch: {names[0]} has {first}, {name} has {element_type(value)}"
            )
    return first


def _check_float(value: SSAValue) -> None:
    """The tensor `value` has a floating-point element type (exp, softmax, ...)."""
    elem = element_type(value)
    if not isinstance(elem, AnyFloat):
        raise ShapeError(f"expected a floating-point element type, got {elem}")


class _DeviceOp(IRDLOperation):
    """Shared field: every tensor-producing/consuming graph op may carry `device`."""

    device = opt_prop_def(DeviceAttr)
    irdl_options = (ParsePropInAttrDict(),)


def _lookup_symbol(op: Operation, callee: SymbolRefAttr) -> tuple[bool, Operation | None]:
    """(inside a symbol table?, the op `callee` names). Detached ops are not checked."""
    try:
        return True, lookup_symbol(op, callee)
    except ValueError:
        return False, None


def _check_signature(
    what: str, arg_types: Sequence[Attribute], expected: Sequence[Attribute], kind: str
) -> None:
    """Compare the types a call passes/returns with the callee's, naming the first mismatch."""
    if len(arg_types) != len(expected):
        raise VerifyException(
            f"{what} has {len(arg_types)} {kind}s but the callee expects {len(expected)}: "
            f"got {type_list(arg_types)}, expected {type_list(expected)}"
        )
    for index, (got, want) in enumerate(zip(arg_types, expected, strict=True)):
        if got != want:
            raise VerifyException(
                f"{kind} #{index} of {what} has type {got}, but the callee expects {want}"
            )


# ---------------------------------------------------------------------------
# Functions, calls and function values
# ---------------------------------------------------------------------------


@irdl_op_definition
class FuncOp(SymbolFuncOp):
    """A graph function (like `func.func`): value semantics over tensors.

    The entry block arguments are the parameters. The function is pure unless
    it carries `impure`; `force_pure` declares it pure even if it calls impure
    code. `arg_attrs`/`res_attrs` carry `device` and `lamina.constraint`.

    Example: `graph.func @main(%x: tensor<4xf32>) -> tensor<4xf32> { ... }`
    """

    name = "graph.func"

    impure = opt_prop_def(UnitAttr)
    force_pure = opt_prop_def(UnitAttr)

    traits = traits_def(IsolatedFromAbove(), SymbolOpInterface(), FuncLikeCallableInterface())
    irdl_options = (ParsePropInAttrDict(),)

    _FLAG_PROPS: ClassVar[tuple[str, ...]] = ("impure", "force_pure")

    def __init__(
        self,
        name: str,
        function_type: FunctionType | tuple[Sequence[Attribute], Sequence[Attribute]],
        region: Region | None = None,
        *,
        arg_attrs: ArrayAttr[DictionaryAttr] | None = None,
        res_attrs: ArrayAttr[DictionaryAttr] | None = None,
        impure: bool = False,
        force_pure: bool = False,
    ):
        if isinstance(function_type, tuple):
            function_type = FunctionType.from_lists(*function_type)
        if region is None:
            region = Region(Block(arg_types=function_type.inputs))
        super().__init__(
            regions=[region],
            properties={
                "sym_name": StringAttr(name),
                "function_type": function_type,
                "arg_attrs": arg_attrs,
                "res_attrs": res_attrs,
                "impure": _unit(impure),
                "force_pure": _unit(force_pure),
            },
        )

    @property
    def args(self) -> tuple[SSAValue, ...]:
        return self.body.block.args

    @property
    def is_pure(self) -> bool:
        """Pure unless `impure`; `force_pure` declares purity whatever the body calls."""
        return self.impure is None or self.force_pure is not None

    def update_function_type(self) -> None:
        """Recompute `function_type` from the entry block arguments and the
        `graph.return` operands (after a pass retyped them)."""
        ret = self.get_return_op()
        outputs = ret.arguments.types if ret is not None else self.function_type.outputs.data
        self.properties["function_type"] = FunctionType.from_lists(
            self.body.block.arg_types, outputs
        )

    def verify_(self) -> None:
        inputs, outputs = self.signature
        if self.impure is not None and self.force_pure is not None:
            raise VerifyException("'impure' and 'force_pure' are mutually exclusive")
        for name, attrs, count in (
            ("arg_attrs", self.arg_attrs, len(inputs)),
            ("res_attrs", self.res_attrs, len(outputs)),
        ):
            if attrs is not None and len(attrs.data) != count:
                raise VerifyException(
                    f"{name} has {len(attrs.data)} entries, expected {count} "
                    f"(one per function {'parameter' if name == 'arg_attrs' else 'result'})"
                )
        verify_boundary_constraints(self.arg_attrs, self.res_attrs, inputs, outputs)
        if self.is_declaration:
            return
        block_types = self.body.blocks.first.arg_types  # type: ignore[union-attr]
        if tuple(block_types) != inputs:
            raise VerifyException(
                f"entry block argument types {type_list(block_types)} do not match the "
                f"function parameter types {type_list(inputs)}"
            )

    @classmethod
    def parse(cls, parser: Parser) -> FuncOp:
        name, inputs, outputs, region, extra, arg_attrs, res_attrs = parse_func_op_like(
            parser, reserved_attr_names=("sym_name", "function_type", "arg_attrs", "res_attrs")
        )
        attrs = dict(extra.data) if extra is not None else {}
        flags = {k: attrs.pop(k) for k in cls._FLAG_PROPS if k in attrs}
        func = FuncOp(
            name,
            (inputs, outputs),
            region,
            arg_attrs=arg_attrs,
            res_attrs=res_attrs,
        )
        func.properties.update(flags)
        func.attributes |= attrs
        return func

    def print(self, printer: Printer) -> None:
        flags = {k: v for k, v in self.properties.items() if k in self._FLAG_PROPS}
        print_func_op_like(
            printer,
            self.sym_name,
            self.function_type,
            self.body,
            self.attributes | flags,
            arg_attrs=self.arg_attrs,
            res_attrs=self.res_attrs,
            reserved_attr_names=("sym_name", "function_type", "arg_attrs", "res_attrs"),
        )


@irdl_op_definition
class ReturnOp(ReturnLikeOp, _DeviceOp):
    """Terminator of `graph.func` and `graph.lambda`: the function's results.

    Example: `graph.return %r : tensor<4xf32>`
    """

    name = "graph.return"
    # `arguments`, builder and syntax come from ReturnLikeOp, `device` from _DeviceOp.

    traits = lazy_traits_def(lambda: (HasParent(FuncOp, LambdaOp), IsTerminator(), ReturnLike()))

    def verify_(self) -> None:
        parent = self.parent_op()
        if not isinstance(parent, FuncOp | LambdaOp):
            return
        expected = parent.signature[1]
        got = tuple(self.arguments.types)
        if got != expected:
            raise VerifyException(
                f"returned types {type_list(got)} do not match the "
                f"{'function' if isinstance(parent, FuncOp) else 'lambda'} result types "
                f"{type_list(expected)}"
            )


class _CalleeSymbolUser(SymbolUserOpInterface):
    """Delegates symbol-use verification to the op's `verify_symbol_uses()`."""

    def verify(self, op: Operation) -> None:
        op.verify_symbol_uses()  # type: ignore[attr-defined]


class _CallEffects(MemoryEffect):
    """A call is as pure as its callee: effect-free if the callee is a graph.func
    without `impure` (or with `force_pure`), unknown otherwise."""

    @classmethod
    def get_effects(cls, op: Operation) -> set[EffectInstance] | None:
        assert isinstance(op, CallOp)
        _, callee = _lookup_symbol(op, op.callee)
        if isinstance(callee, FuncOp) and (callee.impure is None or callee.force_pure):
            return set()
        return None


class _PureFlagEffects(MemoryEffect):
    """Effect-free when the op carries the unit `pure`, unknown otherwise."""

    @classmethod
    def get_effects(cls, op: Operation) -> set[EffectInstance] | None:
        return set() if op.properties.get("pure") is not None else None


def _symbol_ref(callee: str | SymbolRefAttr) -> SymbolRefAttr:
    """Builders take a callee as `"f"` or `@f`."""
    return SymbolRefAttr(callee) if isinstance(callee, str) else callee


class _CalleeOp(_DeviceOp):
    """Shared by the ops that name a function by symbol (calls and closures):
    `callee` and the lookup that starts their `verify_symbol_uses()`."""

    callee = prop_def(FlatSymbolRefAttrConstr)

    CALLEE_OP_NAME: ClassVar[str] = "graph.func"
    """The name of the op `callee` must reference."""

    def _resolve_callee(self) -> Operation | None:
        """The op `callee` names, checked to be a `CALLEE_OP_NAME`; None when
        the op is not inside a symbol table (detached ops are not checked)."""
        in_table, callee = _lookup_symbol(self, self.callee)
        if not in_table:
            return None
        if callee is None:
            raise VerifyException(f"callee {self.callee} does not name a symbol in the module")
        if callee.name != self.CALLEE_OP_NAME:
            raise VerifyException(
                f"callee {self.callee} is a '{callee.name}', expected a {self.CALLEE_OP_NAME}"
            )
        return callee


CALL_FORMAT = "$callee `(` $arguments `)` attr-dict `:` functional-type($arguments, $res)"
"""Syntax of every call: `graph.call`, `graph.call_te`/`call_loop`, `graph.call_extern`."""


class _CallOp(_CalleeOp):
    """Shared by `graph.call` and the kernel calls: arguments, results, builder, syntax."""

    arguments = var_operand_def()
    res = var_result_def()

    assembly_format = CALL_FORMAT

    def __init__(
        self,
        callee: str | SymbolRefAttr,
        arguments: Sequence[SSAValue | Operation],
        result_types: Sequence[Attribute],
        device: DeviceAttr | None = None,
    ):
        super().__init__(
            operands=[arguments],
            result_types=[result_types],
            properties={"callee": _symbol_ref(callee), "device": device},
        )


@irdl_op_definition
class CallOp(_CallOp):
    """Call a `graph.func` by symbol.

    Example: `%r = graph.call @f(%x) : (tensor<4xf32>) -> tensor<4xf32>`
    """

    name = "graph.call"

    traits = traits_def(_CalleeSymbolUser(), _CallEffects())

    def verify_symbol_uses(self) -> None:
        callee = self._resolve_callee()
        if callee is None:
            return
        assert isinstance(callee, FuncOp)
        inputs, outputs = callee.signature
        _check_signature("the call", self.arguments.types, inputs, "operand")
        _check_signature("the call", self.res.types, outputs, "result")


def _region_signature(region: Region) -> tuple[Attribute, ...]:
    block = region.blocks.first
    return tuple(block.arg_types) if block is not None else ()


@irdl_op_definition
class LambdaOp(_DeviceOp):
    """An inner function: its region becomes a `!graph.fn<...>` value.

    The body may use values of the enclosing scope (lambda lifting turns them
    into closure captures). The block arguments are the parameters.

    Example::

        %f = graph.lambda (%x: tensor<4xf32>) -> tensor<4xf32> {
          graph.return %x : tensor<4xf32>
        }
    """

    name = "graph.lambda"

    body = region_def("single_block")
    result = result_def(FnType)

    traits = traits_def(Pure(), FuncLikeCallableInterface())

    def __init__(
        self,
        inputs: Sequence[Attribute],
        outputs: Sequence[Attribute],
        region: Region | None = None,
        device: DeviceAttr | None = None,
    ):
        if region is None:
            region = Region(Block(arg_types=inputs))
        super().__init__(
            regions=[region],
            result_types=[FnType(inputs, outputs)],
            properties={"device": device},
        )

    @property
    def fn_type(self) -> FnType:
        assert isinstance(self.result.type, FnType)
        return self.result.type

    @property
    def signature(self) -> tuple[tuple[Attribute, ...], tuple[Attribute, ...]]:
        return self.fn_type.inputs.data, self.fn_type.outputs.data

    def verify_(self) -> None:
        block_types = _region_signature(self.body)
        if block_types != self.signature[0]:
            raise VerifyException(
                f"block argument types {type_list(block_types)} do not match the parameter "
                f"types of {self.fn_type}"
            )
        verify_terminator(self.body.block, ReturnOp, "body")

    @classmethod
    def parse(cls, parser: Parser) -> LambdaOp:
        args = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_argument)
        outputs = _parse_optional_results(parser)
        attrs = parser.parse_optional_attr_dict_with_keyword()
        region = parser.parse_region(args)
        op = LambdaOp([a.type for a in args], outputs, region)
        _split_props(op, attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" (")
        printer.print_list(self.body.block.args, printer.print_block_argument)
        printer.print_string(")")
        _print_optional_results(printer, self.signature[1])
        _print_attrs_with_props(printer, self)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)


def _split_props(op: IRDLOperation, attrs: DictionaryAttr | dict[str, Attribute] | None) -> None:
    """Route a parsed attribute dictionary into the op's properties and attributes."""
    if attrs is None:
        return
    data = attrs.data if isinstance(attrs, DictionaryAttr) else attrs
    known = op.get_irdl_definition().properties
    for key, value in data.items():
        if key in known:
            op.properties[key] = value
        else:
            op.attributes[key] = value


def _print_attrs_with_props(printer: Printer, op: Operation) -> None:
    """Print `attributes {...}` holding both discardable attributes and properties."""
    printer.print_op_attributes(op.attributes | op.properties, print_keyword=True)


@irdl_op_definition
class ClosureOp(_CalleeOp):
    """A closure over a top-level `graph.func`: captured values come first in
    the callee's parameters; the result takes the remaining ones.

    Example: `%c = graph.closure @f(%w) : (tensor<4xf32>) -> !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>`
    """

    name = "graph.closure"

    captures = var_operand_def()
    result = result_def(FnType)

    traits = traits_def(Pure(), _CalleeSymbolUser())
    assembly_format = "$callee `(` $captures `)` attr-dict `:` functional-type($captures, $result)"

    def __init__(
        self,
        callee: str | SymbolRefAttr,
        captures: Sequence[SSAValue | Operation],
        fn_type: FnType,
        device: DeviceAttr | None = None,
    ):
        super().__init__(
            operands=[captures],
            result_types=[fn_type],
            properties={"callee": _symbol_ref(callee), "device": device},
        )

    def verify_symbol_uses(self) -> None:
        callee = self._resolve_callee()
        if callee is None:
            return
        assert isinstance(callee, FuncOp)
        if not isinstance(callee.parent_op(), ModuleOp):
            raise VerifyException(f"callee {self.callee} must be a top-level graph.func")
        inputs, outputs = callee.signature
        captured = self.captures.types
        if len(captured) > len(inputs):
            raise VerifyException(
                f"closure captures {len(captured)} values but callee {self.callee} has only "
                f"{len(inputs)} parameters"
            )
        for index, (got, want) in enumerate(zip(captured, inputs, strict=False)):
            if got != want:
                raise VerifyException(
                    f"captured value #{index} has type {got}, but callee parameter #{index} "
                    f"has type {want}"
                )
        _check_result_type(self.result.type, FnType(inputs[len(captured) :], outputs))


@irdl_op_definition
class InvokeOp(_DeviceOp):
    """Call a function value (`!graph.fn<...>`); `pure` marks the call effect-free.

    The pretty form gives the call's signature, from which the function
    value's type follows; the long form spells the function type as the
    first input (and is what is printed when the types disagree)::

        %r = graph.invoke %f(%x) : (tensor<4xf32>) -> tensor<4xf32>
        %r = graph.invoke %f(%x) : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, tensor<4xf32>) -> tensor<4xf32>
    """

    name = "graph.invoke"

    fn = operand_def(FnType)
    arguments = var_operand_def()
    res = var_result_def()
    pure = opt_prop_def(UnitAttr)

    traits = traits_def(_PureFlagEffects())

    def __init__(
        self,
        fn: SSAValue | Operation,
        arguments: Sequence[SSAValue | Operation],
        pure: bool = False,
        device: DeviceAttr | None = None,
    ):
        fn_type = SSAValue.get(fn).type
        assert isinstance(fn_type, FnType)
        super().__init__(
            operands=[fn, arguments],
            result_types=[fn_type.outputs.data],
            properties={"pure": _unit(pure), "device": device},
        )

    def verify_(self) -> None:
        fn_type = self.fn.type
        assert isinstance(fn_type, FnType)
        _check_signature("the invocation", self.arguments.types, fn_type.inputs.data, "operand")
        _check_signature("the invocation", self.res.types, fn_type.outputs.data, "result")

    @classmethod
    def parse(cls, parser: Parser) -> InvokeOp:
        fn = parser.parse_unresolved_operand()
        args = parser.parse_comma_separated_list(
            parser.Delimiter.PAREN, parser.parse_unresolved_operand
        )
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        pos = parser.pos
        signature = parser.parse_function_type()
        inputs, outputs = signature.inputs.data, signature.outputs.data
        if len(inputs) == len(args) + 1 and isinstance(inputs[0], FnType):
            fn_type, arg_types = inputs[0], inputs[1:]
        elif len(inputs) == len(args):
            fn_type, arg_types = FnType(inputs, outputs), inputs
        else:
            parser.raise_error(
                f"expected {len(args)} argument types (or the function type and "
                f"{len(args)} argument types), got {len(inputs)}",
                pos,
            )
        op = InvokeOp.create(
            operands=[
                parser.resolve_operand(fn, fn_type),
                *(parser.resolve_operand(a, t) for a, t in zip(args, arg_types, strict=True)),
            ],
            result_types=outputs,
        )
        _split_props(op, attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.fn)
        printer.print_string("(")
        printer.print_list(self.arguments, printer.print_operand)
        printer.print_string(")")
        printer.print_op_attributes(self.attributes | self.properties)
        inputs = list(self.arguments.types)
        if self.fn.type != FnType(inputs, self.res.types):
            inputs.insert(0, self.fn.type)
        printer.print_string(" : ")
        printer.print_attribute(FunctionType.from_lists(inputs, self.res.types))


# ---------------------------------------------------------------------------
# Dataflow blocks and constants
# ---------------------------------------------------------------------------


@irdl_op_definition
class DataflowOp(_DeviceOp):
    """A dataflow block: a single block of pure ops whose `graph.output`
    operands become the op's results (Relax's DataflowBlock).

    Example::

        %r = graph.dataflow -> tensor<4xf32> {
          %s = graph.exp %x : (tensor<4xf32>) -> tensor<4xf32>
          graph.output %s : tensor<4xf32>
        }
    """

    name = "graph.dataflow"

    body = region_def("single_block")
    res = var_result_def()

    traits = traits_def(RecursiveMemoryEffect())

    def __init__(
        self,
        result_types: Sequence[Attribute],
        region: Region | None = None,
        device: DeviceAttr | None = None,
    ):
        super().__init__(
            regions=[region if region is not None else Region(Block())],
            result_types=[result_types],
            properties={"device": device},
        )

    def verify_(self) -> None:
        block = self.body.block
        if block.args:
            raise VerifyException(
                f"body must have no block arguments, got {type_list(block.arg_types)}"
            )
        last = verify_terminator(block, OutputOp, "body")
        if tuple(last.outputs.types) != tuple(self.res.types):
            raise VerifyException(
                f"graph.output types {type_list(last.outputs.types)} do not match the "
                f"dataflow result types {type_list(self.res.types)}"
            )

    @classmethod
    def parse(cls, parser: Parser) -> DataflowOp:
        result_types = _parse_optional_results(parser)
        attrs = parser.parse_optional_attr_dict_with_keyword()
        region = parser.parse_region()
        op = DataflowOp(result_types, region)
        _split_props(op, attrs)
        return op

    def print(self, printer: Printer) -> None:
        _print_optional_results(printer, self.res.types)
        _print_attrs_with_props(printer, self)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)


@irdl_op_definition
class OutputOp(_DeviceOp):
    """Terminator of `graph.dataflow`: the values the block exposes.

    Example: `graph.output %a, %b : tensor<4xf32>, tensor<2xf32>`
    """

    name = "graph.output"

    outputs = var_operand_def()

    traits = traits_def(HasParent(DataflowOp), IsTerminator(), ReturnLike())
    assembly_format = "attr-dict ($outputs^ `:` type($outputs))?"

    def __init__(self, *values: SSAValue | Operation):
        super().__init__(operands=[values])


@irdl_op_definition
class ConstantOp(_DeviceOp):
    """A constant tensor; the result type is the type of `value`.

    Example: `%c = graph.constant dense<1.0> : tensor<4xf32>`
    """

    name = "graph.constant"

    value = prop_def(DenseIntOrFPElementsAttr)
    result = result_def(TensorType)

    traits = traits_def(Pure(), ConstantLike())

    def __init__(self, value: DenseIntOrFPElementsAttr, device: DeviceAttr | None = None):
        super().__init__(
            result_types=[value.get_type()], properties={"value": value, "device": device}
        )

    def verify_(self) -> None:
        _check_result_type(self.result.type, self.value.get_type())

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        attrs = parser.parse_optional_attr_dict()
        pos = parser.pos
        value = parser.parse_attribute()
        if not isinstance(value, DenseIntOrFPElementsAttr):
            parser.raise_error(
                "expected a dense elements attribute, e.g. dense<1.0> : tensor<4xf32>", pos
            )
        op = ConstantOp(value)
        _split_props(op, attrs)
        return op

    def print(self, printer: Printer) -> None:
        props = {k: v for k, v in self.properties.items() if k != "value"}
        printer.print_op_attributes(self.attributes | props)
        printer.print_string(" ")
        printer.print_attribute(self.value)


# ---------------------------------------------------------------------------
# Compute ops (trait GraphCompute)
# ---------------------------------------------------------------------------


COMPUTE_FORMAT = "operands attr-dict `:` functional-type(operands, results)"


class _ComputeOp(_DeviceOp):
    """Shared shape of compute ops: pure, `GraphCompute`, functional-type syntax."""

    traits = traits_def(Pure(), GraphCompute())
    assembly_format = COMPUTE_FORMAT

    def infer_result_type(self) -> Attribute:
        """The result type implied by the operands and properties."""
        raise NotImplementedError

    def verify_(self) -> None:
        for kind, values in (("operand", self.operands), ("result", self.results)):
            for index, val in enumerate(values):
                if isinstance(val.type, TensorType) and not val.type.has_static_shape():
                    raise VerifyException(
                        f"{kind} #{index} must be a statically shaped tensor, got {val.type}"
                    )
        try:
            inferred = self.infer_result_type()
        except ShapeError as err:
            raise VerifyException(str(err)) from None
        _check_result_type(self.results[0].type, inferred)


class _LhsRhsOp(_ComputeOp):
    """`lhs`, `rhs` of one element type; the result shape follows the shape rule
    `result_shape` (inferred by the builder when no result type is given)."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)

    @staticmethod
    def result_shape(lhs: Sequence[int], rhs: Sequence[int]) -> tuple[int, ...]:
        """The shape rule (raises `ShapeError`)."""
        raise NotImplementedError

    def __init__(
        self,
        lhs: SSAValue | Operation,
        rhs: SSAValue | Operation,
        result_type: Attribute | None = None,
        device: DeviceAttr | None = None,
    ):
        if result_type is None:
            lv, rv = SSAValue.get(lhs), SSAValue.get(rhs)
            shape = self.result_shape(tensor_shape(lv), tensor_shape(rv))
            result_type = _tensor(element_type(lv), shape)
        super().__init__(
            operands=[lhs, rhs], result_types=[result_type], properties={"device": device}
        )

    def infer_result_type(self) -> Attribute:
        elem = _check_same_element_type([self.lhs, self.rhs], ["lhs", "rhs"])
        return _tensor(elem, self.result_shape(tensor_shape(self.lhs), tensor_shape(self.rhs)))


class _BinaryOp(_LhsRhsOp):
    """Elementwise binary op with NumPy broadcasting; operands share an element type."""

    result_shape = staticmethod(broadcast_shapes)


@irdl_op_definition
class AddOp(_BinaryOp):
    """Elementwise `lhs + rhs` with NumPy broadcasting."""

    name = "graph.add"


@irdl_op_definition
class SubOp(_BinaryOp):
    """Elementwise `lhs - rhs` with NumPy broadcasting."""

    name = "graph.sub"


@irdl_op_definition
class MulOp(_BinaryOp):
    """Elementwise `lhs * rhs` with NumPy broadcasting."""

    name = "graph.mul"


@irdl_op_definition
class DivOp(_BinaryOp):
    """Elementwise `lhs / rhs` with NumPy broadcasting (integer division truncates)."""

    name = "graph.div"


@irdl_op_definition
class MaximumOp(_BinaryOp):
    """Elementwise maximum with NumPy broadcasting."""

    name = "graph.maximum"


@irdl_op_definition
class MinimumOp(_BinaryOp):
    """Elementwise minimum with NumPy broadcasting."""

    name = "graph.minimum"


class _OneInputOp(_ComputeOp):
    """A compute op over one tensor, `input`."""

    input = operand_def(TensorType)
    result = result_def(TensorType)


class _RetypeOp(_OneInputOp):
    """A one-input op whose result type is given (reshape, broadcast_to, cast);
    `infer_result_type` checks that it is compatible with the input."""

    def __init__(
        self,
        input: SSAValue | Operation,
        result_type: Attribute,
        device: DeviceAttr | None = None,
    ):
        super().__init__(
            operands=[input], result_types=[result_type], properties={"device": device}
        )


class _UnaryOp(_OneInputOp):
    """Elementwise unary op: the result has the operand's type."""

    FLOAT_ONLY: ClassVar[bool] = True

    def __init__(
        self,
        input: SSAValue | Operation,
        result_type: Attribute | None = None,
        device: DeviceAttr | None = None,
        **props: Attribute | None,
    ):
        if result_type is None:
            result_type = SSAValue.get(input).type
        super().__init__(
            operands=[input], result_types=[result_type], properties={"device": device, **props}
        )

    def infer_result_type(self) -> Attribute:
        if self.FLOAT_ONLY:
            _check_float(self.input)
        return self.input.type


@irdl_op_definition
class NegOp(_UnaryOp):
    """Elementwise negation."""

    name = "graph.neg"
    FLOAT_ONLY: ClassVar[bool] = False


@irdl_op_definition
class ExpOp(_UnaryOp):
    """Elementwise e**x."""

    name = "graph.exp"


@irdl_op_definition
class LogOp(_UnaryOp):
    """Elementwise natural logarithm."""

    name = "graph.log"


@irdl_op_definition
class SqrtOp(_UnaryOp):
    """Elementwise square root."""

    name = "graph.sqrt"


@irdl_op_definition
class RsqrtOp(_UnaryOp):
    """Elementwise 1 / sqrt(x)."""

    name = "graph.rsqrt"


@irdl_op_definition
class TanhOp(_UnaryOp):
    """Elementwise hyperbolic tangent."""

    name = "graph.tanh"


@irdl_op_definition
class SigmoidOp(_UnaryOp):
    """Elementwise 1 / (1 + e**-x)."""

    name = "graph.sigmoid"


@irdl_op_definition
class ErfOp(_UnaryOp):
    """Elementwise Gauss error function."""

    name = "graph.erf"


@irdl_op_definition
class ReluOp(_UnaryOp):
    """Elementwise max(x, 0)."""

    name = "graph.relu"
    FLOAT_ONLY: ClassVar[bool] = False


GELU_APPROXIMATIONS = ("none", "tanh")


@irdl_op_definition
class GeluOp(_UnaryOp):
    """GELU: x * Phi(x) with `approximate = "none"` (erf, default) or `"tanh"`."""

    name = "graph.gelu"

    approximate = opt_prop_def(StringAttr)

    def __init__(
        self,
        input: SSAValue | Operation,
        approximate: str | None = None,
        device: DeviceAttr | None = None,
    ):
        approx = StringAttr(approximate) if approximate is not None else None
        super().__init__(input, device=device, approximate=approx)

    @property
    def approximation(self) -> str:
        return self.approximate.data if self.approximate is not None else "none"

    def infer_result_type(self) -> Attribute:
        if self.approximation not in GELU_APPROXIMATIONS:
            raise ShapeError(f'approximate must be "none" or "tanh", got "{self.approximation}"')
        return super().infer_result_type()


@irdl_op_definition
class MatmulOp(_LhsRhsOp):
    """Matrix product with `numpy.matmul` semantics (batched, 1-D promotion,
    broadcast batch dimensions)."""

    name = "graph.matmul"

    result_shape = staticmethod(matmul_result_shape)


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


class _Pool2dOp(_Window2dOp, _OneInputOp):
    """2-D pooling over an NCHW tensor: `kernel`, `strides` (default 1), `padding` (default 0)."""

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
    """Mean over H and W of an NCHW tensor: N x C x 1 x 1."""

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
            result_type = _tensor(element_type(value), (*shape[:2], 1, 1))
        super().__init__(
            operands=[input], result_types=[result_type], properties={"device": device}
        )

    def infer_result_type(self) -> Attribute:
        shape = tensor_shape(self.input)
        if len(shape) != 4:
            raise ShapeError(f"expected a 4-D NCHW input, got {shape_str(shape)}")
        return _tensor(element_type(self.input), (*shape[:2], 1, 1))


def _axis(attr: IntegerAttr | None, default: int) -> int:
    return attr.value.data if attr is not None else default


def _axis_value(attr: IntegerAttr | None, default: int, operand: SSAValue) -> int:
    """The optional `axis` property (else `default`), normalized for `operand`'s rank."""
    return normalize_axis(_axis(attr, default), len(tensor_shape(operand)))


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


class _ReduceOp(_OneInputOp):
    """Reduction over `axes` (absent: all axes; negative allowed); `keepdims` keeps them as 1."""

    axes = opt_prop_def(DenseArrayBase.constr(i64))
    keepdims = opt_prop_def(UnitAttr)

    def __init__(
        self,
        input: SSAValue | Operation,
        axes: Sequence[int] | None = None,
        keepdims: bool = False,
        result_type: Attribute | None = None,
        device: DeviceAttr | None = None,
    ):
        value = SSAValue.get(input)
        if result_type is None:
            shape = reduce_result_shape(tensor_shape(value), axes, keepdims)
            result_type = _tensor(element_type(value), shape)
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={"axes": _i64_array(axes), "keepdims": _unit(keepdims), "device": device},
        )

    @property
    def axes_value(self) -> tuple[int, ...]:
        """The normalized reduced axes (every axis when `axes` is absent)."""
        rank = len(tensor_shape(self.input))
        if self.axes is None:
            return tuple(range(rank))
        return normalize_axes(_int_values(self.axes), rank)

    def infer_result_type(self) -> Attribute:
        axes = None if self.axes is None else _int_values(self.axes)
        shape = reduce_result_shape(tensor_shape(self.input), axes, self.keepdims is not None)
        return _tensor(element_type(self.input), shape)


@irdl_op_definition
class ReduceSumOp(_ReduceOp):
    """Sum over `axes`."""

    name = "graph.reduce_sum"


@irdl_op_definition
class ReduceMeanOp(_ReduceOp):
    """Mean over `axes`."""

    name = "graph.reduce_mean"


@irdl_op_definition
class ReduceMaxOp(_ReduceOp):
    """Maximum over `axes`. Over an empty axis it is an error, as in NumPy (no identity)."""

    name = "graph.reduce_max"

    def infer_result_type(self) -> Attribute:
        shape = tensor_shape(self.input)
        empty = [a for a in self.axes_value if shape[a] == 0]
        if empty:
            raise ShapeError(
                f"reduce_max over the empty axis {empty[0]} (extent 0) has no identity "
                "(NumPy raises too); reduce_sum gives 0 and reduce_mean NaN there"
            )
        return super().infer_result_type()


@irdl_op_definition
class ReshapeOp(_RetypeOp):
    """Reshape to the result type's shape (same element count and element type)."""

    name = "graph.reshape"

    def infer_result_type(self) -> Attribute:
        src, dst = tensor_shape(self.input), tensor_shape(self.result)
        if prod(src) != prod(dst):
            raise ShapeError(
                f"element count mismatch: operand {shape_str(src)} has {prod(src)} elements, "
                f"result {shape_str(dst)} has {prod(dst)}"
            )
        return _tensor(element_type(self.input), dst)


@irdl_op_definition
class TransposeOp(_OneInputOp):
    """Permute dimensions: result dim i is operand dim `perm[i]`."""

    name = "graph.transpose"

    perm = prop_def(DenseArrayBase.constr(i64))

    def __init__(
        self,
        input: SSAValue | Operation,
        perm: Sequence[int],
        device: DeviceAttr | None = None,
    ):
        value = SSAValue.get(input)
        result_type = _tensor(
            element_type(value), transpose_result_shape(tensor_shape(value), perm)
        )
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={"perm": _i64_array(perm), "device": device},
        )

    @property
    def perm_value(self) -> tuple[int, ...]:
        return _int_values(self.perm)

    def infer_result_type(self) -> Attribute:
        shape = transpose_result_shape(tensor_shape(self.input), self.perm_value)
        return _tensor(element_type(self.input), shape)


@irdl_op_definition
class ConcatOp(_ComputeOp):
    """Concatenate tensors along `axis` (default 0)."""

    name = "graph.concat"

    inputs = var_operand_def(TensorType)
    result = result_def(TensorType)
    axis = opt_prop_def(IntegerAttr[I64])

    def __init__(
        self,
        inputs: Sequence[SSAValue | Operation],
        axis: int | None = None,
        device: DeviceAttr | None = None,
    ):
        values = [SSAValue.get(v) for v in inputs]
        shape = concat_result_shape([tensor_shape(v) for v in values], axis or 0)
        super().__init__(
            operands=[values],
            result_types=[_tensor(element_type(values[0]), shape)],
            properties={"axis": _i64(axis), "device": device},
        )

    @property
    def axis_value(self) -> int:
        return _axis_value(self.axis, 0, self.inputs[0])

    def infer_result_type(self) -> Attribute:
        values = list(self.inputs)
        if not values:
            raise ShapeError("concat needs at least one operand")
        elem = _check_same_element_type(values, [f"operand #{i}" for i in range(len(values))])
        shape = concat_result_shape([tensor_shape(v) for v in values], _axis(self.axis, 0))
        return _tensor(elem, shape)


@irdl_op_definition
class BroadcastToOp(_RetypeOp):
    """Broadcast (NumPy rules) to the result type's shape."""

    name = "graph.broadcast_to"

    def infer_result_type(self) -> Attribute:
        shape = broadcast_to_shape(tensor_shape(self.input), tensor_shape(self.result))
        return _tensor(element_type(self.input), shape)


@irdl_op_definition
class CastOp(_RetypeOp):
    """Element type conversion to the result type's element type (NumPy `astype`)."""

    name = "graph.cast"

    def infer_result_type(self) -> Attribute:
        src, dst = tensor_shape(self.input), tensor_shape(self.result)
        if src != dst:
            raise ShapeError(
                f"cast must keep the shape: operand {shape_str(src)}, result {shape_str(dst)}"
            )
        return self.result.type


@irdl_op_definition
class LayoutTransformOp(_OneInputOp):
    """Move a tensor into the physical layout of `constraint` (`#lamina.constraint`).

    Element `x[i]` goes to `result[MAP(i)]`. The result shape follows the map
    (`layout_transform_shape`: `e mod m` → m, `e floordiv m` → ⌈extent(e)/m⌉);
    slots no element reaches hold PAD (or are unspecified for `#lamina.undef`).
    The map must be injective on the operand. With `crop` (the inverse of a
    padded layout) the declared result may be smaller than the map's image:
    elements whose image falls outside it (the padding) are dropped.
    """

    name = "graph.layout_transform"

    constraint = prop_def(ConstraintAttr)
    crop = opt_prop_def(UnitAttr)

    def __init__(
        self,
        input: SSAValue | Operation,
        constraint: ConstraintAttr,
        device: DeviceAttr | None = None,
        result_type: Attribute | None = None,
    ):
        value = SSAValue.get(input)
        if result_type is None:
            shape = layout_transform_shape(tensor_shape(value), constraint.index_map.data)
            result_type = _tensor(element_type(value), shape)
        image = layout_transform_shape(tensor_shape(value), constraint.index_map.data)
        assert isinstance(result_type, TensorType)
        crop = tuple(result_type.get_shape()) != image
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={"constraint": constraint, "device": device, "crop": _unit(crop)},
        )

    def infer_result_type(self) -> Attribute:
        elem = element_type(self.input)
        pad = self.constraint.pad
        if isinstance(pad, FloatAttr | IntegerAttr) and pad.type != elem:
            raise ShapeError(f"pad value type {pad.type} does not match the element type {elem}")
        operand = tensor_shape(self.input)
        index_map = self.constraint.index_map.data
        shape = layout_transform_shape(operand, index_map)
        if not is_injective(index_map, operand):
            raise ShapeError(
                f"constraint map {index_map} is not injective on the operand shape "
                f"{list(operand)} (two elements would share a slot)"
            )
        got = tensor_shape(self.result)
        if self.crop is not None and len(got) == len(shape):
            if any(g > s for g, s in zip(got, shape, strict=True)):
                raise ShapeError(
                    f"cropped result shape {list(got)} exceeds the image {list(shape)} of the map"
                )
            return self.result.type
        if self.crop is None and len(got) == len(shape) and tuple(got) != shape:
            if all(g <= s for g, s in zip(got, shape, strict=True)):
                raise ShapeError(
                    f"result shape {list(got)} is smaller than the map's image {list(shape)}: "
                    "it would lose elements (mark the op `crop` to drop the padding)"
                )
        logical = self.constraint.logical_shape
        if logical is not None and logical != tuple(operand):
            raise ShapeError(
                f"constraint logical shape {list(logical)} does not match the operand shape "
                f"{list(operand)}"
            )
        return _tensor(elem, shape)


# ---------------------------------------------------------------------------
# Devices
# ---------------------------------------------------------------------------


class _SameTypeOp(IRDLOperation):
    """tensor -> tensor of the same type."""

    input = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = COMPUTE_FORMAT

    def verify_(self) -> None:
        _check_result_type(self.result.type, self.input.type)


@irdl_op_definition
class OnDeviceOp(_SameTypeOp):
    """The value is produced on / lives on `device` (a constraint for plan-devices).

    Example: `%y = graph.on_device %x {device = #lamina.device<"gpu", 0>} : (tensor<4xf32>) -> tensor<4xf32>`
    """

    name = "graph.on_device"

    device = prop_def(DeviceAttr)

    def __init__(self, input: SSAValue | Operation, device: DeviceAttr):
        super().__init__(
            operands=[input], result_types=[SSAValue.get(input).type], properties={"device": device}
        )


@irdl_op_definition
class DeviceCopyOp(_SameTypeOp):
    """Explicit copy of a tensor from device `src` to device `dst`."""

    name = "graph.device_copy"

    src = prop_def(DeviceAttr)
    dst = prop_def(DeviceAttr)
    device = opt_prop_def(DeviceAttr)
    """Where the copy's result lives; when present it must equal `dst`."""

    def __init__(self, input: SSAValue | Operation, src: DeviceAttr, dst: DeviceAttr):
        super().__init__(
            operands=[input],
            result_types=[SSAValue.get(input).type],
            properties={"src": src, "dst": dst},
        )

    def verify_(self) -> None:
        super().verify_()
        if self.device is not None and self.device != self.dst:
            raise VerifyException(
                f"device {attr_syntax(self.device)} of the copy's result does not match its "
                f"dst {attr_syntax(self.dst)}"
            )


# ---------------------------------------------------------------------------
# Calls into lower levels (destination-passing style)
# ---------------------------------------------------------------------------


def _same_data_types(got: Sequence[Attribute], expected: Sequence[Attribute]) -> bool:
    """Tensors/memrefs correspond when shapes and element types agree (other types: equal)."""
    if len(got) != len(expected):
        return False
    for a, b in zip(got, expected, strict=True):
        if isinstance(a, ShapedType) and isinstance(b, ShapedType):
            if a.get_shape() != b.get_shape() or a.get_element_type() != b.get_element_type():
                return False
        elif a != b:
            return False
    return True


class _KernelCallOp(_CallOp):
    """DPS call of a lower-level function: tensor args -> freshly allocated tensors."""

    arguments = var_operand_def(TensorType)
    res = var_result_def(TensorType)

    traits = traits_def(_CalleeSymbolUser())

    def verify_symbol_uses(self) -> None:
        callee = self._resolve_callee()
        if callee is None:
            return
        ftype = callee.properties.get("function_type")
        if isinstance(ftype, FunctionType):
            self._check_kernel_signature(ftype.inputs.data, ftype.outputs.data)

    def _check_kernel_signature(
        self, params: Sequence[Attribute], results: Sequence[Attribute]
    ) -> None:
        """The callee either takes the arguments and returns the results, or
        (destination-passing style) takes the arguments followed by one output
        per result and returns nothing. Buffers match tensors by shape and
        element type."""
        args, outs = list(self.arguments.types), list(self.res.types)
        direct = _same_data_types(params, args) and _same_data_types(results, outs)
        dps = not results and _same_data_types(params, args + outs)
        if not (direct or dps):
            raise VerifyException(
                f"call types {type_list(args)} -> {type_list(outs)} do not match callee "
                f"{self.callee} of type {type_list(params)} -> {type_list(results)} (expected "
                f"the same arguments and results, or destination-passing style: arguments "
                f"then outputs, no results)"
            )


@irdl_op_definition
class CallTeOp(_KernelCallOp):
    """Call a `te.func` (call_tir analog before lowering).

    Example: `%r = graph.call_te @add_kernel(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>`
    """

    name = "graph.call_te"
    CALLEE_OP_NAME: ClassVar[str] = "te.func"


@irdl_op_definition
class CallLoopOp(_KernelCallOp):
    """Call a `loop.func` (call_tir)."""

    name = "graph.call_loop"
    CALLEE_OP_NAME: ClassVar[str] = "loop.func"


@irdl_op_definition
class CallExternOp(_DeviceOp):
    """Call an external function by name (call_dps_packed); `pure` marks it effect-free.

    Example: `%r = graph.call_extern "cblas_sgemm"(%a, %b) {pure} : (...) -> tensor<4x4xf32>`
    """

    name = "graph.call_extern"

    arguments = var_operand_def(TensorType)
    res = var_result_def(TensorType)
    callee = prop_def(StringAttr)
    pure = opt_prop_def(UnitAttr)

    traits = traits_def(_PureFlagEffects())
    assembly_format = CALL_FORMAT

    def __init__(
        self,
        callee: str,
        arguments: Sequence[SSAValue | Operation],
        result_types: Sequence[Attribute],
        pure: bool = False,
        device: DeviceAttr | None = None,
    ):
        super().__init__(
            operands=[arguments],
            result_types=[result_types],
            properties={"callee": StringAttr(callee), "pure": _unit(pure), "device": device},
        )

    def verify_(self) -> None:
        if not self.callee.data:
            raise VerifyException("callee name must not be empty")


# ---------------------------------------------------------------------------
# Data-movement ops for imported models: gather, slice, where
# ---------------------------------------------------------------------------


def gather_result_shape(data: Sequence[int], indices: Sequence[int], axis: int) -> tuple[int, ...]:
    """`data.shape[:axis] + indices.shape + data.shape[axis + 1:]` (numpy `take`)."""
    axis = normalize_axis(axis, len(data))
    return (*data[:axis], *indices, *data[axis + 1 :])


def slice_result_shape(
    shape: Sequence[int], starts: Sequence[int], sizes: Sequence[int], steps: Sequence[int]
) -> tuple[int, ...]:
    """The shape of a strided window: `sizes`, checked to stay inside `shape`."""
    rank = len(shape)
    _check_length("starts", starts, [rank])
    _check_length("sizes", sizes, [rank])
    _check_length("steps", steps, [rank])
    for dim, (extent, start, size, step) in enumerate(
        zip(shape, starts, sizes, steps, strict=True)
    ):
        if step == 0:
            raise ShapeError(f"steps must be non-zero, got 0 in dim {dim}")
        if size < 0:
            raise ShapeError(f"sizes must be non-negative, got {size} in dim {dim}")
        last = start + (size - 1) * step
        if size > 0 and not (0 <= start < extent and 0 <= last < extent):
            raise ShapeError(
                f"dim {dim}: elements {start} to {last} (step {step}) leave the "
                f"operand extent {extent}"
            )
    return tuple(sizes)


@irdl_op_definition
class GatherOp(_ComputeOp):
    """Take elements along `axis` (default 0) at integer `indices` (numpy `take`,
    ONNX `Gather`): the result is `data.shape[:axis] + indices.shape +
    data.shape[axis+1:]`. A negative index counts from the end; an index out of
    range reads the nearest element (ONNX leaves it undefined), so a read never
    leaves the buffer.
    """

    name = "graph.gather"

    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    result = result_def(TensorType)
    axis = opt_prop_def(IntegerAttr[I64])

    def __init__(
        self,
        data: SSAValue | Operation,
        indices: SSAValue | Operation,
        axis: int | None = None,
        device: DeviceAttr | None = None,
    ):
        dv, iv = SSAValue.get(data), SSAValue.get(indices)
        shape = gather_result_shape(tensor_shape(dv), tensor_shape(iv), axis or 0)
        super().__init__(
            operands=[data, indices],
            result_types=[_tensor(element_type(dv), shape)],
            properties={"axis": _i64(axis), "device": device},
        )

    @property
    def axis_value(self) -> int:
        return _axis_value(self.axis, 0, self.data)

    def infer_result_type(self) -> Attribute:
        index_type = element_type(self.indices)
        if not isinstance(index_type, IntegerType) or index_type.width.data == 1:
            raise ShapeError(f"indices must have an integer element type, got {index_type}")
        shape = gather_result_shape(
            tensor_shape(self.data), tensor_shape(self.indices), _axis(self.axis, 0)
        )
        return _tensor(element_type(self.data), shape)


@irdl_op_definition
class SliceOp(_OneInputOp):
    """A strided window: `result[i] = input[starts + i * steps]` per dimension,
    with `sizes` elements along each (`array<i64>`s, one entry per dimension;
    steps may be negative). Every element read must lie inside the operand,
    so out-of-range ONNX/NumPy slice bounds are resolved by the builder."""

    name = "graph.slice"

    starts = prop_def(DenseArrayBase.constr(i64))
    sizes = prop_def(DenseArrayBase.constr(i64))
    steps = prop_def(DenseArrayBase.constr(i64))

    def __init__(
        self,
        input: SSAValue | Operation,
        starts: Sequence[int],
        sizes: Sequence[int],
        steps: Sequence[int] | None = None,
        device: DeviceAttr | None = None,
    ):
        value = SSAValue.get(input)
        steps = tuple(steps) if steps is not None else (1,) * len(sizes)
        shape = slice_result_shape(tensor_shape(value), starts, sizes, steps)
        super().__init__(
            operands=[input],
            result_types=[_tensor(element_type(value), shape)],
            properties={
                "starts": _i64_array(starts),
                "sizes": _i64_array(sizes),
                "steps": _i64_array(steps),
                "device": device,
            },
        )

    @property
    def starts_value(self) -> tuple[int, ...]:
        return _int_values(self.starts)

    @property
    def steps_value(self) -> tuple[int, ...]:
        return _int_values(self.steps)

    def infer_result_type(self) -> Attribute:
        shape = slice_result_shape(
            tensor_shape(self.input),
            self.starts_value,
            _int_values(self.sizes),
            self.steps_value,
        )
        return _tensor(element_type(self.input), shape)


@irdl_op_definition
class WhereOp(_ComputeOp):
    """Elementwise `condition ? lhs : rhs` (an `i1` condition) with NumPy
    broadcasting of all three operands (numpy `where`, ONNX `Where`)."""

    name = "graph.where"

    condition = operand_def(TensorType)
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)

    def __init__(
        self,
        condition: SSAValue | Operation,
        lhs: SSAValue | Operation,
        rhs: SSAValue | Operation,
        device: DeviceAttr | None = None,
    ):
        cv, lv, rv = (SSAValue.get(v) for v in (condition, lhs, rhs))
        shape = broadcast_shapes(tensor_shape(cv), tensor_shape(lv), tensor_shape(rv))
        super().__init__(
            operands=[condition, lhs, rhs],
            result_types=[_tensor(element_type(lv), shape)],
            properties={"device": device},
        )

    def infer_result_type(self) -> Attribute:
        cond = element_type(self.condition)
        if cond != i1:
            raise ShapeError(f"condition must have element type i1, got {cond}")
        elem = _check_same_element_type([self.lhs, self.rhs], ["lhs", "rhs"])
        shape = broadcast_shapes(
            tensor_shape(self.condition), tensor_shape(self.lhs), tensor_shape(self.rhs)
        )
        return _tensor(elem, shape)


COMPUTE_OPS: tuple[type[IRDLOperation], ...] = (
    AddOp, SubOp, MulOp, DivOp, MaximumOp, MinimumOp,
    NegOp, ExpOp, LogOp, SqrtOp, RsqrtOp, TanhOp, SigmoidOp, ErfOp, ReluOp, GeluOp,
    MatmulOp, Conv2dOp, MaxPool2dOp, AvgPool2dOp, GlobalAvgPool2dOp, SoftmaxOp, LayerNormOp,
    ReduceSumOp, ReduceMeanOp, ReduceMaxOp,
    ReshapeOp, TransposeOp, ConcatOp, BroadcastToOp, CastOp, LayoutTransformOp,
    GatherOp, SliceOp, WhereOp,
)  # fmt: skip
"""Every op with the `GraphCompute` trait."""

BINARY_OPS = (AddOp, SubOp, MulOp, DivOp, MaximumOp, MinimumOp)
UNARY_OPS = (NegOp, ExpOp, LogOp, SqrtOp, RsqrtOp, TanhOp, SigmoidOp, ErfOp, ReluOp, GeluOp)

Graph = Dialect(
    "graph",
    [
        FuncOp, ReturnOp, CallOp, LambdaOp, ClosureOp, InvokeOp, DataflowOp, OutputOp,
        ConstantOp, OnDeviceOp, DeviceCopyOp, CallTeOp, CallLoopOp, CallExternOp,
        *COMPUTE_OPS,
    ],
    [FnType],
)  # fmt: skip
"""The graph dialect (docs/design.md §3.2)."""
