"""The compile worker (backends/compile_worker.py): LLVM's options only in processes
Lamina owns; the same object code whichever process builds a unit; a worker that
dies, hangs or cannot start never hangs the compile nor puts wrong code in a cache."""

from __future__ import annotations

import os
import signal
import sys

import numpy as np
import pytest

import lamina
from lamina.backends import codegen, compile_worker, kernel_cache, kernel_reuse
from lamina.backends.compile_worker import UnitSpec

LOOP_IR = """
define void @scale(ptr noalias %a, ptr noalias %b, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %j = mul i64 %i, 3
  %pa = getelementptr float, ptr %a, i64 %j
  %x = load float, ptr %pa
  %y = fmul float %x, 2.0
  %k = mul i64 %i, 5
  %pb = getelementptr float, ptr %b, i64 %k
  store float %y, ptr %pb
  %next = add i64 %i, 1
  %done = icmp eq i64 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}
"""

PROGRAM = """
graph.func @main(%x: tensor<4x64xf32>, %w: tensor<64x32xf32>) -> tensor<4x32xf32> {
  %y = graph.matmul %x, %w : (tensor<4x64xf32>, tensor<64x32xf32>) -> tensor<4x32xf32>
  %r = graph.relu %y : (tensor<4x32xf32>) -> tensor<4x32xf32>
  graph.return %r : tensor<4x32xf32>
}
"""


def spec(text: str = LOOP_IR) -> UnitSpec:
    codegen._ensure_llvm()
    target = codegen.CodeTarget.of()
    return UnitSpec(text, target.cpu, target.features)


def here(unit: UnitSpec) -> bytes:
    """The unit's object code built in this (the user's) process: LLVM's defaults."""
    return compile_worker.build_unit(unit).object_code


@pytest.fixture(autouse=True)
def fresh_worker(monkeypatch):
    monkeypatch.setenv(compile_worker.ENV, "1")
    monkeypatch.setattr(compile_worker, "failed", None)
    compile_worker.shutdown()
    yield
    compile_worker.shutdown()


def test_worker_builds_what_this_process_builds_with_its_options_and_sets_none_here(monkeypatch):
    """The idle passes skipped in the worker change no byte; an option that does change
    code (loop strength reduction off) reaches the worker's code and never this process."""
    unit = spec()
    before = here(unit)
    built = compile_worker.build_all([unit, unit])
    assert built.cacheable and built.options == compile_worker.OWNED_OPTIONS
    assert [u.object_code for u in built.units] == [before, before]
    assert "define void @scale" in str(built.units[0].module)  # inspection: IR made here

    monkeypatch.setattr(compile_worker, "OWNED_OPTIONS", ("-disable-lsr",))
    no_lsr = compile_worker.build_all([unit]).units[0].object_code
    assert no_lsr != before  # a new worker (other options), which set them
    assert compile_worker.build_all([unit]).units[0].object_code == no_lsr  # deterministic
    assert here(unit) == before  # never set in this process


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="Linux")
def test_the_worker_runs_on_the_cores_the_caller_runs_on_now(monkeypatch):
    """Started once, it follows the caller's later affinity and thread count."""
    compile_worker.build_all([spec()])
    cores = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, {min(cores)})
        compile_worker.build_all([spec()])
        worker = compile_worker._current
        assert worker is not None
        assert os.sched_getaffinity(worker.process.pid) == {min(cores)}
    finally:
        os.sched_setaffinity(0, cores)


def test_an_idle_worker_ends_and_the_next_build_starts_another(monkeypatch):
    monkeypatch.setattr(compile_worker, "IDLE_SECONDS", 0.2)
    unit = spec()
    first = compile_worker.build_all([unit]).units[0].object_code
    old = compile_worker._current
    assert old is not None
    old.process.wait(timeout=30)  # ended on its own
    built = compile_worker.build_all([unit])
    assert built.cacheable and built.units[0].object_code == first
    assert compile_worker._current is not old and compile_worker.failed is None


def test_a_request_that_meets_the_goodbye_is_sent_again(monkeypatch):
    compile_worker.build_all([spec()])
    original, said = compile_worker._Worker._receive, []

    def receive(self):
        if not said:  # the worker's goodbye, crossing the request
            said.append(self.process.pid)
            return {"retired": True}
        return original(self)

    monkeypatch.setattr(compile_worker._Worker, "_receive", receive)
    built = compile_worker.build_all([spec()])
    assert built.cacheable and compile_worker.failed is None
    assert compile_worker._current is not None and compile_worker._current.process.pid != said[0]


