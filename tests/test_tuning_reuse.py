"""Records per kernel, and kernels reused by the tuner's builds (docs/tuning.md, "Records"
and "Builds"): a record found by tuning one model applies to the same kernel in another
model, wherever it runs there, and to that kernel only; a compile with records lowers
again only the kernels whose own record changed; a profiling build reuses the kernels
of earlier profiling builds, with the same code and the same profile table.

Real tunes and compiles (the disk cache of each test its own); code compared byte for
byte with a compile that reuses nothing (`LAMINA_REUSE_KERNELS=0`).
"""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from test_kernel_reuse import empty_caches
from test_kernel_units import X, conv_program
from test_tuning import SMALL, _inputs, _record

import lamina
from lamina.backends import codegen, kernel_cache, kernel_reuse
from lamina.backends.kernel_split import Split
from lamina.passes.apply_records import apply_record_set, kernels
from lamina.runtime.profile import profile_addresses, slot_kernels
from lamina.target.function_knobs import KNOBS_ATTR, knobs_of_attr
from lamina.target.tuning_records import load_records
from lamina.tuning.kernels import load_model, model_kernels

LAYER1 = """
    %0 = graph.matmul %x, %w : (tensor<32x64xf32>, tensor<64x48xf32>) -> tensor<32x48xf32>
    %1 = graph.add %0, %b : (tensor<32x48xf32>, tensor<48xf32>) -> tensor<32x48xf32>
    %2 = graph.relu %1 : (tensor<32x48xf32>) -> tensor<32x48xf32>"""

OTHER = f"""
graph.func @main(%v: tensor<32x16xf32>, %w0: tensor<16x64xf32>, %w: tensor<64x48xf32>,
                 %b: tensor<48xf32>) -> tensor<32x48xf32> {{
  %y = graph.dataflow -> tensor<32x48xf32> {{
    %x = graph.matmul %v, %w0 : (tensor<32x16xf32>, tensor<16x64xf32>) -> tensor<32x64xf32>
    {LAYER1.strip()}
    graph.output %2 : tensor<32x48xf32>
  }}
  graph.return %y : tensor<32x48xf32>
}}
"""
"""SMALL's first layer (its first kernel), second here, after a kernel SMALL lacks."""


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """No kernel or reuse record in memory, an empty disk cache of our own; the
    test's own files beside it."""
    with empty_caches(tmp_path / "cache", monkeypatch):
        yield tmp_path


@pytest.fixture
def splits():
    """Every split built from now on (kernel_cache's hook)."""
    seen: list[Split] = []
    stop = kernel_cache.observe_splits(seen.append)
    yield seen
    stop()


def _compile(program, **options):
    codegen.clear_cache()  # no whole-module hit: lower and generate code every time
    return lamina.compile(program, cache=False, **options)


def _reused(exe) -> set[str]:
    return set(kernel_reuse.module_keys(exe.llvm_module, kernel_reuse.REUSED_ATTR))


def _units(split: Split) -> tuple[str, list[str]]:
    return split.host, [u.key for u in split.kernels]


