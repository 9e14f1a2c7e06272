"""The instruction set as a target option: `--target 'cpu{isa=avx2}'` and friends.

The code generator, the schedules' facts and the cache keys follow the
option; AVX2 code has no AVX-512 instruction (read in the assembly), runs
here (the development host has AVX-512, a superset) and computes what
NumPy does; code for features the host lacks is refused before it is
loaded, by faking the host's flags (never by running it).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from isa_util import HOST_HAS_AVX512, needs_avx512

import lamina
from lamina.core.diagnostics import DiagnosticError
from lamina.runtime import cpu_features
from lamina.runtime.cpu_features import HostFeatureError
from lamina.target.cpu_facts import ISA_NAMES, host_cpu_facts, isa_cpu_facts
from lamina.target.registry import TargetError, get_target

AVX2 = "cpu{isa=avx2}"
AVX512 = "cpu{isa=avx512}"


def _matmul(m: int, k: int, n: int) -> str:
    return f"""
graph.func @main(%a: tensor<{m}x{k}xf32>, %b: tensor<{k}x{n}xf32>) -> tensor<{m}x{n}xf32> {{
  %c = graph.matmul %a, %b : (tensor<{m}x{k}xf32>, tensor<{k}x{n}xf32>) -> tensor<{m}x{n}xf32>
  graph.return %c : tensor<{m}x{n}xf32>
}}
"""


MLP = """
graph.func @main(%x: tensor<64x784xf32>, %w1: tensor<784x256xf32>, %b1: tensor<256xf32>,
                 %w2: tensor<256x10xf32>, %b2: tensor<10xf32>) -> tensor<64x10xf32> {
  %h = graph.matmul %x, %w1 : (tensor<64x784xf32>, tensor<784x256xf32>) -> tensor<64x256xf32>
  %hb = graph.add %h, %b1 : (tensor<64x256xf32>, tensor<256xf32>) -> tensor<64x256xf32>
  %r = graph.relu %hb : (tensor<64x256xf32>) -> tensor<64x256xf32>
  %o = graph.matmul %r, %w2 : (tensor<64x256xf32>, tensor<256x10xf32>) -> tensor<64x10xf32>
  %ob = graph.add %o, %b2 : (tensor<64x10xf32>, tensor<10xf32>) -> tensor<64x10xf32>
  graph.return %ob : tensor<64x10xf32>
}
"""

CONV = """
graph.func @main(%x: tensor<1x32x28x28xf32>, %w: tensor<64x32x3x3xf32>, %b: tensor<64x1x1xf32>)
    -> tensor<1x64x28x28xf32> {
  %c = graph.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>}
      : (tensor<1x32x28x28xf32>, tensor<64x32x3x3xf32>) -> tensor<1x64x28x28xf32>
  %cb = graph.add %c, %b : (tensor<1x64x28x28xf32>, tensor<64x1x1xf32>) -> tensor<1x64x28x28xf32>
  %r = graph.relu %cb : (tensor<1x64x28x28xf32>) -> tensor<1x64x28x28xf32>
  graph.return %r : tensor<1x64x28x28xf32>
}
"""

RNG = np.random.default_rng(7)


def _rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _conv_reference(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    cols = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))
    return np.einsum("nchwij,fcij->nfhw", cols, w)


# -- facts ----------------------------------------------------------------------------


def test_avx2_facts_have_16_ymm_registers_and_no_avx512_feature() -> None:
    facts = get_target("cpu").__class__("cpu", options={"isa": "avx2"}).facts
    assert (facts.cpu_name, facts.vector_bits, facts.vector_registers) == ("haswell", 256, 16)
    assert {"avx2", "fma"} <= facts.features
    assert not any(f.startswith("avx512") for f in facts.features)
    assert facts.l2_bytes == host_cpu_facts().l2_bytes  # the caches stay the host's


def test_avx512_is_the_host_when_the_host_has_it() -> None:
    facts = isa_cpu_facts("avx512")
    assert facts.vector_bits == 512 and "avx512f" in facts.features
    if HOST_HAS_AVX512:
        assert facts == host_cpu_facts()
    assert isa_cpu_facts("host") == host_cpu_facts()
    assert isa_cpu_facts("skylake-avx512").cpu_name == "skylake-avx512"


def test_the_register_block_follows_the_isa() -> None:
    from lamina.schedule.register_block import choose_block
    from lamina.target.schedule_knobs import ScheduleKnobs

    avx2 = isa_cpu_facts("avx2")
    block = choose_block(1024, 1024, 32, avx2, ScheduleKnobs.for_cpu(avx2))
    assert block is not None and (block.rows, block.columns) == (6, 16)
    avx512 = isa_cpu_facts("x86-64-v4")
    block = choose_block(1024, 1024, 32, avx512, ScheduleKnobs.for_cpu(avx512))
    assert block is not None and (block.rows, block.columns) == (8, 32)


# -- bad values -----------------------------------------------------------------------


def test_an_unknown_isa_lists_the_valid_ones() -> None:
    with pytest.raises(TargetError, match=r"unknown isa 'avx3'.*one of host, avx2, avx512, "):
        lamina.compile(_matmul(8, 8, 8), targets=["cpu{isa=avx3}"])
    with pytest.raises(DiagnosticError, match="option 'cores=two' is not KEY=INTEGER"):
        lamina.compile(_matmul(8, 8, 8), targets=["cpu{cores=two}"])
    with pytest.raises(TargetError, match="vector_bits=512 is wider than isa=avx2's 256-bit"):
        lamina.compile(_matmul(8, 8, 8), targets=["cpu{isa=avx2 vector_bits=512}"])


@pytest.mark.parametrize("tool", ["lamina-run", "lamina-compile", "lamina-opt"])
def test_an_unknown_isa_is_exit_status_1_in_every_tool(tool: str, tmp_path: Path) -> None:
    source = tmp_path / "mm.mlir"
    source.write_text(_matmul(8, 8, 8))
    extra = {"lamina-compile": ["-o", str(tmp_path / "mm.o")], "lamina-opt": []}.get(tool, [])
    result = subprocess.run(
        [sys.executable, "-m", f"lamina.tools.{tool.replace('-', '_')}", str(source),
         "--target", "cpu{isa=pentium}", *extra],
        capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert "unknown isa 'pentium'" in result.stderr and "avx2" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "mm.o").exists()


# -- code ---------------------------------------------------------------------------


def _assembly(tmp_path: Path, target: str) -> str:
    from lamina.tools.lamina_compile import run

    source = tmp_path / "mm.mlir"
    source.write_text(_matmul(96, 64, 64))
    out = tmp_path / f"{len(target)}.s"
    assert run([str(source), "--target", target, "-o", str(out)]) == 0
    return out.read_text()


def test_avx2_assembly_has_no_avx512_instruction(tmp_path: Path) -> None:
    text = _assembly(tmp_path, AVX2)
    assert "vfmadd231ps\t%ymm" in text or "vfmadd213ps\t%ymm" in text
    assert "zmm" not in text
    # EVEX-only: 32 registers, masks, embedded broadcast.
    assert not any(f"%ymm{r}" in text for r in range(16, 32))
    assert "{1to" not in text and "%k1" not in text


@needs_avx512
def test_avx512_assembly_uses_zmm(tmp_path: Path) -> None:
    assert "zmm" in _assembly(tmp_path, AVX512)


def test_matmul_mlp_and_conv_at_avx2_compute_what_numpy_does() -> None:
    a, b = _rand(96, 200), _rand(200, 64)
    exe = lamina.compile(_matmul(96, 200, 64), targets=[AVX2])
    np.testing.assert_allclose(exe.run("main", a, b), a @ b, rtol=1e-4, atol=1e-4)

    x, w1, b1, w2, b2 = _rand(64, 784), _rand(784, 256), _rand(256), _rand(256, 10), _rand(10)
    exe = lamina.compile(MLP, targets=[AVX2])
    expected = np.maximum(x @ w1 + b1, 0) @ w2 + b2
    np.testing.assert_allclose(exe.run("main", x, w1, b1, w2, b2), expected, rtol=1e-3, atol=1e-3)

    x, w, bias = _rand(1, 32, 28, 28), _rand(64, 32, 3, 3), _rand(64, 1, 1)
    exe = lamina.compile(CONV, targets=[AVX2])
    expected = np.maximum(_conv_reference(x, w) + bias, 0)
    np.testing.assert_allclose(exe.run("main", x, w, bias), expected, rtol=1e-3, atol=1e-3)


def test_the_isa_is_part_of_every_cache_key(monkeypatch, tmp_path: Path) -> None:
    from lamina.runtime import cache

    monkeypatch.setenv(cache.CACHE_DIR_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(cache.CACHE_ENV, raising=False)
    program = _matmul(48, 32, 64)
    a, b = _rand(48, 32), _rand(32, 64)
    avx2 = lamina.compile(program, targets=[AVX2])
    host = lamina.compile(program, targets=["cpu"])
    assert avx2.cache_hit is False and host.cache_hit is False  # two disk entries
    assert len(cache.entries()) == 2
    assert avx2.compiled.key != host.compiled.key  # in-process (per-kernel units) keys
    assert (avx2.target_cpu, host.target_cpu) == ("haswell", host_cpu_facts().cpu_name)
    assert not any(f.startswith("avx512") for f in avx2.target_features)
    for exe in (avx2, host, lamina.compile(program, targets=[AVX2])):
        np.testing.assert_allclose(exe.run("main", a, b), a @ b, rtol=1e-4, atol=1e-4)
    again = lamina.compile(program, targets=[AVX2])
    assert again.cache_hit is True and again.target_cpu == "haswell"


def test_every_isa_name_compiles_or_cross_compiles(tmp_path: Path) -> None:
    from lamina.tools.lamina_compile import run

    source = tmp_path / "mm.mlir"
    source.write_text(_matmul(16, 16, 16))
    for name in ("x86-64-v2", "znver3", "sapphirerapids"):
        assert name in ISA_NAMES
        assert (
            run([str(source), "--target", f"cpu{{isa={name}}}", "-o", str(tmp_path / "o.o")]) == 0
        )


# -- the host check -------------------------------------------------------------------


@pytest.fixture
def avx2_only_host(monkeypatch):
    """This host's flags without any AVX-512 one (an AVX2 machine such as Zen 3)."""
    flags = cpu_features.host_flags()
    if flags is None:
        pytest.skip("no /proc/cpuinfo flags to fake")
    monkeypatch.setattr(
        cpu_features, "host_flags", lambda: frozenset(f for f in flags if "avx512" not in f)
    )


