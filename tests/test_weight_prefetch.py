"""Jammed pointwise convolutions that prefetch their next output-channel step's
weights (`conv_weight_prefetch`, schedule/weight_prefetch.py) on the AVX2 build:
against onnxruntime, and bit for bit against the same build without the
prefetches (a prefetch changes no value). Cases: a 7x7 image (a flat row of 12
pixel blocks and a tail, two input-channel blocks prefetched per block), 14x14
(49 blocks for 10 input-channel blocks: the later blocks prefetch nothing), 28x28
(rows of blocks), the last channel step (its prefetch index clamped to the last
block), one and two threads.
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

AVX2 = "cpu{isa=avx2}"
OFF = "cpu{isa=avx2 conv_weight_prefetch=0}"
pytestmark = pytest.mark.skipif(
    not {"avx2", "fma"} <= host_cpu_facts().features, reason="the host has no AVX2"
)
RNG = np.random.default_rng(5)


def _expansion(cin: int, cout: int, size: int):
    """depthwise 3x3 -> 1x1 conv + bias -> SiLU, so the 1x1 reads a blocked input."""
    inits = {
        "wd": (RNG.standard_normal((cin, 1, 3, 3)) * 0.3).astype(np.float32),
        "w": (RNG.standard_normal((cout, cin, 1, 1)) / np.sqrt(cin)).astype(np.float32),
        "b": RNG.standard_normal(cout).astype(np.float32),
    }
    nodes = [
        helper.make_node("Conv", ["x", "wd"], ["d"], group=cin, pads=[1] * 4, kernel_shape=[3, 3]),
        helper.make_node("Conv", ["d", "w", "b"], ["c"], kernel_shape=[1, 1]),
        helper.make_node("Sigmoid", ["c"], ["s"]),
        helper.make_node("Mul", ["c", "s"], ["y"]),
    ]
    x = RNG.standard_normal((1, cin, size, size)).astype(np.float32)
    return make_model(nodes, {"x": x}, ["y"], inits), x


@pytest.mark.parametrize(("cin", "cout", "size"), [(128, 384, 7), (80, 240, 14), (40, 120, 28)])
@pytest.mark.parametrize("threads", [1, 2])
def test_prefetching_pointwise_matches(cin, cout, size, threads) -> None:
    from lamina.backends.codegen import get_max_threads, set_num_threads

    model, x = _expansion(cin, cout, size)
    (want,) = run_ort(model, {"x": x})
    exes = [lamina.compile(import_model(model).module, targets=[t]) for t in (AVX2, OFF)]
    before = get_max_threads()
    try:
        set_num_threads(threads)
        got, plain = (exe.run("main", x) for exe in exes)
    finally:
        set_num_threads(before)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))
    np.testing.assert_array_equal(got, plain)


def test_prefetches_are_in_the_kernel(capfd) -> None:
    """The AVX2 build's loop IR after `schedule` holds `loop.prefetch`es, the
    build without them none (the rule ran, and the knob turns it off)."""
    model, _ = _expansion(128, 384, 7)
    counts = []
    for target in (AVX2, OFF):
        lamina.compile(import_model(model).module, targets=[target], print_ir_after_all=True)
        err = capfd.readouterr().err
        after = err.split("IR Dump After schedule ")[1].split("IR Dump After")[0]
        counts.append(after.count("loop.prefetch"))
    assert counts[0] > 0 and counts[1] == 0
