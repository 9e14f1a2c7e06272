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
    text = episode_probe.describe(readings, slow, episode_probe.kept_rounds(9, slow), 9)
    assert "9 of 9 rounds in slow episodes" in text and "unreliable" in text
    assert "span x2.00" in text


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
