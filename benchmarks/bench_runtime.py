"""The runtime-only path: artifact load time in a new process, and `run()` from two threads.

    python benchmarks/bench_runtime.py [--models mlp,resnet50] [--rounds 5] [--seconds 3]
                                       [--work-dir DIR] [--json out.json]

For each model (`mlp`: examples/mlp.mlir; a torchvision name such as
`resnet50`: exported to ONNX as benchmarks/bench_models.py does, batch 1):

- the artifact is written once (`lamina.compile(...).save(DIR)`);
- load time: a new Python process imports NumPy and `lamina.runtime` and
  calls `load(DIR)`; the time from before the imports to the loaded
  executable is measured inside the process (`--rounds` processes, median
  and min), and its two parts: the imports, and `load()` (checksums,
  dlopen, mapping the weights), and the CPU time of it all (less distorted
  than wall time on a loaded machine); the page cache is warm (the files were
  just written or read);
- threads: in a new process with `LAMINA_NUM_THREADS=1` (one thread per call),
  requests per second of one thread calling `run()` in a loop, then of two
  threads at once, for `--seconds` each; the ratio shows whether calls run in
  parallel (the GIL is released during the native call; 2 on two idle cores).

The machine's load average is printed before and after: on a shared machine
the numbers are only as good as the cores that were free.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))

LOAD = """
import time
start, cpu = time.perf_counter(), time.process_time()
import numpy
import lamina.runtime.artifact
imported = time.perf_counter()
exe = lamina.runtime.load({path!r})
done = time.perf_counter()
print(done - start, imported - start, done - imported, time.process_time() - cpu)
"""

THREADS = """
import threading, time
import numpy as np
import lamina.runtime
exe = lamina.runtime.load({path!r})
rng = np.random.default_rng(0)
feed = [(rng.standard_normal(i.shape) * 0.1).astype(i.dtype) for i in exe.get_inputs()]
expected = exe.run("main", *feed)

def rate(threads, seconds):
    counts = [0] * threads
    stop = time.perf_counter() + seconds
    def loop(t):
        while time.perf_counter() < stop:
            y = exe.run("main", *feed)
            counts[t] += 1
        assert np.array_equal(y, expected)
    workers = [threading.Thread(target=loop, args=(t,)) for t in range(threads)]
    start = time.perf_counter()
    for w in workers: w.start()
    for w in workers: w.join()
    return sum(counts) / (time.perf_counter() - start)

rate(1, min(0.5, {seconds}))  # warm-up
one = rate(1, {seconds})
two = rate(2, {seconds})
print(one, two)
"""


def artifact(name: str, work: Path) -> Path:
    """The artifact directory of model `name`, written on first use."""
    import lamina

    path = work / f"{name}.lamina"
    if (path / "manifest.json").exists():
        return path
    if name == "mlp":
        source = str(ROOT / "examples" / "mlp.mlir")
    else:
        from bench_models import export

        source = str(export(name, work))
    lamina.compile(source).save(path)
    return path


def _python(script: str, env: dict[str, str] | None = None) -> list[float]:
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=600,
        check=True,
    )
    return [float(v) for v in out.stdout.split()]


def measure(name: str, args: argparse.Namespace) -> dict[str, object]:
    path = artifact(name, args.work_dir)
    size = sum(p.stat().st_size for p in path.iterdir())
    loads = [_python(LOAD.format(path=str(path))) for _ in range(args.rounds)]
    totals, imports, alone, cpu = ([row[i] for row in loads] for i in range(4))
    one, two = _python(
        THREADS.format(path=str(path), seconds=args.seconds), {"LAMINA_NUM_THREADS": "1"}
    )
    return {
        "model": name,
        "artifact_mb": round(size / 1e6, 1),
        "load_s_median": round(statistics.median(totals), 4),
        "load_s_min": round(min(totals), 4),
        "imports_s_median": round(statistics.median(imports), 4),
        "load_call_s_median": round(statistics.median(alone), 4),
        "load_cpu_s_median": round(statistics.median(cpu), 4),
        "rps_1_thread": round(one, 1),
        "rps_2_threads": round(two, 1),
        "speedup_2_threads": round(two / one, 2),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--models", default="mlp,resnet50")
    p.add_argument("--rounds", type=int, default=5, help="new processes per load measurement")
    p.add_argument("--seconds", type=float, default=3.0, help="per throughput measurement")
    p.add_argument("--work-dir", type=Path, default=Path.home() / ".cache" / "lamina-bench")
    p.add_argument("--json", help="write the rows to this file")
    args = p.parse_args(argv)
    args.work_dir.mkdir(parents=True, exist_ok=True)
    print(f"cores: {os.cpu_count()}, load average before: {os.getloadavg()}")
    rows = [measure(name, args) for name in args.models.split(",")]
    print(f"load average after: {os.getloadavg()}")
    for row in rows:
        print("  ".join(f"{k}={v}" for k, v in row.items()))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
