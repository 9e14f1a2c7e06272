"""`LAMINA_KERNEL_OPT_LEVEL`: the pipeline level of kernel units (the host keeps O3)."""

from __future__ import annotations

import numpy as np
import pytest

import lamina
from lamina.backends import codegen, compile_worker, kernel_cache, kernel_reuse
from lamina.backends.compile_worker import UnitSpec
from lamina.runtime.env import LaminaEnvWarning

PROGRAM = """
graph.func @main(%x: tensor<4x64xf32>, %w: tensor<64x32xf32>) -> tensor<4x32xf32> {
  %y = graph.matmul %x, %w : (tensor<4x64xf32>, tensor<64x32xf32>) -> tensor<4x32xf32>
  %r = graph.relu %y : (tensor<4x32xf32>) -> tensor<4x32xf32>
  graph.return %r : tensor<4x32xf32>
}
"""


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    monkeypatch.setenv("LAMINA_CACHE", "0")
    monkeypatch.delenv(compile_worker.KERNEL_OPT_LEVEL_ENV, raising=False)
    codegen.clear_cache()
    kernel_cache.clear()
    kernel_reuse.clear()
    yield
    codegen.clear_cache()
    kernel_cache.clear()
    kernel_reuse.clear()


AVX512 = ("avx", "avx2", "avx512f", "fma")


def test_the_level_is_o3_everywhere_unless_the_environment_says():
    """O2 kernels were measured on an Intel Xeon only, and DenseNet-121's run time did
    not settle: O3 stays the default for every CPU."""
    level = compile_worker.kernel_opt_level
    assert level("emeraldrapids", AVX512) == compile_worker.OPT_LEVEL == 3
    assert level("znver4", AVX512) == 3
    assert level("haswell", ("avx", "avx2", "fma")) == 3
    assert level() == 3
    assert compile_worker.kernel_opt_level_set() is None


def test_the_level_is_in_the_kernel_keys_unset_too():
    """Unset, the key still names the level (`kernel_opt=3`, for any CPU), so kernels
    built before a default changes are never reused after it."""
    for cpu in ("sapphirerapids", "znver4", "haswell"):
        assert "kernel_opt=3" in kernel_cache.facts(codegen.CodeTarget.of(cpu=cpu))


def test_the_environment_sets_the_level(monkeypatch):
    level = compile_worker.kernel_opt_level
    monkeypatch.setenv(compile_worker.KERNEL_OPT_LEVEL_ENV, "3")
    assert level("emeraldrapids", AVX512) == 3
    assert compile_worker.kernel_opt_level_set() == 3
    monkeypatch.setenv(compile_worker.KERNEL_OPT_LEVEL_ENV, "2")
    assert level("znver4", AVX512) == 2 and level("haswell", ("avx2",)) == 2
    monkeypatch.setenv(compile_worker.KERNEL_OPT_LEVEL_ENV, "1")  # no vectorizer at O1
    with pytest.warns(LaminaEnvWarning):
        assert level("emeraldrapids", AVX512) == 3


def test_kernels_get_the_level_the_host_keeps_o3_and_the_keys_name_it(monkeypatch):
    target = codegen.CodeTarget.of()
    splits = []
    stop = kernel_cache.observe_splits(splits.append)
    try:
        lamina.compile(PROGRAM)
    finally:
        stop()
    kernel = splits[0].kernels[0]
    facts = {}
    for level in ("2", "3"):
        monkeypatch.setenv(compile_worker.KERNEL_OPT_LEVEL_ENV, level)
        assert kernel_cache.unit_spec(kernel, target).opt_level == int(level)
        assert kernel_cache.unit_spec("host text", target).opt_level == compile_worker.OPT_LEVEL
        facts[level] = kernel_cache.facts(target)
    assert facts["2"] != facts["3"] and "kernel_opt=2" in facts["2"]


def test_a_unit_is_optimized_at_its_level():
    """The spec's level reaches the pipeline: a loop O3 unswitches (a loop-invariant
    branch inside it, split into two loops) and O2 does not."""
    text = """
define void @f(ptr noalias %a, i64 %n, i1 %c) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %latch ]
  %p = getelementptr float, ptr %a, i64 %i
  %x = load float, ptr %p
  br i1 %c, label %then, label %else
then:
  %y = fmul float %x, 2.0
  store float %y, ptr %p
  br label %latch
else:
  %z = fadd float %x, 1.0
  %q = getelementptr float, ptr %a, i64 %n
  %w = load float, ptr %q
  %s = fadd float %z, %w
  store float %s, ptr %p
  br label %latch
latch:
  %next = add i64 %i, 1
  %done = icmp eq i64 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}
"""
    codegen._ensure_llvm()
    target = codegen.CodeTarget.of()
    built = {
        level: compile_worker.build_unit(
            UnitSpec(text, target.cpu, target.features, opt_level=level)
        )
        for level in (2, 3)
    }
    again = compile_worker.build_unit(UnitSpec(text, target.cpu, target.features, opt_level=2))
    assert again.object_code == built[2].object_code  # deterministic
    assert "define void @f" in str(built[2].module)
    assert built[2].object_code != built[3].object_code  # O3 made two copies of the loop


@pytest.mark.parametrize("worker", ["1", "0"])
def test_outputs_at_either_level_agree(monkeypatch, worker):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 64)).astype(np.float32)
    w = rng.standard_normal((64, 32)).astype(np.float32)
    monkeypatch.setenv(compile_worker.ENV, worker)
    results = []
    for level in ("3", "2"):
        monkeypatch.setenv(compile_worker.KERNEL_OPT_LEVEL_ENV, level)
        codegen.clear_cache()
        results.append(lamina.compile(PROGRAM).run("main", x, w))
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(results[1], np.maximum(x @ w, 0), rtol=1e-5, atol=1e-5)
