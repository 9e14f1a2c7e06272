"""The device allocators' counters and block cache, read from Python after a call.

backends/llvm/device_runtime.py generates the allocator (LLVM IR linked into the
compiled code) with one row of counters per device slot in the global
`__lamina_device_stats` and a table of freed blocks kept for reuse. This
half only reads those symbols through the execution engine (`ctypes`), so
an `Executable` loaded from the disk cache reports and releases memory
without the code generator.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

MAX_DEVICES = 16
"""Device slots per process-wide table (device indices 0..15)."""
COUNTERS = ("allocated", "live", "peak", "copied")
STATS_SYMBOL = "__lamina_device_stats"
RELEASE_SYMBOL = "__lamina_release_blocks"


@dataclass(frozen=True)
class DeviceStats:
    """Counters of one device's allocator (bytes)."""

    allocated: int
    live: int
    peak: int
    copied: int


def release_cached_blocks(engine) -> None:
    """Free the blocks the module's allocator keeps for reuse (none are in use
    between calls; the next call allocates afresh)."""
    address = engine.get_function_address(RELEASE_SYMBOL)
    if address:
        ctypes.CFUNCTYPE(None)(address)()


def read_device_stats(engine) -> dict[int, DeviceStats]:
    """The counters of every device slot that was used, by slot (empty if the
    module never allocated on or copied to a device)."""
    address = engine.get_global_value_address(STATS_SYMBOL)
    if not address:
        return {}
    table = (ctypes.c_int64 * (MAX_DEVICES * len(COUNTERS))).from_address(address)
    stats = {}
    for slot in range(MAX_DEVICES):
        values = table[slot * len(COUNTERS) : (slot + 1) * len(COUNTERS)]
        if any(values):
            stats[slot] = DeviceStats(*values)
    return stats


def reset_device_stats(engine) -> None:
    """Zero the counters (live bytes too: call between runs, when nothing is allocated)."""
    address = engine.get_global_value_address(STATS_SYMBOL)
    if address:
        ctypes.memset(address, 0, MAX_DEVICES * len(COUNTERS) * 8)


__all__ = [
    "COUNTERS",
    "MAX_DEVICES",
    "DeviceStats",
    "read_device_stats",
    "release_cached_blocks",
    "reset_device_stats",
]
