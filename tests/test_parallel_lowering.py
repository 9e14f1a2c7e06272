"""Both cores for the Python lowering (backends/parallel_lowering.py): a forked process
lowers and compiles part of the kernels; the code is the same as a serial compile's.

Real compiles of a CNN of seven distinct conv kernels, with one and with two
lowering processes: the same host unit text, kernel keys, object code and
outputs (against NumPy too). A child that fails makes the compile redo the
work serially, with the same result.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import threading

import numpy as np
import pytest
from test_kernel_reuse import spy_on_splits

import lamina
from lamina.backends import codegen, kernel_cache, kernel_reuse, parallel_lowering
from lamina.runtime import cache

CHANNELS = (3, 4, 6, 8, 10, 12, 14, 16)
RNG = np.random.default_rng(1)
WEIGHTS = [
    (RNG.standard_normal((o, i, 3, 3)) / np.sqrt(9 * i)).astype(np.float32)
    for i, o in zip(CHANNELS, CHANNELS[1:], strict=False)
]
X = RNG.standard_normal((1, 3, 10, 10)).astype(np.float32)


def _t(shape) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xf32>"


def program() -> str:
    """Seven 3x3 'same' conv + relu layers of growing width: seven distinct kernels."""
    params = ", ".join(f"%w{i}: {_t(w.shape)}" for i, w in enumerate(WEIGHTS))
    body, current = [], "%x"
    for i, w in enumerate(WEIGHTS):
        src, dst = _t((1, w.shape[1], 10, 10)), _t((1, w.shape[0], 10, 10))
        body.append(
            f"  %c{i} = graph.conv2d {current}, %w{i} {{padding = array<i64: 1, 1, 1, 1>}}"
            f" : ({src}, {_t(w.shape)}) -> {dst}\n  %r{i} = graph.relu %c{i} : ({dst}) -> {dst}"
        )
        current = f"%r{i}"
    out = _t((1, CHANNELS[-1], 10, 10))
    return (
        f"graph.func @main(%x: {_t(X.shape)}, {params}) -> {out} {{\n"
        + "\n".join(body)
        + f"\n  graph.return {current} : {out}\n}}\n"
    )


def reference() -> np.ndarray:
    y = X.astype(np.float64)
    for w in WEIGHTS:
        pad = np.pad(y, ((0, 0), (0, 0), (1, 1), (1, 1)))
        out = np.zeros((1, w.shape[0], 10, 10))
        for a in range(3):
            for b in range(3):
                out += np.einsum("nchw,oc->nohw", pad[:, :, a : a + 10, b : b + 10], w[:, :, a, b])
        y = np.maximum(out, 0)
    return y


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.CACHE_DIR_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(cache.CACHE_ENV, raising=False)
    monkeypatch.delenv(kernel_reuse.REUSE_ENV, raising=False)
    yield
    kernel_cache.clear()
    kernel_reuse.clear()


@pytest.fixture
def splits(monkeypatch):
    return spy_on_splits(monkeypatch)


def _cold(monkeypatch, processes: str):
    """A compile from nothing (no kernel, record or module anywhere) with `processes`."""
    monkeypatch.setenv(parallel_lowering.PROCESSES_ENV, processes)
    codegen.clear_cache()
    kernel_cache.clear()
    kernel_reuse.clear()
    cache.clear()
    return lamina.compile(program(), cache=False)


def test_two_processes_give_the_code_of_one(fresh, splits, monkeypatch):
    serial = _cold(monkeypatch, "1")
    parallel = _cold(monkeypatch, "2")
    declared = kernel_reuse.module_keys(parallel.llvm_module, kernel_reuse.REUSED_ATTR)
    assert not kernel_reuse.module_keys(serial.llvm_module, kernel_reuse.REUSED_ATTR)
    assert set(parallel.compiled.timings.kernels.values()) == {"built"}
    host, par_host = splits[-2], splits[-1]  # (the child's splits stay in the child)
    assert 0 < len(declared) < len(host.kernels)  # the child lowered part of the kernels
    assert par_host.host == host.host
    assert [u.key for u in par_host.kernels] == [u.key for u in host.kernels]
    assert parallel.compiled.objects == serial.compiled.objects
    args = [X, *WEIGHTS]
    got = parallel.run("main", *args)
    np.testing.assert_array_equal(got, serial.run("main", *args))
    np.testing.assert_allclose(got, reference(), rtol=1e-4, atol=1e-4)


def test_a_failing_lowering_process_means_a_serial_compile(fresh, monkeypatch):
    def fail(*args):
        raise RuntimeError("lowering process broke")

    monkeypatch.setattr(parallel_lowering, "_lower_in_child", fail)  # the child inherits it
    exe = _cold(monkeypatch, "2")
    assert not kernel_reuse.module_keys(exe.llvm_module, kernel_reuse.REUSED_ATTR)
    np.testing.assert_allclose(exe.run("main", X, *WEIGHTS), reference(), rtol=1e-4, atol=1e-4)
    assert not parallel_lowering._live


def test_a_lowering_process_failing_after_its_records_means_a_serial_compile(fresh, monkeypatch):
    """The child sends its kernels' records, then fails compiling them: the parent,
    which went on with those records, finds out when it reads the object code, and
    redoes the compile in one process (the records it stored have no code: unused)."""
    parent, build = os.getpid(), kernel_cache._build_unit
    received = []
    finish = parallel_lowering.Delegation.finish

    def recording_finish(self):
        received.append(finish(self))
        return received[-1]

    def failing_in_the_child(unit, target, jit=True):
        if os.getpid() != parent:
            raise RuntimeError("compiling broke in the lowering process")
        return build(unit, target, jit)

    monkeypatch.setattr(kernel_cache, "_build_unit", failing_in_the_child)
    monkeypatch.setattr(parallel_lowering.Delegation, "finish", recording_finish)
    exe = _cold(monkeypatch, "2")
    assert received and received[0]  # the records arrived before the failure
    assert not kernel_reuse.module_keys(exe.llvm_module, kernel_reuse.REUSED_ATTR)
    np.testing.assert_allclose(exe.run("main", X, *WEIGHTS), reference(), rtol=1e-4, atol=1e-4)
    assert not parallel_lowering._live


def test_the_deal_balances_by_size_and_is_deterministic():
    weights = {"a": 50, "b": 40, "c": 30, "d": 20, "e": 10, "f": 10}
    child = parallel_lowering.deal(weights, 0.5)
    assert child == parallel_lowering.deal(dict(reversed(weights.items())), 0.5)
    load = sum(weights[n] for n in child)
    assert abs(2 * load - sum(weights.values())) <= max(weights.values())
    two_thirds = parallel_lowering.deal(weights, 2 / 3)
    load = sum(weights[n] for n in two_thirds)
    assert abs(load - 2 / 3 * sum(weights.values())) <= max(weights.values())


KERNEL = """
te.func @{name}(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> {out} {{
  %c = te.compute {dims} (%i, %j) {{
    %x = te.read %a[%i, %j] : tensor<4x8xf32>
    %y = te.read %b[%i, %j] : tensor<4x8xf32>
    %s = arith.mulf %x, %y : f32
    te.yield %s : f32
  }} : {out}
  te.return %c : {out}
}}
"""
KERNELS = KERNEL.format(name="product", dims="[4, 8]", out="tensor<4x8xf32>") + KERNEL.format(
    name="row_dot", dims="[4] reduce [8] combiner(sum)", out="tensor<4xf32>"
)
"""The same ops, elementwise and reducing."""


def test_a_reduction_weighs_more_than_the_same_ops_without_one():
    """The deal's weights (`kernel_reuse._weight`): ops count one each, and the ops of a
    reducing compute's body `REDUCTION_OP_WEIGHT` more (`schedule` unrolls and
    register-blocks them); the same for the same kernel, so the deal is too."""
    from xdsl.parser import Parser

    from lamina.core.context import make_context
    from lamina.dialects import te

    module = Parser(make_context(), KERNELS).parse_module()
    funcs = {f.sym_name.data: f for f in module.ops if isinstance(f, te.FuncOp)}
    ops = {name: sum(1 for _ in f.walk()) for name, f in funcs.items()}
    assert ops["product"] == ops["row_dot"]  # the same number of ops
    assert kernel_reuse._weight(funcs["product"]) == ops["product"]
    body = 4  # the reads, the multiply and the yield
    extra = kernel_reuse.REDUCTION_OP_WEIGHT * body
    assert kernel_reuse._weight(funcs["row_dot"]) == ops["row_dot"] + extra
    again = Parser(make_context(), KERNELS).parse_module()
    weights = {
        f.sym_name.data: kernel_reuse._weight(f) for f in again.ops if isinstance(f, te.FuncOp)
    }
    assert weights == {name: kernel_reuse._weight(f) for name, f in funcs.items()}


def _answer(may_fail: dict[str, bool]) -> bytes:
    """The child's first message (backends/parallel_lowering.py's `_send`)."""
    data = pickle.dumps({"may_fail": may_fail})
    return len(data).to_bytes(8, "little") + data


@pytest.mark.parametrize("answered", [True, False])
def test_the_parent_collects_garbage_only_while_it_would_wait(monkeypatch, answered):
    """Waiting for which kernels can fail, the parent collects the young generations
    if the answer has not arrived (idle time), and not if it has; the answer read
    is the same either way."""
    collected: list[int] = []
    monkeypatch.setattr(parallel_lowering.gc, "collect", lambda gen=2: collected.append(gen))
    read_fd, write_fd = os.pipe()
    sleeper = subprocess.Popen(["sleep", "30"])  # a pid the delegation could stop
    try:
        delegation = parallel_lowering.Delegation(sleeper.pid, read_fd, {"k0": "key0"})
        message = _answer({"key0": True})
        if answered:
            os.write(write_fd, message)
        else:
            threading.Timer(0.2, os.write, (write_fd, message)).start()
        assert delegation.failing() == {"key0": True}
        assert collected == ([] if answered else [parallel_lowering.IDLE_COLLECTION_GENERATION])
    finally:
        sleeper.kill()
        sleeper.wait()
        os.close(read_fd)
        os.close(write_fd)


def test_records_disagreeing_with_the_early_answer_mean_a_serial_compile(fresh, monkeypatch):
    """The lowering process says which kernels can fail before its records; the
    parent places its error checks by that answer. Records that say otherwise
    (here: the early answer inverted, in the child) make it redo the compile in one
    process, so a wrong early answer can never leave a failing call unchecked."""
    early = parallel_lowering.may_fail

    def inverted(module, roots):
        return {name: not fails for name, fails in early(module, roots).items()}

    monkeypatch.setattr(parallel_lowering, "may_fail", inverted)  # the child inherits it
    exe = _cold(monkeypatch, "2")
    assert not kernel_reuse.module_keys(exe.llvm_module, kernel_reuse.REUSED_ATTR)
    np.testing.assert_allclose(exe.run("main", X, *WEIGHTS), reference(), rtol=1e-4, atol=1e-4)
    assert not parallel_lowering._live
