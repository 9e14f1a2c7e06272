"""Running a batch of requests as few calls of the compiled code as possible.

Ray Serve's `@serve.batch` hands the replica a list of requests; each has
`rows ≥ 1` along the batch dimension (the leading dimension, shared by every
input and output). The requests are stacked along it and cut into calls of
the size the code accepts:

* a static batch `[B, ...]`: calls of exactly B rows, the last one padded
  with zeros (the padding rows' results are dropped);
* a symbolic batch `["N", ...]` with bounds `[lo, hi]`: calls of up to hi
  rows, padded only up to lo.

Each request then gets its own rows of every output back. Requests whose
other dimensions differ (symbolic non-batch dimensions) are run in separate
groups. A model whose inputs and outputs do not share a leading dimension is
not batched: each request has the compiled shapes and runs alone.

`BatchQueue` collects the batches on a replica's event loop: a batch is cut
when the worker thread becomes free, so the requests that arrived while the
previous batch computed all join the next one (Ray Serve's `@serve.batch`
cuts the next batch while the previous one still runs, which left 1.4–2.4
requests per batch with 32 outstanding; docs/serving.md, "Batching").
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass

import numpy as np

from lamina.serve.requests import Bounds, Port

Arrays = dict[str, np.ndarray]


@dataclass(frozen=True)
class BatchPlan:
    """How calls are sized: `rows` per call at most (None: no limit), at least `minimum`
    (a static batch has rows == minimum: every call is padded to it)."""

    rows: int | None
    minimum: int


def plan_batching(inputs: tuple[Port, ...], outputs: tuple[Port, ...], bounds: Bounds):
    """The `BatchPlan` of a model, or None if it has no shared batch dimension."""
    leading = [p.shape[0] if p.shape else None for p in (*inputs, *outputs)]
    dim = leading[0]
    if dim is None or any(d != dim for d in leading):
        return None
    if isinstance(dim, int):
        return BatchPlan(rows=dim, minimum=dim)
    low, high = bounds.get(dim, (1, None))
    return BatchPlan(rows=high, minimum=max(low, 1))


def run_batch(
    run: Callable[[Arrays], Arrays], requests: list[Arrays], plan: BatchPlan | None
) -> list[Arrays | Exception]:
    """The outputs of each request (or the exception its call raised), in order."""
    if plan is None:
        return [_guarded(run, request) for request in requests]
    groups: dict[tuple, list[int]] = {}
    for index, request in enumerate(requests):
        key = tuple(arr.shape[1:] for arr in request.values())
        groups.setdefault(key, []).append(index)
    answers: list[Arrays | Exception] = [{} for _ in requests]
    for members in groups.values():
        try:
            results = _run_group(run, [requests[i] for i in members], plan)
        except Exception as err:  # every request of the group gets the error
            results = [err] * len(members)
        for index, result in zip(members, results, strict=True):
            answers[index] = result
    return answers


def _guarded(run: Callable[[Arrays], Arrays], request: Arrays) -> Arrays | Exception:
    try:
        return run(request)
    except Exception as err:
        return err


def _run_group(
    run: Callable[[Arrays], Arrays], requests: list[Arrays], plan: BatchPlan
) -> list[Arrays]:
    """Stack, call in chunks, split back: one group of requests with equal non-batch shapes."""
    names = list(requests[0])
    counts = [next(iter(r.values())).shape[0] for r in requests]
    stacked = {n: _concat([r[n] for r in requests]) for n in names}
    total = sum(counts)
    step = plan.rows or total
    chunks = [
        _call_padded(run, {n: a[start : start + step] for n, a in stacked.items()}, plan)
        for start in range(0, total, step)
    ]
    outputs = {n: _concat([c[n] for c in chunks]) for n in chunks[0]}
    bounds = np.cumsum([0, *counts])
    return [
        {n: out[bounds[i] : bounds[i + 1]] for n, out in outputs.items()}
        for i in range(len(requests))
    ]


def _call_padded(run: Callable[[Arrays], Arrays], chunk: Arrays, plan: BatchPlan) -> Arrays:
    """One call on `chunk`, padded with zero rows up to the plan's minimum; only the
    chunk's own rows of each output are kept."""
    rows = next(iter(chunk.values())).shape[0]
    if rows < plan.minimum:
        chunk = {n: _pad(a, plan.minimum) for n, a in chunk.items()}
    return {n: out[:rows] for n, out in run(chunk).items()}


