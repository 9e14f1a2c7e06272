"""The search of the graph-level knobs: whole-model builds, measured as whole models.

The knobs decided before kernels exist (`GRAPH_LEVEL_KNOBS`: the channel block
of a blocked convolution, which 1x1 convolutions stay NCHW, Winograd) change
the graph plan, hence which kernels there are: a candidate is a build of the
whole model, timed as the whole model against the default build (rounds
interleaved, the per-round speed-ups' median). It runs before the kernels are
searched, for a part of the budget (`GRAPH_SHARE`), and only for a model with
convolutions (the only operations these knobs decide for); the kernels are then
searched in the plan it chose. The winner is a record of scope "model"
(passes/apply_model_records.py); as for kernels, the default build is
candidate 0 and a winner must beat it by `MIN_GAIN` in a final measurement.

Candidates are built and run in this process (a whole model is too large to
send to the measuring process as text); each is checked against the default's
results (within `TOLERANCE` of their magnitude) before it is timed. A candidate
whose plan (the model lowered through `lower-te`, where every graph-level knob
has been read) is the default's, or an earlier candidate's, is not built: its
code would be the same (MobileNetV2's AVX2 build: four of five candidates,
40 s builds each, the plan 10 s).
"""

from __future__ import annotations

import hashlib
import os
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lamina.target.function_knobs import KNOBS_ATTR
from lamina.target.tuning_records import (
    MODEL_SCOPE,
    OP_PREFIX,
    Record,
    Timing,
    lamina_version,
    write_records,
)
from lamina.tuning.measure import TOLERANCE, summary
from lamina.tuning.worker import CLOCKS

GRAPH_CHOICES: dict[str, tuple[int, ...]] = {
    "conv_channel_block": (32, 8),
    "conv_nchw_pointwise_min_pixels": (1 << 30, 28 * 28),
    "winograd_min_output": (7 * 7, 1 << 30),
    "winograd_direct_below": (0, 64),
    "depthwise_in_place_percent": (0, 200),
    "conv_gate_weights_percent": (0, 400),
    "conv_grouped_min_width": (1 << 30,),
}
"""Values tried per graph-level knob besides the default, most promising first
(resnet18, AVX-512, one thread: `conv_channel_block = 32` 1.05x, 8 0.73x). A
candidate whose code equals one built before (a depthwise knob on a network
without depthwise convolutions) is not timed again."""

OP_CHOICES: dict[str, tuple[int, ...]] = {
    "conv_winograd": (0,),
    "conv_channel_block": (32, 16, 8),
}
"""Values tried per convolution (`OP_KNOBS`, a model record's `conv2d#N` entries) besides
the default: the direct kernel where Winograd applies, and the channel blocks other than
the derived one (the vector lanes)."""

OP_MIN_SHARE = 0.02
"""Convolutions with less of the model's multiply-adds are not searched one by one: a
whole-model timing does not see a few per cent of a kernel that small."""

GRAPH_SHARE = 0.35
"""The part of the budget the graph-level search may take (the kernels get the rest)."""

ROUNDS, FINAL_ROUNDS = 7, 11
MIN_GAIN = 1.01


@dataclass
class GraphSearch:
    """The graph-level search of one model; `knobs` is the winner (empty: the default)."""

    model: str
    key: str
    targets: Sequence[str] | None
    knobs: dict[str, Any] = field(default_factory=dict)
    default_time: Timing | None = None
    best_time: Timing | None = None
    trials: int = 0
    invalid: list[dict[str, Any]] = field(default_factory=list)
    ratios: dict[str, float] = field(default_factory=dict)
    """Speed-up over the default per candidate (its knobs as text)."""
    clock: str = "wall"
    """How calls are timed (`call_clock` in tuning/measure.py): `cpu` at one thread."""

    def record(self, identity: tuple[str, tuple[str, ...]]) -> Record:
        cpu, features = identity
        assert self.default_time is not None
        return Record(
            self.key,
            cpu,
            features,
            lamina_version(),
            dict(self.knobs),
            self.best_time or self.default_time,
            self.default_time,
            os.path.basename(self.model),
            "whole model",
            self.trials,
            tuple(self.invalid[:20]),
            MODEL_SCOPE,
        )


def has_convolutions(module) -> bool:
    return any(op.name == "graph.conv2d" for op in module.walk())


