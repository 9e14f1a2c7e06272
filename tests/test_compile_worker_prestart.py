"""A miss starts the compile worker before importing the compiler (driver/compiler.py
`prestart_compile_worker`), unless its units will not be built there."""

from __future__ import annotations

import pytest

from lamina.backends import codegen, compile_worker
from lamina.driver import compiler


@pytest.fixture(autouse=True)
def _no_worker(monkeypatch):
    """No worker at the start (another test's is set aside, then given back); the one a
    test started is stopped and reaped."""
    monkeypatch.setattr(compile_worker, "_current", None)
    yield
    worker = compile_worker._detach_worker()
    if worker is not None:
        worker.process.kill()
        worker.process.wait()


def test_the_split_switch_is_codegens():
    assert compiler.SPLIT_ENV == codegen.SPLIT_ENV


def test_started_for_a_miss(monkeypatch):
    monkeypatch.delenv(codegen.SPLIT_ENV, raising=False)
    monkeypatch.delenv(compile_worker.ENV, raising=False)
    compiler.prestart_compile_worker()
    worker = compile_worker._current
    assert worker is not None and worker.process.poll() is None


@pytest.mark.parametrize(("name", "value"), [(codegen.SPLIT_ENV, "0"), (compile_worker.ENV, "0")])
def test_not_started_when_units_are_built_here(monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    compiler.prestart_compile_worker()
    assert compile_worker._current is None


def test_a_compile_uses_the_early_worker(monkeypatch):
    monkeypatch.delenv(codegen.SPLIT_ENV, raising=False)
    monkeypatch.delenv(compile_worker.ENV, raising=False)
    text = """
graph.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %c = graph.add %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  graph.return %c : tensor<4xf32>
}
"""
    exe = compiler.compile(text, cache=False)
    worker = compile_worker._current
    assert worker is not None and worker.ready  # the build went through it
    import numpy as np

    a = np.arange(4, dtype=np.float32)
    assert (exe.run("main", a, a) == 2 * a).all()
