"""Per-kernel time of a profiling build, read from Python without importing xDSL.

A module compiled with `profile=True` (`lamina-run --profile`) times each
kernel call of its entry functions into the global `lamina_profile` (per
call site: nanoseconds, calls) and names the call sites' kernels and source
ops in `lamina_profile_table` (`passes/profile_kernels.py`). This module
reads them (from a JIT engine, a disk-cache hit or an artifact alike) and
sums them per kernel symbol, and keeps them per call site:
`Executable.profile` returns a `KernelProfile`.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import NamedTuple

COUNTERS_SYMBOL = "lamina_profile"
TABLE_SYMBOL = "lamina_profile_table"
SITE_SEPARATOR = "\x1f"
"""Between the source ops' names of one call site in the table (ASCII's unit
separator: a node name may hold any printable character)."""


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
class SiteTime:
    """One call site of a kernel: the source ops it runs, in order (an imported model's
    node names), over the profiled runs."""

    symbol: str
    ops: tuple[str, ...]
    calls: int
    total_ms: float
    share: float


class Slot(NamedTuple):
    """One counter slot: a call site's kernel, its parallel regions, its source ops."""

    symbol: str
    regions: int
    iterations: int
    ops: tuple[str, ...] = ()


@dataclass(frozen=True)
class KernelProfile:
    """Where the time of `runs` calls of an entry function went, kernel by kernel."""

    entry: str
    runs: int
    wall_ms: float
    """Wall time of the profiled runs, as `Executable.run` measured them (Python included)."""
    kernels: tuple[KernelTime, ...]
    """Slowest first."""
    sites: tuple[SiteTime, ...] = ()
    """Every call site in the order the entry calls them (a reused kernel has several)."""

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

    def sites_table(self, top: int | None = None) -> str:
        """The `top` slowest call sites with the source ops each runs (node names)."""
        rows = sorted(self.sites, key=lambda k: -k.total_ms)[:top]
        width = max([len(k.symbol) for k in rows] + [6])
        lines = [
            f"@{self.entry}: {self.runs} runs, {len(self.sites)} call sites",
            f"{'kernel':{width}s}  {'calls':>6s}  {'total ms':>9s}  {'share':>6s}  ops",
        ]
        for k in rows:
            ops = ", ".join(k.ops) or "-"
            lines.append(
                f"{k.symbol:{width}s}  {k.calls:6d}  {k.total_ms:9.3f}  {k.share:6.1%}  {ops}"
            )
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


def slot_kernels(addresses: tuple[int, int]) -> list[Slot]:
    """Each counter slot's kernel, parallel regions per call, fewest iterations and
    source ops (code built before the table named them: none)."""
    text = ctypes.string_at(addresses[1]).decode()
    slots = []
    for line in text.splitlines():
        name, regions, iterations, *site = line.split("\t")
        ops = tuple(site[0].split(SITE_SEPARATOR)) if site and site[0] else ()
        slots.append(Slot(name, int(regions), int(iterations), ops))
    return slots


def read_counters(addresses: tuple[int, int], slots: int) -> list[tuple[int, int]]:
    """(nanoseconds, calls) of each slot."""
    values = (ctypes.c_int64 * (2 * slots)).from_address(addresses[0])
    return [(values[2 * i], values[2 * i + 1]) for i in range(slots)]


def reset_counters(addresses: tuple[int, int], slots: int) -> None:
    ctypes.memset(addresses[0], 0, 16 * slots)


def summarize(
    entry: str, runs: int, wall_s: float, slots: list[Slot], counts: list[tuple[int, int]]
) -> KernelProfile:
    """Sum the slots per kernel symbol (a kernel reused at several call sites is one row);
    keep them per call site too."""
    by_symbol: dict[str, list[int]] = {}
    for slot, (nanos, calls) in zip(slots, counts, strict=True):
        row = by_symbol.setdefault(slot.symbol, [0, 0, slot.regions, slot.iterations])
        row[0] += nanos
        row[1] += calls
    wall_ms = wall_s * 1e3
    sites = tuple(
        SiteTime(
            slot.symbol, slot.ops, calls, nanos / 1e6, nanos / 1e6 / wall_ms if wall_ms else 0.0
        )
        for slot, (nanos, calls) in zip(slots, counts, strict=True)
    )
    rows = [
        KernelTime(
            symbol, calls, nanos / 1e6, nanos / 1e6 / wall_ms if wall_ms else 0.0, regions, trips
        )
        for symbol, (nanos, calls, regions, trips) in by_symbol.items()
        if calls
    ]
    rows.sort(key=lambda k: -k.total_ms)
    return KernelProfile(entry, runs, wall_ms, tuple(rows), sites)


__all__ = ["KernelProfile", "KernelTime", "SiteTime", "profile_addresses"]
