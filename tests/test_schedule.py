"""`schedule`: register-blocked kernels compute what NumPy computes, on every tail case."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

import lamina
from lamina.backends import codegen
from lamina.backends.cpu_facts import host_cpu_facts
from lamina.backends.executable import _as_module, lower_to_build
from lamina.passes.schedule import choose_block

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import bench  # noqa: E402

RNG = np.random.default_rng(7)


def _matmul(m: int, k: int, n: int, batch: int | None = None) -> str:
    lhs = (batch, m, k) if batch else (m, k)
    rhs = (batch, k, n) if batch else (k, n)
    out = (batch, m, n) if batch else (m, n)
    body = [
        f'%r = "graph.matmul"(%a0, %a1) : ({bench._t(lhs)}, {bench._t(rhs)}) -> {bench._t(out)}'
    ]
    return bench._func([lhs, rhs], out, body, "%r")


@pytest.mark.parametrize(
    "m,k,n,batch",
    [
        (64, 64, 64, None),  # whole blocks
        (13, 7, 40, None),  # tail rows, a row of 2.5 vectors
        (30, 9, 96, None),  # several column blocks, packed panels
        (5, 3, 200, None),  # rows too long to block whole and not a multiple: unblocked
        (17, 16, 48, 3),  # batched (attention-style)
    ],
)
def test_blocked_matmul_matches_numpy(m, k, n, batch):
    exe = lamina.compile(_matmul(m, k, n, batch))
    lhs_shape = (batch, m, k) if batch else (m, k)
    rhs_shape = (batch, k, n) if batch else (k, n)
    a = RNG.standard_normal(lhs_shape, dtype=np.float32)
    b = RNG.standard_normal(rhs_shape, dtype=np.float32)
    np.testing.assert_allclose(exe.run("main", a, b), a @ b, rtol=1e-4, atol=1e-4)


def test_mlp_with_schedule_matches_numpy():
    exe = lamina.compile(bench.mlp_program(8, [24, 32, 10]))
    x = RNG.standard_normal((8, 24), dtype=np.float32)
    w1, b1 = (
        RNG.standard_normal((24, 32), dtype=np.float32),
        RNG.standard_normal(32, dtype=np.float32),
    )
    w2, b2 = (
        RNG.standard_normal((32, 10), dtype=np.float32),
        RNG.standard_normal(10, dtype=np.float32),
    )
    expected = bench.numpy_mlp(x, w1, b1, w2, b2)
    np.testing.assert_allclose(exe.run("main", x, w1, b1, w2, b2), expected, rtol=1e-4, atol=1e-4)


def test_block_shapes_fit_the_registers():
    avx2 = host_cpu_facts().replace(vector_bits=256, vector_registers=16)
    avx512 = host_cpu_facts().replace(vector_bits=512, vector_registers=32)
    shape = choose_block(1024, 1024, 32, avx2)  # rows: a divisor of M in [3, 6]
    assert shape is not None and (shape.rows, shape.columns) == (4, 16)
    shape = choose_block(96, 64, 32, avx2)
    assert shape is not None and (shape.rows, shape.vectors, shape.columns) == (6, 2, 16)
    shape = choose_block(1020, 1024, 32, avx512)
    assert shape is not None and (shape.rows, shape.vectors, shape.columns) == (12, 2, 32)
    for facts in (avx2, avx512):
        for m, n in ((1024, 1024), (64, 512), (56, 56), (7, 40)):
            s = choose_block(m, n, 32, facts)
            assert s is not None
            assert s.rows * s.vectors + s.vectors + 2 <= facts.vector_registers
    assert choose_block(4, 4, 32, avx2) is None  # shorter than a vector


@pytest.mark.skipif(host_cpu_facts().vector_bits != 512, reason="needs an AVX-512 host")
def test_accumulators_stay_in_zmm_registers_across_k():
    module = _as_module(_matmul(64, 64, 64), "mm")
    lower_to_build(module)
    asm = codegen.emit_assembly(module)
    register_fmas = re.findall(r"vfmadd231ps\s+%zmm\d+, %zmm\d+, %zmm\d+", asm)
    assert len(register_fmas) >= 16  # an 8 x 2 zmm block: no memory operand in the k loop
