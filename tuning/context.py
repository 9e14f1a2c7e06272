"""The in-context search: every kernel's candidates timed inside the whole model.

A kernel timed alone (its operands hot in cache, after itself) is not the
kernel inside the network, and picking the best of many noisy alone-timings
picks noise (docs/tuning.md, "Measured"). Here a candidate is timed where it
runs: the model is built with the candidates' records as a profiling build
(`profile=True`, runtime/profile.py), checked against the baseline build
(within `TOLERANCE`) and run interleaved with it in the measuring process
(worker.py `model`); each kernel's time comes from the model's per-kernel
counters, so the ratio baseline / candidate of a kernel is measured on the
data, the caches and the order of the real network.

One build carries one candidate for every kernel at once (the knobs of one
kernel change only its own code): a generation of the search costs one model
build and tries as many candidates as the model has kernels being searched.
Per kernel the candidates are first the single-knob changes of the defaults,
one knob after another (a knob whose first value leaves the kernel's code as
it is does not get its others), then children of the best ones. At the end
the best candidate of each kernel is built together and timed again, longer;
a kernel keeps its knobs only when it is faster there in most rounds.
"""

from __future__ import annotations

import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lamina.passes.apply_records import kernel_key, kernels
from lamina.target.registry import module_facts
from lamina.target.tuning_records import Record, Timing, lamina_version, write_records
from lamina.tuning.kernels import Kernel
from lamina.tuning.measure import summary
from lamina.tuning.search import CHOICES, MIN_GAIN, canonical

PRIORITY = (
    "block_rows",
    "conv_channel_jam",
    "block_vector_choices",
    "conv_flatten_rows",
    "epilogue_step_vectors",
    "block_max_vectors",
    "conv_channel_jam_everywhere",
    "conv_grouped_jam_min_row",
    "whole_vector_lanes",
    "epilogue_jam_max_ops",
    "conv_stem_channel_jam",
    "pack_min_row_blocks",
    "pack_max_bytes",
    "gather_line_bytes",
    "block_rows_outside_columns",
    "block_broadcast_registers",
)
"""Knobs in the order their single changes are tried (the others of `CHOICES` after
them): the register block and the channel jam decide most of a convolution's time."""

VALUE_ORDER: dict[str, tuple[Any, ...]] = {
    "block_rows": (4, 7, 6, 8, 12, 14, 2, 16, 3, 5, 1),
    "conv_channel_jam": (2, 3, 4, 1),
    "block_vector_choices": ((1,), (2,), (4,), (3,)),
    "block_max_vectors": (8, 2, 1),
}
"""The values of a knob in the order they are tried (the others of `CHOICES` after them).
`block_rows`: in a 180 s in-context search of MobileNetV2 (AVX-512, one thread) the
rows that won were 4 (8 kernels), 6, 7 and 8 (3 each), never 14; divisors of the
output widths (7, 14, 28, 56) and other small blocks before the smallest."""

FEW_REGISTERS_ROWS = (4, 3, 5, 6, 2, 7, 8, 12, 14, 16, 1)
"""`block_rows` in the order tried where the vector registers are 16 (AVX2): in a 320 s
in-context search of MobileNetV2's AVX2 build (one thread) 7 and 6 rows made every 1x1
convolution 0.50-0.72x (their jammed tiles spill), while 4 rows won on six depthwise
convolutions (1.03-1.09x in the final): the smaller blocks first."""

DERIVED = {"block_rows": 2, "conv_channel_jam": 2, "block_vector_choices": 2}
"""Knobs whose default is derived per kernel, so that one value tried may be the one the
default chose: they are skipped for a kernel after this many values leave its code as
the default's (any other knob after one)."""

THREAD_KNOBS = frozenset(
    {
        "parallel_min_work",
        "parallel_min_iterations_per_core",
        "parallel_gather_reads",
        "parallel_collapse_below",
        "parallel_rows_first",
    }
)
"""Knobs that only decide how work is shared among threads: not searched at one thread."""

ROUNDS, FINAL_ROUNDS = 21, 41
FINAL_WINS = 26
"""Of `FINAL_ROUNDS`, the rounds a kernel's final knobs must be faster in (a sign test:
26 of 41 by chance, 5 %) besides `MIN_GAIN` in the median."""

