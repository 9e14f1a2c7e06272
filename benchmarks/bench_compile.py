"""Compile speed and call overhead: scaling curves, cold vs cached compiles, run() vs onnxruntime.

    python benchmarks/bench_compile.py                 # everything, CSV to bench_compile.csv
    python benchmarks/bench_compile.py --quick         # small sizes (a smoke run)
    python benchmarks/bench_compile.py --only overhead --csv out.csv

Three parts, printed and written to one CSV (columns: part, case, size,
metric, value, unit):

* `scaling`: compile time of a chain of N `graph.call` functions, a chain of
  N element-wise ops, and N conv2d layers, each at several N in one process
  (after a warm-up compile, disk cache off), with the ratio to the smallest
  size: linear compilation means 10x the program takes about 10x the time;
* `cache`: a model compiled cold, then again in a *new* process with the
  disk cache warm (what `lamina-run` on an unchanged model costs), timing
  `lamina.compile` and the whole process;
* `overhead`: `Executable.run` on a 4-element add against onnxruntime's
  `InferenceSession.run` on the same graph (if `onnxruntime` and `onnx`
  are installed: `pip install -e '.[bench]'`), interleaved rounds, median;
* `networks` (only with `--only networks`; needs the `torch` extra):
  torchvision's networks exported to ONNX (benchmarks/bench_models.py),
  each `lamina.compile("model.onnx")` in a new process: cold (empty cache;
  `--rounds N`: the medians of N, with the CPU time of the compile's own process
  and of its lowering process), cached, and resnet34 after resnet18 in one cache (their shared kernels
  come from disk) against resnet34 cold; peak memory of the cold compile;
  and the 2-layer transformer encoder of examples/onnx_models.py.

Timings on a shared machine vary: compare ratios measured in the same run.
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import lamina
from lamina.runtime.env import env_path

sys.path.insert(0, str(Path(__file__).parent))
import peers  # noqa: E402
from peers import _t  # noqa: E402  (one tensor-type helper for every benchmark)


def call_chain(n: int, width: int = 16) -> str:
    """`@main` calls `@f0` ... `@f{n-1}` in sequence; each is an add and a relu."""
    ty = _t((width,))
    funcs = [
        f"graph.func @f{i}(%x: {ty}) -> {ty} {{\n"
        f"  %y = graph.add %x, %x : ({ty}, {ty}) -> {ty}\n"
        f"  %z = graph.relu %y : ({ty}) -> {ty}\n"
        f"  graph.return %z : {ty}\n}}"
        for i in range(n)
    ]
    body, current = [], "%x"
    for i in range(n):
        body.append(f"  %v{i} = graph.call @f{i}({current}) : ({ty}) -> {ty}")
        current = f"%v{i}"
    main = f"graph.func @main(%x: {ty}) -> {ty} {{\n" + "\n".join(body)
    return "\n".join([*funcs, main + f"\n  graph.return {current} : {ty}\n}}\n"])


def op_chain(n: int, width: int = 16) -> str:
    """One `@main` of n element-wise ops, alternating add (of the input) and relu."""
    ty = _t((width,))
    body, current = [], "%x"
    for i in range(n):
        if i % 2 == 0:
            body.append(f"  %v{i} = graph.add {current}, %x : ({ty}, {ty}) -> {ty}")
        else:
            body.append(f"  %v{i} = graph.relu {current} : ({ty}) -> {ty}")
        current = f"%v{i}"
    return (
        f"graph.func @main(%x: {ty}) -> {ty} {{\n"
        + "\n".join(body)
        + f"\n  graph.return {current} : {ty}\n}}\n"
    )


def conv_chain(n: int, channels: int = 4, hw: int = 8) -> str:
    """n 3x3 'same' conv2d layers sharing one weight tensor."""
    data, weight = _t((1, channels, hw, hw)), _t((channels, channels, 3, 3))
    body, current = [], "%x"
    for i in range(n):
        body.append(
            f"  %v{i} = graph.conv2d {current}, %w {{padding = array<i64: 1, 1, 1, 1>}}"
            f" : ({data}, {weight}) -> {data}"
        )
        current = f"%v{i}"
    return (
        f"graph.func @main(%x: {data}, %w: {weight}) -> {data} {{\n"
        + "\n".join(body)
        + f"\n  graph.return {current} : {data}\n}}\n"
    )


CHAINS = {"call-chain": call_chain, "op-chain": op_chain, "conv-layers": conv_chain}


def compile_seconds(text: str) -> float:
    start = time.perf_counter()
    lamina.compile(text, cache=False)
    return time.perf_counter() - start


class Results:
    def __init__(self) -> None:
        self.rows: list[tuple[str, str, int, str, float, str]] = []

    def add(self, part: str, case: str, size: int, metric: str, value: float, unit: str):
        self.rows.append((part, case, size, metric, value, unit))

    def write(self, path: Path) -> None:
        with path.open("w", newline="") as out:
            writer = csv.writer(out)
            writer.writerow(["part", "case", "size", "metric", "value", "unit"])
            writer.writerows(self.rows)


def bench_scaling(results: Results, quick: bool) -> None:
    sizes = {
        "call-chain": [10, 100] if quick else [50, 100, 300, 1000],
        "op-chain": [20, 200] if quick else [200, 600, 2000],
        "conv-layers": [10, 100] if quick else [50, 100, 200, 400, 800],
    }
    compile_seconds(op_chain(4))  # warm-up: imports, LLVM start-up
    print("scaling (seconds; ratio = time / time at the smallest size)")
    for case, generator in CHAINS.items():
        base_n, base_t = None, None
        for n in sizes[case]:
            seconds = compile_seconds(generator(n))
            base_n, base_t = base_n or n, base_t or seconds
            ratio = seconds / base_t
            print(
                f"  {case:12} n={n:5}  {seconds:7.2f} s   {n / base_n:5.0f}x size  {ratio:6.1f}x time"
            )
            results.add("scaling", case, n, "compile", seconds, "s")
            results.add("scaling", case, n, "ratio", ratio, "x")


_CACHED_SCRIPT = """
import resource, sys, time
start = time.perf_counter()
import lamina
source = sys.argv[1]
exe = lamina.compile(source if source.endswith(".onnx") else open(source).read())
seconds = time.perf_counter() - start
if "lamina.backends.compile_worker" in sys.modules:  # not imported by a cache hit
    sys.modules["lamina.backends.compile_worker"].shutdown()  # reaped: in RUSAGE_CHILDREN
