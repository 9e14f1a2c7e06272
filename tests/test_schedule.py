"""`schedule`: register-blocked kernels compute what NumPy computes, on every tail case."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

import lamina
from lamina.backends import codegen
from lamina.driver.lowering import lower_to_build, parse_source
from lamina.schedule.register_block import choose_block
from lamina.target.cpu_facts import host_cpu_facts

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


@pytest.mark.parametrize("seq,d,heads", [(32, 64, 2), (13, 20, 2), (24, 48, 3), (40, 96, 4)])
def test_attention_with_fused_transposes_matches_numpy(seq, d, heads):
    """The head split (reshape + transpose) and merge fuse into the matmuls that
    read them; `schedule` packs the transposed K per panel (tail rows and
    columns included at the odd sizes)."""
    import peers

    exe = lamina.compile(peers.attention_program(seq, d, heads))
    inputs = peers.attention_inputs(RNG, seq, d)
    want = peers.numpy_attention(heads)(*inputs)
    np.testing.assert_allclose(exe.run("main", *inputs), want, rtol=1e-4, atol=1e-4)


def test_the_per_head_matmuls_of_attention_vectorize(capfd, monkeypatch):
    """The head split's index `head * 64 + column` gets a link of its own per
    variable (lower-to-llvm `_split_sums`): in one link its sum, added without
    `nsw`, kept LLVM from bounding the address, and the per-head matmul's
    `vectorized` loop was not vectorized (1.5x slower, and LLVM's "loop not
    vectorized" warning on stderr)."""
    import peers

    from lamina.backends import codegen

    monkeypatch.setenv("LAMINA_REUSE_KERNELS", "0")  # every kernel through LLVM here
    codegen.clear_cache()
    exe = lamina.compile(peers.attention_program(128, 256, 4), cache=False)
    assert "loop not vectorized" not in capfd.readouterr().err
    inputs = peers.attention_inputs(RNG, 128, 256)
    want = peers.numpy_attention(4)(*inputs)
    np.testing.assert_allclose(exe.run("main", *inputs), want, rtol=1e-4, atol=1e-4)


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
    shape = choose_block(1024, 1024, 32, avx2)  # BLIS's 6x16: one broadcast register
    assert shape is not None and (shape.rows, shape.vectors, shape.columns) == (6, 2, 16)
    shape = choose_block(1024, 1024, 32, avx512)  # rows: a divisor of M in [5, 10]
    assert shape is not None and (shape.rows, shape.vectors, shape.columns) == (8, 2, 32)
    shape = choose_block(1020, 1024, 32, avx512)
    assert shape is not None and (shape.rows, shape.vectors, shape.columns) == (10, 2, 32)
    for facts, broadcasts in ((avx2, lambda rows: 1), (avx512, lambda rows: rows)):
        for m, n in ((1024, 1024), (64, 512), (56, 56), (7, 40)):
            s = choose_block(m, n, 32, facts)
            assert s is not None
            assert s.rows * s.vectors + s.vectors + broadcasts(s.rows) <= facts.vector_registers
    assert choose_block(4, 3, 32, avx2) is None  # shorter than half a vector
    assert choose_block(64, 10, 32, avx512).columns == 10  # one masked vector per row


@pytest.mark.skipif(host_cpu_facts().vector_bits != 512, reason="needs an AVX-512 host")
def test_accumulators_stay_in_zmm_registers_across_k():
    module = parse_source(_matmul(64, 64, 64), "mm")
    lower_to_build(module)
    asm = codegen.emit_assembly(module)
    register_fmas = re.findall(r"vfmadd231ps\s+%zmm\d+, %zmm\d+, %zmm\d+", asm)
    assert len(register_fmas) >= 16  # an 8 x 2 zmm block: no memory operand in the k loop


def _unary(op: str, n: int) -> lamina.Executable:
    body = [f'%r = "graph.{op}"(%a0) : ({bench._t((n,))}) -> {bench._t((n,))}']
    return lamina.compile(bench._func([(n,)], (n,), body, "%r"))


def test_polynomial_exp_matches_numpy_from_denormals_to_overflow():
    x = np.concatenate([np.linspace(-110, 95, 4093), [np.nan, np.inf, -np.inf]]).astype(np.float32)
    got = _unary("exp", x.size).run("main", x)
    with np.errstate(over="ignore"):  # exp(95) overflows f32: inf, as NumPy's f32 exp
        want = np.exp(x.astype(np.float64)).astype(np.float32)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-44)


