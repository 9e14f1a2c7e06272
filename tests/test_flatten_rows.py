"""Pointwise convolutions run over flat pixel rows (`schedule-flatten-rows`,
`schedule/row_flattening.py`) against onnxruntime, with their fused epilogues
(bias, relu, relu6, a residual add), on the AVX2 and the AVX-512 build, at one
and two threads.

Each case is built with the knob on (`conv_flatten_rows=64`, every row here) and off; the
schedule is checked to have flattened the image into the rows the rule
picks (none when the output-channel blocks are not jammed; one row with one
core, or with jammed steps enough for the threads; otherwise the fewest rows
that leave the parallel loop `parallel_collapse_below` iterations), and the parallel loop to still hand
its threads blocks x rows.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import lamina
from lamina.backends.codegen import get_max_threads, set_num_threads
from lamina.core.context import make_context
from lamina.core.pass_manager import PassManager, parse_pass_pipeline
from lamina.driver.hooks import module_targets
from lamina.frontends.onnx import import_model
from lamina.target.cpu_facts import host_cpu_facts

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402
from onnx_util import make_model, run_ort  # noqa: E402

RNG = np.random.default_rng(28)
TO_SCHEDULE = (
    "normalize,lift-lambdas,specialize-batch,canonicalize,cse,specialize-closures,"
    "fold-constants,plan-devices,plan-layouts,fuse-ops,legalize,lower-te,schedule"
)
HOST_HAS = {
    "avx2": {"avx2", "fma"} <= host_cpu_facts().features,
    "avx512": "avx512f" in host_cpu_facts().features,
}


def _model(cin: int, cout: int, size: int, epilogue: str):
    """1x1 conv + bias, then `epilogue`: `bias` (nothing), `relu`, `relu6`, or
    `residual` (+ a second input, then relu)."""
    inits = {
        "w": (RNG.standard_normal((cout, cin, 1, 1)) / np.sqrt(cin)).astype(np.float32),
        "b": RNG.standard_normal(cout).astype(np.float32),
    }
    inputs = {"x": RNG.standard_normal((1, cin, size, size)).astype(np.float32)}
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[1, 1])]
    last = "c"
    if epilogue == "residual":
        inputs["r"] = RNG.standard_normal((1, cout, size, size)).astype(np.float32)
        nodes.append(helper.make_node("Add", ["c", "r"], ["s"]))
        last = "s"
    if epilogue in ("relu", "residual"):
        nodes.append(helper.make_node("Relu", [last], ["y"]))
    elif epilogue == "relu6":
        inits |= {"lo": np.array(0, np.float32), "hi": np.array(6, np.float32)}
        nodes.append(helper.make_node("Clip", [last, "lo", "hi"], ["y"]))
    else:
        nodes.append(helper.make_node("Identity", [last], ["y"]))
    return make_model(nodes, inputs, ["y"], inits), inputs


def _flat_shapes(model, target: str) -> set[tuple[int, ...]]:
    """The shapes `loop.reshape` views the convolution's pixel buffers in after `schedule`."""
    module = import_model(model).module
    module_targets(module, [target])
    PassManager(parse_pass_pipeline(TO_SCHEDULE)).run(make_context(), module)
    found = re.findall(
        r"loop\.reshape %\S+ : memref<[0-9x]+xf32> to memref<([0-9x]+)xf32>", str(module)
    )
    return {tuple(int(d) for d in shape.split("x")) for shape in found}


