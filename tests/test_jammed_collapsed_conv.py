"""Channel-jammed convolutions whose output-channel pairs are collapsed with a power
of two of output rows (backends/llvm/parallel.py, `_row_by_row`), against
onnxruntime, on the AVX2 build and the host's, at one and two threads.

A chunk of the collapsed (block pair, row) loop runs as a loop over the pairs it
touches around a loop over their rows, so that LLVM relates a pair's two blocks
and keeps their accumulators in registers. The shapes are direct 3x3 stride-2
convolutions with few input-channel blocks (16->32 at 64x64, 32->64 at 32x32:
jammed on AVX2 since the 8-block minimum is gone), 64->64 stride 2 onto 16 rows,
and pointwise convolutions onto 32 and 16 rows; two threads split the rows of a
pair between chunks, and must give the same bytes as one.
"""

from __future__ import annotations

import numpy as np
import pytest

import lamina
from lamina.backends.codegen import get_max_threads, set_num_threads
from lamina.frontends.onnx import import_model
from lamina.target.cpu_facts import host_cpu_facts

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402
from onnx_util import make_model, run_ort  # noqa: E402

RNG = np.random.default_rng(26)
FEATURES = host_cpu_facts().features
TARGETS = [
    pytest.param(
        "cpu{isa=avx2}",
        marks=pytest.mark.skipif(not {"avx2", "fma"} <= FEATURES, reason="the host has no AVX2"),
        id="avx2",
    ),
    pytest.param("cpu", id="host"),
]
CASES = [
    # cin, cout, size, k, stride
    (16, 32, 64, 3, 2),  # 2 input blocks on AVX2, 32 output rows
    (32, 64, 32, 3, 2),  # 4 input blocks on AVX2, 16 output rows
    (64, 64, 32, 3, 2),  # 8 input blocks, 16 output rows
    (16, 64, 32, 1, 1),  # pointwise, 32 rows
    (64, 128, 16, 1, 1),  # pointwise, 16 rows
]


def _conv_relu(cin: int, cout: int, size: int, k: int, stride: int):
    inits = {
        "w": (RNG.standard_normal((cout, cin, k, k)) / np.sqrt(cin * k * k)).astype(np.float32),
        "b": RNG.standard_normal(cout).astype(np.float32),
    }
    nodes = [
        helper.make_node(
            "Conv", ["x", "w", "b"], ["c"], kernel_shape=[k, k], strides=[stride] * 2,
            pads=[k // 2] * 4,
        ),
        helper.make_node("Relu", ["c"], ["y"]),
    ]  # fmt: skip
    x = RNG.standard_normal((1, cin, size, size)).astype(np.float32)
    return make_model(nodes, {"x": x}, ["y"], inits), x


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(("cin", "cout", "size", "k", "stride"), CASES)
def test_jammed_conv_over_power_of_two_rows(cin, cout, size, k, stride, target):
    model, x = _conv_relu(cin, cout, size, k, stride)
    (want,) = run_ort(model, {"x": x})
    exe = lamina.compile(import_model(model).module, targets=[target])
    before = get_max_threads()
    try:
        results = {}
        for threads in (1, 2):
            set_num_threads(threads)
            results[threads] = exe.run("main", x)
    finally:
        set_num_threads(before)
    np.testing.assert_allclose(results[1], want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))
    np.testing.assert_array_equal(results[1], results[2])
