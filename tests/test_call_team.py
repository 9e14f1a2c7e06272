"""One thread team per call (runtime/call_team.py): the kernels' parallel regions run on
the runtime's own workers, with the numerics of the ordinary lowering.

The team is installed when native code is first set up, so each check runs in a fresh
interpreter with `LAMINA_CALL_TEAM` set."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lamina.runtime import call_team

ROOT = Path(__file__).resolve().parents[1]

CHECK = textwrap.dedent(
    """
    import json, sys, threading
    import numpy as np
    import lamina
    from lamina.backends import codegen
    from lamina.runtime import call_team

    exe = lamina.compile(sys.argv[1], profile=True)
    out = {"installed": call_team.installed()}
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(t.shape).astype(np.float32) for t in exe.get_inputs()]
    codegen.set_num_threads(2)
    call_team.set_call_team(False)
    want = exe.run("main", *inputs)
    out["regions_per_call"] = exe.profile("main", *inputs, runs=1).regions_per_run
    call_team.set_call_team(True)
    before = call_team.stats()
    same = []
    for spin in (0, 100, 20000):  # workers that sleep at once, briefly spin, keep spinning
        call_team.set_spin(spin)
        for _ in range(20):
            same.append(bool(np.array_equal(exe.run("main", *inputs), want)))
    after = call_team.stats()
    out["same"] = all(same)
    out["calls"] = after["calls"] - before["calls"]
    out["regions"] = after["regions"] - before["regions"]
    out["joined"] = after["joined"] - before["joined"]
    # On a loaded machine a sleeping worker may wake too late for every region of
    # 60 short calls, or join a region whose chunks the caller already took; with a
    # long spin it stays awake across calls and takes part (runs chunks).
    call_team.set_spin(20000)
    took = lambda: call_team.stats()["worker_chunks"] > before["worker_chunks"]
    for _ in range(300):
        if took():
            break
        exe.run("main", *inputs)
    out["participated"] = took()
    final = call_team.stats()
    out["counters"] = {k: final[k] - before[k] for k in final}
    out["tick_rate"] = call_team.tick_rate()

    # Concurrent calls: one holds the team, the others run one region per kernel.
    results = []
    def worker():
        for _ in range(20):
            results.append(bool(np.array_equal(exe.run("main", *inputs), want)))
    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads: t.start()
    for t in threads: t.join()
    out["concurrent_same"] = all(results) and len(results) == 60

    codegen.set_num_threads(1)  # one thread: the team declines, nothing changes
    before = call_team.stats()["calls"]
    out["one_thread_same"] = bool(np.array_equal(exe.run("main", *inputs), want))
    out["one_thread_calls"] = call_team.stats()["calls"] - before
    print(json.dumps(out))
    """
)


DYNAMIC = textwrap.dedent(
    """
    import json
    import numpy as np
    import lamina
    from lamina.backends import codegen
    from lamina.frontends.builder import GraphBuilder
    from lamina.runtime import call_team

    rng = np.random.default_rng(0)
    b = GraphBuilder()
    x = b.param((None, 256), name="x")
    w = b.constant(rng.standard_normal((256, 512)).astype(np.float32) * 0.1)
    b.ret(b.relu(b.matmul(x, w)))
    exe = lamina.compile(b.module(), cache=False)
    codegen.set_num_threads(2)
    same = []
    for n in (1, 7, 64):
        x = rng.standard_normal((n, 256)).astype(np.float32)
        call_team.set_call_team(False)
        want = exe.run("main", x)
        call_team.set_call_team(True)
        before = call_team.stats()["calls"]
        got = exe.run("main", x)
        same.append(bool(np.array_equal(got, want)) and call_team.stats()["calls"] == before + 1)
    print(json.dumps({"same": all(same)}))
    """
)


SPIN = textwrap.dedent(
    """
    import json, sys
    import lamina
    from lamina.runtime import call_team

    lamina.compile(sys.argv[1])
    first = call_team.spin()
    call_team.set_spin(7)
    print(json.dumps({"spin": first, "set": call_team.spin()}))
    """
)


FORK = textwrap.dedent(
    """
    import json, os, sys
    import numpy as np
    import lamina
    from lamina.backends import codegen
    from lamina.runtime import call_team

    exe = lamina.compile(sys.argv[1])
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(t.shape).astype(np.float32) for t in exe.get_inputs()]
    codegen.set_num_threads(1)
    want = exe.run("main", *inputs)
    codegen.set_num_threads(2)
    exe.run("main", *inputs)  # the parent's worker exists now
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        same = [bool(np.array_equal(exe.run("main", *inputs), want)) for _ in range(10)]
        os.write(write, json.dumps({"same": all(same), **call_team.stats()}).encode())
        os._exit(0)
    os.waitpid(pid, 0)
    print(os.read(read, 65536).decode())
    """
)


def _run(example: str, team: str | None, script: str = CHECK, spin: str | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("LAMINA_CALL_TEAM", "LAMINA_TEAM_SPIN")}
    if team is not None:
        env["LAMINA_CALL_TEAM"] = team
    if spin is not None:
        env["LAMINA_TEAM_SPIN"] = spin
    proc = subprocess.run(
        [sys.executable, "-c", script, str(ROOT / "examples" / example)],
        capture_output=True, text=True, env=env, timeout=600, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("example", ["mlp.mlir", "cnn.mlir"])
def test_team_runs_every_region_with_the_same_results(example):
    out = _run(example, "1")
    assert out["installed"]
    assert out["regions_per_call"] >= 2
    assert out["same"], "the team changed the results"
    assert out["calls"] == 60
    assert out["regions"] == 60 * out["regions_per_call"]
    assert out["joined"] <= out["regions"]  # one worker: at most once per region
    assert out["participated"]  # the worker took part
    _check_counters(out["counters"], out["tick_rate"])
    assert out["concurrent_same"]
    assert out["one_thread_same"] and out["one_thread_calls"] == 0


def _check_counters(c: dict, tick_rate: float) -> None:
    """The breakdown of `call_team.stats` nests: a call holds its regions, a region its
    waits at the close; the workers took some of the chunks and ran only regions they
    joined."""
    assert 1e8 < tick_rate < 1e11  # time stamp counter ticks per second
    assert c["call_ticks"] >= c["region_ticks"] >= c["close_ticks"] >= c["close_few_ticks"] >= 0
    assert c["region_ticks"] > 0 and c["caller_chunks"] + c["worker_chunks"] >= c["regions"]
    assert c["caller_chunks"] > 0 and c["worker_chunks"] > 0
    assert c["work_ticks"] > 0 and c["join_ticks"] > 0 and c["sleeps"] >= 0


def test_team_on_by_default_and_off_when_disabled():
    out = _run("mlp.mlir", None)
    assert out["installed"] and out["same"] and out["calls"] == 60
    out = _run("mlp.mlir", "0")
    assert not out["installed"]
    assert out["same"] and out["calls"] == 0 and out["regions"] == 0


def test_team_runs_entries_over_symbolic_sizes():
    """A dynamic-batch entry takes its sizes first (64-bit words, like the pointers)."""
    assert _run("mlp.mlir", "1", DYNAMIC)["same"]


@pytest.mark.parametrize(
    "value, spin",
    [(None, call_team.DEFAULT_SPIN), ("123", 123), ("0", 0), ("x", call_team.DEFAULT_SPIN)],
)
def test_worker_spin_from_the_environment(value, spin):
    """`LAMINA_TEAM_SPIN` sets the spin (a value that is not a count keeps the default);
    `set_spin` changes it at run time."""
    assert _run("mlp.mlir", "1", SPIN, value) == {"spin": spin, "set": 7}


def test_team_in_a_forked_child():
    """A fork's child has no worker thread: its first team call starts its own."""
    out = _run("cnn.mlir", "1", FORK)
    assert out["same"] and out["calls"] == 11 and out["threads"] == 2


