"""lamina-tune on the MLP: default vs tuned vs onnxruntime, and the search's rate local vs Ray.

    python benchmarks/bench_tuning.py --budget 180            # tune, then time the three
    python benchmarks/bench_tuning.py --rate 60 [--ray-cpus 2] [--repeat 3]
                                    # measurements per minute, local and Ray, alternated
    python benchmarks/bench_tuning.py --ab MODEL.onnx --records R [--target T]
                                    # a network without and with records, one thread
    python benchmarks/bench_tuning.py --graph MODEL.onnx --budget 150 --records R
                                    # only the graph-level search (model-wide and
                                    # per-convolution knobs), its model record into R

The MLP is examples/mlp.mlir (64 x 784 -> 512 -> 512 -> 10, weights as
parameters); onnxruntime runs the same graph (benchmarks/peers.py). Every
timing is per call, one thread unless `--threads`, rounds interleaved
(docs/tuning.md has the numbers).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MLP = ROOT / "examples" / "mlp.mlir"


def compare(records: str, threads: int, rounds: int = 21) -> dict[str, float]:
    """Medians (seconds per call) of Lamina default, Lamina tuned and onnxruntime, interleaved.
    At one thread all three run on this thread (onnxruntime with one intra-op thread
    runs on the caller's), so they are timed by its CPU time: the time another process
    held the core is left out (the machine is shared); with more threads, wall time."""
    import numpy as np
    import onnxruntime as ort

    import lamina

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from peers import onnx_mlp

    exes = {
        "default": lamina.compile(MLP, cache=False),
        "tuned": lamina.compile(MLP, cache=False, records=records),
    }
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(
        onnx_mlp(64, (784, 512, 512, 10)), options, providers=["CPUExecutionProvider"]
    )
    rng = np.random.default_rng(0)
    params = exes["default"]._signature("main").params
    args = [rng.standard_normal(p.shape).astype(np.float32) for p in params]
    feed = dict(zip([i.name for i in session.get_inputs()], args, strict=True))
    runs = {
        "default": lambda: exes["default"].run("main", *args),
        "tuned": lambda: exes["tuned"].run("main", *args),
        "onnxruntime": lambda: session.run(None, feed),
    }
    want = np.asarray(session.run(None, feed)[0])
    for name in ("default", "tuned"):
        got = runs[name]()
        assert np.allclose(got, want, rtol=1e-4, atol=1e-3), f"{name} differs from onnxruntime"
    clock = time.thread_time if threads == 1 else time.perf_counter
    samples: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, run in runs.items():
            start = clock()
            for _ in range(50):
                run()
            samples[name].append((clock() - start) / 50)
    return {name: float(np.median(s)) for name, s in samples.items()}


def ab(model: str, records: str, targets: list[str] | None, rounds: int) -> None:
    """A network compiled without and with `records`, one thread: results compared (within
    1e-4 of their magnitude), then timed in `rounds` interleaved rounds (order alternating)
    by the thread's CPU time; the median of the per-round speed-ups."""
    import numpy as np

    import lamina
    from lamina.runtime.native_setup import set_num_threads

    set_num_threads(1)
    exes = [
        lamina.compile(model, targets=targets, cache=False),
        lamina.compile(model, targets=targets, records=records, cache=False),
    ]
    rng = np.random.default_rng(0)
    args = [
        rng.uniform(0.1, 1.0, p.shape).astype(p.dtype) for p in exes[0]._signature("main").params
    ]
    want, got = (np.asarray(exe.run("main", *args)) for exe in exes)
    error = float(np.max(np.abs(want - got)) / max(1.0, float(np.max(np.abs(want)))))
    start = time.thread_time()
    exes[0].run("main", *args)
    calls = max(1, int(0.1 / max(time.thread_time() - start, 1e-6)))
    samples: list[list[float]] = [[], []]
    load = os.getloadavg()[0]
    for r in range(rounds):
        for i in (0, 1) if r % 2 == 0 else (1, 0):
            start = time.thread_time()
            for _ in range(calls):
                exes[i].run("main", *args)
            samples[i].append((time.thread_time() - start) / calls)
    ratios = [d / t for d, t in zip(*samples, strict=True)]
    print(
        f"{os.path.basename(model)} {','.join(targets or ['host'])}: default "
        f"{np.median(samples[0]) * 1e3:.3f} ms, tuned {np.median(samples[1]) * 1e3:.3f} ms, "
        f"speed-up {np.median(ratios):.3f}x (faster in {sum(x > 1 for x in ratios)}/{rounds} "
        f"rounds), max rel. difference {error:.1e}, load {load:.1f}-{os.getloadavg()[0]:.1f}",
        flush=True,
    )


def rate(seconds: float, ray_cpus: int | None, threads: int) -> dict[str, float]:
    """Trials, builds and measurements per minute of a fresh search of the MLP."""
    from lamina.tuning.kernels import load_model, model_kernels
    from lamina.tuning.measure import LocalMeasurer
    from lamina.tuning.search import Tuner

    kernels = model_kernels(load_model(MLP))
    if ray_cpus:
        import ray

        from lamina.tuning.ray_cluster import RayMeasurer

        ray.init(
            num_cpus=ray_cpus,
            include_dashboard=False,
            _node_ip_address="127.0.0.1",
            log_to_driver=False,
            logging_level=logging.ERROR,
        )
        measurer = RayMeasurer("auto", threads)
    else:
        measurer = LocalMeasurer(threads)
    try:
        tuner = Tuner(kernels, measurer)
        tuner.measure_defaults()  # outside the timed part (it starts the build processes)
        start = time.perf_counter()
        builds, measurements = tuner.builds, tuner.measurements
        tuner.tune(seconds)
        minutes = (time.perf_counter() - start) / 60
        trials = sum(s.trials for s in tuner.searches)
    finally:
        measurer.close()
        if ray_cpus:
            ray.shutdown()
    return {
        "trials/min": trials / minutes,
        "builds/min": (tuner.builds - builds) / minutes,
        "measurements/min": (tuner.measurements - measurements) / minutes,
    }


def rates(seconds: float, ray_cpus: int, threads: int, repeat: int) -> None:
    """Local and Ray searches alternated `repeat` times; the medians and their ratio."""
    import statistics

    runs: dict[str, list[dict[str, float]]] = {"local": [], "ray": []}
    for _ in range(repeat):
        for name, cpus in (("local", None), ("ray", ray_cpus)):
            got = rate(seconds, cpus, threads)
            runs[name].append(got)
            shown = {k: round(v, 1) for k, v in got.items()}
            print(f"{name}: {shown}  load {os.getloadavg()[0]:.1f}", flush=True)
    medians = {
        name: {k: statistics.median(r[k] for r in got) for k in got[0]}
        for name, got in runs.items()
    }
    for name, got in medians.items():
        label = name if name == "local" else f"ray ({ray_cpus} CPUs)"
        print(f"median {label}:", {k: round(v, 1) for k, v in got.items()})
    for key in ("measurements/min", "trials/min"):
        print(f"ray / local {key}: {medians['ray'][key] / medians['local'][key]:.2f}x")


def graph_only(
    model: str, records: str, targets: list[str] | None, budget: float, per_conv: bool
) -> None:
    """The graph-level search of `lamina-tune` alone (tuning/graph_search.py) for `budget`
    seconds, one thread; its model record (even when the defaults won) is written. With
    `per_conv`, only the per-convolution candidates (no model-wide knob)."""
    from lamina.passes.apply_model_records import model_key
    from lamina.target.tuning_records import host_identity, write_records
    from lamina.tuning import graph_search
    from lamina.tuning.graph_search import GraphSearch, search_graph

    if per_conv:
        graph_search.GRAPH_CHOICES.clear()
    from lamina.tuning.kernels import load_model
    from lamina.tuning.measure import call_clock

    key = model_key(load_model(model, targets, lower=False))
    search = GraphSearch(model, key, targets, clock=call_clock(1))
    start = time.perf_counter()

    def note(s: GraphSearch) -> None:
        ratios = ", ".join(f"{k}: {v:.3f}x" for k, v in s.ratios.items())
        print(f"{time.perf_counter() - start:6.0f} s, trials {s.trials}; {ratios}", flush=True)

    search_graph(search, host_identity(), start + budget, note)
    best = sorted(search.ratios.items(), key=lambda kv: -kv[1])[:6]
    print("best: " + "; ".join(f"{k}: {v:.3f}x" for k, v in best))
    print(f"kept: {search.knobs or 'the defaults'}; invalid: {search.invalid}")
    write_records(records, [search.record(host_identity())])


def main() -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--budget", type=float, default=0.0, help="tune the MLP this long first")
    p.add_argument("--records", help="records file (default: a temporary one)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rate", type=float, help="measure the search's rate for this many seconds")
    p.add_argument("--ray-cpus", type=int, default=2, help="CPUs of the local Ray instance")
    p.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="local and Ray runs alternated; the MLP's comparison repeated",
    )
    p.add_argument("--ab", metavar="MODEL", help="time MODEL without and with --records")
    p.add_argument("--target", action="append", help="targets of --ab (e.g. 'cpu{isa=avx2}')")
    p.add_argument("--rounds", type=int, default=41, help="interleaved rounds of --ab")
    p.add_argument("--graph", metavar="MODEL", help="only the graph-level search of MODEL")
    p.add_argument(
        "--per-conv", action="store_true", help="--graph: the per-convolution candidates only"
    )
    args = p.parse_args()
    os.environ["LAMINA_NUM_THREADS"] = str(args.threads)
    print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    if args.graph:
        if not args.records:
            sys.exit("--graph needs --records")
        graph_only(args.graph, args.records, args.target, args.budget, args.per_conv)
        return
    if args.ab:
        ab(args.ab, args.records, args.target, args.rounds)
        return
    if args.rate:
        rates(args.rate, args.ray_cpus, args.threads, args.repeat)
        print(f"load average: {os.getloadavg()[0]:.1f}")
        return
    records = args.records or os.path.join(tempfile.mkdtemp(), "mlp.jsonl")
    if args.budget > 0:
        from lamina.tuning.tune import tune

        tune(MLP, records, args.budget, threads=args.threads, measure_model=False)
    if not os.path.exists(records):
        sys.exit(f"no records at {records}: give --budget")
    for _ in range(args.repeat):  # the same records timed again: a repeat, not a new tune
        times = compare(records, args.threads)
        for name, seconds in times.items():
            print(f"{name:12} {seconds * 1e3:8.3f} ms")
        print(f"tuned / default: {times['tuned'] / times['default']:.2f}")
        print(f"tuned / onnxruntime: {times['tuned'] / times['onnxruntime']:.2f}", flush=True)
    print(f"load average: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
