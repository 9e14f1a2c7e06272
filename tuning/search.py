"""The schedule search: which knobs, for each kernel, within a time budget (docs/tuning.md).

For each kernel, heaviest first (its share of the model's time, measured
with the default knobs), within its part of the budget:

1. every single-knob change of the defaults (`CHOICES`) is built; candidates
   whose code is identical to one already built (the same object code) are
   not measured again, and a knob none of whose values changes the code is
   irrelevant to this kernel;
2. the relevant knobs are searched exhaustively when their combinations are
   few (`EXHAUSTIVE_LIMIT`), otherwise evolutionarily (children of the best
   measured candidates: crossover and one mutation);
3. every new candidate is checked (one run, results against the default's)
   before it is timed; crashes, hangs and wrong numbers are recorded invalid;
4. candidates are timed in batches interleaved with the default, and the
   finalists re-measured together with it: the record keeps knobs only when
   they beat the default there, so a tuned kernel is never the slower one.

The default (no knobs) is always candidate 0.
"""

from __future__ import annotations

import itertools
import json
import random
import statistics
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from lamina.target.tuning_records import Record, Timing
from lamina.tuning.kernels import Kernel
from lamina.tuning.measure import summary

CHOICES: dict[str, tuple[Any, ...]] = {
    "block_vector_choices": ((1,), (2,), (3,), (4,)),
    "block_rows": (1, 2, 3, 4, 5, 6, 7, 8, 12, 14, 16),
    "block_max_vectors": (1, 2, 8),
    "pack_min_row_blocks": (1, 8, 16, 64, 1 << 30),
    "pack_max_bytes": (1 << 17, 1 << 20, 1 << 22),
    "matmul_panel_group": (0, 2, 4),
    "parallel_min_work": (1 << 14, 1 << 17, 1 << 21, 1 << 40),
    "parallel_min_iterations_per_core": (1, 4),
    "parallel_gather_reads": (1, 16),
    "parallel_collapse_below": (1, 8, 128),
    "parallel_rows_first": (1, 4),
    "gather_line_bytes": (128,),
    "whole_vector_lanes": (4, 16),
    "conv_channel_jam": (1, 2, 3, 4),
    "conv_channel_jam_everywhere": (0, 1),
    "conv_stem_channel_jam": (0,),
    "conv_stem_jam_wide": (0, 4),
    "conv_direct_row_jam": (0, 2),
    "conv_flatten_rows": (0, 56),
    "conv_flatten_min_steps_per_core": (0, 2),
    "conv_grouped_jam_min_row": (7, 1 << 30),
    "conv_reduction_chunk": (0, 32, 64, 128),
    "conv_chunk_prefetch": (0, 1, 2),
    "conv_chunk_prefetch_spread": (0, 1),
    "conv_direct_prefetch": (0, 1, 2),
    "epilogue_jam_max_ops": (1 << 30,),
    "epilogue_step_vectors": (1, 8),
    "block_broadcast_registers": (0, 1, 2),
    "block_rows_outside_columns": (1,),
    "winograd_channel_jam": (0, 2, 3),
}
"""The values tried per knob besides the default (the knobs `schedule` and `lower-to-llvm`
read per kernel; target/tuning_records.py `KERNEL_KNOBS`). `block_rows` includes 7 and 14:
a blocked convolution's rows are its output columns, 7, 14, 28 or 56 in most networks,
and a block that divides them leaves no tail (resnet18's 3x3 convolutions gained
1.08-1.17x from 4-12 rows at 1 thread)."""

EXHAUSTIVE_LIMIT = 48
"""Combinations of the relevant knobs' values searched exhaustively; more: evolutionary."""

BATCH = 5
"""Candidates timed together with the default in one interleaved measurement."""

ROUNDS, FINAL_ROUNDS, FINALISTS = 5, 11, 3

PIPELINE = 3
"""Builds per build slot kept queued ahead of the measurements (a Ray cluster)."""

