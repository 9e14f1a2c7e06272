"""How fast two threads could run a network, measured on one thread (load-independent).

On a busy machine a second thread rarely finds a free core, so wall-clock
two-thread timings mean little (docs/performance.md, "Measuring on a busy
machine"). This tool measures what limits two threads structurally instead:

* it runs the network on ONE thread with generated code's libgomp entry
  points (`GOMP_parallel`, `GOMP_loop_dynamic_start/next`,
  `GOMP_loop_end_nowait`, `omp_get_num_threads`) and the profiling build's
  clock (`clock_gettime`) routed to a small C shim (compiled with `cc` into a
  temporary directory, registered with `llvm.add_symbol` before any code is
  linked), which records on the thread CPU clock every kernel call, every
  parallel region and every chunk the region hands out -- chunked as for
  `--threads` threads, since `omp_get_num_threads` answers that;
* it then replays each region's chunks on `--threads` equally fast threads
  taking them on demand (what the trampolines do), optionally with the
  worker starting `--worker-late` µs after the caller.

Per network it prints the one-thread kernel time T1, the serial share (time
outside parallel regions: serial kernels and the serial parts of parallel
ones), the Amdahl bound T1 / (serial + parallel / threads), the on-demand
bound (the replayed chunks: imbalance included), the same with
`--region-cost` µs per region, the regions per call (with what the on-demand
bound loses inside regions, as shares of T1: time outside the chunks, which
one thread runs, and the imbalance of the replayed chunks; the share of T1 in
regions of fewer than 4 iterations per thread; and the bound when the workers
take `--worker-slow` times as long per chunk as the caller), and the kernels
that lose most against T1 / threads. `--gaps` adds the distribution of the
serial time between consecutive regions (what a worker would have to wait
for the next region), `--imbalance N` the N regions losing most to
imbalance with their iteration and chunk counts.

    python benchmarks/bench_thread_bound.py ~/.cache/lamina-bench/mobilenet_v2.onnx --gaps
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ["LAMINA_CALL_TEAM"] = "0"  # the shim, not the call team, must get GOMP_parallel
os.environ.setdefault("LAMINA_NUM_THREADS", "1")

import numpy as np

SHIM_C = r"""
#define _GNU_SOURCE
#include <time.h>
#include <stdint.h>
#include <stdbool.h>
enum { EV_CLOCK = 1, EV_REGION_BEGIN = 2, EV_REGION_END = 3, EV_LOOP = 4, EV_CHUNK = 5 };
typedef struct { int64_t kind, t, a, b; } event;
#define MAXEV (1 << 22)
event shim_events[MAXEV];
int64_t shim_count = 0;
int shim_threads = 2;
static int64_t hi_, chunk_, next_;
static inline int64_t now(void) {
  struct timespec ts; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
static inline void log_ev(int64_t kind, int64_t t, int64_t a, int64_t b) {
  if (shim_count < MAXEV) { event *e = &shim_events[shim_count++]; e->kind = kind; e->t = t; e->a = a; e->b = b; }
}
int shim_clock_gettime(int clk, struct timespec *ts) {
  int64_t t = now();
  ts->tv_sec = t / 1000000000LL; ts->tv_nsec = t % 1000000000LL;
  log_ev(EV_CLOCK, t, 0, 0);
  return 0;
}
int shim_omp_get_num_threads(void) { return shim_threads; }
void shim_GOMP_parallel(void (*fn)(void *), void *data, unsigned n, unsigned flags) {
  log_ev(EV_REGION_BEGIN, now(), 0, 0);
  fn(data);
  log_ev(EV_REGION_END, now(), 0, 0);
}
static bool hand(long *s, long *e) {
  if (next_ >= hi_) return false;
  *s = next_; *e = next_ + chunk_ < hi_ ? next_ + chunk_ : hi_; next_ = *e;
  log_ev(EV_CHUNK, now(), *s, *e);
  return true;
}
bool shim_GOMP_loop_dynamic_start(long start, long end, long incr, long chunk, long *s, long *e) {
  hi_ = end; chunk_ = chunk; next_ = start;
  log_ev(EV_LOOP, now(), end - start, chunk);
  return hand(s, e);
}
bool shim_GOMP_loop_dynamic_next(long *s, long *e) { return hand(s, e); }
void shim_GOMP_loop_end_nowait(void) { log_ev(EV_CHUNK, now(), -1, -1); }
"""

SYMBOLS = (
    "clock_gettime",
    "omp_get_num_threads",
    "GOMP_parallel",
    "GOMP_loop_dynamic_start",
    "GOMP_loop_dynamic_next",
    "GOMP_loop_end_nowait",
)
MAX_EVENTS = 1 << 22
CLOCK, BEGIN, END, LOOP, CHUNK = 1, 2, 3, 4, 5


def load_shim(threads: int) -> ctypes.CDLL:
    """Compile the shim and register its functions for code the JIT links from now on."""
    from lamina.runtime import native_setup

    native_setup.ensure_native()
    llvm = native_setup._llvm()
    with tempfile.TemporaryDirectory(prefix="lamina-thread-bound-") as tmp:
        work = Path(tmp)  # removed once loaded: the mapping outlives the file
        (work / "shim.c").write_text(SHIM_C)
        subprocess.run(
            ["cc", "-O2", "-shared", "-fPIC", "-o", str(work / "shim.so"), str(work / "shim.c")],
            check=True,
        )
        shim = ctypes.CDLL(str(work / "shim.so"))
    for symbol in SYMBOLS:
        llvm.add_symbol(symbol, ctypes.cast(getattr(shim, "shim_" + symbol), ctypes.c_void_p).value)
    ctypes.c_int.in_dll(shim, "shim_threads").value = threads
    return shim


TAPER_LEAST = 4
"""Tapered chunks are no smaller than the region's chunk / this (runtime/call_team.py's
`TAPER_LEAST`): each chunk costs a take from a shared counter."""


def replay_tapered(
    r: list, threads: int, late_ns: float, slow: float, parts_per_thread: int
) -> float:
    """`replay` with chunks that shrink towards the end: a thread takes the region's chunk
    or an equal share of what is left among `parts_per_thread` x `threads`, whichever is
    smaller, but no less than `TAPER_LEAST`-th of the chunk (each chunk's time spread
    evenly over its iterations)."""
    n, chunk, durations = r[2], r[3], r[4]
    if n <= 0 or chunk <= 0 or len(durations) * chunk < n:
        return replay(durations, threads, late_ns, slow)
    per = np.zeros(n)
    for i, duration in enumerate(durations):
        lo, hi = i * chunk, min((i + 1) * chunk, n)
        per[lo:hi] = duration / (hi - lo)
    sums = np.concatenate([[0.0], np.cumsum(per)])
    free = [0.0] + [late_ns] * (threads - 1)
    start, parts, least = 0, parts_per_thread * threads, -(-chunk // TAPER_LEAST)
    while start < n:
        size = min(chunk, max(-(-(n - start) // parts), least), n - start)
        who = free.index(min(free))
        free[who] += (sums[start + size] - sums[start]) * (slow if who else 1.0)
        start += size
    return max(free)


FEW_PER_THREAD = 4
"""A region of fewer than this many iterations per thread counts as one of few
iterations: on demand, a thread that finishes early waits for a large part of
another's last chunk (the trampolines aim at four chunks per thread)."""