GROWING = frozenset({"block_rows", "conv_channel_jam"})
"""Knobs whose larger values make a kernel's register tile larger."""

SPILLED = 0.8
"""A single change this much slower or worse in context (and faster in no round) marks
its value and the larger ones of a `GROWING` knob as not worth a generation."""

MIN_SHARE = 0.004
"""Kernels with less of the model's time are not searched."""


@dataclass
class Trial:
    knobs: dict[str, Any]
    code: tuple[str, ...] = ()
    ratio: float | None = None
    """Baseline / this, the median of the per-round ratios of the kernel's time in context."""
    wins: int = 0
    rounds: int = 0


@dataclass
class Slot:
    """The search state of one kernel."""

    kernel: Kernel
    symbols: frozenset[str]
    default_code: tuple[str, ...] = ()
    default_seconds: float = 0.0
    """Its time per model run in context (all its calls)."""
    spread: float = 0.0
    share: float = 0.0
    queue: list[dict[str, Any]] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    trials: list[Trial] = field(default_factory=list)
    invalid: list[dict[str, Any]] = field(default_factory=list)
    irrelevant: set[str] = field(default_factory=set)
    unchanged: dict[str, int] = field(default_factory=dict)
    """Per knob: its single changes that left the code as the default's."""
    final: Trial | None = None

    def next(self, rng: random.Random) -> dict[str, Any] | None:
        """The next candidate not tried yet (None: nothing left)."""
        while self.queue:
            knobs = self.queue.pop(0)
            if canonical(knobs) in self.seen or set(knobs) & self.irrelevant:
                continue
            if self._beyond_a_spill(knobs):
                continue
            self.seen.add(canonical(knobs))
            return knobs
        for _ in range(50):
            child = self._child(rng)
            if child is not None and canonical(child) not in self.seen:
                if self._beyond_a_spill(child):
                    continue
                self.seen.add(canonical(child))
                return child
        return None

    def _beyond_a_spill(self, knobs: dict[str, Any]) -> bool:
        """A register-tile knob (`GROWING`) at least as large as a value whose single
        change made this kernel far slower (`SPILLED`, no round won): a larger tile
        needs more registers still (AVX2's 16: `block_rows = 7` ran 0.44-0.66x on
        MobileNetV2's convolutions, every larger count would too)."""
        for t in self.trials:
            if len(t.knobs) != 1 or t.ratio is None or t.ratio > SPILLED or t.wins:
                continue
            ((knob, bad),) = t.knobs.items()
            value = knobs.get(knob)
            if knob in GROWING and isinstance(bad, int) and isinstance(value, int):
                if value >= bad:
                    return True
        return False

    def ranked(self) -> list[Trial]:
        return sorted(
            (t for t in self.trials if t.ratio is not None and t.code != self.default_code),
            key=lambda t: -(t.ratio or 0.0),
        )

    def _child(self, rng: random.Random) -> dict[str, Any] | None:
        """Crossover of two of the best candidates and one mutation, over the knobs that
        changed this kernel's code."""
        relevant = {
            k: v
            for k, v in CHOICES.items()
            if k not in self.irrelevant and any(k in t.knobs for t in self.trials)
        }
        best = self.ranked()[:4]
        if not relevant or not best:
            return None
        a, b = rng.choice(best), rng.choice(best)
        child = {k: (a.knobs if rng.random() < 0.5 else b.knobs).get(k) for k in relevant}
        knob = rng.choice(list(relevant))
        child[knob] = rng.choice([None, *relevant[knob]])
        return {k: v for k, v in child.items() if v is not None}


DEPTH_FIRST = 3
"""The first knobs of `PRIORITY` whose values are all tried before the others' (a
network's convolutions change with them; most other knobs leave their code as it is,
and a generation in which a kernel's candidate is the default's code is lost for it)."""

LEADING = {"block_rows": 4, "conv_channel_jam": 2, "block_vector_choices": 2}
"""Of the `DEPTH_FIRST` knobs, this many values each are tried first, then the rest of
their values: a search of 5-15 generations (a network at 10 minutes on a loaded 2-core
machine) reaches the channel jam and the vectors per row, instead of spending them all
on the ten register-row counts (MobileNetV2: six generations in 180 s, all of them
`block_rows`)."""


