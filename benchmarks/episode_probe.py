"""A machine probe for two-thread benchmarks: is the VM giving us two full cores right now?

On the shared 2-vCPU VM a two-thread timing sometimes runs in a *slow episode*:
the hypervisor takes one vCPU away for a while, or another process's build runs
on the second core (the measurement lock serializes benchmarks, not builds). A
network measured then scales by 1.4 instead of 1.8 for reasons that are not
Lamina's (docs/performance.md, "Slow episodes of the machine").
`bench_models.py --scaling` therefore runs this probe between its rounds:

* a fixed calibration workload -- a chain of dependent floating-point
  multiply-adds, JIT-compiled once with llvmlite, so it touches no memory and
  no library thread pool, and a hyperthread sibling cannot slow it (its
  latency leaves the core's ports free) -- timed on one thread, then on two
  Python threads at once (ctypes releases the GIL during the call);
* the one-thread time against the run's typical one-thread time (its lower
  quartile: fixed work cannot run faster than the free machine) says whether
  the caller's core is slowed; the two threads' time against it says whether a
  second core was there;
* and, since a probe of a millisecond or two can fall between another
  process's time slices, each round's own share of the machine: the CPU time
  other processes and the hypervisor (steal) took on both cores while the
  round ran (`/proc/stat`, in jiffies, less this process's own CPU time:
  `MachineCounters`).

A round is *in a slow episode* when the probe before it or the one after it
was more than `slack` slower than the typical one-thread probe, on one thread
or on two (`slow_rounds`), or when others took more than `OTHERS_LIMIT` of a
core during it (`busy_rounds`). Such rounds are left out of the medians and
reported (`kept_rounds`); the medians over all rounds are reported as well.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import resource
import statistics
import threading
import time
from dataclasses import dataclass

WORK_IR = """
define i64 @lamina_probe_work(i64 %n, ptr %arrived, i64 %parties) {
entry:
  %mine = atomicrmw add ptr %arrived, i64 1 seq_cst
  br label %wait
wait:
  %here = load atomic i64, ptr %arrived acquire, align 8
  %all = icmp uge i64 %here, %parties
  br i1 %all, label %go, label %pause
pause:
  call void @llvm.x86.sse2.pause()
  br label %wait
go:
  %t0 = call i64 @llvm.readcyclecounter()
  br label %loop
loop:
  %i = phi i64 [ 0, %go ], [ %next, %loop ]
  %x = phi double [ 1.0, %go ], [ %y, %loop ]
  %y = call double @llvm.fma.f64(double %x, double 0x3FEFFFFFFFFFFFFE, double 1.0e-9)
  %next = add i64 %i, 1
  %done = icmp eq i64 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  %t1 = call i64 @llvm.readcyclecounter()
  %keep = fcmp oeq double %y, 0.0
  %ticks = sub i64 %t1, %t0
  %bumped = add i64 %ticks, 1
  %result = select i1 %keep, i64 %bumped, i64 %ticks
  ret i64 %result
}
declare double @llvm.fma.f64(double, double, double)
declare i64 @llvm.readcyclecounter()
declare void @llvm.x86.sse2.pause()
"""
"""`lamina_probe_work(n, arrived, parties)`: announce this thread in `*arrived`, spin
until `parties` threads have, then run n dependent multiply-adds (about 4 cycles each on
Zen 4, whatever runs on the core's other hyperthread, no memory traffic) and return the
time stamp counter ticks they took. The start barrier is native so that a helper
thread's wake-up (tens of µs from Python) is not timed; a second core that is not there
shows as the two threads' ticks growing while they share one core, or as the first
thread spinning until the second gets a core (counted: it spins before its ticks start,
so the caller's wall time says that; see `EpisodeProbe.measure`). The result depends on
`y` so that the chain is not removed."""

DEFAULT_WORK_US = 1500.0
"""How long one probe call works: long against a thread's wake-up (tens of µs) and the
timer, short against a round of a network (5-70 ms per mode)."""

DEFAULT_SLACK = 0.2
"""A probe more than this much slower than the run's typical one-thread probe marks the
rounds next to it as in a slow episode. Two threads on two free cores took 0.9-1.07 of
one thread's time (measured, 2-vCPU Zen 4), on one core about 2."""

OTHERS_LIMIT = 0.1
"""A round during which other processes and the hypervisor took more than this share of
one core (CPU seconds per second of the round) is in a slow episode: a two-thread call
then shares a core with them for part of its time."""

_work = None  # the JIT-compiled workload (ctypes function), made on first use
_engine = None  # keeps the workload's code mapped


def _compiled_work():
    """The calibration workload as a ctypes function `int64 f(int64 n, int64 *arrived,
    int64 parties)` (compiled once; x86-64)."""
    global _work, _engine
    if _work is None:
        import llvmlite.binding as llvm

        from lamina.runtime.native_setup import ensure_native

        ensure_native()  # initializes LLVM's native target
        module = llvm.parse_assembly(WORK_IR)
        # for the host's CPU: an inline FMA instruction. For generic x86-64, `llvm.fma`
        # became a call of libm's `fma` from SSE-encoded code, whose time varied with
        # what ran before (Xeon, AVX-512: readings up to 1.47x the typical where the
        # host-CPU build stayed within 1.07x; every round of three bench.py cases out
        # of six was marked slow for it)
        machine = llvm.Target.from_default_triple().create_target_machine(
            cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(), opt=2
        )
        module.triple = machine.triple
        _engine = llvm.create_mcjit_compiler(module, machine)
        _engine.finalize_object()
        address = _engine.get_function_address("lamina_probe_work")
        signature = ctypes.CFUNCTYPE(
            ctypes.c_int64, ctypes.c_int64, ctypes.POINTER(ctypes.c_int64), ctypes.c_int64
        )
        _work = signature(address)
    return _work


@dataclass(frozen=True)
class ProbeReading:
    """One probe: seconds of the workload on one thread, and the span of two threads
    each running it at once (first start to last end)."""

    one: float
    two: float


class EpisodeProbe:
    """Times the calibration workload on one and two threads (`measure`)."""

    def __init__(self, work_us: float = DEFAULT_WORK_US):
        self._work = _compiled_work()
        self.iterations = self._calibrate(work_us)

    def _calibrate(self, work_us: float) -> int:
        """The iteration count that takes about `work_us` on one thread (best of 5 short
        runs), and the time stamp counter's rate (`seconds_per_tick`) from the same runs."""
        n = 100_000
        best, ticks = min(self._alone(n) for _ in range(5))
        self.seconds_per_tick = best / max(ticks, 1)
        return max(1000, int(n * work_us * 1e-6 / max(best, 1e-9)))

    def _alone(self, n: int) -> tuple[float, int]:
        """Wall seconds and counter ticks of `n` iterations on this thread alone."""
        arrived = ctypes.c_int64(0)
        start = time.perf_counter()
        ticks = self._work(n, ctypes.byref(arrived), 1)
        return time.perf_counter() - start, ticks

    def measure(self) -> ProbeReading:
        """One reading: the workload alone, then on this thread and a helper thread at once
        (each timed from the moment both reached the native start barrier)."""
        _, one_ticks = self._alone(self.iterations)
        arrived = ctypes.c_int64(0)
        ticks: list[int] = []

        def run() -> None:
            ticks.append(self._work(self.iterations, ctypes.byref(arrived), 2))

        helper = threading.Thread(target=run, daemon=True)
        helper.start()
        run()
        helper.join()
        return ProbeReading(
            one=one_ticks * self.seconds_per_tick, two=max(ticks) * self.seconds_per_tick
        )


@dataclass(frozen=True)
class MachineCounters:
    """Cumulative CPU seconds: all processes' busy time on all cores and the hypervisor's
    steal (`/proc/stat`, jiffies), this process's own CPU time, and the wall clock."""

    busy: float
    steal: float
    own: float
    wall: float
    jiffy: float = 0.01
    """Seconds per `/proc/stat` unit: each reading is truncated to it, and the kernel
    charges each scheduler tick to whatever ran then, so a difference of two readings
    is only good to about two of them (`others_since` leaves those out)."""

    @staticmethod
    def read() -> MachineCounters:
        """The counters now (zeros for the machine's where `/proc/stat` is missing)."""
        busy = steal = 0.0
        hz = 100
        try:
            with open("/proc/stat") as f:
                fields = [int(v) for v in f.readline().split()[1:]]
            hz = os.sysconf("SC_CLK_TCK")
            # user nice system idle iowait irq softirq steal ...
            busy = (fields[0] + fields[1] + fields[2] + fields[5] + fields[6]) / hz
            steal = fields[7] / hz if len(fields) > 7 else 0.0
        except (OSError, ValueError, IndexError):
            pass
        usage = resource.getrusage(resource.RUSAGE_SELF)
        own = usage.ru_utime + usage.ru_stime
        return MachineCounters(
            busy=busy, steal=steal, own=own, wall=time.perf_counter(), jiffy=1.0 / hz
        )

    def others_since(self, earlier: MachineCounters) -> float:
        """Cores' worth (CPU seconds per second) that other processes and the hypervisor
        took between `earlier` and these counters, less two jiffies of counting error (so
        a round of 10 ms is marked only when others took a core for most of it)."""
        wall = max(self.wall - earlier.wall, 1e-9)
        busy = (self.busy - earlier.busy) - (self.own - earlier.own)
        others = max(busy, 0.0) + (self.steal - earlier.steal) - 2 * self.jiffy
        return max(others, 0.0) / wall


def busy_rounds(others: list[float], limit: float = OTHERS_LIMIT) -> set[int]:
    """The rounds during which others took more than `limit` of a core (`others[i]`:
    `MachineCounters.others_since` around round i)."""
    return {i for i, share in enumerate(others) if share > limit}


def slow_rounds(
    readings: list[ProbeReading], slack: float = DEFAULT_SLACK, reference: float | None = None
) -> set[int]:
    """The rounds in a slow episode, for `len(readings) - 1` rounds with reading i taken
    before round i and reading i + 1 after it: those next to a reading more than `slack`
    slower (on one thread or two) than the typical one-thread reading (`typical`, or
    `reference` seconds: a longer run's, `RoundWatch`)."""
    if len(readings) < 2:
        return set()
    reference = typical(readings) if reference is None else reference
    limit = (1.0 + slack) * reference
    slow = {i for i, r in enumerate(readings) if r.one > limit or r.two > limit}
    return {i for i in range(len(readings) - 1) if i in slow or i + 1 in slow}


def typical(readings: list[ProbeReading]) -> float:
    """The one-thread probe time of the free machine: the lower quartile of the readings
    (a fixed workload runs no faster than that; a median would follow a run that was
    slow throughout)."""
    ones = sorted(r.one for r in readings)
    return ones[(len(ones) - 1) // 4]


def kept_rounds(rounds: int, slow: set[int], least: int = 3) -> list[int]:
    """The rounds whose times the medians use: those outside slow episodes, or all of
    them when fewer than `least` (or fewer than half) are left -- a run that was slow
    throughout is then reported as such rather than judged on one or two rounds."""
    kept = [i for i in range(rounds) if i not in slow]
    if len(kept) < max(least, (rounds + 1) // 2):
        return list(range(rounds))
    return kept


def describe(
    readings: list[ProbeReading],
    slow: set[int],
    kept: list[int],
    rounds: int,
    busy: set[int],
    reference: float | None = None,
    limit: float = OTHERS_LIMIT,
) -> str:
    """One line for the benchmark's output: what the probe saw and which rounds count
    (`slow`: all rounds in slow episodes, `busy`: those of them others' CPU time marked;
    `reference`: the typical one-thread reading, by default these readings')."""
    reference = typical(readings) if reference is None else reference
    spans = [r.two / reference for r in readings]
    ones = [r.one / reference for r in readings]
    text = (
        f"probe: two threads x{statistics.median(spans):.2f} of one (worst "
        f"x{max(spans):.2f}), one thread worst x{max(ones):.2f}; "
        f"{len(slow)} of {rounds} rounds in slow episodes ({len(busy)} with others' CPU "
        f"time above {limit:.0%} of a core)"
    )
    if len(kept) == rounds and slow:
        return text + ", too many to leave out: medians over all rounds (unreliable)"
    return text + (", left out of the medians" if slow else "")


def slow_gauges(
    values: list[float], slack: float = DEFAULT_SLACK, best: float | None = None
) -> set[int]:
    """The rounds next to a gauge reading (a rate, higher is faster: `RoundWatch`'s
    `gauge`, e.g. bench.py's FMA peak) more than `slack` slower than `best` (by default
    the upper quartile of `values`), reading i taken before round i as in `slow_rounds`."""
    if len(values) < 2:
        return set()
    best = sorted(values, reverse=True)[(len(values) - 1) // 4] if best is None else best
    slow = {i for i, v in enumerate(values) if v * (1.0 + slack) < best}
    return {i for i in range(len(values) - 1) if i in slow or i + 1 in slow}


@dataclass
class Verdict:
    """Which rounds of one measurement count (`RoundWatch.verdict`)."""

    kept: list[int]
    slow: set[int]
    """Every round in a slow episode (probe, gauge or others' CPU time)."""
    busy: set[int]
    """The rounds others' CPU time marked."""
    gauge: float
    """The gauge's median over the readings next to kept rounds (nan without one)."""
    text: str
    """One line for the benchmark's output."""


class MemoryProbe:
    """The memory side of a slow episode: GB/s of summing a 32 MiB buffer (best of two),
    a `RoundWatch` `memory` gauge. On the Xeon VM some episodes slow memory-bound work
    (NumPy's im2col convolution 6.9 -> 12 ms, Lamina's 3x3 convolution 1.44 -> 2.13 ms)
    while the FMA peak and `EpisodeProbe`'s latency chain stay as fast as ever: another
    tenant's or process's traffic in the shared L3 and memory."""

    def __init__(self, mib: int = 32):
        import numpy as np

        self.buffer = np.ones(mib << 18, np.float32)
        self.buffer.sum()

    def gbps(self) -> float:
        best = float("inf")
        for _ in range(2):
            start = time.perf_counter()
            self.buffer.sum()
            best = min(best, time.perf_counter() - start)
        return self.buffer.nbytes / best / 1e9


class RoundWatch:
    """The machine probe around a benchmark's interleaved rounds, for every benchmark
    that times rounds (bench.py's `_rounds`, so bench.py, bench_models.py and
    onnx_bench.py): a probe reading (`EpisodeProbe`, one and two threads), a
    `gauge` reading (a rate, e.g. bench.py's measured FMA peak) and a `memory` reading
    (`MemoryProbe.gbps`) before the first round and after each, and the CPU time
    others took during each round (`MachineCounters`).

    One watch serves a whole run: `start()` begins the readings of one measurement
    (a case, a network), `next()` ends a round, and `verdict()` judges that
    measurement's rounds against the whole run's typical readings so far
    (`verdict(final=True)` at the end of a run: against all of them), since a slow
    episode lasts minutes and would make every round of a case look alike."""

    def __init__(
        self,
        probe: EpisodeProbe | None = None,
        gauge=None,
        slack: float = DEFAULT_SLACK,
        others_limit: float = OTHERS_LIMIT,
        memory=None,
    ):
        self.probe = probe
        self.gauge = gauge
        self.memory = memory
        self.all_memory: list[float] = []
        self.slack = slack
        self.others_limit = others_limit
        self.all_readings: list[ProbeReading] = []
        self.all_gauges: list[float] = []
        self.series: list[tuple[list[ProbeReading], list[float], list[float]]] = []
        self.memory_series: list[list[float]] = []
        self._counters: MachineCounters | None = None
        self.limits: list[float] = []

    def _read(self) -> None:
        readings, gauges, _ = self.series[-1]
        if self.probe is not None:
            readings.append(self.probe.measure())
            self.all_readings.append(readings[-1])
        if self.gauge is not None:
            gauges.append(float(self.gauge()))
            self.all_gauges.append(gauges[-1])
        if self.memory is not None:
            self.memory_series[-1].append(float(self.memory()))
            self.all_memory.append(self.memory_series[-1][-1])
        self._counters = MachineCounters.read()

    def start(self, threads: int = 0) -> None:
        """Begin a measurement of `threads` threads (0: all cores): the reading before
        its first round. Others' CPU time marks its rounds when it took more than
        `others_limit` of the cores the measurement leaves free plus one: a one-thread
        case on two cores is not slowed by a build on the other core (its own caches,
        and the lock's real-time priority wins its core back)."""
        self.series.append(([], [], []))
        self.memory_series.append([])
        cores = os.cpu_count() or 1
        free = max(0, cores - threads) if threads else 0
        self.limits.append(self.others_limit + free)
        self._read()

    def next(self) -> None:
        """End a round: others' CPU time during it, and the reading after it."""
        assert self._counters is not None, "RoundWatch.next() before start()"
        self.series[-1][2].append(MachineCounters.read().others_since(self._counters))
        self._read()

    def verdict(self, index: int = -1, final: bool = False) -> Verdict:
        """Which rounds of measurement `index` (default: the last) count. Against the
        run's readings so far, or (`final`) against all of the run's."""
        readings, gauges, others = self.series[index]
        rounds = len(others)
        pool = self.all_readings if final else self.all_readings[: self._upto(index)[0]]
        gpool = self.all_gauges if final else self.all_gauges[: self._upto(index)[1]]
        reference = typical(pool) if pool else None
        best = sorted(gpool, reverse=True)[(len(gpool) - 1) // 4] if gpool else None
        busy = busy_rounds(others, self.limits[index])
        slow = set(busy)
        if readings:
            slow |= slow_rounds(readings, self.slack, reference)
        slow_gauge = slow_gauges(gauges, self.slack, best) if gauges else set()
        slow |= slow_gauge
        slow_memory: set[int] = set()
        if self.memory is not None:
            memory = self.memory_series[index]
            upto = sum(len(m) for m in self.memory_series[: index % len(self.series) + 1])
            mpool = self.all_memory if final else self.all_memory[:upto]
            mbest = sorted(mpool, reverse=True)[(len(mpool) - 1) // 4]
            slow_memory = slow_gauges(memory, self.slack, mbest)
            slow |= slow_memory
        kept = kept_rounds(rounds, slow)
        near = sorted({j for i in kept for j in (i, i + 1) if j < len(gauges)})
        gauge = statistics.median(gauges[j] for j in near) if near else float("nan")
        if readings:
            text = describe(readings, slow, kept, rounds, busy, reference, self.limits[index])
        else:
            text = f"{len(slow)} of {rounds} rounds in slow episodes"
            if len(kept) == rounds and slow:
                text += ", too many to leave out: medians over all rounds (unreliable)"
        if gauges:
            text += f"; gauge slow next to {len(slow_gauge)} rounds"
        if self.memory is not None:
            text += f", memory next to {len(slow_memory)}"
        return Verdict(kept=kept, slow=slow, busy=busy, gauge=gauge, text=text)

    def _upto(self, index: int) -> tuple[int, int]:
        """How many of the run's probe and gauge readings were taken up to the end of
        measurement `index`."""
        index = index % len(self.series)
        upto = self.series[: index + 1]
        return sum(len(r) for r, _, _ in upto), sum(len(g) for _, g, _ in upto)


def add_probe_options(parser, slack: bool = True, others: bool = False) -> None:
    """The benchmarks' `--probe` options (bench.py, bench_models.py, onnx_bench.py),
    one spelling for all three: `--probe/--no-probe`, and `--probe-slack` and
    `--probe-others` where the script reads them."""
    import argparse

    parser.add_argument(
        "--probe",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="between rounds: the FMA peak and a fixed workload on one and two threads "
        "(benchmarks/episode_probe.py); rounds in the machine's slow episodes are left "
        "out of the medians and counted",
    )
    if slack:
        parser.add_argument(
            "--probe-slack",
            type=float,
            default=DEFAULT_SLACK,
            help="with --probe: a reading this much slower than the run's typical one "
            "marks the rounds before and after it as slow",
        )
    if others:
        parser.add_argument(
            "--probe-others",
            type=float,
            default=OTHERS_LIMIT,
            help="with --probe: a round during which other processes and the hypervisor "
            "took more than this share of a core (/proc/stat) is left out too",
        )


@contextlib.contextmanager
def measuring(lock: str | None, rr: int | None, *, every_thread: bool = False):
    """Hold `lock` (flock) and run at SCHED_RR priority `rr` for the block, if asked:
    the calling thread, or with `every_thread` every thread of the process (a thread
    team's workers included, which must exist already)."""
    handle = open(lock, "a") if lock else None  # noqa: SIM115 - held for the block
    try:
        if handle is not None:
            fcntl.flock(handle, fcntl.LOCK_EX)
        if rr:
            _schedule(os.SCHED_RR, rr, every_thread)
        yield
    finally:
        if rr:
            _schedule(os.SCHED_OTHER, 0, every_thread)
        if handle is not None:
            fcntl.flock(handle, fcntl.LOCK_UN)
            handle.close()


def _schedule(policy: int, priority: int, every_thread: bool) -> None:
    threads = [int(t) for t in os.listdir("/proc/self/task")] if every_thread else [0]
    for tid in threads:
        try:
            os.sched_setscheduler(tid, policy, os.sched_param(priority))
        except OSError:  # a thread that just ended, or no permission
            if not every_thread:
                raise