def test_a_tuned_kernel_gets_its_knobs_in_another_model_and_only_it(fresh, monkeypatch):
    small, other = fresh / "small.mlir", fresh / "other.mlir"
    small.write_text(SMALL)
    other.write_text(OTHER)
    records = fresh / "small.jsonl"
    lamina.tune(small, records, budget=3, threads=1, out=io.StringIO(), measure_model=False)
    tuned = {r.kernel: r for r in load_records(records).applicable.values()}
    first, second = model_kernels(load_model(small))
    assert set(tuned) == {first.key, second.key}
    others = model_kernels(load_model(other))
    assert [k.key == first.key for k in others] == [False, True]  # shared, second there
    # Whatever the search kept, give the shared kernel knobs that change its code.
    lines = [json.loads(line) for line in records.read_text().splitlines()]
    for line in lines:
        if line["kernel"] == first.key:
            line["knobs"] = {"block_rows": 2, "block_vector_choices": [1]}
    records.write_text("".join(json.dumps(line) + "\n" for line in lines))
    module = load_model(other)
    assert apply_record_set(module, load_records(records)) == 1  # the shared kernel only
    knobbed = {
        f.sym_name.data: knobs_of_attr(f.attributes[KNOBS_ATTR])
        for f in kernels(module)
        if KNOBS_ATTR in f.attributes
    }
    assert list(knobbed.values()) == [{"block_rows": 2, "block_vector_choices": (1,)}]
    # Compiled: the shared kernel's code is SMALL's tuned one, the same every time,
    # and the same as a compile that reuses no kernel.
    small_exe = _compile(small, records=str(records))
    other_exes = [_compile(other, records=str(records)) for _ in range(2)]
    assert _reused(other_exes[0]) == {next(iter(knobbed))} and len(_reused(other_exes[1])) == 2
    shared = set(small_exe.compiled.timings.kernels) & set(other_exes[0].compiled.timings.kernels)
    assert len(shared) == 1
    monkeypatch.setenv(kernel_reuse.REUSE_ENV, "0")
    full = _compile(other, records=str(records))
    assert not _reused(full)
    codes = {e.compiled.object_code for e in (*other_exes, full)}
    assert len(codes) == 1
    default = _compile(other)
    args = _inputs(default)
    np.testing.assert_allclose(
        full.run("main", *args), default.run("main", *args), rtol=1e-5, atol=1e-5
    )


def test_a_records_compile_lowers_again_only_the_kernels_whose_record_changed(fresh, splits):
    small = fresh / "small.mlir"
    small.write_text(SMALL)
    first, second = model_kernels(load_model(small))
    one, two = fresh / "one.jsonl", fresh / "two.jsonl"
    one.write_text(_record(first.key, {"block_rows": 2}) + "\n")
    two.write_text(_record(first.key, {"block_rows": 3}) + "\n")
    _compile(small, records=str(one))  # lowers both (their record keys are learned)
    by_one = _units(splits[-1])
    changed = _compile(small, records=str(two))
    assert len(_reused(changed)) == 1  # the second kernel: no record, no change
    assert _units(splits[-1])[1][1] == by_one[1][1] != _units(splits[-1])[1][0]
    again = _compile(small, records=str(one))
    assert len(_reused(again)) == 2 and _units(splits[-1]) == by_one
    plain = _compile(small)  # no records: the second kernel is the same kernel
    assert len(_reused(plain)) == 1


def test_a_profiling_build_reuses_the_kernels_of_profiling_builds(fresh, splits, monkeypatch):
    program = conv_program(extra_relu=True)
    cold = _compile(program, profile=True)
    warm = _compile(program, profile=True)
    assert not _reused(cold) and len(_reused(warm)) == 2
    assert set(warm.compiled.timings.kernels.values()) == {"memory"}
    assert _units(splits[-1]) == _units(splits[-2])  # the same host and kernels' code
    addresses = [profile_addresses(e.compiled.engine) for e in (cold, warm)]
    tables = [slot_kernels(a) for a in addresses if a is not None]
    assert tables[0] == tables[1] and [row[1] for row in tables[0]] == [1, 0]
    np.testing.assert_array_equal(warm.run("main", X), cold.run("main", X))
    profiles = [e.profile("main", X, runs=2).kernels for e in (cold, warm)]
    assert [sorted((k.symbol, k.calls) for k in p) for p in profiles[:1]] == [
        sorted((k.symbol, k.calls) for k in p) for p in profiles[1:]
    ]
    plain = _compile(program)  # the profiled kernels' keys are not an ordinary build's
    assert not _reused(plain)
    np.testing.assert_array_equal(warm.run("main", X), plain.run("main", X))
    monkeypatch.setenv(kernel_reuse.REUSE_ENV, "0")
    full = _compile(program, profile=True)
    assert not _reused(full) and _units(splits[-1]) == _units(splits[1])
