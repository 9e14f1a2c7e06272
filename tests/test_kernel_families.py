"""Kernel families (backends/kernel_families.py): units that differ only in integer
constants share one generic unit; their members pass the constants.

Synthetic units built and run against NumPy (a family of sums over different
lengths), units that differ where a constant must stay an immediate (not a
family), and real compiles of 1x1 convolutions over different input channel
counts against NumPy, with families off and on, reused from the disk cache."""

from __future__ import annotations

import ctypes
import json

import llvmlite.binding as llvm
import numpy as np
import pytest
from test_kernel_reuse import empty_caches

import lamina
from lamina.backends import codegen, compile_worker, kernel_cache, kernel_families, kernel_reuse
from lamina.backends.kernel_split import KernelUnit

HEADER = 'target triple = "{triple}"\n'


def _unit(
    symbol: str, count: int, *, alloca: int = 2, helper: str = "k_par0", taken: bool = False
) -> KernelUnit:
    """A kernel `out[0] = sum(x[0:count])` whose loop is in a helper (an OpenMP body's
    shape); `alloca` sizes a scratch array; `taken`: the helper's address is stored too."""
    escape = (
        f'  %".4" = alloca ptr, i64 1, align 8\n  store ptr @"{helper}", ptr %".4", align 8\n'
        if taken
        else ""
    )
    text = f"""{HEADER.format(triple=llvm.get_process_triple())}
define void @"{symbol}"(ptr noalias %".1", ptr noalias %".2") nounwind
{{
.3:
{escape}  call ccc void @"{helper}"(ptr %".1", ptr %".2")
  ret void
}}
define internal void @"{helper}"(ptr noalias %".1", ptr noalias %".2") nounwind
{{
.3:
  %".s" = alloca float, i64 {alloca}, align 4
  br label %".4"
.4:
  %".5" = phi i64 [ 0, %".3" ], [ %".9", %".4" ]
  %".acc" = phi float [ 0.0, %".3" ], [ %".8", %".4" ]
  %".6" = getelementptr inbounds float, ptr %".1", i64 %".5"
  %".7" = load float, ptr %".6", align 4
  %".8" = fadd float %".acc", %".7"
  %".9" = add i64 %".5", 1
  %".10" = icmp slt i64 %".9", {count}
  br i1 %".10", label %".4", label %".11"
.11:
  store float %".8", ptr %".s", align 4
  %".12" = getelementptr inbounds float, ptr %".1", i64 {count - 1}
  store float %".8", ptr %".2", align 4
  ret void
}}
"""
    return KernelUnit(symbol, symbol, text, (symbol,))


def _run_units(units: list[KernelUnit], symbols: list[str], length: int) -> list[float]:
    """Build every unit, load them into one engine, call each of `symbols` on one input."""
    codegen._ensure_llvm()
    target = codegen.CodeTarget.of()
    engine = llvm.create_mcjit_compiler(
        llvm.parse_assembly(""), codegen._target_machine(jit=True, target=target)
    )
    for unit in units:
        spec = compile_worker.UnitSpec(unit.text, target.cpu, target.features)
        code = compile_worker.build_unit(spec).object_code
        engine.add_object_file(llvm.ObjectFileRef.from_data(code))
    engine.finalize_object()
    x = np.arange(length, dtype=np.float32)
    out = np.zeros(1, np.float32)
    results = []
    for symbol in symbols:
        address = engine.get_function_address(symbol)
        assert address, symbol
        ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)(address)(
            x.ctypes.data, out.ctypes.data
        )
        results.append(float(out[0]))
    return results


