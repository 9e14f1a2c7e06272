"""Real networks: torchvision's classification models through ONNX, Lamina against onnxruntime.

    python benchmarks/bench_models.py [--models resnet18,mobilenet_v2,...] [--threads 1,2]
                                      [--rounds 9] [--isa avx2|avx512|host]
                                      [--target 'cpu{vector_bits=256}']
                                      [--profile] [--profile-ops] [--csv out.csv]
                                      [--plot out.png] [--alternate none|numpy|ort]
                                      [--scaling [--call-team]] [--clock wall|cpu]

Each model is torchvision's (random weights, eval mode, batch 1, 224×224; needs
the `torch` extra) exported to ONNX by PyTorch's TorchScript exporter (opset 17),
cached in `--export-dir` so later runs skip the export. For each model:

- compile time: `lamina.compile` of the imported module, cold (disk cache off);
- numerics: the largest difference to onnxruntime relative to its largest
  output (must stay within 1e-4);
- run time: medians of interleaved rounds (Lamina, onnxruntime, Lamina, …) at
  each thread count, and the ratio Lamina / onnxruntime (below 1: Lamina faster);
- with `--profile`: onnxruntime's own profile (`enable_profiling`) summed by op
  kind;
- with `--profile-ops`: a table per model of milliseconds by op kind (conv 1x1,
  depthwise, kxk; pools; elementwise; layout transforms; concat/shuffle;
  matmul), Lamina against onnxruntime. Lamina's split is sampled by Linux
  `perf` in a child process running the model saved as a shared library
  (whose kernels keep their symbols), scaled to the measured median;
  onnxruntime's is its own profiler's kernel time, summed by kind.

`--scaling` times Lamina alone at every `--threads` count in the same
interleaved rounds (1, 2, 1, 2, ...) and prints each model's same-run
speed-up; `--alternate numpy|ort` precedes every timed call with a NumPy
matmul or a run of the model in a user's onnxruntime session (onnxruntime's
defaults, whose workers spin after a run), on the same thread count.
`--call-team` adds each count above one with one thread team per call
(`LAMINA_CALL_TEAM=1`, docs/performance.md, Threads) to the same rounds
(`--team-spin 0,2000`: one mode per worker spin), and every mode's voluntary
context switches and CPU time per call. Between its rounds `--scaling` runs a
machine probe (`benchmarks/episode_probe.py`, `--no-probe` turns it off): a fixed
workload on one and two threads, and the CPU time other processes and the
hypervisor took during each round; rounds in the VM's slow episodes are left out
of the medians and reported (docs/performance.md, "Slow episodes of the machine").

`--clock cpu` times each call by the calling thread's CPU time
(`time.thread_time`) instead of the wall clock, one thread only (onnxruntime at
one thread runs on the calling thread too): on a machine shared with other
busy processes, the time a call waits for a core is left out. What the other
processes do to the caches is not, so expect a few percent of noise where the
wall clock gives tens (docs/performance.md, "Measuring on a busy machine").

Without `--scaling`, the FMA peak and the same probe are read between rounds
(`episode_probe.RoundWatch`): each row gives Lamina's and onnxruntime's % of
their own instruction set's peak (the model's Conv/Gemm/MatMul flops), the
`ratio per peak` when the two peaks differ (an AVX2 build against
onnxruntime's AVX-512 code), and the slow rounds left out. `--peers avx2`
pins NumPy's OpenBLAS to AVX2 (for `--alternate numpy`); `--scaling
--two-ended` adds the call team's other chunk order to the same rounds.

`--isa avx2` compiles for the target `'cpu{isa=avx2}'` (an AVX2 + FMA build,
which an AVX-512 host runs at the same FMA peak; `avx512`, `host` likewise);
`--target` passes any target (with options) to `lamina.compile`, e.g.
`'cpu{vector_bits=256}'`. The two exclude each other. Each row records the
ISA and target it was built for, and the thread count.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import re
import resource
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import onnx

import lamina
from lamina.frontends.onnx import import_model

sys.path.insert(0, str(Path(__file__).parent))
import bench  # noqa: E402
import episode_probe  # noqa: E402
import peers  # noqa: E402

MODELS = peers.NETWORKS
"""The default set: the networks the project's speed goals are stated on."""

MORE_MODELS = (
    "vit_b_16",
    "swin_t",
    "convnext_tiny",
    "regnet_y_400mf",
    "resnext50_32x4d",
    "mnasnet1_0",
    "alexnet",
    "inception_v3",
)
"""Other torchvision classifiers, checked from time to time (`--models`): attention over
197 tokens, exact gelu, LayerNorm, grouped convolutions, 11x11 and 299x299 inputs."""


def input_size(name: str) -> int:
    return 299 if name == "inception_v3" else 224


def export(name: str, directory: Path) -> Path:
    """`directory/name.onnx`, exported from torchvision on first use."""
    path = directory / f"{name}.onnx"
    if path.exists():
        return path
    try:
        import torch
        import torchvision
    except ImportError:
        raise SystemExit(
            "error: bench_models.py needs PyTorch (pip install -e '.[torch]')"
        ) from None
    import contextlib
    import io
    import warnings

    kwargs = {"aux_logits": False, "init_weights": True} if name == "googlenet" else {}
    model = getattr(torchvision.models, name)(weights=None, **kwargs).eval()
    example = torch.randn(1, 3, input_size(name), input_size(name))
    directory.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (example,), str(path), opset_version=17, dynamo=False,
                          input_names=["input"], output_names=["output"])  # fmt: skip
    return path


