"""`lamina-tune --ray ADDRESS`: builds as Ray tasks anywhere, measurements on one node at a time.

Building a candidate (xDSL lowering, LLVM O3) takes far longer than timing
it, and builds do not disturb each other's results: they run as Ray tasks
on every CPU of the cluster, submitted ahead (`submit`: the tuner keeps
builds in flight while it measures earlier candidates). Timing does
disturb: a `_NodeMeasurer` actor (one per node, placed there by node
affinity; Ray runs an actor's calls one after another, so a node measures
one thing at a time) owns the node's measuring process (tuning/measure.py's `LocalMeasurer`, with its
timeouts and restarts). A built candidate travels to it as a disk-cache
entry (runtime/cache.py), so the measuring process loads it instead of
building it again. The records are gathered by the tuner, here.

Every node needs this Lamina installed (the same version: the cache keys
hash the source). Nodes with the CPU of the reference node (where the tuner
runs) measure, in turn; nodes with another CPU only build (docs/tuning.md).
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import socket
import tempfile
import uuid
from pathlib import Path
from typing import Any

CONNECT_TIMEOUT = 10.0
"""Seconds to wait for a cluster's address to answer before giving up."""


class RayUnavailable(Exception):
    """Ray is missing or the cluster cannot be reached (a one-line user error)."""


def _build(text: str, cache_dir: str) -> dict[str, Any]:
    """A Ray task: compile one kernel program; its cache entry and the identity of its code.
    Builds go to `cache_dir`, the tuner run's own disk cache on this node (as the local
    measuring process's): nothing is loaded from an earlier run's builds."""
    os.environ["LAMINA_CACHE"] = "1"
    os.environ["LAMINA_CACHE_DIR"] = cache_dir
    # One CPU per task (`num_cpus=1`): the cluster runs builds side by side, so a build's
    # own LLVM thread pool (one thread per usable core) would only oversubscribe the node.
    os.environ["LAMINA_BUILD_THREADS"] = "1"
    try:
        import lamina
        from lamina.driver.compiler import CompileRequest
        from lamina.runtime import cache as disk

        exe = lamina.compile(text, filename="<kernel>")
        key = CompileRequest.of(text, filename="<kernel>").cache_key()
        entry = disk.read(key)
        code = hashlib.sha256(exe.compiled.object_code or text.encode()).hexdigest()
        return {
            "ok": True,
            "code": code,
            "key": key,
            "entry": None if entry is None else disk.encode(entry),
        }
    except Exception as err:  # a candidate that does not build: its answer
        return {"ok": False, "why": f"{type(err).__name__}: {err}".splitlines()[0][:300]}


class _NodeMeasurer:
    """A Ray actor: the measuring process of one node."""

    def __init__(self, threads: int | None):
        from lamina.tuning.measure import LocalMeasurer

        self.local = LocalMeasurer(threads)

    def install(self, key: str, entry: bytes) -> bool:
        from lamina.runtime import cache as disk

        decoded = disk.decode(entry)
        return (
            decoded is not None
            and disk.write(key, decoded, folder=Path(self.local.cache_dir)) is not None
        )

    def check(self, *args: Any) -> dict:
        return self.local.check(*args)

    def check_many(self, *args: Any) -> list:
        return self.local.check_many(*args)

    def measure(self, *args: Any, **options: Any) -> dict:
        return self.local.measure(*args, **options)

    def identity(self) -> tuple[str, tuple[str, ...]]:
        return self.local.identity()

    def close(self) -> None:
        self.local.close()


def _remove(folder: str) -> None:
    """A Ray task: remove a tuner run's disk cache from its node."""
    shutil.rmtree(folder, ignore_errors=True)


