"""Compile statistics: time and peak memory per phase, and whether the disk cache hit.

`lamina.compile(..., stats=True)` and `lamina-run --stats` fill a
`CompileStats`: one row per pipeline phase (the passes that run in it, the
verifier and phase checker included), then code generation with its LLVM
steps (translation, O3, MCJIT's instruction selection and register
allocation), or on a cache hit the cache read and the object load; a last
row, `(other)`, holds what no row covers, so the rows add up to the total.

The `StatsRecorder` is also the compile's one clock: it times the same rows
whether or not statistics were asked for, and `--pass-timing`, `-v` and the
`compile:` line of lamina-run read their times and their total from it
(driver/instruments.py), so every instrument reports the same numbers.

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
from collections.abc import Callable, Iterator
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


CODEGEN_ROWS = (
    ("translate", "llvm: translate (llvm dialect -> LLVM IR)"),
    ("parse_verify", "llvm: parse + verify"),
    ("optimize", "llvm: optimize (O3)"),
    ("jit", "llvm: code generation"),
)
"""`CompileTimings` field → its row, in statistics and in the timing report."""

OTHER = "(other)"
"""The row of time no other row covers (entry signatures, pipeline set-up, ...)."""


@dataclass
class CompileStats:
    rows: list[PhaseStat] = field(default_factory=list)
    cache_hit: bool | None = None
    """True/False: the disk cache was consulted and hit/missed; None: it was off."""
    total_seconds: float = 0.0
    kernels: dict[str, int] = field(default_factory=dict)
    """Kernels by where their object code came from: "built", "memory", "disk"
    (backends/kernel_cache.py); empty for a module compiled whole or a cache hit."""
    build_wall_seconds: float = 0.0
    """Wall time of the parallel build of the kernels and the host (0: none)."""
    build_cpu_seconds: float = 0.0
    """CPU time of that build, summed over its threads (÷ wall: cores used)."""

    def row(self, name: str) -> PhaseStat | None:
        return next((r for r in self.rows if r.name == name), None)

    def as_dict(self) -> dict[str, object]:
        return {
            "cache_hit": self.cache_hit,
            "total_seconds": self.total_seconds,
            "rows": [vars(r).copy() for r in self.rows],
            "kernels": dict(self.kernels),
            "build_wall_seconds": self.build_wall_seconds,
            "build_cpu_seconds": self.build_cpu_seconds,
        }

    def format(self) -> str:
        """A table as `lamina-run --stats` prints it."""
        cache = {True: "hit", False: "miss", None: "off"}[self.cache_hit]
        lines = [
            f"compile statistics (disk cache: {cache})",
            f"  {'phase':<{NAME_WIDTH}} {'time (ms)':>10} {'py peak (MiB)':>14} "
            f"{'rss peak (MiB)':>15}",
        ]
        for r in self.rows:
            name = ("  " * r.depth + r.name)[:NAME_WIDTH]
            lines.append(
                f"  {name:<{NAME_WIDTH}} {r.seconds * 1e3:>10.1f} "
                f"{_mib(r.python_peak_bytes):>14} {_mib(r.rss_peak_bytes):>15}"
            )
        lines.append(f"  {'total':<{NAME_WIDTH}} {self.total_seconds * 1e3:>10.1f}")
        lines += self.build_lines()
        return "\n".join(lines)

    def build_lines(self) -> list[str]:
        """Kernels from the caches and the parallel build's wall and CPU time."""
        return build_summary(self.kernels, self.build_wall_seconds, self.build_cpu_seconds)


NAME_WIDTH = 44


def build_summary(kernels: dict[str, int], wall: float, cpu: float) -> list[str]:
    """`kernels: ...` and `parallel build: ...` lines (none for what did not happen)."""
    lines = []
    if kernels:
        count = sum(kernels.values())
        lines.append(
            f"  kernels: {count} ({kernels.get('built', 0)} built, "
            f"{kernels.get('memory', 0)} from memory, {kernels.get('disk', 0)} from disk)"
        )
    if wall > 0:
        lines.append(
            f"  parallel build: {wall * 1e3:.1f} ms wall, {cpu * 1e3:.1f} ms CPU "
            f"({cpu / wall:.2f} cores busy)"
        )
    return lines