class _Builds:
    """Whole-model builds with a candidate's model record, in a scratch records file."""

    def __init__(self, search: GraphSearch, identity: tuple[str, tuple[str, ...]]):
        self.search = search
        self.identity = identity
        self.folder = tempfile.TemporaryDirectory(prefix="lamina-graph-")

    def build(self, knobs: dict[str, Any]):
        import lamina

        records = None
        if knobs:
            records = os.path.join(self.folder.name, f"{len(os.listdir(self.folder.name))}.jsonl")
            probe = GraphSearch(self.search.model, self.search.key, None, dict(knobs))
            probe.default_time = Timing(1.0, 0.0, 1)
            write_records(records, [probe.record(self.identity)])
        return lamina.compile(
            self.search.model, targets=self.search.targets, records=records, cache=False
        )


def _inputs(exe) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [
        rng.uniform(0.1, 1.0, p.shape).astype(p.dtype)
        if p.dtype.kind == "f"
        else np.zeros(p.shape, p.dtype)
        for p in exe._signature("main").params
    ]


def _outputs(exe, args) -> list[np.ndarray]:
    out = exe.run("main", *args)
    return [np.asarray(r) for r in (out if isinstance(out, tuple | list) else (out,))]


def _paired(
    default, candidate, args, rounds: int, clock: str = "wall"
) -> tuple[list[float], list[float]]:
    """Seconds per call of both, interleaved by round (the order alternating), by `clock`."""
    now = CLOCKS[clock]
    start = now()
    default.run("main", *args)
    calls = max(1, min(100, int(0.05 / max(now() - start, 1e-7))))
    samples: list[list[float]] = [[], []]
    for r in range(rounds):
        pair = [(0, default), (1, candidate)]
        for i, exe in pair if r % 2 == 0 else pair[::-1]:
            start = now()
            for _ in range(calls):
                exe.run("main", *args)
            samples[i].append((now() - start) / calls)
    return samples[0], samples[1]


def search_graph(
    search: GraphSearch, identity: tuple[str, tuple[str, ...]], until: float, note
) -> None:
    """Single-knob changes of the defaults, then the best value of each knob that won
    together, each a whole-model build timed against the default, until `until`."""
    builds = _Builds(search, identity)
    try:
        default = builds.build({})
        args = _inputs(default)
        want = _outputs(default, args)
        seen = {default.compiled.object_code}
        plans = {_plan(search, {})}
        best: dict[str, tuple[float, Any]] = {}
        candidates = [{k: v} for k, values in GRAPH_CHOICES.items() for v in values]
        for knobs in candidates:
            if time.perf_counter() >= until:
                break
            plan = _plan(search, knobs)
            if plan in plans:  # the knob changes nothing in this model's plan
                search.trials += 1
                note(search)
                continue
            plans.add(plan)
            ratio = _try(search, builds, default, args, want, seen, knobs)
            if ratio is not None:
                ((name, value),) = knobs.items()
                if ratio >= MIN_GAIN and ratio > best.get(name, (0.0, None))[0]:
                    best[name] = (ratio, value)
            note(search)
        for knobs in _op_candidates(search):
            if time.perf_counter() >= until:
                break
            ratio = _try(search, builds, default, args, want, seen, knobs)
            if ratio is not None and ratio >= MIN_GAIN:
                ((name, value),) = knobs.items()
                if ratio > best.get(name, (0.0, None))[0]:
                    best[name] = (ratio, value)
            note(search)
        if len(best) > 1 and time.perf_counter() < until:
            _try(search, builds, default, args, want, seen, _together(best))
        _finalize(search, builds, default, args)
        if search.default_time is None:  # nothing was timed: the default's time, for the record
            base, _ = _paired(default, default, args, 3, search.clock)
            search.default_time = Timing(*summary(base), len(base))
    finally:
        builds.folder.cleanup()


def _together(best: dict[str, tuple[float, Any]]) -> dict[str, Any]:
    """The winners of single changes as one candidate: the best value of each model-wide
    knob, and every convolution's best knobs (the best value of each of its knobs)."""
    knobs: dict[str, Any] = {}
    for name, (_, value) in best.items():
        if name.startswith(OP_PREFIX):
            knobs.setdefault(name, {}).update(value)
        else:
            knobs[name] = value
    return knobs


def conv_shares(module) -> list[tuple[int, float, bool]]:
    """(index, share of the model's multiply-adds, whether Winograd can apply) of every
    `graph.conv2d` of `module` (as imported), the largest share first."""
    from lamina.dialects import graph

    convs = [op for op in module.walk() if isinstance(op, graph.Conv2dOp)]
    macs = []
    for op in convs:
        out = graph.tensor_shape(op.results[0])
        o, i, kh, kw = graph.tensor_shape(op.weight)[:4]
        macs.append(float(np.prod(out)) * i * kh * kw)
    total = sum(macs) or 1.0
    rows = [
        (n, m / total, graph.winograd_shape_unsupported(op) is None)
        for n, (op, m) in enumerate(zip(convs, macs, strict=True))
    ]
    return sorted(rows, key=lambda r: -r[1])


