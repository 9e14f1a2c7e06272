"""Ray Serve against a direct loop: ResNet-18 batch-1 requests through `lamina.serve`.

    python benchmarks/bench_serve.py                       # ResNet-18, 2 CPUs, 500 requests
    python benchmarks/bench_serve.py --requests 100 --configs 2x1:8
    python benchmarks/bench_serve.py --model mlp --requests 200   # a quick run, no PyTorch

torchvision's ResNet-18 (random weights, the `torch` extra) is exported to
ONNX with a dynamic batch axis, and compiled by `lamina-compile ... -o DIR/`
into one artifact per batch size the configurations need (batch 1 and the
compiled batch B). Then, on `--cpus` CPUs:

* direct: new processes load the batch-1 artifact and call it in a loop, one
  image at a time — one process of `cpus` threads, then `cpus` processes of
  one thread at once: images per second and per-call latency (p50, p99);
  the faster is the baseline (1.00);
* serve `RxT:B`: a local Ray (loopback only) runs R replicas of T threads each
  (R × T = cpus) of the batch-B artifact with `@serve.batch` on
  (`max_batch_size` `--max-batch`: a batch-1 artifact runs the batch's
  requests one after the other in one go); the asyncio client sends `--requests` batch-1 requests
  through a `DeploymentHandle`, at most `--in-flight` outstanding: images per
  second over the burst, each request's latency (p50, p99, sent → answered),
  and every answer compared with the direct run's output for its image
  (none may be lost or wrong). Then `--sequential` requests one after the
  other: the latency of a lone request (the batch wait included).

The ratio serve / direct is the goal's measure (≥ 0.9). The client runs on
the same CPUs as the replicas; the machine's load average is printed before
and after, since other work on it moves every number.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

IMAGES = 16
"""Distinct input images the requests cycle through (each answer is checked)."""


def export_resnet18(path: Path) -> Path:
    """torchvision's ResNet-18 as ONNX, batch axis `N` dynamic (exported once)."""
    if path.exists():
        return path
    import contextlib
    import io
    import warnings

    import torch
    import torchvision

    model = torchvision.models.resnet18(weights=None).eval()
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model, (torch.randn(1, 3, 224, 224),), str(path), opset_version=17, dynamo=False,
            input_names=["input"], output_names=["logits"],
            dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}},
        )  # fmt: skip
    return path


def export_mlp(path: Path) -> Path:
    """A 784-512-512-10 MLP as ONNX with a dynamic batch (quick runs without PyTorch)."""
    from onnx import TensorProto, helper, numpy_helper, save

    rng = np.random.default_rng(0)
    sizes = [784, 512, 512, 10]
    nodes, inits, last = [], [], "input"
    for i, (a, b) in enumerate(zip(sizes, sizes[1:], strict=False)):
        inits += [
            numpy_helper.from_array(rng.normal(0, a**-0.5, (a, b)).astype(np.float32), f"w{i}"),
            numpy_helper.from_array(np.zeros(b, np.float32), f"b{i}"),
        ]
        final = i == len(sizes) - 2
        nodes.append(helper.make_node("Gemm", [last, f"w{i}", f"b{i}"], [f"gemm{i}"]))
        last = "logits" if final else f"relu{i}"
        nodes.append(helper.make_node("Identity" if final else "Relu", [f"gemm{i}"], [last]))
    graph = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 784])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])], inits,
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    save(model, str(path))
    return path


def compile_artifact(model: Path, shape: tuple[int, ...], folder: Path) -> Path:
    """`lamina-compile model --input-shape input=... -o folder/` (kept between runs)."""
    if (folder / "manifest.json").exists():
        return folder
    dims = ",".join(map(str, shape))
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "lamina.tools.lamina_compile", str(model),
         "--input-shape", f"input={dims}", "-o", f"{folder}/"],
        check=True,
    )  # fmt: skip
    print(f"  compiled {folder.name} in {time.perf_counter() - start:.1f} s", flush=True)
    return folder


DIRECT = """
import json, sys, time
import numpy as np
import lamina.runtime
exe = lamina.runtime.load(sys.argv[1])
images = np.load(sys.argv[2])
calls = int(sys.argv[3])
name = exe.get_inputs()[0].name
outputs = [exe.run({name: images[i : i + 1]})["logits"][0] for i in range(len(images))]
times = []
start = time.perf_counter()
for i in range(calls):
    t = time.perf_counter()
    exe.run({name: images[i % len(images)][None]})
    times.append(time.perf_counter() - t)
total = time.perf_counter() - start
np.save(sys.argv[4], np.stack(outputs))
print(json.dumps({"seconds": total, "times": times}))
"""