own, child = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
own_cpu = own.ru_utime + own.ru_stime
cpu = own_cpu + child.ru_utime + child.ru_stime
# the peak of this process's own memory: ru_maxrss would keep the peak of the parent that
# forked it (Linux keeps it across exec: a benchmark that imported torch read 1159 MiB)
hwm = next(l for l in open("/proc/self/status") if l.startswith("VmHWM:")).split()[1]
print(exe.cache_hit, seconds, int(hwm) / 1024, child.ru_maxrss / 1024, cpu, own_cpu)
"""


def bench_cache(results: Results, quick: bool) -> None:
    root = Path(__file__).resolve().parent.parent
    models = {
        "mlp": (root / "examples" / "mlp.mlir").read_text(),
        "cnn": (root / "examples" / "cnn.mlir").read_text(),
    }
    if not quick:
        models["call-chain-300"] = call_chain(300)
    print("cache (each compile in a new process: the first a miss, then hits)")
    with tempfile.TemporaryDirectory(prefix="lamina-bench-cache-") as folder:
        env = {**os.environ, "LAMINA_CACHE_DIR": folder}
        env.pop("LAMINA_CACHE", None)
        for name, text in models.items():
            path = Path(folder) / f"{name}.mlir"
            path.write_text(text)
            cold = _run_cached_script(path, env)  # a miss: compiles and stores
            warm = [_run_cached_script(path, env) for _ in range(3)]
            assert not cold[0] and all(hit for hit, _, _ in warm), "expected a miss, then hits"
            compile_s = statistics.median(w[1] for w in warm)
            process_s = statistics.median(w[2] for w in warm)
            print(
                f"  {name:15} cold {cold[1]:6.2f} s   cached: compile() {compile_s * 1e3:7.1f} ms,"
                f" whole process {process_s:5.2f} s"
            )
            results.add("cache", name, 0, "cold_compile", cold[1], "s")
            results.add("cache", name, 0, "cached_compile", compile_s, "s")
            results.add("cache", name, 0, "cached_process", process_s, "s")


def _run_cached_script(path: Path, env: dict[str, str]) -> tuple[bool, float, float]:
    """(hit?, seconds in import + compile, seconds for the whole process)."""
    hit, seconds, process, *_ = _run_compile_process(path, env)
    return hit, seconds, process


def _run_compile_process(
    path: Path, env: dict[str, str]
) -> tuple[bool, float, float, float, float, float, float]:
    """(hit?, seconds in import + compile, seconds for the whole process, peak MiB, the
    lowering process's peak MiB, CPU seconds of both, of the compile's own process: on a
    busy machine the CPU time is what compares)."""
    env = dict(env)
    if env.pop("PYTHONDONTWRITEBYTECODE", None):  # measure as installed: compiled bytecode
        env.setdefault("PYTHONPYCACHEPREFIX", str(Path(tempfile.gettempdir()) / "lamina-pyc"))
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", _CACHED_SCRIPT, str(path)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    hit, seconds, peak, child_peak, cpu, own_cpu = out.stdout.split()
    process = time.perf_counter() - start
    return (
        hit == "True",
        float(seconds),
        process,
        float(peak),
        float(child_peak),
        float(cpu),
        float(own_cpu),
    )


NETWORK_ROUNDS = 1
"""Cold compiles per network (`--rounds`); the table shows their medians."""

NETWORKS = (peers.NETWORKS[0], "resnet34", *peers.NETWORKS[1:])
"""The classification networks whose compile time has a goal (resnet34 too: the
shared-kernel compile after resnet18)."""


def _transformer_encoder(folder: Path) -> Path:
    """examples/onnx_models.py's transformer encoder as an .onnx file in `folder`."""
    import onnx

    sys.path.insert(0, str(Path(__file__).parent.parent / "examples"))
    import onnx_models

    path = folder / "transformer_encoder.onnx"
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        onnx.save(onnx_models.transformer_encoder(), str(path))
    return path