def _op_candidates(search: GraphSearch):
    """Single per-convolution changes (`OP_CHOICES`), the convolutions with the largest
    share of the model's multiply-adds first (at least `OP_MIN_SHARE`); one whose plan is
    the default's is skipped when it is built (same object code)."""
    from lamina.target.registry import module_facts
    from lamina.tuning.kernels import load_model

    module = load_model(search.model, list(search.targets) if search.targets else None, lower=False)
    lanes = module_facts(module).lanes(32)
    for index, share, winograd in conv_shares(module):
        if share < OP_MIN_SHARE:
            return
        for knob, values in OP_CHOICES.items():
            for value in values:
                if (knob == "conv_winograd" and not winograd) or (
                    knob == "conv_channel_block" and value == lanes
                ):
                    continue
                yield {f"{OP_PREFIX}{index}": {knob: value}}


def _plan(search: GraphSearch, knobs: dict[str, Any]) -> str:
    """A digest of the model lowered through `lower-te` with `knobs` (the graph-level knobs
    are all read by then: the same plan is the same code), the knobs' attribute left out."""
    from lamina.tuning.kernels import load_model

    targets = list(search.targets) if search.targets else None
    module = load_model(search.model, targets, knobs or None)
    module.attributes.pop(KNOBS_ATTR, None)
    return hashlib.sha256(str(module).encode()).hexdigest()


def _text(knobs: dict[str, Any]) -> str:
    """`k=v, ...`, a convolution's knobs as `conv2d#N.k=v` (`_parse` reads it back)."""
    flat = []
    for k, v in sorted(knobs.items()):
        flat += (
            [f"{k}.{n}={w}" for n, w in sorted(v.items())] if isinstance(v, dict) else [f"{k}={v}"]
        )
    return ", ".join(flat)


def _try(search, builds, default, args, want, seen, knobs) -> float | None:
    """Build, check and time one candidate; its speed-up (None: same code or invalid)."""
    search.trials += 1
    try:
        exe = builds.build(knobs)
    except Exception as err:  # a plan that does not build: recorded, never applied
        search.invalid.append({"knobs": knobs, "why": f"build failed: {err}".splitlines()[0]})
        return None
    if exe.compiled.object_code in seen:
        return None  # the knob changes nothing in this model
    seen.add(exe.compiled.object_code)
    for w, h in zip(want, _outputs(exe, args), strict=True):
        scale = max(1.0, float(np.max(np.abs(w)))) if w.size else 1.0
        if w.shape != h.shape or not float(np.max(np.abs(w - h), initial=0.0)) <= TOLERANCE * scale:
            search.invalid.append({"knobs": knobs, "why": "wrong numbers"})
            return None
    base, own = _paired(default, exe, args, ROUNDS, search.clock)
    ratio = statistics.median(d / t for d, t in zip(base, own, strict=True))
    search.ratios[_text(knobs)] = ratio
    if search.default_time is None:
        search.default_time = Timing(*summary(base), len(base))
    return ratio


def _finalize(search: GraphSearch, builds: _Builds, default, args) -> None:
    """The best candidate against the default again, longer: kept only if it still wins."""
    ranked = sorted(search.ratios.items(), key=lambda kv: -kv[1])
    if not ranked or ranked[0][1] < MIN_GAIN:
        return
    knobs = _parse(ranked[0][0])
    exe = builds.build(knobs)
    base, own = _paired(default, exe, args, FINAL_ROUNDS, search.clock)
    ratio = statistics.median(d / t for d, t in zip(base, own, strict=True))
    if ratio >= MIN_GAIN:
        search.knobs = knobs
        search.default_time = Timing(*summary(base), len(base))
        search.best_time = Timing(search.default_time.median / ratio, summary(own)[1], len(own))


def _parse(text: str) -> dict[str, Any]:
    knobs: dict[str, Any] = {}
    for item in text.split(", "):
        name, value = item.split("=")
        if name.startswith(OP_PREFIX):
            op, knob = name.split(".")
            knobs.setdefault(op, {})[knob] = int(value)
        else:
            knobs[name] = int(value)
    return knobs


__all__ = [
    "GRAPH_CHOICES",
    "GRAPH_SHARE",
    "OP_CHOICES",
    "conv_shares",
    "GraphSearch",
    "has_convolutions",
    "search_graph",
]
