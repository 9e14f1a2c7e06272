"""Test-suite-wide set-up: the disk cache of compiled code lives in a temporary directory.

`lamina.compile` caches compiled code in the user's cache directory by
default (runtime/cache.py). The suite, and every tool it starts in a
subprocess (they inherit the environment), must never read or write the
real one: a stale entry there could hide a bug, and tests must leave
nothing behind. Tests that exercise the cache point `LAMINA_CACHE_DIR` at
their own `tmp_path`.
"""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="session", autouse=True)
def _private_compile_cache(tmp_path_factory: pytest.TempPathFactory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LAMINA_CACHE_DIR", str(tmp_path_factory.mktemp("lamina-cache")))
        patch.delenv("LAMINA_CACHE", raising=False)
        yield os.environ["LAMINA_CACHE_DIR"]
