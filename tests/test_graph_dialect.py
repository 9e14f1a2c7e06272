"""The graph dialect from Python: shape rules, builders with result-type
inference, traits, and the messages `verify()` reports.

The lit tests (tests/filecheck/dialects/graph) cover the textual forms; these
tests cover what passes use: the module-level shape helpers (checked against
NumPy and brute force), constructors that infer result types, and verifier
errors on hand-built ops.
"""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import (
    AffineMapAttr,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    FunctionType,
    ModuleOp,
    TensorType,
    f32,
    f64,
    i32,
)
from xdsl.ir import Block, Region
from xdsl.ir.affine import AffineBinaryOpExpr, AffineBinaryOpKind, AffineExpr, AffineMap
from xdsl.traits import Pure, get_effects
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.test_value import create_ssa_value

from lamina.core.context import make_context
from lamina.core.diagnostics import parse_module, verify_module
from lamina.dialects import graph
from lamina.dialects.lamina import ConstraintAttr, DeviceAttr, UndefAttr


def tensor(*shape: int, elem=f32) -> TensorType:
    return TensorType(elem, list(shape))


def value(*shape: int, elem=f32):
    return create_ssa_value(tensor(*shape, elem=elem))


# ---------------------------------------------------------------------------
# Shape helpers
# ---------------------------------------------------------------------------

small_shapes = st.lists(st.integers(1, 4), min_size=0, max_size=4).map(tuple)


@settings(max_examples=200, deadline=None)
@given(st.lists(small_shapes, min_size=1, max_size=3))
def test_broadcast_shapes_agrees_with_numpy(shapes):
    try:
        expected = np.broadcast_shapes(*shapes)
    except ValueError:
        with pytest.raises(graph.ShapeError, match="not broadcast-compatible"):
            graph.broadcast_shapes(*shapes)
        return
    assert graph.broadcast_shapes(*shapes) == expected


def test_broadcast_shapes_message_names_the_dimension():
    with pytest.raises(graph.ShapeError) as err:
        graph.broadcast_shapes((2, 3), (4, 3))
    assert str(err.value) == "operands are not broadcast-compatible: 2x3 vs 4x3 (dim 0: 2 vs 4)"


@settings(max_examples=200, deadline=None)
@given(small_shapes.filter(bool), small_shapes.filter(bool))
def test_matmul_result_shape_agrees_with_numpy(a, b):
    try:
        expected = np.matmul(np.zeros(a), np.zeros(b)).shape
    except ValueError:
        with pytest.raises(graph.ShapeError):
            graph.matmul_result_shape(a, b)
        return
    assert graph.matmul_result_shape(a, b) == expected


def test_matmul_contraction_message():
    with pytest.raises(graph.ShapeError, match="lhs has K = 4, rhs has K = 5"):
        graph.matmul_result_shape((2, 4), (5, 3))


def _conv_reference_shape(data, weight, strides, padding, dilation, groups):
    """Output shape by counting valid window positions (independent of the formula)."""
    n, c, h, w = data
    o, _, kh, kw = weight
    top, left, bottom, right = padding

    def count(size, k, stride, pad, dil):
        extent = dil * (k - 1) + 1
        return len(range(0, size + pad - extent + 1, stride))

    return (
        n,
        o,
        count(h, kh, strides[0], top + bottom, dilation[0]),
        count(w, kw, strides[1], left + right, dilation[1]),
    )


