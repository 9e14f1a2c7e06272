"""Kernels lowered once (backends/kernel_reuse.py): a kernel compiled before is declared
before `lower-te` and skips the Python lowering; the code is what a full lowering gives.

Real compiles of a small CNN: the second compile (kernels from memory, then from
disk in a "new process") has the same host unit text, the same kernel keys and
bit-identical outputs, and its module declares the reused kernels instead of
lowering them. Another lowering context (bounds checks) or `LAMINA_REUSE_KERNELS=0`
reuses nothing.
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import pytest
from test_kernel_units import X, conv_program, reference

import lamina
from lamina.backends import codegen, kernel_cache, kernel_reuse, kernel_split
from lamina.runtime import cache


@contextmanager
def empty_caches(folder, monkeypatch):
    """No kernel or record in memory, an empty disk cache of our own in `folder`,
    for the time of the block; then the kernels are forgotten again."""
    monkeypatch.setenv(cache.CACHE_DIR_ENV, str(folder))
    monkeypatch.delenv(cache.CACHE_ENV, raising=False)
    monkeypatch.delenv(kernel_reuse.REUSE_ENV, raising=False)
    kernel_cache.clear()
    kernel_reuse.clear()
    codegen.clear_cache()
    yield folder
    kernel_cache.clear()
    kernel_reuse.clear()


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """No kernel or record in memory, an empty disk cache of our own."""
    with empty_caches(tmp_path / "cache", monkeypatch) as folder:
        yield folder


def spy_on_splits(monkeypatch) -> list[kernel_split.Split]:
    """Every `split_module` result from now on, in order."""
    seen: list[kernel_split.Split] = []
    original = kernel_split.split_module

    def spy(*args, **kwargs):
        seen.append(original(*args, **kwargs))
        return seen[-1]

    monkeypatch.setattr(kernel_split, "split_module", spy)
    return seen


@pytest.fixture
def splits(monkeypatch):
    return spy_on_splits(monkeypatch)


def _compile(program: str, **options):
    codegen.clear_cache()  # no whole-module hit: lower and generate code every time
    return lamina.compile(program, cache=False, **options)


def _reused(exe) -> dict[str, str]:
    return kernel_reuse.module_keys(exe.llvm_module, kernel_reuse.REUSED_ATTR)


def test_a_kernel_compiled_before_is_not_lowered_again_and_gives_the_same_code(fresh, splits):
    program = conv_program(extra_relu=True)
    cold = _compile(program)
    assert not _reused(cold) and set(cold.compiled.timings.kernels.values()) == {"built"}
    warm = _compile(program)
    assert len(_reused(warm)) == len(splits[0].kernels) == 2  # both kernels declared
    assert set(warm.compiled.timings.kernels.values()) == {"memory"}
    assert splits[1].host == splits[0].host
    assert [u.key for u in splits[1].kernels] == [u.key for u in splits[0].kernels]
    np.testing.assert_array_equal(warm.run("main", X), cold.run("main", X))
    np.testing.assert_allclose(warm.run("main", X), reference(True), rtol=1e-4, atol=1e-5)


def test_records_and_objects_come_from_disk_in_a_new_process(fresh, splits):
    program = conv_program(extra_relu=True)
    cold = _compile(program)
    kernel_cache.clear()  # a new process: only the disk cache is left
    kernel_reuse.clear()
    warm = _compile(program)
    assert _reused(warm) and set(warm.compiled.timings.kernels.values()) == {"disk"}
    assert splits[1].host == splits[0].host
    np.testing.assert_array_equal(warm.run("main", X), cold.run("main", X))
    assert cache.clear() == 0 and not list((fresh / cache.KERNEL_FOLDER).glob("*.lxc"))


def test_a_second_model_reuses_the_kernels_it_shares(fresh):
    _compile(conv_program())
    second = _compile(conv_program(extra_relu=True))
    assert len(_reused(second)) == 1  # the conv + bias + relu kernel; the 1x1 conv is new
    assert sorted(second.compiled.timings.kernels.values()) == ["built", "memory"]
    np.testing.assert_allclose(second.run("main", X), reference(True), rtol=1e-4, atol=1e-5)


def test_another_lowering_context_or_the_switch_reuses_nothing(fresh, monkeypatch):
    program = conv_program()
    _compile(program)
    assert not _reused(_compile(program, check_bounds=True))  # other passes: other keys
    monkeypatch.setenv(kernel_reuse.REUSE_ENV, "0")
    assert not _reused(_compile(program))


def test_a_reused_kernel_without_its_object_is_lowered_in_full(fresh, monkeypatch):
    program = conv_program()
    _compile(program)
    kernel_cache.clear()
    monkeypatch.setenv(cache.CACHE_ENV, "0")  # the record is in memory, the object nowhere
    again = _compile(program)
    assert not _reused(again) and set(again.compiled.timings.kernels.values()) == {"built"}


def test_the_model_cache_entry_of_a_reusing_compile_loads(fresh):
    """The model's entry holds the reused kernels' objects (and OpenMP if they use it)."""
    program = conv_program(extra_relu=True)
    _compile(program)
    stored = lamina.compile(program)  # a miss of the model cache: kernels reused, then stored
    assert stored.cache_hit is False and _reused(stored)
    hit = lamina.compile(program)
    assert hit.cache_hit is True
    np.testing.assert_array_equal(hit.run("main", X), stored.run("main", X))


def test_messages_of_a_reused_kernel_name_the_kernel_of_this_model():
    record = kernel_reuse.Record(
        "k", "__lamina_k_k", "conv_loop", "declare void @x()",
        ('[21 x i8] c"kernel @conv_loop: x\\00"',), may_fail=True, openmp=False,
    )  # fmt: skip
    assert record.messages_for("conv_loop") == record.messages
    assert record.messages_for("conv_1_loop") == ('[23 x i8] c"kernel @conv_1_loop: x\\00"',)
    part = kernel_reuse.Record(
        "k", "__lamina_k_k", "conv_loop", "declare void @x()",
        ('[26 x i8] c"kernel @conv_loop_par0: x\\00"',), may_fail=True, openmp=True,
    )  # fmt: skip
    assert part.messages_for("c_loop") == ('[23 x i8] c"kernel @c_loop_par0: x\\00"',)


def test_pass_timing_observes_the_compile_with_kernel_reuse(fresh, capfd):
    """`--pass-timing` times the flow of an unobserved compile (kernels reused), while
    the instruments that print the IR still see every kernel lowered."""
    program = conv_program(extra_relu=True)
    _compile(program)
    timed = _compile(program, pass_timing=True)
    assert len(_reused(timed)) == 2 and set(timed.compiled.timings.kernels.values()) == {"memory"}
    assert "reuse-kernels" in capfd.readouterr().err
    printed = _compile(program, print_ir_after_all=True)
    assert not _reused(printed)
    np.testing.assert_array_equal(timed.run("main", X), printed.run("main", X))


def test_the_key_text_is_the_kernel_printed_as_xdsl_prints_it(fresh, monkeypatch):
    """`te_key` prints with `printed` (each piece written to the stream directly):
    the same text as `str`, for every kernel of a model (regions, blocks, attributes)."""
    seen: list[tuple[str, str]] = []
    original = kernel_reuse.te_key

    def spy(func, context, *families):
        seen.append((kernel_reuse.printed(func), str(func)))
        return original(func, context, *families)

    monkeypatch.setattr(kernel_reuse, "te_key", spy)
    _compile(conv_program())
    assert seen
    for fast, slow in seen:
        assert fast == slow
