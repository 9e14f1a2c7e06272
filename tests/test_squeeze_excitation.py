"""Squeeze-and-excitation blocks (MobileNetV3, EfficientNet) against onnxruntime.

A depthwise convolution, then global average pool -> 1x1 conv -> relu or
SiLU -> 1x1 conv -> sigmoid or hardsigmoid, and the feature map multiplied
by that per-channel scale (a broadcast), then the projecting 1x1 conv. The
scale's sigmoid is evaluated once per channel, in a stage of its own
(`passes/fuse_ops.py` keeps a costly producer out of a broadcasting
reader), not once per pixel of the feature map; the numerics must not
change, on the host's vectors and on an AVX2 build, with channel counts
that do not fill the last block.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx_util import lowered_loops, make_model, run_ort

import lamina
from lamina.frontends.onnx import import_model

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402

RNG = np.random.default_rng(24)


def _se_model(channels: int, squeeze: int, size: int, gate: str, inner: str, out: int = 16):
    """depthwise 3x3 + SiLU -> SE(squeeze, inner activation, gate) -> 1x1 conv to `out` channels."""

    def w(*shape):
        return (RNG.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype(np.float32)

    inits = {
        "wd": w(channels, 1, 3, 3), "bd": w(channels),
        "w1": w(squeeze, channels, 1, 1), "b1": w(squeeze),
        "w2": w(channels, squeeze, 1, 1), "b2": w(channels),
        "wp": w(out, channels, 1, 1),
    }  # fmt: skip
    nodes = [
        helper.make_node("Conv", ["x", "wd", "bd"], ["d"], kernel_shape=[3, 3],
                         pads=[1, 1, 1, 1], group=channels),
        helper.make_node("Sigmoid", ["d"], ["ds"]),
        helper.make_node("Mul", ["d", "ds"], ["f"]),
        helper.make_node("GlobalAveragePool", ["f"], ["p"]),
        helper.make_node("Conv", ["p", "w1", "b1"], ["s1"], kernel_shape=[1, 1]),
    ]  # fmt: skip
    if inner == "relu":
        nodes.append(helper.make_node("Relu", ["s1"], ["a1"]))
    else:
        nodes += [
            helper.make_node("Sigmoid", ["s1"], ["g1"]),
            helper.make_node("Mul", ["s1", "g1"], ["a1"]),
        ]
    nodes.append(helper.make_node("Conv", ["a1", "w2", "b2"], ["s2"], kernel_shape=[1, 1]))
    if gate == "sigmoid":
        nodes.append(helper.make_node("Sigmoid", ["s2"], ["g"]))
    else:
        nodes.append(helper.make_node("HardSigmoid", ["s2"], ["g"], alpha=1 / 6, beta=0.5))
    nodes += [
        helper.make_node("Mul", ["f", "g"], ["m"]),
        helper.make_node("Conv", ["m", "wp"], ["y"], kernel_shape=[1, 1]),
    ]
    x = RNG.standard_normal((1, channels, size, size)).astype(np.float32)
    return make_model(nodes, {"x": x}, ["y"], inits), x


CASES = [
    (24, 8, 14, "sigmoid", "silu"),  # EfficientNet's
    (40, 10, 9, "sigmoid", "silu"),  # a partial last block on AVX-512
    (72, 24, 7, "hardsigmoid", "relu"),  # MobileNetV3's
    (120, 32, 12, "hardsigmoid", "relu"),
]


@pytest.mark.parametrize("gate_weights", [100, 0])
@pytest.mark.parametrize("isa", ["host", "avx2"])
@pytest.mark.parametrize(("channels", "squeeze", "size", "gate", "inner"), CASES)
def test_squeeze_excitation_against_onnxruntime(
    isa, channels, squeeze, size, gate, inner, gate_weights
):
    """With the gate applied to the projection's weights (`conv_gate_weights_percent`,
    every case here: 16 output channels, at least 49 pixels) and to the feature map."""
    model, x = _se_model(channels, squeeze, size, gate, inner)
    want = run_ort(model, {"x": x})[0]
    options = f"conv_gate_weights_percent={gate_weights}"
    target = f"cpu{{{options}}}" if isa == "host" else f"cpu{{isa={isa},{options}}}"
    got = lamina.compile(import_model(model).module, targets=[target], cache=False).run("main", x)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("isa", ["host", "avx2"])
def test_gate_in_weights_only_when_smaller(isa):
    """A projection wider than the image (64 outputs at 5x5) keeps the scaled
    feature map; the numerics either way."""
    model, x = _se_model(40, 10, 5, "sigmoid", "silu", out=64)
    want = run_ort(model, {"x": x})[0]
    target = "cpu" if isa == "host" else f"cpu{{isa={isa}}}"
    got = lamina.compile(import_model(model).module, targets=[target], cache=False).run("main", x)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_excitation_sigmoid_runs_once_per_channel(tmp_path):
    """The gate kernel (the excitation's second 1x1 conv, its sigmoid and the
    multiply with the 14x14 feature map) evaluates the sigmoid's exp and
    division in a loop over the channels, before the loops over the pixels,
    which only multiply. (A projection of 256 channels, more than the 196
    pixels: the gate stays on the feature map, `conv_gate_weights_percent`.)"""
    model, _ = _se_model(24, 8, 14, "sigmoid", "silu", out=256)
    lowered = lowered_loops(model, tmp_path)
    kernels = [k[: k.index("loop.return")] for k in lowered.split("loop.func private @")[1:]]
    (gate,) = [k for k in kernels if k.split("(")[0].endswith("_1_loop") and "sigmoid_mul" in k]
    pixels = gate.index("loop.for %i2 ")
    exp_scale = "arith.bitcast"  # the polynomial exp's 2^n
    assert gate.count(exp_scale) == 2 and gate.count("arith.divf") == 1
    assert gate.rindex(exp_scale) < pixels and gate.index("arith.divf") < pixels
    assert "arith.mulf" in gate[pixels:]
