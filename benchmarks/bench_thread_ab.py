"""Same-process A/B of targets at one and two threads: which build scales better.

    python benchmarks/bench_thread_ab.py --models shufflenet_v2_x1_0,densenet121 \\
        --targets 'cpu,cpu{parallel_rows_first=1}' --rounds 9 \\
        --lock /tmp/measure.lock --rt-priority 20

Compiles every (network, target) build first, outside the lock, then -- holding
`--lock` (flock) and at real-time priority for every thread of the process, the
call team's worker included, if asked -- times each build at one and two threads
in interleaved rounds (the builds' order reversed every other round; `--runs`
calls per build and thread count, their median per round). Prints, per network,
each build's medians, its speed-up from one to two threads, and each build's time
over the first build's (medians over the rounds of the same-round ratios), and
the rounds in which other processes or the hypervisor took more than 10 % of a
core (`/proc/stat`, episode_probe.MachineCounters) -- left out of the medians
unless fewer than three rounds remain. Checks that every build's output equals
the first build's within 1e-5 (relative to the largest output).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_models import export, input_size  # noqa: E402
from episode_probe import OTHERS_LIMIT, MachineCounters, measuring  # noqa: E402


def _geomean(values: list[float]) -> float:
    return float(np.exp(np.mean(np.log(values)))) if values else float("nan")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="shufflenet_v2_x1_0")
    parser.add_argument("--targets", default="cpu", help="comma-separated, top level only")
    parser.add_argument("--threads", type=int, default=2, help="the most threads (against one)")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--runs", type=int, default=20, help="calls per build and round")
    parser.add_argument("--lock", default=None, help="a file to flock while timing")
    parser.add_argument("--rt-priority", type=int, default=0, help="SCHED_RR while timing")
    parser.add_argument(
        "--export-dir", default=str(Path.home() / ".cache" / "lamina-bench"), type=Path
    )
    args = parser.parse_args(argv)
    targets = _split_targets(args.targets)

    os.environ["LAMINA_CACHE"] = "0"
    import onnx

    import lamina
    from lamina.backends.codegen import set_num_threads
    from lamina.frontends.onnx import import_model

    top = args.threads
    builds = {}
    inputs = {}
    for name in args.models.split(","):
        model = onnx.load(str(export(name, args.export_dir)))
        size = input_size(name)
        inputs[name] = np.random.default_rng(0).standard_normal((1, 3, size, size))
        inputs[name] = inputs[name].astype(np.float32)
        for target in targets:
            start = time.perf_counter()
            builds[name, target] = lamina.compile(import_model(model).module, targets=[target])
            print(f"{name} {target}: compiled in {time.perf_counter() - start:.1f} s", flush=True)
    set_num_threads(top)
    for (name, target), exe in builds.items():
        first = builds[name, targets[0]].run("main", inputs[name])
        got = exe.run("main", inputs[name])
        error = float(np.abs(got - first).max() / (np.abs(first).max() or 1.0))
        if error > 1e-5:
            print(f"  {name} {target}: output differs from {targets[0]}'s by {error:.1e}!")

    rows = []
    with measuring(args.lock, args.rt_priority, every_thread=True):
        for name in args.models.split(","):
            x = inputs[name]
            times = {(t, n): [] for t in targets for n in (1, top)}
            others: list[float] = []
            for r in range(args.rounds):
                order = targets if r % 2 == 0 else targets[::-1]
                start = MachineCounters.read()
                for threads in (1, top):
                    set_num_threads(threads)
                    for target in order:
                        exe = builds[name, target]
                        exe.run("main", x)
                        calls = []
                        for _ in range(args.runs):
                            t0 = time.perf_counter()
                            exe.run("main", x)
                            calls.append(time.perf_counter() - t0)
                        times[target, threads].append(1e3 * float(np.median(calls)))
                others.append(MachineCounters.read().others_since(start))
            busy = [i for i, share in enumerate(others) if share > OTHERS_LIMIT]
            kept = [i for i in range(args.rounds) if i not in busy]
            if len(kept) < 3:
                kept = list(range(args.rounds))
            med = {k: float(np.median([v[i] for i in kept])) for k, v in times.items()}
            base = targets[0]
            print(
                f"{name}: {len(busy)} of {args.rounds} rounds busy (others > "
                f"{OTHERS_LIMIT:.0%} of a core; median {np.median(others):.2f} cores)"
            )
            for target in targets:
                one, two = med[target, 1], med[target, top]
                ratio = {
                    n: float(np.median([times[target, n][i] / times[base, n][i] for i in kept]))
                    for n in (1, top)
                }
                speedups = [times[target, 1][i] / times[target, top][i] for i in kept]
                rows.append((name, target, one / two, ratio[1], ratio[top]))
                print(
                    f"  {target:48s} 1t {one:7.3f} ms  {top}t {two:7.3f} ms  speed-up "
                    f"{one / two:.3f} (rounds {min(speedups):.2f}-{max(speedups):.2f})  "
                    f"/{base}: 1t {ratio[1]:.3f} {top}t {ratio[top]:.3f}",
                    flush=True,
                )
    print("geomean over the networks:")
    for target in targets:
        mine = [r for r in rows if r[1] == target]
        print(
            f"  {target:48s} speed-up {_geomean([r[2] for r in mine]):.3f}  "
            f"/{targets[0]}: 1t {_geomean([r[3] for r in mine]):.3f} "
            f"{top}t {_geomean([r[4] for r in mine]):.3f}"
        )
    return 0


def _split_targets(text: str) -> list[str]:
    """Split at the commas outside braces (`cpu{a=1,b=2},cpu`)."""
    parts, depth, current = [], 0, ""
    for ch in text:
        depth += ch == "{"
        depth -= ch == "}"
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    return [p.strip() for p in parts if p.strip()]


if __name__ == "__main__":
    raise SystemExit(main())