def test_an_interrupted_build_does_not_leave_answers_for_the_next(monkeypatch):
    original = compile_worker._Worker._receive

    def interrupted(self):
        monkeypatch.setattr(compile_worker._Worker, "_receive", original)
        raise KeyboardInterrupt

    compile_worker.build_all([spec()])
    monkeypatch.setattr(compile_worker._Worker, "_receive", interrupted)
    with pytest.raises(KeyboardInterrupt):
        compile_worker.build_all([spec()])
    assert compile_worker._current is None and compile_worker.failed is None
    assert compile_worker.build_all([spec()]).units[0].object_code == here(spec())


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_fork_does_not_use_or_hold_its_parents_worker():
    compile_worker.prestart()
    worker = compile_worker._current
    assert worker is not None and worker.process.stdin is not None
    pid = os.fork()
    if pid == 0:  # the child: the worker is not its, its pipe copies are /dev/null
        fd = worker.process.stdin.fileno()
        os._exit(
            0
            if compile_worker._current is None and os.readlink(f"/proc/self/fd/{fd}") == os.devnull
            else 1
        )
    assert os.waitpid(pid, 0)[1] == 0
    assert worker.process.poll() is None and compile_worker._current is worker


def test_options_are_in_the_kernel_keys(monkeypatch):
    target = codegen.CodeTarget.of()
    with_worker = kernel_cache.facts(target)
    monkeypatch.setenv(compile_worker.ENV, "0")
    assert compile_worker.options_in_effect() == ()
    without = kernel_cache.facts(target)
    assert with_worker != without and "llvm_options=-opt-disable=" in with_worker


def test_a_compile_gets_the_code_this_process_would_build(monkeypatch):
    """Every unit of a compile, built by the worker: the object code this process builds
    from the same text (the idle passes change no byte); outputs as without it."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 64)).astype(np.float32)
    w = rng.standard_normal((64, 32)).astype(np.float32)
    monkeypatch.setenv("LAMINA_CACHE", "0")
    splits = []
    stop = kernel_cache.observe_splits(splits.append)
    results = []
    try:
        for flag in ("1", "0"):
            monkeypatch.setenv(compile_worker.ENV, flag)
            codegen.clear_cache()
            kernel_cache.clear()
            kernel_reuse.clear()
            exe = lamina.compile(PROGRAM)
            results.append(exe.run("main", x, w))
            if flag == "1":
                assert compile_worker._current is not None, "the worker built them"
                assert "define" in exe.compiled.optimized_ir  # pyright: ignore
                target = codegen.CodeTarget.of()
                for unit in splits[0].kernels:
                    built = kernel_cache._objects[unit.key].object_code
                    assert built == here(kernel_cache.unit_spec(unit, target))
    finally:
        stop()
    assert len(splits) == 2 and splits[0].kernels
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_allclose(results[0], np.maximum(x @ w, 0), rtol=1e-5, atol=1e-5)


def test_llvm_errors_come_back_as_here():
    with pytest.raises(RuntimeError, match="LLVM IR parsing error"):
        compile_worker.build_all([spec("define void @f( {")])
    assert compile_worker.build_all([spec()]).cacheable  # the worker lives on


def _dies_while_building(monkeypatch, how):
    original = compile_worker._Worker.build

    def build(self, specs, done):
        os.kill(self.process.pid, how)
        return original(self, specs, done)

    monkeypatch.setattr(compile_worker._Worker, "build", build)


def test_a_worker_that_dies_leaves_the_build_to_this_process(monkeypatch):
    unit = spec()
    _dies_while_building(monkeypatch, signal.SIGKILL)
    with pytest.warns(RuntimeWarning, match="died of signal SIGKILL.*not cached"):
        built = compile_worker.build_all([unit])
    assert not built.cacheable and built.units[0].object_code == here(unit)
    assert compile_worker.options_in_effect() == ()  # from now on: here, no options
    assert compile_worker.build_all([unit]).cacheable


def test_a_silent_worker_is_stopped(monkeypatch):
    _dies_while_building(monkeypatch, signal.SIGSTOP)
    monkeypatch.setattr(compile_worker, "WAIT_SECONDS", 0.5)
    with pytest.warns(RuntimeWarning, match="silent for"):
        assert not compile_worker.build_all([spec()]).cacheable


def test_a_worker_that_cannot_start(monkeypatch):
    monkeypatch.setattr(sys, "executable", "/nonexistent/python")
    compile_worker.prestart()  # says nothing: the build does
    with pytest.warns(RuntimeWarning, match="nonexistent"):
        built = compile_worker.build_all([spec()])
    assert not built.cacheable


def test_after_a_failed_worker_kernels_are_cached_again(monkeypatch):
    """Kernels built here after the worker failed are not what their keys name: not
    cached; the next compile's keys have no options, and its kernels are cached."""
    monkeypatch.setenv("LAMINA_CACHE", "0")
    monkeypatch.setenv("LAMINA_LOWER_PROCESSES", "1")
    codegen.clear_cache()
    kernel_cache.clear()
    kernel_reuse.clear()
    monkeypatch.setattr(sys, "executable", "/bin/false")  # starts, exits at once
    x, w = np.ones((4, 64), np.float32), np.ones((64, 32), np.float32)
    with pytest.warns(RuntimeWarning, match="exited with status 1"):
        exe = lamina.compile(PROGRAM)
    assert exe.run("main", x, w)[0, 0] == 64
    assert kernel_cache.stats()["size"] == 0
    codegen.clear_cache()
    assert lamina.compile(PROGRAM).run("main", x, w)[0, 0] == 64
    assert kernel_cache.stats()["size"] > 0
