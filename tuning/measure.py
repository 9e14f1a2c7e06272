"""The measurer: candidates built, checked and timed in a worker process, under timeouts.

`LocalMeasurer` keeps one worker (tuning/worker.py) and talks to it; when
the worker dies (a candidate crashed it) or does not answer in time (a
candidate hangs), it is killed and started again, and the request's answer
says why, so the tuner records that candidate invalid. The worker builds
into its own disk cache (`LAMINA_CACHE_DIR`, kept for the tuner's run), so
a restarted worker loads what was built instead of building it again.
`RayMeasurer` (tuning/ray_cluster.py) has the same methods; there `submit`
starts builds that run while the tuner measures (here a build runs when
its answers are collected, in the measuring process), and `measure_many`
spreads independent measurements over the nodes.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import tempfile

from lamina.tuning.worker import receive, send

TOLERANCE = 1e-4
"""A candidate's results must be within this of the default's (relative to their magnitude)."""


DROP_SLOWER = 2.0
"""A candidate this many times slower than the default in a measurement's first round is
not timed in the others (early stopping: its one sample already rules it out)."""


def call_clock(threads: int | None) -> str:
    """The clock a measurement times calls by: `cpu` (the calling thread's CPU
    time) when the code runs on one thread, which is then the calling one, so
    that the time a busy machine's other processes hold the core is not
    counted; else `wall` (docs/tuning.md, "On a busy machine")."""
    return "cpu" if threads == 1 else "wall"


class WorkerDied(Exception):
    """The worker crashed or timed out on a request."""


class Worker:
    """One measuring process and its pipes."""

    def __init__(self, cache_dir: str, threads: int | None = None):
        env = dict(os.environ, LAMINA_CACHE_DIR=cache_dir, LAMINA_CACHE="1")
        if threads:
            env["LAMINA_NUM_THREADS"] = str(threads)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "lamina.tuning.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )

    def ask(self, request: dict, timeout: float) -> dict:
        process = self.process
        assert process.stdin is not None and process.stdout is not None
        try:
            send(process.stdin, request)
        except (BrokenPipeError, OSError):
            raise WorkerDied("crashed") from None
        ready, _, _ = select.select([process.stdout], [], [], timeout)
        if not ready:
            raise WorkerDied(f"timed out after {timeout:.0f} s")
        try:
            return receive(process.stdout)
        except (EOFError, OSError, ValueError):
            code = process.wait()
            raise WorkerDied(f"crashed (exit status {code})") from None

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                try:
                    pipe.close()
                except OSError:  # the pipe of a killed process: nothing left to flush
                    pass


class LocalMeasurer:
    """Builds, checks and measures on this machine, one request at a time."""

    def __init__(self, threads: int | None = None, build_timeout: float = 120.0):
        self._dir = tempfile.TemporaryDirectory(prefix="lamina-tune-")
        self.threads = threads
        self.build_timeout = build_timeout
        self._worker: Worker | None = None

    @property
    def cache_dir(self) -> str:
        return self._dir.name

    def _ask(self, request: dict, timeout: float) -> dict:
        if self._worker is None:
            self._worker = Worker(self.cache_dir, self.threads)
        try:
            return self._worker.ask(request, timeout)
        except WorkerDied as err:
            self._worker.close()
            self._worker = None
            return {"ok": False, "why": str(err)}

    parallel_builds = 1
    """Builds that run at once (one: the measuring process builds)."""

    def submit(self, texts: list[str]) -> list[str]:
        """Builds to be collected later (`collect`); here they run when collected."""
        return list(texts)

    def collect(self, pending: list[str]) -> list[dict]:
        """Per program of `submit`: {"ok", "code" (identity of the code), "why"}."""
        return [self._ask({"op": "build", "text": t}, self.build_timeout) for t in pending]

    def cancel(self, pending: list[str]) -> None:
        """Builds submitted but no longer wanted (nothing ran yet)."""

    def build_many(self, texts: list[str]) -> list[dict]:
        """Build each program; per program {"ok", "code" (identity of the code), "why"}."""
        return self.collect(self.submit(texts))

    def check(self, kernel: str, reference: str, text: str, timeout: float) -> dict:
        request = {
            "op": "check",
            "kernel": kernel,
            "reference": reference,
            "text": text,
            "tolerance": TOLERANCE,
        }
        return self._ask(request, timeout)

    def measure(
        self,
        kernel: str,
        texts: list[str],
        rounds: int,
        timeout: float,
        drop_slower: float | None = DROP_SLOWER,
    ) -> dict:
        """Time `texts` interleaved; `drop_slower`: see `DROP_SLOWER` (None: time them all)."""
        request = {
            "op": "measure",
            "kernel": kernel,
            "texts": texts,
            "rounds": rounds,
            "sample_seconds": 0.002,
            "drop_slower": drop_slower,
            "clock": call_clock(self.threads),
        }
        return self._ask(request, timeout)

    def model(
        self,
        model: str,
        targets: list[str] | None,
        base_records: str | None,
        records: str | None,
        rounds: int,
        timeout: float,
    ) -> dict:
        """The whole model built with `records` (None: the baseline alone), checked against
        its build with `base_records` and timed in context with it (worker.py `model`)."""
        digest = ""
        if base_records is not None:
            with open(base_records, "rb") as f:
                digest = f.read().hex()
        request = {
            "op": "model",
            "model": model,
            "targets": targets,
            "base_records": base_records,
            "base_digest": digest,
            "records": records,
            "rounds": rounds,
            "clock": call_clock(self.threads),
            "tolerance": TOLERANCE,
        }
        return self._ask(request, timeout)

    def check_many(self, kernel: str, reference: str, texts: list[str], timeout: float) -> list:
        """`check` of each program in `texts` against `reference`."""
        return [self.check(kernel, reference, t, timeout) for t in texts]

    def measure_many(self, requests: list[tuple[str, list[str], int, float]]) -> list[dict]:
        """`measure` of each request (kernel, texts, rounds, timeout): one after another."""
        return [self.measure(*request) for request in requests]

    def identity(self) -> tuple[str, tuple[str, ...]]:
        from lamina.target.tuning_records import host_identity

        return host_identity()

    def close(self) -> None:
        if self._worker is not None:
            self._worker.close()
            self._worker = None
        self._dir.cleanup()


def summary(samples: list[float]) -> tuple[float, float]:
    """Median and relative spread (interquartile range / median) of timing samples."""
    import numpy as np

    median = float(np.median(samples))
    q1, q3 = np.percentile(samples, [25, 75])
    return median, float((q3 - q1) / median) if median > 0 else 0.0


__all__ = [
    "DROP_SLOWER",
    "TOLERANCE",
    "LocalMeasurer",
    "Worker",
    "WorkerDied",
    "call_clock",
    "summary",
]