@pytest.mark.parametrize("op", ["tanh", "sigmoid"])
def test_polynomial_tanh_and_sigmoid_match_numpy(op):
    x = np.concatenate([np.linspace(-30, 30, 4093), [np.nan, np.inf, -np.inf]]).astype(np.float32)
    got = _unary(op, x.size).run("main", x)
    x64 = x.astype(np.float64)
    want = np.tanh(x64) if op == "tanh" else 1 / (1 + np.exp(-x64))
    np.testing.assert_allclose(got, want.astype(np.float32), rtol=1e-6, atol=1e-7)


def test_sigmoid_tails_and_specials_match_numpy():
    """The f32 sigmoid clamps its exponent to [-87, 88] (one scaling in the
    polynomial exp): far tails, -inf's included, differ from NumPy by less
    than 1e-38; NaN stays NaN and +inf gives 1."""
    x = np.concatenate([np.linspace(-200, 200, 8191), [np.nan, np.inf, -np.inf]]).astype(np.float32)
    got = _unary("sigmoid", x.size).run("main", x)
    with np.errstate(over="ignore"):
        want = (1 / (1 + np.exp(-x.astype(np.float64)))).astype(np.float32)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-38)
    assert got[-2] == 1.0 and 0.0 <= got[-1] < 1e-38 and np.isnan(got[-3])


def test_sigmoid_short_polynomial_stays_within_3e_7():
    """A sigmoid's exp (its argument clamped) is a degree-5 polynomial, not
    Cephes' (schedule/vector_math.py): on a dense sweep of the range its
    exponent is not clamped in, every result within 3e-7 relative of f64."""
    x = np.linspace(-85, 85, 1 << 18).astype(np.float32)
    got = _unary("sigmoid", x.size).run("main", x).astype(np.float64)
    want = 1 / (1 + np.exp(-x.astype(np.float64)))
    assert float(np.max(np.abs(got - want) / want)) < 3e-7


def test_exp_kernel_calls_no_libm():
    body = [f'%r = "graph.exp"(%a0) : ({bench._t((256,))}) -> {bench._t((256,))}']
    module = parse_source(bench._func([(256,)], (256,), body, "%r"), "exp")
    lower_to_build(module)
    asm = codegen.emit_assembly(module)
    assert "expf" not in asm
    assert re.search(r"vfmadd\w+\s+.*%[yz]mm", asm)  # the polynomial runs in vector lanes


