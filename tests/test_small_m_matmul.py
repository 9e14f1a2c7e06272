"""Small-M matmuls (dense layers with their weights passed as a parameter) on
Intel AVX-512: the column panels of B are packed from 4 row blocks
(`pack_min_row_blocks`), on Zen 4 from 32, on AVX2 from 8 (docs/performance.md,
"Small-M matmuls on Intel AVX-512"). Packing moves data, never arithmetic: the
results are NumPy's and bit-identical either way.

Matmuls whose A is larger than a packed panel may be (`pack_max_bytes`): on a
core with two 512-bit FMA pipes each packed panel holds `matmul_panel_group`
column blocks, stored block by block, and every row block computes them one
after the other (docs/performance.md, "Matmul 1024: column blocks in groups").
The grouping reorders loops and moves data, never the sums: results are
NumPy's and bit-identical to one block per panel.
"""

from __future__ import annotations

import numpy as np
import pytest

import lamina
from lamina.target.cpu_facts import isa_cpu_facts
from lamina.target.schedule_knobs import ScheduleKnobs


@pytest.mark.parametrize(
    ("isa", "blocks"),
    [("sapphirerapids", 4), ("skylake-avx512", 4), ("znver4", 32), ("avx2", 8), ("znver3", 8)],
)
def test_pack_threshold_follows_the_cpu(isa: str, blocks: int) -> None:
    assert ScheduleKnobs.for_cpu(isa_cpu_facts(isa)).pack_min_row_blocks == blocks


def _dense(m: int, k: int, n: int) -> str:
    return f"""
graph.func @main(%x: tensor<{m}x{k}xf32>, %w: tensor<{k}x{n}xf32>, %b: tensor<{n}xf32>) -> tensor<{m}x{n}xf32> {{
  %y = graph.matmul %x, %w : (tensor<{m}x{k}xf32>, tensor<{k}x{n}xf32>) -> tensor<{m}x{n}xf32>
  %z = graph.add %y, %b : (tensor<{m}x{n}xf32>, tensor<{n}xf32>) -> tensor<{m}x{n}xf32>
  %r = graph.relu %z : (tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
  graph.return %r : tensor<{m}x{n}xf32>
}}
"""


def _dense_data(m: int, k: int, n: int) -> tuple[np.ndarray, ...]:
    """x, w, b of a dense layer and its ReLU(x @ w + b) in float64."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = (rng.standard_normal((k, n)) * 0.05).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    return x, w, b, np.maximum(x.astype(np.float64) @ w + b, 0.0)


@pytest.mark.parametrize(("m", "k", "n"), [(64, 784, 512), (40, 96, 512), (128, 256, 256)])
def test_packed_and_in_place_panels_compute_numpy_s_dense_layer(m: int, k: int, n: int) -> None:
    x, w, b, want = _dense_data(m, k, n)
    outs = []
    for blocks in (1, 4, 1 << 20):
        exe = lamina.compile(_dense(m, k, n), targets=[f"cpu{{pack_min_row_blocks={blocks}}}"])
        outs.append(exe.run("main", x, w, b))
    for got in outs:
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
        np.testing.assert_array_equal(got, outs[0])


@pytest.mark.parametrize(
    ("isa", "group"),
    [("sapphirerapids", 4), ("skylake-avx512", 4), ("znver4", 0), ("avx2", 0), ("znver3", 0)],
)
def test_panel_group_follows_the_cpu(isa: str, group: int) -> None:
    assert ScheduleKnobs.for_cpu(isa_cpu_facts(isa)).matmul_panel_group == group


# A of 300 x 96 floats (112 KiB) is larger than 64 KiB panels: grouped. 300 rows
# leave a tail block; 96 and 384 columns are 3 and 12 column blocks on AVX-512.
@pytest.mark.parametrize(("m", "k", "n"), [(300, 96, 384), (256, 128, 96), (512, 64, 256)])
@pytest.mark.parametrize("threads", [1, 2])
def test_grouped_panels_compute_numpy_s_dense_layer(m: int, k: int, n: int, threads: int) -> None:
    from lamina.backends.codegen import get_max_threads, set_num_threads

    x, w, b, want = _dense_data(m, k, n)
    outs = []
    before = get_max_threads()
    set_num_threads(threads)
    try:
        for group in (0, 2, 4):
            target = f"cpu{{pack_max_bytes=65536,matmul_panel_group={group}}}"
            exe = lamina.compile(_dense(m, k, n), targets=[target], cache=False)
            outs.append(exe.run("main", x, w, b))
    finally:
        set_num_threads(before)
    for got in outs:
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
        np.testing.assert_array_equal(got, outs[0])


def test_grouped_matmul_keeps_its_accumulators_in_registers() -> None:
    """The packed panel is a block of the device allocator (`noalias`), freed
    (`nocapture`, not inlined) in the same column iteration: LLVM then knows it
    is no view of C and keeps the 8 x 32 tile in registers across k. With a
    `free` that captured its pointer it versioned the loop on runtime alias
    checks and loaded and stored C on every step (matmul 1024: 5x slower)."""
    program = """
graph.func @main(%a: tensor<1024x1024xf32>, %b: tensor<1024x1024xf32>) -> tensor<1024x1024xf32> {
  %c = graph.matmul %a, %b : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  graph.return %c : tensor<1024x1024xf32>
}
"""
    exe = lamina.compile(program, targets=["cpu{matmul_panel_group=4}"], cache=False)
    ir = exe.compiled.optimized_ir
    assert "found.conflict" not in ir
    rng = np.random.default_rng(1)
    a = rng.standard_normal((1024, 1024)).astype(np.float32)
    b = rng.standard_normal((1024, 1024)).astype(np.float32)
    np.testing.assert_allclose(exe.run("main", a, b), a @ b, rtol=1e-4, atol=1e-3)
