"""Per-kernel time of a profiling build, read from Python without importing xDSL.

A module compiled with `profile=True` (`lamina-run --profile`) times each
kernel call of its entry functions into the global `lamina_profile` (per
call site: nanoseconds, calls) and names the call sites' kernels in
`lamina_profile_table` (`passes/profile_kernels.py`). This module reads
them (from a JIT engine, a disk-cache hit or an artifact alike) and sums
them per kernel symbol: `Executable.profile` returns a `KernelProfile`.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

COUNTERS_SYMBOL = "lamina_profile"
TABLE_SYMBOL = "lamina_profile_table"


@dataclass(frozen=True)
class KernelTime:
    """One kernel symbol over the profiled calls."""

    symbol: str
    calls: int
    """Kernel calls (all its call sites, all profiled runs)."""
    total_ms: float
    share: float
    """Of the profiled runs' wall time (0..1)."""
    regions: int
    """Parallel regions the kernel opens per call (0: it runs on the calling thread)."""
    iterations: int = 0
    """The fewest iterations one of its parallel loops shares among the threads (0: none
    or not a constant): 9 iterations on 2 threads give one thread 5, at best 1.8x."""

    @property
    def parallel(self) -> bool:
        return self.regions > 0


@dataclass(frozen=True)
class KernelProfile:
    """Where the time of `runs` calls of an entry function went, kernel by kernel."""

    entry: str
    runs: int
    wall_ms: float
    """Wall time of the profiled runs, as `Executable.run` measured them (Python included)."""
    kernels: tuple[KernelTime, ...]
    """Slowest first."""

    @property
    def kernel_ms(self) -> float:
        return sum(k.total_ms for k in self.kernels)

    @property
    def regions_per_run(self) -> int:
        """Parallel regions one call opens (each wakes the thread team)."""
        return sum(k.regions * k.calls for k in self.kernels) // max(self.runs, 1)

    def table(self, top: int | None = None) -> str:
        """The profile as an aligned text table (the `top` slowest kernels, then the rest)."""
        rows = self.kernels if top is None else self.kernels[:top]
        width = max([len(k.symbol) for k in rows] + [6])
        lines = [
            f"@{self.entry}: {self.runs} runs, {self.wall_ms / max(self.runs, 1):.3f} ms per run, "
            f"{len(self.kernels)} kernels, {self.regions_per_run} parallel regions per run",
            f"{'kernel':{width}s}  {'calls':>6s}  {'total ms':>9s}  {'share':>6s}  parallel",
        ]
        for k in rows:
            mode = f"{k.regions} region{'s' * (k.regions != 1)}" if k.parallel else "no"
            mode += f", {k.iterations} iterations" if k.parallel and k.iterations else ""
            lines.append(
                f"{k.symbol:{width}s}  {k.calls:6d}  {k.total_ms:9.3f}  {k.share:6.1%}  {mode}"
            )
        rest = self.kernels[len(rows) :]
        if rest:
            ms = sum(k.total_ms for k in rest)
            lines.append(
                f"{f'({len(rest)} more)':{width}s}  {sum(k.calls for k in rest):6d}  "
                f"{ms:9.3f}  {ms / self.wall_ms if self.wall_ms else 0:6.1%}"
            )
        outside = self.wall_ms - self.kernel_ms
        share = outside / self.wall_ms if self.wall_ms else 0.0
        lines.append(f"{'(outside kernels)':{width}s}  {'':6s}  {outside:9.3f}  {share:6.1%}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


def profile_addresses(code) -> tuple[int, int] | None:
    """Addresses of the counters and the table in loaded code (a JIT engine or an
    artifact's library: anything with `get_global_value_address`), or None when the
    code was not built to profile."""
    lookup = getattr(code, "get_global_value_address", None)
    if lookup is None:
        return None
    counters, table = lookup(COUNTERS_SYMBOL), lookup(TABLE_SYMBOL)
    if not counters or not table:
        return None
    return counters, table


def slot_kernels(addresses: tuple[int, int]) -> list[tuple[str, int, int]]:
    """(kernel symbol, parallel regions per call, fewest iterations) of each counter slot."""
    text = ctypes.string_at(addresses[1]).decode()
    rows = [line.split("\t") for line in text.splitlines()]
    return [(name, int(regions), int(iterations)) for name, regions, iterations in rows]


def read_counters(addresses: tuple[int, int], slots: int) -> list[tuple[int, int]]:
    """(nanoseconds, calls) of each slot."""
    values = (ctypes.c_int64 * (2 * slots)).from_address(addresses[0])
    return [(values[2 * i], values[2 * i + 1]) for i in range(slots)]


def reset_counters(addresses: tuple[int, int], slots: int) -> None:
    ctypes.memset(addresses[0], 0, 16 * slots)


def summarize(
    entry: str,
    runs: int,
    wall_s: float,
    kernels: list[tuple[str, int, int]],
    counts: list[tuple[int, int]],
) -> KernelProfile:
    """Sum the slots per kernel symbol (a kernel reused at several call sites is one row)."""
    by_symbol: dict[str, list[int]] = {}
    for (symbol, regions, iterations), (nanos, calls) in zip(kernels, counts, strict=True):
        row = by_symbol.setdefault(symbol, [0, 0, regions, iterations])
        row[0] += nanos
        row[1] += calls
    wall_ms = wall_s * 1e3
    rows = [
        KernelTime(
            symbol, calls, nanos / 1e6, nanos / 1e6 / wall_ms if wall_ms else 0.0, regions, trips
        )
        for symbol, (nanos, calls, regions, trips) in by_symbol.items()
        if calls
    ]
    rows.sort(key=lambda k: -k.total_ms)
    return KernelProfile(entry, runs, wall_ms, tuple(rows))


__all__ = ["KernelProfile", "KernelTime", "profile_addresses"]
