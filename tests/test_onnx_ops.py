"""Every operator the ONNX importer supports, in models built with `onnx.helper`,
imported, compiled to native code and checked against onnxruntime (1e-4 relative)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx_util import check_against_ort, make_model

from onnx import TensorProto, helper  # isort: skip

RNG = np.random.default_rng(0)


def f32(*shape: int, positive: bool = False) -> np.ndarray:
    a = RNG.standard_normal(shape).astype(np.float32)
    return np.abs(a) + 0.5 if positive else a


def i64(values) -> np.ndarray:
    return np.asarray(values, dtype=np.int64)


def node(op: str, inputs, outputs=("y",), **attrs):
    return helper.make_node(op, list(inputs), list(outputs), **attrs)


# (id, nodes, runtime inputs, initializers, opset, output types)
CASES = [
    ("Add-broadcast", [node("Add", ["a", "b"])], {"a": f32(2, 3), "b": f32(3)}, {}),
    ("Sub", [node("Sub", ["a", "b"])], {"a": f32(2, 3), "b": f32(2, 1)}, {}),
    ("Mul-init", [node("Mul", ["a", "w"])], {"a": f32(4, 5)}, {"w": f32(5)}),
    ("Div", [node("Div", ["a", "b"])], {"a": f32(3, 4), "b": f32(3, 4, positive=True)}, {}),
    ("Sum-variadic", [node("Sum", ["a", "b", "c"])], {"a": f32(2, 3), "b": f32(3), "c": f32(1, 3)}, {}),
    ("Max-variadic", [node("Max", ["a", "b", "c"])], {"a": f32(2, 3), "b": f32(3), "c": f32(2, 1)}, {}),
    ("Min-variadic", [node("Min", ["a", "b"])], {"a": f32(2, 3), "b": f32(3)}, {}),
    ("Mean", [node("Mean", ["a", "b"])], {"a": f32(2, 3), "b": f32(2, 3)}, {}),
    ("Neg", [node("Neg", ["a"])], {"a": f32(5)}, {}),
    ("Exp", [node("Exp", ["a"])], {"a": f32(5)}, {}),
    ("Log", [node("Log", ["a"])], {"a": f32(5, positive=True)}, {}),
    ("Sqrt", [node("Sqrt", ["a"])], {"a": f32(5, positive=True)}, {}),
    ("Tanh", [node("Tanh", ["a"])], {"a": f32(5)}, {}),
    ("Sigmoid", [node("Sigmoid", ["a"])], {"a": f32(5)}, {}),
    ("Erf", [node("Erf", ["a"])], {"a": f32(7)}, {}),
    ("Relu", [node("Relu", ["a"])], {"a": f32(7)}, {}),
    ("Abs", [node("Abs", ["a"])], {"a": f32(7)}, {}),
    ("Reciprocal", [node("Reciprocal", ["a"])], {"a": f32(7, positive=True)}, {}),
    ("Gelu-erf", [node("Gelu", ["a"])], {"a": f32(9)}, {}, 20),
    ("Gelu-tanh", [node("Gelu", ["a"], approximate="tanh")], {"a": f32(9)}, {}, 20),
    ("Pow-2", [node("Pow", ["a", "e"])], {"a": f32(6)}, {"e": np.float32(2.0)}),
    ("Pow-half", [node("Pow", ["a", "e"])], {"a": f32(6, positive=True)}, {"e": np.float32(0.5)}),
    ("Clip", [node("Clip", ["a", "lo", "hi"])], {"a": f32(8)},
     {"lo": np.float32(-0.5), "hi": np.float32(0.7)}),
    ("Where", [node("Where", ["c", "a", "b"])],
     {"c": RNG.random((2, 3)) > 0.5, "a": f32(2, 3), "b": f32(2, 1)}, {}),
    ("Where-const-cond", [node("Where", ["c", "a", "b"])], {"a": f32(2, 3), "b": f32(3)},
     {"c": np.array([True, False, True])}),
    ("Cast-int", [node("Cast", ["a"], to=TensorProto.INT32)], {"a": f32(6) * 4}, {}, 17,
     {"y": TensorProto.INT32}),
    ("Identity-Dropout", [node("Identity", ["a"], ["t"]), node("Dropout", ["t"])],
     {"a": f32(4)}, {}),
    ("Constant", [node("Constant", [], ["k"], value=helper.make_tensor("v", TensorProto.FLOAT,
     [3], [1.0, 2.0, 3.0])), node("Add", ["a", "k"])], {"a": f32(2, 3)}, {}),
    ("ConstantOfShape", [node("ConstantOfShape", ["s"], ["k"], value=helper.make_tensor(
     "v", TensorProto.FLOAT, [1], [2.5])), node("Mul", ["a", "k"])], {"a": f32(2, 3)},
     {"s": i64([2, 3])}),
    ("MatMul-batched", [node("MatMul", ["a", "b"])], {"a": f32(2, 3, 4), "b": f32(4, 5)}, {}),
    ("MatMul-broadcast", [node("MatMul", ["a", "b"])], {"a": f32(2, 1, 3, 4), "b": f32(3, 4, 2)}, {}),
    ("Gemm", [node("Gemm", ["a", "b", "c"], alpha=0.5, beta=2.0, transA=1, transB=1)],
     {"a": f32(4, 3)}, {"b": f32(5, 4), "c": f32(5)}),
    ("Gemm-runtime-c", [node("Gemm", ["a", "b", "c"], beta=0.5)],
     {"a": f32(3, 4), "b": f32(4, 5), "c": f32(3, 5)}, {}),
    ("Conv-pads-bias", [node("Conv", ["x", "w", "b"], pads=[1, 0, 2, 1], strides=[2, 1])],
     {"x": f32(1, 3, 9, 8)}, {"w": f32(4, 3, 3, 3), "b": f32(4)}),
    ("Conv-same-upper", [node("Conv", ["x", "w"], auto_pad="SAME_UPPER", strides=[2, 2])],
     {"x": f32(1, 2, 9, 10)}, {"w": f32(3, 2, 3, 3)}),
    ("Conv-dilated", [node("Conv", ["x", "w"], dilations=[2, 2], pads=[2, 1, 2, 1])],
     {"x": f32(1, 2, 9, 10)}, {"w": f32(3, 2, 3, 3)}),
    ("Conv-same-lower", [node("Conv", ["x", "w"], auto_pad="SAME_LOWER")],
     {"x": f32(1, 2, 6, 6)}, {"w": f32(3, 2, 2, 2)}),
    ("Conv-groups", [node("Conv", ["x", "w"], group=2, kernel_shape=[3, 3], pads=[1, 1, 1, 1])],
     {"x": f32(2, 4, 7, 7)}, {"w": f32(6, 2, 3, 3)}),
    ("Conv-1d", [node("Conv", ["x", "w", "b"], pads=[1, 2], strides=[2], dilations=[2])],
     {"x": f32(2, 3, 11)}, {"w": f32(4, 3, 3), "b": f32(4)}),
    ("MaxPool-1d", [node("MaxPool", ["x"], kernel_shape=[3], strides=[2], pads=[1, 1])],
     {"x": f32(1, 2, 9)}, {}),
    ("AveragePool-1d", [node("AveragePool", ["x"], kernel_shape=[2], strides=[2])],
     {"x": f32(1, 2, 8)}, {}),
    ("BatchNormalization", [node("BatchNormalization", ["x", "s", "b", "m", "v"], epsilon=1e-3)],
     {"x": f32(2, 3, 4, 5)},
     {"s": f32(3), "b": f32(3), "m": f32(3), "v": f32(3, positive=True)}),
    ("BatchNormalization-runtime", [node("BatchNormalization", ["x", "s", "b", "m", "v"])],
     {"x": f32(2, 3, 4), "s": f32(3), "b": f32(3), "m": f32(3), "v": f32(3, positive=True)}, {}),
    ("LayerNormalization", [node("LayerNormalization", ["x", "g", "b"], epsilon=1e-5)],
     {"x": f32(2, 5, 8)}, {"g": f32(8), "b": f32(8)}),
    ("LayerNormalization-axis-noB", [node("LayerNormalization", ["x", "g"], axis=1)],
     {"x": f32(2, 3, 4)}, {"g": f32(3, 4)}),
    ("LayerNormalization-mean-invstd", [node("LayerNormalization", ["x", "g", "b"],
     ["y", "mean", "inv"], axis=-2)], {"x": f32(2, 3, 4)}, {"g": f32(3, 4), "b": f32(3, 4)}, 17,
     {"mean": TensorProto.FLOAT, "inv": TensorProto.FLOAT}),
    ("Softmax", [node("Softmax", ["x"], axis=1)], {"x": f32(2, 5, 3)}, {}),
    ("LRN", [node("LRN", ["x"], size=3, alpha=1e-3, beta=0.75, bias=2.0)],
     {"x": f32(1, 5, 4, 4)}, {}),
    ("MaxPool", [node("MaxPool", ["x"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])],
     {"x": f32(1, 2, 9, 9)}, {}),
    ("MaxPool-ceil", [node("MaxPool", ["x"], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)],
     {"x": f32(1, 2, 8, 8)}, {}),
    ("AveragePool", [node("AveragePool", ["x"], kernel_shape=[2, 2], strides=[2, 2])],
     {"x": f32(1, 3, 6, 6)}, {}),
    ("AveragePool-pads-exclude", [node("AveragePool", ["x"], kernel_shape=[3, 3],
     pads=[1, 1, 1, 1])], {"x": f32(1, 2, 5, 5)}, {}),
    ("AveragePool-pads-include", [node("AveragePool", ["x"], kernel_shape=[3, 3], strides=[2, 2],
     pads=[1, 1, 1, 1], count_include_pad=1)], {"x": f32(1, 2, 6, 7)}, {}),
    ("AveragePool-ceil", [node("AveragePool", ["x"], kernel_shape=[3, 3], strides=[2, 2],
     ceil_mode=1)], {"x": f32(1, 2, 8, 8)}, {}),
    ("GlobalAveragePool", [node("GlobalAveragePool", ["x"])], {"x": f32(2, 3, 5, 4)}, {}),
    ("GlobalMaxPool", [node("GlobalMaxPool", ["x"])], {"x": f32(2, 3, 5, 4)}, {}),
    ("ReduceMean-18", [node("ReduceMean", ["x", "axes"], keepdims=1)], {"x": f32(2, 3, 4)},
     {"axes": i64([-1])}, 18),
    ("ReduceMean-13", [node("ReduceMean", ["x"], axes=[1], keepdims=0)], {"x": f32(2, 3, 4)},
     {}, 13),
    ("ReduceSum", [node("ReduceSum", ["x", "axes"], keepdims=0)], {"x": f32(2, 3, 4)},
     {"axes": i64([0, 2])}),
    ("ReduceMax-all", [node("ReduceMax", ["x"], keepdims=0)], {"x": f32(2, 3, 4)}, {}, 18),
    ("Reshape-0-and-minus1", [node("Reshape", ["x", "s"])], {"x": f32(2, 3, 4)},
     {"s": i64([0, -1])}),
    ("Flatten", [node("Flatten", ["x"], axis=2)], {"x": f32(2, 3, 4, 5)}, {}),
    ("Squeeze-Unsqueeze", [node("Unsqueeze", ["x", "a0"], ["u"]),
     node("Squeeze", ["u", "a1"])], {"x": f32(3, 4)}, {"a0": i64([0, 3]), "a1": i64([0])}),
    ("Squeeze-all", [node("Squeeze", ["x"])], {"x": f32(1, 3, 1, 4)}, {}),
    ("Transpose", [node("Transpose", ["x"], perm=[2, 0, 1])], {"x": f32(2, 3, 4)}, {}),
    ("Transpose-default", [node("Transpose", ["x"])], {"x": f32(2, 3, 4)}, {}),
    ("Concat", [node("Concat", ["a", "b", "c"], axis=-1)], {"a": f32(2, 3), "b": f32(2, 1)},
     {"c": f32(2, 2)}),
    ("Expand", [node("Expand", ["x", "s"])], {"x": f32(3, 1)}, {"s": i64([2, 1, 4])}),
    ("Slice", [node("Slice", ["x", "st", "en", "ax", "sp"])], {"x": f32(6, 7, 5)},
     {"st": i64([1, -1]), "en": i64([100, -100]), "ax": i64([0, 1]), "sp": i64([2, -2])}),
    ("Slice-default-axes", [node("Slice", ["x", "st", "en"])], {"x": f32(6, 7)},
     {"st": i64([1, 2]), "en": i64([-1, 5])}),
    ("Gather-const-indices", [node("Gather", ["x", "i"], axis=1)], {"x": f32(3, 5, 2)},
     {"i": i64([[4, 0], [-1, 2]])}),
    ("Gather-embedding", [node("Gather", ["e", "ids"])], {"ids": i64([[1, 7, 3], [0, 0, 9]])},
     {"e": f32(10, 4)}),
    ("Split-sizes", [node("Split", ["x", "s"], ["y", "z"], axis=1)], {"x": f32(2, 7)},
     {"s": i64([3, 4])}, 17, {"z": TensorProto.FLOAT}),
    ("Split-num-outputs", [node("Split", ["x"], ["y", "z", "w"], axis=0, num_outputs=3)],
     {"x": f32(7, 2)}, {}, 18),
    ("Shape-arithmetic", [node("Shape", ["x"], ["s"]), node("Gather", ["s", "zero"], ["n"]),
     node("Unsqueeze", ["n", "ax"], ["n1"]), node("Concat", ["n1", "m1"], ["t"], axis=0),
     node("Reshape", ["x", "t"])], {"x": f32(2, 3, 4)},
     {"zero": i64(0), "ax": i64([0]), "m1": i64([-1])}),
    ("Pad-constant", [node("Pad", ["x", "p", "v"])], {"x": f32(1, 2, 4, 5)},
     {"p": i64([0, 0, 1, 2, 0, 0, 2, 1]), "v": np.float32(-1.5)}),
    ("Pad-crop-axes", [node("Pad", ["x", "p", "", "a"])], {"x": f32(1, 2, 4, 5)},
     {"p": i64([-1, 2, 3, -2]), "a": i64([2, -1])}, 18),
    ("Pad-reflect", [node("Pad", ["x", "p"], mode="reflect")], {"x": f32(1, 2, 4, 5)},
     {"p": i64([0, 0, 3, 4, 0, 0, 2, 1])}),
    ("Pad-edge", [node("Pad", ["x", "p"], mode="edge")], {"x": f32(2, 3)},
     {"p": i64([2, 0, 1, 4])}),
    ("Pad-wrap", [node("Pad", ["x", "p"], mode="wrap")], {"x": f32(2, 3)},
     {"p": i64([1, 4, 0, 2])}, 19),
    ("LogSoftmax", [node("LogSoftmax", ["x"], axis=1)], {"x": f32(2, 7, 3) * 40}, {}),
    ("DepthToSpace-DCR", [node("DepthToSpace", ["x"], blocksize=2)], {"x": f32(2, 8, 3, 5)}, {}),
    ("DepthToSpace-CRD", [node("DepthToSpace", ["x"], blocksize=2, mode="CRD")],
     {"x": f32(1, 8, 3, 5)}, {}),
    ("SpaceToDepth", [node("SpaceToDepth", ["x"], blocksize=2)], {"x": f32(2, 3, 4, 6)}, {}),
    ("Trilu-lower-k", [node("Trilu", ["x", "k"], upper=0)], {"x": f32(2, 4, 6)},
     {"k": i64(1)}),
    ("Trilu-upper", [node("Trilu", ["x"])], {"x": f32(5, 3)}, {}),
    ("GatherElements", [node("GatherElements", ["x", "i"], axis=1)], {"x": f32(2, 5, 3)},
     {"i": i64([[[4, 0, -1], [2, 2, 3]], [[0, -5, 1], [3, 4, 0]]])}),
    ("GatherElements-runtime", [node("GatherElements", ["x", "i"], axis=-1)],
     {"x": f32(3, 2, 5), "i": i64([[[4, -1], [0, 2]], [[-5, 1], [3, 3]], [[2, 2], [1, 0]]])}, {}),
    ("CastLike", [node("CastLike", ["x", "t"])], {"x": f32(6) * 9}, {"t": np.int32([1])}, 17,
     {"y": TensorProto.INT32}),
    ("Size", [node("Size", ["x"], ["n"]), node("Cast", ["n"], ["nf"], to=TensorProto.FLOAT),
     node("Mul", ["x", "nf"])], {"x": f32(2, 3)}, {}),
]  # fmt: skip


def _split_case(case):
    name, nodes, inputs, inits = case[:4]
    opset = case[4] if len(case) > 4 else 17
    types = case[5] if len(case) > 5 and isinstance(case[5], dict) else None
    return name, nodes, inputs, inits, opset, types


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_op_matches_onnxruntime(case) -> None:
    name, nodes, inputs, inits, opset, types = _split_case(case)
    outputs = [o for n in nodes[-1:] for o in n.output]
    model = make_model(nodes, inputs, outputs, inits, opset, types)
    check_against_ort(model, inputs)


def test_every_supported_op_is_tested() -> None:
    from test_onnx_export_ops import CASES as EXPORT_CASES

    from lamina.frontends.onnx import HANDLERS

    used = {n.op_type for case in [*CASES, *EXPORT_CASES] for n in case[1]}
    refused_only = {"Range"}  # a handler only for run-time inputs, which it refuses
    assert set(HANDLERS) - used - refused_only == set()


@pytest.mark.parametrize(
    ("attrs", "pads", "message"),
    [
        ({"mode": "reflect"}, [0, 3, 0, 0], "cannot reflect-pad an axis of extent 3 by (3, 0)"),
        ({"mode": "symmetric"}, [0, 0, 1, 1], "mode 'symmetric' is not supported"),
        ({}, [0, 1, 1], "pads [0, 1, 1] do not match axes [0, 1]"),
        ({}, [0, -2, 0, -2], "pads (-2, -2) crop more than axis 1's 3"),
    ],
)
def test_bad_pad_is_a_located_error(attrs, pads, message) -> None:
    from lamina.frontends.onnx import OnnxImportError, import_model

    model = make_model([node("Pad", ["x", "p"], name="the_pad", **attrs)], {"x": f32(2, 3)},
                       ["y"], {"p": i64(pads)})  # fmt: skip
    with pytest.raises(OnnxImportError, match=r"node 'the_pad' \(Pad, opset 17\): .*") as err:
        import_model(model)
    assert message in str(err.value)


@pytest.mark.parametrize(
    ("op", "inputs", "inits", "attrs", "message"),
    [
        ("DepthToSpace", ["x"], {}, {}, "attribute 'blocksize' is required"),
        ("Trilu", ["x", "k"], {"k": i64([1, 2])}, {}, "k must be a scalar, got 2 values"),
    ],
)
def test_bad_layout_ops_are_located_errors(op, inputs, inits, attrs, message) -> None:
    from lamina.frontends.onnx import OnnxImportError, import_model

    model = make_model([node(op, inputs, name="bad", **attrs)], {"x": f32(1, 4, 2, 2)}, ["y"],
                       inits)  # fmt: skip
    with pytest.raises(OnnxImportError, match=rf"node 'bad' \({op}, opset 17\): {message}"):
        import_model(model)
