"""The machine probe of `bench_models.py --scaling` (benchmarks/episode_probe.py): which
rounds it leaves out, and that its workload really runs on one and two threads."""

from __future__ import annotations

import platform
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
try:
    import episode_probe
    from episode_probe import ProbeReading
finally:
    sys.path.remove(str(BENCHMARKS))

MS = 1e-3


def test_a_slow_reading_marks_the_rounds_on_both_sides():
    """Reading i is taken before round i and reading i + 1 after it: a second core
    missing at reading 3 (two threads took twice one thread's time) makes rounds 2 and 3
    suspect, and nothing else."""
    readings = [ProbeReading(one=1.5 * MS, two=1.55 * MS) for _ in range(6)]
    readings[3] = ProbeReading(one=1.5 * MS, two=3.0 * MS)
    assert episode_probe.slow_rounds(readings, slack=0.2) == {2, 3}


def test_a_slowed_caller_core_counts_too():
    """One thread taking 1.5x the run's median (the hypervisor took the caller's vCPU)
    is a slow episode as well; the last reading only bounds the last round."""
    readings = [ProbeReading(one=1.5 * MS, two=1.5 * MS) for _ in range(5)]
    readings[4] = ProbeReading(one=2.25 * MS, two=2.25 * MS)
    assert episode_probe.slow_rounds(readings, slack=0.2) == {3}
    assert episode_probe.slow_rounds(readings, slack=0.6) == set()


def test_rounds_left_out_unless_too_few_remain():
    assert episode_probe.kept_rounds(9, {2, 3}) == [0, 1, 4, 5, 6, 7, 8]
    # five of nine slow: fewer than half left, so every round counts (reported as such)
    assert episode_probe.kept_rounds(9, {0, 1, 2, 3, 4}) == list(range(9))
    readings = [ProbeReading(one=1.0 * MS, two=2.0 * MS) for _ in range(10)]
    slow = episode_probe.slow_rounds(readings)
    text = episode_probe.describe(readings, slow, episode_probe.kept_rounds(9, slow), 9, set())
    assert "9 of 9 rounds in slow episodes" in text and "unreliable" in text
    assert "two threads x2.00 of one" in text


def test_the_typical_probe_is_the_fast_quarter():
    """A run slow throughout is judged against its fastest readings, not its median."""
    readings = [ProbeReading(one=v * MS, two=v * MS) for v in (1.0, 1.0, 1.6, 1.6, 1.6)]
    assert episode_probe.typical(readings) == 1.0 * MS
    assert episode_probe.slow_rounds(readings, slack=0.2) == {1, 2, 3}


def test_rounds_where_others_took_a_core_are_busy():
    assert episode_probe.busy_rounds([0.0, 0.05, 0.4, 0.0], limit=0.1) == {2}
    earlier = episode_probe.MachineCounters(busy=10.0, steal=1.0, own=5.0, wall=100.0)
    later = episode_probe.MachineCounters(busy=10.5, steal=1.1, own=5.3, wall=101.0)
    # 0.5 s busy of which 0.3 s ours: 0.2 s of others, 0.1 s of steal, less two jiffies
    assert abs(later.others_since(earlier) - 0.28) < 1e-9
    # a 15 ms round: a jiffy more busy time than our own is counting error, not load
    short = episode_probe.MachineCounters(busy=10.02, steal=1.0, own=5.01, wall=100.015)
    assert short.others_since(earlier) == 0.0


def test_machine_counters_read_this_process():
    """The counters are real: this process's CPU time grows while it computes."""
    first = episode_probe.MachineCounters.read()
    total = 0
    while episode_probe.MachineCounters.read().own - first.own < 0.02:
        total += sum(range(1000))
    later = episode_probe.MachineCounters.read()
    assert later.wall > first.wall and later.own >= first.own + 0.02
    assert later.busy >= first.busy and later.others_since(first) >= 0.0


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86-64 workload")
def test_the_workload_runs_on_one_and_two_threads():
    """The JIT-compiled chain of multiply-adds takes about the asked time on one thread
    and, on two threads, each thread's own chain from the native start barrier on: a
    positive time for both, and more iterations take longer."""
    probe = episode_probe.EpisodeProbe(work_us=300)
    assert probe.iterations >= 1000 and probe.seconds_per_tick > 0
    reading = probe.measure()
    assert 0 < reading.one < 1.0 and 0 < reading.two < 1.0
    short = min(probe._alone(probe.iterations)[1] for _ in range(3))
    long = min(probe._alone(8 * probe.iterations)[1] for _ in range(3))
    assert long > 2 * short


def test_bench_models_leaves_slow_rounds_out_and_says_so():
    """`bench_models.py --scaling` keeps the rounds outside slow episodes (here round 1,
    next to a probe without a second core, and round 3, where others took half a core),
    and records what it left out."""
    import argparse

    sys.path.insert(0, str(BENCHMARKS))
    try:
        import bench_models
    finally:
        sys.path.remove(str(BENCHMARKS))
    readings = [ProbeReading(one=1.5 * MS, two=1.5 * MS) for _ in range(7)]
    readings[2] = ProbeReading(one=1.5 * MS, two=3.0 * MS)  # between rounds 1 and 2
    others = [0.0, 0.0, 0.0, 0.5, 0.0, 0.0]
    args = argparse.Namespace(rounds=6, probe_slack=0.2, probe_others=0.1)
    row: dict = {}
    kept = bench_models._probe_rounds(row, readings, others, args)
    assert kept == [0, 4, 5]
    assert row["probe_slow_rounds"] == 3 and row["probe_kept_rounds"] == 3
    assert "3 of 6 rounds in slow episodes (1 with others' CPU time" in row["probe"]
    assert bench_models._probe_rounds({}, [], others, args) == list(range(6))


def test_round_watch_judges_a_case_against_the_whole_run(monkeypatch):
    """`RoundWatch` (bench.py, onnx_bench.py): a case measured wholly inside a slow
    episode looks uniform by itself; against the run's readings it is slow. Its gauge
    (a rate: the FMA peak) marks rounds next to a slow reading, and reports the median of
    the readings next to the kept rounds."""
    probe_times = iter([1.0] * 4 + [1.6] * 4 + [1.0] * 4)
    gauges = iter([170.0] * 4 + [100.0] * 4 + [170.0, 170.0, 90.0, 170.0])

    class Probe:
        def measure(self):
            t = next(probe_times) * MS
            return ProbeReading(one=t, two=t)

    zero = episode_probe.MachineCounters(busy=0.0, steal=0.0, own=0.0, wall=0.0)
    monkeypatch.setattr(episode_probe.MachineCounters, "read", staticmethod(lambda: zero))
    watch = episode_probe.RoundWatch(Probe(), gauge=lambda: next(gauges))
    for _case in range(3):
        watch.start()
        for _ in range(3):
            watch.next()
    first, second, third = (watch.verdict(i, final=True) for i in range(3))
    assert first.slow == set() and first.gauge == 170.0
    assert second.slow == {0, 1, 2} and len(second.kept) == 3  # too few left: all kept
    assert "unreliable" in second.text
    assert third.slow == {1, 2} and third.kept == [0, 1, 2]  # one left: all kept
    assert episode_probe.slow_gauges([170.0, 170.0, 90.0, 170.0], 0.2) == {1, 2}
