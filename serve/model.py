"""A loaded artifact as a served model: its ports, its batching, one call by name.

`ServedModel` adapts the `Executable` that `lamina.runtime.load` returns
(`get_inputs()`, `get_outputs()`, `run(dict)`) to what a replica needs: the
input and output `Port`s, the `BatchPlan`, requests checked before they are
batched, and calls of whole batches.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from lamina.runtime.artifact import load
from lamina.runtime.executable import Executable
from lamina.serve.batching import Arrays, plan_batching, run_batch
from lamina.serve.requests import Port, check_request, port_of


def threads_for(num_cpus: float) -> int:
    """Lamina's threads for a replica reserving `num_cpus` CPUs: as many, at least one,
    so that replicas sharing a machine do not oversubscribe its cores."""
    return max(1, int(num_cpus))


def set_threads(count: int) -> None:
    """Parallel loops of artifacts loaded from now on run on `count` threads: the
    runtime exports `LAMINA_NUM_THREADS` to libgomp (with a passive wait policy:
    idle workers sleep rather than spin on cores other replicas use) before it
    loads an artifact's library, and libgomp reads it once."""
    os.environ["LAMINA_NUM_THREADS"] = str(count)


def _loaded_openmp() -> ctypes.CDLL | None:
    """libgomp if this process has loaded it (never loads it)."""
    name = ctypes.util.find_library("gomp")
    try:
        return ctypes.CDLL(name or "libgomp.so.1", mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
    except OSError:
        return None


def openmp_threads() -> int | None:
    """Threads a parallel loop started from the calling thread uses (None: no OpenMP
    runtime loaded)."""
    gomp = _loaded_openmp()
    return None if gomp is None else int(gomp.omp_get_max_threads())


def pin_threads(count: int | None) -> int | None:
    """Parallel loops started from the calling thread run on `count` threads (None: as
    the process was set up); returns the count they will use.

    OpenMP's thread count is per starting thread: a thread inherits the value
    libgomp read from the environment when it was loaded. If something loaded
    libgomp before the replica set `LAMINA_NUM_THREADS`, only this call puts
    the worker thread that runs the model at the replica's count.
    """
    gomp = _loaded_openmp()
    if gomp is None:
        return None
    if count is not None:
        gomp.omp_set_num_threads(ctypes.c_int(count))
    return int(gomp.omp_get_max_threads())


class ServedModel:
    """A loaded artifact with its inputs and outputs, batching plan and warm-up call."""

    def __init__(self, artifact: Executable, threads: int | None = None):
        self.artifact = artifact
        self.threads: int | None = None
        """Threads of the worker's parallel loops, as OpenMP reports them on the worker
        (None: the code has no parallel loops' runtime)."""
        self.worker = ThreadPoolExecutor(
            max_workers=1,
            thread_name_prefix="lamina-run",
            initializer=self._pin,
            initargs=(threads,),
        )
        """The one thread that runs the model's calls (warm-up included): its OpenMP
        thread team is started once, by the warm-up, and reused."""
        self.inputs = tuple(map(port_of, artifact.get_inputs()))
        self.outputs = tuple(map(port_of, artifact.get_outputs()))
        self.bounds: dict[str, tuple[int, int]] = dict(_bounds_of(artifact))
        self.plan = plan_batching(self.inputs, self.outputs, self.bounds)
        self.stats = {"batches": 0, "requests": 0, "calls": 0, "rows": 0, "seconds": 0.0}
        """Since start: batches run, requests in them, calls of the code, rows computed
        (padding included), seconds spent in batches (`GET` reports them)."""

    @classmethod
    def load(cls, path: str, threads: int | None = None) -> ServedModel:
        """Load the artifact directory `path` in this process (a replica loads its own:
        compiled code and its OpenMP threads do not survive a fork), with `threads`
        threads for parallel loops (set before any code loads: OpenMP reads its
        thread count once)."""
        if threads is not None:
            set_threads(threads)
        return cls(load(path), threads)

    def _pin(self, threads: int | None) -> None:
        self.threads = pin_threads(threads)

    def check(self, arrays: Mapping[str, object]) -> Arrays:
        """One request's arrays checked (`BadRequest` if they do not fit)."""
        return check_request(arrays, self.inputs, self.bounds, self.plan is not None)

    def run(self, arrays: Arrays) -> Arrays:
        """One call of the code on exactly fitting arrays: `{output name: array}`."""
        results = self.artifact.run(arrays)
        assert isinstance(results, dict)  # a call by name answers by name
        first = next(iter(arrays.values()), None)
        self.stats["calls"] += 1
        self.stats["rows"] += first.shape[0] if first is not None and first.ndim else 1
        return results

    def run_batch(self, requests: list[Arrays]) -> list[Arrays | Exception]:
        """Each request's outputs (or the error of its call), batched per the plan."""
        start = time.perf_counter()
        answers = run_batch(self.run, requests, self.plan)
        self.stats["batches"] += 1
        self.stats["requests"] += len(requests)
        self.stats["seconds"] += time.perf_counter() - start
        return answers

    def warm_up(self) -> None:
        """One call on zeros, on the worker thread: the first call's one-time costs (page
        faults on the weights, the worker's OpenMP thread team) are not paid by a user's
        request."""
        rows = self.plan.minimum if self.plan is not None else None
        zeros = {p.name: _zeros(p, self.bounds, rows) for p in self.inputs}
        (result,) = self.worker.submit(self.run_batch, [zeros]).result()
        if isinstance(result, Exception):
            raise result


def _bounds_of(artifact: Executable) -> Mapping[str, tuple[int, int]]:
    """The symbolic dimensions of the served entry function and their bounds
    (`Signature.bounds`; none for static shapes)."""
    signature = artifact.signatures[artifact.default_entry()]
    bounds = getattr(signature, "bounds", None) or {}
    return {name: (int(low), int(high)) for name, (low, high) in bounds.items()}


def _zeros(port: Port, bounds: Mapping[str, tuple[int, int]], rows: int | None) -> np.ndarray:
    """Zeros of `port`'s shape: `rows` rows when batched, each symbol at its lower bound."""
    shape = [bounds.get(d, (1, 1))[0] if isinstance(d, str) else d for d in port.shape]
    if rows is not None and shape:
        shape[0] = rows
    return np.zeros(shape, port.dtype)
