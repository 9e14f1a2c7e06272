"""Ray Serve against a direct loop: ResNet-18 batch-1 requests through `lamina.serve`.

    python benchmarks/bench_serve.py                       # ResNet-18, 2 replicas x 1 thread
    python benchmarks/bench_serve.py --rounds 3 --requests 100 --configs 2x1,1x2
    python benchmarks/bench_serve.py --model mlp --requests 200   # a quick run, no PyTorch

torchvision's ResNet-18 (random weights, the `torch` extra) is exported to
ONNX with a dynamic batch axis and compiled once by `lamina-compile ... -o
DIR/` into an artifact with a symbolic batch `N` in [1, `--max-batch`]
(docs/dynamic-shapes.md): a batch of k requests runs as one call of k rows,
nothing padded. Each configuration `RxT` (R replicas of T threads, R x T =
`--cpus`) is measured in `--rounds` interleaved rounds (their order
alternates), each round:

* **direct**: R new processes, each loading the same artifact with T
  threads and calling `Executable.run` on one image (batch 1) in a loop,
  `--requests / R` calls each, all at once — no client, no serialization, no
  batching: images per second over all, and each call's latency;
* **serve**: a local Ray (loopback only, `--cpus` CPUs) runs R replicas of
  T threads (`num_cpus=T`, batching on); an asyncio client in this process
  sends `--requests` batch-1 requests through a `DeploymentHandle` (NumPy
  arrays, no JSON), at most `--in-flight` outstanding: images per second
  over the burst, each request's latency (sent → answered), every answer
  compared with the direct loop's output for its image (none may be lost
  or wrong);
* **lone**: `--sequential` calls one after the other, direct (one process of
  T threads) and through Serve (one request at a time): a lone request's
  latency.

The goal's measure is the median over the rounds of serve / direct images
per second in the same round (>= 0.9). The client and Ray's own processes
share the CPUs with the replicas, as they would on a one-machine deployment.
The machine's load average is printed before and after, since other work on
it moves every number; ratios of the same round are the robust part.
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

IDLE_WINDOW_S = 1.0
"""Before each burst, Ray's processes are measured idle this long: their CPU seconds
per second (the controller, GCS, raylet, idle replicas) is Ray's background."""

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


def compile_artifact(model: Path, max_batch: int, folder: Path) -> Path:
    """`lamina-compile model --batch-bounds 1:max_batch -o folder/` (kept between runs)."""
    if (folder / "manifest.json").exists():
        return folder
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "lamina.tools.lamina_compile", str(model),
         "--batch-bounds", f"1:{max_batch}", "-o", f"{folder}/"],
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
outputs = [exe.run({name: images[i : i + 1]}) for i in range(len(images))]
ready, go = sys.argv[5], sys.argv[6]
open(ready, "w").close()
while not __import__("os").path.exists(go):
    time.sleep(0.001)
times = []
start = time.perf_counter()
cpu = time.process_time()
for i in range(calls):
    t = time.perf_counter()
    exe.run({name: images[i % len(images)][None]})
    times.append(time.perf_counter() - t)
total = time.perf_counter() - start
cpu = time.process_time() - cpu
if sys.argv[4] != "-":
    np.save(sys.argv[4], np.stack([next(iter(o.values()))[0] for o in outputs]))