@pytest.mark.parametrize(
    "data, weight, strides, padding, dilation, groups",
    [
        ((1, 3, 32, 32), (16, 3, 3, 3), (1, 1), (0, 0, 0, 0), (1, 1), 1),
        ((1, 3, 32, 32), (16, 3, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1),
        ((2, 16, 15, 17), (16, 4, 3, 5), (2, 3), (1, 2, 0, 1), (2, 1), 4),
        ((1, 8, 7, 7), (8, 1, 3, 3), (1, 1), (1, 1, 1, 1), (3, 3), 8),
    ],
)
def test_conv2d_output_shape(data, weight, strides, padding, dilation, groups):
    got = graph.conv2d_output_shape(data, weight, strides, padding, dilation, groups)
    assert got == _conv_reference_shape(data, weight, strides, padding, dilation, groups)


def test_conv2d_output_shape_nhwc_hwio():
    got = graph.conv2d_output_shape(
        (2, 9, 9, 4), (3, 3, 4, 8), (2, 2), data_layout="NHWC", kernel_layout="HWIO"
    )
    assert got == (2, 4, 4, 8)


def test_conv2d_symmetric_two_entry_padding():
    assert graph.normalize_padding2d((1, 2)) == (1, 2, 1, 2)
    assert graph.conv2d_output_shape((1, 1, 5, 5), (1, 1, 3, 3), padding=(1, 2)) == (1, 1, 5, 7)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (
            {"groups": 2},
            re.escape("input channels 3 do not match groups * weight input channels = 2 * 3 = 6"),
        ),
        ({"strides": (0, 1)}, r"strides must be positive, got \[0, 1\]"),
        ({"dilation": (1, 0)}, r"dilation must be positive, got \[1, 0\]"),
        ({"padding": (0, -1, 0, 0)}, "padding must be non-negative"),
        ({"data_layout": "NCWH2"}, "data_layout must be a permutation"),
    ],
)
def test_conv2d_output_shape_errors(kwargs, message):
    with pytest.raises(graph.ShapeError, match=message):
        graph.conv2d_output_shape((1, 3, 8, 8), (4, 3, 3, 3), **kwargs)


def test_pool2d_output_shape():
    assert graph.pool2d_output_shape((1, 8, 15, 15), (3, 3), (2, 2), (1, 1, 1, 1)) == (1, 8, 8, 8)
    assert graph.pool2d_output_shape((1, 8, 15, 15), (2, 3)) == (1, 8, 14, 13)
    with pytest.raises(graph.ShapeError, match="left padding 3 must be smaller than the kernel"):
        graph.pool2d_output_shape((1, 1, 8, 8), (3, 3), padding=(0, 3, 0, 0))


@pytest.mark.parametrize("axis, rank, expected", [(0, 3, 0), (-1, 3, 2), (-3, 3, 0), (2, 3, 2)])
def test_normalize_axis(axis, rank, expected):
    assert graph.normalize_axis(axis, rank) == expected


def test_normalize_axis_out_of_range():
    with pytest.raises(graph.ShapeError) as err:
        graph.normalize_axis(3, 2)
    assert str(err.value) == "axis 3 is out of range for rank 2 (expected -2 <= axis < 2)"


@settings(max_examples=100, deadline=None)
@given(
    small_shapes.filter(bool),
    st.one_of(st.none(), st.lists(st.integers(-4, 3), max_size=3)),
    st.booleans(),
)
def test_reduce_result_shape_agrees_with_numpy(shape, axes, keepdims):
    np_axes = None if axes is None else tuple(axes)
    try:
        expected = np.sum(np.zeros(shape), axis=np_axes, keepdims=keepdims).shape
    except (ValueError, np.exceptions.AxisError):
        with pytest.raises(graph.ShapeError):
            graph.reduce_result_shape(shape, axes, keepdims)
        return
    assert graph.reduce_result_shape(shape, axes, keepdims) == expected