# isa, cin, cout, size, epilogue, cores, flat rows (0: not flattened)
CASES = [
    ("avx2", 64, 512, 7, "relu", 2, 1),  # 64 blocks, 32 jammed steps: one row of 49
    ("avx2", 32, 256, 14, "residual", 2, 2),  # 16 steps: 2 rows of 98 (32 with the rows)
    ("avx2", 16, 64, 28, "relu6", 2, 8),  # 4 steps: 8 rows of 98
    ("avx2", 32, 64, 7, "residual", 2, 0),  # 4 steps, 49 pixels: only 7 rows share: as it is
    ("avx2", 24, 48, 14, "bias", 1, 1),  # one core: one row of 196
    ("avx2", 40, 40, 13, "relu", 1, 0),  # 5 blocks, none jammed: as it is
    ("avx512", 64, 1024, 7, "relu", 2, 1),  # 64 blocks of 16, 32 steps: one row of 49
    ("avx512", 32, 64, 28, "residual", 1, 1),  # one core: one row of 784
    ("avx512", 16, 96, 14, "relu6", 2, 14),  # 6 blocks, 2 steps: only 14 rows share: as it is
]


@pytest.mark.parametrize(("isa", "cin", "cout", "size", "epilogue", "cores", "rows"), CASES)
def test_flattened_pointwise_conv_matches_onnxruntime(isa, cin, cout, size, epilogue, cores, rows):
    pytest.importorskip("onnxruntime")
    if not HOST_HAS[isa]:
        pytest.skip(f"the host has no {isa}")
    model, inputs = _model(cin, cout, size, epilogue)
    (want,) = run_ort(model, inputs)
    lanes = 8 if isa == "avx2" else 16
    on = f"cpu{{isa={isa} cores={cores} conv_flatten_rows=64}}"
    shapes = _flat_shapes(model, on)
    if rows in (0, size):
        assert shapes == set()
    else:
        flat = size * size // rows
        assert shapes == {(1, c // lanes, rows, flat, lanes) for c in (cin, cout)}
    off = f"cpu{{isa={isa} cores={cores} conv_flatten_rows=0}}"
    assert _flat_shapes(model, off) == set()
    before = get_max_threads()
    try:
        results = []
        for target in (on, off):
            exe = lamina.compile(import_model(model).module, targets=[target], cache=False)
            for threads in (1, 2):
                set_num_threads(threads)
                got = exe.run("main", *inputs.values())
                assert got.shape == want.shape
                np.testing.assert_allclose(
                    got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max())
                )
                results.append(got)
        # The same operations in the same order, whatever the rows and threads.
        for got in results[1:]:
            np.testing.assert_array_equal(got, results[0])
    finally:
        set_num_threads(before)


@pytest.mark.parametrize(
    ("cin", "cout", "size", "iterations"),
    [
        (64, 512, 7, 32),  # 32 jammed steps over one row: the steps alone
        (16, 64, 28, 4 * 8),  # 4 steps x 8 flat rows (4 x 28 image rows before)
        (32, 256, 14, 16 * 2),  # 16 steps x 2 flat rows
    ],
)
def test_flat_rows_still_split_among_threads(cin, cout, size, iterations):
    """On 2 cores the flattened convolution's parallel loop hands the threads its
    output-channel steps, times the flat rows when the steps are few."""
    if not HOST_HAS["avx2"]:
        pytest.skip("the host has no avx2")
    model, inputs = _model(cin, cout, size, "relu")
    target = "cpu{isa=avx2 cores=2 conv_flatten_rows=64}"
    exe = lamina.compile(import_model(model).module, targets=[target], profile=True, cache=False)
    before = get_max_threads()
    try:
        set_num_threads(2)
        profile = exe.profile("main", *inputs.values(), runs=1)
    finally:
        set_num_threads(before)
    (conv,) = [k for k in profile.kernels if "conv2d" in k.symbol]
    assert conv.parallel and conv.regions == 1
    assert conv.iterations == iterations


@pytest.mark.parametrize(("size", "flat"), [(7, True), (14, True), (28, False)])
def test_avx2_default_flattens_rows_of_up_to_14_columns(size, flat):
    """The AVX2 build's default (`conv_flatten_rows` 14): 7 and 14 columns leave
    short register blocks, 28 are 7 blocks of 4 rows already."""
    model, _ = _model(64, 384, size, "relu")
    shapes = _flat_shapes(model, "cpu{isa=avx2 cores=1}")
    assert shapes == ({(1, 8, 1, size * size, 8), (1, 48, 1, size * size, 8)} if flat else set())