SET_EARLY = textwrap.dedent(
    """
    import json, sys
    from lamina.runtime import call_team
    call_team.set_spin(9)  # before the first compile installs the team
    call_team.set_call_team(False)
    import lamina
    lamina.compile(sys.argv[1])
    print(json.dumps({"installed": call_team.installed(), "spin": call_team.spin(),
                      "calls": call_team.stats()["calls"]}))
    """
)


def test_settings_made_before_the_team_is_installed_are_kept():
    """`set_spin`/`set_call_team` before the first compile apply once the team is installed."""
    out = _run("mlp.mlir", "1", SET_EARLY)
    assert out == {"installed": True, "spin": 9, "calls": 0}


CLOSE_SLEEP = textwrap.dedent(
    """
    import json, os, sys
    import numpy as np
    import lamina
    from lamina.backends import codegen
    from lamina.runtime import call_team

    from lamina.frontends.builder import GraphBuilder

    # One matmul of 512x1024x1024: chunks of a few milliseconds, so a caller that is
    # done often finds the worker in its last chunk.
    rng = np.random.default_rng(0)
    b = GraphBuilder()
    x = b.param((512, 1024), name="x")
    w = b.constant(rng.standard_normal((1024, 1024)).astype(np.float32) * 0.1)
    b.ret(b.matmul(x, w))
    exe = lamina.compile(b.module(), cache=False)
    inputs = [rng.standard_normal((512, 1024)).astype(np.float32)]
    codegen.set_num_threads(1)
    want = exe.run("main", *inputs)
    codegen.set_num_threads(2)
    out = {"default": call_team.DEFAULT_CLOSE_SLEEP}
    # Yielding callers never sleep at a close.
    call_team.set_close_sleep(False)
    call_team.set_spin(0)
    before = call_team.stats()["close_sleeps"]
    same = [bool(np.array_equal(exe.run("main", *inputs), want)) for _ in range(10)]
    out["yield_sleeps"] = call_team.stats()["close_sleeps"] - before
    # Sleeping callers are woken by the worker that leaves; every call completes with
    # the same results. The caller sleeps after 100 pauses (~4 us, far less than a
    # chunk), so any call whose worker finishes last makes it sleep; with 10,000 (~0.3
    # ms) an idle machine split the chunks so evenly that no caller waited that long
    # in 200 calls. Calls until the caller slept (a worker that finished first never
    # makes it sleep).
    call_team.set_close_sleep(True)
    call_team.set_spin(100)
    before = call_team.stats()["close_sleeps"]
    for _ in range(200):
        same.append(bool(np.array_equal(exe.run("main", *inputs), want)))
        if call_team.stats()["close_sleeps"] > before and len(same) > 40:
            break
    out["slept"] = call_team.stats()["close_sleeps"] > before
    out["same"] = all(same)
    tids = call_team.worker_tids()
    out["tids"] = len(tids)
    out["tids_ours"] = all(str(t) in os.listdir("/proc/self/task") for t in tids)
    print(json.dumps(out))
    """
)


