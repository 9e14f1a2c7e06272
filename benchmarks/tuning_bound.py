"""How much a schedule search can gain on a network at most: each kernel against the roofline.

    python benchmarks/tuning_bound.py ~/.cache/lamina-bench/mobilenet_v2.onnx
    python benchmarks/tuning_bound.py --isa avx2 --top 6 MODEL.onnx [MODEL.onnx ...]
    python benchmarks/tuning_bound.py --lock /tmp/measure.lock --rr 20 MODEL.onnx

Per network and target, one thread (docs/tuning.md, "How much a search can
gain on these networks"):

* the machine's limits, measured here: the FMA peak of one core
  (`bench.measured_peak_gflops`, a register-only FMA kernel of the target's
  vector width, the best of three) and the copy bandwidth of one core as a function of the
  bytes a copy touches (NumPy `copyto` of float32 buffers from 32 KiB to
  256 MiB, source + destination, the best of several runs; interpolated
  between sizes on a log scale);
* each kernel's work, counted in the model lowered through `lower-te`
  (`tuning/kernels.py` `load_model`), before any schedule: FLOPs are the
  float `addf`/`subf`/`mulf`/`divf` (an `fma` two) times the trip counts of
  the loops around them; bytes are the sizes of the kernel's operands
  (every input read once, every output written once: what no schedule can
  avoid; temporaries inside the kernel are free). Operands that are the
  model's constants (weights) are read at the bandwidth of a copy of all
  the model's weights (DRAM when they exceed the last-level cache), the
  others at that of a copy of the kernel's own activation bytes;
* each kernel's time in the network: a profiling build (`profile=True`),
  its counters on the thread's CPU clock, the median of `--rounds` rounds
  of `--runs` runs; the network's time is the ordinary build's (thread CPU
  time, the median of the same rounds, interleaved);
* per kernel the roofline time `max(flops / peak, bytes / bandwidth)` and a
  realistic one (`--compute-eff` of the peak, default 0.95, `--memory-eff`
  of the bandwidth, default 0.8); the network's bounds replace each kernel's
  time by `min(time, bound)` and keep the time outside the kernels.

With `--lock PATH` the timing (not the compiles) holds an exclusive
`flock` on PATH and, with `--rr PRIO`, runs at real-time round-robin
priority, as `flock PATH chrt -r PRIO python ...` would for the whole run.
`--json FILE` appends one JSON object per network; `--table FILE` prints
docs/tuning.md's table from it (each kind's time-weighted fraction of the peak, or of
the bandwidth, "bw", for a kind whose time is mostly in memory-bound kernels).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from dataclasses import asdict, dataclass

os.environ.setdefault("LAMINA_NUM_THREADS", "1")

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from episode_probe import measuring  # noqa: E402

FLOP_OPS = {"arith.addf": 1, "arith.subf": 1, "arith.mulf": 1, "arith.divf": 1, "math.fma": 2}


def copy_bandwidth() -> list[tuple[int, float]]:
    """(bytes touched, bytes per second) of one-thread float32 copies, 32 KiB to 256 MiB."""
    curve = []
    for shift in range(15, 29):
        touched = 1 << shift
        src = np.ones(touched // 8, np.float32)
        dst = np.empty_like(src)
        reps = max(3, (1 << 27) // touched)
        best = math.inf
        for _ in range(5):
            start = time.thread_time()
            for _ in range(reps):
                np.copyto(dst, src)
            best = min(best, (time.thread_time() - start) / reps)
        curve.append((touched, touched / best))
    # a smaller copy is never slower than a larger one: small sizes are bound by the
    # call's overhead, not the caches, so each size gets the best of itself and larger ones
    envelope = []
    for i, (touched, _) in enumerate(curve):
        envelope.append((touched, max(w for _, w in curve[i:])))
    return envelope


def bandwidth_at(curve: list[tuple[int, float]], touched: float) -> float:
    """The copy bandwidth for `touched` bytes, interpolated on a log scale."""
    if touched <= curve[0][0]:
        return curve[0][1]
    for (b0, w0), (b1, w1) in zip(curve, curve[1:], strict=False):
        if touched <= b1:
            f = (math.log(touched) - math.log(b0)) / (math.log(b1) - math.log(b0))
            return w0 + f * (w1 - w0)
    return curve[-1][1]


@dataclass
class Work:
    flops: float
    weight_bytes: int
    act_bytes: int
    kind: str


def kernel_kind(func) -> str:
    """What a kernel computes, for people: a convolution by its blocked weight's shape
    (`dw3x3`: depthwise, `1x1`, `conv3x3`, ...), else its first op's name."""
    name = func.sym_name.data.removeprefix("te_").removeprefix("fused_")
    types = [a.type for a in func.body.block.args]
    weights = [t.get_shape() for t in types if _is_blocked_weight(t)]
    if "conv2d" in name and not weights:
        return "nchw"  # a convolution left in NCHW (its weight OIHW)
    if "conv2d" in name:
        shape = weights[0]
        kh, kw = shape[2], shape[3]
        odd = kh == kw and kh % 2 == 1
        if shape[0] == shape[1] == 4 and not odd:
            return "wino3x3"  # Winograd's transformed weights: 4 x 4 x K/o x C/i x i x o
        if shape[1] == 1 and shape[4] == 1 and (kh, kw) != (1, 1):
            return f"dw{kh}x{kw}"
        return "1x1" if (kh, kw) == (1, 1) else f"conv{kh}x{kw}"
    for word in ("matmul", "pool", "layout", "concat", "softmax", "reduce"):
        if word in name:
            return {"matmul": "fc", "layout": "layout"}.get(word, word)
    return name.split("_")[0]