MIN_GAIN = 1.01
"""A finalist replaces the default only when it is at least this much faster (the median
of its per-round speed-ups over the default in the final measurement)..."""

FINAL_WINS = 9
"""... and faster than the default in at least this many of the `FINAL_ROUNDS` paired
rounds: a sign test (9 of 11 by chance: 3 %). On a loaded machine (relative spread
0.5-0.9) the median alone kept knobs that were slower when timed again (a classifier's
64 x 10 matmul kept `block_rows = 6`, 2.4x "faster", measured 1.2x slower)."""


def canonical(knobs: Mapping[str, Any]) -> str:
    return json.dumps({k: list(v) if isinstance(v, tuple) else v for k, v in sorted(knobs.items())})


@dataclass
class Candidate:
    knobs: dict[str, Any]
    code: str = ""
    ratio: float | None = None
    """Default's median / this one's, measured in the same batch (> 1: faster)."""
    why: str = ""
    """Why it is invalid (empty: valid so far)."""
    wins: int = 0
    """Rounds of its last measurement in which it was faster than the default."""


@dataclass
class KernelSearch:
    """The search state of one kernel."""

    kernel: Kernel
    default_time: Timing
    share: float
    seen: dict[str, Candidate] = field(default_factory=dict)
    """By canonical knobs."""
    by_code: dict[str, Candidate] = field(default_factory=dict)
    """The first candidate of each distinct code."""
    invalid: list[dict[str, Any]] = field(default_factory=list)
    trials: int = 0
    best: Candidate | None = None
    best_time: Timing | None = None
    ahead: list[Any] = field(default_factory=list)
    """Builds of its single-knob changes submitted while the kernel before it was searched
    (`_Pending`s: `Tuner._prefetch`), collected first when its own search starts."""

    @property
    def speedup(self) -> float:
        if self.best_time is None:
            return 1.0
        return self.default_time.median / self.best_time.median


Progress = Callable[["Tuner"], None]


@dataclass
class _Pending:
    """Candidates whose builds were submitted (the measurer's handle to collect them)."""

    candidates: list[Candidate]
    handle: Any


def _chunks(items: list[Candidate], size: int) -> Iterator[list[Candidate]]:
    return (items[i : i + size] for i in range(0, len(items), size))