def _pad(arr: np.ndarray, rows: int) -> np.ndarray:
    padded = np.zeros((rows, *arr.shape[1:]), arr.dtype)
    padded[: arr.shape[0]] = arr
    return padded


def _concat(arrays: list[np.ndarray]) -> np.ndarray:
    return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)


Answer = Arrays | Exception


class BatchQueue:
    """Requests waiting for one worker thread, run in batches of at most `max_batch_size`.

    `submit` queues a request and waits for its answer. One task per queue
    takes the waiting requests (up to `max_batch_size`) as soon as the worker
    is free, waiting at most `batch_wait_timeout_s` for more when fewer are
    there, and runs `run_batch` on them in `executor`. Under load the queue
    fills while a batch computes, so batches fill without any wait; a lone
    request waits only `batch_wait_timeout_s` (default 0: not at all).
    A request whose caller gave up (a cancelled future) is dropped before it
    joins a batch.
    """

    def __init__(
        self,
        run_batch: Callable[[list[Arrays]], list[Answer]],
        executor: Executor,
        max_batch_size: int,
        batch_wait_timeout_s: float = 0.0,
    ):
        if max_batch_size < 1 or batch_wait_timeout_s < 0:
            raise ValueError(
                f"max_batch_size must be >= 1 and batch_wait_timeout_s >= 0, got "
                f"{max_batch_size} and {batch_wait_timeout_s}"
            )
        self.run_batch = run_batch
        self.executor = executor
        self.max_batch_size = max_batch_size
        self.batch_wait_timeout_s = batch_wait_timeout_s
        self._waiting: list[tuple[Arrays, asyncio.Future[Answer]]] = []
        self._arrived: asyncio.Event | None = None
        self._task: asyncio.Task | None = None

    async def submit(self, request: Arrays) -> Answer:
        """The answer to `request` (its outputs, or the exception its call raised)."""
        loop = asyncio.get_running_loop()
        if self._task is None or self._task.done():  # started on the loop that serves
            self._arrived = asyncio.Event()
            self._task = loop.create_task(self._serve())
        future: asyncio.Future[Answer] = loop.create_future()
        self._waiting.append((request, future))
        assert self._arrived is not None
        self._arrived.set()
        return await future

    async def _serve(self) -> None:
        assert self._arrived is not None
        loop = asyncio.get_running_loop()
        while True:
            await self._arrived.wait()
            await self._fill()
            self._waiting = [(r, f) for r, f in self._waiting if not f.done()]
            batch = self._waiting[: self.max_batch_size]
            del self._waiting[: self.max_batch_size]
            if self._waiting:  # more than a batch waited: the next one starts at once
                self._arrived.set()
            else:
                self._arrived.clear()
            if not batch:
                continue
            try:
                answers = await loop.run_in_executor(
                    self.executor, self.run_batch, [r for r, _ in batch]
                )
            except Exception as err:  # the batcher itself failed: every request gets it
                answers = [err] * len(batch)
            for (_, future), answer in zip(batch, answers, strict=True):
                if not future.done():
                    future.set_result(answer)

    async def _fill(self) -> None:
        """Wait up to `batch_wait_timeout_s` for the batch to fill (not at all if it is)."""
        assert self._arrived is not None
        deadline = asyncio.get_running_loop().time() + self.batch_wait_timeout_s
        while len(self._waiting) < self.max_batch_size:
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                return
            self._arrived.clear()
            try:
                await asyncio.wait_for(self._arrived.wait(), remaining)
            except TimeoutError:
                return
