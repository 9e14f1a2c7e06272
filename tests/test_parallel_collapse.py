"""Parallel loops of few iterations collapsed with the loop they hold (backends/llvm/parallel.py):
the threads share blocks x rows, and the results are the same at one and two threads."""

from __future__ import annotations

import numpy as np

import lamina
from lamina.backends.codegen import get_max_threads, set_num_threads

CONV = """
graph.func @main(%x: tensor<1x64x28x28xf32>, %w: tensor<32x64x1x1xf32>) -> tensor<1x32x28x28xf32> {
  %y = graph.conv2d %x, %w : (tensor<1x64x28x28xf32>, tensor<32x64x1x1xf32>) -> tensor<1x32x28x28xf32>
  graph.return %y : tensor<1x32x28x28xf32>
}
"""


def _reference(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    return np.einsum("nchw,fc->nfhw", x, w[:, :, 0, 0])


def test_two_channel_blocks_share_their_rows_among_threads():
    # One output-channel block per micro-kernel step (`conv_channel_jam=1`): the
    # default jams both blocks of this 28-column row into one step, leaving a
    # one-iteration block loop whose 28 rows the threads then share.
    exe = lamina.compile(CONV, targets=["cpu{conv_channel_jam=1}"], profile=True, cache=False)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 64, 28, 28)).astype(np.float32)
    w = rng.standard_normal((32, 64, 1, 1)).astype(np.float32)
    want = _reference(x, w)
    before = get_max_threads()
    try:
        results = {}
        for threads in (1, 2):
            set_num_threads(threads)
            results[threads] = exe.run("main", x, w)
            np.testing.assert_allclose(results[threads], want, rtol=1e-4, atol=1e-4)
        np.testing.assert_array_equal(results[1], results[2])
    finally:
        set_num_threads(before)
    (conv,) = [k for k in exe.profile("main", x, w, runs=1).kernels if "conv2d" in k.symbol]
    # A pointwise convolution: two output-channel blocks of 16, collapsed with the 28 rows.
    assert conv.symbol.endswith("1x2x28x28x16xf32_loop") and conv.iterations == 2 * 28


def test_rows_first_splits_rows_with_the_same_results():
    # `parallel_rows_first=1`: the pointwise convolution reads 64 x 784 input elements
    # indexed by the row only and 32 x 64 weights by the block only, so the collapsed
    # index is rows x blocks (each thread a range of rows of both blocks, a chunk run
    # block by block; one thread all of it as one chunk). The same iterations: results
    # identical to blocks first, at one and two threads.
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 64, 28, 28)).astype(np.float32)
    w = rng.standard_normal((32, 64, 1, 1)).astype(np.float32)
    want = _reference(x, w)
    before = get_max_threads()
    results = {}
    try:
        for rows_first in (0, 1):
            target = f"cpu{{conv_channel_jam=1 parallel_rows_first={rows_first}}}"
            exe = lamina.compile(CONV, targets=[target], cache=False)
            for threads in (1, 2):
                set_num_threads(threads)
                results[rows_first, threads] = exe.run("main", x, w)
                np.testing.assert_allclose(results[rows_first, threads], want, rtol=1e-4, atol=1e-4)
    finally:
        set_num_threads(before)
    for got in results.values():
        np.testing.assert_array_equal(got, results[0, 1])


CHAIN = """
graph.func @main(%x: tensor<1x64x28x28xf32>) -> tensor<1x32x28x28xf32> {
  %w = graph.constant dense<0.0625> : tensor<32x64x1x1xf32>
  %d = graph.constant dense<0.25> : tensor<32x1x3x3xf32>
  %p = graph.conv2d %x, %w : (tensor<1x64x28x28xf32>, tensor<32x64x1x1xf32>) -> tensor<1x32x28x28xf32>
  %q = graph.conv2d %p, %d {padding = array<i64: 1, 1, 1, 1>, groups = 32 : i64} : (tensor<1x32x28x28xf32>, tensor<32x1x3x3xf32>) -> tensor<1x32x28x28xf32>
  %y = graph.relu %q : (tensor<1x32x28x28xf32>) -> tensor<1x32x28x28xf32>
  graph.return %y : tensor<1x32x28x28xf32>
}
"""


def test_rows_first_for_cross_core_reads_keeps_the_results(capfd):
    # `parallel_rows_first=4` (`rows_first_crosses_less`): rows first also where the
    # input is read at the block and the row (a depthwise convolution, a layout
    # transform), unless the weights are more than 4x the input; a block loop holding
    # its rows peeled at the padding has them merged into one loop first. The same iterations
    # in the same order at one thread, the same elements per iteration at two:
    # results identical to blocks first, and to NumPy's.
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 64, 28, 28)).astype(np.float32)
    p = np.einsum("nchw,fc->nfhw", x, np.full((32, 64), 0.0625, np.float32))
    padded = np.pad(p, ((0, 0), (0, 0), (1, 1), (1, 1)))
    q = sum(0.25 * padded[:, :, i : i + 28, j : j + 28] for i in range(3) for j in range(3))
    want = np.maximum(q, 0)
    before = get_max_threads()
    results = {}
    marked = {}
    try:
        for rows_first in (0, 4):
            target = f"cpu{{parallel_rows_first={rows_first}}}"
            capfd.readouterr()
            exe = lamina.compile(CHAIN, targets=[target], cache=False, print_ir_after_all=True)
            after = capfd.readouterr().err.split("IR Dump After schedule ")[1]
            scheduled = after.split("IR Dump After")[0]
            marked[rows_first] = scheduled.count("lamina.rows_first"), scheduled.count("loop.if")
            for threads in (1, 2):
                set_num_threads(threads)
                results[rows_first, threads] = exe.run("main", x)
                np.testing.assert_allclose(results[rows_first, threads], want, rtol=1e-4, atol=1e-4)
    finally:
        set_num_threads(before)
    # With 4 the depthwise convolution's 28 peeled rows are merged (`merge_peeled_rows`:
    # two `loop.if`s choose the top, middle and bottom rows' code) and shared rows first;
    # the kernels that read or write NCHW rows of 112 bytes keep their blocks.
    assert marked[0] == (0, 0) and marked[4] == (1, 2)
    for got in results.values():
        np.testing.assert_array_equal(got, results[0, 1])