def bench_networks(results: Results, quick: bool) -> None:
    import bench_models  # the torchvision exports (torch extra)

    names = ("squeezenet1_1",) if quick else NETWORKS
    folder = Path(env_path("LAMINA_BENCH_EXPORTS") or Path.home() / ".cache" / "lamina-bench")
    paths = {name: bench_models.export(name, folder) for name in names}
    if not quick:  # the 2-layer transformer encoder of the tests (its goal: 1.5 s)
        paths["transformer_encoder"] = _transformer_encoder(folder)
    print("networks (lamina.compile of the .onnx file, each in a new process)")
    with tempfile.TemporaryDirectory(prefix="lamina-bench-networks-") as caches:
        for name, path in paths.items():
            env = {**os.environ, "LAMINA_CACHE_DIR": f"{caches}/{name}"}
            env.pop("LAMINA_CACHE", None)
            runs = []  # cold compiles, each in an empty cache of its own
            for n in range(NETWORK_ROUNDS):
                env["LAMINA_CACHE_DIR"] = f"{caches}/{name}-{n}"
                runs.append(_run_compile_process(path, env))
            hit = any(run[0] for run in runs)
            cold, _, peak, child_peak, cpu, own_cpu = (
                statistics.median(run[i] for run in runs) for i in range(1, 7)
            )
            again, cached, *_ = _run_compile_process(path, env)
            assert not hit and again, "expected a miss, then a hit"
            print(
                f"  {name:19} cold {cold:6.2f} s (CPU {cpu:5.2f} s = {own_cpu:5.2f} +"
                f" {cpu - own_cpu:5.2f} s, peak {peak:5.0f} MiB,"
                f" lowering process {child_peak:4.0f} MiB)   cached {cached:5.2f} s"
            )
            results.add("networks", name, 0, "cold_compile", cold, "s")
            results.add("networks", name, 0, "cold_cpu", cpu, "s")
            results.add("networks", name, 0, "cold_cpu_compile_process", own_cpu, "s")
            results.add("networks", name, 0, "cold_peak_memory", peak, "MiB")
            results.add("networks", name, 0, "cold_child_peak_memory", child_peak, "MiB")
            results.add("networks", name, 0, "cached_compile", cached, "s")
        if {"resnet18", "resnet34"} <= set(paths):
            env = {**os.environ, "LAMINA_CACHE_DIR": f"{caches}/resnet18-0"}  # resnet18's kernels
            env.pop("LAMINA_CACHE", None)
            _, shared, _, _, _, cpu, _ = _run_compile_process(paths["resnet34"], env)
            row = {(r[1], r[3]): r[4] for r in results.rows}
            cold, cold_cpu = row["resnet34", "cold_compile"], row["resnet34", "cold_cpu"]
            print(
                f"  resnet34 after resnet18: {shared:.2f} s ({100 * shared / cold:.0f} % of cold),"
                f" CPU {cpu:.2f} s ({100 * cpu / cold_cpu:.0f} % of cold)"
            )
            results.add("networks", "resnet34-after-resnet18", 0, "compile", shared, "s")
            results.add("networks", "resnet34-after-resnet18", 0, "cpu", cpu, "s")