def test_caller_sleeps_at_a_close_and_the_leaving_worker_wakes_it():
    """`set_close_sleep(True)`: a caller waiting for a worker's last chunk sleeps on a futex
    that the worker leaving the region wakes (no call hangs, results unchanged);
    `set_close_sleep(False)`: it never sleeps. `worker_tids` names the workers' threads."""
    out = _run("mlp.mlir", "1", CLOSE_SLEEP)
    assert out["same"] and out["yield_sleeps"] == 0 and out["slept"]
    assert out["tids"] == 1 and out["tids_ours"]


ONE_THREAD_FIRST = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import lamina
    from lamina.backends import codegen
    from lamina.runtime import call_team

    exe = lamina.compile(sys.argv[1])
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(t.shape).astype(np.float32) for t in exe.get_inputs()]
    codegen.set_num_threads(1)
    want = exe.run("main", *inputs)
    codegen.set_num_threads(2)
    """
)
"""The start of a check of whole calls: the example compiled, its inputs, and its
one-thread result (`want`); two threads from then on."""


SOLO = ONE_THREAD_FIRST + textwrap.dedent(
    """
    out = {"default": call_team.DEFAULT_SOLO_BELOW}
    exe.run("main", *inputs)
    # Off (0): no call runs alone.
    before = call_team.stats()
    same = [bool(np.array_equal(exe.run("main", *inputs), want)) for _ in range(16)]
    after = call_team.stats()
    out["off_solo"] = after["solo_calls"] - before["solo_calls"]
    # 101 %: every share is below it, so after one shared call all calls but every
    # SOLO_PROBE-th run alone: no region is posted, the caller takes every chunk.
    call_team.set_solo_below(101)
    exe.run("main", *inputs)
    before = call_team.stats()
    calls = 8 * call_team.SOLO_PROBE
    same += [bool(np.array_equal(exe.run("main", *inputs), want)) for _ in range(calls)]
    after = call_team.stats()
    got = {k: after[k] - before[k] for k in after}
    out["calls"], out["solo"] = got["calls"], got["solo_calls"]
    out["regions_per_shared"] = got["regions"] / max(got["calls"] - got["solo_calls"], 1)
    out["same"] = all(same)
    print(json.dumps(out))
    """
)


def test_calls_run_alone_while_the_worker_took_too_few_chunks():
    """`set_solo_below(p)`: while the worker took fewer than p % of the last shared call's
    chunks, calls run alone (same results; no region posted), except every
    `SOLO_PROBE`th; 0 (the default) never does."""
    out = _run("cnn.mlir", "1", SOLO)
    assert out["default"] == 0 and out["off_solo"] == 0 and out["same"]
    calls = 8 * call_team.SOLO_PROBE
    assert out["calls"] == calls and out["solo"] == calls - 8
    assert out["regions_per_shared"] == 3  # cnn.mlir posts 3 regions per shared call


SOLO_LOST = ONE_THREAD_FIRST + textwrap.dedent(
    """
    out = {"default": call_team.DEFAULT_SOLO_LOST}
    call_team.set_solo_lost(True)
    call_team.set_spin(0)  # a worker that sleeps at once joins late: closes may cost more
    before = call_team.stats()
    calls = 12 * call_team.SOLO_PROBE
    same = [bool(np.array_equal(exe.run("main", *inputs), want)) for _ in range(calls)]
    after = call_team.stats()
    out["same"] = all(same)
    out["calls"] = after["calls"] - before["calls"]
    out["solo"] = after["solo_calls"] - before["solo_calls"]
    print(json.dumps(out))
    """
)


def test_calls_run_alone_after_a_call_that_lost_at_its_closes():
    """`set_solo_lost(True)`: whichever calls the rule runs alone (it depends on how the
    threads were scheduled), the results do not change, and every `SOLO_PROBE`th call
    shares its regions."""
    out = _run("cnn.mlir", "1", SOLO_LOST)
    calls = 12 * call_team.SOLO_PROBE
    assert out["default"] is False and out["same"] and out["calls"] == calls
    assert out["solo"] <= calls - 12


ENDS = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import lamina
    from lamina.backends import codegen
    from lamina.runtime import call_team

    out = {"default": None, "same": True, "worker": {}}
    for path in sys.argv[1:]:
        exe = lamina.compile(path)
        rng = np.random.default_rng(0)
        inputs = [rng.standard_normal(t.shape).astype(np.float32) for t in exe.get_inputs()]
        codegen.set_num_threads(1)
        want = exe.run("main", *inputs)
        codegen.set_num_threads(2)
        if out["default"] is None:
            out["default"] = call_team.two_ended()
        for ends in (True, False):
            for taper in (True, False):
                call_team.set_two_ended(ends)
                call_team.set_taper(taper)
                before = call_team.stats()
                for _ in range(20):
                    out["same"] &= bool(np.array_equal(exe.run("main", *inputs), want))
                after = call_team.stats()
                took = after["worker_chunks"] - before["worker_chunks"]
                out["worker"][str(ends)] = out["worker"].get(str(ends), 0) + took
    print(json.dumps(out))
    """
)