def singles(threads: int | None, registers: int = 32) -> list[dict[str, Any]]:
    """Single-knob changes of the defaults: every value of the first `DEPTH_FIRST` knobs
    of `PRIORITY` (their `LEADING` values first), then the first value of every other
    knob, the second values, ... With 16 vector `registers` or fewer the register
    rows are tried smallest first (`FEW_REGISTERS_ROWS`)."""
    order = [k for k in PRIORITY if k in CHOICES] + [k for k in CHOICES if k not in PRIORITY]
    if threads == 1:
        order = [k for k in order if k not in THREAD_KNOBS]
    values = {k: _ordered(k) for k in order}
    if registers <= 16 and "block_rows" in values:
        values["block_rows"] = [v for v in FEW_REGISTERS_ROWS if v in CHOICES["block_rows"]]
    deep = order[:DEPTH_FIRST]
    first = [{k: v} for k in deep for v in values[k][: LEADING.get(k, len(values[k]))]]
    first += [{k: v} for k in deep for v in values[k][LEADING.get(k, len(values[k])) :]]
    rest = order[DEPTH_FIRST:]
    depth = max((len(values[k]) for k in rest), default=0)
    return first + [{k: values[k][i]} for i in range(depth) for k in rest if i < len(values[k])]


def _ordered(knob: str) -> list[Any]:
    first = [v for v in VALUE_ORDER.get(knob, ()) if v in CHOICES[knob]]
    return first + [v for v in CHOICES[knob] if v not in first]


