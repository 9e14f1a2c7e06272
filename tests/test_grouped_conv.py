"""Grouped convolutions (1 < groups < channels, ResNeXt's and RegNet's) in the
channel-blocked layout, against onnxruntime, on the host's ISA and on the AVX2
build.

`kernels/strategy.py` (`grouped_block_reads`) blocks a grouped conv2d whose
group width `g` is a multiple of the block (each group a run of whole
blocks) or divides it (each block holds whole groups, the weight
block-diagonal); other widths stay NCHW. Cases: group widths 2, 4, 8, 16,
32 (and 12, 24, which one or both lane widths keep NCHW; 16 and 32 on rows of 14
and 16 columns, where AVX2 jams a group's blocks), channel counts
that do not fill the last block (104 and 40 in groups of 8, 24 in groups of
4), strides 1 and 2, symmetric and asymmetric padding, a 5x5 window, 1x1
windows on rows long enough for the pointwise micro-kernel, dilation 2, a
batch of 3, output groups wider than the input's (NCHW), bias
with relu fused or bias alone, ResNeXt's bottleneck block (1x1, grouped
3x3, 1x1, residual add) staying blocked throughout, and weights passed as a
parameter.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import lamina
from lamina.frontends.onnx import import_model
from lamina.target.cpu_facts import host_cpu_facts

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402
from onnx_util import make_model, run_ort  # noqa: E402

AVX2 = "cpu{isa=avx2}"
ISAS = [
    pytest.param(None, id="host"),
    pytest.param(
        AVX2,
        id="avx2",
        marks=pytest.mark.skipif(
            not {"avx2", "fma"} <= host_cpu_facts().features, reason="the host has no AVX2"
        ),
    ),
]
RNG = np.random.default_rng(24)


def _grouped(channels, width, size, k, stride, pads, epilogue, weight_input=False, *,
             out_channels=None, dilation=1, batch=1):  # fmt: skip
    """One grouped k x k conv2d of `channels / width` groups with a bias (and relu)."""
    groups = channels // width
    out = out_channels or channels
    w = (RNG.standard_normal((out, width, k, k)) / np.sqrt(width * k * k)).astype(np.float32)
    b = RNG.standard_normal(out).astype(np.float32)
    conv = helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[k, k],
                            strides=[stride] * 2, pads=pads, group=groups,
                            dilations=[dilation] * 2)  # fmt: skip
    nodes, out = [conv], "c"
    if epilogue == "relu":
        nodes.append(helper.make_node("Relu", ["c"], ["y"]))
        out = "y"
    x = RNG.standard_normal((batch, channels, size, size)).astype(np.float32)
    inputs, inits = {"x": x}, {"w": w, "b": b}
    if weight_input:
        inputs["w"] = inits.pop("w")
    return make_model(nodes, inputs, [out], inits), inputs


CASES = [
    # channels, group width, size, kernel, stride, pads (top, left, bottom, right), epilogue
    (32, 2, 12, 3, 1, [1, 1, 1, 1], "relu"),
    (64, 4, 14, 3, 2, [1, 1, 1, 1], "relu"),
    (24, 4, 9, 3, 1, [1, 1, 1, 1], "bias"),
    (104, 8, 10, 3, 1, [1, 1, 1, 1], "relu"),
    (40, 8, 11, 3, 2, [1, 1, 1, 1], "relu"),
    (64, 16, 8, 3, 1, [1, 1, 1, 1], "relu"),
    (128, 32, 7, 3, 2, [1, 0, 1, 0], "relu"),
    (64, 32, 6, 3, 1, [0, 0, 0, 0], "bias"),
    (32, 8, 11, 5, 1, [2, 2, 2, 2], "relu"),
    (48, 24, 6, 3, 1, [1, 1, 1, 1], "relu"),
    (48, 12, 7, 3, 2, [1, 1, 1, 1], "relu"),
    (128, 16, 28, 1, 1, [0, 0, 0, 0], "relu"),
    (96, 32, 56, 1, 1, [0, 0, 0, 0], "bias"),
    (64, 4, 28, 1, 1, [0, 0, 0, 0], "relu"),
    # rows of 14 and 16 columns: on AVX2 the blocks of a group (2 and 4 of 8
    # channels) share their input broadcast, two per micro-kernel step
    (64, 16, 14, 3, 1, [1, 1, 1, 1], "relu"),
    (96, 32, 16, 3, 1, [1, 1, 1, 1], "bias"),
]


@pytest.mark.parametrize("target", ISAS)
@pytest.mark.parametrize(("channels", "width", "size", "k", "stride", "pads", "epi"), CASES)
def test_grouped_against_onnxruntime(target, channels, width, size, k, stride, pads, epi):
    model, inputs = _grouped(channels, width, size, k, stride, pads, epi)
    want = run_ort(model, inputs)[0]
    exe = lamina.compile(import_model(model).module, targets=[target] if target else None)
    got = exe.run("main", *inputs.values())
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("target", ISAS)
@pytest.mark.parametrize("width", [4, 16])
def test_grouped_weight_as_a_parameter(target, width):
    """A weight passed at run time: transformed per call where its layout map is
    the standard blocked one (a run of blocks per group), else NCHW."""
    model, inputs = _grouped(64, width, 8, 3, 1, [1, 1, 1, 1], "relu", weight_input=True)
    want = run_ort(model, inputs)[0]
    exe = lamina.compile(import_model(model).module, targets=[target] if target else None)
    np.testing.assert_allclose(exe.run("main", *inputs.values()), want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("target", ISAS)
@pytest.mark.parametrize(
    ("channels", "width", "extra"),
    [
        (64, 8, {"dilation": 2}),
        (48, 16, {"batch": 3}),
        (32, 4, {"out_channels": 64}),  # output groups of 8: stays NCHW
    ],
)
def test_grouped_dilation_batch_and_uneven_groups(target, channels, width, extra):
    model, inputs = _grouped(channels, width, 12, 3, 1, [2, 2, 2, 2], "relu", **extra)
    want = run_ort(model, inputs)[0]
    exe = lamina.compile(import_model(model).module, targets=[target] if target else None)
    np.testing.assert_allclose(exe.run("main", *inputs.values()), want, rtol=1e-4, atol=1e-5)


def _resnext_block(channels: int, width: int, size: int):
    """1x1 conv, relu, grouped 3x3, relu, 1x1 conv, residual add, relu (ResNeXt)."""
    hidden = channels // 2

    def w(*shape):
        return (RNG.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype(np.float32)

    inits = {"w1": w(hidden, channels, 1, 1), "b1": w(hidden),
             "w2": w(hidden, width, 3, 3), "b2": w(hidden),
             "w3": w(channels, hidden, 1, 1), "b3": w(channels)}  # fmt: skip
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node(
            "Conv",
            ["r1", "w2", "b2"],
            ["c2"],
            kernel_shape=[3, 3],
            pads=[1] * 4,
            group=hidden // width,
        ),  # fmt: skip
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("Conv", ["r2", "w3", "b3"], ["c3"], kernel_shape=[1, 1]),
        helper.make_node("Add", ["c3", "x"], ["s"]),
        helper.make_node("Relu", ["s"], ["y"]),
    ]
    x = RNG.standard_normal((1, channels, size, size)).astype(np.float32)
    return make_model(nodes, {"x": x}, ["y"], inits), x


@pytest.mark.parametrize("target", ISAS)
@pytest.mark.parametrize(("channels", "width", "size"), [(128, 4, 14), (208, 8, 7), (256, 32, 7)])
def test_resnext_block_stays_blocked(target, channels, width, size):
    """The block runs in `NCHW{c}c` from one transform in to one out: the grouped
    conv2d is a blocked kernel between the blocked 1x1 convolutions."""
    model, x = _resnext_block(channels, width, size)
    want = run_ort(model, {"x": x})[0]
    targets = [target] if target else None
    exe = lamina.compile(import_model(model).module, targets=targets, cache=False)
    np.testing.assert_allclose(exe.run("main", x), want, rtol=1e-4, atol=1e-5)
    kernels = set(re.findall(r"(te_\w+?_(?:\d+x)+\d+xf32(?:_\d+)?)_loop", str(exe.llvm_module)))
    transforms = [k for k in kernels if k.startswith("te_layout_transform")]
    assert len(transforms) == 2, kernels
    lanes = 8 if target else host_cpu_facts().lanes(32)
    grouped = [
        k for k in kernels if re.search(rf"conv2d_add_relu_1x\d+x{size}x{size}x{lanes}xf", k)
    ]
    assert len(grouped) == 2, kernels  # the first 1x1 and the grouped 3x3, both blocked