def _is_blocked_weight(ty) -> bool:
    """A convolution's blocked weight (`OIHW{i}i{o}o`: 6-d), constant or derived from one."""
    return hasattr(ty, "get_shape") and len(ty.get_shape()) == 6


def _trips(op) -> int:
    """The product of the constant trip counts of the `loop.for`s around `op`."""
    from lamina.dialects import loop
    from lamina.schedule.int_analysis import int_constant

    trips = 1
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, loop.FuncOp):
        if isinstance(parent, loop.ForOp):
            lo, hi, step = (int_constant(v) for v in parent.operands[:3])
            if None not in (lo, hi, step):
                trips *= max(0, -(-(hi - lo) // step))  # type: ignore[operator]
        parent = parent.parent_op()
    return trips


def _bytes(ty) -> int:
    from xdsl.dialects.builtin import MemRefType

    if not isinstance(ty, MemRefType):
        return 0
    width = getattr(ty.element_type, "bitwidth", 32)
    return math.prod(ty.get_shape()) * max(1, width // 8)


def kernel_work(path: str, target: str) -> tuple[dict[str, Work], int]:
    """Each kernel's work per call by function name, and the model's weight bytes."""
    from lamina.dialects import graph
    from lamina.passes.apply_records import kernels
    from lamina.tuning.kernels import load_model

    module = load_model(path, [target])
    funcs = {f.sym_name.data: f for f in kernels(module)}
    flops = {
        name: float(sum(FLOP_OPS.get(op.name, 0) * _trips(op) for op in f.walk()))
        for name, f in funcs.items()
    }
    work: dict[str, Work] = {}
    weights: dict[int, int] = {}
    for call in module.walk():
        if not isinstance(call, graph.CallLoopOp):
            continue
        name = call.callee.root_reference.data
        func = funcs.get(name)
        if func is None or name in work:
            continue
        weight = act = 0
        for arg, value in zip(func.body.block.args, call.operands, strict=False):
            size = _bytes(arg.type)
            if isinstance(value.owner, graph.ConstantOp) or _is_blocked_weight(arg.type):
                weight += size
                weights[id(value)] = size
            else:
                act += size
        outs = func.body.block.args[len(call.operands) :]
        act += sum(_bytes(a.type) for a in outs)
        work[name] = Work(flops[name], weight, act, kernel_kind(func))
    return work, sum(weights.values())


@dataclass
class Row:
    kernel: str
    kind: str
    calls: int
    ms: float
    gflop: float
    mbytes: float
    roof_ms: float
    real_ms: float
    peak_frac: float
    bw_frac: float
    bound: str


def kernel_times(path: str, target: str, rounds: int, runs: int, lock, rr):
    """(ms per run of each kernel symbol, calls per run, the network's ms per run)."""
    import lamina
    from lamina.passes import profile_kernels
    from lamina.runtime.profile import (
        profile_addresses,
        read_counters,
        reset_counters,
        slot_kernels,
    )
    from lamina.tuning.worker import _inputs_for

    profile_kernels.CLOCK_MONOTONIC = 3  # CLOCK_THREAD_CPUTIME_ID
    prof = lamina.compile(path, targets=[target], profile=True)
    plain = lamina.compile(path, targets=[target])
    args = _inputs_for(plain)
    addresses = profile_addresses(prof.compiled.engine)
    assert addresses is not None
    slots = slot_kernels(addresses)
    per_symbol: dict[str, list[float]] = {}
    calls: dict[str, int] = {}
    whole: list[float] = []
    with measuring(lock, rr):
        for _ in range(3):
            prof.run("main", *args)
            plain.run("main", *args)
        for _ in range(rounds):
            start = time.thread_time()
            for _ in range(runs):
                plain.run("main", *args)
            whole.append((time.thread_time() - start) / runs * 1e3)
            reset_counters(addresses, len(slots))
            for _ in range(runs):
                prof.run("main", *args)
            sums: dict[str, float] = {}
            for (symbol, *_), (nanos, count) in zip(
                slots, read_counters(addresses, len(slots)), strict=True
            ):
                sums[symbol] = sums.get(symbol, 0.0) + nanos / runs / 1e6
                calls[symbol] = calls.get(symbol, 0) + count // runs
            for symbol, ms in sums.items():
                per_symbol.setdefault(symbol, []).append(ms)
    calls = {s: c // rounds for s, c in calls.items()}
    return {s: statistics.median(v) for s, v in per_symbol.items()}, calls, statistics.median(whole)


def bound(path: str, target: str, args, peak: float, curve) -> dict:
    work, weight_total = kernel_work(path, target)
    times, calls, net_ms = kernel_times(path, target, args.rounds, args.runs, args.lock, args.rr)
    weight_bw = bandwidth_at(curve, 2 * weight_total)
    rows = []
    for symbol, ms in times.items():
        w = work.get(symbol)
        n = calls.get(symbol, 1)
        if w is None:
            rows.append(Row(symbol, "?", n, ms, 0, 0, ms, ms, 0, 0, "?"))
            continue
        act_bw = bandwidth_at(curve, w.act_bytes)
        compute_s = n * w.flops / (peak * 1e9)
        memory_s = n * (w.act_bytes / act_bw + w.weight_bytes / weight_bw)
        roof = max(compute_s, memory_s) * 1e3
        real = max(compute_s / args.compute_eff, memory_s / args.memory_eff) * 1e3
        rows.append(
            Row(
                symbol,
                w.kind,
                n,
                ms,
                n * w.flops / 1e9,
                n * (w.act_bytes + w.weight_bytes) / 1e6,
                min(ms, roof),
                min(ms, real),
                compute_s * 1e3 / ms if ms else 0.0,
                memory_s * 1e3 / ms if ms else 0.0,
                "compute" if compute_s >= memory_s else "memory",
            )
        )
    rows.sort(key=lambda r: -r.ms)
    kernels_ms = sum(r.ms for r in rows)
    outside = max(0.0, net_ms - kernels_ms)
    roof_ms = outside + sum(r.roof_ms for r in rows)
    real_ms = outside + sum(r.real_ms for r in rows)
    return {
        "model": os.path.basename(path).removesuffix(".onnx"),
        "target": target,
        "peak_gflops": peak,
        "net_ms": net_ms,
        "kernels_ms": kernels_ms,
        "roof_ms": roof_ms,
        "real_ms": real_ms,
        "roof_speedup": net_ms / roof_ms,
        "real_speedup": net_ms / real_ms,
        "weight_mb": weight_total / 1e6,
        "rows": [asdict(r) for r in rows],
    }


def short(symbol: str) -> str:
    return symbol.removeprefix("te_").removeprefix("fused_").removesuffix("_loop")


def print_result(result: dict, top: int) -> None:
    print(
        f"{result['model']} {result['target']}: {result['net_ms']:.2f} ms one thread "
        f"(kernels {result['kernels_ms']:.2f}), roofline {result['roof_ms']:.2f} ms "
        f"({result['roof_speedup']:.2f}x), realistic {result['real_ms']:.2f} ms "
        f"({result['real_speedup']:.2f}x); peak {result['peak_gflops']:.0f} GFLOP/s, "
        f"weights {result['weight_mb']:.0f} MB",
        flush=True,
    )
    print(
        f"  {'kernel':50s} {'kind':>8s} {'calls':>5s} {'ms':>7s} {'share':>6s} {'GFLOP':>6s} {'MB':>6s} "
        f"{'%peak':>6s} {'%bw':>6s} {'roof ms':>7s} {'real ms':>7s} bound"
    )
    for r in result["rows"][:top]:
        print(
            f"  {short(r['kernel'])[:50]:50s} {r['kind']:>8s} {r['calls']:5d} {r['ms']:7.3f} "
            f"{r['ms'] / result['net_ms']:6.1%} {r['gflop']:6.3f} {r['mbytes']:6.2f} "
            f"{r['peak_frac']:6.1%} {r['bw_frac']:6.1%} {r['roof_ms']:7.3f} {r['real_ms']:7.3f} "
            f"{r['bound']}"
        )
    kinds: dict[str, list[float]] = {}
    for r in result["rows"]:
        k = kinds.setdefault(f"{r['kind']} ({r['bound']}-bound)", [0.0, 0.0, 0.0])
        k[0] += r["ms"]
        k[1] += r["roof_ms"]
        k[2] += r["real_ms"]
    for kind, (ms, roof, real) in sorted(kinds.items(), key=lambda kv: -kv[1][0]):
        print(
            f"  {kind:24s} {ms:7.3f} ms ({ms / result['net_ms']:5.1%}), "
            f"roofline {roof:7.3f}, realistic {real:7.3f}"
        )


def _kind_text(kind: str, ms: float, flops: float, moved: float, net: float, mem: float) -> str:
    """`kind share at fraction`: of the peak, or of the bandwidth when most of the kind's
    time (`mem` ms of `ms`) is in memory-bound kernels."""
    if mem * 2 > ms:
        return f"{kind} {ms / net:.0%} at {moved / ms:.0%} bw"
    return f"{kind} {ms / net:.0%} at {flops / ms:.0%}"


def markdown(path: str, top: int = 3) -> str:
    """The table of docs/tuning.md from a `--json` file (the last line per network and
    target): times, bounds, the largest kernel kinds with their fraction of the peak."""
    latest: dict[tuple[str, str], dict] = {}
    with open(path) as f:
        for line in f:
            result = json.loads(line)
            latest[(result["model"], result["target"])] = result
    lines = [
        "| network | target | ms | roofline ms | realistic ms "
        "| kinds: share of time, % of peak | realistic saving by kind |",
        "|---|---|---|---|---|---|---|",
    ]
    for (model, target), r in sorted(latest.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        kinds: dict[str, list[float]] = {}
        memory: dict[str, float] = {}
        for row in r["rows"]:
            k = kinds.setdefault(row["kind"], [0.0, 0.0, 0.0, 0.0])
            k[0] += row["ms"]
            k[1] += row["peak_frac"] * row["ms"]
            k[2] += row["ms"] - row["real_ms"]
            k[3] += row["bw_frac"] * row["ms"]
            if row["bound"] == "memory":
                memory[row["kind"]] = memory.get(row["kind"], 0.0) + row["ms"]
        ranked = sorted(kinds.items(), key=lambda kv: -kv[1][0])[:top]
        text = ", ".join(
            _kind_text(kind, ms, flops, moved, r["net_ms"], memory.get(kind, 0.0))
            for kind, (ms, flops, _, moved) in ranked
        )
        saved = sorted(kinds.items(), key=lambda kv: -kv[1][2])[:top]
        where = ", ".join(f"{kind} {s / r['net_ms']:.0%}" for kind, (_, _, s, _) in saved if s > 0)
        isa = "AVX2" if "avx2" in target else "AVX-512"
        lines.append(
            f"| {model} | {isa} | {r['net_ms']:.2f} | {r['roof_ms']:.2f} "
            f"({r['roof_speedup']:.2f}x) | {r['real_ms']:.2f} ({r['real_speedup']:.2f}x) "
            f"| {text} | {where} |"
        )
    for target in sorted({t for _, t in latest}):
        runs = [r for (_, t), r in latest.items() if t == target]
        roof = math.exp(statistics.mean(math.log(r["roof_speedup"]) for r in runs))
        real = math.exp(statistics.mean(math.log(r["real_speedup"]) for r in runs))
        isa = "AVX2" if "avx2" in target else "AVX-512"
        lines.append(f"| geomean of {len(runs)} | {isa} | | {roof:.2f}x | {real:.2f}x | | |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("models", nargs="*", help="ONNX files (benchmarks/bench_models.py)")
    parser.add_argument("--isa", help="build for cpu{isa=ISA} (e.g. avx2)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--top", type=int, default=8, help="kernels listed per network")
    parser.add_argument("--compute-eff", type=float, default=0.95)
    parser.add_argument("--memory-eff", type=float, default=0.8)
    parser.add_argument("--lock", help="flock this file while timing")
    parser.add_argument("--rr", type=int, help="SCHED_RR priority while timing")
    parser.add_argument("--json", help="append one JSON object per network to this file")
    parser.add_argument("--table", help="print the markdown table of a --json file and stop")
    args = parser.parse_args(argv)
    if args.table:
        print(markdown(args.table))
        return 0
    import bench

    target = f"cpu{{isa={args.isa}}}" if args.isa else "cpu"
    with measuring(args.lock, args.rr):
        # the best of three: a VM's stolen time can halve one measurement
        peak = max(bench.measured_peak_gflops(1, target) for _ in range(3))
        curve = copy_bandwidth()
    print(
        "copy bandwidth, one thread: "
        + ", ".join(f"{b >> 10} KiB {w / 1e9:.0f}" for b, w in curve[::2])
        + " GB/s",
        flush=True,
    )
    for path in args.models:
        result = bound(path, target, args, peak, curve)
        result["bandwidth"] = curve
        print_result(result, args.top)
        if args.json:
            with open(args.json, "a") as f:
                f.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
