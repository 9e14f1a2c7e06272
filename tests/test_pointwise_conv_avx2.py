"""The AVX2 build's channel-jammed convolutions against onnxruntime: on 16 vector
registers the schedule jams output-channel blocks on every pointwise row length
and L1 footprint, and splits the rows into balanced blocks
(`conv_channel_jam_everywhere`, `balanced_rows` in `schedule/register_block.py`).

The shapes are the ones that rule changed: rows of 7 and 14 columns (4 + 3 and
5 + 5 + 4 rows, 2 or 3 blocks per step), input channels whose jammed weights
overflow L1 (512-2048: ResNet-50's bottlenecks), a stride-2 downsampling 1x1,
direct 3x3 stride-2 convolutions, a stem (not jammed), and Winograd's tile products (16 tiles at 7x7: 6 + 6 + 4 rows; 49 at 14x14:
9 x 5 + 4). Each also built with the rule off (`conv_channel_jam_everywhere=0`),
which must give the same numbers.
"""

from __future__ import annotations

import numpy as np
import pytest

import lamina
from lamina.frontends.onnx import import_model
from lamina.target.cpu_facts import host_cpu_facts

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402
from onnx_util import make_model, run_ort  # noqa: E402

pytestmark = pytest.mark.skipif(
    not {"avx2", "fma"} <= host_cpu_facts().features, reason="the host has no AVX2"
)
RNG = np.random.default_rng(24)


def _block(cin: int, cout: int, size: int, k: int, stride: int, residual: bool):
    """depthwise 3x3 -> k x k conv (stride) + bias -> [+ input] -> relu."""
    inits = {
        "wd": (RNG.standard_normal((cin, 1, 3, 3)) * 0.3).astype(np.float32),
        "w": (RNG.standard_normal((cout, cin, k, k)) / np.sqrt(cin * k * k)).astype(np.float32),
        "b": RNG.standard_normal(cout).astype(np.float32),
    }
    nodes = [
        helper.make_node("Conv", ["x", "wd"], ["d"], group=cin, pads=[1] * 4, kernel_shape=[3, 3]),
        helper.make_node(
            "Conv",
            ["d", "w", "b"],
            ["c"],
            kernel_shape=[k, k],
            strides=[stride] * 2,
            pads=[k // 2] * 4,
        ),
    ]
    if residual:
        nodes.append(helper.make_node("Add", ["c", "x"], ["s"]))
    nodes.append(helper.make_node("Relu", ["s" if residual else "c"], ["y"]))
    x = RNG.standard_normal((1, cin, size, size)).astype(np.float32)
    return make_model(nodes, {"x": x}, ["y"], inits), x


CASES = [
    # cin, cout, size, k, stride, residual
    (1024, 256, 14, 1, 1, False),  # 14 columns, 32 blocks: 5 + 5 + 4 rows x 2, L1 overflow
    (256, 1024, 14, 1, 1, False),  # 14 columns, 128 blocks
    (2048, 512, 7, 1, 1, False),  # 7 columns: 4 + 3 rows x 2
    (96, 144, 7, 1, 1, False),  # 18 blocks: 3 per step, 4 + 3 rows
    (512, 128, 28, 1, 1, False),  # 28 columns, jammed now although it overflows L1
    (256, 256, 14, 1, 1, True),  # the residual add jammed with the rows
    (512, 1024, 28, 1, 2, False),  # stride-2 downsampling: 14 output columns
    (128, 128, 56, 3, 2, False),  # direct 3x3 stride 2: 28 columns, 6 x 4 + 4 rows x 2
    (256, 256, 28, 3, 2, False),  # direct 3x3 stride 2 onto 14 columns: 5 + 5 + 4 rows x 2
    (3, 64, 112, 7, 2, False),  # a stem read as NCHW1c: not jammed (7 window columns a step)
    (512, 512, 7, 3, 1, False),  # Winograd: 16 tiles, 6 + 6 + 4 rows x 2
    (128, 128, 14, 3, 1, True),  # Winograd: 49 tiles, 9 x 5 + 4 rows x 2
]


@pytest.mark.parametrize("everywhere", [1, 0])
@pytest.mark.parametrize(("cin", "cout", "size", "k", "stride", "residual"), CASES)
def test_avx2_jammed_conv_matches_onnxruntime(cin, cout, size, k, stride, residual, everywhere):
    model, x = _block(cin, cout, size, k, stride, residual)
    (want,) = run_ort(model, {"x": x})
    target = f"cpu{{isa=avx2 conv_channel_jam_everywhere={everywhere}}}"
    got = lamina.compile(import_model(model).module, targets=[target]).run("main", x)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))
