"""The call team's runtime is compiled once per cache, not once per process
(runtime/native_setup.py `_call_team_object_cache`): a new process loads its object
code from the disk cache's `kernels/` folder, and the team works from it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from lamina.runtime import cache, call_team

SCRIPT = """
import sys
from lamina.runtime import call_team, native_setup
import llvmlite.binding as llvm
compiled = []
original = llvm.ExecutionEngine.set_object_cache
def spy(self, notify, getbuffer):
    def counting(module):
        found = getbuffer(module)
        compiled.append(found is None)
        return found
    original(self, notify, counting)
llvm.ExecutionEngine.set_object_cache = spy
native_setup.ensure_native()
assert call_team.installed()
print(compiled)
"""


@pytest.mark.skipif(not call_team.requested(), reason="the call team is off on this host")
def test_compiled_once_then_loaded(tmp_path):
    env = {**os.environ, "LAMINA_CACHE_DIR": str(tmp_path)}
    env.pop("LAMINA_CACHE", None)

    def run() -> str:
        out = subprocess.run(
            [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, check=True
        )
        return out.stdout.strip()

    assert run() == "[True]"  # compiled, stored
    stored = list((tmp_path / cache.KERNEL_FOLDER).glob("*.lxc"))
    assert len(stored) == 1
    entry = cache.decode(stored[0].read_bytes())
    assert entry is not None and "kernel" not in entry.metadata  # not a kernel's object
    assert run() == "[False]"  # loaded
    env["LAMINA_CACHE"] = "0"
    assert run() == "[]"  # no object cache at all
