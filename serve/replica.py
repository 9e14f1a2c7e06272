"""The Ray Serve deployment of a compiled model (docs/serving.md).

`deployment(path, ...)` returns a bound Serve application: `serve.run(app)`
starts `num_replicas` replicas of `LaminaModel`, each a Ray actor process
that loads the artifact itself (compiled code and OpenMP threads do not
survive a fork), runs parallel loops on as many threads as it reserved CPUs,
and answers

* HTTP: `POST {"inputs": {"x": [[...]]}}` → `{"outputs": {"y": [[...]]}}`,
  or, with `Content-Type: application/x-npz`, an `np.savez` archive of the
  inputs → one of the outputs (no JSON: dtypes and shapes travel with the
  arrays); 400 with `{"error": ...}` for a bad request; `GET` describes the
  model and the answering replica (`stats`);
* a `DeploymentHandle`: `handle.remote({"x": array})` → `{"y": array}`,
  `BadRequest` for a bad request.

Requests are checked one by one, then batched by a `BatchQueue` and run on
one worker thread (the event loop keeps accepting requests meanwhile, and
the next batch is cut when the worker is free, so it holds every request
that arrived while this one computed).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ray import serve
from ray.serve.deployment import Application
from starlette.requests import Request
from starlette.responses import Response

from lamina.runtime.artifact import read_manifest
from lamina.serve.batching import BatchQueue
from lamina.serve.model import ServedModel, threads_for
from lamina.serve.requests import (
    NPZ,
    BadRequest,
    arrays_of,
    decode_json,
    decode_npz,
    describe_model,
    encode_json,
    encode_npz,
)


@serve.deployment
class LaminaModel:
    """One replica: the artifact in `path`, loaded and warmed up in its constructor."""

    def __init__(
        self, path: str, num_threads: int, max_batch_size: int, batch_wait_timeout_s: float
    ):
        self.model = ServedModel.load(path, num_threads)
        self.model.warm_up()
        self._queue = BatchQueue(
            self.model.run_batch, self.model.worker, max_batch_size, batch_wait_timeout_s
        )

    async def __call__(self, request: Any) -> Any:
        """An HTTP request (JSON) or a handle call (NumPy arrays)."""
        if isinstance(request, Request):
            return await self._http(request)
        answer = await self._queue.submit(self.model.check(arrays_of(request, self.model.inputs)))
        if isinstance(answer, Exception):
            raise answer
        return answer

    async def _http(self, request: Request) -> Response:
        model = self.model
        if request.method == "GET":
            return _json(
                {**describe_model(model.inputs, model.outputs, model.bounds), **self.stats()}
            )
        if request.method != "POST":
            return _json({"error": f"{request.method} not allowed: POST a request"}, 405)
        binary = request.headers.get("content-type", "").split(";")[0].strip() == NPZ
        decode = decode_npz if binary else decode_json
        try:
            arrays = model.check(decode(await request.body(), model.inputs))
        except BadRequest as err:
            return _json({"error": str(err)}, 400)
        answer = await self._queue.submit(arrays)
        if isinstance(answer, Exception):
            return _json({"error": f"{type(answer).__name__}: {answer}"}, 500)
        if binary:
            return Response(encode_npz(answer), media_type=NPZ)
        return _json(encode_json(answer))

    def stats(self) -> dict[str, object]:
        """This replica: its process, the threads of its parallel loops (None: it has
        none) and its counters since start (`ServedModel.stats`)."""
        return {"replica": {"pid": os.getpid(), "threads": self.model.threads, **self.model.stats}}


def _json(content: object, status: int = 200) -> Response:
    """JSON with NaN and infinities as Python writes them (`NaN`, `Infinity`): a model's
    output may hold them, and starlette's JSONResponse would fail on them."""
    return Response(json.dumps(content), status_code=status, media_type="application/json")


def deployment(
    path: str | Path,
    *,
    num_replicas: int = 1,
    max_batch_size: int = 8,
    batch_wait_timeout_s: float = 0.0,
    num_cpus: float = 1,
    num_threads: int | None = None,
    name: str = "lamina",
    max_ongoing_requests: int | None = None,
    ray_actor_options: dict | None = None,
    **options: Any,
) -> Application:
    """The Serve application serving the compiled model in `path`: pass it to `serve.run`.

    Each of the `num_replicas` replicas reserves `num_cpus` CPUs and runs
    Lamina's parallel loops on `num_threads` threads (default: `num_cpus`).
    A batch holds up to `max_batch_size` requests: those that waited while
    the previous batch ran, or, when the replica was idle, those that arrive
    within `batch_wait_timeout_s` (default 0: a lone request runs at once).
    A replica takes `max_ongoing_requests` at once (default: twice the batch,
    so the next batch fills while one runs). `options` go to Serve's
    deployment (`autoscaling_config`, ...).

    `path` must exist at the same place on every node running a replica. Its
    manifest is read here, so that a path that is no artifact (or one from
    another Lamina version) fails now with `ArtifactError`, not in every
    replica's constructor; the replicas check the rest (files, CPU features).
    """
    path = Path(path).resolve()
    read_manifest(path)
    actor_options = {"num_cpus": num_cpus, **(ray_actor_options or {})}
    return LaminaModel.options(
        name=name,
        num_replicas=num_replicas,
        ray_actor_options=actor_options,
        max_ongoing_requests=max_ongoing_requests or 2 * max_batch_size,
        **options,
    ).bind(str(path), num_threads or threads_for(num_cpus), max_batch_size, batch_wait_timeout_s)


__all__ = ["BadRequest", "LaminaModel", "deployment"]
