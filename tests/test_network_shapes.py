"""The op shapes of mobile and multi-branch networks, blocked end to end, against onnxruntime.

Each model is a small block of a real network (random weights): depthwise
convolutions (3x3 and 5x5, stride 1 and 2, channel counts that do not fill
the last block), relu6 and hardswish, a squeeze-and-excitation block, a
concatenation of whole channel blocks, max and average pools between
convolutions, and a pointwise convolution on a small image.
`plan-layouts` keeps them in `NCHW{c}c` between one transform in and one out
(tests/filecheck/passes/plan-layouts-networks.mlir shows the plan).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from onnx_util import check_against_ort, make_model, run_ort

import lamina
from lamina.frontends.onnx import import_model

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402

RNG = np.random.default_rng(7)


def _w(*shape: int) -> np.ndarray:
    return (RNG.standard_normal(shape) * (2.0 / np.prod(shape[1:])) ** 0.5).astype(np.float32)


def _conv(name, x, w, k, stride=1, group=1, pad=None):
    pad = k // 2 if pad is None else pad
    return helper.make_node("Conv", [x, w, f"{w}_b"], [name], kernel_shape=[k, k],
                            strides=[stride, stride], pads=[pad] * 4, group=group)  # fmt: skip


def _inverted_residual(channels: int, expand: int, k: int, stride: int, se: bool):
    """MobileNet-v3-style block: 1x1 expand, hardswish, kxk depthwise, SE, 1x1 project."""
    hidden = channels * expand
    inits = {
        "we": _w(hidden, channels, 1, 1), "we_b": _w(hidden),
        "wd": _w(hidden, 1, k, k), "wd_b": _w(hidden),
        "wp": _w(channels, hidden, 1, 1), "wp_b": _w(channels),
        "ws1": _w(8, hidden, 1, 1), "ws1_b": _w(8),
        "ws2": _w(hidden, 8, 1, 1), "ws2_b": _w(hidden),
        "lo": np.array(0, np.float32), "hi": np.array(6, np.float32),
    }  # fmt: skip
    nodes = [
        _conv("e", "x", "we", 1),
        helper.make_node("HardSwish", ["e"], ["e6"]),
        _conv("d", "e6", "wd", k, stride, group=hidden),
        helper.make_node("Clip", ["d", "lo", "hi"], ["d6"]),
    ]
    feature = "d6"
    if se:
        nodes += [
            helper.make_node("GlobalAveragePool", ["d6"], ["g"]),
            _conv("s1", "g", "ws1", 1),
            helper.make_node("Relu", ["s1"], ["s1r"]),
            _conv("s2", "s1r", "ws2", 1),
            helper.make_node("HardSigmoid", ["s2"], ["s2h"], alpha=1 / 6, beta=0.5),
            helper.make_node("Mul", ["d6", "s2h"], ["scaled"]),
        ]
        feature = "scaled"
    nodes.append(_conv("p", feature, "wp", 1))
    out = "p"
    if stride == 1:
        nodes.append(helper.make_node("Add", ["p", "x"], ["y"]))
        out = "y"
    return nodes, inits, out


@pytest.mark.parametrize(
    ("channels", "expand", "k", "stride", "se", "size"),
    [(24, 3, 3, 1, False, 14), (20, 3, 5, 2, True, 13), (40, 6, 3, 2, True, 8)],
)
def test_inverted_residual(channels, expand, k, stride, se, size):
    nodes, inits, out = _inverted_residual(channels, expand, k, stride, se)
    x = RNG.standard_normal((1, channels, size, size)).astype(np.float32)
    check_against_ort(make_model(nodes, {"x": x}, [out], inits), {"x": x})


def test_fire_and_inception_branches():
    """SqueezeNet's fire module and GoogLeNet's pool branch: concat of blocked
    convolutions and of a max pool, then an average pool and a conv on it."""
    inits = {
        "w0": _w(32, 16, 3, 3), "w0_b": _w(32),
        "ws": _w(16, 32, 1, 1), "ws_b": _w(16),
        "w1": _w(32, 16, 1, 1), "w1_b": _w(32),
        "w3": _w(32, 16, 3, 3), "w3_b": _w(32),
        "wo": _w(24, 96, 1, 1), "wo_b": _w(24),
    }  # fmt: skip
    nodes = [
        _conv("c0", "x", "w0", 3),
        helper.make_node("Relu", ["c0"], ["r0"]),
        helper.make_node("MaxPool", ["r0"], ["m"], kernel_shape=[3, 3], strides=[2, 2]),
        _conv("s", "m", "ws", 1),
        helper.make_node("Relu", ["s"], ["sr"]),
        _conv("e1", "sr", "w1", 1),
        _conv("e3", "sr", "w3", 3),
        helper.make_node("Concat", ["e1", "e3", "m"], ["cat"], axis=1),
        helper.make_node("AveragePool", ["cat"], ["a"], kernel_shape=[2, 2], strides=[2, 2]),
        _conv("o", "a", "wo", 1),
    ]
    x = RNG.standard_normal((1, 16, 15, 15)).astype(np.float32)
    check_against_ort(make_model(nodes, {"x": x}, ["o"], inits), {"x": x})


def test_inverted_residual_in_blocks_of_8():
    """The same block built for 256-bit vectors (`NCHW8c`), as on an AVX2 CPU."""
    nodes, inits, out = _inverted_residual(20, 3, 5, 2, True)
    x = RNG.standard_normal((1, 20, 13, 13)).astype(np.float32)
    model = make_model(nodes, {"x": x}, [out], inits)
    exe = lamina.compile(import_model(model).module, targets=["cpu{vector_bits=256}"])
    np.testing.assert_allclose(
        exe.run("main", x), run_ort(model, {"x": x})[0], rtol=1e-4, atol=1e-5
    )


@pytest.mark.parametrize(("channels", "size"), [(116, 14), (64, 9)])
def test_shufflenet_unit(channels, size):
    """ShuffleNet-v2's unit: split the channels in halves, a pointwise /
    depthwise / pointwise branch on one, concatenate, and shuffle the two
    groups (reshape to 2 groups, transpose, reshape back). 116 channels
    (58 per half) do not fill blocks of 8 or 16; 64 do."""
    half = channels // 2
    inits = {
        "w1": _w(half, half, 1, 1), "w1_b": _w(half),
        "wd": _w(half, 1, 3, 3), "wd_b": _w(half),
        "w2": _w(half, half, 1, 1), "w2_b": _w(half),
        "halves": np.array([half, half], np.int64),
        "grouped": np.array([1, 2, half, size, size], np.int64),
        "flat": np.array([1, channels, size, size], np.int64),
    }  # fmt: skip
    nodes = [
        helper.make_node("Split", ["x", "halves"], ["a", "b"], axis=1),
        _conv("c1", "b", "w1", 1),
        helper.make_node("Relu", ["c1"], ["r1"]),
        _conv("d", "r1", "wd", 3, group=half),
        _conv("c2", "d", "w2", 1),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("Concat", ["a", "r2"], ["cat"], axis=1),
        helper.make_node("Reshape", ["cat", "grouped"], ["g"]),
        helper.make_node("Transpose", ["g"], ["t"], perm=[0, 2, 1, 3, 4]),
        helper.make_node("Reshape", ["t", "flat"], ["y"]),
    ]
    x = RNG.standard_normal((1, channels, size, size)).astype(np.float32)
    check_against_ort(make_model(nodes, {"x": x}, ["y"], inits), {"x": x})


def test_silu_and_erf_gelu_diamonds_fuse_into_their_producer():
    """EfficientNet's SiLU (`y * sigmoid(y)` after a convolution) and the exact
    gelu PyTorch exports before opset 20 (`y * 0.5 * (1 + erf(y / sqrt 2))`
    after a matmul) read the producer's result twice: `fuse-ops` closes each
    diamond into the producer's kernel, and the results match onnxruntime."""
    inits = {
        "w": _w(48, 24, 1, 1), "w_b": _w(48),
        "m": _w(14, 32), "sqrt2": np.array(2**0.5, np.float32),
        "one": np.array(1.0, np.float32), "half": np.array(0.5, np.float32),
    }  # fmt: skip
    nodes = [
        _conv("y", "x", "w", 1),
        helper.make_node("Sigmoid", ["y"], ["s"]),
        helper.make_node("Mul", ["y", "s"], ["silu"]),
        helper.make_node("MatMul", ["silu", "m"], ["h"]),
        helper.make_node("Div", ["h", "sqrt2"], ["hd"]),
        helper.make_node("Erf", ["hd"], ["he"]),
        helper.make_node("Add", ["he", "one"], ["h1"]),
        helper.make_node("Mul", ["h", "h1"], ["hg"]),
        helper.make_node("Mul", ["hg", "half"], ["out"]),
    ]
    x = (RNG.standard_normal((1, 24, 14, 14)) * 2).astype(np.float32)
    model = make_model(nodes, {"x": x}, ["out"], inits)
    exe = lamina.compile(import_model(model).module)
    kernels = set(re.findall(r"te_fused_\w+?_(?:\d+x)+\d+xf32", str(exe.llvm_module)))
    assert any("conv2d_add_sigmoid_mul" in k for k in kernels), kernels
    assert any("matmul_div_erf_add_mul_mul" in k for k in kernels), kernels
    assert not any("sigmoid" in k and "conv2d" not in k for k in kernels), kernels
    np.testing.assert_allclose(exe.run(x), run_ort(model, {"x": x})[0], rtol=1e-4, atol=1e-5)