class Tuner:
    """Tunes the kernels of one model with one measurer, under a deadline."""

    def __init__(self, kernels: list[Kernel], measurer, seed: int = 0):
        self.kernels = kernels
        self.measurer = measurer
        self.rng = random.Random(seed)
        self.searches: list[KernelSearch] = []
        self.measurements = 0
        self.builds = 0
        self.started = time.perf_counter()
        self.deadline = self.started
        self.skipped: list[tuple[Kernel, str]] = []
        """Kernels that cannot be built as programs of their own (left at their defaults)."""
        self.group = BATCH
        """Candidates submitted together (and timed together when their code is new)."""
        parallel = max(1, getattr(measurer, "parallel_builds", 1))
        self.depth = 1 if parallel == 1 else 1 + -(-PIPELINE * parallel // BATCH)
        """Groups in flight: while the oldest is measured, the others keep every build
        slot busy (`PIPELINE` builds per slot); one where builds run in the measuring process."""
        self._upcoming: KernelSearch | None = None
        """The kernel searched after the current one (its singles are built ahead)."""

    # -- measuring -----------------------------------------------------------------------
    def _timeout(self, search: KernelSearch | None, rounds: int, count: int) -> float:
        per = search.default_time.median if search else 0.01
        return 30.0 + count * rounds * max(0.004, 20 * per) * 3

    def measure_defaults(self) -> None:
        """Every kernel's default time (interleaved), hence its share of the model's time."""
        texts = [k.program() for k in self.kernels]
        builds = self.measurer.build_many(texts)
        self.builds += len(texts)
        self.skipped = [
            (kernel, built["why"])
            for kernel, built in zip(self.kernels, builds, strict=True)
            if not built["ok"]
        ]
        kept = [i for i, built in enumerate(builds) if built["ok"]]
        self.kernels = [self.kernels[i] for i in kept]
        texts, builds = [texts[i] for i in kept], [builds[i] for i in kept]
        if not texts:
            return
        rounds = FINAL_ROUNDS  # all kernels interleaved: their shares see the same machine
        answer = self.measurer.measure(
            "", texts, rounds, self._timeout(None, rounds, len(texts)), drop_slower=None
        )
        if not answer["ok"]:
            raise RuntimeError(f"the model's kernels do not run alone: {answer['why']}")
        self.measurements += len(texts)
        times = [Timing(*summary(s), rounds) for s in answer["samples"]]
        total = sum(t.median * k.calls for t, k in zip(times, self.kernels, strict=True))
        for kernel, t, built in zip(self.kernels, times, builds, strict=True):
            search = KernelSearch(kernel, t, t.median * kernel.calls / total)
            default = Candidate({}, built["code"], 1.0)
            search.seen[canonical({})] = default
            search.by_code[built["code"]] = default
            self.searches.append(search)
        self.searches.sort(key=lambda s: -s.share)

    def _evaluate(self, search: KernelSearch, candidates: list[Candidate]) -> None:
        """Build, check and time new candidates, now."""
        pending = self._start(search, candidates)
        if pending is not None:
            self._finish(search, pending)

    def _start(self, search: KernelSearch, candidates: list[Candidate]) -> _Pending | None:
        """Submit the builds of the candidates not seen yet (None: there are none)."""
        fresh = [c for c in candidates if canonical(c.knobs) not in search.seen]
        for c in fresh:
            search.seen[canonical(c.knobs)] = c
        if not fresh:
            return None
        texts = [search.kernel.program(c.knobs) for c in fresh]
        return _Pending(fresh, self.measurer.submit(texts))

    def _finish(self, search: KernelSearch, pending: _Pending) -> None:
        """Collect the builds, then check and time the candidates of new code (a duplicate
        of known code takes that code's measurement)."""
        kernel = search.kernel
        builds = self.measurer.collect(pending.handle)
        self.builds += len(pending.candidates)
        new: list[Candidate] = []
        for c, built in zip(pending.candidates, builds, strict=True):
            search.trials += 1
            if not built["ok"]:
                self._invalid(search, c, f"build failed: {built['why']}")
                continue
            c.code = built["code"]
            same = search.by_code.get(c.code)
            if same is not None:  # identical code: its measurement stands for this one
                c.ratio, c.why = same.ratio, same.why
                continue
            search.by_code[c.code] = c
            new.append(c)
        if not new:
            return
        answers = self.measurer.check_many(
            kernel.key,
            kernel.program(),
            [kernel.program(c.knobs) for c in new],
            self._timeout(search, 1, 2),
        )
        checked = []
        for c, answer in zip(new, answers, strict=True):
            if answer["ok"]:
                checked.append(c)
            else:
                self._invalid(search, c, answer["why"])
        batches = [checked[i : i + BATCH] for i in range(0, len(checked), BATCH)]
        requests = [self._request(search, b, ROUNDS) for b in batches]
        for batch, answer in zip(batches, self.measurer.measure_many(requests), strict=True):
            self._timed(search, batch, ROUNDS, answer)

    def _request(
        self, search: KernelSearch, batch: list[Candidate], rounds: int
    ) -> tuple[str, list[str], int, float]:
        """A measurement of `batch` interleaved with the default (the default first)."""
        kernel = search.kernel
        texts = [kernel.program()] + [kernel.program(c.knobs) for c in batch]
        return kernel.key, texts, rounds, self._timeout(search, rounds, len(texts))

    def _time_batch(
        self, search: KernelSearch, batch: list[Candidate], rounds: int
    ) -> list[Timing]:
        answer = self.measurer.measure(*self._request(search, batch, rounds))
        return self._timed(search, batch, rounds, answer)

    def _timed(
        self, search: KernelSearch, batch: list[Candidate], rounds: int, answer: dict
    ) -> list[Timing]:
        """Each candidate's speed-up over the default from a measurement's answer."""
        if not answer["ok"]:  # a candidate that passed its check hung or crashed when timed
            for c in batch:
                self._invalid(search, c, answer["why"])
            return []
        self.measurements += len(batch)
        samples = answer["samples"]
        timings = [Timing(*summary(s), len(s)) for s in samples]
        for c, own in zip(batch, samples[1:], strict=True):
            # Paired by round: a change of the machine's load between rounds cancels out.
            c.ratio = statistics.median(d / t for d, t in zip(samples[0], own, strict=False))
            c.wins = sum(d > t for d, t in zip(samples[0], own, strict=False))
        return timings

    def _invalid(self, search: KernelSearch, c: Candidate, why: str) -> None:
        c.why, c.ratio = why, None
        search.invalid.append({"knobs": dict(sorted(c.knobs.items())), "why": why})

    # -- searching -----------------------------------------------------------------------
    def tune(self, budget: float, progress: Progress | None = None) -> None:
        """Spend `budget` seconds on the kernels, each a part in proportion to its share."""
        self.deadline = time.perf_counter() + budget
        if not self.searches:
            self.measure_defaults()
        left_share = sum(s.share for s in self.searches)
        try:
            for i, search in enumerate(self.searches):
                remaining = self.deadline - time.perf_counter()
                if remaining <= 0:
                    break
                until = time.perf_counter() + remaining * search.share / max(left_share, 1e-9)
                left_share -= search.share
                self._upcoming = self.searches[i + 1] if i + 1 < len(self.searches) else None
                self._search(search, until, progress)
                self._finalize(search)
                if progress is not None:
                    progress(self)
        finally:
            self._upcoming = None
            for search in self.searches:  # built ahead for a kernel the budget did not reach
                for pending in search.ahead:
                    self.measurer.cancel(pending.handle)
                    for c in pending.candidates:
                        search.seen.pop(canonical(c.knobs), None)
                search.ahead.clear()

    def _singles(self) -> list[Candidate]:
        """Every single-knob change of the defaults, in `CHOICES` order."""
        return [Candidate({k: v}) for k, values in CHOICES.items() for v in values]

    def _prefetch(self, in_flight: int) -> bool:
        """Submit a group of the next kernel's single-knob changes when a build slot would
        otherwise idle (the current kernel's phase is draining: its remaining candidates
        need the results in flight); False when there is none to submit. Only where builds
        run apart from the measurements (a Ray cluster: `depth` > 1)."""
        upcoming = self._upcoming
        if upcoming is None or self.depth == 1 or in_flight + len(upcoming.ahead) >= self.depth:
            return False
        for group in _chunks(self._singles(), self.group):
            pending = self._start(upcoming, group)
            if pending is not None:
                upcoming.ahead.append(pending)
                return True
        return False

    def _search(self, search: KernelSearch, until: float, progress: Progress | None) -> None:
        singles = self._singles()
        group = self.group
        if not self._run(search, _chunks(singles, group), until):
            return
        relevant = {
            k: [v for v in values if self._distinct(search, {k: v})]
            for k, values in CHOICES.items()
        }
        relevant = {k: v for k, v in relevant.items() if v}
        sizes = [len(v) + 1 for v in relevant.values()]
        combos = 1
        for n in sizes:
            combos *= n
        if combos <= EXHAUSTIVE_LIMIT:
            space = [
                Candidate({k: v for k, v in zip(relevant, values, strict=True) if v is not None})
                for values in itertools.product(*([None, *v] for v in relevant.values()))
            ]
            self._run(search, _chunks(space, group), until)
            return

        def bred():
            while children := self._children(search, relevant, group):
                yield children

        self._run(search, bred(), until)

    def _run(self, search: KernelSearch, groups: Iterator[list[Candidate]], until: float) -> bool:
        """Evaluate the groups of candidates until `until`, `self.depth` of them in flight
        (their builds run while the oldest is measured); False when time ran out first.
        A group is made when it is submitted, so bred children see the latest results."""
        in_flight: deque[_Pending] = deque(search.ahead)
        search.ahead.clear()
        try:
            while True:
                while len(in_flight) < self.depth and time.perf_counter() < until:
                    candidates = next(groups, None)
                    if candidates is None:
                        while self._prefetch(len(in_flight)):
                            pass
                        break
                    pending = self._start(search, candidates)
                    if pending is not None:
                        in_flight.append(pending)
                if time.perf_counter() >= until:
                    return False
                if not in_flight:
                    return True
                self._finish(search, in_flight.popleft())
        finally:
            for pending in in_flight:
                self.measurer.cancel(pending.handle)

    def _distinct(self, search: KernelSearch, knobs: dict[str, Any]) -> bool:
        c = search.seen.get(canonical(knobs))
        default = search.seen[canonical({})]
        return c is not None and not c.why and c.code != default.code

    def _children(
        self, search: KernelSearch, relevant: dict[str, list[Any]], count: int
    ) -> list[Candidate]:
        """A batch of new candidates bred from the best measured ones."""
        ranked = sorted(
            (c for c in search.seen.values() if c.ratio is not None and not c.why),
            key=lambda c: -(c.ratio or 0.0),
        )[:6] or [search.seen[canonical({})]]
        children: list[Candidate] = []
        for _ in range(10 * count):
            if len(children) >= count:
                break
            a, b = self.rng.choice(ranked), self.rng.choice(ranked)
            child = {k: (a.knobs if self.rng.random() < 0.5 else b.knobs).get(k) for k in relevant}
            knob = self.rng.choice(list(relevant))
            child[knob] = self.rng.choice([None, *relevant[knob]])
            knobs = {k: v for k, v in child.items() if v is not None}
            if canonical(knobs) not in search.seen and all(
                canonical(knobs) != canonical(c.knobs) for c in children
            ):
                children.append(Candidate(knobs))
        return children

    def _finalize(self, search: KernelSearch) -> None:
        """Re-measure the finalists with the default; keep the best only if it beats it,
        by `MIN_GAIN` and in `FINAL_WINS` of the rounds."""
        ranked = sorted(
            (c for c in search.by_code.values() if c.ratio is not None and not c.why and c.knobs),
            key=lambda c: -(c.ratio or 0.0),
        )[:FINALISTS]
        if not ranked:
            return
        timings = self._time_batch(search, ranked, FINAL_ROUNDS)
        if not timings:
            return
        rest = timings[1:]
        best_i = max(range(len(rest)), key=lambda i: ranked[i].ratio or 0.0)
        if (ranked[best_i].ratio or 0.0) >= MIN_GAIN and ranked[best_i].wins >= FINAL_WINS:
            best = ranked[best_i]
            search.best = best
            # The default's time from the shares' measurement, scaled by the paired speed-up.
            median = search.default_time.median / (best.ratio or 1.0)
            search.best_time = Timing(median, rest[best_i].spread, FINAL_ROUNDS)

    # -- records -------------------------------------------------------------------------
    def records(self, identity: tuple[str, tuple[str, ...]]) -> list[Record]:
        return [
            s.kernel.record(
                identity,
                s.best.knobs if s.best else {},
                s.best_time or s.default_time,
                s.default_time,
                s.trials,
                s.invalid,
            )
            for s in self.searches
            if s.trials
        ]


__all__ = ["CHOICES", "Candidate", "KernelSearch", "Tuner", "canonical"]
