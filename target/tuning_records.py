"""Tuning records: the knob values measured best for a kernel on one CPU, as JSON lines.

`lamina-tune` (tuning/) measures schedule candidates and writes one line per
(kernel key, CPU, Lamina version)::

    {"kernel": "<sha256>", "cpu": {"name": "znver4", "features": ["avx2", ...]},
     "lamina": "0.1.0", "knobs": {"block_rows": 4}, "name": "te_matmul_64x512xf32_loop",
     "shape": "64x784xf32, 784x512xf32 -> 64x512xf32",
     "time": {"median": 1.2e-4, "spread": 0.03, "count": 7},
     "default": {"median": 1.5e-4, "spread": 0.02, "count": 7},
     "trials": 24, "invalid": [{"knobs": {...}, "why": "wrong numbers"}]}

A record of `"scope": "model"` holds the graph-level knobs of a whole model
instead (`conv_channel_block`, ...), under the model's key
(`passes/apply_model_records.py`), applied before `plan-layouts`.
The kernel key (`passes/apply_records.py`) hashes the kernel as `lower-te`
leaves it and the target facts, never the knobs, so a record names the
kernel whatever knobs built it. `knobs` holds only the knobs that differ
from the defaults; `apply-records` puts them on the kernel's function, where
`schedule` and `lower-to-llvm` read them for that kernel only (docs/tuning.md).

Loading is strict: a line that is not a JSON object of this shape, or that
names an unknown knob or a knob that acts before kernels exist, is an error
naming the file and line (`ignore_errors` skips such lines). Records of
another CPU or Lamina version are kept out of `applicable` and counted, so
`-v` can say why they were ignored. This module imports no xDSL: the disk
cache's key (driver/compiler.py) digests the applicable records on a hit.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from lamina.target.schedule_knobs import KNOB_NAMES, check_knob

GRAPH_LEVEL_KNOBS: frozenset[str] = frozenset(
    {
        "set_aliasing_bytes",
        "conv_channel_block",
        "conv_grouped_min_width",
        "conv_nchw_pointwise_min_pixels",
        "conv_winograd",
        "depthwise_in_place_percent",
        "conv_gate_weights_percent",
        "global_pool_partial_sums",
        "parallel_column_blocks_per_core",
        "winograd_min_output",
        "winograd_direct_below",
        "winograd_max_weight_bytes",
        "winograd_chunk_bytes",
    }
)
"""Knobs decided before a kernel exists (`plan-layouts`, `legalize`, `lower-te`): a
model record (`scope: "model"`) or a target option sets them for the whole compile; a
per-kernel record cannot."""

OP_KNOBS: tuple[str, ...] = ("conv_channel_block", "conv_winograd")
"""Graph-level knobs a model record may set for one convolution (`"conv2d#N": {...}` in
its knobs, N counting the model's `graph.conv2d` ops in order as imported): read by
`plan-layouts` on the convolution itself (passes/apply_model_records.py)."""

OP_PREFIX = "conv2d#"
"""How a model record's knobs name one convolution: `conv2d#` and its index."""

MODEL_SCOPE = "model"
"""A record's `scope` for the graph-level knobs of a whole model (its key: `model_key`)."""

KERNEL_KNOBS: tuple[str, ...] = tuple(sorted(KNOB_NAMES - GRAPH_LEVEL_KNOBS))
"""The knobs a record may set for one kernel (read by `schedule` and `lower-to-llvm`)."""


class RecordsError(ValueError):
    """A records file that cannot be used: `path:line: why`."""


@dataclass(frozen=True)
class Timing:
    """Seconds per call: the median, the relative spread (interquartile range / median), runs."""

    median: float
    spread: float
    count: int

    def to_json(self) -> dict[str, Any]:
        return {"median": self.median, "spread": round(self.spread, 4), "count": self.count}

    @staticmethod
    def from_json(data: object) -> Timing:
        if not isinstance(data, dict):
            raise ValueError("a timing must be an object {median, spread, count}")
        median, spread, count = data.get("median"), data.get("spread", 0.0), data.get("count", 1)
        if not isinstance(median, int | float) or median <= 0:
            raise ValueError("a timing's 'median' must be a positive number of seconds")
        if not isinstance(spread, int | float) or not isinstance(count, int):
            raise ValueError("a timing's 'spread' must be a number and its 'count' an integer")
        return Timing(float(median), float(spread), count)


@dataclass(frozen=True)
class Record:
    """The best knobs measured for one kernel on one CPU by one Lamina version."""

    kernel: str
    cpu: str
    features: tuple[str, ...]
    lamina: str
    knobs: dict[str, Any]
    time: Timing
    default: Timing | None = None
    name: str = ""
    shape: str = ""
    trials: int = 0
    invalid: tuple[dict[str, Any], ...] = ()
    scope: str = "kernel"
    """"kernel": `kernel` is a kernel's key, `knobs` per-kernel knobs; `MODEL_SCOPE`:
    `kernel` is a model's key (passes/apply_model_records.py), `knobs` graph-level ones."""

    def to_json(self) -> str:
        data: dict[str, Any] = {
            "kernel": self.kernel,
            **({"scope": self.scope} if self.scope != "kernel" else {}),
            "cpu": {"name": self.cpu, "features": list(self.features)},
            "lamina": self.lamina,
            "knobs": knobs_json(self.knobs),
            "name": self.name,
            "shape": self.shape,
            "time": self.time.to_json(),
        }
        if self.default is not None:
            data["default"] = self.default.to_json()
        data["trials"] = self.trials
        if self.invalid:
            data["invalid"] = list(self.invalid)
        return json.dumps(data, sort_keys=False)

    @property
    def identity(self) -> tuple[str, str, tuple[str, ...], str]:
        return (self.kernel, self.cpu, self.features, self.lamina)


def knobs_json(knobs: Mapping[str, Any]) -> dict[str, Any]:
    """Knob values as JSON (tuples as lists), sorted by name."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in sorted(knobs.items())}


def check_record_knobs(knobs: object, model: bool = False) -> dict[str, Any]:
    """`knobs` as knob values (lists as tuples); ValueError naming the first bad one.
    `model`: the knobs of a model record (graph-level ones only), else of a kernel's."""
    if not isinstance(knobs, dict):
        raise ValueError("'knobs' must be an object of knob names to values")
    checked: dict[str, Any] = {}
    for name, value in knobs.items():
        if model and name.startswith(OP_PREFIX):
            checked[name] = _op_knobs(name, value)
            continue
        if name not in KNOB_NAMES:
            raise ValueError(f"unknown knob '{name}' (knobs: {', '.join(KERNEL_KNOBS)})")
        if name in GRAPH_LEVEL_KNOBS and not model:
            raise ValueError(
                f"knob '{name}' is decided before kernels exist; set it for the whole "
                f"compile with a target option (--target 'cpu{{{name}=...}}') or in a "
                f'record of scope "{MODEL_SCOPE}"'
            )
        if model and name not in GRAPH_LEVEL_KNOBS:
            raise ValueError(
                f"knob '{name}' is per kernel; a record of scope \"{MODEL_SCOPE}\" holds "
                f"only {', '.join(sorted(GRAPH_LEVEL_KNOBS))}"
            )
        if isinstance(value, list):
            value = tuple(value)
        why = check_knob(name, value)
        if why is not None:
            raise ValueError(f"knob '{name}' {why}, not {value!r}")
        checked[name] = value
    return checked


def _op_knobs(name: str, knobs: object) -> dict[str, Any]:
    """One convolution's knobs in a model record (`"conv2d#N": {knob: value}`)."""
    index = name.removeprefix(OP_PREFIX)
    if not index.isdigit():
        raise ValueError(f"'{name}': a convolution is named {OP_PREFIX}N, N its index")
    if not isinstance(knobs, dict) or not knobs:
        raise ValueError(f"'{name}' must be an object of knob names to values")
    for knob, value in knobs.items():
        if knob not in OP_KNOBS:
            raise ValueError(
                f"'{name}': knob '{knob}' is not set per convolution ({', '.join(OP_KNOBS)})"
            )
        why = check_knob(knob, value)
        if why is not None:
            raise ValueError(f"'{name}': knob '{knob}' {why}, not {value!r}")
    return dict(sorted(knobs.items()))


def split_op_knobs(knobs: Mapping[str, Any]) -> tuple[dict[str, Any], dict[int, dict[str, Any]]]:
    """A model record's knobs as (the module's, {convolution index: its own})."""
    module = {k: v for k, v in knobs.items() if not k.startswith(OP_PREFIX)}
    ops = {int(k.removeprefix(OP_PREFIX)): v for k, v in knobs.items() if k.startswith(OP_PREFIX)}
    return module, ops


def parse_record(line: str) -> Record:
    """One line of a records file; ValueError says what is wrong with it."""
    try:
        data = json.loads(line)
    except json.JSONDecodeError as err:
        raise ValueError(f"not JSON ({err.msg} at column {err.colno})") from None
    if not isinstance(data, dict):
        raise ValueError("a record must be a JSON object")
    kernel, cpu, lamina = data.get("kernel"), data.get("cpu"), data.get("lamina")
    if not isinstance(kernel, str) or len(kernel) != 64:
        raise ValueError("'kernel' must be a 64-digit kernel key")
    if not isinstance(cpu, dict) or not isinstance(cpu.get("name"), str):
        raise ValueError("'cpu' must be an object {name, features}")
    features = cpu.get("features", [])
    if not isinstance(features, list) or not all(isinstance(f, str) for f in features):
        raise ValueError("'cpu.features' must be a list of feature names")
    if not isinstance(lamina, str):
        raise ValueError("'lamina' must be the Lamina version that measured the record")
    invalid = data.get("invalid", [])
    if not isinstance(invalid, list):
        raise ValueError("'invalid' must be a list")
    scope = data.get("scope", "kernel")
    if scope not in ("kernel", MODEL_SCOPE):
        raise ValueError(f'\'scope\' must be "kernel" or "{MODEL_SCOPE}"')
    return Record(
        kernel,
        cpu["name"],
        tuple(sorted(features)),
        lamina,
        check_record_knobs(data.get("knobs", {}), model=scope == MODEL_SCOPE),
        Timing.from_json(data.get("time")),
        Timing.from_json(data["default"]) if "default" in data else None,
        str(data.get("name", "")),
        str(data.get("shape", "")),
        int(data.get("trials", 0)),
        tuple(invalid),
        scope,
    )


@dataclass
class RecordSet:
    """The records of a file: those for this CPU and version by kernel key, and the rest counted."""

    path: str
    records: list[Record] = field(default_factory=list)
    applicable: dict[str, Record] = field(default_factory=dict)
    other_cpu: int = 0
    other_version: int = 0
    skipped: list[str] = field(default_factory=list)
    """`path:line: why` of each bad line skipped (`ignore_errors`)."""

    def knobs_for(self, kernel: str) -> dict[str, Any] | None:
        record = self.applicable.get(kernel)
        return None if record is None else record.knobs

    def digest(self) -> str:
        """SHA-256 of the applicable records' kernels and knobs (the disk-cache key's part:
        timings or other CPUs' records do not change the code)."""
        lines = sorted(
            f"{k} {json.dumps(knobs_json(r.knobs), sort_keys=True)}"
            for k, r in self.applicable.items()
        )
        return hashlib.sha256("\n".join(lines).encode()).hexdigest()

    def notes(self) -> list[str]:
        """What `-v` says about the records that do not apply here."""
        notes = [f"records: {self.path}: {len(self.applicable)} apply to this CPU"]
        if self.other_cpu:
            notes.append(
                f"records: {self.other_cpu} record(s) for another CPU ignored "
                f"(this one: {host_identity()[0]})"
            )
        if self.other_version:
            notes.append(
                f"records: {self.other_version} record(s) of another Lamina version ignored "
                f"(this one: {lamina_version()})"
            )
        notes += [f"records: skipped {why}" for why in self.skipped]
        return notes


def lamina_version() -> str:
    from lamina import __version__

    return __version__


_HOST: tuple[str, tuple[str, ...]] | None = None


def host_identity() -> tuple[str, tuple[str, ...]]:
    """The host's LLVM CPU name and its instruction-set features (sorted), as records name them."""
    global _HOST
    if _HOST is None:
        import llvmlite.binding as llvm

        flat = llvm.get_host_cpu_features().flatten().split(",")
        features = sorted(f[1:] for f in flat if f.startswith("+"))
        _HOST = (llvm.get_host_cpu_name(), tuple(features))
    return _HOST


def load_records(path: str | os.PathLike[str], *, ignore_errors: bool = False) -> RecordSet:
    """The records of `path` (JSON lines; blank lines allowed); RecordsError names the
    first bad line unless `ignore_errors` (then bad lines are listed in `skipped`)."""
    path = os.fspath(path)
    with open(path, encoding="utf-8") as f:  # a missing file: OSError, a user error
        lines = f.read().splitlines()
    found = RecordSet(path)
    cpu, features = host_identity()
    version = lamina_version()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = parse_record(line)
        except ValueError as err:
            if not ignore_errors:
                raise RecordsError(f"{path}:{number}: {err}") from None
            found.skipped.append(f"{path}:{number}: {err}")
            continue
        found.records.append(record)
        if record.cpu != cpu or record.features != features:
            found.other_cpu += 1
        elif record.lamina != version:
            found.other_version += 1
        else:
            best = found.applicable.get(record.kernel)
            if best is None or record.time.median < best.time.median:
                found.applicable[record.kernel] = record
    return found


def write_records(path: str | os.PathLike[str], records: Iterable[Record]) -> None:
    """Write `records` (one line each, sorted by kernel) atomically: a reader never sees half."""
    path = os.fspath(path)
    text = "".join(r.to_json() + "\n" for r in sorted(records, key=lambda r: r.identity))
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


__all__ = [
    "GRAPH_LEVEL_KNOBS",
    "KERNEL_KNOBS",
    "MODEL_SCOPE",
    "OP_KNOBS",
    "OP_PREFIX",
    "Record",
    "RecordSet",
    "RecordsError",
    "Timing",
    "check_record_knobs",
    "host_identity",
    "knobs_json",
    "lamina_version",
    "load_records",
    "split_op_knobs",
    "parse_record",
    "write_records",
]
