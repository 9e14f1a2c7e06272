"""Stem convolutions (3 input channels, read as `NCHW1c`) with output-channel
blocks jammed on 32 registers (`conv_stem_jam_wide`, schedule/register_block.py;
tests/filecheck/passes/schedule-stem-jam-wide.mlir), against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

import lamina
from lamina.frontends.onnx import import_model
from lamina.target.cpu_facts import host_cpu_facts

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402
from onnx_util import make_model, run_ort  # noqa: E402

HOST = "cpu"
AVX2 = "cpu{isa=avx2}"
needs_avx2 = pytest.mark.skipif(
    not {"avx2", "fma"} <= host_cpu_facts().features, reason="the host has no AVX2"
)
RNG = np.random.default_rng(5)


def _stem(cout: int, size: int, k: int, stride: int, pad: int):
    """x -> k x k conv (3 -> cout, stride, bias) -> relu -> 1x1 conv (cout -> 16): the
    1x1 convolution after it keeps the stem's output channel-blocked, as in a network."""
    inits = {
        "w": (RNG.standard_normal((cout, 3, k, k)) / np.sqrt(3 * k * k)).astype(np.float32),
        "b": RNG.standard_normal(cout).astype(np.float32),
        "w2": (RNG.standard_normal((16, cout, 1, 1)) / np.sqrt(cout)).astype(np.float32),
    }
    nodes = [
        helper.make_node(
            "Conv",
            ["x", "w", "b"],
            ["c"],
            kernel_shape=[k, k],
            strides=[stride] * 2,
            pads=[pad] * 4,
        ),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("Conv", ["r", "w2"], ["y"], kernel_shape=[1, 1]),
    ]
    x = RNG.standard_normal((1, 3, size, size)).astype(np.float32)
    return make_model(nodes, {"x": x}, ["y"], inits), x


STEMS = [
    # cout, size, k, stride, pad
    (
        64,
        64,
        7,
        2,
        3,
    ),  # ResNet's stem (224 -> 112 in the network): 4 blocks, 2 per step, 14 + 14 + 4 rows
    (32, 56, 3, 2, 1),  # MobileNet's and EfficientNet's: 2 blocks
    (24, 57, 3, 2, 0),  # 1.5 blocks (padded channels), an odd image, no padding
    (48, 30, 3, 2, 1),  # 3 blocks of 16: 2 does not divide them, one block per step
]


@pytest.mark.parametrize("isa", [HOST, pytest.param(AVX2, marks=needs_avx2)])
@pytest.mark.parametrize(("cout", "size", "k", "stride", "pad"), STEMS)
@pytest.mark.parametrize(
    "options", ["conv_stem_jam_wide=2", "conv_stem_jam_wide=4", "conv_stem_jam_wide=0"]
)
def test_wide_stem_jam_matches_onnxruntime(cout, size, k, stride, pad, options, isa) -> None:
    """Forced on (2: the default with two 512-bit FMA pipes; 4: four blocks of
    6 rows) and off; the AVX2 build jams stems its own way
    (`conv_channel_jam_everywhere`) and ignores the knob."""
    model, x = _stem(cout, size, k, stride, pad)
    (want,) = run_ort(model, {"x": x})
    target = f"{isa[:-1]} {options}}}" if isa.endswith("}") else f"{isa}{{{options}}}"
    got = lamina.compile(import_model(model).module, targets=[target]).run("main", x)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


def test_wide_fma_pipes_decides_the_stem_jam() -> None:
    """Two 512-bit FMA pipes (Intel Xeon) -> 2 blocks per step; Zen 4, generic
    AVX-512 and AVX2 -> 0 (their code unchanged)."""
    from lamina.target.cpu_facts import isa_cpu_facts
    from lamina.target.schedule_knobs import ScheduleKnobs

    host = host_cpu_facts()
    for name, want in {"sapphirerapids": 2, "znver4": 0, "x86-64-v4": 0, "haswell": 0}.items():
        features = isa_cpu_facts(name).features if name != host.cpu_name else host.features
        bits, registers = (512, 32) if "avx512f" in features else (256, 16)
        facts = host.replace(
            cpu_name=name, features=features, vector_bits=bits, vector_registers=registers
        )
        assert ScheduleKnobs.for_cpu(facts).conv_stem_jam_wide == want, name


