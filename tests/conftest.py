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
"""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="session", autouse=True)
def _private_compile_cache(tmp_path_factory: pytest.TempPathFactory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LAMINA_CACHE_DIR", str(tmp_path_factory.mktemp("lamina-cache")))
        patch.delenv("LAMINA_CACHE", raising=False)
        patch.setenv("LAMINA_VERIFY_EACH", "1")
        yield os.environ["LAMINA_CACHE_DIR"]