def test_docs_performance_worked_example(tmp_path):
    """The directive example of docs/performance.md does what the page says."""
    import subprocess

    page = (Path(__file__).resolve().parents[1] / "docs" / "performance.md").read_text()
    example = page.split("```mlir\n", 1)[1].split("```", 1)[0]
    source = tmp_path / "scale.mlir"
    source.write_text(example)
    opt = Path(sys.executable).parent / "lamina-opt"
    out = subprocess.run(
        [str(opt), str(source), "-p", "schedule"], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    for expected in (
        "loop.for %io = %c0 to %c8 step %c4",
        "%i = arith.addi %io, %ii : index",
        "loop.for %i_1 = %c8 to %c10 step %c1",
    ):
        assert expected in out.stdout
    assert "lamina.schedule" not in out.stdout


def test_convolution_rows_are_not_register_blocked_but_compute_right():
    data, weight, out = (1, 2, 64, 64), (3, 2, 3, 3), (1, 3, 64, 64)
    exe = lamina.compile(bench.conv_program(1, 2, 64, 3))
    x = RNG.standard_normal(data, dtype=np.float32)
    w = RNG.standard_normal(weight, dtype=np.float32)
    got = exe.run("main", x, w)
    assert got.shape == out
    np.testing.assert_allclose(got, bench.numpy_conv3x3(x, w), rtol=1e-4, atol=1e-4)


def test_fused_dense_layer_keeps_its_register_blocked_matmul():
    """matmul + bias + relu fused into one kernel: the matmul is still blocked
    (row-stage fusion runs after register blocking and must not swallow it)."""
    module = parse_source(bench.mlp_program(64, [64, 256, 16]), "mlp")  # parallel epilogue
    lower_to_build(module)
    asm = codegen.emit_assembly(module)
    lanes = "zmm" if host_cpu_facts().vector_bits == 512 else "ymm"
    register_fmas = re.findall(rf"vfmadd231ps\s+%{lanes}\d+, %{lanes}\d+, %{lanes}\d+", asm)
    assert len(register_fmas) >= 8


def _conv_then_pointwise(channels: int, hw: int) -> str:
    """3x3 conv + relu, then a 1x1 conv of the same channels (its input blocked)."""
    t = bench._t
    data, w3, w1 = (1, channels, hw, hw), (channels, channels, 3, 3), (channels, channels, 1, 1)
    body = [
        f'%c = "graph.conv2d"(%a0, %a1) {{padding = array<i64: 1, 1, 1, 1>}} '
        f": ({t(data)}, {t(w3)}) -> {t(data)}",
        f'%r = "graph.relu"(%c) : ({t(data)}) -> {t(data)}',
        f'%p = "graph.conv2d"(%r, %a2) : ({t(data)}, {t(w1)}) -> {t(data)}',
    ]
    return bench._func([data, w3, w1], data, body, "%p")


@pytest.mark.skipif(host_cpu_facts().vector_bits != 512, reason="needs an AVX-512 host")
def test_pointwise_conv_on_one_channel_block_keeps_its_accumulators_in_registers():
    """A 16 -> 16 1x1 convolution reads and writes tensors of one shape. With
    addresses as summed element indices, its input and output shared one sum
    (`(%w + k) * 16 + ...`), which LLVM neither splits nor sees through: its
    alias analysis could not tell the rows' 64-byte accumulators apart once
    vectorized, and it loaded and stored all 14 per input channel (MobileNetV3's
    16 -> 16 at 112x112: 2.3x the register-blocked time). `lower-to-llvm`'s
    chains of byte getelementptrs (row k: the shared chain, then `+ 64k`) keep
    them in registers (docs/performance.md, "Accumulators in memory")."""
    exe = lamina.compile(_conv_then_pointwise(16, 56))
    x = RNG.standard_normal((1, 16, 56, 56), dtype=np.float32)
    w3 = RNG.standard_normal((16, 16, 3, 3), dtype=np.float32)
    w1 = RNG.standard_normal((16, 16, 1, 1), dtype=np.float32)
    hidden = np.maximum(bench.numpy_conv3x3(x, w3), 0)
    want = np.einsum("nchw,fc->nfhw", hidden, w1[:, :, 0, 0])
    np.testing.assert_allclose(exe.run("main", x, w3, w1), want, rtol=1e-4, atol=1e-3)
    module = parse_source(_conv_then_pointwise(16, 56), "pw")
    lower_to_build(module)
    asm = codegen.emit_assembly(module)
    kernel = re.search(r"^te_conv2d_1x1x56x56x16xf32\w*:\n(.*?)^\.Lfunc_end", asm, re.M | re.S)
    assert kernel, "the 1x1 convolution is a kernel of its own"
    fma_blocks = [
        block
        for block in re.split(r"^\.?\w+:|^\s*j\w+\s.*$", kernel.group(1), flags=re.M)
        if len(re.findall(r"vfmadd\w+ps\s", block)) >= 8
    ]
    assert fma_blocks
    for block in fma_blocks:
        assert not re.search(r"vmovups\s+%zmm\d+, ", block), block


def test_only_divisions_by_a_loop_invariant_value_get_arcp():
    """x / t[1] (t not written in the loop) may become x * (1 / t[1]); x / x[j] and
    a divisor from a buffer the loop stores to may not."""
    from lamina.core.context import make_context
    from lamina.core.diagnostics import parse_module
    from lamina.dialects import loop
    from lamina.schedule.reciprocal_divisions import reciprocal_divisions

    text = """builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @f(%x: memref<8xf32>, %t: memref<2xf32>, %s: memref<2xf32>, %y: memref<8xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    loop.for %j = %c0 to %c8 step %c1 kind(vectorized) {
      %v = loop.load %x[%j] : memref<8xf32>
      %d = loop.load %t[%c1] : memref<2xf32>
      %a = arith.divf %v, %d : f32
      %b = arith.divf %a, %v : f32
      %e = loop.load %s[%c0] : memref<2xf32>
      %c = arith.divf %b, %e : f32
      loop.store %c, %s[%c0] : memref<2xf32>
      loop.store %c, %y[%j] : memref<8xf32>
    }
    loop.return
  }
}
"""
    module = parse_module(make_context(), text, "t.mlir")
    (func,) = [op for op in module.walk() if isinstance(op, loop.FuncOp)]
    assert reciprocal_divisions(func) == 1
    divs = [op for op in func.walk() if op.name == "arith.divf"]
    assert ["arcp" in op.fastmath.data for op in divs] == [True, False, False]