def run_direct(
    artifact: Path, images: np.ndarray, calls: int, processes: int, threads: int, tmp: Path
) -> dict:
    """`processes` direct loops at once, `threads` threads each, `calls` calls in all:
    images per second together, every call's latency, the outputs for `images`."""
    np.save(tmp / "images.npy", images)
    env = {**os.environ, "LAMINA_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads)}
    loops = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                DIRECT,
                str(artifact),
                str(tmp / "images.npy"),
                str(calls // processes),
                str(tmp / f"reference{i}.npy"),
            ],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )  # fmt: skip
        for i in range(processes)
    ]
    results = [json.loads(loop.communicate()[0].strip().splitlines()[-1]) for loop in loops]
    seconds = max(r["seconds"] for r in results)
    return {
        "rate": processes * (calls // processes) / seconds,
        "times": [t for r in results for t in r["times"]],
        "reference": np.load(tmp / "reference0.npy"),
    }


def percentiles(times: list[float]) -> tuple[float, float]:
    """p50 and p99 in milliseconds."""
    return float(np.percentile(times, 50) * 1e3), float(np.percentile(times, 99) * 1e3)


def start_ray(cpus: int) -> None:
    """A local Ray on the loopback interface, Serve's HTTP proxy on a free local port."""
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # addresses on 127.0.0.1
    import ray
    from ray import serve

    ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    serve.start(http_options={"host": "127.0.0.1", "port": port})


def run_serve(artifact: Path, replicas: int, threads: int, batch: int, images: np.ndarray,
              reference: np.ndarray, args: argparse.Namespace) -> dict:  # fmt: skip
    """One configuration: deploy, burst, check every answer, lone requests, tear down."""
    from ray import serve

    import lamina.serve

    app = lamina.serve.deployment(
        artifact, num_replicas=replicas, num_cpus=threads, max_batch_size=args.max_batch,
        batch_wait_timeout_s=args.batch_wait, max_constructor_retry_count=1,
    )  # fmt: skip
    handle = serve.run(app, name="bench", route_prefix="/bench")
    name = "input"
    for i in range(2 * replicas):  # every replica answered once
        handle.remote({name: images[i % len(images)][None]}).result(timeout_s=120)

    latencies: list[float] = []
    wrong: list[int] = []
    failed: list[str] = []

    async def one(i: int, slots: asyncio.Semaphore) -> None:
        async with slots:
            t = time.perf_counter()
            try:
                answer = await handle.remote({name: images[i % len(images)][None]})
            except Exception as err:  # a lost request: counted, the burst goes on
                failed.append(f"{type(err).__name__}: {err}")
                return
            latencies.append(time.perf_counter() - t)
        if not np.allclose(answer["logits"][0], reference[i % len(images)], rtol=1e-4, atol=1e-4):
            wrong.append(i)

    async def burst() -> None:
        slots = asyncio.Semaphore(args.in_flight)
        await asyncio.gather(*(one(i, slots) for i in range(args.requests)))

    start = time.perf_counter()
    asyncio.run(burst())
    seconds = time.perf_counter() - start
    replicas_seen: dict[int, dict] = {}
    for _ in range(20 * replicas):  # the router spreads these over the replicas
        stats = handle.stats.remote().result(timeout_s=60)["replica"]
        replicas_seen[stats["pid"]] = stats
    batches = sum(r["batches"] for r in replicas_seen.values())
    requests = sum(r["requests"] for r in replicas_seen.values())
    busy = [r["seconds"] for r in replicas_seen.values()]
    print(f"  {len(replicas_seen)} replica(s) seen: {requests / max(batches, 1):.1f} requests "
          f"per batch, busy {', '.join(f'{b:.1f}' for b in busy)} s of {seconds:.1f} s, "
          f"threads {[r['threads'] for r in replicas_seen.values()]}", flush=True)  # fmt: skip
    alone = []
    for i in range(args.sequential):
        t = time.perf_counter()
        handle.remote({name: images[i % len(images)][None]}).result(timeout_s=120)
        alone.append(time.perf_counter() - t)
    serve.delete("bench")
    if failed:
        print(f"  {len(failed)} failed, first: {failed[0]}")
    return {"seconds": seconds, "times": latencies, "wrong": wrong, "lost": len(failed),
            "alone": alone}  # fmt: skip


def parse_config(text: str) -> tuple[int, int, int]:
    """`RxT:B` → (replicas, threads per replica, compiled batch)."""
    shape, _, batch = text.partition(":")
    replicas, _, threads = shape.partition("x")
    return int(replicas), int(threads), int(batch or 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("resnet18", "mlp"), default="resnet18")
    parser.add_argument("--cpus", type=int, default=2, help="CPUs of Ray and threads of direct")
    parser.add_argument("--configs", default="2x1:1,2x1:8,1x2:8",
                        help="replicas x threads : compiled batch, comma-separated")  # fmt: skip
    parser.add_argument("--requests", type=int, default=500, help="requests in the burst")
    parser.add_argument("--in-flight", type=int, default=32, help="outstanding requests at most")
    parser.add_argument("--sequential", type=int, default=30, help="lone requests (latency)")
    parser.add_argument("--max-batch", type=int, default=8, help="max_batch_size of @serve.batch")
    parser.add_argument("--batch-wait", type=float, default=0.01, help="batch_wait_timeout_s")
    parser.add_argument("--direct-calls", type=int, default=200, help="calls of the direct loop")
    parser.add_argument(
        "--work-dir", default=os.path.join(tempfile.gettempdir(), "lamina-bench-serve")
    )
    args = parser.parse_args()

    work = Path(args.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    configs = [parse_config(c) for c in args.configs.split(",")]
    sample = (3, 224, 224) if args.model == "resnet18" else (784,)
    export = export_resnet18 if args.model == "resnet18" else export_mlp
    model = export(work / f"{args.model}.onnx")
    batches = sorted({1} | {b for _, _, b in configs})
    artifacts = {
        b: compile_artifact(model, (b, *sample), work / f"{args.model}-b{b}.lamina")
        for b in batches
    }
    images = np.random.default_rng(0).standard_normal((IMAGES, *sample)).astype(np.float32)
    print(f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())} "
          f"({os.cpu_count()} CPUs)", flush=True)  # fmt: skip

    directs = {}
    for processes, threads in ((1, args.cpus), (args.cpus, 1)):
        result = run_direct(artifacts[1], images, args.direct_calls, processes, threads, work)
        directs[f"{processes}x{threads}"] = result
        p50, p99 = percentiles(result["times"])
        print(f"direct, batch 1, {processes} loop(s) x {threads} thread(s): "
              f"{result['rate']:.1f} images/s, p50 {p50:.1f} ms, p99 {p99:.1f} ms", flush=True)  # fmt: skip
    direct = max(directs.values(), key=lambda r: r["rate"])
    direct_rate = direct["rate"]

    start_ray(args.cpus)
    rows = []
    try:
        for replicas, threads, batch in configs:
            result = run_serve(artifacts[batch], replicas, threads, batch, images,
                               direct["reference"], args)  # fmt: skip
            rate = args.requests / result["seconds"]
            p50, p99 = percentiles(result["times"])
            a50, a99 = percentiles(result["alone"]) if result["alone"] else (0.0, 0.0)
            lost = result["lost"]
            rows.append((f"{replicas}x{threads}:{batch}", rate, rate / direct_rate, p50, p99,
                         a50, a99, len(result["wrong"]), lost))  # fmt: skip
            print(f"serve {replicas} replica(s) x {threads} thread(s), batch {batch}: "
                  f"{rate:.1f} images/s ({rate / direct_rate:.2f}x direct), burst p50 "
                  f"{p50:.1f} ms p99 {p99:.1f} ms, lone p50 {a50:.1f} ms p99 {a99:.1f} ms, "
                  f"{len(result['wrong'])} wrong, {lost} lost of {args.requests}", flush=True)  # fmt: skip
    finally:
        import ray
        from ray import serve

        serve.shutdown()
        ray.shutdown()
    print(f"load average after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    print("\n| config (replicas x threads : batch) | images/s | vs direct | burst p50 ms | "
          "burst p99 ms | lone p50 ms | lone p99 ms | wrong | lost |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for name, result in directs.items():
        p50, p99 = percentiles(result["times"])
        print(f"| direct loops, batch 1, {name} | {result['rate']:.1f} | "
              f"{result['rate'] / direct_rate:.2f} | {p50:.1f} | {p99:.1f} | | | | |")  # fmt: skip
    for row in rows:
        name, rate, ratio, p50, p99, a50, a99, wrong, lost = row
        print(f"| {name} | {rate:.1f} | {ratio:.2f} | {p50:.1f} | {p99:.1f} | {a50:.1f} | "
              f"{a99:.1f} | {wrong} | {lost} |")  # fmt: skip
    return 1 if any(r[7] or r[8] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
