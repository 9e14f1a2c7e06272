"""`lamina.tune`: tune a model's kernels within a budget and write the records (docs/tuning.md).

First, for a model with convolutions, the graph-level knobs are searched on
whole-model builds (tuning/graph_search.py); the kernels are then those of
the plan chosen. Resumes from the records file: a model record found there
is kept (no graph-level search), a kernel's recorded knobs are its first
candidate, its trials count on, and the records of other kernels, CPUs and
versions are kept. `budget=0` measures nothing and leaves the file as it
is. At the end the model itself is timed with and without the records
(interleaved, in a fresh compile each): that is the speed-up reported. When
the tuned model is slower as a whole (the kernels were measured alone; a
second, longer measurement agrees), this run's records are written with the
default knobs: a tuned model is never the slower one.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO

from lamina.passes.apply_model_records import model_key
from lamina.target.tuning_records import Record, load_records, write_records
from lamina.tuning.graph_search import GRAPH_SHARE, GraphSearch, has_convolutions, search_graph
from lamina.tuning.kernels import load_model, model_kernels
from lamina.tuning.measure import LocalMeasurer, call_clock
from lamina.tuning.search import MIN_GAIN, Candidate, Tuner
from lamina.tuning.worker import CLOCKS


@dataclass
class TuneResult:
    records: list[Record]
    """The records this run wrote (all of the file's for this CPU and version)."""
    kernels: int
    trials: int
    measurements: int
    builds: int
    seconds: float
    default_seconds: float | None = None
    """The model's time per call with the default knobs (None: not measured)."""
    tuned_seconds: float | None = None

    @property
    def speedup(self) -> float | None:
        if self.default_seconds is None or self.tuned_seconds is None:
            return None
        return self.default_seconds / self.tuned_seconds


def tune(
    model: str | os.PathLike[str],
    records: str | os.PathLike[str],
    budget: float = 60.0,
    *,
    ray: str | None = None,
    threads: int | None = None,
    targets: Sequence[str] | None = None,
    out: IO[str] | None = None,
    measure_model: bool = True,
    seed: int = 0,
    context: bool = True,
) -> TuneResult:
    """Tune the kernels of `model` (.mlir or .onnx) for `budget` seconds into `records`.

    `ray`: a Ray address (or "auto") to build and measure on a cluster
    (tuning/ray_cluster.py). `threads`: the thread count the kernels run with
    while measured (default: Lamina's). `out`: where the progress table goes
    (default stderr; plain lines unless a terminal). `context`: time the kernels'
    candidates inside the whole model (tuning/context.py; locally only), else each kernel
    as a program of its own (tuning/search.py).
    """
    if not budget >= 0:  # also NaN
        raise ValueError(f"lamina.tune: budget must be >= 0 seconds, got {budget}")
    out = _stream(out)
    started = time.perf_counter()
    records = os.fspath(records)
    existing = load_records(records) if os.path.exists(records) else None
    target_list = list(targets) if targets else None
    imported = load_model(model, target_list, lower=False)
    key = model_key(imported)
    old_graph = existing.applicable.get(key) if existing else None
    if budget <= 0:
        kept = list(existing.applicable.values()) if existing else []
        kernels = model_kernels(load_model(model, target_list, _knobs(old_graph)))
        out.write(f"lamina-tune: budget 0: {len(kept)} record(s) kept, nothing measured\n")
        return _summary(kept, kernels, 0, 0, 0, started, out)
    measurer = _measurer(ray, threads)
    try:
        graph = None
        if old_graph is None and has_convolutions(imported):
            graph_started = time.perf_counter()
            graph = _search_graph(model, key, target_list, measurer, budget, out)
            budget -= time.perf_counter() - graph_started
        del imported
        graph_knobs = graph.knobs if graph is not None else _knobs(old_graph)
        module = load_model(model, target_list, graph_knobs)
        kernels = model_kernels(module)
        if context and ray is None:
            graph_record = graph.record(measurer.identity()) if graph is not None else old_graph
            new = _search_in_context(
                model, target_list, module, kernels, measurer, graph_record, existing, budget,
                seed, out,
            )  # fmt: skip
            kept = [
                r
                for r in (existing.records if existing else [])
                if r.identity not in {n.identity for n in new}
            ]
            write_records(records, [*kept, *new])
            identity = measurer.identity()
            result = _summary(
                [r for r in [*kept, *new] if (r.cpu, r.features) == identity],
                kernels,
                sum(r.trials for r in new),
                0,
                0,
                started,
                out,
            )
            measurer.close()
            return _finish(result, model, records, targets, threads, kept, new, measure_model, out)
        del module
        if context and ray is not None:
            out.write(
                "lamina-tune: note: through Ray each kernel is timed as a program of its own "
                "(as --alone; docs/tuning.md)\n"
            )
        tuner = Tuner(kernels, measurer, seed=seed)
        out.write(f"lamina-tune: {len(kernels)} kernel(s), budget {max(budget, 0):.0f} s\n")
        tuner.measure_defaults()
        for kernel, why in tuner.skipped:
            out.write(
                f"lamina-tune: note: {kernel.name} cannot be measured alone ({why}); "
                "it keeps the default knobs\n"
            )
        if existing is not None:
            for search in tuner.searches:
                old = existing.applicable.get(search.kernel.key)
                if old is not None:
                    search.trials = old.trials
                    if old.knobs:
                        tuner._evaluate(search, [Candidate(dict(old.knobs))])
        table = ProgressTable(out)
        tuner.tune(
            budget, table.update
        )  # the search's time: loading and timing the model come on top
        table.update(tuner)
        identity = measurer.identity()
        new = tuner.records(identity)
        if graph is not None:
            new.append(graph.record(identity))
        kept = [
            r
            for r in (existing.records if existing else [])
            if r.identity not in {n.identity for n in new}
        ]
        write_records(records, [*kept, *new])
        trials = sum(s.trials for s in tuner.searches)
        result = _summary(
            [r for r in [*kept, *new] if (r.cpu, r.features) == identity],
            kernels,
            trials,
            tuner.measurements,
            tuner.builds,
            started,
            out,
        )
    finally:
        measurer.close()
    return _finish(result, model, records, targets, threads, kept, new, measure_model, out)


def _finish(result, model, records, targets, threads, kept, new, measure_model, out) -> TuneResult:
    """Time the whole model without and with the records; revert this run's records when
    the tuned model is slower as a whole."""
    if measure_model:
        times = model_times(model, records, targets, threads)
        if times[1] > times[0] * MIN_GAIN:  # slower as a whole: make sure, else keep defaults
            out.write("lamina-tune: the tuned model measured slower; timing it again\n")
            times = model_times(model, records, targets, threads, rounds=31)
            if times[1] > times[0]:
                write_records(records, [*kept, *(_reverted(r) for r in new)])
                out.write(
                    "lamina-tune: the tuned model is slower than the default as a whole: "
                    "this run's records keep the default knobs\n"
                )
                times = (times[0], times[0])
        result.default_seconds, result.tuned_seconds = times
        out.write(
            f"lamina-tune: model {result.default_seconds * 1e3:.3f} ms default, "
            f"{result.tuned_seconds * 1e3:.3f} ms tuned: {result.speedup:.2f}x\n"
        )
    return result


def _search_in_context(
    model, targets, module, kernels, measurer, graph_record, existing, budget, seed, out
) -> list[Record]:
    """The kernels' knobs searched in context (tuning/context.py): the new records."""
    from lamina.tuning.context import ContextSearch

    search = ContextSearch(os.fspath(model), targets, module, kernels, measurer, graph_record, seed)
    if existing is not None:  # resume: a kernel's recorded knobs are its first candidate
        for slot in search.slots:
            old = existing.applicable.get(slot.kernel.key)
            if old is not None and old.knobs:
                slot.queue.insert(0, dict(old.knobs))
    out.write(f"lamina-tune: {len(kernels)} kernel(s), in context, budget {max(budget, 0):.0f} s\n")

    def note(s: ContextSearch) -> None:
        left = max(0.0, s.deadline - time.perf_counter())
        found = sum(1 for slot in s.slots if slot.final is not None)
        if s.finished:
            out.write(
                f"lamina-tune: {found} kernel(s) faster with their best knobs, timed together "
                f"again: estimated speed-up {s.estimate():.3f}x\n"
            )
            return
        out.write(
            f"lamina-tune: generation {s.generations}: {len(s.active())} kernel(s) searched, "
            f"{s.measurements} candidates timed, estimated speed-up {s.estimate():.3f}x, "
            f"ETA {left:.0f} s\n"
        )
        out.flush()

    try:
        search.search(max(budget, 0.0), note)
        for line in search.notes:
            out.write(f"lamina-tune: note: {line}\n")
        new = search.records(measurer.identity())
    finally:
        search.close()
    if graph_record is not None:
        new.append(graph_record)
    return new


def _reverted(record: Record) -> Record:
    """`record` with the default knobs (its trials still count for a resumed search)."""
    return dataclasses.replace(record, knobs={}, time=record.default or record.time)


def _knobs(record: Record | None) -> dict | None:
    return dict(record.knobs) if record is not None else None


def _search_graph(model, key, targets, measurer, budget: float, out: IO[str]) -> GraphSearch:
    """The graph-level knobs of `model`, within `GRAPH_SHARE` of the budget."""
    from lamina.runtime.native_setup import set_num_threads

    if measurer.threads:  # the whole model runs here: with the threads the kernels get
        set_num_threads(measurer.threads)
    search = GraphSearch(os.fspath(model), key, targets, clock=call_clock(measurer.threads))
    out.write(f"lamina-tune: graph-level knobs, whole-model builds, {budget * GRAPH_SHARE:.0f} s\n")

    def note(s: GraphSearch) -> None:
        ratios = ", ".join(f"{k}: {v:.2f}x" for k, v in s.ratios.items())
        out.write(f"lamina-tune: graph trials {s.trials}{'; ' + ratios if ratios else ''}\n")
        out.flush()

    search_graph(search, measurer.identity(), time.perf_counter() + budget * GRAPH_SHARE, note)
    chosen = ", ".join(f"{k}={v}" for k, v in sorted(search.knobs.items())) or "the defaults"
    out.write(f"lamina-tune: graph-level knobs: {chosen}\n")
    return search


def _stream(out: IO[str] | None) -> IO[str]:
    return out if out is not None else sys.stderr


def _measurer(ray: str | None, threads: int | None):
    if ray is None:
        return LocalMeasurer(threads)
    from lamina.tuning.ray_cluster import RayMeasurer

    return RayMeasurer(ray, threads)


def _summary(records, kernels, trials, measurements, builds, started, out) -> TuneResult:
    keys = {k.key: k for k in kernels}
    default = sum(
        r.default.median * keys[r.kernel].calls for r in records if r.kernel in keys and r.default
    )
    tuned = sum(
        r.time.median * keys[r.kernel].calls for r in records if r.kernel in keys and r.default
    )
    if tuned > 0:
        out.write(
            f"lamina-tune: tuned kernels {default / tuned:.2f}x faster than the defaults (sum of kernel times)\n"
        )
    return TuneResult(
        records, len(kernels), trials, measurements, builds, time.perf_counter() - started
    )


def model_times(
    model, records: str, targets, threads: int | None, rounds: int = 15
) -> tuple[float, float]:
    """The model's time per call compiled without and with `records`: the default's median,
    and the tuned one as that divided by the median of the per-round speed-ups (rounds
    interleaved, so a change of the machine's load between rounds cancels out). Identical
    code is not timed."""
    import numpy as np

    import lamina
    from lamina.runtime.native_setup import set_num_threads

    if threads:
        set_num_threads(threads)
    path = os.fspath(model)
    exes = [
        lamina.compile(path, targets=targets, cache=False),
        lamina.compile(path, targets=targets, records=records, cache=False),
    ]
    rng = np.random.default_rng(0)
    params = exes[0]._signature("main").params
    args = [
        rng.uniform(0.1, 1.0, p.shape).astype(p.dtype)
        if p.dtype.kind == "f"
        else np.zeros(p.shape, p.dtype)
        for p in params
    ]
    clock = CLOCKS[call_clock(threads)]
    start = clock()
    exes[0].run("main", *args)
    calls = max(1, min(1000, int(0.02 / max(clock() - start, 1e-7))))
    same = exes[0].compiled.object_code == exes[1].compiled.object_code
    samples: list[list[float]] = [[], []]
    for _ in range(rounds):
        for i, exe in enumerate(exes[:1] if same else exes):
            start = clock()
            for _ in range(calls):
                exe.run("main", *args)
            samples[i].append((clock() - start) / calls)
    default = float(np.median(samples[0]))
    if same:
        return default, default
    speedup = float(np.median([d / t for d, t in zip(samples[0], samples[1], strict=True)]))
    return default, default / speedup


class ProgressTable:
    """Kernel, share, best time, trials, speed-up, ETA: redrawn on a terminal, lines otherwise."""

    def __init__(self, out: IO[str]):
        self.out = out
        self.tty = hasattr(out, "isatty") and out.isatty()
        self.drawn = 0

    def update(self, tuner: Tuner) -> None:
        rows = [f"{'kernel':40} {'share':>6} {'best':>10} {'trials':>6} {'speed-up':>8}"]
        for s in tuner.searches:
            best = (s.best_time or s.default_time).median
            rows.append(
                f"{s.kernel.name[:40]:40} {s.share:6.1%} {best * 1e3:8.3f}ms {s.trials:6d} {s.speedup:7.2f}x"
            )
        eta = max(0.0, tuner.deadline - time.perf_counter())
        rows.append(f"ETA {eta:.0f} s, {tuner.measurements} measurements, {tuner.builds} builds")
        if self.tty and self.drawn:
            self.out.write(f"\x1b[{self.drawn}F\x1b[J")
        self.out.write("\n".join(rows) + "\n")
        self.out.flush()
        self.drawn = len(rows)


__all__ = ["ProgressTable", "TuneResult", "model_times", "tune"]