def replay(chunks: list[int], threads: int, late_ns: float, slow: float = 1.0) -> float:
    """Makespan of `chunks` (durations, in order) on `threads` threads taking them on
    demand, the workers starting `late_ns` after the caller and taking `slow` times as
    long for a chunk."""
    free = [0.0] + [late_ns] * (threads - 1)
    for duration in chunks:
        who = free.index(min(free))
        free[who] += duration * (slow if who else 1.0)
    return max(free)


def parse(events: np.ndarray) -> list[tuple[int, int, list[list]]]:
    """Kernel calls in order: (start, end, regions), a region [begin, end, iterations, chunk, chunk durations]."""
    kernels: list[tuple[int, int, list[list]]] = []
    start, regions, region, last = None, [], None, None
    for kind, t, a, b in events:
        if kind == CLOCK:
            if start is None:
                start, regions = t, []
            else:
                kernels.append((start, t, regions))
                start = None
        elif kind == BEGIN:
            region, last = [t, 0, 0, 0, []], None
        elif kind == LOOP and region is not None:
            region[2], region[3] = a, b
        elif kind == CHUNK and region is not None:
            if last is not None:
                region[4].append(t - last)
            last = t if a >= 0 else None
        elif kind == END and region is not None:
            region[1] = t
            regions.append(region)
            region = None
    return kernels


