"""Depthwise convolutions read in place (no padded copy), against onnxruntime.

The blocked depthwise kernel reads taps outside the image through guards,
and `schedule` splits its output rows and columns into border strips and a
guard-free interior (schedule/border_split.py); on small images it reads a
zero-padded copy instead (`depthwise_in_place_percent`). These cases cover
both and what the split has to get right: 3x3 and 5x5 windows, strides 1 and 2, dilation,
asymmetric padding, images no larger than the window (no interior at all),
channel counts that do not fill the last block, and the epilogues mobile
networks fuse into it (bias with relu, relu6 as Clip, hardswish, and the
sigmoid-multiply of swish), on the host's vectors and on an AVX2 build.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx_util import lowered_loops, make_model, run_ort

import lamina
from lamina.frontends.onnx import import_model

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402

RNG = np.random.default_rng(11)


def _depthwise_model(channels, size, k, stride, pads, dilation, activation):
    w = RNG.standard_normal((channels, 1, k, k)).astype(np.float32) / k
    b = RNG.standard_normal(channels).astype(np.float32)
    inits = {"w": w, "b": b, "lo": np.array(0, np.float32), "hi": np.array(6, np.float32)}
    conv = helper.make_node("Conv", ["x", "w", "b"], ["d"], kernel_shape=[k, k],
                            strides=[stride, stride], pads=pads, group=channels,
                            dilations=[dilation, dilation])  # fmt: skip
    nodes = [conv]
    if activation == "relu":
        nodes.append(helper.make_node("Relu", ["d"], ["y"]))
    elif activation == "relu6":
        nodes.append(helper.make_node("Clip", ["d", "lo", "hi"], ["y"]))
    elif activation == "hardswish":
        nodes.append(helper.make_node("HardSwish", ["d"], ["y"]))
    else:  # swish: x * sigmoid(x)
        nodes += [
            helper.make_node("Sigmoid", ["d"], ["s"]),
            helper.make_node("Mul", ["d", "s"], ["y"]),
        ]
    x = RNG.standard_normal((1, channels, size, size)).astype(np.float32)
    return make_model(nodes, {"x": x}, ["y"], inits), x


CASES = [
    # channels, size, k, stride, pads (top, left, bottom, right), dilation, activation
    (32, 28, 3, 1, [1, 1, 1, 1], 1, "relu6"),
    (40, 15, 3, 2, [1, 1, 1, 1], 1, "relu"),
    (24, 14, 5, 1, [2, 2, 2, 2], 1, "hardswish"),
    (72, 13, 5, 2, [2, 2, 2, 2], 1, "swish"),
    (16, 12, 3, 2, [0, 0, 1, 1], 1, "relu6"),
    (20, 9, 3, 1, [2, 2, 2, 2], 2, "relu"),
    (48, 3, 5, 1, [2, 2, 2, 2], 1, "hardswish"),
    (16, 1, 3, 1, [1, 1, 1, 1], 1, "relu"),
    (48, 32, 5, 2, [2, 2, 2, 2], 1, "swish"),
    (16, 40, 3, 1, [2, 2, 2, 2], 2, "relu6"),
]


@pytest.mark.parametrize("isa", ["host", "avx2"])
@pytest.mark.parametrize(("channels", "size", "k", "stride", "pads", "dilation", "act"), CASES)
def test_depthwise_against_onnxruntime(isa, channels, size, k, stride, pads, dilation, act):
    model, x = _depthwise_model(channels, size, k, stride, pads, dilation, act)
    want = run_ort(model, {"x": x})[0]
    targets = None if isa == "host" else [f"cpu{{isa={isa}}}"]
    exe = lamina.compile(import_model(model).module, targets=targets)
    got = exe.run("main", x)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_depthwise_reads_its_input_in_place(tmp_path):
    """No zero-padded copy of the input (the kernel allocates nothing: it
    accumulates in its output), and the interior rows and columns, [1, 27)
    of a 28x28 image, are loops of their own."""
    model, _ = _depthwise_model(32, 28, 3, 1, [1, 1, 1, 1], 1, "relu6")
    lowered = lowered_loops(model, tmp_path)
    conv = lowered[lowered.index("loop.func private @te_fused_conv2d") :]
    conv = conv[: conv.index("loop.return")]
    assert "loop.alloc" not in conv
    assert "%c1 to %c27 step %c1" in conv


@pytest.mark.parametrize("isa", ["host", "avx2"])
def test_blocked_pools_read_in_place(isa):
    """Max and average pools with padding on `NCHW{c}c` (after a convolution)
    read their input in place, the halo guarded (-inf, resp. 0 and not
    counted), as ShuffleNet's stem pool does."""
    w = RNG.standard_normal((24, 16, 1, 1)).astype(np.float32) / 4
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[1, 1]),
        helper.make_node("MaxPool", ["c"], ["m"], kernel_shape=[3, 3], strides=[2, 2],
                         pads=[1, 1, 1, 1]),
        helper.make_node("AveragePool", ["m"], ["a"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["a", "w2"], ["y"], kernel_shape=[1, 1]),
    ]  # fmt: skip
    w2 = RNG.standard_normal((16, 24, 1, 1)).astype(np.float32) / 4
    x = RNG.standard_normal((1, 16, 29, 29)).astype(np.float32)
    model = make_model(nodes, {"x": x}, ["y"], {"w": w, "w2": w2})
    want = run_ort(model, {"x": x})[0]
    targets = None if isa == "host" else [f"cpu{{isa={isa}}}"]
    got = lamina.compile(import_model(model).module, targets=targets).run("main", x)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("isa", ["host", "avx2"])
@pytest.mark.parametrize(("channels", "size"), [(24, 56), (40, 7), (16, 13), (32, 28)])
def test_squeeze_excite_global_pool(isa, channels, size):
    """A squeeze-and-excitation block on `NCHW{c}c`: the global average pool
    (several partial sums per channel block on the AVX2 build: widths 56, 28
    and 7 split into 8, 7 and 7 column phases, the prime width 13 keeps one
    sum), two 1x1 convolutions on the pooled vector, a sigmoid and the
    broadcast multiply, against onnxruntime."""
    squeeze = max(channels // 4, 1)
    inits = {
        "w": RNG.standard_normal((channels, 16, 1, 1)).astype(np.float32) / 4,
        "w1": RNG.standard_normal((squeeze, channels, 1, 1)).astype(np.float32) / 4,
        "w2": RNG.standard_normal((channels, squeeze, 1, 1)).astype(np.float32) / 4,
    }
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[1, 1]),
        helper.make_node("GlobalAveragePool", ["c"], ["p"]),
        helper.make_node("Conv", ["p", "w1"], ["s1"], kernel_shape=[1, 1]),
        helper.make_node("Relu", ["s1"], ["r"]),
        helper.make_node("Conv", ["r", "w2"], ["s2"], kernel_shape=[1, 1]),
        helper.make_node("Sigmoid", ["s2"], ["g"]),
        helper.make_node("Mul", ["c", "g"], ["y"]),
    ]
    x = RNG.standard_normal((1, 16, size, size)).astype(np.float32)
    model = make_model(nodes, {"x": x}, ["y"], inits)
    want = run_ort(model, {"x": x})[0]
    targets = None if isa == "host" else [f"cpu{{isa={isa}}}"]
    got = lamina.compile(import_model(model).module, targets=targets).run("main", x)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