def test_code_for_features_the_host_lacks_is_refused_not_run(avx2_only_host) -> None:
    with pytest.raises(HostFeatureError, match="avx512f.*isa=avx2"):
        lamina.compile(_matmul(8, 8, 8), targets=["cpu{isa=x86-64-v4}"])
    exe = lamina.compile(_matmul(8, 8, 8), targets=[AVX2])  # AVX2 code still runs
    a = _rand(8, 8)
    np.testing.assert_allclose(exe.run("main", a, a), a @ a, rtol=1e-5, atol=1e-5)


def test_a_cache_hit_for_features_the_host_lacks_is_refused(monkeypatch, tmp_path) -> None:
    from lamina.runtime import cache

    monkeypatch.setenv(cache.CACHE_DIR_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(cache.CACHE_ENV, raising=False)
    program = _matmul(8, 16, 16)
    assert lamina.compile(program, targets=["cpu{isa=x86-64-v4}"]).cache_hit is False
    flags = cpu_features.host_flags() or frozenset()
    monkeypatch.setattr(
        cpu_features, "host_flags", lambda: frozenset(f for f in flags if "avx512" not in f)
    )
    with pytest.raises(HostFeatureError, match="cached code for CPU 'x86-64-v4'"):
        lamina.compile(program, targets=["cpu{isa=x86-64-v4}"])


def test_tools_refuse_to_run_but_cross_compile(avx2_only_host, tmp_path, capsys) -> None:
    from lamina.tools import lamina_compile, lamina_run
    from lamina.tools.cli import guarded_main

    source = tmp_path / "mm.mlir"
    source.write_text(_matmul(8, 8, 8))
    status = guarded_main("lamina-run", lambda: lamina_run.run([str(source), "--target", AVX512]))
    assert status == 1
    err = capsys.readouterr().err
    assert "lamina-run: error: code built for CPU" in err and "avx512f" in err
    for out in ("x.o", "x.so"):
        argv = [str(source), "--target", "cpu{isa=skylake-avx512}", "-o", str(tmp_path / out)]
        assert lamina_compile.run(argv) == 0
        assert (tmp_path / out).stat().st_size > 0
