"""`lamina.serve`: a compiled model served by Ray Serve on a loopback-only local Ray.

One local Ray instance for the module (2 CPUs, no dashboard, every Ray
address on 127.0.0.1, Serve's HTTP proxy on a free loopback port), one
deployment of a tiny CNN (compiled batch 4) with 2 replicas. Requests of
1 to 9 rows exercise the padding (fewer rows than the compiled batch) and
the splitting (more); every answer is compared with NumPy. Bad requests get
HTTP 400 (or `BadRequest` through a handle) and the replicas keep serving.

The request checks and the batcher are also tested alone, without Ray.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from lamina.serve.batching import BatchPlan, BatchQueue, plan_batching, run_batch
from lamina.serve.requests import (
    NPZ,
    BadRequest,
    Port,
    check_request,
    decode_json,
    decode_npz,
    encode_npz,
)

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

BATCH = 4
"""The compiled batch of the served CNN."""

RNG = np.random.default_rng(7)
KERNEL = RNG.normal(size=(24, 3, 3, 3)).astype(np.float32)
BIAS = RNG.normal(size=24).astype(np.float32)
DENSE = RNG.normal(size=(24, 10)).astype(np.float32)
DENSE_BIAS = RNG.normal(size=10).astype(np.float32)


def reference(x: np.ndarray) -> np.ndarray:
    """The CNN in NumPy: conv 3x3 (padding 1) + bias, ReLU, global average, dense."""
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))
    conv = np.einsum("nchwij,ocij->nohw", windows, KERNEL) + BIAS[:, None, None]
    return np.maximum(conv, 0).mean(axis=(2, 3)) @ DENSE + DENSE_BIAS


def cnn_model(path: Path) -> Path:
    """A tiny CNN as an ONNX model x[BATCH, 3, 16, 16] -> y[BATCH, 10]; its convolution
    is large enough for parallel loops (OpenMP), so a replica's thread count shows."""
    nodes = [
        helper.make_node("Conv", ["x", "kernel", "bias"], ["c"], pads=[1, 1, 1, 1], name="conv"),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("GlobalAveragePool", ["r"], ["g"], name="pool"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "dense", "dense_bias"], ["y"], name="dense"),
    ]
    weights = {"kernel": KERNEL, "bias": BIAS, "dense": DENSE, "dense_bias": DENSE_BIAS}
    graph = helper.make_graph(
        nodes,
        "cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [BATCH, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [BATCH, 10])],
        [numpy_helper.from_array(a, n) for n, a in weights.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


# ---------------------------------------------------------------------------
# Requests and batching, without Ray
# ---------------------------------------------------------------------------

X = Port("x", np.dtype(np.float32), (BATCH, 16))
Y = Port("y", np.dtype(np.float32), (BATCH, 8))


def test_request_checks_name_the_problem():
    ok = np.zeros((3, 16), np.float32)
    assert check_request({"x": ok}, (X,), {}, batched=True)["x"] is ok
    cases = {
        "unknown input 'z'": {"x": ok, "z": ok},
        "missing input 'x'": {},
        "expected dtype float32, got float64": {"x": ok.astype(np.float64)},
        "dimension 1 is 15, expected 16": {"x": np.zeros((3, 15), np.float32)},
        "expected 2 dimensions": {"x": np.zeros(16, np.float32)},
        "at least one row": {"x": np.zeros((0, 16), np.float32)},
        "expected a numpy array": {"x": [[0.0] * 16]},
    }
    for message, arrays in cases.items():
        with pytest.raises(BadRequest, match=message):
            check_request(arrays, (X,), {}, batched=True)
    with pytest.raises(BadRequest, match="dimension 0 is 3, expected 4"):
        check_request({"x": ok}, (X,), {}, batched=False)


def test_symbolic_dimensions_are_checked_against_their_bounds():
    seq = Port("s", np.dtype(np.int64), ("N", "S"))
    bounds = {"N": (1, 8), "S": (2, 5)}
    check_request({"s": np.zeros((9, 5), np.int64)}, (seq,), bounds, batched=True)
    with pytest.raises(BadRequest, match=r"dimension 1 is 6, expected S in \[2, 5\]"):
        check_request({"s": np.zeros((1, 6), np.int64)}, (seq,), bounds, batched=True)


def test_json_requests_decode_to_the_inputs_dtypes():
    got = decode_json(json.dumps({"inputs": {"x": [[1, 2.5] * 8]}}).encode(), (X,))
    assert got["x"].dtype == np.float32 and got["x"].shape == (1, 16)
    index = Port("i", np.dtype(np.int64), (BATCH,))
    cases = {
        "malformed JSON": b'{"inputs": ',
        'expected a JSON object {"inputs"': b'{"x": [[1]]}',
        "unknown input 'q'": b'{"inputs": {"q": [1]}}',
        "lists of numbers of equal lengths": b'{"inputs": {"i": [[1, 2], [3]]}}',
        "expected int64 values": b'{"inputs": {"i": [1.5]}}',
    }
    for message, body in cases.items():
        with pytest.raises(BadRequest, match=message):
            decode_json(body, (index,))
    with pytest.raises(BadRequest, match="lists of numbers"):
        decode_json(b'{"inputs": {"x": [["a"]]}}', (X,))
    small = Port("i", np.dtype(np.int32), (BATCH,))
    with pytest.raises(BadRequest, match="out of int32's range"):
        decode_json(b'{"inputs": {"i": [1, 2, 3, 4000000000]}}', (small,))


def test_npz_requests_keep_dtypes_and_shapes():
    x = RNG.normal(size=(3, 16)).astype(np.float32)
    got = decode_npz(encode_npz({"x": x}), (X,))
    assert got["x"].dtype == np.float32
    np.testing.assert_array_equal(got["x"], x)
    with pytest.raises(BadRequest, match="malformed application/x-npz body"):
        decode_npz(b"not a zip", (X,))
    with pytest.raises(BadRequest, match="got one array"):
        buffer = io.BytesIO()
        np.save(buffer, x)
        decode_npz(buffer.getvalue(), (X,))


def test_batching_plans():
    assert plan_batching((X,), (Y,), {}) == BatchPlan(rows=BATCH, minimum=BATCH)
    dynamic = Port("x", np.dtype(np.float32), ("N", 16))
    out = Port("y", np.dtype(np.float32), ("N", 8))
    assert plan_batching((dynamic,), (out,), {"N": (2, 64)}) == BatchPlan(rows=64, minimum=2)
    weight = Port("w", np.dtype(np.float32), (16, 8))
    assert plan_batching((X, weight), (Y,), {}) is None


def test_batches_are_padded_split_and_answered_in_order():
    """Requests of 1..9 rows through a static batch of 4: every call gets exactly 4
    rows, each request its own rows back."""
    calls: list[int] = []
    weights = RNG.normal(size=(16, 8)).astype(np.float32)

    def run(arrays):
        assert arrays["x"].shape == (BATCH, 16)
        calls.append(BATCH)
        return {"y": arrays["x"] @ weights}

    requests = [{"x": RNG.normal(size=(rows, 16)).astype(np.float32)} for rows in (1, 3, 9, 2)]
    answers = run_batch(run, requests, BatchPlan(rows=BATCH, minimum=BATCH))
    for request, answer in zip(requests, answers, strict=True):
        assert isinstance(answer, dict)
        np.testing.assert_allclose(answer["y"], request["x"] @ weights, rtol=1e-5)
    assert len(calls) == 4  # 15 rows in calls of 4


def test_dynamic_batches_are_not_padded_beyond_the_lower_bound():
    shapes: list[int] = []

    def run(arrays):
        shapes.append(arrays["x"].shape[0])
        return {"y": arrays["x"][:, :8] * 2}

    requests = [{"x": np.ones((rows, 16), np.float32)} for rows in (1, 2, 3)]
    answers = run_batch(run, requests, BatchPlan(rows=4, minimum=1))
    assert shapes == [4, 2]
    assert [a["y"].shape for a in answers if isinstance(a, dict)] == [(1, 8), (2, 8), (3, 8)]


def test_a_failing_call_fails_only_its_group():
    def run(arrays):
        if arrays["x"].shape[1] == 3:
            raise ValueError("boom")
        return {"y": arrays["x"]}

    requests = [{"x": np.ones((1, 3), np.float32)}, {"x": np.ones((1, 4), np.float32)}]
    bad, good = run_batch(run, requests, BatchPlan(rows=None, minimum=1))
    assert isinstance(bad, ValueError) and isinstance(good, dict)


def _queue_run(queue_batches: list[list[int]], gate: threading.Event):
    """A `run_batch` that records each batch's request ids and holds the first batch
    until `gate` is set (the worker is busy meanwhile)."""

    def run(requests):
        if not queue_batches:
            assert gate.wait(10)
        queue_batches.append([int(r["id"][0]) for r in requests])
        return [{"y": r["id"] * 2} for r in requests]

    return run


def test_the_batch_queue_cuts_a_batch_when_the_worker_is_free():
    """Requests arriving while a batch computes all join the next batch (up to its
    size); a lone request runs at once; each gets its own answer; a request whose
    caller gave up is dropped."""
    batches: list[list[int]] = []
    gate = threading.Event()
    worker = ThreadPoolExecutor(1)

    async def scenario():
        queue = BatchQueue(_queue_run(batches, gate), worker, max_batch_size=4)
        first = asyncio.ensure_future(queue.submit({"id": np.array([0])}))
        await asyncio.sleep(0.05)  # the lone request runs at once, and holds the worker
        assert batches == [] and not first.done()
        rest = [asyncio.ensure_future(queue.submit({"id": np.array([i])})) for i in range(1, 8)]
        await asyncio.sleep(0.05)
        rest[1].cancel()  # request 2: its caller gave up before its batch
        await asyncio.sleep(0)
        gate.set()
        answers = await asyncio.gather(first, *rest[:1], *rest[2:])
        return [int(a["y"][0]) for a in answers]

    try:
        answers = asyncio.run(scenario())
    finally:
        worker.shutdown()
    assert answers == [2 * i for i in (0, 1, 3, 4, 5, 6, 7)]
    assert batches == [[0], [1, 3, 4, 5], [6, 7]]


def test_the_batch_queue_waits_for_more_only_when_told():
    batches: list[list[int]] = []
    gate = threading.Event()
    gate.set()
    worker = ThreadPoolExecutor(1)

    async def scenario():
        queue = BatchQueue(_queue_run(batches, gate), worker, 8, batch_wait_timeout_s=0.5)
        first = asyncio.ensure_future(queue.submit({"id": np.array([0])}))
        await asyncio.sleep(0.05)
        assert batches == []  # still waiting for the batch to fill
        second = queue.submit({"id": np.array([1])})
        await asyncio.gather(first, second)

    try:
        asyncio.run(scenario())
    finally:
        worker.shutdown()
    assert batches == [[0, 1]]
    with pytest.raises(ValueError, match="max_batch_size must be >= 1"):
        BatchQueue(_queue_run(batches, gate), worker, 0)


# ---------------------------------------------------------------------------
# Ray Serve, loopback only
# ---------------------------------------------------------------------------

# Every Ray address on 127.0.0.1: on Linux Ray uses the host's outward IP
# unless it runs as on a workstation (this variable); read when `ray` is imported.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
ray = pytest.importorskip("ray")
serve = pytest.importorskip("ray.serve")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def ray_serve(tmp_path_factory: pytest.TempPathFactory):
    """A local Ray with Serve on 127.0.0.1:<free port>; its URL. Shut down at the end."""
    from ray._private import ray_constants

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ray_constants, "ENABLE_RAY_CLUSTER", False)  # imported before us?
        ray.init(
            num_cpus=2,
            include_dashboard=False,
            log_to_driver=False,
            object_store_memory=80 * 2**20,
        )
        try:
            assert ray.util.get_node_ip_address() == "127.0.0.1"
            port = _free_port()
            serve.start(http_options={"host": "127.0.0.1", "port": port})
            yield f"http://127.0.0.1:{port}"
        finally:
            serve.shutdown()
            ray.shutdown()


@pytest.fixture(scope="module")
def artifact(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The CNN compiled and saved as an artifact directory."""
    import lamina

    folder = tmp_path_factory.mktemp("serve")
    lamina.compile(str(cnn_model(folder / "cnn.onnx"))).save(folder / "cnn.lamina")
    return folder / "cnn.lamina"


@pytest.fixture(scope="module")
def cnn(ray_serve: str, artifact: Path):
    """The CNN deployed with 2 replicas at /cnn: (its URL, its handle)."""
    import lamina.serve

    app = lamina.serve.deployment(artifact, num_replicas=2, max_constructor_retry_count=1)
    handle = serve.run(app, name="cnn", route_prefix="/cnn")
    return f"{ray_serve}/cnn", handle


def post(url: str, body: bytes, content_type: str = "application/json") -> tuple[int, dict]:
    """POST `body`: the status and the answer (JSON, or the arrays of an .npz answer)."""
    request = urllib.request.Request(url, data=body, headers={"Content-Type": content_type})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            data = response.read()
            if response.headers.get("content-type") == NPZ:
                with np.load(io.BytesIO(data)) as archive:
                    return response.status, {name: archive[name] for name in archive.files}
            return response.status, json.loads(data)
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_http_takes_and_answers_npz_archives(cnn):
    """`Content-Type: application/x-npz`: the inputs as `np.savez` writes them, the
    outputs back the same way (dtype and shape kept); a bad archive gets 400."""
    url, _ = cnn
    x = RNG.normal(size=(3, 3, 16, 16)).astype(np.float32)
    status, answer = post(url, encode_npz({"x": x}), NPZ)
    assert status == 200 and answer["y"].dtype == np.float32 and answer["y"].shape == (3, 10)
    np.testing.assert_allclose(answer["y"], reference(x), rtol=1e-4, atol=1e-4)
    status, answer = post(url, encode_npz({"x": x.astype(np.float64)}), NPZ)
    assert status == 400 and "expected dtype float32, got float64" in answer["error"]
    status, answer = post(url, b"PK garbage", NPZ)
    assert status == 400 and "malformed application/x-npz" in answer["error"]


def test_a_burst_of_concurrent_requests_is_answered_correctly(cnn):
    """60 HTTP requests and 60 handle calls at once, 1..9 rows each: every answer is
    the model's output for that request's rows."""
    url, handle = cnn
    inputs = [RNG.normal(size=(1 + i % 9, 3, 16, 16)).astype(np.float32) for i in range(120)]
    responses = [handle.remote({"x": x}) for x in inputs[60:]]
    with ThreadPoolExecutor(16) as pool:
        bodies = [json.dumps({"inputs": {"x": x.tolist()}}).encode() for x in inputs[:60]]
        answers = list(pool.map(lambda body: post(url, body), bodies))
    for x, (status, answer) in zip(inputs[:60], answers, strict=True):
        assert status == 200, answer
        y = np.asarray(answer["outputs"]["y"], np.float32)
        np.testing.assert_allclose(y, reference(x), rtol=1e-4, atol=1e-4)
    for x, response in zip(inputs[60:], responses, strict=True):
        y = response.result(timeout_s=60)["y"]
        assert y.dtype == np.float32
        np.testing.assert_allclose(y, reference(x), rtol=1e-4, atol=1e-4)


def test_bad_requests_get_400_and_the_server_keeps_serving(cnn):
    url, handle = cnn
    x = RNG.normal(size=(2, 3, 16, 16)).astype(np.float32)
    bad = {
        b"{not json": "malformed JSON",
        json.dumps({"inputs": {"x": x[:, :2].tolist()}}).encode(): "dimension 1 is 2",
        json.dumps({"inputs": {"image": x.tolist()}}).encode(): "unknown input 'image'",
        json.dumps({"inputs": {"x": [[["a"] * 16] * 16] * 3}}).encode(): "lists of numbers",
    }
    for body, message in bad.items():
        status, answer = post(url, body)
        assert status == 400 and message in answer["error"], answer
        status, answer = post(url, json.dumps({"inputs": {"x": x.tolist()}}).encode())
        assert status == 200
        got = np.asarray(answer["outputs"]["y"], np.float32)
        np.testing.assert_allclose(got, reference(x), rtol=1e-4, atol=1e-4)
    with pytest.raises(BadRequest, match="expected dtype float32, got float64"):
        handle.remote({"x": x.astype(np.float64)}).result(timeout_s=60)
    got = handle.remote(x).result(timeout_s=60)["y"]  # one array for a one-input model
    np.testing.assert_allclose(got, reference(x), rtol=1e-4, atol=1e-4)


def test_a_path_that_is_no_artifact_fails_before_deploying(tmp_path: Path):
    import lamina.serve
    from lamina.runtime import ArtifactError

    with pytest.raises(ArtifactError, match="does not exist"):
        lamina.serve.deployment(tmp_path / "missing.lamina")
    with pytest.raises(ArtifactError, match="no manifest.json"):
        lamina.serve.deployment(tmp_path)


def test_get_describes_the_model_and_the_replicas_threads(cnn):
    url, _ = cnn
    with urllib.request.urlopen(url, timeout=60) as response:
        described = json.loads(response.read())
    assert described["inputs"] == [{"name": "x", "dtype": "float32", "shape": [BATCH, 3, 16, 16]}]
    assert described["outputs"] == [{"name": "y", "dtype": "float32", "shape": [BATCH, 10]}]
    replica = described["replica"]
    assert replica["threads"] == 1  # num_cpus=1: one thread, though the host has more
    assert replica["requests"] >= replica["batches"] >= 1 and replica["calls"] >= 1


# ---------------------------------------------------------------------------
# docs/serving.md's walkthrough, as written
# ---------------------------------------------------------------------------

PAGE = Path(__file__).parent.parent / "docs" / "serving.md"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", PAGE.read_text(), re.S)


def test_docs_walkthrough_runs(ray_serve: str, tmp_path: Path, monkeypatch, capsys):
    """The page's Python blocks (the last one over HTTP with an .npz archive) and its
    `lamina-compile` and `curl` commands, in order,
    on this module's Ray (standing in for `ray start --head`) with Serve's HTTP port.
    Runs last: the CNN's replicas hold both CPUs, so its application is deleted first."""
    serve.delete("cnn")
    monkeypatch.chdir(tmp_path)
    make_model, deploy, ask, ask_npz = _blocks("python")
    shell = "\n".join(_blocks("sh")).replace("\\\n", "")
    namespace: dict = {}
    exec(compile(make_model, str(PAGE), "exec"), namespace)  # noqa: S102 - the page's own code
    (command,) = [line for line in shell.splitlines() if line.startswith("lamina-compile")]
    tool = shlex.split(command)
    if shutil.which(tool[0]) is None:  # not installed as a script: the same module
        tool[:1] = [sys.executable, "-m", "lamina.tools.lamina_compile"]
    subprocess.run(tool, check=True, capture_output=True)
    assert "ray start --head" in shell
    exec(compile(deploy, str(PAGE), "exec"), namespace)  # noqa: S102

    model = onnx.load("model.onnx")
    weights = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}

    def expected(x):
        logits = np.asarray(x, np.float32) @ weights["w"] + weights["b"]
        exp = np.exp(logits - logits.max(axis=1, keepdims=True))
        return exp / exp.sum(axis=1, keepdims=True)

    (curl,) = [line for line in shell.splitlines() if line.startswith("curl")]
    curl = curl.replace("http://127.0.0.1:8000", ray_serve)
    body = json.loads(shlex.split(curl)[shlex.split(curl).index("-d") + 1])
    if shutil.which("curl"):
        answer = json.loads(
            subprocess.run(shlex.split(curl), check=True, capture_output=True).stdout
        )
    else:
        answer = post(shlex.split(curl)[2], json.dumps(body).encode())[1]
    got = np.asarray(answer["outputs"]["probabilities"], np.float32)
    np.testing.assert_allclose(got, expected(body["inputs"]["x"]), rtol=1e-5, atol=1e-6)

    capsys.readouterr()
    exec(compile(ask, str(PAGE), "exec"), namespace)  # noqa: S102
    printed = capsys.readouterr().out
    np.testing.assert_allclose(namespace["probabilities"], expected(namespace["x"]), rtol=1e-5)
    assert printed.strip().startswith("[[")

    ask_npz = ask_npz.replace("http://127.0.0.1:8000", ray_serve)
    exec(compile(ask_npz, str(PAGE), "exec"), namespace)  # noqa: S102
    np.testing.assert_allclose(
        namespace["probabilities"], expected([[5.1, 3.5, 1.4, 0.2]]), rtol=1e-5
    )
    serve.delete("classifier")
