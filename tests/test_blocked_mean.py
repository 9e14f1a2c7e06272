"""A mean over H and W after a channel-blocked convolution (ShuffleNetV2's last
`mean([2, 3])`) runs as a global average pool on the blocked layout
(`passes/plan-layouts.py`, `propagate_mean`); the numerics against
onnxruntime, with and without `keepdims`, channel counts that do not fill the
last block, on the host's vectors and an AVX2 build."""

from __future__ import annotations

import numpy as np
import pytest
from onnx_util import make_model, run_ort

import lamina
from lamina.frontends.onnx import import_model

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402

RNG = np.random.default_rng(7)


def _model(channels: int, size: int, keepdims: int, axes: list[int]):
    w = (RNG.standard_normal((channels, 24, 1, 1)) / 5).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("ReduceMean", ["r"], ["y"], axes=axes, keepdims=keepdims),
    ]
    x = RNG.standard_normal((1, 24, size, size)).astype(np.float32)
    return make_model(nodes, {"x": x}, ["y"], {"w": w}), x


@pytest.mark.parametrize("isa", ["host", "avx2"])
@pytest.mark.parametrize(
    ("channels", "size", "keepdims", "axes"),
    [(64, 7, 0, [2, 3]), (40, 5, 1, [2, 3]), (24, 6, 0, [-1, -2])],
)
def test_blocked_mean_against_onnxruntime(isa, channels, size, keepdims, axes):
    model, x = _model(channels, size, keepdims, axes)
    want = run_ort(model, {"x": x})[0]
    targets = None if isa == "host" else [f"cpu{{isa={isa}}}"]
    got = lamina.compile(import_model(model).module, targets=targets, cache=False).run("main", x)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
