"""Small-M matmuls (dense layers with their weights passed as a parameter) on
Intel AVX-512: the column panels of B are packed from 4 row blocks
(`pack_min_row_blocks`), on Zen 4 from 32, on AVX2 from 8 (docs/performance.md,
"Small-M matmuls on Intel AVX-512"). Packing moves data, never arithmetic: the
results are NumPy's and bit-identical either way.
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


@pytest.mark.parametrize(("m", "k", "n"), [(64, 784, 512), (40, 96, 512), (128, 256, 256)])
def test_packed_and_in_place_panels_compute_numpy_s_dense_layer(m: int, k: int, n: int) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = (rng.standard_normal((k, n)) * 0.05).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    want = np.maximum(x.astype(np.float64) @ w + b, 0.0)
    outs = []
    for blocks in (1, 4, 1 << 20):
        exe = lamina.compile(_dense(m, k, n), targets=[f"cpu{{pack_min_row_blocks={blocks}}}"])
        outs.append(exe.run("main", x, w, b))
    for got in outs:
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
        np.testing.assert_array_equal(got, outs[0])