@pytest.mark.parametrize("env", [None, "1", "0"])
def test_two_ended_chunks_give_the_same_results(env):
    """The caller taking chunks from the front and the worker from the back (and the
    shared counter), tapered or not: every iteration runs once, the results are the
    one-thread results bit for bit; `LAMINA_TEAM_ENDS` sets the default, else the CPU."""
    from lamina.runtime import call_team
    from lamina.target.cpu_facts import host_cpu_facts

    saved = os.environ.get("LAMINA_TEAM_ENDS")
    if env is not None:
        os.environ["LAMINA_TEAM_ENDS"] = env
    else:
        os.environ.pop("LAMINA_TEAM_ENDS", None)
    try:
        env_for_run = {**os.environ, "LAMINA_CALL_TEAM": "1"}
        proc = subprocess.run(
            [sys.executable, "-c", ENDS, *(str(ROOT / "examples" / e) for e in ("mlp.mlir", "cnn.mlir"))],
            capture_output=True, text=True, env=env_for_run, timeout=600, check=False,
        )  # fmt: skip
    finally:
        if saved is None:
            os.environ.pop("LAMINA_TEAM_ENDS", None)
        else:
            os.environ["LAMINA_TEAM_ENDS"] = saved
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["same"]
    assert out["worker"]["True"] > 0 and out["worker"]["False"] > 0, out["worker"]
    facts = host_cpu_facts()
    expected = {"1": True, "0": False}.get(
        env, call_team.two_ended_default(facts.cpu_name, facts.features)
    )
    assert out["default"] is expected


