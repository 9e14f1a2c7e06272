"""Constants of one element read by kernels as literals (`KernelBuilder.inline_splat`).

ONNX's Clip bounds (relu6 in MobileNetV2) are constants of one element;
kernels read them as literals, so the clamp is one `maxps`/`minps` by a
constant. Convolutions with relu6 and clamps by other bounds of the same
shape must not share a kernel (the value is part of the kernel's key), and
a NaN bound still gives NaN, on the host's vectors and on an AVX2 build.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx_util import make_model, run_ort

import lamina
from lamina.frontends.onnx import import_model

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402

RNG = np.random.default_rng(15)


def _clip_chain(bounds: list[tuple[float, float]]):
    """1x1 conv + Clip(lo, hi) per bound pair, all of one shape, one after the other."""
    inits: dict[str, np.ndarray] = {}
    nodes = []
    x = "x"
    for n, (lo, hi) in enumerate(bounds):
        inits[f"w{n}"] = (RNG.standard_normal((16, 16, 1, 1)) / 2).astype(np.float32)
        inits[f"b{n}"] = RNG.standard_normal(16).astype(np.float32)
        inits[f"lo{n}"] = np.array(lo, np.float32)
        inits[f"hi{n}"] = np.array(hi, np.float32)
        nodes.append(helper.make_node("Conv", [x, f"w{n}", f"b{n}"], [f"c{n}"]))
        nodes.append(helper.make_node("Clip", [f"c{n}", f"lo{n}", f"hi{n}"], [f"y{n}"]))
        x = f"y{n}"
    inputs = {"x": RNG.standard_normal((1, 16, 7, 7)).astype(np.float32) * 4}
    return make_model(nodes, inputs, [x], inits, opset=13), inputs


@pytest.mark.parametrize("target", ["cpu", "cpu{isa=avx2}"])
def test_clamps_by_different_bounds_keep_their_own_bounds(target: str) -> None:
    model, inputs = _clip_chain([(0.0, 6.0), (-1.0, 1.5), (0.0, 6.0), (0.25, 0.5)])
    want = run_ort(model, inputs)[0]
    exe = lamina.compile(import_model(model).module, targets=[target], cache=False)
    got = np.asarray(exe.run("main", *inputs.values()))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_a_nan_bound_still_gives_nan() -> None:
    model, inputs = _clip_chain([(0.0, float("nan"))])
    exe = lamina.compile(import_model(model).module, cache=False)
    got = np.asarray(exe.run("main", *inputs.values()))
    assert np.isnan(got).all()