def _mib(value: int | None) -> str:
    return "-" if value is None else f"{value / 2**20:.1f}"


class StatsRecorder:
    """The rows of a compile on one clock; memory too (tracemalloc) only when enabled.

    Rows are timed whether or not statistics were asked for (a clock read per
    row costs nothing), so the instruments share them; `stats` is None unless
    `enabled`. `close()` stops the clock: every report uses that one total.
    """

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.stats = CompileStats() if enabled else None
        self.rows: list[PhaseStat] = []
        self.kernels: dict[str, int] = {}
        self.build_wall = self.build_cpu = 0.0
        self._started_tracing = False
        self.started = time.perf_counter()
        self.total: float | None = None
        self._open: tuple[str, float] | None = None
        self.on_enter: Callable[[str], None] | None = None
        """Told of each row started (the progress line, driver/instruments.py)."""
        if enabled and not tracemalloc.is_tracing():
            tracemalloc.start()
            self._started_tracing = True

    def elapsed(self) -> float:
        """Seconds since the compile started (its total once closed)."""
        return self.total if self.total is not None else time.perf_counter() - self.started

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        self.enter(name)
        try:
            yield
        finally:
            self.leave()

    def enter(self, name: str) -> None:
        """Start row `name` (ending the row still open, if any)."""
        self.leave()
        if self.enabled:
            tracemalloc.reset_peak()
        self._open = (name, time.perf_counter())
        if self.on_enter is not None:
            self.on_enter(name)

    def leave(self) -> None:
        """End the open row, if any."""
        if self._open is None:
            return
        name, start = self._open
        self._open = None
        seconds = time.perf_counter() - start
        if self.enabled:
            _, peak = tracemalloc.get_traced_memory()
            self.rows.append(PhaseStat(name, seconds, peak, peak_rss_bytes()))
        else:
            self.rows.append(PhaseStat(name, seconds))

    def step(self, name: str, seconds: float) -> None:
        """A sub-row timed elsewhere (e.g. an LLVM step inside code generation)."""
        self.rows.append(PhaseStat(name, seconds, depth=1))

    def codegen_steps(self, timings: object) -> None:
        """LLVM's steps (a `CompileTimings`) as sub-rows, and what its build reports:
        kernels by cache, the parallel build's wall and CPU time."""
        for key, label in CODEGEN_ROWS:
            self.step(label, getattr(timings, key, 0.0))
        for where in getattr(timings, "kernels", {}).values():
            self.kernels[where] = self.kernels.get(where, 0) + 1
        self.build_wall += getattr(timings, "build_wall", 0.0)
        self.build_cpu += getattr(timings, "build_cpu", 0.0)

    def close(self) -> float:
        """Stop the clock (once): the `(other)` row makes the rows add up to the total."""
        if self.total is None:
            self.leave()
            self.total = time.perf_counter() - self.started
            rest = self.total - sum(r.seconds for r in self.rows if r.depth == 0)
            if self.rows and rest > 0:
                self.rows.append(PhaseStat(OTHER, rest))
        return self.total

    def finish(self, cache_hit: bool | None) -> CompileStats | None:
        total = self.close()
        if self._started_tracing:
            tracemalloc.stop()
            self._started_tracing = False
        if self.stats is not None:
            self.stats.rows = list(self.rows)
            self.stats.cache_hit = cache_hit
            self.stats.total_seconds = total
            self.stats.kernels = dict(self.kernels)
            self.stats.build_wall_seconds = self.build_wall
            self.stats.build_cpu_seconds = self.build_cpu
        return self.stats


__all__ = [
    "CODEGEN_ROWS",
    "OTHER",
    "CompileStats",
    "PhaseStat",
    "StatsRecorder",
    "build_summary",
    "peak_rss_bytes",
]