def test_two_ended_default_follows_the_cpu():
    from lamina.runtime import call_team

    assert call_team.two_ended_default("emeraldrapids", {"avx512f", "avx2"})
    assert call_team.two_ended_default("sapphirerapids", {"avx512f"})
    assert not call_team.two_ended_default("znver4", {"avx512f", "avx2"})  # Zen 4 kept
    assert not call_team.two_ended_default("haswell", {"avx2", "fma"})  # AVX2 kept
    assert not call_team.two_ended_default("znver3", {"avx2"})


TAKE = textwrap.dedent(
    """
    import json, random
    from lamina.runtime import call_team, native_setup

    native_setup.ensure_native()
    llvm = native_setup._llvm()
    # Wrappers that set the team's state and take one chunk as the caller or a worker.
    harness = call_team.RUNTIME_IR + '''
    define void @test_setup(i32 %size, i32 %taper, i32 %ends) {
    entry:
      store i32 %size, ptr @team_size
      store i32 %taper, ptr @team_taper
      store i32 %ends, ptr @team_ends
      store i64 0, ptr @team_next
      ret void
    }
    define i8 @test_take(i64 %chunk, i64 %end, ptr %lo, ptr %hi, i32 %as_worker) {
    entry:
      %self = call i64 @pthread_self()
      %other = add i64 %self, 1
      %w = icmp ne i32 %as_worker, 0
      %owner = select i1 %w, i64 %other, i64 %self
      store i64 %owner, ptr @team_owner
      %r = call i8 @team_take(i64 %chunk, i64 %end, ptr %lo, ptr %hi)
      ret i8 %r
    }
    '''
    module = llvm.parse_assembly(harness)
    machine = llvm.Target.from_default_triple().create_target_machine(opt=2)
    engine = llvm.create_mcjit_compiler(module, machine)
    engine.finalize_object()
    import ctypes
    setup = ctypes.CFUNCTYPE(None, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32)(
        engine.get_function_address("test_setup"))
    take = ctypes.CFUNCTYPE(ctypes.c_uint8, ctypes.c_int64, ctypes.c_int64,
                            ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_int64),
                            ctypes.c_int32)(engine.get_function_address("test_take"))
    chunks = []
    rng = random.Random(0)
    for size in (2, 3):
        for taper in (0, 1):
            for ends in (0, 1):
                for end, chunk in ((1, 1), (7, 1), (36, 3), (100, 13), (1000, 125), (4097, 64)):
                    setup(size, taper, ends)
                    lo, hi = ctypes.c_int64(), ctypes.c_int64()
                    seq = []
                    while True:
                        who = rng.random() < 0.5
                        if not take(chunk, end, ctypes.byref(lo), ctypes.byref(hi), int(who)):
                            break
                        seq.append([int(who), lo.value, hi.value])
                    chunks.append({"size": size, "taper": taper, "ends": ends, "end": end,
                                   "chunk": chunk, "seq": seq})
    print(json.dumps(chunks))
    """
)


def _reference_chunks(size, taper, ends, end, chunk, seq):
    """The chunks `team_take` handed out before the share was one function: the same
    thread order (`seq`'s first column), tapered shares among 2 parts per thread, no
    less than chunk / 4, the caller from the front and workers from the back."""
    parts = size * call_team.TAPER_PARTS
    least = -(-chunk // call_team.TAPER_LEAST)
    front = back = 0
    out = []
    for who, _, _ in seq:
        rem = end - front - back
        if not ends and not taper:
            q = min(chunk, rem)
        else:
            cap = max(-(-rem // parts), least) if taper else chunk
            q = min(chunk, cap, rem)
        if ends and who:
            out.append([who, end - back - q, end - back])
            back += q
        else:
            out.append([who, front, front + q])
            front += q
    assert front + back == end
    return out


def test_team_take_shares_one_tapered_share():
    """`team_take` and `team_take_ends` compute a chunk's size in one function
    (`team_share`); the chunks are those of the two former copies, and every
    iteration of a region is taken exactly once."""
    proc = subprocess.run(
        [sys.executable, "-c", TAKE], capture_output=True, text=True, timeout=600, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    cases = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(cases) == 48
    for case in cases:
        seq = case["seq"]
        want = _reference_chunks(case["size"], case["taper"], case["ends"], case["end"], case["chunk"], seq)  # fmt: skip
        assert seq == want, case
        covered = sorted(i for _, lo, hi in seq for i in range(lo, hi))
        assert covered == list(range(case["end"])), case
    ir = call_team.RUNTIME_IR
    assert ir.count("define internal i64 @team_share(") == 1
    assert ir.count("udiv i64 %rem2, %parts") == 1  # the taper's share is written once