def test_units_that_differ_in_a_trip_count_share_one_generic_unit():
    units = [_unit(f"__lamina_k_{n}", n, helper=f"k{n}_par0") for n in (5, 7, 12)]
    formed = kernel_families.form(units, "facts", "runtime")
    members, generics = formed[:3], formed[3:]
    assert len(generics) == 1 and not generics[0].names
    assert generics[0].symbol.startswith(kernel_families.GENERIC_PREFIX)
    assert all(m.needs == ((generics[0].key, generics[0].symbol),) for m in members)
    assert [m.symbol for m in members] == [u.symbol for u in units]  # the host's names
    assert len({m.key for m in members} | {u.key for u in units}) == 6
    generic = generics[0].text
    # `n` and `n - 1` (in the icmp and in a gep index): two parameters; the alloca stays
    assert 'icmp slt i64 %".9", %"fam.0"' in generic
    assert 'getelementptr inbounds float, ptr %".1", i64 %"fam.1"' in generic
    assert "alloca float, i64 2" in generic
    assert "i64 7, i64 6)" in members[1].text  # the member passes its constants
    assert "phi" not in members[1].text  # the loop lives in the generic unit only
    # deterministic, and the same family in another order has the same generic unit
    again = kernel_families.form(list(reversed(units)), "facts", "runtime")
    assert again[-1].key == generics[0].key
    assert kernel_families.form(units, "facts", "runtime") == formed
    got = _run_units(formed, [u.symbol for u in units], 12)
    np.testing.assert_array_equal(got, [np.arange(n, dtype=np.float32).sum() for n in (5, 7, 12)])


@pytest.mark.parametrize(
    "kind",
    ["alloca", "address taken", "alone"],
)
def test_units_that_differ_where_a_constant_must_stay_are_not_merged(kind):
    if kind == "alloca":  # an alloca's size is no parameter: not a family
        units = [_unit("__lamina_k_a", 5, alloca=2), _unit("__lamina_k_b", 7, alloca=3)]
    elif kind == "address taken":  # the helper with the constants escapes: no parameters
        units = [_unit(f"__lamina_k_{n}", n, taken=True) for n in (5, 7)]
    else:
        units = [_unit("__lamina_k_a", 5)]
    assert kernel_families.form(units, "facts", "runtime") == units


def test_families_can_be_turned_off(monkeypatch):
    monkeypatch.setenv(kernel_families.FAMILIES_ENV, "0")
    assert not kernel_families.enabled()
    monkeypatch.delenv(kernel_families.FAMILIES_ENV)
    assert kernel_families.enabled()


RNG = np.random.default_rng(1)
CHANNELS = (32, 48, 64)
WEIGHTS = [RNG.standard_normal((16, c, 1, 1)).astype(np.float32) for c in CHANNELS]
INPUTS = [RNG.standard_normal((1, c, 14, 14)).astype(np.float32) for c in CHANNELS]


def _program() -> str:
    """Three 1x1 convolutions (with ReLU) to 16 channels from 32, 48 and 64, summed."""

    def t(shape) -> str:
        return f"tensor<{'x'.join(map(str, shape))}xf32>"

    y = t((1, 16, 14, 14))
    args = ", ".join(f"%x{i}: {t(x.shape)}" for i, x in enumerate(INPUTS))
    lines = [f"graph.func @main({args}) -> {y} {{"]
    for i, (w, x) in enumerate(zip(WEIGHTS, INPUTS, strict=True)):
        dense = f"dense<{json.dumps(w.tolist())}> : {t(w.shape)}"
        lines.append(f"  %w{i} = graph.constant {dense}")
        lines.append(f"  %c{i} = graph.conv2d %x{i}, %w{i} : ({t(x.shape)}, {t(w.shape)}) -> {y}")
        lines.append(f"  %r{i} = graph.relu %c{i} : ({y}) -> {y}")
    lines.append(f"  %s0 = graph.add %r0, %r1 : ({y}, {y}) -> {y}")
    lines.append(f"  %s1 = graph.add %s0, %r2 : ({y}, {y}) -> {y}")
    lines.append(f"  graph.return %s1 : {y}\n}}")
    return "\n".join(lines)


def _reference() -> np.ndarray:
    return sum(
        np.maximum(np.einsum("nchw,oc->nohw", x, w[:, :, 0, 0]), 0)
        for x, w in zip(INPUTS, WEIGHTS, strict=True)
    )


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """No kernel or record in memory, an empty disk cache of our own."""
    with empty_caches(tmp_path / "cache", monkeypatch) as folder:
        yield folder


