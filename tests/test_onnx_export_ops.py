"""The operators real exports use (comparisons and logic, index reductions,
TopK, CumSum, Einsum, Tile, Resize, ConvTranspose, group/instance
normalization, activations), in one-node models checked against onnxruntime.

All models are compiled as one module (`compile_models`), one compile for
the whole file."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
from onnx_util import make_model, run_ort

from lamina.frontends.onnx import OnnxImportError, import_model
from lamina.frontends.onnx_backend import compile_models

from onnx import TensorProto, helper  # isort: skip

RNG = np.random.default_rng(0)
NAN, INF = np.float32("nan"), np.float32("inf")


def f32(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def node(op: str, inputs, outputs=("y",), **attrs):
    return helper.make_node(op, list(inputs), list(outputs), name=f"{op.lower()}_node", **attrs)


B, I64, F = TensorProto.BOOL, TensorProto.INT64, TensorProto.FLOAT
TIES = np.array([[1, 3, 3, 0, 3, -1], [2, 2, 2, 2, 2, 2]], np.float32)
SPECIALS = np.array([1.0, NAN, -INF, INF, 0.0, -2.5], np.float32)

# (id, nodes, runtime inputs, initializers, opset, {output: type}, outputs)
CASES = [
    *[(f"{op}", [node(op, ["a", "b"])], {"a": f32(2, 3).round(), "b": f32(3).round()}, {},
       17, {"y": B}) for op in ("Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual")],
    ("Equal-int", [node("Equal", ["a", "b"])],
     {"a": np.array([1, 2, 3], np.int64), "b": np.array([1, 0, 3], np.int64)}, {}, 17, {"y": B}),
    ("Greater-nan", [node("Greater", ["a", "b"])], {"a": SPECIALS, "b": np.zeros(6, np.float32)},
     {}, 17, {"y": B}),
    *[(op, [node(op, ["p", "q"])], {"p": RNG.random((2, 4)) > 0.5, "q": RNG.random(4) > 0.5},
       {}, 17, {"y": B}) for op in ("And", "Or", "Xor")],
    ("Not", [node("Not", ["p"])], {"p": RNG.random((3, 2)) > 0.5}, {}, 17, {"y": B}),
    ("IsNaN", [node("IsNaN", ["a"])], {"a": SPECIALS}, {}, 20, {"y": B}),
    ("IsInf", [node("IsInf", ["a"])], {"a": SPECIALS}, {}, 20, {"y": B}),
    ("IsInf-negative", [node("IsInf", ["a"], detect_positive=0)], {"a": SPECIALS}, {}, 20,
     {"y": B}),
    ("Pow-tensor", [node("Pow", ["a", "b"])],
     {"a": np.abs(f32(2, 3)) + 0.1, "b": f32(3)}, {}, 15, {}),
    ("Pow-int-exponent", [node("Pow", ["a", "b"])],
     {"a": np.abs(f32(4)) + 0.1, "b": np.array([0, 1, 2, 3], np.int64)}, {}, 15, {}),
    ("Pow-const-1.5", [node("Pow", ["a", "e"])], {"a": np.abs(f32(5)) + 0.1},
     {"e": np.float32(1.5)}, 15, {}),
    ("ArgMax", [node("ArgMax", ["a"], axis=1)], {"a": TIES}, {}, 13, {"y": I64}),
    ("ArgMax-last", [node("ArgMax", ["a"], axis=1, select_last_index=1, keepdims=0)],
     {"a": TIES}, {}, 13, {"y": I64}),
    ("ArgMin", [node("ArgMin", ["a"], axis=0, keepdims=0)], {"a": f32(3, 4)}, {}, 13,
     {"y": I64}),
    ("ArgMax-int", [node("ArgMax", ["a"], axis=-1)],
     {"a": np.array([[3, 9, 9, -2], [0, 0, 1, 1]], np.int64)}, {}, 13, {"y": I64}),
    ("TopK", [node("TopK", ["a", "k"], ["v", "i"], axis=1)], {"a": TIES},
     {"k": np.array([3], np.int64)}, 24, {"i": I64}, ["v", "i"]),
    ("TopK-smallest-axis0", [node("TopK", ["a", "k"], ["v", "i"], axis=0, largest=0)],
     {"a": f32(5, 3)}, {"k": np.array([2], np.int64)}, 11, {"i": I64}, ["v", "i"]),
    ("CumSum", [node("CumSum", ["a", "ax"])], {"a": f32(3, 5)}, {"ax": np.int64(1)}, 14, {}),
    ("CumSum-exclusive-reverse", [node("CumSum", ["a", "ax"], exclusive=1, reverse=1)],
     {"a": f32(4, 3)}, {"ax": np.int64(0)}, 14, {}),
    ("Einsum-matmul", [node("Einsum", ["a", "b"], equation="ij,jk->ik")],
     {"a": f32(3, 4), "b": f32(4, 5)}, {}, 12, {}),
    ("Einsum-attention", [node("Einsum", ["a", "b"], equation="bhqd,bhkd->bhqk")],
     {"a": f32(2, 3, 4, 5), "b": f32(2, 3, 6, 5)}, {}, 12, {}),
    ("Einsum-ellipsis", [node("Einsum", ["a", "b"], equation="...ij,...jk")],
     {"a": f32(2, 3, 4), "b": f32(2, 4, 2)}, {}, 12, {}),
    ("Einsum-outer-sum", [node("Einsum", ["a", "b"], equation="ij,k->ik")],
     {"a": f32(3, 4), "b": f32(5)}, {}, 12, {}),
    ("Einsum-transpose", [node("Einsum", ["a"], equation="ijk->kji")], {"a": f32(2, 3, 4)},
     {}, 12, {}),
    ("Tile", [node("Tile", ["a", "r"])], {"a": f32(2, 3)}, {"r": np.array([2, 3], np.int64)},
     13, {}),
    ("Expand", [node("Expand", ["a", "s"])], {"a": f32(3, 1)},
     {"s": np.array([2, 3, 4], np.int64)}, 13, {}),
    ("Resize-nearest", [node("Resize", ["a", "", "s"], mode="nearest")], {"a": f32(1, 2, 3, 4)},
     {"s": np.array([1, 1, 2, 1.5], np.float32)}, 19, {}),
    ("Resize-nearest-asymmetric-floor",
     [node("Resize", ["a", "", "s"], mode="nearest", coordinate_transformation_mode="asymmetric",
           nearest_mode="floor")],
     {"a": f32(1, 2, 3, 4)}, {"s": np.array([1, 1, 2, 2], np.float32)}, 13, {}),
    ("Resize-linear", [node("Resize", ["a", "", "s"], mode="linear")], {"a": f32(1, 2, 3, 4)},
     {"s": np.array([1, 1, 2, 2], np.float32)}, 19, {}),
    ("Resize-cubic", [node("Resize", ["a", "", "s"], mode="cubic")], {"a": f32(1, 2, 4, 5)},
     {"s": np.array([1, 1, 2, 1.5], np.float32)}, 19, {}),
    ("Resize-linear-sizes-align",
     [node("Resize", ["a", "", "", "z"], mode="linear",
           coordinate_transformation_mode="align_corners")],
     {"a": f32(1, 2, 4, 4)}, {"z": np.array([1, 2, 7, 3], np.int64)}, 19, {}),
    ("ConvTranspose", [node("ConvTranspose", ["x", "w", "b"], strides=[2, 2], pads=[1, 1, 1, 1],
                            output_padding=[1, 1])],
     {"x": f32(1, 4, 5, 5)}, {"w": f32(4, 3, 3, 3), "b": f32(3)}, 17, {}),
    ("ConvTranspose-groups-1d", [node("ConvTranspose", ["x", "w"], strides=[3], group=2)],
     {"x": f32(2, 4, 6)}, {"w": f32(4, 2, 4)}, 17, {}),
    ("ConvTranspose-same", [node("ConvTranspose", ["x", "w"], strides=[2, 2],
                                 auto_pad="SAME_UPPER")],
     {"x": f32(1, 2, 3, 3)}, {"w": f32(2, 2, 3, 3)}, 17, {}),
    ("Conv-3d", [node("Conv", ["x", "w", "b"], pads=[1, 0, 1, 1, 0, 1], strides=[1, 2, 1])],
     {"x": f32(1, 2, 4, 5, 5)}, {"w": f32(3, 2, 3, 3, 3), "b": f32(3)}, 17, {}),
    ("Conv-3d-groups-dilated", [node("Conv", ["x", "w"], group=2, dilations=[2, 1, 1])],
     {"x": f32(1, 4, 5, 3, 3)}, {"w": f32(2, 2, 2, 2, 2)}, 17, {}),
    ("MaxPool-3d", [node("MaxPool", ["x"], kernel_shape=[2, 2, 2], strides=[2, 2, 2])],
     {"x": f32(1, 2, 4, 4, 4)}, {}, 17, {}),
    ("AveragePool-3d-pads",
     [node("AveragePool", ["x"], kernel_shape=[3, 3, 3], pads=[1] * 6, count_include_pad=1)],
     {"x": f32(1, 1, 4, 4, 4)}, {}, 17, {}),
    ("AveragePool-3d-ceil", [node("AveragePool", ["x"], kernel_shape=[2, 2, 2], strides=[2, 2, 2],
                                  ceil_mode=1)],
     {"x": f32(1, 1, 5, 5, 5)}, {}, 17, {}),
    ("MaxPool-dilated", [node("MaxPool", ["x"], kernel_shape=[2, 2], dilations=[2, 2])],
     {"x": f32(1, 2, 5, 5)}, {}, 17, {}),
    ("MaxPool-indices", [node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2], strides=[2, 2])],
     {"x": f32(2, 2, 4, 4)}, {}, 17, {"i": I64}, ["y", "i"]),
    ("Einsum-diagonal", [node("Einsum", ["a"], equation="bii->bi")], {"a": f32(2, 3, 3)}, {}, 12,
     {}),
    ("Resize-tf-crop", [node("Resize", ["a", "roi", "", "z"], mode="linear",
                             coordinate_transformation_mode="tf_crop_and_resize",
                             extrapolation_value=10.0)],
     {"a": f32(1, 1, 4, 4)}, {"roi": np.array([0, 0, 0.4, 0.6, 1, 1, 1.2, 1.7], np.float32),
                              "z": np.array([1, 1, 3, 3], np.int64)}, 13, {}),
    ("InstanceNormalization", [node("InstanceNormalization", ["x", "s", "b"])],
     {"x": f32(2, 3, 4, 5)}, {"s": f32(3), "b": f32(3)}, 17, {}),
    ("GroupNormalization-21", [node("GroupNormalization", ["x", "s", "b"], num_groups=2)],
     {"x": f32(2, 4, 3, 3)}, {"s": f32(4), "b": f32(4)}, 21, {}),
    ("GroupNormalization-18", [node("GroupNormalization", ["x", "s", "b"], num_groups=2)],
     {"x": f32(2, 4, 3, 3)}, {"s": f32(2), "b": f32(2)}, 18, {}),
    ("LayerNormalization", [node("LayerNormalization", ["x", "s", "b"], axis=-1)],
     {"x": f32(2, 3, 8)}, {"s": f32(8), "b": f32(8)}, 17, {}),
    ("HardSigmoid", [node("HardSigmoid", ["a"], alpha=0.3)], {"a": f32(9) * 3}, {}, 17, {}),
    ("HardSwish", [node("HardSwish", ["a"])], {"a": f32(9) * 4}, {}, 17, {}),
    ("Mish", [node("Mish", ["a"])], {"a": f32(9) * 5}, {}, 18, {}),
    ("Softplus", [node("Softplus", ["a"])], {"a": f32(9) * 30}, {}, 17, {}),
    ("Softsign", [node("Softsign", ["a"])], {"a": f32(9)}, {}, 17, {}),
    ("LeakyRelu", [node("LeakyRelu", ["a"], alpha=0.1)], {"a": f32(9)}, {}, 17, {}),
    ("PRelu", [node("PRelu", ["a", "s"])], {"a": f32(2, 3, 4)}, {"s": f32(3, 1)}, 17, {}),
    ("Elu", [node("Elu", ["a"])], {"a": f32(9)}, {}, 17, {}),
    ("Selu", [node("Selu", ["a"])], {"a": f32(9)}, {}, 17, {}),
    ("ReduceMin", [node("ReduceMin", ["a", "ax"])], {"a": f32(3, 4)},
     {"ax": np.array([1], np.int64)}, 18, {}),
    ("ReduceL2", [node("ReduceL2", ["a"], keepdims=0)], {"a": f32(3, 4)}, {}, 18, {}),
    ("ReduceL1", [node("ReduceL1", ["a"])], {"a": f32(3, 4)}, {}, 18, {}),
    ("ReduceSumSquare", [node("ReduceSumSquare", ["a"], axes=[0])], {"a": f32(3, 4)}, {}, 13,
     {}),
    ("ReduceLogSumExp", [node("ReduceLogSumExp", ["a", "ax"], keepdims=0)], {"a": f32(3, 4) * 50},
     {"ax": np.array([0], np.int64)}, 18, {}),
    ("Gelu-opset20", [node("Gelu", ["a"])], {"a": f32(9)}, {}, 20, {}),
]  # fmt: skip


def _model(case):
    name, nodes, inputs, inits, opset, types, *outputs = case
    outs = outputs[0] if outputs else ["y"]
    return make_model(nodes, inputs, outs, inits, opset, output_types=types)


@cache
def _compiled():
    return compile_models([_model(c) for c in CASES])


@pytest.mark.parametrize("index", range(len(CASES)), ids=[c[0] for c in CASES])
def test_matches_onnxruntime(index: int) -> None:
    case = CASES[index]
    inputs = case[2]
    want = run_ort(_model(case), inputs)
    got = _compiled()[index].run(list(inputs.values()))
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype, (g.dtype, g.shape, w.dtype, w.shape)
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
        else:
            np.testing.assert_array_equal(g, w)


def test_attention_mask_with_greater_and_where() -> None:
    """Scores masked where a position is after the query (Greater + Where), then Softmax."""
    seq, dim = 6, 8
    causal = np.triu(np.ones((seq, seq), np.float32), 1)
    nodes = [
        node("MatMul", ["q", "kt"], ["s"]),
        helper.make_node("Greater", ["mask", "zero"], ["m"], name="gt"),
        helper.make_node("Where", ["m", "neg", "s"], ["masked"], name="where"),
        helper.make_node("Softmax", ["masked"], ["p"], axis=-1, name="sm"),
        helper.make_node("MatMul", ["p", "v"], ["y"], name="pv"),
    ]
    inputs = {"q": f32(2, seq, dim), "kt": f32(2, dim, seq), "v": f32(2, seq, dim)}
    inits = {"mask": causal, "zero": np.float32(0), "neg": np.float32(-1e9)}
    model = make_model(nodes, inputs, ["y"], inits, 17)
    got = compile_models([model])[0].run(list(inputs.values()))[0]
    np.testing.assert_allclose(got, run_ort(model, inputs)[0], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    ("nodes", "inputs", "inits", "message"),
    [
        ([node("Resize", ["a", "", "s"], mode="linear", antialias=1)], {"a": f32(1, 1, 2, 2)},
         {"s": np.array([1, 1, 0.5, 0.5], np.float32)},
         "node 'resize_node' (Resize, opset 19): antialias = 1 is not supported"),
        ([node("Einsum", ["a", "a", "a"], equation="i,i,i->i")], {"a": f32(3)}, {},
         "node 'einsum_node' (Einsum, opset 19): 3 operands are not supported"),
        ([node("Not", ["a"])], {"a": f32(3)}, {},
         "node 'not_node' (Not, opset 19): input #0 must be a bool tensor"),
        ([node("Range", ["a", "l", "d"])], {"a": np.float32(0)},
         {"l": np.float32(4), "d": np.float32(1)},
         "node 'range_node' (Range, opset 19): input #0 (start) is the graph input 'a', which "
         "must be a constant"),
        ([node("Cast", ["a"], to=TensorProto.UINT8)], {"a": f32(3)}, {},
         "node 'cast_node' (Cast, opset 19): the target type has element type UINT8, which "
         "Lamina does not support"),
        ([node("Celu", ["a"])], {"a": f32(3)}, {},
         "node 'celu_node' (Celu, opset 19): operator is not supported"),
    ],
)  # fmt: skip
def test_refused_by_name(nodes, inputs, inits, message) -> None:
    with pytest.raises(OnnxImportError) as err:
        import_model(make_model(nodes, inputs, ["y"], inits, 19))
    assert message in str(err.value)