def _reachable(address: str) -> None:
    """A one-line error, within `CONNECT_TIMEOUT`, when nothing listens at `host:port`."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise RayUnavailable(f"--ray: '{address}' is not 'auto' or HOST:PORT")
    try:
        socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT).close()
    except OSError as err:
        raise RayUnavailable(
            f"--ray: cannot reach a Ray cluster at {address} ({err.strerror or err})"
        ) from None


def connect(address: str) -> Any:
    """Ray, connected to `address` (or the cluster this process is already connected to)."""
    try:
        import ray
    except ImportError:
        raise RayUnavailable("--ray needs Ray: pip install 'lamina[ray]'") from None
    if ray.is_initialized():
        return ray
    if address != "auto":
        _reachable(address)
    try:
        ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR)
    except (ConnectionError, RuntimeError, TimeoutError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise RayUnavailable(f"--ray: cannot connect to Ray at {address}: {first}") from None
    return ray


class RayMeasurer:
    """`LocalMeasurer`'s interface on a Ray cluster (see the module docstring).

    Builds are Ray tasks (one CPU each) submitted ahead of the measurements
    (`submit`), so the cluster's CPUs build the next candidates while a node
    measures the last ones. Each measuring node has one `_NodeMeasurer`;
    the nodes that measure are those with the CPU of the reference node (the
    node this process runs on, else the first), so every measurement holds
    for the records' CPU. Each built candidate is installed on every measuring
    node; independent measurements (`measure_many`) go to the nodes in turn,
    one at a time per node.
    """

    def __init__(self, address: str, threads: int | None = None, build_timeout: float = 300.0):
        self.ray = ray = connect(address)
        self.threads = threads
        self.build_timeout = build_timeout
        self._build_task = ray.remote(num_cpus=1, max_retries=0)(_build)
        self.cache_dir = os.path.join(tempfile.gettempdir(), f"lamina-tune-{uuid.uuid4().hex}")
        """This run's disk cache, on every node that builds (removed by `close`)."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        nodes = [n for n in ray.nodes() if n.get("Alive")]
        self._nodes = [n["NodeID"] for n in nodes]
        if not nodes:
            raise RayUnavailable(f"--ray: the cluster at {address} has no live node")
        here = ray.get_runtime_context().get_node_id()
        nodes.sort(key=lambda n: n["NodeID"] != here)  # the reference node first
        actor = ray.remote(num_cpus=0, max_restarts=0)(_NodeMeasurer)
        actors = [
            actor.options(
                scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)
            ).remote(threads)
            for n in nodes
        ]
        identities = ray.get([a.identity.remote() for a in actors])
        self.actors = [a for a, i in zip(actors, identities, strict=True) if i == identities[0]]
        """The measuring nodes' actors, the reference node's first."""
        for a, i in zip(actors, identities, strict=True):
            if i != identities[0]:  # another CPU: it builds, but its timings would not hold
                ray.kill(a)
        self._identity: tuple[str, tuple[str, ...]] = (identities[0][0], tuple(identities[0][1]))
        self._turn = 0
        self.parallel_builds = max(1, int(ray.cluster_resources().get("CPU", 1)))

    def _next(self) -> Any:
        """The measuring actor whose turn it is."""
        self._turn = (self._turn + 1) % len(self.actors)
        return self.actors[self._turn]

    def submit(self, texts: list[str]) -> list[Any]:
        return [self._build_task.remote(t, self.cache_dir) for t in texts]

    def collect(self, pending: list[Any]) -> list[dict]:
        ray = self.ray
        answers: list[dict] = []
        for ref in pending:
            try:
                answers.append(ray.get(ref, timeout=self.build_timeout))
            except Exception as err:  # the task's worker died, or it timed out
                ray.cancel(ref, force=True)
                answers.append({"ok": False, "why": f"build {type(err).__name__}"})
        installs = [
            actor.install.remote(a["key"], a["entry"])
            for a in answers
            if a.get("ok") and a.get("entry") is not None
            for actor in self.actors
        ]
        ray.get(installs)
        return answers

    def cancel(self, pending: list[Any]) -> None:
        """Builds no longer wanted: queued ones are dropped, running ones finish unread."""
        for ref in pending:
            self.ray.cancel(ref, force=False)

    def build_many(self, texts: list[str]) -> list[dict]:
        return self.collect(self.submit(texts))

    def check(self, *args: Any) -> dict:
        return self.ray.get(self.actors[0].check.remote(*args))

    def check_many(self, kernel: str, reference: str, texts: list[str], timeout: float) -> list:
        return self.ray.get(self._next().check_many.remote(kernel, reference, texts, timeout))

    def measure(self, *args: Any, **options: Any) -> dict:
        return self.ray.get(self.actors[0].measure.remote(*args, **options))

    def measure_many(self, requests: list[tuple[str, list[str], int, float]]) -> list[dict]:
        return self.ray.get([self._next().measure.remote(*r) for r in requests])

    def identity(self) -> tuple[str, tuple[str, ...]]:
        return self._identity

    def close(self) -> None:
        ray = self.ray
        for actor in self.actors:
            try:
                ray.get(actor.close.remote(), timeout=30)
            except Exception:  # an actor that is gone already has nothing to close
                pass
            ray.kill(actor)
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        remove = ray.remote(num_cpus=0)(_remove)
        done = [
            remove.options(
                scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=True)
            ).remote(self.cache_dir)
            for node in self._nodes
        ]
        ray.wait(done, num_returns=len(done), timeout=30)


__all__ = ["CONNECT_TIMEOUT", "RayMeasurer", "RayUnavailable", "connect"]
