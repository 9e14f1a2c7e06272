"""How many cores this process may use, and how many threads a build takes.

Counted in one place because the compile's parts share the machine: the
kernels' LLVM builds (backends/parallel_build.py), the lowering process
forked beside the parent (backends/parallel_lowering.py), the Winograd
weight transforms computed during `fuse-ops` (passes/_derived_prefetch.py),
the disk cache's hashing (runtime/cache.py) and the target facts'
core count (target/cpu_facts.py). In the runtime layer (imports nothing
but `os` and runtime/env.py), so every layer may use it.
"""

from __future__ import annotations

import os

from lamina.runtime.env import env_int

BUILD_THREADS_ENV = "LAMINA_BUILD_THREADS"
"""Environment variable: threads that build (default: the usable cores; docs/environment.md)."""


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def build_threads() -> int:
    """Threads for a build: `LAMINA_BUILD_THREADS`, else the usable cores."""
    explicit = env_int(BUILD_THREADS_ENV, None, minimum=1)
    return explicit if explicit is not None else usable_cores()


def amd_zen(cpu_name: str) -> bool:
    """Whether LLVM's CPU name is one of AMD's Zen cores (`znver1` ... `znver5`).

    The defaults that differ between AMD's and Intel's x86 cores test this one
    fact rather than a name prefix each: Intel's L2 streamer stops at a 4 KiB
    page (`pack_min_row_blocks`), a cache line crosses between an Intel VM's
    vCPUs slowly (`runtime/call_team.py` two-ended chunks), and Zen microcodes
    gathers (`NO_GATHER_TUNING`). A schedule knob's derived default may read
    it (`amd_zen`)."""
    return cpu_name.startswith("znver")


__all__ = ["BUILD_THREADS_ENV", "amd_zen", "build_threads", "usable_cores"]