ADD4 = """\
graph.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %c = graph.add %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  graph.return %c : tensor<4xf32>
}
"""


def _onnx_add4():
    """An onnxruntime session computing the same 4-element add, or None if not installed."""
    try:
        import onnx
        import onnxruntime
        from onnx import TensorProto, helper
    except ImportError:
        return None
    spec = [4]
    graph = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["c"])],
        "add4",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, spec) for n in "ab"],
        [helper.make_tensor_value_info("c", TensorProto.FLOAT, spec)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    session = onnxruntime.InferenceSession(
        onnx._serialize(model) if hasattr(onnx, "_serialize") else model.SerializeToString(),
        options,
        providers=["CPUExecutionProvider"],
    )
    return session


def _per_call(fn, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls


def bench_overhead(results: Results, quick: bool) -> None:
    exe = lamina.compile(ADD4, cache=False)
    a, b = np.arange(4, dtype=np.float32), np.ones(4, np.float32)
    out = np.empty(4, np.float32)
    session = _onnx_add4()
    feeds = {"a": a, "b": b}
    contenders = {
        "lamina run()": lambda: exe.run("main", a, b),
        "lamina run(out=)": lambda: exe.run("main", a, b, out=out),
    }
    if session is not None:
        np.testing.assert_array_equal(session.run(None, feeds)[0], exe.run("main", a, b))
        contenders["onnxruntime run()"] = lambda: session.run(None, feeds)
    else:
        print("  (onnxruntime/onnx not installed: pip install -e '.[bench]')")
    calls, rounds = (2000, 5) if quick else (20000, 15)
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(rounds):  # interleaved rounds: the machine's load hits every contender alike
        for name, fn in contenders.items():
            samples[name].append(_per_call(fn, calls))
    print("overhead (4-element add, median of interleaved rounds)")
    reference = statistics.median(samples["onnxruntime run()"]) if session is not None else None
    for name, values in samples.items():
        median = statistics.median(values)
        ratio = f"   {median / reference:5.2f}x onnxruntime" if reference else ""
        print(f"  {name:20} {median * 1e6:7.2f} us/call{ratio}")
        results.add("overhead", name, 4, "per_call", median, "s")
        if reference:
            results.add("overhead", name, 4, "ratio_to_onnxruntime", median / reference, "x")


PARTS = {
    "scaling": bench_scaling,
    "cache": bench_cache,
    "overhead": bench_overhead,
    "networks": bench_networks,
}
DEFAULT_PARTS = ("scaling", "cache", "overhead")
"""What runs without `--only` (the networks need torch and take minutes)."""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    parser.add_argument("--only", choices=sorted(PARTS), action="append", help="run only this part")
    parser.add_argument(
        "--csv", default="bench_compile.csv", help="CSV output (default: %(default)s; '' for none)"
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="networks: cold compiles per network, medians reported (default: %(default)s)",
    )
    args = parser.parse_args()
    global NETWORK_ROUNDS
    NETWORK_ROUNDS = max(1, args.rounds)
    results = Results()
    for name in args.only or DEFAULT_PARTS:
        PARTS[name](results, args.quick)
    if args.csv:
        results.write(Path(args.csv))
        print(f"wrote {args.csv}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
