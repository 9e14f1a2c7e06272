"""ShuffleNetV2's unit against onnxruntime: a channel split, a 1x1 convolution
branch on one half, the other half concatenated unchanged with the branch's
output and the channels shuffled. The unchanged half is read in place by the
concatenation's kernel (`passes/fuse_ops.py`, `_feeds_concat`), the
branch's blocked result is cropped inside the shuffle's kernel and the next
unit's half is sliced and blocked by one kernel, and a last shuffle read by a
blocked convolution writes the blocked layout (`_shuffle_layout`); channel
counts that are not whole vector blocks (58 halves of 116), on the host's
vectors and an AVX2 build."""

from __future__ import annotations

import numpy as np
import pytest
from onnx_util import make_model, run_ort

import lamina
from lamina.frontends.onnx import import_model

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402

RNG = np.random.default_rng(11)


def _unit(channels: int, size: int, units: int = 1, tail: bool = False):
    half = channels // 2
    inits = {
        "split": np.array([half, half], dtype=np.int64),
        "s5": np.array([1, 2, half, size, size], dtype=np.int64),
        "s4": np.array([1, channels, size, size], dtype=np.int64),
    }
    nodes = []
    for u in range(units):
        x, y = ("x" if u == 0 else f"y{u - 1}"), ("y" if u == units - 1 else f"y{u}")
        inits[f"w{u}"] = (RNG.standard_normal((half, half, 1, 1)) / np.sqrt(half)).astype(
            np.float32
        )
        nodes += [
            helper.make_node("Split", [x, "split"], [f"a{u}", f"b{u}"], axis=1),
            helper.make_node("Conv", [f"b{u}", f"w{u}"], [f"c{u}"], kernel_shape=[1, 1]),
            helper.make_node("Relu", [f"c{u}"], [f"r{u}"]),
            helper.make_node("Concat", [f"a{u}", f"r{u}"], [f"cat{u}"], axis=1),
            helper.make_node("Reshape", [f"cat{u}", "s5"], [f"g{u}"]),
            helper.make_node("Transpose", [f"g{u}"], [f"t{u}"], perm=[0, 2, 1, 3, 4]),
            helper.make_node("Reshape", [f"t{u}", "s4"], [y]),
        ]
    if tail:  # the next stage's convolution reads the last shuffle blocked
        nodes[-1].output[0] = "shuffled"
        inits["wt"] = (RNG.standard_normal((channels, channels, 1, 1)) / channels).astype(
            np.float32
        )
        nodes.append(helper.make_node("Conv", ["shuffled", "wt"], ["y"], kernel_shape=[1, 1]))
    x = RNG.standard_normal((1, channels, size, size)).astype(np.float32)
    return make_model(nodes, {"x": x}, ["y"], inits), x


@pytest.mark.parametrize("isa", ["host", "avx2"])
@pytest.mark.parametrize(
    ("channels", "size", "units", "tail"),
    [(116, 7, 1, False), (64, 5, 1, False), (116, 7, 3, False), (116, 7, 2, True)],
)
def test_shuffle_unit_against_onnxruntime(isa, channels, size, units, tail):
    model, x = _unit(channels, size, units, tail)
    want = run_ort(model, {"x": x})[0]
    targets = None if isa == "host" else [f"cpu{{isa={isa}}}"]
    got = lamina.compile(import_model(model).module, targets=targets, cache=False).run("main", x)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