def measure(path: str, shim: ctypes.CDLL, args: argparse.Namespace) -> dict:
    """Replay one network; print its line and its worst kernels; return the row."""
    import onnx

    import lamina
    from lamina.runtime.profile import profile_addresses, slot_kernels

    model = onnx.load(path)
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    exe = lamina.compile(path, targets=[args.target], profile=True)
    table = slot_kernels(profile_addresses(exe.compiled.engine))
    count = ctypes.c_int64.in_dll(shim, "shim_count")
    buffer = (ctypes.c_int64 * (4 * MAX_EVENTS)).in_dll(shim, "shim_events")
    for _ in range(2):
        exe.run("main", x)
    late = args.worker_late * 1e3
    per_kernel: dict[str, np.ndarray] = collections.defaultdict(lambda: np.zeros(5))
    unchunked, imbalance, few, slowed, tapered = 0.0, 0.0, 0.0, 0.0, 0.0
    by_region: dict[tuple[str, int, int], float] = collections.defaultdict(float)
    gaps: list[float] = []
    for _ in range(args.runs):
        count.value = 0
        exe.run("main", x)
        events = np.frombuffer(buffer, dtype=np.int64, count=4 * count.value).reshape(-1, 4)
        calls = parse(events)
        if len(calls) != len(table):
            sys.exit(f"{path}: {len(calls)} kernel calls, {len(table)} profile slots")
        flat = [r for _, _, regions in calls for r in regions]
        gaps += [(b[0] - a[1]) / 1e3 for a, b in zip(flat, flat[1:], strict=False)]
        for (symbol, *_), (start, end, regions) in zip(table, calls, strict=True):
            inside = sum(r[1] - r[0] for r in regions)
            replayed = 0.0
            for r in regions:
                if r[2] < FEW_PER_THREAD * args.threads:
                    few += r[1] - r[0]
                slowed += replay(r[4], args.threads, late, args.worker_slow) - replay(
                    r[4], args.threads, late
                )
                if args.taper:
                    tapered += replay_tapered(
                        r, args.threads, late, args.worker_slow, args.taper
                    ) - replay(r[4], args.threads, late)
                chunked = replay(r[4], args.threads, late)
                makespan = chunked + (r[1] - r[0] - sum(r[4]))
                unchunked += r[1] - r[0] - sum(r[4])
                imbalance += chunked - sum(r[4]) / args.threads
                by_region[(symbol, r[2], r[3])] += makespan - (r[1] - r[0]) / args.threads
                replayed += makespan
            span = end - start
            per_kernel[symbol] += [
                span,
                span - inside,
                inside / args.threads,
                replayed,
                len(regions),
            ]
    total = sum(per_kernel.values()) / args.runs
    t1, serial, ideal, replayed, regions = total
    cost = args.region_cost * 1e3 * regions
    row = {
        "model": Path(path).name.removesuffix(".onnx"),
        "t1_ms": t1 / 1e6,
        "serial": serial / t1,
        "amdahl": t1 / (serial + ideal),
        "on_demand": t1 / (serial + replayed),
        "with_cost": t1 / (serial + replayed + cost),
        "regions": regions,
        "unchunked": unchunked / args.runs / t1,
        "imbalance": imbalance / args.runs / t1,
        "few": few / args.runs / t1,
        "slow_worker": t1 / (serial + replayed + slowed / args.runs),
        "tapered": t1 / (serial + replayed + tapered / args.runs),
    }
    print(
        f"{row['model']:22s} T1 {row['t1_ms']:7.2f} ms  serial {row['serial']:5.1%}  "
        f"Amdahl {row['amdahl']:.3f}  on demand {row['on_demand']:.3f}  "
        f"+{args.region_cost:g} us/region {row['with_cost']:.3f}  regions {regions:.0f}  "
        f"(in regions: outside chunks {row['unchunked']:.1%}, imbalance {row['imbalance']:.1%}; "
        f"in regions of < {FEW_PER_THREAD * args.threads} iterations {row['few']:.1%}; "
        f"workers x{args.worker_slow:g} slower {row['slow_worker']:.3f}"
        + (f", tapered chunks {row['tapered']:.3f}" if args.taper else "")
        + ")",
        flush=True,
    )
    losses = []
    for symbol, v in per_kernel.items():
        v = v / args.runs
        losses.append((v[1] + v[3] - v[0] / args.threads, symbol, v))
    for loss, symbol, v in sorted(losses, key=lambda item: -item[0])[: args.top]:
        print(
            f"    loss {loss / t1:5.1%}  of T1 {v[0] / t1:5.1%}  serial {v[1] / max(v[0], 1):6.1%}  regions {v[4]:.0f}  {symbol}"
        )
    for (symbol, n, chunk), loss in sorted(by_region.items(), key=lambda kv: -kv[1])[
        : args.imbalance
    ]:
        print(
            f"    imbalance {loss / args.runs / t1:5.2%}  iterations {n:5d} chunk {chunk:4d}  {symbol}"
        )
    if args.gaps and gaps:
        g = np.array(gaps)
        p25, p50, p90 = np.percentile(g, [25, 50, 90])
        print(
            f"    gaps between regions (us): p25 {p25:.1f} median {p50:.1f} p90 {p90:.1f}; below 5 us {np.mean(g < 5):.0%}, below 20 us {np.mean(g < 20):.0%}"
        )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+", help="ONNX files")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--worker-late", type=float, default=0.0, help="us the worker starts after the caller"
    )
    parser.add_argument("--region-cost", type=float, default=0.0, help="us added per region")
    parser.add_argument(
        "--worker-slow",
        type=float,
        default=1.2,
        help="also replay with the workers taking this many times as long per chunk",
    )
    parser.add_argument(
        "--taper",
        type=int,
        default=0,
        help="also replay the slower workers with chunks no larger than an equal share of "
        "what is left among this many parts per thread",
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--top", type=int, default=8, help="kernels losing most")
    parser.add_argument("--imbalance", type=int, default=0, help="regions losing most to imbalance")
    parser.add_argument("--gaps", action="store_true", help="serial time between regions")
    parser.add_argument("--target", default="cpu")
    parser.add_argument("--json", help="append the rows as JSON lines")
    args = parser.parse_args()
    shim = load_shim(args.threads)
    rows = [measure(path, shim, args) for path in args.models]
    if len(rows) > 1:
        geo = {
            k: float(np.exp(np.mean([np.log(r[k]) for r in rows])))
            for k in ("amdahl", "on_demand", "with_cost", "slow_worker", "tapered")
        }
        print(
            f"{'geomean':22s} Amdahl {geo['amdahl']:.3f}  on demand {geo['on_demand']:.3f}  "
            f"with cost {geo['with_cost']:.3f}  workers slower {geo['slow_worker']:.3f}  "
            f"tapered {geo['tapered']:.3f}"
        )
    if args.json:
        with open(args.json, "a") as out:
            for row in rows:
                out.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