print(json.dumps({"seconds": total, "cpu": cpu, "times": times}))
"""


def run_direct(
    artifact: Path, images: np.ndarray, calls: int, processes: int, threads: int, tmp: Path
) -> dict:
    """`processes` direct loops at once, `threads` threads each, `calls` calls in all:
    images per second together and every call's latency. The loops start together,
    once every process has loaded the artifact and run each image once; the first
    one's outputs for `images` are saved as `reference.npy`."""
    np.save(tmp / "images.npy", images)
    env = {**os.environ, "LAMINA_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads)}
    go = tmp / "go"
    go.unlink(missing_ok=True)
    loops = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                DIRECT,
                str(artifact),
                str(tmp / "images.npy"),
                str(calls // processes),
                str(tmp / "reference.npy") if i == 0 else "-",
                str(tmp / f"ready{i}"),
                str(go),
            ],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )  # fmt: skip
        for i in range(processes)
    ]
    while not all((tmp / f"ready{i}").exists() for i in range(processes)):
        if any(loop.poll() not in (None, 0) for loop in loops):
            raise RuntimeError("a direct loop failed")
        time.sleep(0.01)
    go.touch()
    results = [json.loads(loop.communicate()[0].strip().splitlines()[-1]) for loop in loops]
    for i in range(processes):
        (tmp / f"ready{i}").unlink()
    done = processes * (calls // processes)
    return {
        "rate": done / max(r["seconds"] for r in results),
        "per_cpu": done / sum(r["cpu"] for r in results),
        "times": [t for r in results for t in r["times"]],
    }


def tree_cpu_seconds() -> float:
    """CPU seconds used so far by this process and all its descendants (Ray's
    processes and the replicas are among them), read from /proc."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parents.setdefault(int(stat[stat.rfind(")") + 2 :].split()[1]), []).append(int(entry))
    total, todo = 0.0, [os.getpid()]
    while todo:
        pid = todo.pop()
        todo += parents.get(pid, [])
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


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


def echo_app(replicas: int, args: argparse.Namespace):
    """Ray Serve alone: a deployment that answers each request with a slice of it and
    computes nothing (its replicas reserve no CPU, so it runs beside Lamina's). Its
    CPU per request is what Ray, Serve and the client cost without any model."""
    from ray import serve

    @serve.deployment(num_replicas=replicas, ray_actor_options={"num_cpus": 0},
                      max_ongoing_requests=2 * args.max_batch)  # fmt: skip
    class Echo:
        async def __call__(self, request: dict) -> dict:
            return {"logits": np.asarray(request["input"]).reshape(1, -1)[:, :1000].copy()}

    return Echo.bind()


class Served:
    """One deployed application: bursts and lone requests, answers checked if `checked`."""

    def __init__(self, app, name: str, replicas: int, args: argparse.Namespace,
                 images: np.ndarray, reference: np.ndarray | None):  # fmt: skip
        from ray import serve

        self.handle = serve.run(app, name=name, route_prefix=f"/{name}")
        self.replicas, self.args, self.images, self.reference = replicas, args, images, reference
        self.wrong: list[int] = []
        self.failed: list[str] = []
        self.sent = 0
        for i in range(4 * replicas):  # every replica answered
            self.handle.remote({"input": images[i % len(images)][None]}).result(timeout_s=120)

    def _check(self, i: int, answer: dict) -> None:
        if self.reference is not None and not np.allclose(
            answer["logits"][0], self.reference[i % len(self.images)], rtol=1e-4, atol=1e-4
        ):
            self.wrong.append(i)

    def burst(self) -> dict:
        """`--requests` requests, at most `--in-flight` outstanding: rate and latencies."""
        latencies: list[float] = []
        images, handle = self.images, self.handle

        async def one(i: int, slots: asyncio.Semaphore) -> None:
            async with slots:
                t = time.perf_counter()
                try:
                    answer = await handle.remote({"input": images[i % len(images)][None]})
                except Exception as err:  # a lost request: counted, the burst goes on
                    self.failed.append(f"{type(err).__name__}: {err}")
                    return
                latencies.append(time.perf_counter() - t)
            self._check(i, answer)

        async def burst() -> None:
            slots = asyncio.Semaphore(self.args.in_flight)
            await asyncio.gather(*(one(i, slots) for i in range(self.args.requests)))

        idle = tree_cpu_seconds()
        time.sleep(IDLE_WINDOW_S)
        start, cpu = time.perf_counter(), tree_cpu_seconds()
        background = (cpu - idle) / IDLE_WINDOW_S
        asyncio.run(burst())
        seconds, cpu = time.perf_counter() - start, tree_cpu_seconds() - cpu
        self.sent += self.args.requests
        return {
            "rate": self.args.requests / seconds,
            "per_cpu": self.args.requests / cpu,
            "per_cpu_net": self.args.requests / max(cpu - background * seconds, 1e-9),
            "background": background,
            "times": latencies,
        }

    def lone(self) -> list[float]:
        """`--sequential` requests one after the other: each one's latency."""
        times = []
        for i in range(self.args.sequential):
            t = time.perf_counter()
            answer = self.handle.remote({"input": self.images[i % len(self.images)][None]})
            answer = answer.result(timeout_s=120)
            times.append(time.perf_counter() - t)
            self._check(i, answer)
        self.sent += self.args.sequential
        return times

    def replica_stats(self) -> list[dict]:
        seen: dict[int, dict] = {}
        for _ in range(20 * self.replicas):  # the router spreads these over the replicas
            stats = self.handle.stats.remote().result(timeout_s=60)["replica"]
            seen[stats["pid"]] = stats
        return list(seen.values())


def measure(artifact: Path, replicas: int, threads: int, images: np.ndarray,
            args: argparse.Namespace, work: Path) -> dict:  # fmt: skip
    """Interleaved rounds of direct and served bursts and lone calls for `RxT`."""
    from ray import serve

    import lamina.serve

    run_direct(artifact, images, len(images), 1, threads, work)  # writes the reference
    app = lamina.serve.deployment(
        artifact, num_replicas=replicas, num_cpus=threads, max_batch_size=args.max_batch,
        batch_wait_timeout_s=args.batch_wait, max_constructor_retry_count=1,
    )  # fmt: skip
    served = Served(app, "bench", replicas, args, images, np.load(work / "reference.npy"))
    echo = Served(echo_app(replicas, args), "echo", replicas, args, images, None)
    rounds: list[dict] = []
    try:
        for r in range(args.rounds):
            row: dict = {}
            steps = [
                ("direct", lambda: run_direct(artifact, images, args.requests, replicas,
                                              threads, work)),
                ("serve", served.burst),
                ("echo", echo.burst),
                ("direct_lone", lambda: run_direct(artifact, images, args.sequential, 1,
                                                   threads, work)["times"]),
                ("serve_lone", served.lone),
            ]  # fmt: skip
            if r % 2:  # alternate which runs first
                steps = [steps[2], steps[1], steps[0], steps[4], steps[3]]
            for name, step in steps:
                row[name] = step()
            row["ratio"] = row["serve"]["rate"] / row["direct"]["rate"]
            row["cpu_ratio"] = row["serve"]["per_cpu"] / row["direct"]["per_cpu"]
            row["net_ratio"] = row["serve"]["per_cpu_net"] / row["direct"]["per_cpu"]
            # The best serve / direct per CPU-second Ray allows: the direct CPU per image
            # plus Ray's alone per request.
            direct_cpu, ray_cpu = 1 / row["direct"]["per_cpu"], 1 / row["echo"]["per_cpu_net"]
            row["ceiling"] = direct_cpu / (direct_cpu + ray_cpu)
            print(f"  round {r + 1}: direct {row['direct']['rate']:.1f} images/s "
                  f"({row['direct']['per_cpu']:.1f} per CPU-second), serve "
                  f"{row['serve']['rate']:.1f} images/s ({row['serve']['per_cpu']:.1f} per "
                  f"CPU-second): {row['ratio']:.2f}x, per CPU-second {row['cpu_ratio']:.2f}x, "
                  f"net of Ray's background ({row['serve']['background']:.2f} CPU-s/s) "
                  f"{row['net_ratio']:.2f}x; Ray alone {ray_cpu * 1e3:.1f} ms CPU per request "
                  f"(net), ceiling {row['ceiling']:.2f}x", flush=True)  # fmt: skip
            rounds.append(row)
        stats = served.replica_stats()
    finally:
        serve.delete("bench")
        serve.delete("echo")
    if served.failed:
        print(f"  {len(served.failed)} lost, first: {served.failed[0]}")
    return {"rounds": rounds, "stats": stats, "wrong": len(served.wrong),
            "lost": len(served.failed) + len(echo.failed), "sent": served.sent}  # fmt: skip


def report(name: str, result: dict) -> list[str]:
    """Markdown rows: direct and serve medians, the ratio, latencies, batch fill."""
    rounds = result["rounds"]

    def pooled(key: str) -> list[float]:
        return [
            t for r in rounds for t in (r[key] if isinstance(r[key], list) else r[key]["times"])
        ]

    direct = float(np.median([r["direct"]["rate"] for r in rounds]))
    serve = float(np.median([r["serve"]["rate"] for r in rounds]))
    ratios = [r["ratio"] for r in rounds]
    cpu_ratios = [r["cpu_ratio"] for r in rounds]
    net_ratios = [r["net_ratio"] for r in rounds]
    ceilings = [r["ceiling"] for r in rounds]
    ray_ms = float(np.median([1e3 / r["echo"]["per_cpu_net"] for r in rounds]))
    stats = result["stats"]
    per_batch = sum(s["requests"] for s in stats) / max(sum(s["batches"] for s in stats), 1)
    d50, d99 = percentiles(pooled("direct"))
    s50, s99 = percentiles(pooled("serve"))
    dl50, dl99 = percentiles(pooled("direct_lone"))
    sl50, sl99 = percentiles(pooled("serve_lone"))
    return [
        f"| {name} direct | {direct:.1f} | | | | | {d50:.1f} / {d99:.1f} | "
        f"{dl50:.1f} / {dl99:.1f} | | |",
        f"| {name} serve | {serve:.1f} | **{np.median(ratios):.2f}** "
        f"({min(ratios):.2f}–{max(ratios):.2f}) | **{np.median(cpu_ratios):.2f}** "
        f"({min(cpu_ratios):.2f}–{max(cpu_ratios):.2f}) | **{np.median(net_ratios):.2f}** "
        f"({min(net_ratios):.2f}–{max(net_ratios):.2f}) | {np.median(ceilings):.2f} "
        f"({ray_ms:.1f} ms) | {s50:.1f} / {s99:.1f} | "
        f"{sl50:.1f} / {sl99:.1f} | {per_batch:.1f} | "
        f"{result['wrong']} / {result['lost']} of {result['sent']} |",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--model", choices=("resnet18", "mlp"), default="resnet18")
    parser.add_argument("--cpus", type=int, default=2, help="CPUs of Ray")
    parser.add_argument("--configs", default="2x1", help="replicas x threads, comma-separated")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds")
    parser.add_argument("--requests", type=int, default=200, help="requests per burst")
    parser.add_argument("--in-flight", type=int, default=32, help="outstanding requests at most")
    parser.add_argument("--sequential", type=int, default=20, help="lone requests per round")
    parser.add_argument("--max-batch", type=int, default=8,
                        help="max_batch_size, and the upper bound of the compiled batch")  # fmt: skip
    parser.add_argument("--batch-wait", type=float, default=0.0, help="batch_wait_timeout_s")
    parser.add_argument("--inline-bytes", type=int, default=0,
                        help="Ray's max_direct_call_object_size: requests up to this size go "
                        "inline in the call, not through the object store (0: Ray's default)")  # fmt: skip
    parser.add_argument(
        "--work-dir", default=os.path.join(tempfile.gettempdir(), "lamina-bench-serve")
    )
    args = parser.parse_args()

    work = Path(args.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    configs = [tuple(map(int, c.split("x"))) for c in args.configs.split(",")]
    sample = (3, 224, 224) if args.model == "resnet18" else (784,)
    export = export_resnet18 if args.model == "resnet18" else export_mlp
    model = export(work / f"{args.model}.onnx")
    artifact = compile_artifact(
        model, args.max_batch, work / f"{args.model}-n{args.max_batch}.lamina"
    )
    images = np.random.default_rng(0).standard_normal((IMAGES, *sample)).astype(np.float32)
    print(f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())} "
          f"({os.cpu_count()} CPUs)", flush=True)  # fmt: skip

    if args.inline_bytes:  # read by every Ray process as it starts
        os.environ["RAY_max_direct_call_object_size"] = str(args.inline_bytes)
    start_ray(args.cpus)
    results = {}
    try:
        for replicas, threads in configs:
            print(f"{replicas} replica(s) x {threads} thread(s):", flush=True)
            results[f"{replicas}x{threads}"] = measure(
                artifact, replicas, threads, images, args, work
            )
    finally:
        import ray
        from ray import serve

        serve.shutdown()
        ray.shutdown()
    print(f"load average after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    print("\n| replicas x threads | images/s (median) | serve / direct images/s (median, "
          "range) | serve / direct images per CPU-second | the same, net of Ray's idle "
          "background | ceiling (Ray alone, net CPU per request) | burst p50 / p99 ms | "
          "lone p50 / p99 ms | requests per batch | wrong / lost |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, result in results.items():
        print("\n".join(report(name, result)))
    return 1 if any(r["wrong"] or r["lost"] for r in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
