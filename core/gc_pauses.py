"""Fewer garbage-collector pauses while compiling.

A compile allocates hundreds of thousands of small IR objects (ops,
attributes, values, use lists) that live until the end of the compile.
CPython's cyclic collector runs a young-generation pass every 700 net
allocations and regularly traverses the older generations, which by then
hold the whole IR: on a ResNet-style CNN and on a chain of 1000 functions
about a quarter of the compile went to collections that found almost
nothing. Raising the young generation's threshold for the duration of a
compile keeps collection (cyclic garbage is still freed, in larger and
rarer batches) and removes most of those traversals. The middle
generation is collected every `COMPILE_MIDDLE_THRESHOLD` young collections
(CPython: 10): on a cold ResNet-50 compile that took the collector's time
in the compile's own process from 0.2-0.27 s (12 middle and one full
collection) to 0.09 s (4 middle, no full one) for 90 MiB more peak memory
(517 -> 607 MiB, the erased IR's cycles freed later; the goal is 2 GB).
The previous thresholds are restored when the outermost compile ends.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

COMPILE_THRESHOLD = 50_000
"""Net allocations between young-generation collections while compiling (CPython: 700)."""
COMPILE_MIDDLE_THRESHOLD = 30
"""Young collections between middle-generation collections while compiling (CPython: 10)."""

_lock = threading.Lock()
_depth = 0
_saved: tuple[int, ...] = ()


@contextmanager
def fewer_gc_pauses() -> Iterator[None]:
    """Within the block, the collector runs less often (reentrant and thread-safe)."""
    global _depth, _saved
    with _lock:
        if _depth == 0:
            _saved = gc.get_threshold()
            first, second, third = _saved
            if first:  # 0 means automatic collection is off: leave it off
                gc.set_threshold(
                    max(first, COMPILE_THRESHOLD), max(second, COMPILE_MIDDLE_THRESHOLD), third
                )
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                gc.set_threshold(*_saved)


__all__ = ["COMPILE_MIDDLE_THRESHOLD", "COMPILE_THRESHOLD", "fewer_gc_pauses"]