def _dense_head(size: int, growth: int):
    """DenseNet's first layers: 7x7 stride-2 stem (3 -> 64, bias) -> relu -> 3x3
    stride-2 max pool -> two dense layers (concatenation -> batch norm -> relu ->
    1x1 64 -> 128 -> relu -> 3x3 128 -> `growth`), the second's concatenation of
    the pool and the first layer's output, a 1x1 convolution after the last
    concatenation. The stem is produced blocked through
    the pool and the concatenations (`_blocked_concat` in kernels/strategy.py;
    tests/filecheck/passes/plan-layouts-stem-concat.mlir)."""

    def bn(name: str, channels: int) -> dict[str, np.ndarray]:
        return {
            f"{name}_s": (1 + 0.1 * RNG.standard_normal(channels)).astype(np.float32),
            f"{name}_b": (0.1 * RNG.standard_normal(channels)).astype(np.float32),
            f"{name}_m": (0.1 * RNG.standard_normal(channels)).astype(np.float32),
            f"{name}_v": (1 + 0.1 * RNG.random(channels)).astype(np.float32),
        }

    def conv(name: str, cout: int, cin: int, k: int) -> dict[str, np.ndarray]:
        return {
            f"{name}_w": (RNG.standard_normal((cout, cin, k, k)) / np.sqrt(cin * k * k)).astype(
                np.float32
            ),
            f"{name}_b": (0.1 * RNG.standard_normal(cout)).astype(np.float32),
        }

    inits = {**conv("stem", 64, 3, 7)}
    nodes = [
        helper.make_node(
            "Conv",
            ["x", "stem_w", "stem_b"],
            ["c0"],
            kernel_shape=[7, 7],
            strides=[2, 2],
            pads=[3] * 4,
        ),  # fmt: skip
        helper.make_node("Relu", ["c0"], ["r0"]),
        helper.make_node(
            "MaxPool", ["r0"], ["p0"], kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4
        ),
    ]
    features = ["p0"]
    for layer in range(2):
        cin = 64 + growth * layer
        n = f"l{layer}"
        inits |= bn(f"{n}n", cin) | conv(f"{n}c1", 128, cin, 1) | conv(f"{n}c2", growth, 128, 3)
        nodes += [
            helper.make_node("Concat", features, [f"{n}cat"], axis=1),
            helper.make_node(
                "BatchNormalization",
                [f"{n}cat", f"{n}n_s", f"{n}n_b", f"{n}n_m", f"{n}n_v"],
                [f"{n}bn"],
            ),
            helper.make_node("Relu", [f"{n}bn"], [f"{n}r1"]),
            helper.make_node(
                "Conv", [f"{n}r1", f"{n}c1_w", f"{n}c1_b"], [f"{n}y1"], kernel_shape=[1, 1]
            ),
            helper.make_node("Relu", [f"{n}y1"], [f"{n}r2"]),
            helper.make_node(
                "Conv",
                [f"{n}r2", f"{n}c2_w", f"{n}c2_b"],
                [f"{n}y2"],
                kernel_shape=[3, 3],
                pads=[1] * 4,
            ),
        ]
        features.append(f"{n}y2")
    inits |= conv("last", 16, 64 + 2 * growth, 1)
    nodes += [
        helper.make_node("Concat", features, ["cat"], axis=1),
        helper.make_node("Conv", ["cat", "last_w", "last_b"], ["y"], kernel_shape=[1, 1]),
    ]
    x = RNG.standard_normal((1, 3, size, size)).astype(np.float32)
    return make_model(nodes, {"x": x}, ["y"], inits), x


@pytest.mark.parametrize("isa", [HOST, pytest.param(AVX2, marks=needs_avx2)])
@pytest.mark.parametrize(("size", "growth"), [(64, 32), (46, 16)])
def test_dense_head_matches_onnxruntime(size, growth, isa) -> None:
    """DenseNet's head with its stem blocked through the pool and the
    concatenations (56x56 after the pool in the network, 16x16 and 12x12 here;
    a growth of one block and of two), both builds."""
    model, x = _dense_head(size, growth)
    (want,) = run_ort(model, {"x": x})
    target = f"{isa[:-1]} conv_nchw_pointwise_min_pixels=64}}" if isa.endswith("}") else (
        f"{isa}{{conv_nchw_pointwise_min_pixels=64}}"
    )  # fmt: skip
    got = lamina.compile(import_model(model).module, targets=[target]).run("main", x)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))
