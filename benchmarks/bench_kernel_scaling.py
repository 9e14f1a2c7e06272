"""Per kernel, one thread against two: which kernels of a network scale worst.

    python benchmarks/bench_kernel_scaling.py shufflenet_v2_x1_0 --rounds 7 --runs 20 \\
        --lock /tmp/measure.lock --rt-priority 20

Compiles a profiling build (`lamina.compile(..., profile=True)`, docs/performance.md
"Per-kernel profile") of a torchvision network (exported as bench_models.py does)
first, then -- holding `--lock` (flock) and at real-time priority for every
thread of the process, the call team's worker included, if asked -- times
`Executable.profile` at one and at the most threads in interleaved rounds.
Prints the call's speed-up, the call team's counters per call (regions, the
worker's joins and sleeps, chunks each side took, waits at closes, the two
threads' time in regions) and per kernel: calls, parallel regions and their
fewest iterations, the medians at one and two threads, the kernel's own
speed-up and what it lost against half its one-thread time, worst first.
The profiling build's clock reads make kernels slower than in the ordinary
build, so its speed-ups are a little better than bench_models.py's.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_models import export, input_size  # noqa: E402
from episode_probe import measuring  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model")
    parser.add_argument("--threads", type=int, default=2, help="the most threads (against one)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--runs", type=int, default=10, help="calls per profile")
    parser.add_argument("--target", default=None)
    parser.add_argument(
        "--versus",
        default=None,
        help="a second target, timed in the same rounds: per kernel, its two-thread time "
        "over the first build's",
    )
    parser.add_argument("--lock", default=None, help="a file to flock while timing")
    parser.add_argument("--rt-priority", type=int, default=0, help="SCHED_RR while timing")
    parser.add_argument(
        "--export-dir", default=str(Path.home() / ".cache" / "lamina-bench"), type=Path
    )
    args = parser.parse_args(argv)

    os.environ["LAMINA_CACHE"] = "0"
    import onnx

    import lamina
    from lamina.backends.codegen import set_num_threads
    from lamina.frontends.onnx import import_model
    from lamina.runtime import call_team

    model = onnx.load(str(export(args.model, args.export_dir)))
    size = input_size(args.model)
    x = np.random.default_rng(0).standard_normal((1, 3, size, size)).astype(np.float32)
    targets = [args.target] if args.target else None
    exe = lamina.compile(import_model(model).module, targets=targets, profile=True)
    other = None
    if args.versus:
        other = lamina.compile(import_model(model).module, targets=[args.versus], profile=True)
    top = args.threads
    set_num_threads(top)
    exe.run("main", x)  # the team's worker exists before the priority is set
    versus: dict[int, dict[str, list[float]]] = {1: defaultdict(list), top: defaultdict(list)}
    versus_wall: dict[int, list[float]] = {1: [], top: []}

    times: dict[int, dict[str, list[float]]] = {1: defaultdict(list), top: defaultdict(list)}
    wall: dict[int, list[float]] = {1: [], top: []}
    meta: dict[str, tuple[int, int, int]] = {}
    team: dict[str, list[int]] = defaultdict(list)
    with measuring(args.lock, args.rt_priority, every_thread=True):
        for _ in range(args.rounds):
            for threads in (1, top):
                set_num_threads(threads)
                before = call_team.stats()
                profile = exe.profile("main", x, runs=args.runs, warmup=2)
                after = call_team.stats()
                if threads == top:
                    for key in before:
                        team[key].append(after[key] - before[key])
                wall[threads].append(profile.wall_ms / profile.runs)
                for k in profile.kernels:
                    times[threads][k.symbol].append(k.total_ms / profile.runs)
                    meta[k.symbol] = (k.calls // profile.runs, k.regions, k.iterations)
                if other is not None:
                    profile = other.profile("main", x, runs=args.runs, warmup=2)
                    versus_wall[threads].append(profile.wall_ms / profile.runs)
                    for k in profile.kernels:
                        versus[threads][k.symbol].append(k.total_ms / profile.runs)

    med = {t: {k: float(np.median(v)) for k, v in times[t].items()} for t in times}
    one, many = float(np.median(wall[1])), float(np.median(wall[top]))
    print(f"{args.model}: 1t {one:.3f} ms, {top}t {many:.3f} ms, speed-up {one / many:.3f}")
    print("  per round:", " ".join(f"{a / b:.2f}" for a, b in zip(wall[1], wall[top], strict=True)))
    calls = args.runs + 2  # the counters include the warm-up calls
    rate = call_team.tick_rate()
    if rate and team:
        per = {k: float(np.median(v)) / calls for k, v in team.items()}
        ms = {k: per[k] / rate * 1e3 for k in per if k.endswith("_ticks")}
        print(
            f"  team per call: {per['regions']:.0f} regions, worker joined {per['joined']:.0f} "
            f"({per['join_ticks'] / rate * 1e6 / max(per['joined'], 1):.1f} us after the post), "
            f"slept {per['sleeps']:.1f} times; chunks caller {per['caller_chunks']:.0f} / worker "
            f"{per['worker_chunks']:.0f}; waits at closes {ms['close_ticks']:.3f} ms "
            f"({ms['close_few_ticks']:.3f} in regions of < 8 iterations); time in regions: "
            f"caller {ms['region_ticks']:.3f} ms + worker {ms['work_ticks']:.3f} ms against "
            f"{sum(med[1].values()):.3f} ms of kernels at one thread"
        )
    vmed = {t: {k: float(np.median(v)) for k, v in versus[t].items()} for t in versus}
    if other is not None:
        vone, vmany = float(np.median(versus_wall[1])), float(np.median(versus_wall[top]))
        ratio = [b / a for a, b in zip(wall[top], versus_wall[top], strict=True)]
        print(
            f"  {args.versus}: 1t {vone:.3f} ms, {top}t {vmany:.3f} ms, speed-up "
            f"{vone / vmany:.3f}; {top}t time over the first build's {np.median(ratio):.3f} "
            f"(median of the rounds)"
        )
    header = f"{'kernel':64s} {'calls':>5s} {'reg':>3s} {'iters':>5s} {'1t ms':>7s}"
    extra = f" {'vs 1t':>7s} {f'vs {top}t':>7s}" if other is not None else ""
    print(f"{header} {f'{top}t ms':>7s} {'x':>5s} {'lost ms':>7s}{extra}")
    lost = lambda k: med[top].get(k, 0.0) - med[1][k] / top  # noqa: E731
    for k in sorted(med[1], key=lambda k: -lost(k)):
        calls_k, regions, iterations = meta[k]
        a, b = med[1][k], med[top].get(k, float("nan"))
        tail = ""
        if other is not None:
            tail = f" {vmed[1].get(k, float('nan')):7.3f} {vmed[top].get(k, float('nan')):7.3f}"
        print(
            f"{k[:64]:64s} {calls_k:5d} {regions:3d} {iterations:5d} {a:7.3f} {b:7.3f} "
            f"{a / b if b else 0.0:5.2f} {lost(k):7.3f}{tail}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
