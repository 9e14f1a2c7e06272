"""Test-suite-wide set-up: the disk cache of compiled code lives in a temporary directory.

`lamina.compile` caches compiled code in the user's cache directory by
default (runtime/cache.py). The suite, and every tool it starts in a
subprocess (they inherit the environment), must never read or write the
real one: a stale entry there could hide a bug, and tests must leave
nothing behind. Tests that exercise the cache point `LAMINA_CACHE_DIR` at
their own `tmp_path`.

Compiles verify the IR after every pass here (`LAMINA_VERIFY_EACH=1`;
users' compiles verify at phase boundaries, docs/compile-speed.md), so a
pass that leaves malformed IR is caught at that pass; tests of the
boundaries-only policy unset it themselves.

The suite runs on two pytest-xdist workers (`-n 2 --dist loadgroup`,
pyproject.toml's `addopts`; `-n0` runs it in one process). Each test file is
one unit of work, so a file's module-scoped fixtures and caches are built
once, in one worker; the files that start a local Ray instance share one
unit (`RAY_FILES`), so two Ray instances never run at once.
"""

from __future__ import annotations

import os
import sys
from collections import Counter

import pytest

RAY_FILES = {"test_serve.py", "test_tuning.py", "test_bench.py"}
"""Test files that start Ray (in the test process or a benchmark's): run one after another."""


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each test in the xdist group of its file (`ray` for `RAY_FILES`), before xdist
    reads the groups (`--dist loadgroup`). Without xdist (`-p no:xdist`) nothing: the
    mark would be unknown there."""
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        name = item.path.name
        item.add_marker(pytest.mark.xdist_group("ray" if name in RAY_FILES else item.path.stem))


def _weights_model():
    """A model whose weights are constants (an artifact's weights file, a library's
    read-only weights), its input and the answer."""
    import numpy as np

    from lamina.frontends.builder import GraphBuilder

    rng = np.random.default_rng(1)
    w1 = rng.standard_normal((64, 128)).astype(np.float32)
    w2 = rng.standard_normal((128, 10)).astype(np.float32)
    g = GraphBuilder()
    x = g.param((8, 64), name="x")
    y = g.matmul(g.relu(g.matmul(x, g.constant(w1))), g.constant(w2), name="logits")
    g.ret(y)
    xs = rng.standard_normal((8, 64)).astype(np.float32)
    return g.module(), xs, np.maximum(xs @ w1, 0) @ w2


@pytest.fixture(scope="session")
def weights_model():
    """`make()` → a fresh (module, input, expected output) of a model with constant
    weights (tests cannot import each other's helpers)."""
    return _weights_model


@pytest.fixture(scope="session", autouse=True)
def _private_compile_cache(tmp_path_factory: pytest.TempPathFactory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LAMINA_CACHE_DIR", str(tmp_path_factory.mktemp("lamina-cache")))
        patch.delenv("LAMINA_CACHE", raising=False)
        patch.setenv("LAMINA_VERIFY_EACH", "1")
        yield os.environ["LAMINA_CACHE_DIR"]


# What the differential and fuzz tests tried (tests/differential, `STATS`), printed after
# the run (not a test). Under xdist each worker hands its counts to the controller
# (`workeroutput`), which adds them up; this file is the one the controller loads.
_DIFFERENTIAL_FROM_WORKERS: Counter[str] = Counter()


def _differential_stats() -> dict[str, int]:
    return dict(getattr(sys.modules.get("test_differential"), "STATS", None) or {})


def pytest_sessionfinish(session: pytest.Session) -> None:
    output = getattr(session.config, "workeroutput", None)
    if output is not None:  # an xdist worker
        output["differential_stats"] = _differential_stats()


@pytest.hookimpl(optionalhook=True)  # xdist's hook: unknown when it is not loaded (`-p no:xdist`)
def pytest_testnodedown(node, error) -> None:
    """xdist's controller: a worker finished; add up its counts."""
    _DIFFERENTIAL_FROM_WORKERS.update(
        getattr(node, "workeroutput", {}).get("differential_stats", {})
    )


def pytest_terminal_summary(terminalreporter) -> None:
    stats = Counter(_differential_stats()) + _DIFFERENTIAL_FROM_WORKERS
    if stats:
        terminalreporter.write_line(f"differential and fuzz examples tried: {dict(stats)}")