class ContextSearch:
    """Searches the kernels of one model (lowered by `load_model`) in context."""

    def __init__(
        self,
        model: str,
        targets: list[str] | None,
        module,
        model_kernels: list[Kernel],
        measurer,
        graph_record: Record | None = None,
        seed: int = 0,
    ):
        self.model = model
        self.targets = targets
        self.measurer = measurer
        self.graph_record = graph_record
        self.rng = random.Random(seed)
        self.folder = tempfile.TemporaryDirectory(prefix="lamina-context-")
        by_key: dict[str, set[str]] = {}
        for func in kernels(module):
            by_key.setdefault(kernel_key(func, module), set()).add(func.sym_name.data)
        first = singles(measurer.threads, module_facts(module).vector_registers)
        self.slots = [
            Slot(k, frozenset(by_key.get(k.key, {k.name})), queue=list(first))
            for k in model_kernels
        ]
        self.builds = 0
        self.build_seconds = self.build_cpu_seconds = 0.0
        """Wall and CPU time (all threads) of the candidate builds (the measuring process's
        compiles)."""
        self.measurements = 0
        self.generations = 0
        self.deadline = time.perf_counter()
        self.history: list[tuple[float, float]] = []
        """(seconds since the start, the model's estimated speed-up) after each generation."""
        self.base_records = self._write("base", {})
        self.notes: list[str] = []
        self.finished = False
        self.final_ratio: float | None = None
        """The whole model's speed-up in the final measurement (its runs' time)."""
        """The final measurement is done (`final` holds each kernel's kept knobs)."""

    # -- builds --------------------------------------------------------------------------
    def _write(self, name: str, knobs: dict[str, dict[str, Any]]) -> str | None:
        """A records file of the model record and `knobs` per kernel key (None: empty)."""
        from lamina.target.tuning_records import host_identity

        cpu, features = host_identity()
        records = [self.graph_record] if self.graph_record is not None else []
        one = Timing(1.0, 0.0, 1)
        records += [
            Record(key, cpu, features, lamina_version(), k, one, one, "", "", 1, ())
            for key, k in sorted(knobs.items())
        ]
        if not records:
            return None
        path = os.path.join(self.folder.name, f"{name}.jsonl")
        write_records(path, records)
        return path

    def _ask(self, knobs: dict[str, dict[str, Any]] | None, rounds: int) -> dict:
        records = None if knobs is None else self._write(f"g{self.generations}", knobs)
        if knobs is not None and records is None:
            records = self.base_records
        timeout = 600.0 + rounds * 2 * max((s.default_seconds for s in self.slots), default=0) * 50
        answer = self.measurer.model(
            self.model, self.targets, self.base_records, records, rounds, timeout
        )
        self.builds += 1
        self.build_seconds += answer.get("build_seconds", 0.0)
        self.build_cpu_seconds += answer.get("build_cpu_seconds", 0.0)
        return answer

    def _code(self, slot: Slot, codes: dict[str, str]) -> tuple[str, ...]:
        return tuple(sorted(codes.get(s, "") for s in slot.symbols))

    def _times(self, slot: Slot, rows: list[dict[str, float]]) -> list[float]:
        return [sum(row.get(s, 0.0) for s in slot.symbols) for row in rows]

    # -- the search ----------------------------------------------------------------------
    def baseline(self) -> None:
        """Each kernel's time in the model with the defaults: its share."""
        answer = self._ask(None, ROUNDS)
        if not answer["ok"]:
            raise RuntimeError(f"the model does not build to profile: {answer['why']}")
        (rows,) = answer["samples"]
        total = statistics.median(row[""] for row in rows)
        for slot in self.slots:
            times = self._times(slot, rows)
            slot.default_seconds, slot.spread = summary(times) if any(times) else (0.0, 0.0)
            slot.share = slot.default_seconds / total if total > 0 else 0.0
            slot.default_code = self._code(slot, answer["codes"])
        self.slots.sort(key=lambda s: -s.share)
        self.total = total

    def active(self) -> list[Slot]:
        return [s for s in self.slots if s.share >= MIN_SHARE and s.default_seconds > 0]

    def search(self, budget: float, progress: Callable[[ContextSearch], None] | None) -> None:
        """Generations until the budget, less the time of the final measurement, is spent
        (at least one: a budget shorter than a build still tries a candidate per kernel)."""
        started = time.perf_counter()
        self.deadline = started + budget
        self.baseline()
        generation_seconds = 0.0  # the baseline's build started the measuring process
        while (
            not self.generations or time.perf_counter() + generation_seconds * 2.2 < self.deadline
        ):
            begun = time.perf_counter()
            assignment = {s.kernel.key: (s, k) for s in self.active() if (k := s.next(self.rng))}
            if not assignment:
                break
            self.generations += 1
            answer = self._ask({key: k for key, (_, k) in assignment.items()}, ROUNDS)
            self._generation(list(assignment.values()), answer)
            generation_seconds = time.perf_counter() - begun
            self.history.append((time.perf_counter() - started, self.estimate()))
            if progress is not None:
                progress(self)
        self.finalize()
        self.finished = True
        if progress is not None:
            progress(self)

    def _generation(self, tried: list[tuple[Slot, dict[str, Any]]], answer: dict) -> None:
        base_codes = answer.get("base_codes", {})
        codes = answer.get("codes", {})
        changed = [
            (slot, knobs)
            for slot, knobs in tried
            if self._code(slot, codes) != self._code(slot, base_codes)
        ]
        for slot, knobs in tried:
            if codes and self._code(slot, codes) == slot.default_code and len(knobs) == 1:
                ((knob, _),) = knobs.items()  # a value that changes nothing: none will
                slot.unchanged[knob] = slot.unchanged.get(knob, 0) + 1
                if slot.unchanged[knob] >= min(DERIVED.get(knob, 1), len(CHOICES.get(knob, ()))):
                    slot.irrelevant.add(knob)
        if not answer["ok"]:
            # Wrong numbers or a crash: blame the kernels whose code changed (all, if unknown).
            blamed = changed if codes else tried
            for slot, knobs in blamed:
                slot.invalid.append({"knobs": dict(sorted(knobs.items())), "why": answer["why"]})
            return
        base_rows, rows = answer["samples"]
        self.measurements += len(changed)
        for slot, knobs in tried:
            trial = Trial(knobs, self._code(slot, codes))
            slot.trials.append(trial)
            if trial.code == slot.default_code:
                continue
            base, own = self._times(slot, base_rows), self._times(slot, rows)
            pairs = [(b, o) for b, o in zip(base, own, strict=True) if o > 0]
            if pairs:
                trial.ratio = statistics.median(b / o for b, o in pairs)
                trial.wins = sum(b > o for b, o in pairs)
                trial.rounds = len(pairs)

    def estimate(self) -> float:
        """The model's speed-up if every kernel took its best candidate (sum of kernel times);
        once finished, the kept knobs as timed together."""
        if not self.total:
            return 1.0
        saved = 0.0
        for slot in self.slots:
            best = slot.final if self.finished else next(iter(slot.ranked()), None)
            if best is not None and (best.ratio or 0) > 1:
                saved += slot.default_seconds * (1 - 1 / (best.ratio or 1.0))
        return self.total / max(self.total - saved, 1e-12)

    def finalize(self) -> None:
        """The best candidate of each kernel, built together, timed against the baseline
        `FINAL_ROUNDS` rounds: a kernel keeps its knobs when faster by `MIN_GAIN` (median)
        in `FINAL_WINS` of the rounds, and none does when the whole model's runs were
        slower (a kernel's knobs can slow the kernels after it: MobileNetV2 AVX2, a
        convolution 1.13x faster with `block_rows = 7`, the model 0.98x)."""
        finalists = {
            s.kernel.key: (s, best[0])
            for s in self.slots
            if (best := s.ranked()) and (best[0].ratio or 0) >= MIN_GAIN
        }
        if not finalists:
            return
        self.generations += 1
        answer = self._ask({key: t.knobs for key, (_, t) in finalists.items()}, FINAL_ROUNDS)
        if not answer["ok"]:
            self.notes.append(f"the finalists together do not check: {answer['why']}")
            return
        base_rows, rows = answer["samples"]
        whole = statistics.median(b[""] / o[""] for b, o in zip(base_rows, rows, strict=True))
        self.final_ratio = whole
        if whole < 1.0:  # faster kernels, slower model: what they change for the others
            self.notes.append(
                f"the kernels' best knobs together made the model slower ({whole:.3f}x): "
                "the defaults are kept"
            )
            return
        for slot, trial in finalists.values():
            base, own = self._times(slot, base_rows), self._times(slot, rows)
            pairs = [(b, o) for b, o in zip(base, own, strict=True) if o > 0]
            if not pairs:
                continue
            ratio = statistics.median(b / o for b, o in pairs)
            wins = sum(b > o for b, o in pairs)
            if ratio >= MIN_GAIN and wins >= FINAL_WINS:
                after = self._after(slot)
                if after is not None and after.kernel.key not in finalists:
                    lost = self._added(after, base_rows, rows)
                    if self._added(slot, base_rows, rows) + lost >= 0:
                        self.notes.append(
                            f"{slot.kernel.name}: its knobs slow the kernel after it "
                            f"({after.kernel.name}, {lost * 1e6:.1f} us) by more than they "
                            "save: the defaults are kept"
                        )
                        continue
                slot.final = Trial(trial.knobs, trial.code, ratio, wins, len(pairs))

    def _after(self, slot: Slot) -> Slot | None:
        """The kernel the model calls after `slot`'s first call (slots are in call order)."""
        i = next(i for i, s in enumerate(self.slots) if s is slot)
        return self.slots[i + 1] if i + 1 < len(self.slots) else None

    def _added(self, slot: Slot, base_rows: list[dict], rows: list[dict]) -> float:
        """Seconds per model run a kernel took more in `rows` than in `base_rows` (median
        of the rounds; negative: less). A kernel's knobs can slow the kernel after it with
        its own code unchanged: in MobileNetV2's AVX2 build, timed quietly, `block_rows = 4`
        on the 32->16 projection at 112x112 left it 0.999x and made the 16->96 expansion
        after it 0.86x (the model 0.99x)."""
        base, own = self._times(slot, base_rows), self._times(slot, rows)
        return statistics.median(o - b for b, o in zip(base, own, strict=True))

    # -- records -------------------------------------------------------------------------
    def records(self, identity: tuple[str, tuple[str, ...]]) -> list[Record]:
        found = []
        for s in self.slots:
            if not s.trials and not s.invalid:
                continue
            calls = max(s.kernel.calls, 1)
            default = Timing(s.default_seconds / calls, s.spread, ROUNDS)
            tuned = default
            if s.final is not None:
                tuned = Timing(default.median / (s.final.ratio or 1.0), 0.0, s.final.rounds)
            knobs = s.final.knobs if s.final else {}
            trials = len(s.trials) + len(s.invalid)
            found.append(s.kernel.record(identity, knobs, tuned, default, trials, s.invalid))
        return found

    def close(self) -> None:
        self.folder.cleanup()


__all__ = ["ContextSearch", "Slot", "Trial", "singles"]