def test_convolutions_over_different_channel_counts_make_a_family(fresh, monkeypatch):
    monkeypatch.setenv(kernel_families.FAMILIES_ENV, "0")
    alone = lamina.compile(_program(), cache=False)
    assert not any(
        s.startswith(kernel_families.GENERIC_PREFIX) for s in alone.compiled.timings.kernels
    )
    monkeypatch.delenv(kernel_families.FAMILIES_ENV)
    codegen.clear_cache()
    family = lamina.compile(_program(), cache=False)
    kinds = family.compiled.timings.kernels
    generic = [s for s in kinds if s.startswith(kernel_families.GENERIC_PREFIX)]
    assert len(generic) == 1 and set(kinds.values()) <= {"built", "memory"}
    got = family.run("main", *INPUTS)
    np.testing.assert_allclose(got, _reference(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got, alone.run("main", *INPUTS), rtol=1e-6, atol=1e-6)

    kernel_cache.clear()  # a new process: the members and their generic come from disk
    kernel_reuse.clear()
    codegen.clear_cache()
    again = lamina.compile(_program(), cache=False)
    assert set(again.compiled.timings.kernels.values()) == {"disk"}
    assert set(again.compiled.timings.kernels) == set(kinds)
    np.testing.assert_array_equal(again.run("main", *INPUTS), got)


def test_a_family_is_dealt_to_one_lowering_process():
    from lamina.backends.parallel_lowering import deal

    weights = {f"conv{i}": 100 for i in range(4)} | {f"other{i}": 290 + i for i in range(8)}
    families = {f"conv{i}": "conv" for i in range(4)}
    assert deal(weights) == deal(weights, families={})  # no families: as before
    child = deal(weights, families=families)
    assert len({f"conv{i}" in child for i in range(4)}) == 1  # together


def _flat_unit(symbol: str, count: int) -> KernelUnit:
    """The kernel of `_unit` with its loop in the entry (no OpenMP body)."""
    unit = _unit(symbol, count)
    head, _, rest = unit.text.partition(f'define void @"{symbol}"')
    body = rest.split('define internal void @"k_par0"', 1)[1]
    return KernelUnit(symbol, symbol, f'{head}define void @"{symbol}"{body}', (symbol,))


def test_a_kernel_without_an_openmp_body_calls_its_generic_entry():
    units = [_flat_unit(f"__lamina_k_{n}", n) for n in (3, 9)]
    formed = kernel_families.form(units, "facts", "runtime")
    assert len(formed) == 3 and formed[2].symbol.startswith(kernel_families.GENERIC_PREFIX)
    member = formed[1].text
    assert "phi" not in member and f'@"{formed[2].symbol}_0"(ptr %".1", ptr %".2", i64 9' in member
    got = _run_units(formed, [u.symbol for u in units], 9)
    np.testing.assert_array_equal(got, [np.arange(n, dtype=np.float32).sum() for n in (3, 9)])


def test_the_model_cache_loads_a_family(fresh):
    """A model cache hit loads the generic unit's object with its members'."""
    cold = lamina.compile(_program())
    assert cold.cache_hit is False
    assert any(s.startswith(kernel_families.GENERIC_PREFIX) for s in cold.compiled.timings.kernels)
    codegen.clear_cache()
    kernel_cache.clear()
    warm = lamina.compile(_program())
    assert warm.cache_hit is True
    np.testing.assert_array_equal(warm.run("main", *INPUTS), cold.run("main", *INPUTS))


def test_a_heavy_te_family_is_two_scopes():
    weights = {f"conv{i}": 100 for i in range(8)} | {"other": 50}
    families = {f"conv{i}": "conv" for i in range(8)} | {"other": "other"}
    scopes = kernel_reuse.family_scopes(weights, families)
    assert {scopes[f"conv{i}"] for i in range(8)} == {"conv:0", "conv:1"}
    assert sum(scopes[f"conv{i}"] == "conv:0" for i in range(8)) == 4
    light = kernel_reuse.family_scopes(weights | {"big": 5000}, families)
    assert {light[f"conv{i}"] for i in range(8)} == {"conv:0"}