def ort_profile(model: bytes, x: np.ndarray, runs: int) -> dict[str, float]:
    """Milliseconds per run that onnxruntime spends in each op kind (its own profiler)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.enable_profiling = True
    with tempfile.TemporaryDirectory() as tmp:
        options.profile_file_prefix = os.path.join(tmp, "ort")
        session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        name = session.get_inputs()[0].name
        for _ in range(runs):
            session.run(None, {name: x})
        events = json.loads(Path(session.end_profiling()).read_text())
    by_kind: dict[str, float] = defaultdict(float)
    for event in events:
        if event.get("cat") == "Node" and event["name"].endswith("_kernel_time"):
            by_kind[event["args"]["op_name"]] += event["dur"] / 1000 / runs
    return dict(by_kind)


def bench_model(name: str, args: argparse.Namespace) -> list[dict]:
    path = export(name, Path(args.export_dir))
    model = onnx.load(str(path))
    size = input_size(name)
    x = np.random.default_rng(0).standard_normal((1, 3, size, size)).astype(np.float32)
    module = import_model(model).module
    os.environ["LAMINA_CACHE"] = "0"
    start = time.perf_counter()
    exe = lamina.compile(module, targets=[args.target] if args.target else None)
    compile_s = time.perf_counter() - start

    rows = []
    for threads in args.threads:
        bench.set_num_threads(threads)
        session = peers.ort_session(model.SerializeToString(), threads)
        feed = {session.get_inputs()[0].name: x}
        want = session.run(None, feed)[0]
        got = exe.run("main", x)
        error = float(np.abs(got - want).max() / (np.abs(want).max() or 1.0))  # ViT: zeros
        fns = [functools.partial(exe.run, "main", x), functools.partial(session.run, None, feed)]
        if args.alternate != "none":
            before = _alternate(args.alternate, threads, model, x)
            fns = [_after(before, fn, CLOCKS[args.clock]) for fn in fns]
        watch = args.watch
        lam, ort_t = bench._rounds(
            fns, args.rounds, clock=CLOCKS[args.clock], watch=watch, threads=threads
        )
        if args.alternate != "none":  # the calls' own times, less the warm-up calls
            every = 2 if watch is not None else 1  # a warm-up call after each probe
            lam, ort_t = [f.timed[1::every] for f in fns]  # pyright: ignore[reportAttributeAccessIssue]
        verdict = watch.verdict() if watch is not None else None
        kept = verdict.kept if verdict is not None else list(range(len(lam)))
        row = {
            "model": name,
            "target": args.target or "host",
            "threads": threads,
            "compile_s": round(compile_s, 2),
            "lamina_ms": round(1e3 * float(np.median([lam[i] for i in kept])), 3),
            "onnxruntime_ms": round(1e3 * float(np.median([ort_t[i] for i in kept])), 3),
            "error": f"{error:.1e}",
        }
        row["ratio"] = round(row["lamina_ms"] / row["onnxruntime_ms"], 2)
        extra = ""
        if verdict is not None:
            peak = verdict.gauge if verdict.gauge == verdict.gauge else args.gauge.start
            scale = args.gauge.scale["onnxruntime"]
            gflop = peers.onnx_flops(model) / 1e9
            row["gflop"] = round(gflop, 3)
            row["peak_gflops"] = round(peak, 1)
            row["lamina_pct_peak"] = round(100 * gflop / (row["lamina_ms"] * 1e-3) / (peak * threads), 1)  # fmt: skip
            row["ort_pct_peak"] = round(100 * gflop / (row["onnxruntime_ms"] * 1e-3) / (peak * scale * threads), 1)  # fmt: skip
            row["per_peak_ratio"] = round(row["ratio"] / scale, 2)
            row["slow_rounds"] = len(verdict.slow)
            row["kept_rounds"] = len(verdict.kept)
            extra = f"  % peak {row['lamina_pct_peak']:.0f}/{row['ort_pct_peak']:.0f}"
            if abs(scale - 1.0) > 0.1:  # the peers' FMA peaks differ (an AVX2 build)
                extra += f" (ratio per peak {row['per_peak_ratio']:.2f})"
            extra += f"  slow {len(verdict.slow)}/{len(lam)}"
            if verdict.slow and len(verdict.kept) == len(lam):
                extra += "!"
        rows.append(row)
        print(
            f"{name:20s} {threads}t  compile {compile_s:6.2f} s  lamina {row['lamina_ms']:8.2f} ms"
            f"  onnxruntime {row['onnxruntime_ms']:8.2f} ms  ratio {row['ratio']:.2f}{extra}"
            f"  error {error:.1e}{'  (> 1e-4!)' if error > 1e-4 else ''}",
            flush=True,
        )
        if verdict is not None and verdict.slow:
            print(f"{'':20s} {verdict.text}", flush=True)
    if args.profile:
        for kind, ms in sorted(ort_profile(model.SerializeToString(), x, 5).items(),
                               key=lambda kv: -kv[1]):  # fmt: skip
            print(f"    onnxruntime {kind:28s} {ms:8.3f} ms")
    if args.profile_ops:
        shares = lamina_profile_kinds(module, args.target, x, args.profile_seconds)
        ort_kinds = ort_profile_kinds(model.SerializeToString(), x, 10)
        print_op_profile(rows[0], shares, ort_kinds)
    return rows


def _alternate(kind: str, threads: int, model: onnx.ModelProto, x: np.ndarray):
    """What runs before every timed call: a NumPy matmul, or a user's own onnxruntime
    session of the model with onnxruntime's defaults (its workers spin after a run) or
    (`ort-nospin`) with `session.intra_op.allow_spinning` 0 (they never spin) or
    (`ort-stop`) with `session.force_spinning_stop` 1 (they stop spinning when a run
    ends)."""
    if kind == "numpy":
        return _numpy_matmul(threads)
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    if kind == "ort-nospin":  # workers never spin (docs/environment.md)
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if kind == "ort-stop":  # workers spin within a run, stop at its end (docs/environment.md)
        options.add_session_config_entry("session.force_spinning_stop", "1")
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    feed = {session.get_inputs()[0].name: x}
    return lambda: session.run(None, feed)


def bench_scaling(name: str, args: argparse.Namespace) -> dict:
    """Lamina's time at each thread count measured in the same interleaved rounds
    (1, 2, 1, 2, ...), each call after `--alternate`'s call: a same-run speed-up.

    The plain modes run the process's default (the call team, runtime/call_team.py,
    unless `LAMINA_CALL_TEAM=0`); with `--call-team` every count above one is also
    timed with one OpenMP region per kernel (`_regions`) and with the call team at
    each `--team-spin` (`_team<spin>`) in the same rounds. Each mode also records,
    per call, the process's voluntary context switches (a sleeping thread's
    futex wait: about two per parallel region with passive workers) and its CPU
    time (spinning shows there), which say what a two-thread time measured
    under load would be made of; a call-team mode prints where its calls went
    (`_team_breakdown`)."""
    from lamina.runtime import call_team

    model = onnx.load(str(export(name, Path(args.export_dir))))
    size = input_size(name)
    x = np.random.default_rng(0).standard_normal((1, 3, size, size)).astype(np.float32)
    exe = lamina.compile(import_model(model).module, targets=[args.target] if args.target else None)
    before = {
        t: _alternate(args.alternate, t, model, x) if args.alternate != "none" else None
        for t in args.threads
    }
    default_team = call_team.requested()
    default_spin = call_team.DEFAULT_SPIN
    default_sleep = call_team.DEFAULT_CLOSE_SLEEP
    default_solo = call_team.DEFAULT_SOLO_BELOW
    default_lost = call_team.DEFAULT_SOLO_LOST
    plain = (default_team, default_spin, default_sleep, default_solo, default_lost)
    modes: list[tuple[str, int, tuple[bool, int, bool, int, bool]]] = [
        (f"{t}t", t, plain) for t in args.threads
    ]
    if args.call_team:
        modes += [(f"{t}t_regions", t, (False, 0, False, 0, False)) for t in args.threads if t > 1]
        for spin in args.team_spin:
            modes += [(f"{t}t_team{spin}", t, (True, spin, default_sleep, default_solo, default_lost)) for t in args.threads if t > 1]  # fmt: skip
    if args.close_sleep:
        other = "yield" if default_sleep else "sleep"
        modes += [(f"{t}t_team{other}", t, (True, default_spin, not default_sleep, default_solo, default_lost)) for t in args.threads if t > 1]  # fmt: skip
    for percent in args.solo_below:
        modes += [(f"{t}t_teamsolo{percent}", t, (True, default_spin, default_sleep, percent, default_lost)) for t in args.threads if t > 1]  # fmt: skip
    if args.solo_lost:
        other = "shared" if default_lost else "lost"
        modes += [(f"{t}t_team{other}", t, (True, default_spin, default_sleep, default_solo, not default_lost)) for t in args.threads if t > 1]  # fmt: skip
    default_ends = call_team.two_ended()
    ends_of: dict[str, bool] = {}  # modes with the other chunk order (--two-ended)
    if args.two_ended:
        other = "front" if default_ends else "ends"
        for t in args.threads:
            if t > 1:
                modes.append((f"{t}t_team{other}", t, plain))
                ends_of[f"{t}t_team{other}"] = not default_ends
    times: dict[str, list[float]] = {label: [] for label, _, _ in modes}
    switches: dict[str, list[float]] = {label: [0, 0.0] for label, _, _ in modes}
    team: dict[str, dict[str, int]] = {label: {} for label, _, _ in modes}
    cpu_by: dict[str, list[float]] = {label: [0.0, 0.0, 0.0] for label, _, _ in modes}
    peer: dict[str, list[float]] = {label: [] for label, _, _ in modes}
    probe = episode_probe.EpisodeProbe() if args.probe else None
    readings: list[episode_probe.ProbeReading] = []  # reading i before timed round i
    others: list[float] = []  # cores' worth other processes took during timed round i
    for round_ in range(args.rounds + 1):  # the first round warms up
        if probe is not None and round_:
            readings.append(probe.measure())
        machine = episode_probe.MachineCounters.read()
        for label, threads, (on, spin, sleep, solo, lost) in modes:
            bench.set_num_threads(threads)
            call_team.set_call_team(on)
            call_team.set_spin(spin)
            call_team.set_close_sleep(sleep)
            call_team.set_solo_below(solo)
            call_team.set_solo_lost(lost)
            call_team.set_two_ended(ends_of.get(label, default_ends))
            if before[threads] is not None:
                peer_start = time.perf_counter()
                before[threads]()  # pyright: ignore[reportOptionalCall]
                if round_:
                    peer[label].append(time.perf_counter() - peer_start)
            tasks = _task_cpu() if args.thread_cpu else {}
            usage, cpu = resource.getrusage(resource.RUSAGE_SELF), time.process_time()
            counted = call_team.stats()
            start = time.perf_counter()
            exe.run("main", x)
            elapsed = time.perf_counter() - start
            if round_:
                times[label].append(elapsed)
                for key, value in call_team.stats().items():
                    team[label][key] = team[label].get(key, 0) + value - counted[key]
                switches[label][0] += resource.getrusage(resource.RUSAGE_SELF).ru_nvcsw
                switches[label][0] -= usage.ru_nvcsw
                switches[label][1] += time.process_time() - cpu
                if args.thread_cpu:
                    for i, ms in enumerate(_split_cpu(tasks, _task_cpu())):
                        cpu_by[label][i] += ms
        if round_:
            others.append(episode_probe.MachineCounters.read().others_since(machine))
    if probe is not None:
        readings.append(probe.measure())  # after the last round
    call_team.set_call_team(default_team)
    call_team.set_spin(default_spin)
    call_team.set_close_sleep(default_sleep)
    call_team.set_solo_below(default_solo)
    call_team.set_solo_lost(default_lost)
    call_team.set_two_ended(default_ends)
    row: dict = {"model": name, "alternate": args.alternate}
    kept = _probe_rounds(row, readings, others, args)
    for label, _, _ in modes:
        row[f"lamina_{label}_ms"] = round(
            1e3 * float(np.median([times[label][i] for i in kept])), 3
        )
        row[f"csw_{label}"] = round(switches[label][0] / args.rounds, 1)
        row[f"cpu_{label}_ms"] = round(1e3 * switches[label][1] / args.rounds, 3)
    lo, hi = min(args.threads), max(args.threads)
    row["speedup"] = round(row[f"lamina_{lo}t_ms"] / row[f"lamina_{hi}t_ms"], 2)
    row["all_rounds_speedup"] = round(
        float(np.median(times[f"{lo}t"])) / float(np.median(times[f"{hi}t"])), 2
    )
    gains = f"speed-up {row['speedup']:.2f}"
    if len(kept) < args.rounds:
        gains += f" (all rounds {row['all_rounds_speedup']:.2f})"
    for label, threads, _ in modes:
        if "_" in label and threads == hi:
            suffix = label.split("_", 1)[1]
            row[f"speedup_{suffix}"] = round(row[f"lamina_{lo}t_ms"] / row[f"lamina_{label}_ms"], 2)
            gains += f", {suffix} {row[f'speedup_{suffix}']:.2f}"
    cells = "  ".join(f"{label} {row[f'lamina_{label}_ms']:8.2f} ms" for label, _, _ in modes)
    if args.alternate != "none":
        for label, _, _ in modes:
            row[f"alternate_{label}_ms"] = round(1e3 * float(np.median(peer[label])), 3)
        cells += "  (" + args.alternate + " call before: " + ", ".join(
            f"{row[f'alternate_{label}_ms']:.2f}" for label, _, _ in modes) + " ms)"  # fmt: skip
    print(f"{name:20s} {cells}  {gains}", flush=True)
    if readings:
        print(f"{'':20s} {row['probe']}; others took {row['others_cores']:.2f} of a core "
              "(median round)", flush=True)  # fmt: skip
    counters = "  ".join(
        f"{label} {row[f'csw_{label}']:.0f} csw {row[f'cpu_{label}_ms']:.1f} cpu-ms"
        for label, _, _ in modes
    )
    print(f"{'':20s} per call: {counters}", flush=True)
    if args.thread_cpu:
        for label, _, _ in modes:
            mine, workers, others = (v / args.rounds for v in cpu_by[label])
            row[f"cpu_others_{label}_ms"] = round(others, 3)
            print(f"{'':20s} {label}: CPU ms per call: caller {mine:.2f}, team workers "
                  f"{workers:.2f}, other threads of the process {others:.2f} "
                  f"({others / max(1e3 * float(np.median(times[label])), 1e-9):.0%} "
                  "of the call's wall time)", flush=True)  # fmt: skip
    for label, _, _ in modes:
        if team[label].get("calls"):
            row |= _team_breakdown(label, team[label], args.rounds)
    return row


def _probe_rounds(
    row: dict, readings: list, others: list[float], args: argparse.Namespace
) -> list[int]:
    """The timed rounds whose medians count: those outside the machine's slow episodes
    that the probe between rounds or other processes' CPU time during a round showed
    (benchmarks/episode_probe.py), or all rounds without `--probe`. Records in `row` how
    many rounds were slow and what the probe saw."""
    if not readings:
        return list(range(args.rounds))
    busy = episode_probe.busy_rounds(others, args.probe_others)
    slow = episode_probe.slow_rounds(readings, args.probe_slack) | busy
    kept = episode_probe.kept_rounds(args.rounds, slow)
    row["probe_slow_rounds"] = len(slow)
    row["probe_kept_rounds"] = len(kept)
    row["others_cores"] = round(float(np.median(others)), 3)
    row["probe"] = episode_probe.describe(readings, slow, kept, args.rounds, busy)
    return kept


def _task_cpu() -> dict[int, int]:
    """CPU nanoseconds each thread of this process ran so far (schedstat)."""
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                out[int(tid)] = int(f.read().split()[0])
        except OSError:  # the thread ended
            pass
    return out


def _split_cpu(before: dict[int, int], after: dict[int, int]) -> tuple[float, float, float]:
    """CPU ms between two `_task_cpu` readings: the calling thread, the call team's
    workers, and every other thread (OpenBLAS's, onnxruntime's, libgomp's workers)."""
    import threading

    from lamina.runtime import call_team

    me, workers = threading.get_native_id(), set(call_team.worker_tids())
    split = [0.0, 0.0, 0.0]
    for tid, ns in after.items():
        which = 0 if tid == me else 1 if tid in workers else 2
        split[which] += (ns - before.get(tid, 0)) / 1e6
    return split[0], split[1], split[2]


def _team_breakdown(label: str, counts: dict[str, int], rounds: int) -> dict:
    """Print where a team mode's calls went (runtime/call_team.py `stats`): the caller's
    waits at regions' closes for a worker's last chunk (of them, in regions of fewer
    than 8 iterations), the worker's share of the chunks, its sleeps and its delay in
    joining a region; return them as columns."""
    from lamina.runtime import call_team

    call = max(counts["call_ticks"], 1)
    per_us = call_team.tick_rate() / 1e6
    cols = {
        f"close_wait_{label}": round(counts["close_ticks"] / call, 3),
        f"close_wait_few_{label}": round(counts["close_few_ticks"] / call, 3),
        f"worker_chunks_{label}": round(
            counts["worker_chunks"] / max(counts["worker_chunks"] + counts["caller_chunks"], 1), 3
        ),
        f"sleeps_{label}": round(counts["sleeps"] / rounds, 1),
        f"join_us_{label}": round(counts["join_ticks"] / per_us / max(counts["joined"], 1), 1),
        f"regions_{label}": round(counts["regions"] / rounds, 1),
    }
    print(
        f"{'':20s} {label}: waits at closes {cols[f'close_wait_{label}']:.1%} of the call "
        f"(regions of < 8 iterations {cols[f'close_wait_few_{label}']:.1%}), worker took "
        f"{cols[f'worker_chunks_{label}']:.0%} of the chunks, joined "
        f"{counts['joined'] / max(counts['regions'], 1):.0%} of {cols[f'regions_{label}']:.0f} "
        f"regions {cols[f'join_us_{label}']:.1f} us after the post, slept "
        f"{cols[f'sleeps_{label}']:.1f} times per call"
        + (
            f", ran alone {counts['solo_calls'] / counts['calls']:.0%} of the calls"
            if counts.get("solo_calls")
            else ""
        )
        + (
            f", the caller slept {counts['close_sleeps'] / rounds:.1f} times per call at closes"
            if counts.get("close_sleeps")
            else ""
        ),
        flush=True,
    )
    return cols


# ---------------------------------------------------------------------------
# --profile-ops: time by op kind, Lamina against onnxruntime
# ---------------------------------------------------------------------------
#
# Lamina's kernels are sampled with Linux `perf` in a child process that loads
# the model saved as a shared library (its kernels keep their symbols there);
# the symbols are mapped back to the kernels' names while the library is
# written, and each kernel's op kind is read from its signature in the
# lowering-phase IR. A local measurement for this benchmark only, not an API.

OP_KINDS = (
    "conv 1x1",
    "conv depthwise",
    "conv kxk",
    "pool",
    "elementwise",
    "layout transform",
    "concat/shuffle",
    "matmul",
    "other",
)

_MOVES = {"concat", "reshape", "transpose", "slice", "split", "flatten", "pad", "gather"}
_POOLS = {"max_pool2d", "avg_pool2d", "global_avg_pool2d", "reduce_mean", "reduce_sum"}


def conv_kind(weight: list[int]) -> str:
    """`conv 1x1`, `conv depthwise` or `conv kxk` from a convolution's weight
    shape: OIHW (`O x I/groups x kh x kw`) or blocked `OIHW{i}i{o}o`."""
    if len(weight) == 6:
        _, cb, kh, kw, ci, _ = weight
        inputs = cb * ci
    elif len(weight) == 4:
        _, inputs, kh, kw = weight
    else:
        return "conv kxk"  # Winograd's transformed weights
    if kh * kw == 1:
        return "conv 1x1"
    return "conv depthwise" if inputs == 1 else "conv kxk"


def lamina_kind(name: str, shapes: list[list[int]]) -> str:
    """The op kind of a Lamina kernel from its name (`te_fused_conv2d_add_...`)
    and its parameters' shapes: a convolution or matmul in a fused group decides."""
    words = name.removeprefix("te_").removeprefix("fused_")
    if words.startswith("layout_transform"):
        return "layout transform"
    ops = words.split("_")
    if "conv2d" in ops and len(shapes) > 1:
        return conv_kind(shapes[1])
    if "matmul" in ops:
        return "matmul"
    for kind, names in (("pool", _POOLS), ("concat/shuffle", _MOVES)):
        if any(words.startswith(n) for n in names):
            return kind
    return "elementwise"


_ORT_KINDS = {
    "MaxPool": "pool",
    "AveragePool": "pool",
    "GlobalAveragePool": "pool",
    "ReduceMean": "pool",
    "ReorderInput": "layout transform",
    "ReorderOutput": "layout transform",
    "Concat": "concat/shuffle",
    "Split": "concat/shuffle",
    "Reshape": "concat/shuffle",
    "Transpose": "concat/shuffle",
    "Flatten": "concat/shuffle",
    "Slice": "concat/shuffle",
    "Gemm": "matmul",
    "MatMul": "matmul",
    "FusedGemm": "matmul",
}


def ort_kind(op: str, shapes: list[list[int]]) -> str:
    if op in ("Conv", "FusedConv") and len(shapes) > 1:
        return conv_kind(shapes[1])
    return _ORT_KINDS.get(op, "elementwise")


def ort_profile_kinds(model: bytes, x: np.ndarray, runs: int) -> dict[str, float]:
    """onnxruntime's share of its kernel time per op kind (its own profiler; profiling
    slows it down, so the shares are scaled to the measured median)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.enable_profiling = True
    by_kind: dict[str, float] = defaultdict(float)
    with tempfile.TemporaryDirectory() as tmp:
        options.profile_file_prefix = os.path.join(tmp, "ort")
        session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        name = session.get_inputs()[0].name
        for _ in range(runs + 1):  # the first run (allocations) is dropped below
            session.run(None, {name: x})
        events = json.loads(Path(session.end_profiling()).read_text())
    nodes = [e for e in events if e.get("cat") == "Node" and e["name"].endswith("_kernel_time")]
    per_run = len(nodes) // (runs + 1)
    for event in nodes[per_run:]:
        args = event["args"]
        shapes = [next(iter(s.values())) for s in args.get("input_type_shape", [])]
        by_kind[ort_kind(args["op_name"], shapes)] += event["dur"]
    total = sum(by_kind.values())
    return {k: v / total for k, v in by_kind.items()} if total else {}


_TE_FUNC = re.compile(r"te\.func private @(\w+)\((.*?)\) ->")
_TENSOR = re.compile(r"tensor<([0-9x]+)x[a-z]+[0-9]+>")


def _kernel_signatures(lowering_ir: str) -> dict[str, list[list[int]]]:
    """Kernel name → its parameters' shapes, from the lowering-phase IR."""
    found = {}
    for name, params in _TE_FUNC.findall(lowering_ir):
        found[name] = [[int(d) for d in t.split("x")] for t in _TENSOR.findall(params)]
    return found


_PERF_CHILD = """
import sys, time, numpy as np, lamina
from lamina.backends.codegen import set_num_threads
set_num_threads(1)
exe = lamina.load(sys.argv[1])
x = np.load(sys.argv[2])
for _ in range(3):
    exe.run("main", x)
end = time.perf_counter() + float(sys.argv[3])
while time.perf_counter() < end:
    exe.run("main", x)
"""


def lamina_profile_kinds(module, target: str | None, x: np.ndarray, seconds: float):
    """Lamina's share of samples per op kind (`perf` in a child process), or an error string."""
    import shutil
    import subprocess

    from lamina.backends import kernel_split

    if shutil.which("perf") is None:
        return "needs Linux perf on PATH"
    symbols: dict[str, str] = {}
    split = kernel_split.split_module

    def recording(*args, **kwargs):
        result = split(*args, **kwargs)
        for unit in result.kernels if result is not None else ():
            if unit.names:  # a kernel family's generic unit (no names): its first member's
                symbols[unit.symbol] = unit.names[0].removesuffix("_loop")
                for _, generic in unit.needs:
                    symbols.setdefault(generic, symbols[unit.symbol])
        return result

    with tempfile.TemporaryDirectory() as tmp:
        exe = lamina.compile(
            module, targets=[target] if target else None, dump_phases_to=f"{tmp}/phases"
        )
        kernel_split.split_module = recording  # pyright: ignore[reportAttributeAccessIssue]
        try:
            exe.save(f"{tmp}/model")
        finally:
            kernel_split.split_module = split  # pyright: ignore[reportAttributeAccessIssue]
        signatures = _kernel_signatures(Path(f"{tmp}/phases/2_lowering.mlir").read_text())
        np.save(f"{tmp}/x.npy", x)
        child = [sys.executable, "-c", _PERF_CHILD, f"{tmp}/model", f"{tmp}/x.npy", str(seconds)]
        entries = _kernel_entries(f"{tmp}/model/model.so")
        perf = ["perf", "record", "-q", "-F", "2000", "-o", f"{tmp}/perf.data", "--", *child]
        report = ["perf", "report", "-i", f"{tmp}/perf.data", "--stdio", "--no-children",
                  "--sort", "dso,sym", "--percent-limit", "0", "-v"]  # fmt: skip
        try:
            subprocess.run(
                perf, check=True, capture_output=True, env={**os.environ, "OMP_NUM_THREADS": "1"}
            )
            out = subprocess.run(report, check=True, capture_output=True, text=True).stdout
        except subprocess.CalledProcessError as err:
            return f"perf failed: {err.stderr.strip().splitlines()[-1:]}"
    shares: dict[str, float] = defaultdict(float)
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 5 or not parts[0].endswith("%") or not parts[1].endswith("/model.so"):
            continue
        owner = _owner(entries, int(parts[2], 16))
        name = symbols.get(owner) or symbols.get(owner.rsplit("_", 1)[0], "")
        shares[lamina_kind(name, signatures.get(name, [])) if name else "other"] += float(
            parts[0][:-1]
        )
    total = sum(shares.values())
    return {k: v / total for k, v in shares.items()} if total else "no samples in the model"


def _kernel_entries(library: str) -> list[tuple[int, str]]:
    """(address, symbol) of every kernel entry in `library`, sorted."""
    import subprocess

    out = subprocess.run(["nm", "-n", library], check=True, capture_output=True, text=True)
    prefixes = ("__lamina_k_", "__lamina_f_")  # kernels, kernel families' generic units
    return [
        (int(addr, 16), sym)
        for addr, _, sym in (
            line.split() for line in out.stdout.splitlines() if line.count(" ") == 2
        )
        if sym.startswith(prefixes) and len(sym) > len(prefixes[0]) + 8
    ]


def _owner(entries: list[tuple[int, str]], address: int) -> str:
    """The kernel whose code holds `address`: its helpers (the parallel bodies,
    named alike in every kernel) follow its entry in the library."""
    import bisect

    i = bisect.bisect_right(entries, (address, "\uffff")) - 1
    return entries[i][1] if i >= 0 else ""


def print_op_profile(row: dict, lamina_shares, ort_shares: dict[str, float]) -> None:
    """One table per model: milliseconds per op kind, each peer's shares scaled
    to its measured median (`row`, the first thread count's)."""
    if isinstance(lamina_shares, str):
        print(f"    op-kind profile: {lamina_shares}")
        lamina_shares = {}
    lamina_ms, ort_total = row["lamina_ms"], row["onnxruntime_ms"]
    print(f"    {'op kind':18s} {'lamina ms':>10s} {'ort ms':>8s} {'ratio':>6s}")
    for kind in OP_KINDS:
        lam = lamina_shares.get(kind, 0.0) * lamina_ms
        ort_ms = ort_shares.get(kind, 0.0) * ort_total
        if lam < 0.005 and ort_ms < 0.005:
            continue
        ratio = f"{lam / ort_ms:6.2f}" if ort_ms >= 0.005 else "     -"
        print(f"    {kind:18s} {lam:10.3f} {ort_ms:8.3f} {ratio}", flush=True)


def _numpy_matmul(threads: int):
    """A NumPy (OpenBLAS) matmul of 512 on `threads` threads: a user's pre- or
    post-processing between two model calls in the same process."""
    bench.set_numpy_threads(threads)
    a = np.random.default_rng(1).standard_normal((512, 512)).astype(np.float32)
    return lambda: a @ a


CLOCKS = {"wall": time.perf_counter, "cpu": time.thread_time}
"""`--clock`: wall time, or the calling thread's CPU time (one thread only)."""


def _after(before, fn, clock=time.perf_counter):
    """`fn` preceded by `before` on every call; `.timed` collects `fn`'s own seconds."""

    def call():
        before()
        start = clock()
        fn()
        call.timed.append(clock() - start)  # pyright: ignore[reportFunctionMemberAccess]

    call.timed = []  # pyright: ignore[reportFunctionMemberAccess]
    return call


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _print_scaling(rows: list[dict], threads: list[int]) -> None:
    """Speed-up of each peer from the fewest to the most threads (geomean over models)."""
    lo, hi = min(threads), max(threads)
    for peer in ("lamina_ms", "onnxruntime_ms"):
        by = {(r["model"], r["threads"]): r[peer] for r in rows}
        gains = [by[m, lo] / by[m, hi] for m, t in by if t == lo and (m, hi) in by]
        if gains:
            print(f"{peer[:-3]} speed-up {lo} -> {hi} threads: geomean {_geomean(gains):.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated names")
    parser.add_argument("--threads", default="1", help="comma-separated thread counts")
    parser.add_argument("--rounds", type=int, default=9, help="interleaved rounds (medians)")
    parser.add_argument("--target", default=None, help="a target with options for lamina.compile")
    parser.add_argument(
        "--isa", choices=("avx2", "avx512", "host"), help="build for cpu{isa=...} (see --target)"
    )
    parser.add_argument("--profile", action="store_true", help="onnxruntime's time by op kind")
    parser.add_argument(
        "--profile-ops",
        action="store_true",
        help="time by op kind (1x1/depthwise/kxk conv, pools, ...), Lamina (sampled by "
        "Linux perf) against onnxruntime's own profile",
    )
    parser.add_argument(
        "--profile-seconds", type=float, default=4.0, help="how long perf samples Lamina"
    )
    parser.add_argument(
        "--alternate",
        choices=("none", "numpy", "ort", "ort-nospin", "ort-stop"),
        default="none",
        help="numpy: each call follows a NumPy matmul (its OpenBLAS threads, same count); "
        "ort: each call follows a run of the model in a user's onnxruntime session (its "
        "defaults: workers spin after a run); ort-nospin: the same session with "
        "session.intra_op.allow_spinning 0, ort-stop: with session.force_spinning_stop 1 "
        "(docs/environment.md); every Lamina call follows the peer's "
        "onnxruntime run anyway (interleaved rounds, that session does not spin)",
    )
    parser.add_argument(
        "--scaling",
        action="store_true",
        help="Lamina only: every --threads count in the same interleaved rounds, and the "
        "speed-up from the fewest to the most (same-run ratio; with --alternate)",
    )
    parser.add_argument(
        "--call-team",
        action="store_true",
        help="with --scaling: also time every thread count above one with one OpenMP region "
        "per kernel (LAMINA_CALL_TEAM=0; the plain modes run the process's default, the call "
        "team unless LAMINA_CALL_TEAM=0) and with each --team-spin, in the same rounds",
    )
    parser.add_argument(
        "--team-spin",
        default="",
        help="with --call-team: comma-separated LAMINA_TEAM_SPIN values, each timed as its "
        "own mode in the same rounds (default: the runtime's default)",
    )
    parser.add_argument(
        "--close-sleep",
        action="store_true",
        help="with --scaling: also time every count above one with the call team's other "
        "wait at a region's close (`_teamyield` or `_teamsleep`, call_team.set_close_sleep) "
        "in the same rounds",
    )
    parser.add_argument(
        "--solo-below",
        default="",
        help="with --scaling: comma-separated percentages, each timed as a call-team mode "
        "(`_teamsolo<p>`) that runs a call alone while the worker took fewer than p %% of "
        "the last shared call's chunks (call_team.set_solo_below)",
    )
    parser.add_argument(
        "--solo-lost",
        action="store_true",
        help="with --scaling: also time every count above one with the call team's other "
        "set_solo_lost setting (`_teamlost` or `_teamshared`: a call runs alone after a "
        "shared call that lost more at its closes than the worker saved)",
    )
    parser.add_argument(
        "--two-ended",
        action="store_true",
        help="with --scaling: also time every count above one with the call team's other "
        "chunk order (`_teamends`: the caller takes chunks from the front of a region, the "
        "workers from the back; or `_teamfront`: one shared counter; "
        "call_team.set_two_ended)",
    )
    parser.add_argument(
        "--thread-cpu",
        action="store_true",
        help="with --scaling: print each mode's CPU time per call of the calling thread, the "
        "team's workers and the process's other threads (/proc/self/task/*/schedstat; "
        "read between the --alternate call and the timed call)",
    )
    episode_probe.add_probe_options(parser, others=True)
    parser.add_argument(
        "--clock",
        choices=tuple(CLOCKS),
        default="wall",
        help="cpu: time each call by the calling thread's CPU time (one thread only), "
        "which leaves out the time a busy machine's other processes hold the core",
    )
    parser.add_argument(
        "--peers",
        choices=("native", "avx2"),
        default="native",
        help="avx2: NumPy's OpenBLAS on its AVX2 (Haswell) kernels (--alternate numpy; "
        "re-executes with OPENBLAS_CORETYPE=Haswell); onnxruntime cannot be restricted to "
        "AVX2: each row gives both peers' %% of their own instruction set's FMA peak",
    )
    parser.add_argument("--export-dir", default=str(Path.home() / ".cache" / "lamina-bench"))
    parser.add_argument("--csv", help="write the rows as CSV")
    parser.add_argument("--plot", help="write a bar chart of the ratios (needs matplotlib)")
    args = parser.parse_args(argv)
    args.threads = [int(t) for t in args.threads.split(",")]
    args.team_spin = [int(v) for v in args.team_spin.split(",") if v]
    args.solo_below = [int(v) for v in args.solo_below.split(",") if v]
    if args.isa and args.target:
        parser.error("--isa and --target exclude each other (--isa X is --target 'cpu{isa=X}')")
    if args.isa:
        args.target = f"cpu{{isa={args.isa}}}"
    names = [m for m in args.models.split(",") if m]
    unknown = [m for m in names if m not in MODELS + MORE_MODELS]
    if unknown:
        known = ", ".join(MODELS + MORE_MODELS)
        parser.error(f"unknown model(s) {', '.join(unknown)} (known: {known})")

    if args.clock == "cpu" and (args.threads != [1] or args.scaling):
        parser.error("--clock cpu times one thread: use it with --threads 1, without --scaling")
    if args.call_team and not args.scaling:
        parser.error("--call-team needs --scaling")
    if args.close_sleep and not args.scaling:
        parser.error("--close-sleep needs --scaling")
    if args.solo_below and not args.scaling:
        parser.error("--solo-below needs --scaling")
    if args.solo_lost and not args.scaling:
        parser.error("--solo-lost needs --scaling")
    if args.two_ended and not args.scaling:
        parser.error("--two-ended needs --scaling")
    if args.call_team or args.close_sleep or args.solo_below or args.solo_lost or args.two_ended:
        os.environ["LAMINA_CALL_TEAM"] = "1"  # installed when native code is first set up
    bench.ensure_peer_environment(args.peers)
    if args.scaling:
        return _main_scaling(names, args)
    args.watch = args.gauge = None
    if args.probe:
        args.gauge = bench.PeakGauge(args.target or "cpu", bench.peer_targets())
        args.watch = episode_probe.RoundWatch(
            episode_probe.EpisodeProbe(),
            args.gauge.probe.gflops,
            args.probe_slack,
            memory=episode_probe.MemoryProbe().gbps,
        )
        print(f"OpenBLAS {bench.numpy_blas_core()} kernels; {args.gauge.describe()}; Lamina "
              "and onnxruntime's % of their own instruction set's peak", flush=True)  # fmt: skip
    rows: list[dict] = []
    for name in names:
        try:
            rows += bench_model(name, args)
        except Exception as err:  # one model's failure must not hide the others' numbers
            print(f"{name:20s} failed: {str(err).splitlines()[0]}", flush=True)
    for threads in args.threads:
        ratios = [r["ratio"] for r in rows if r["threads"] == threads]
        if ratios:
            print(
                f"geomean ratio at {threads} thread(s): {_geomean(ratios):.2f} over {len(ratios)}"
            )
    if len(args.threads) > 1:
        _print_scaling(rows, args.threads)
    if rows and args.csv:
        bench._write_csv(args.csv, rows)
    if rows and args.plot:
        bench._plot(args.plot, [{**r, "case": r["model"]} for r in rows], peer="onnxruntime")
    return 0 if rows else 1


def _main_scaling(names: list[str], args: argparse.Namespace) -> int:
    if len(args.threads) < 2:
        raise SystemExit("error: --scaling needs two thread counts or more (--threads 1,2)")
    rows = []
    for name in names:
        try:
            rows.append(bench_scaling(name, args))
        except Exception as err:  # one model's failure must not hide the others' numbers
            print(f"{name:20s} failed: {str(err).splitlines()[0]}", flush=True)
    if rows:
        gains = [r["speedup"] for r in rows]
        lo, hi = min(args.threads), max(args.threads)
        print(f"lamina speed-up {lo} -> {hi} threads (same run, alternate={args.alternate}): "
              f"geomean {_geomean(gains):.2f} over {len(gains)}")  # fmt: skip
        if any(r.get("probe_slow_rounds") for r in rows):
            every = _geomean([r["all_rounds_speedup"] for r in rows])
            slow = sum(r["probe_slow_rounds"] for r in rows)
            print(f"  over all rounds, slow episodes included ({slow} of "
                  f"{len(rows) * args.rounds} rounds): geomean {every:.2f}")  # fmt: skip
        for key in [k for k in rows[0] if k.startswith("speedup_")]:
            gains = [r[key] for r in rows if key in r]
            what = "one region per kernel" if key == "speedup_regions" else "call team"
            print(f"  {what} ({key.removeprefix('speedup_')}): "
                  f"geomean {_geomean(gains):.2f}")  # fmt: skip
    if rows and args.csv:
        bench._write_csv(args.csv, rows)
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
