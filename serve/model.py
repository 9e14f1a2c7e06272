"""A loaded artifact as a served model: its ports, its batching, one call by name.

`ServedModel` adapts what `lamina.runtime.load` returns (`get_inputs()`,
`get_outputs()`, `run(dict)`) to what a replica needs: the input and output
`Port`s, the `BatchPlan`, requests checked before they are batched, and a
call that always answers `{output name: array}`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from lamina.serve.batching import Arrays, plan_batching, run_batch
from lamina.serve.requests import Port, check_request, port_of


def load_artifact(path: str) -> Any:
    """The compiled model in `path`, loaded in this process (a replica loads its own:
    compiled code and its OpenMP threads do not survive a fork)."""
    from lamina.serve import _devshim

    return _devshim.load(path)


def threads_for(num_cpus: float) -> int:
    """Lamina's threads for a replica reserving `num_cpus` CPUs: as many, at least one,
    so that replicas sharing a machine do not oversubscribe its cores."""
    return max(1, int(num_cpus))


class ServedModel:
    """The artifact in `path` with its signature, batching and a warm-up call."""

    def __init__(self, artifact: Any):
        self.artifact = artifact
        self.inputs = tuple(port_of(e, f"in{i}") for i, e in enumerate(artifact.get_inputs()))
        self.outputs = tuple(port_of(e, f"out{i}") for i, e in enumerate(artifact.get_outputs()))
        self.bounds: dict[str, tuple[int, int]] = dict(_bounds_of(artifact))
        self.plan = plan_batching(self.inputs, self.outputs, self.bounds)

    @classmethod
    def load(cls, path: str, threads: int | None = None) -> ServedModel:
        """Load `path` with `threads` threads for parallel loops (before any code loads:
        OpenMP reads its thread count once)."""
        if threads is not None:
            os.environ["LAMINA_NUM_THREADS"] = str(threads)
        return cls(load_artifact(path))

    def check(self, arrays: Mapping[str, object]) -> Arrays:
        """One request's arrays checked (`BadRequest` if they do not fit)."""
        return check_request(arrays, self.inputs, self.bounds, self.plan is not None)

    def run(self, arrays: Arrays) -> Arrays:
        """One call of the code on exactly fitting arrays: `{output name: array}`."""
        results = self.artifact.run(arrays)
        if isinstance(results, Mapping):
            return dict(results)
        if isinstance(results, np.ndarray):
            results = (results,)
        return {port.name: arr for port, arr in zip(self.outputs, results, strict=True)}

    def run_batch(self, requests: list[Arrays]) -> list[Arrays | Exception]:
        """Each request's outputs (or the error of its call), batched per the plan."""
        return run_batch(self.run, requests, self.plan)

    def warm_up(self) -> None:
        """One call on zeros: the first call's one-time costs (page faults on the
        weights, OpenMP's thread start) are not paid by a user's request."""
        rows = self.plan.minimum if self.plan is not None else None
        (result,) = self.run_batch([{p.name: _zeros(p, self.bounds, rows) for p in self.inputs}])
        if isinstance(result, Exception):
            raise result


def _bounds_of(artifact: Any) -> Mapping[str, tuple[int, int]]:
    """The artifact's symbolic dimensions and their bounds (none for static shapes)."""
    bounds = getattr(artifact, "bounds", None)
    if bounds is None:
        bounds = getattr(getattr(artifact, "signature", None), "bounds", None)
    return {name: (int(lo), int(hi)) for name, (lo, hi) in (bounds or {}).items()}


def _zeros(port: Port, bounds: Mapping[str, tuple[int, int]], rows: int | None) -> np.ndarray:
    """Zeros of `port`'s shape: `rows` rows when batched, each symbol at its lower bound."""
    shape = [bounds.get(d, (1, 1))[0] if isinstance(d, str) else d for d in port.shape]
    if rows is not None and shape:
        shape[0] = rows
    return np.zeros(shape, port.dtype)
