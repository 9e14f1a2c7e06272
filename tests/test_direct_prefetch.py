"""`conv_direct_prefetch`: a row-jammed direct 3x3 convolution (`conv_direct_row_jam`)
prefetches the next output-channel step's weights spread over the current step's
row passes (`prefetch_next_step` in schedule/weight_prefetch.py;
tests/filecheck/passes/schedule-direct-step-prefetch.mlir), against onnxruntime,
with the prefetch and without it, on the host's ISA and on the AVX2 build (which
does not jam rows and ignores it)."""

from __future__ import annotations

import numpy as np
import pytest
from isa_util import knobs_as

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
RNG = np.random.default_rng(29)


def _block(cin: int, cout: int, size: int, stride: int, relu: bool):
    """depthwise 3x3 -> 3x3 conv (stride, bias) [-> relu], weights as initializers."""
    inits = {
        "wd": (RNG.standard_normal((cin, 1, 3, 3)) * 0.3).astype(np.float32),
        "w": (RNG.standard_normal((cout, cin, 3, 3)) / np.sqrt(cin * 9)).astype(np.float32),
        "b": RNG.standard_normal(cout).astype(np.float32),
    }
    nodes = [
        helper.make_node("Conv", ["x", "wd"], ["d"], group=cin, pads=[1] * 4, kernel_shape=[3, 3]),
        helper.make_node(
            "Conv", ["d", "w", "b"], ["c"], kernel_shape=[3, 3], strides=[stride] * 2, pads=[1] * 4
        ),
    ]
    out = "c"
    if relu:
        nodes.append(helper.make_node("Relu", ["c"], ["y"]))
        out = "y"
    x = RNG.standard_normal((1, cin, size, size)).astype(np.float32)
    return make_model(nodes, {"x": x}, [out], inits), x


CASES = [
    # cin, cout, size, stride, relu
    (64, 64, 7, 1, True),  # ResNet's 7x7 stage, small: 2 blocks x 7 x 2 rows, a tail row
    (64, 96, 14, 2, False),  # stride 2 to 7x7, 6 output blocks (3 steps, the last clamped)
    (48, 64, 28, 2, True),  # 14 columns: one pass of many rows
]


@pytest.mark.parametrize("isa", [HOST, pytest.param(AVX2, marks=needs_avx2)])
@pytest.mark.parametrize(("cin", "cout", "size", "stride", "relu"), CASES)
def test_direct_prefetch_matches_onnxruntime(cin, cout, size, stride, relu, isa) -> None:
    model, x = _block(cin, cout, size, stride, relu)
    (want,) = run_ort(model, {"x": x})
    base = "conv_direct_jam_max=4 conv_direct_row_jam=2 winograd_direct_below=64"
    base += " winograd_max_weight_bytes=4096"
    for options in (f"{base} conv_direct_prefetch=2", f"{base} conv_direct_prefetch=0"):
        target = f"{isa[:-1]} {options}}}" if isa.endswith("}") else f"{isa}{{{options}}}"
        got = lamina.compile(import_model(model).module, targets=[target]).run("main", x)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


def test_direct_prefetch_by_cpu() -> None:
    """2 (L2) on two 512-bit FMA pipes (Intel AVX-512), 0 on Zen 4 and AVX2."""
    for name, want in {"sapphirerapids": 2, "znver4": 0, "znver3": 0, "haswell": 0}.items():
        assert knobs_as(name).conv_direct_prefetch == want, name
