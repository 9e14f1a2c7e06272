"""Compile statistics: time and peak memory per phase, and whether the disk cache hit.

`lamina.compile(..., stats=True)` and `lamina-run --stats` fill a
`CompileStats`: one row per pipeline phase (the passes that run in it, the
verifier and phase checker included), then code generation with its LLVM
steps (translation, O3, MCJIT's instruction selection and register
allocation), or on a cache hit the cache read and the object load.

Memory, per row: the peak of Python allocations during the row
(`tracemalloc`, which only runs while statistics are asked for, as it
slows Python down) and the process's peak resident set size at the end of
the row (`getrusage`; it covers LLVM's native memory too, and never
decreases, so a row that raises it is the one that needed more).
"""

from __future__ import annotations

import sys
import time
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


def peak_rss_bytes() -> int | None:
    """The process's peak resident set size so far (None where the OS does not say)."""
    try:
        import resource
    except ImportError:  # Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


@dataclass
class PhaseStat:
    """One row: a phase or step, its wall time, and memory (None: not measured)."""

    name: str
    seconds: float
    python_peak_bytes: int | None = None
    rss_peak_bytes: int | None = None
    depth: int = 0
    """0 for a phase, 1 for a step inside the row above."""


@dataclass
class CompileStats:
    rows: list[PhaseStat] = field(default_factory=list)
    cache_hit: bool | None = None
    """True/False: the disk cache was consulted and hit/missed; None: it was off."""
    total_seconds: float = 0.0

    def row(self, name: str) -> PhaseStat | None:
        return next((r for r in self.rows if r.name == name), None)

    def as_dict(self) -> dict[str, object]:
        return {
            "cache_hit": self.cache_hit,
            "total_seconds": self.total_seconds,
            "rows": [vars(r).copy() for r in self.rows],
        }

    def format(self) -> str:
        """A table as `lamina-run --stats` prints it."""
        cache = {True: "hit", False: "miss", None: "off"}[self.cache_hit]
        lines = [
            f"compile statistics (disk cache: {cache})",
            f"  {'phase':<28} {'time (ms)':>10} {'py peak (MiB)':>14} {'rss peak (MiB)':>15}",
        ]
        for r in self.rows:
            name = ("  " * r.depth + r.name)[:28]
            lines.append(
                f"  {name:<28} {r.seconds * 1e3:>10.1f} {_mib(r.python_peak_bytes):>14} "
                f"{_mib(r.rss_peak_bytes):>15}"
            )
        lines.append(f"  {'total':<28} {self.total_seconds * 1e3:>10.1f}")
        return "\n".join(lines)


def _mib(value: int | None) -> str:
    return "-" if value is None else f"{value / 2**20:.1f}"


class StatsRecorder:
    """Measures rows when enabled; costs nothing (no tracemalloc) when not."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.stats = CompileStats() if enabled else None
        self._started_tracing = False
        self._start = time.perf_counter()
        if enabled and not tracemalloc.is_tracing():
            tracemalloc.start()
            self._started_tracing = True

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        if self.stats is None:
            yield
            return
        tracemalloc.reset_peak()
        start = time.perf_counter()
        try:
            yield
        finally:
            seconds = time.perf_counter() - start
            _, peak = tracemalloc.get_traced_memory()
            self.stats.rows.append(PhaseStat(name, seconds, peak, peak_rss_bytes()))

    def step(self, name: str, seconds: float) -> None:
        """A sub-row timed elsewhere (e.g. an LLVM step inside code generation)."""
        if self.stats is not None:
            self.stats.rows.append(PhaseStat(name, seconds, depth=1))

    def finish(self, cache_hit: bool | None) -> CompileStats | None:
        if self._started_tracing:
            tracemalloc.stop()
            self._started_tracing = False
        if self.stats is not None:
            self.stats.cache_hit = cache_hit
            self.stats.total_seconds = time.perf_counter() - self._start
        return self.stats


__all__ = ["CompileStats", "PhaseStat", "StatsRecorder", "peak_rss_bytes"]