def _brute_force_extent(shape, index_map: AffineMap):
    """The padding rule of docs/layouts.md by enumeration: `e mod m` → m, `e floordiv m` →
    ⌈(max e + 1)/m⌉, anything else → max + 1."""
    domain = list(itertools.product(*(range(d) for d in shape)))

    def extent(expr):
        if isinstance(expr, AffineBinaryOpExpr) and expr.kind == AffineBinaryOpKind.Mod:
            return expr.rhs.value
        if isinstance(expr, AffineBinaryOpExpr) and expr.kind == AffineBinaryOpKind.FloorDiv:
            inner = AffineMap(index_map.num_dims, 0, (expr.lhs,))
            return -(-(max(inner.eval(p, [])[0] for p in domain) + 1) // expr.rhs.value)
        single = AffineMap(index_map.num_dims, 0, (expr,))
        return max(single.eval(p, [])[0] for p in domain) + 1

    return tuple(extent(e) for e in index_map.results)


@settings(max_examples=100, deadline=None)
@given(
    st.integers(1, 24),
    st.integers(1, 6),
    st.integers(1, 9),
    st.integers(0, 3),
    st.integers(1, 4),
)
def test_layout_transform_shape_matches_brute_force(n, m, block, offset, scale):
    d0, d1 = AffineExpr.dimension(0), AffineExpr.dimension(1)
    index_map = AffineMap(
        2,
        0,
        (
            (d0 * scale + offset) // block,
            d1,
            (d0 + d1 * scale + offset) % block,
            (d0 + offset).ceil_div(block),
        ),
    )
    assert graph.layout_transform_shape((n, m), index_map) == _brute_force_extent((n, m), index_map)


def test_layout_transform_shape_blocked_channels():
    d = [AffineExpr.dimension(i) for i in range(4)]
    index_map = AffineMap(4, 0, (d[0], d[1] // 8, d[2], d[3], d[1] % 8))
    assert graph.layout_transform_shape((1, 20, 7, 7), index_map) == (1, 3, 7, 7, 8)
    # 3 channels pad up to one block of 8 (docs/layouts.md), not the tight 1x3.
    assert graph.layout_transform_shape((1, 3, 7, 7), index_map) == (1, 1, 7, 7, 8)


# ---------------------------------------------------------------------------
# Builders infer result types
# ---------------------------------------------------------------------------


def test_binary_constructor_broadcasts():
    op = graph.AddOp(value(2, 1, 3), value(4, 1))
    assert op.result.type == tensor(2, 4, 3)
    op.verify()


def test_binary_constructor_rejects_incompatible_shapes():
    with pytest.raises(graph.ShapeError, match="dim 0: 2 vs 4"):
        graph.MulOp(value(2, 3), value(4, 3))


@pytest.mark.parametrize("op_class", graph.UNARY_OPS)
def test_unary_constructors_keep_the_type(op_class):
    op = op_class(value(3, 5))
    assert op.result.type == tensor(3, 5)
    op.verify()


@pytest.mark.parametrize(
    "lhs, rhs, expected",
    [((4, 8), (8, 5), (4, 5)), ((8,), (8, 5), (5,)), ((3, 1, 4, 8), (2, 8, 5), (3, 2, 4, 5))],
)
def test_matmul_constructor(lhs, rhs, expected):
    op = graph.MatmulOp(value(*lhs), value(*rhs))
    assert op.result.type == tensor(*expected)
    op.verify()


def test_conv2d_constructor_and_accessors():
    op = graph.Conv2dOp(
        value(1, 16, 16, 16),
        value(16, 4, 3, 3),
        strides=(2, 2),
        padding=(1, 1, 1, 1),
        groups=4,
    )
    assert op.result.type == tensor(1, 16, 8, 8)
    assert op.strides_value == (2, 2)
    assert op.padding_value == (1, 1, 1, 1)
    assert op.dilation_value == (1, 1)
    assert op.groups_value == 4
    assert (op.data_layout_value, op.kernel_layout_value) == ("NCHW", "OIHW")
    op.verify()


def test_conv2d_defaults_when_attributes_are_absent():
    op = graph.Conv2dOp(value(1, 3, 8, 8), value(4, 3, 3, 3))
    assert op.strides is None and op.padding is None and op.groups is None
    assert op.result.type == tensor(1, 4, 6, 6)


def test_pool_constructors():
    mp = graph.MaxPool2dOp(value(1, 8, 15, 15), (3, 3), strides=(2, 2), padding=(1, 1, 1, 1))
    ap = graph.AvgPool2dOp(value(1, 8, 15, 15), (2, 2), strides=(2, 2))
    gp = graph.GlobalAvgPool2dOp(value(1, 8, 15, 15))
    assert mp.result.type == tensor(1, 8, 8, 8)
    assert ap.result.type == tensor(1, 8, 7, 7)
    assert gp.result.type == tensor(1, 8, 1, 1)
    for op in (mp, ap, gp):
        op.verify()


def test_normalization_constructors():
    sm = graph.SoftmaxOp(value(2, 3), axis=-1)
    assert sm.result.type == tensor(2, 3) and sm.axis_value == 1
    ln = graph.LayerNormOp(value(2, 3, 4), value(3, 4), value(3, 4), axis=1, epsilon=1e-6)
    assert ln.result.type == tensor(2, 3, 4)
    assert ln.axis_value == 1 and ln.epsilon_value == pytest.approx(1e-6)
    assert isinstance(ln.epsilon, FloatAttr) and ln.epsilon.type == f32
    assert graph.LayerNormOp(value(2, 4), value(4), value(4)).epsilon_value == 1e-5
    gelu = graph.GeluOp(value(4), approximate="tanh")
    assert gelu.approximation == "tanh"
    assert graph.GeluOp(value(4)).approximation == "none"
    for op in (sm, ln, gelu):
        op.verify()


def test_reduction_constructors():
    op = graph.ReduceSumOp(value(2, 3, 4), axes=(0, -1), keepdims=True)
    assert op.result.type == tensor(1, 3, 1)
    assert op.axes_value == (0, 2)
    all_axes = graph.ReduceMaxOp(value(2, 3, 4))
    assert all_axes.result.type == tensor()
    assert all_axes.axes_value == (0, 1, 2)
    mean = graph.ReduceMeanOp(value(2, 3, 4), axes=(1,))
    assert mean.result.type == tensor(2, 4)
    for o in (op, all_axes, mean):
        o.verify()


def test_shape_op_constructors():
    t = graph.TransposeOp(value(2, 3, 4), (2, 0, 1))
    assert t.result.type == tensor(4, 2, 3) and t.perm_value == (2, 0, 1)
    c = graph.ConcatOp([value(2, 3), value(2, 5)], axis=-1)
    assert c.result.type == tensor(2, 8) and c.axis_value == 1
    r = graph.ReshapeOp(value(2, 3, 4), tensor(6, 4))
    b = graph.BroadcastToOp(value(3), tensor(2, 3))
    k = graph.CastOp(value(2, 3), tensor(2, 3, elem=i32))
    for op in (t, c, r, b, k):
        op.verify()


def test_layout_transform_constructor():
    d0 = AffineExpr.dimension(0)
    constraint = ConstraintAttr(
        AffineMapAttr(AffineMap(1, 0, (d0 // 8, d0 % 8))), FloatAttr(0.0, f32)
    )
    op = graph.LayoutTransformOp(value(20), constraint)
    assert op.result.type == tensor(3, 8)
    op.verify()


def test_constant_constructor():
    dense = DenseIntOrFPElementsAttr.from_list(tensor(2, 2), [1.0, 2.0, 3.0, 4.0])
    op = graph.ConstantOp(dense)
    assert op.result.type == tensor(2, 2)
    op.verify()


# ---------------------------------------------------------------------------
# Verifier messages on hand-built ops
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "build, message",
    [
        (
            lambda: graph.AddOp(value(2, 3), value(3), result_type=tensor(2, 4)),
            "result type tensor<2x4xf32> does not match inferred tensor<2x3xf32>",
        ),
        (
            lambda: graph.SubOp(value(3), value(3, elem=f64), result_type=tensor(3)),
            "element type mismatch: lhs has f32, rhs has f64",
        ),
        (
            lambda: graph.MatmulOp(value(2, 4), value(5, 3), result_type=tensor(2, 3)),
            "contraction dimension mismatch: lhs has K = 4, rhs has K = 5",
        ),
        (
            lambda: graph.ExpOp(value(3, elem=i32)),
            "expected a floating-point element type, got i32",
        ),
        (
            lambda: graph.SoftmaxOp(value(2, 3), axis=2),
            r"axis 2 is out of range for rank 2 \(expected -2 <= axis < 2\)",
        ),
        (
            lambda: graph.LayerNormOp(value(2, 3, 4), value(4), value(4), axis=1),
            r"gamma shape 4 does not match the normalized shape 3x4 \(x.shape\[1:\]\)",
        ),
        (
            lambda: graph.ReshapeOp(value(2, 3, 4), tensor(4, 5)),
            "element count mismatch: operand 2x3x4 has 24 elements, result 4x5 has 20",
        ),
        (
            lambda: graph.BroadcastToOp(value(2, 3), tensor(4, 3)),
            r"operand shape 2x3 cannot be broadcast to 4x3 \(dim 0: 2 vs 4\)",
        ),
        (
            lambda: graph.CastOp(value(2, 3), tensor(3, 2, elem=i32)),
            "cast must keep the shape: operand 2x3, result 3x2",
        ),
        (
            lambda: graph.Conv2dOp(
                value(1, 8, 8, 8), value(4, 3, 3, 3), groups=2, result_type=tensor(1, 4, 6, 6)
            ),
            r"input channels 8 do not match groups \* weight input channels = 2 \* 3 = 6",
        ),
        (
            lambda: graph.MaxPool2dOp(value(1, 1, 8, 8), (2, 2), result_type=tensor(1, 1, 4, 4)),
            "result type tensor<1x1x4x4xf32> does not match inferred tensor<1x1x7x7xf32>",
        ),
        (
            lambda: graph.OnDeviceOp.create(
                operands=[value(4)],
                result_types=[tensor(5)],
                properties={"device": DeviceAttr("gpu")},
            ),
            "result type tensor<5xf32> does not match inferred tensor<4xf32>",
        ),
    ],
)
def test_verify_messages(build, message):
    with pytest.raises(VerifyException, match=message):
        build().verify()


def test_messages_do_not_start_with_the_op_name():
    op = graph.AddOp(value(2, 3), value(3), result_type=tensor(2, 4))
    with pytest.raises(VerifyException) as err:
        op.verify()
    assert not str(err.value).startswith("'graph.add'")


# ---------------------------------------------------------------------------
# Functions, function values and traits
# ---------------------------------------------------------------------------


def _func_returning(name, arg_types, build_body, **kwargs):
    """A graph.func whose body is built by `build_body(args) -> list of ops` (last one's
    results are returned)."""
    func = graph.FuncOp(name, (arg_types, []), **kwargs)
    ops = build_body(func.args)
    results = ops[-1].results if ops else ()
    func.body.block.add_ops([*ops, graph.ReturnOp(*results)])
    func.update_function_type()
    return func


def test_func_helpers():
    func = _func_returning("f", [tensor(2, 3), tensor(3)], lambda a: [graph.AddOp(a[0], a[1])])
    assert func.function_type == FunctionType.from_lists([tensor(2, 3), tensor(3)], [tensor(2, 3)])
    assert isinstance(func.get_return_op(), graph.ReturnOp)
    assert func.is_pure
    assert not graph.FuncOp("g", ([], []), impure=True).is_pure
    assert graph.FuncOp("h", ([], []), force_pure=True).is_pure
    declaration = graph.FuncOp("ext", ([tensor(4)], [tensor(4)]), Region())
    assert declaration.is_declaration and declaration.get_return_op() is None
    func.verify()


def test_fn_type_prints_exactly():
    fn = graph.FnType([tensor(4)], [tensor(4)])
    assert str(fn) == "!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>"
    assert str(graph.FnType([], [])) == "!graph.fn<() -> ()>"
    assert str(graph.FnType([tensor(2)], [tensor(2), tensor(3)])) == (
        "!graph.fn<(tensor<2xf32>) -> (tensor<2xf32>, tensor<3xf32>)>"
    )


def test_module_with_call_closure_lambda_and_invoke_verifies():
    helper = _func_returning("helper", [tensor(4), tensor(4)], lambda a: [graph.AddOp(a[0], a[1])])

    def main_body(args):
        x = args[0]
        lam = graph.LambdaOp([tensor(4)], [tensor(4)])
        inner = graph.ReluOp(lam.body.block.args[0])
        lam.body.block.add_ops([inner, graph.ReturnOp(inner)])
        closure = graph.ClosureOp("helper", [x], graph.FnType([tensor(4)], [tensor(4)]))
        invoke = graph.InvokeOp(lam, [x], pure=True)
        invoke2 = graph.InvokeOp(closure, [invoke.res[0]])
        call = graph.CallOp("helper", [invoke2.res[0], x], [tensor(4)])
        return [lam, closure, invoke, invoke2, call]

    main = _func_returning("main", [tensor(4)], main_body)
    module = ModuleOp([helper, main])
    verify_module(module)
    invoke = next(op for op in module.walk() if isinstance(op, graph.InvokeOp))
    assert invoke.res[0].type == tensor(4)


def test_call_effects_follow_the_callee():
    text = """
    graph.func @pure_f(%a: tensor<4xf32>) -> tensor<4xf32> {
      graph.return %a : tensor<4xf32>
    }
    graph.func @impure_f(%a: tensor<4xf32>) -> tensor<4xf32> attributes {impure} {
      graph.return %a : tensor<4xf32>
    }
    graph.func @main(%x: tensor<4xf32>, %f: !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>) {
      %0 = graph.call @pure_f(%x) : (tensor<4xf32>) -> tensor<4xf32>
      %1 = graph.call @impure_f(%x) : (tensor<4xf32>) -> tensor<4xf32>
      %2 = graph.invoke %f(%x) {pure} : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, tensor<4xf32>) -> tensor<4xf32>
      %3 = graph.invoke %f(%x) : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, tensor<4xf32>) -> tensor<4xf32>
      %4 = graph.call_extern "ext"(%x) {pure} : (tensor<4xf32>) -> tensor<4xf32>
      %5 = graph.call_extern "ext"(%x) : (tensor<4xf32>) -> tensor<4xf32>
      graph.return
    }
    """
    module = parse_module(make_context(), text, "effects.mlir")
    verify_module(module)
    main = module.body.block.last_op
    effects = [get_effects(op) for op in main.body.block.ops][:6]
    assert effects == [set(), None, set(), None, set(), None]


def test_compute_ops_have_the_graph_compute_trait_and_are_pure():
    for op_class in graph.COMPUTE_OPS:
        assert op_class.has_trait(graph.GraphCompute), op_class.name
        assert op_class.has_trait(Pure), op_class.name
    for op_class in (graph.CallOp, graph.InvokeOp, graph.DataflowOp, graph.OnDeviceOp):
        assert not op_class.has_trait(graph.GraphCompute), op_class.name


def test_every_design_op_is_registered():
    names = {op.name for op in graph.Graph.operations}
    expected = (
        "func return call lambda closure invoke dataflow output constant layout_transform "
        "on_device device_copy call_te call_loop call_extern add sub mul div maximum minimum "
        "neg exp log sqrt rsqrt tanh sigmoid erf relu gelu matmul conv2d max_pool2d avg_pool2d "
        "global_avg_pool2d softmax layer_norm reduce_sum reduce_mean reduce_max reshape "
        "transpose concat broadcast_to cast"
    ).split()
    # Beyond the design's list (docs/design-deviations.md): the ops ONNX import needs.
    expected += ["gather", "slice", "where", "compare", "pow", "reduce_min"]
    assert {f"graph.{n}" for n in expected} == names


def test_both_generic_property_spellings_parse():
    text = """
    graph.func @f(%x: tensor<2x3xf32>) {
      %0 = "graph.softmax"(%x) {axis = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
      %1 = "graph.softmax"(%x) <{axis = 0 : i64}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
      graph.return
    }
    """
    module = parse_module(make_context(), text, "spellings.mlir")
    verify_module(module)
    ops = [op for op in module.walk() if isinstance(op, graph.SoftmaxOp)]
    assert [op.axis_value for op in ops] == [0, 0]
    assert all("axis" in op.properties and "axis" not in op.attributes for op in ops)


def test_device_property_on_compute_and_func_ops():
    dev = DeviceAttr("gpu", 1)
    op = graph.AddOp(value(4), value(4), device=dev)
    assert op.device == dev
    assert (
        graph.ConstantOp(DenseIntOrFPElementsAttr.from_list(tensor(1), [1.0]), device=dev).device
        == dev
    )
    lt = graph.LayoutTransformOp(
        value(8),
        ConstraintAttr(AffineMapAttr(AffineMap.identity(1)), UndefAttr()),
        device=dev,
    )
    assert lt.device == dev and lt.result.type == tensor(8)


def test_dataflow_builder():
    x = value(4)
    exp = graph.ExpOp(x)
    region = Region(Block([exp, graph.OutputOp(exp)]))
    df = graph.DataflowOp([tensor(4)], region)
    df.verify()
    assert df.res[0].type == tensor(4)