def test_dense_block_concat_selects_addresses():
    """DenseNet's layer input: the block's input and two earlier layers' outputs
    concatenated along whole channel blocks, then batch norm and relu fused
    with the concatenation. `lower-to-llvm` lowers the concatenation's select
    chain as a select of the inputs' addresses and one load (no per-input
    copies for LLVM to unswitch); the results match onnxruntime."""
    inits = {
        "w1": _w(16, 32, 3, 3), "w1_b": _w(16),
        "w2": _w(16, 48, 3, 3), "w2_b": _w(16),
        "scale": (RNG.random((1, 64, 1, 1)) + 0.5).astype(np.float32),
        "shift": RNG.standard_normal((1, 64, 1, 1)).astype(np.float32),
        "wo": _w(24, 64, 1, 1), "wo_b": _w(24),
    }  # fmt: skip
    nodes = [
        _conv("a", "x", "w1", 3),
        helper.make_node("Concat", ["x", "a"], ["xa"], axis=1),
        _conv("b", "xa", "w2", 3),
        helper.make_node("Concat", ["x", "a", "b"], ["cat"], axis=1),
        helper.make_node("Mul", ["cat", "scale"], ["s"]),
        helper.make_node("Add", ["s", "shift"], ["t"]),
        helper.make_node("Relu", ["t"], ["r"]),
        _conv("o", "r", "wo", 1),
    ]
    x = RNG.standard_normal((1, 32, 12, 12)).astype(np.float32)
    model = make_model(nodes, {"x": x}, ["o"], inits)
    exe = lamina.compile(import_model(model).module)
    text = str(exe.llvm_module)
    assert re.search(r"llvm\.select [^\n]*: i1, !llvm\.ptr", text), (
        "the concatenation selects addresses"
    )
    np.testing.assert_allclose(exe.run(x), run_ort(model, {"x": x})[0], rtol=1e-4, atol=1e-5)
