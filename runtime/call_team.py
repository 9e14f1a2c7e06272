"""One thread team per call: the kernels' parallel regions run on the runtime's own workers.

A network's call opens one `GOMP_parallel` region per parallel kernel (52 in
MobileNetV2). With passive waiting (Lamina's default, runtime/native_setup.py)
each of them wakes the sleeping workers with a futex and often puts the
caller to sleep at the join: about 48 µs per region on a 2-vCPU VM, a large
part of what a second thread saves on kernels of 0.1-0.4 ms
(docs/performance.md, Threads). Spinning workers remove that cost, but
spinning *between* calls takes the cores from NumPy/OpenBLAS and onnxruntime.

With the call team on, an entry call runs on the calling thread, and the
kernels' regions are posted to worker threads of this runtime:

    lamina_team_call(entry, n, args)          workers (started once, pthreads):
      wake the workers, then on the caller:     spin (pause) for the next open region
      entry(args...)                            and run fn(data) if it is still open;
        each kernel's GOMP_parallel(fn, data)   after `spin` pauses without work (or
          = open (fn, data); fn(data); close;   once preempted) sleep on a futex until
            wait for the workers running        the next post (or call)
            chunks

so workers spin only briefly after a region, and give the cores back when
a call ends. The trampolines' `GOMP_loop_dynamic_start/next`
(backends/llvm/parallel.py) take their chunks from the open region's atomic
counter, and `omp_get_num_threads` answers the team's size: the same
iterations in the same chunks as the ordinary lowering, so the numerics
are unchanged. A worker that comes late finds the region closed and skips
it; the caller never waits for a thread that is not running chunks, not
even at the end of the call (the team was one libgomp region per call
before, whose join waited for every worker to leave it: milliseconds when
the worker's core was taken, docs/performance.md "Threads").

How it is wired without changing generated code: this module JIT-compiles a
small runtime (LLVM IR below, x86-64 Linux) once per process and registers
its functions as the symbols in `INTERPOSED` for code the JIT links
afterwards (`llvm.add_symbol`, which takes precedence over loaded
libraries). Outside a team call they forward to libgomp's own functions at
once. `Executable.run` calls entries through `lamina_team_call`, which
declines (returns 0: the caller calls the entry directly) when the team is
off, one thread is set (`omp_get_max_threads`, which `LAMINA_NUM_THREADS`
and `set_num_threads` set), another call holds the team, the caller already
runs inside an OpenMP region, or no worker thread could be started. Shared
libraries from `lamina-compile` link libgomp directly and open one region
per kernel.

`LAMINA_CALL_TEAM` (docs/environment.md) decides whether it is installed and
on; `set_call_team` switches an installed team on or off at run time.

Next to another library's spinning pool thread (OpenBLAS's, onnxruntime's after
their calls) three threads share two cores and the worker is often off its core;
three options, off by default (docs/performance.md, "Sharing the cores with NumPy
and onnxruntime"): `set_close_sleep` lets a caller waiting at a close sleep so the
scheduler may move the worker to its core; `set_solo_below` and `set_solo_lost` run
calls alone (no region posted, one thread's chunks) while the worker took too few
chunks, or after a shared call whose waits at closes cost more than the worker
saved, probing every `SOLO_PROBE`th call.
"""

from __future__ import annotations

import ctypes
import os
import platform
import sys
import threading
import time

from lamina.runtime.env import env_flag, env_int
from lamina.runtime.host import amd_zen

ENV = "LAMINA_CALL_TEAM"
"""Environment variable: `0`/`off`/`false`/`no` never installs the call team; `1`/`on`
installs it and uses it; unset: the default (`DEFAULT_ON`)."""

SPIN_ENV = "LAMINA_TEAM_SPIN"
"""Environment variable: how many `pause` instructions a worker spins for the next
region of a call before it sleeps (default `DEFAULT_SPIN`)."""

DEFAULT_ON = True
"""Whether the call team is used when `LAMINA_CALL_TEAM` is unset. Measured on the idle
2-vCPU Zen 4 (9 torchvision networks, same-run geomean speed-up from one to two
threads, docs/performance.md, Threads): one region per kernel 1.33, the team 1.51
(spin 0) and 1.66 (spin 2000); with each call after a NumPy matmul 0.92 / 1.02 / 0.92,
after a spinning onnxruntime session 0.96 / 1.02 / 0.90. The team is better than one
region per kernel in all three settings, so it is the default (its spin:
`DEFAULT_SPIN`)."""

DEFAULT_SPIN = 400
"""Pauses a worker spins for the next region of a call before it sleeps: 400 is
about 14 µs on Zen 4, longer than most gaps between two parallel kernels
(median 2-3 µs, 95 % of MobileNetV2's below 5 µs, docs/performance.md
"Where two threads lose"), so the next kernel finds the worker awake instead of
waking it with a futex (tens of µs on a VM), and short enough to cost little
when the other core is wanted. Measured on the 2-vCPU Zen 4, same-run geomean
speed-up from one to two threads, spin 0 / 400 / 2000: nine networks alone 1.46 /
1.64 / 1.67; each call after a NumPy matmul (four networks) 0.99 / 1.09 / 0.93;
after an onnxruntime run 1.05 / 1.05. Spin 0 (the earlier default) sleeps at once;
2000 is for back-to-back calls on cores nobody else uses."""

DEFAULT_CLOSE_SLEEP = False
"""Whether a caller that waited `team_spin` pauses at a region's close for a worker's
last chunk then sleeps on a futex (the worker that leaves wakes it) instead of
yielding and checking again (`set_close_sleep`). Measured: docs/performance.md,
Threads, "Sharing the cores with NumPy and onnxruntime"."""

DEFAULT_SOLO_BELOW = 0
"""`set_solo_below`: a call runs alone (its regions are not posted, `omp_get_num_threads`
answers 1: one thread's chunks) when the worker took fewer than this percentage of the
chunks of the last call that shared them; 0 never does. Measured: docs/performance.md,
Threads, "Sharing the cores with NumPy and onnxruntime"."""

DEFAULT_SOLO_LOST = False
"""`set_solo_lost`: a call runs alone (as with `set_solo_below`) when, in the last call
that shared its regions, the caller's waits at closes cost more than the worker's
chunks saved (so that call was slower than one thread would have been)."""

SOLO_PROBE = 8
"""With `set_solo_below`, every this-many-th call shares its regions whatever the last
share was (the worker's core may be free again)."""

PREEMPTED_TICKS = 200_000
"""A gap this long (time stamp counter ticks: about 50-100 µs) between two pauses of a
spinning worker means it lost its core: it then sleeps instead of spinning on."""

TAPER_PARTS = 2
"""Tapered chunks (`set_taper`): a chunk is at most an equal share of what is left of
the region among this many parts per thread. Replayed on one thread's chunk times
(benchmarks/bench_thread_bound.py --taper), nine networks, geomean bound from one to
two threads: 1.887 -> 1.897 with equally fast threads, 1.639 -> 1.705 with a worker
taking 1.2x as long per chunk (one sharing its core, or reading data the caller's
cache holds): the last chunks of the trampolines' four per thread leave the caller
waiting for most of one."""

DEFAULT_TWO_ENDED = False
"""Whether the caller takes each region's chunks from the front of its iterations and
the workers from the back (`set_two_ended`) where `two_ended_default` does not decide
(the call team's IR default, before `install`)."""

ENDS_ENV = "LAMINA_TEAM_ENDS"
"""Environment variable: `1` the caller and the workers take chunks from the two ends of
each region, `0` all from one counter; unset: `two_ended_default` for the host CPU."""


def two_ended_default(cpu_name: str, features) -> bool:
    """Two-ended chunks by default on AVX-512 CPUs other than AMD's (`amd_zen`): there
    each thread then mostly reads what it wrote itself in a chain of kernels over the
    same rows. On the 2-vCPU Xeon VM (emeraldrapids) a cache line written by one vCPU
    took about 330 ns to reach the other (a ping-pong of two pinned threads), two
    threads spent 1.5x one thread's CPU time on ShuffleNetV2's work, and two-ended
    chunks raised every network's two-thread speed-up (same-run A/B, six networks,
    7 rounds: geomean 1.61 -> 1.70, ShuffleNetV2 1.25 -> 1.38, MobileNetV3-Large
    1.57 -> 1.69, MobileNetV2 1.66 -> 1.77; docs/performance.md, "Two-ended chunks").
    Not measured on Zen 4 or AVX2-only CPUs, which keep one shared counter."""
    return "avx512f" in features and not amd_zen(cpu_name)


TAPER_LEAST = 4
"""Tapered chunks are no smaller than the trampoline's chunk / this: each chunk is a
take from the region's shared counter and a call of the loop body."""

MAX_TEAM = 64
"""Workers beyond this many threads do not join (they return at once)."""

MAX_ARGS = 32
"""Entries with more arguments are called directly (one region per kernel)."""

FUTEX_WAIT_PRIVATE = 128
FUTEX_WAKE_PRIVATE = 129
SYS_FUTEX = 202  # x86-64
SYS_GETTID = 186  # x86-64


def _invoke_ir() -> str:
    """`@team_invoke(entry, n, args)`: call `entry` with `n` 64-bit words from `args`
    (pointers and sizes alike travel in integer registers, so an i64 call fits every
    entry's prototype)."""
    cases = "\n".join(f"    i64 {n}, label %a{n}" for n in range(MAX_ARGS + 1))
    blocks = []
    for n in range(MAX_ARGS + 1):
        loads = "".join(
            f"  %a{n}p{i} = getelementptr i64, ptr %args, i64 {i}\n"
            f"  %a{n}v{i} = load i64, ptr %a{n}p{i}, align 8\n"
            for i in range(n)
        )
        params = ", ".join(f"i64 %a{n}v{i}" for i in range(n))
        blocks.append(f"a{n}:\n{loads}  call void %target({params})\n  ret void")
    body = "\n".join(blocks)
    return f"""
define internal void @team_invoke(ptr %target, i64 %n, ptr %args) {{
entry:
  switch i64 %n, label %none [
{cases}
  ]
none:
  ret void
{body}
}}
"""


def _spin_blocks(tired: str) -> str:
    """Blocks `idle` and `spin` of a wait loop: after `%limit` pauses go to `tired`,
    else pause once more (`%spins1` counts them); `spin` ends with its caller's text."""
    return f"""idle:
  %tired = icmp uge i64 %spins, %limit
  br i1 %tired, label %{tired}, label %spin
spin:
  call void @llvm.x86.sse2.pause()
  %spins1 = add i64 %spins, 1"""


RUNTIME_IR = f"""
@team_busy = internal global i32 0, align 64
@team_owner = internal global i64 0, align 64
@team_size = internal global i32 1, align 64
@team_created = internal global i32 0, align 64
@team_workers = internal global [{MAX_TEAM} x i64] zeroinitializer, align 64
@team_seq = internal global i32 0, align 64
@team_fn = internal global ptr null, align 64
@team_data = internal global ptr null, align 8
@team_closed = internal global i32 1, align 64
@team_region = internal global i32 0, align 8
@team_active = internal global i32 0, align 64
@team_next = internal global i64 0, align 64
@team_bound = internal global i64 0, align 8
@team_chunk = internal global i64 1, align 8
@team_sleepers = internal global i32 0, align 64
@team_real_parallel = global ptr null, align 8
@team_real_start = global ptr null, align 8
@team_real_next = global ptr null, align 8
@team_real_end = global ptr null, align 8
@team_real_num_threads = global ptr null, align 8
@team_spin = global i64 {DEFAULT_SPIN}, align 8
@team_on = global i32 0, align 8
@team_calls = global i64 0, align 64
@team_regions = global i64 0, align 8
@team_joined = global i64 0, align 8
@team_threads = global i64 0, align 8
@team_sleeps = global i64 0, align 8
@team_call_ticks = global i64 0, align 64
@team_region_ticks = global i64 0, align 8
@team_close_ticks = global i64 0, align 8
@team_close_few_ticks = global i64 0, align 8
@team_join_ticks = global i64 0, align 64
@team_work_ticks = global i64 0, align 8
@team_posted_at = internal global i64 0, align 64
@team_taper = global i32 1, align 64
@team_ends = global i32 {int(DEFAULT_TWO_ENDED)}, align 64
@team_caller_chunks = global i64 0, align 64
@team_worker_chunks = global i64 0, align 64
@team_close_sleep = global i32 {int(DEFAULT_CLOSE_SLEEP)}, align 64
@team_caller_waiting = internal global i32 0, align 64
@team_close_sleeps = global i64 0, align 64
@team_solo_below = global i32 {DEFAULT_SOLO_BELOW}, align 64
@team_last_share = internal global i32 100, align 64
@team_solo_lost = global i32 {int(DEFAULT_SOLO_LOST)}, align 64
@team_last_lost = internal global i32 0, align 64
@team_solo_calls = global i64 0, align 64
@team_worker_tids = global [{MAX_TEAM} x i64] zeroinitializer, align 64

declare i32 @omp_get_max_threads()
declare i32 @omp_in_parallel()
declare i64 @pthread_self()
declare i32 @pthread_create(ptr, ptr, ptr, ptr)
declare i32 @pthread_detach(i64)
declare i32 @sched_yield()
declare i64 @syscall(i64, ...)
declare void @llvm.x86.sse2.pause()
declare i64 @llvm.readcyclecounter()
declare i64 @llvm.smin.i64(i64, i64)
declare i64 @llvm.smax.i64(i64, i64)
declare i32 @llvm.smin.i32(i32, i32)

define internal void @team_wake() {{
entry:
  %sleepers = load atomic i32, ptr @team_sleepers seq_cst, align 4
  %any = icmp ne i32 %sleepers, 0
  br i1 %any, label %wake, label %done
wake:
  %r = call i64 (i64, ...) @syscall(i64 {SYS_FUTEX}, ptr @team_seq, i32 {FUTEX_WAKE_PRIVATE}, i32 2147483647)
  br label %done
done:
  ret void
}}

; Open a region: fn, data and the chunk counter are written while the region is
; closed; `closed = 0` (release) publishes them, the sequence number wakes the workers.
define internal void @team_post(ptr %fn, ptr %data) {{
entry:
  store ptr %fn, ptr @team_fn, align 8
  store ptr %data, ptr @team_data, align 8
  store atomic i64 0, ptr @team_next monotonic, align 8
  %cur = load atomic i32, ptr @team_seq monotonic, align 4
  %id = add i32 %cur, 1
  store atomic i32 %id, ptr @team_region monotonic, align 4
  %at = call i64 @llvm.readcyclecounter()
  store atomic i64 %at, ptr @team_posted_at monotonic, align 8
  store atomic i32 0, ptr @team_closed seq_cst, align 4
  %old = atomicrmw add ptr @team_seq, i32 1 seq_cst
  call void @team_wake()
  ret void
}}

; Close the region and wait for the workers that joined it (no others will: a worker
; runs a region only if it saw it open after announcing itself in team_active). The
; caller spins `team_spin` pauses, then (with `team_close_sleep`) sleeps on a futex on
; team_active, which the last worker to leave wakes: a worker still running a chunk
; after that long has usually lost its core (to an OpenBLAS or onnxruntime thread
; spinning there), and only a caller that leaves its own core idle lets the kernel
; move the worker there; without `team_close_sleep` it yields and checks again.
define internal void @team_close() {{
entry:
  store atomic i32 1, ptr @team_closed seq_cst, align 4
  %c0 = call i64 @llvm.readcyclecounter()
  %limit = load i64, ptr @team_spin, align 8
  br label %wait
wait:
  %spins = phi i64 [ 0, %entry ], [ %spins1, %spin ], [ %spins, %yield ], [ %spins, %woken ]
  %left = load atomic i32, ptr @team_active seq_cst, align 4
  %done = icmp eq i32 %left, 0
  br i1 %done, label %out, label %idle
{_spin_blocks("long")}
  br label %wait
long:
  %sleepy = load atomic i32, ptr @team_close_sleep monotonic, align 4
  %may = icmp ne i32 %sleepy, 0
  br i1 %may, label %announce, label %yield
yield:
  %y = call i32 @sched_yield()
  br label %wait
announce:
  store atomic i32 1, ptr @team_caller_waiting seq_cst, align 4
  %still = load atomic i32, ptr @team_active seq_cst, align 4
  %busy = icmp ne i32 %still, 0
  br i1 %busy, label %futex, label %woken
futex:
  %zz = atomicrmw add ptr @team_close_sleeps, i64 1 monotonic
  %r = call i64 (i64, ...) @syscall(i64 {SYS_FUTEX}, ptr @team_active, i32 {FUTEX_WAIT_PRIVATE}, i32 %still, ptr null)
  br label %woken
woken:
  store atomic i32 0, ptr @team_caller_waiting seq_cst, align 4
  br label %wait
out:
  %c1 = call i64 @llvm.readcyclecounter()
  %cd = sub i64 %c1, %c0
  %ca = atomicrmw add ptr @team_close_ticks, i64 %cd monotonic
  %iters = load atomic i64, ptr @team_bound monotonic, align 8
  %few = icmp slt i64 %iters, 8
  br i1 %few, label %few_out, label %closed
few_out:
  %fa = atomicrmw add ptr @team_close_few_ticks, i64 %cd monotonic
  br label %closed
closed:
  ret void
}}

; A worker leaves a region: the last one out wakes a caller asleep in team_close
; (the caller announces itself in team_caller_waiting before it reads team_active,
; the worker leaves team_active before it reads team_caller_waiting: one of the two
; sees the other).
define internal void @team_leave() {{
entry:
  %old = atomicrmw sub ptr @team_active, i32 1 seq_cst
  %last = icmp eq i32 %old, 1
  br i1 %last, label %check, label %done
check:
  %waiting = load atomic i32, ptr @team_caller_waiting seq_cst, align 4
  %any = icmp ne i32 %waiting, 0
  br i1 %any, label %wake, label %done
wake:
  %r = call i64 (i64, ...) @syscall(i64 {SYS_FUTEX}, ptr @team_active, i32 {FUTEX_WAKE_PRIVATE}, i32 1)
  br label %done
done:
  ret void
}}

; A worker thread (index %arg, from 0): join every open region of a call whose team
; counts it (index + 1 < team_size), for ever. It stops spinning and sleeps after
; `team_spin` pauses, or at once when the time stamp counter jumped by more than
; PREEMPTED_TICKS between two pauses: it was preempted, so its spinning takes a core
; someone (maybe the caller) needs.
define internal ptr @team_thread(ptr %arg) {{
entry:
  %index = ptrtoint ptr %arg to i64
  %slot = getelementptr i64, ptr @team_workers, i64 %index
  %me = call i64 @pthread_self()
  store atomic i64 %me, ptr %slot seq_cst, align 8
  %tidslot = getelementptr i64, ptr @team_worker_tids, i64 %index
  %tid = call i64 (i64, ...) @syscall(i64 {SYS_GETTID})
  store atomic i64 %tid, ptr %tidslot monotonic, align 8
  %rank = add i64 %index, 1
  %seen0 = load atomic i32, ptr @team_seq seq_cst, align 4
  %t0 = call i64 @llvm.readcyclecounter()
  br label %wait
wait:
  %seen = phi i32 [ %seen0, %entry ], [ %seen, %awake ], [ %ran, %left ], [ %seen, %spin ], [ %now, %check ]
  %spins = phi i64 [ 0, %entry ], [ 0, %awake ], [ 0, %left ], [ %spins1, %spin ], [ 0, %check ]
  %last = phi i64 [ %t0, %entry ], [ %t0, %awake ], [ %t0, %left ], [ %tick, %spin ], [ %t0, %check ]
  ; (after a region or a sleep %last is stale: the first pause's gap is not judged)
  %limit = load i64, ptr @team_spin, align 8
  %now = load atomic i32, ptr @team_seq acquire, align 4
  %posted = icmp ne i32 %now, %seen
  br i1 %posted, label %check, label %idle
{_spin_blocks("sleep")}
  %tick = call i64 @llvm.readcyclecounter()
  %gap = sub i64 %tick, %last
  %first = icmp eq i64 %spins, 0
  %jumped = icmp ugt i64 %gap, {PREEMPTED_TICKS}
  %lost = xor i1 %first, true
  %bad = and i1 %jumped, %lost
  br i1 %bad, label %sleep, label %wait
sleep:
  %s0 = atomicrmw add ptr @team_sleepers, i32 1 seq_cst
  %again = load atomic i32, ptr @team_seq seq_cst, align 4
  %still = icmp eq i32 %again, %seen
  br i1 %still, label %futex, label %awake
futex:
  %zz = atomicrmw add ptr @team_sleeps, i64 1 monotonic
  %r = call i64 (i64, ...) @syscall(i64 {SYS_FUTEX}, ptr @team_seq, i32 {FUTEX_WAIT_PRIVATE}, i32 %seen, ptr null)
  br label %awake
awake:
  %s1 = atomicrmw sub ptr @team_sleepers, i32 1 seq_cst
  br label %wait
check:
  %size = load atomic i32, ptr @team_size acquire, align 4
  %size64 = sext i32 %size to i64
  %member = icmp slt i64 %rank, %size64
  br i1 %member, label %join, label %wait
join:
  %a0 = atomicrmw add ptr @team_active, i32 1 seq_cst
  %closed = load atomic i32, ptr @team_closed seq_cst, align 4
  %open = icmp eq i32 %closed, 0
  br i1 %open, label %run, label %left
run:
  ; the sequence number of the region seen open (it stays open until this worker
  ; leaves: team_close waits for team_active): a worker that saw an older number
  ; runs this region once, not once more when it sees the newer number
  %posted_seq = load atomic i32, ptr @team_region monotonic, align 4
  %fn = load ptr, ptr @team_fn, align 8
  %data = load ptr, ptr @team_data, align 8
  %c = atomicrmw add ptr @team_joined, i64 1 monotonic
  %w0 = call i64 @llvm.readcyclecounter()
  %pa = load atomic i64, ptr @team_posted_at monotonic, align 8
  %late = sub i64 %w0, %pa
  %la = atomicrmw add ptr @team_join_ticks, i64 %late monotonic
  call void %fn(ptr %data)
  %w1 = call i64 @llvm.readcyclecounter()
  %wd = sub i64 %w1, %w0
  %wa = atomicrmw add ptr @team_work_ticks, i64 %wd monotonic
  br label %left
left:
  %ran = phi i32 [ %now, %join ], [ %posted_seq, %run ]
  call void @team_leave()
  br label %wait
}}

; Is the calling thread running a region of the team (its caller or a worker)?
define internal i1 @team_mine() {{
entry:
  %owner = load atomic i64, ptr @team_owner monotonic, align 8
  %none = icmp eq i64 %owner, 0
  br i1 %none, label %no, label %who
who:
  %self = call i64 @pthread_self()
  %caller = icmp eq i64 %self, %owner
  br i1 %caller, label %yes, label %scan
scan:
  %created = load atomic i32, ptr @team_created monotonic, align 4
  %count = sext i32 %created to i64
  br label %next
next:
  %i = phi i64 [ 0, %scan ], [ %i1, %other ]
  %more = icmp slt i64 %i, %count
  br i1 %more, label %look, label %no
look:
  %p = getelementptr i64, ptr @team_workers, i64 %i
  %w = load atomic i64, ptr %p monotonic, align 8
  %same = icmp eq i64 %w, %self
  %i1 = add i64 %i, 1
  br i1 %same, label %yes, label %other
other:
  br label %next
yes:
  ret i1 1
no:
  ret i1 0
}}

; Start worker threads until `want` exist (or one cannot be started); returns how many.
define internal i32 @team_grow(i32 %want) {{
entry:
  %tid = alloca i64, align 8
  br label %loop
loop:
  %have = load atomic i32, ptr @team_created monotonic, align 4
  %enough = icmp sge i32 %have, %want
  br i1 %enough, label %out, label %start
start:
  %index = sext i32 %have to i64
  %arg = inttoptr i64 %index to ptr
  %err = call i32 @pthread_create(ptr %tid, ptr null, ptr @team_thread, ptr %arg)
  %ok = icmp eq i32 %err, 0
  br i1 %ok, label %started, label %out
started:
  %t = load i64, ptr %tid, align 8
  %d = call i32 @pthread_detach(i64 %t)
  %have1 = add i32 %have, 1
  store atomic i32 %have1, ptr @team_created seq_cst, align 4
  %n = atomicrmw add ptr @team_threads, i64 1 monotonic
  br label %loop
out:
  %got = load atomic i32, ptr @team_created monotonic, align 4
  ret i32 %got
}}

{_invoke_ir()}

; The time stamp counter (`tick_rate` converts its ticks to seconds).
define i64 @lamina_team_ticks() {{
entry:
  %t = call i64 @llvm.readcyclecounter()
  ret i64 %t
}}

; In the child of a fork (os.register_at_fork): no worker thread exists there, and no
; call runs; forget the parent's, so that the child's first team call starts its own.
define void @lamina_team_forked() {{
entry:
  store atomic i32 0, ptr @team_created seq_cst, align 4
  store atomic i32 0, ptr @team_sleepers seq_cst, align 4
  store atomic i32 0, ptr @team_active seq_cst, align 4
  store atomic i32 0, ptr @team_caller_waiting seq_cst, align 4
  store atomic i32 1, ptr @team_closed seq_cst, align 4
  store atomic i64 0, ptr @team_owner seq_cst, align 8
  store atomic i32 0, ptr @team_busy seq_cst, align 4
  ret void
}}

; Should the call `%count` (from 0) run alone? With `team_solo_below` > 0 (percent),
; when the worker took fewer than that share of the chunks of the last call that
; shared its regions; with `team_solo_lost`, when that call's waits at closes cost
; more than the worker's chunks saved (`team_judge`); but never every SOLO_PROBE-th
; call, which shares its regions again to see whether the worker is back (its core
; free).
define internal i1 @team_go_solo(i64 %count) {{
entry:
  %below = load atomic i32, ptr @team_solo_below monotonic, align 4
  %share = load atomic i32, ptr @team_last_share monotonic, align 4
  %low = icmp slt i32 %share, %below
  %judged = load atomic i32, ptr @team_solo_lost monotonic, align 4
  %lost = load atomic i32, ptr @team_last_lost monotonic, align 4
  %both = and i32 %judged, %lost
  %slow = icmp ne i32 %both, 0
  %want = or i1 %low, %slow
  br i1 %want, label %check, label %no
check:
  %phase = urem i64 %count, {SOLO_PROBE}
  %probe = icmp eq i64 %phase, 0
  br i1 %probe, label %no, label %yes
yes:
  %c = atomicrmw add ptr @team_solo_calls, i64 1 monotonic
  ret i1 1
no:
  ret i1 0
}}

; Remember what the worker did in a shared call (`team_go_solo`): its share (percent)
; of the chunks, and whether the caller's waits at closes cost more than the worker's
; chunks saved (`team_last_lost`). With `worker` and `caller` chunks, the worker's
; chunks took about worker / caller times the caller's own busy time (call - waits);
; the call was slower than one thread's when the waits exceed that:
; waits * caller > worker * (call - waits). A call without chunks leaves both.
define internal void @team_judge(i64 %worker, i64 %caller, i64 %waits, i64 %call) {{
entry:
  %all = add i64 %worker, %caller
  %any = icmp sgt i64 %all, 0
  br i1 %any, label %share, label %done
share:
  %w100 = mul i64 %worker, 100
  %pct = udiv i64 %w100, %all
  %p32 = trunc i64 %pct to i32
  store atomic i32 %p32, ptr @team_last_share monotonic, align 4
  %busy = sub i64 %call, %waits
  %cost = mul i64 %waits, %caller
  %saved = mul i64 %worker, %busy
  %lost = icmp sgt i64 %cost, %saved
  %l32 = zext i1 %lost to i32
  store atomic i32 %l32, ptr @team_last_lost monotonic, align 4
  br label %done
done:
  ret void
}}

; Run entry(args[0..n)) with one team for the whole call: 1 if it ran, 0 if the
; caller must call the entry itself (team off, one thread, busy, or nested). The
; caller runs the entry; the workers are threads of this runtime, so the call never
; waits for a worker to leave it (a libgomp region's join would).
define i32 @lamina_team_call(ptr %target, i64 %n, ptr %args) {{
entry:
  %on = load atomic i32, ptr @team_on monotonic, align 4
  %off = icmp eq i32 %on, 0
  %many = icmp ugt i64 %n, {MAX_ARGS}
  %no = or i1 %off, %many
  br i1 %no, label %decline, label %threads
threads:
  %max = call i32 @omp_get_max_threads()
  %one = icmp slt i32 %max, 2
  %nested = call i32 @omp_in_parallel()
  %inside = icmp ne i32 %nested, 0
  %skip = or i1 %one, %inside
  br i1 %skip, label %decline, label %claim
claim:
  %pair = cmpxchg ptr @team_busy, i32 0, i32 1 acquire monotonic
  %won = extractvalue {{ i32, i1 }} %pair, 1
  br i1 %won, label %grow, label %decline
grow:
  %cap = call i32 @llvm.smin.i32(i32 %max, i32 {MAX_TEAM})
  %want = sub i32 %cap, 1
  %have = call i32 @team_grow(i32 %want)
  %most = add i32 %have, 1
  %size = call i32 @llvm.smin.i32(i32 %cap, i32 %most)
  %few = icmp slt i32 %size, 2
  br i1 %few, label %release, label %run
run:
  %c = atomicrmw add ptr @team_calls, i64 1 monotonic
  %alone = call i1 @team_go_solo(i64 %c)
  %size1 = select i1 %alone, i32 1, i32 %size
  store atomic i32 %size1, ptr @team_size release, align 4
  %self = call i64 @pthread_self()
  store atomic i64 %self, ptr @team_owner seq_cst, align 8
  %w0 = load atomic i64, ptr @team_worker_chunks monotonic, align 8
  %m0 = load atomic i64, ptr @team_caller_chunks monotonic, align 8
  %z0 = load atomic i64, ptr @team_close_ticks monotonic, align 8
  br i1 %alone, label %invoke, label %wakeup
wakeup:
  ; wake sleeping workers now (no region is open): they spin for the call's first
  ; region while the caller runs the code before it, as a libgomp region's start would
  %old = atomicrmw add ptr @team_seq, i32 1 seq_cst
  call void @team_wake()
  br label %invoke
invoke:
  %k0 = call i64 @llvm.readcyclecounter()
  call void @team_invoke(ptr %target, i64 %n, ptr %args)
  %k1 = call i64 @llvm.readcyclecounter()
  %kd = sub i64 %k1, %k0
  %ka = atomicrmw add ptr @team_call_ticks, i64 %kd monotonic
  br i1 %alone, label %finish, label %judge
judge:
  %w1 = load atomic i64, ptr @team_worker_chunks monotonic, align 8
  %m1 = load atomic i64, ptr @team_caller_chunks monotonic, align 8
  %z1 = load atomic i64, ptr @team_close_ticks monotonic, align 8
  %wn = sub i64 %w1, %w0
  %mn = sub i64 %m1, %m0
  %zn = sub i64 %z1, %z0
  call void @team_judge(i64 %wn, i64 %mn, i64 %zn, i64 %kd)
  br label %finish
finish:
  store atomic i64 0, ptr @team_owner seq_cst, align 8
  store atomic i32 0, ptr @team_busy release, align 4
  ret i32 1
release:
  store atomic i32 0, ptr @team_busy release, align 4
  br label %decline
decline:
  ret i32 0
}}

; What generated code calls as GOMP_parallel(fn, data, num_threads, flags).
define void @lamina_team_parallel(ptr %fn, ptr %data, i32 %threads, i32 %flags) {{
entry:
  %owner = load atomic i64, ptr @team_owner monotonic, align 8
  %self = call i64 @pthread_self()
  %mine = icmp eq i64 %owner, %self
  br i1 %mine, label %team, label %forward
forward:
  %real = load ptr, ptr @team_real_parallel, align 8
  call void %real(ptr %fn, ptr %data, i32 %threads, i32 %flags)
  ret void
team:
  %size = load atomic i32, ptr @team_size monotonic, align 4
  %solo = icmp slt i32 %size, 2
  br i1 %solo, label %alone, label %posted
alone:
  ; a call run alone (team_go_solo): no post, the caller takes every chunk
  store atomic i64 0, ptr @team_next monotonic, align 8
  call void %fn(ptr %data)
  ret void
posted:
  %c = atomicrmw add ptr @team_regions, i64 1 monotonic
  %r0 = call i64 @llvm.readcyclecounter()
  call void @team_post(ptr %fn, ptr %data)
  call void %fn(ptr %data)
  call void @team_close()
  %r1 = call i64 @llvm.readcyclecounter()
  %rd = sub i64 %r1, %r0
  %ra = atomicrmw add ptr @team_region_ticks, i64 %rd monotonic
  ret void
}}

; omp_get_num_threads, which the trampolines size their chunks by: the call's team
; in a region of the team, libgomp's answer elsewhere.
define i32 @lamina_team_num_threads() {{
entry:
  %mine = call i1 @team_mine()
  br i1 %mine, label %team, label %forward
forward:
  %real = load ptr, ptr @team_real_num_threads, align 8
  %r = call i32 %real()
  ret i32 %r
team:
  %size = load atomic i32, ptr @team_size monotonic, align 4
  ret i32 %size
}}

; How many iterations a thread takes next when `%rem` are left of the region (> 0):
; the trampoline's `%chunk`, or with `team_taper` on an equal share of what is left
; among TAPER_PARTS per thread (of `team_size`) if that is smaller, but no less than
; chunk / TAPER_LEAST; never more than is left. team_take and team_take_ends share it.
define internal i64 @team_share(i64 %chunk, i64 %rem) {{
entry:
  %taper = load atomic i32, ptr @team_taper monotonic, align 4
  %tapered = icmp ne i32 %taper, 0
  %size = load atomic i32, ptr @team_size monotonic, align 4
  %size64 = sext i32 %size to i64
  %parts = mul i64 %size64, {TAPER_PARTS}
  %least0 = add i64 %chunk, {TAPER_LEAST - 1}
  %least = udiv i64 %least0, {TAPER_LEAST}
  %rem1 = add i64 %rem, %parts
  %rem2 = sub i64 %rem1, 1
  %even = udiv i64 %rem2, %parts
  %even1 = call i64 @llvm.smax.i64(i64 %even, i64 %least)
  %cap = select i1 %tapered, i64 %even1, i64 %chunk
  %q0 = call i64 @llvm.smin.i64(i64 %chunk, i64 %cap)
  %q = call i64 @llvm.smin.i64(i64 %q0, i64 %rem)
  ret i64 %q
}}

; The next chunk [lo, hi) of the open region's iterations [0, end), if any is left.
; With `team_taper` on, chunks shrink towards the end of the region (`team_share`), so
; a thread that finishes early waits for less of another's last chunk; the iterations
; are independent, so the chunks' bounds do not change the results. Without it every
; thread adds the trampoline's chunk to the shared counter.
define internal i8 @team_take(i64 %chunk, i64 %end, ptr %lo, ptr %hi) {{
entry:
  %ends = load atomic i32, ptr @team_ends monotonic, align 4
  %two = icmp ne i32 %ends, 0
  %fits = icmp slt i64 %end, 2147483648
  %use = and i1 %two, %fits
  br i1 %use, label %both, label %counter
both:
  %r = call i8 @team_take_ends(i64 %chunk, i64 %end, ptr %lo, ptr %hi)
  ret i8 %r
counter:
  %taper = load atomic i32, ptr @team_taper monotonic, align 4
  %tapered = icmp ne i32 %taper, 0
  br i1 %tapered, label %first, label %plain
plain:
  %s = atomicrmw add ptr @team_next, i64 %chunk monotonic
  %more = icmp slt i64 %s, %end
  br i1 %more, label %take, label %none
take:
  %e0 = add i64 %s, %chunk
  %e = call i64 @llvm.smin.i64(i64 %e0, i64 %end)
  store i64 %s, ptr %lo, align 8
  store i64 %e, ptr %hi, align 8
  ret i8 1
first:
  %cur0 = load atomic i64, ptr @team_next monotonic, align 8
  br label %again
again:
  %cur = phi i64 [ %cur0, %first ], [ %seen, %lost ]
  %left = icmp slt i64 %cur, %end
  br i1 %left, label %share, label %none
share:
  %rem = sub i64 %end, %cur
  %q = call i64 @team_share(i64 %chunk, i64 %rem)
  %next = add i64 %cur, %q
  %pair = cmpxchg ptr @team_next, i64 %cur, i64 %next monotonic monotonic
  %won = extractvalue {{ i64, i1 }} %pair, 1
  %seen = extractvalue {{ i64, i1 }} %pair, 0
  br i1 %won, label %took, label %lost
lost:
  br label %again
took:
  store i64 %cur, ptr %lo, align 8
  store i64 %next, ptr %hi, align 8
  ret i8 1
none:
  ret i8 0
}}

; With `team_ends` on: the caller takes its chunks from the front of the region's
; iterations, the workers from the back, until they meet (`set_two_ended`). team_next
; then holds both counts, the front's in its low 32 bits and the back's in its high 32
; bits (regions of 2^31 iterations or more use the shared counter), updated together by
; one compare-and-swap, so every iteration is taken once; the chunks' sizes are
; `team_share`'s, as in team_take.
define internal i8 @team_take_ends(i64 %chunk, i64 %end, ptr %lo, ptr %hi) {{
entry:
  %owner = load atomic i64, ptr @team_owner monotonic, align 8
  %self = call i64 @pthread_self()
  %worker = icmp ne i64 %owner, %self
  %cur0 = load atomic i64, ptr @team_next monotonic, align 8
  br label %again
again:
  %cur = phi i64 [ %cur0, %entry ], [ %seen, %lost ]
  %f = and i64 %cur, 4294967295
  %b = lshr i64 %cur, 32
  %taken = add i64 %f, %b
  %rem = sub i64 %end, %taken
  %left = icmp sgt i64 %rem, 0
  br i1 %left, label %share, label %none
share:
  %q = call i64 @team_share(i64 %chunk, i64 %rem)
  %qb = shl i64 %q, 32
  %step = select i1 %worker, i64 %qb, i64 %q
  %next = add i64 %cur, %step
  %pair = cmpxchg ptr @team_next, i64 %cur, i64 %next monotonic monotonic
  %won = extractvalue {{ i64, i1 }} %pair, 1
  %seen = extractvalue {{ i64, i1 }} %pair, 0
  br i1 %won, label %took, label %lost
lost:
  br label %again
took:
  %back_hi = sub i64 %end, %b
  %back_lo = sub i64 %back_hi, %q
  %front_hi = add i64 %f, %q
  %l = select i1 %worker, i64 %back_lo, i64 %f
  %h = select i1 %worker, i64 %back_hi, i64 %front_hi
  store i64 %l, ptr %lo, align 8
  store i64 %h, ptr %hi, align 8
  ret i8 1
none:
  ret i8 0
}}

; Count a chunk taken in a region of the team, by the caller or by a worker (on
; separate cache lines: the two threads do not contend for one counter).
define internal void @team_count(i8 %got) {{
entry:
  %any = icmp ne i8 %got, 0
  br i1 %any, label %count, label %done
count:
  %owner = load atomic i64, ptr @team_owner monotonic, align 8
  %self = call i64 @pthread_self()
  %worker = icmp ne i64 %owner, %self
  %counter = select i1 %worker, ptr @team_worker_chunks, ptr @team_caller_chunks
  %c = atomicrmw add ptr %counter, i64 1 monotonic
  br label %done
done:
  ret void
}}

; GOMP_loop_dynamic_start / _next / GOMP_loop_end_nowait: in a region of the team the
; chunks come from the region's counter (every thread of a region passes the same
; bounds and chunk; the trampolines start at 0 with step 1), elsewhere from libgomp.
define zeroext i8 @lamina_team_loop_start(i64 %start, i64 %end, i64 %incr, i64 %chunk, ptr %lo, ptr %hi) {{
entry:
  %mine = call i1 @team_mine()
  br i1 %mine, label %team, label %forward
forward:
  %real = load ptr, ptr @team_real_start, align 8
  %r = call zeroext i8 %real(i64 %start, i64 %end, i64 %incr, i64 %chunk, ptr %lo, ptr %hi)
  ret i8 %r
team:
  store atomic i64 %chunk, ptr @team_chunk monotonic, align 8
  store atomic i64 %end, ptr @team_bound monotonic, align 8
  %got = call i8 @team_take(i64 %chunk, i64 %end, ptr %lo, ptr %hi)
  call void @team_count(i8 %got)
  ret i8 %got
}}

define zeroext i8 @lamina_team_loop_next(ptr %lo, ptr %hi) {{
entry:
  %mine = call i1 @team_mine()
  br i1 %mine, label %team, label %forward
forward:
  %real = load ptr, ptr @team_real_next, align 8
  %r = call zeroext i8 %real(ptr %lo, ptr %hi)
  ret i8 %r
team:
  %chunk = load atomic i64, ptr @team_chunk monotonic, align 8
  %end = load atomic i64, ptr @team_bound monotonic, align 8
  %got = call i8 @team_take(i64 %chunk, i64 %end, ptr %lo, ptr %hi)
  call void @team_count(i8 %got)
  ret i8 %got
}}

define void @lamina_team_loop_end_nowait() {{
entry:
  %mine = call i1 @team_mine()
  br i1 %mine, label %team, label %forward
forward:
  %real = load ptr, ptr @team_real_end, align 8
  call void %real()
  ret void
team:
  ret void
}}
"""

INTERPOSED = {
    "GOMP_parallel": ("team_real_parallel", "lamina_team_parallel"),
    "GOMP_loop_dynamic_start": ("team_real_start", "lamina_team_loop_start"),
    "GOMP_loop_dynamic_next": ("team_real_next", "lamina_team_loop_next"),
    "GOMP_loop_end_nowait": ("team_real_end", "lamina_team_loop_end_nowait"),
    "omp_get_num_threads": ("team_real_num_threads", "lamina_team_num_threads"),
}
"""libgomp's entry points that generated code calls (backends/llvm/parallel.py) → the
runtime's global holding libgomp's own address, and the runtime's function that the
JIT links in their place."""

_lock = threading.Lock()
_engine = None
_settings: dict[str, int] = {}
"""Values the `set_*` functions were given (kept for, and applied at, installation, so a
setting made before the first compile is not lost)."""
_call = None
_ticks = None
_tick_rate: float | None = None
_globals: dict[str, int] = {}


def requested() -> bool:
    """Does `LAMINA_CALL_TEAM` (or the default) ask for the call team, on a host it
    supports (x86-64 Linux: `pause`, the futex system call's number)?"""
    if not (sys.platform.startswith("linux") and platform.machine() in ("x86_64", "AMD64")):
        return False
    return env_flag(ENV, DEFAULT_ON)


def install(gomp: ctypes.CDLL, llvm, object_cache=None) -> bool:
    """Compile the runtime and route generated code's `GOMP_parallel` through it.

    Called once by `native_setup.ensure_native` after libgomp is loaded and
    before any code is linked; returns whether it is installed. `llvm` is
    `llvmlite.binding`, initialized. `object_cache`, if given, is MCJIT's
    `(notify, getbuffer)` pair (`ExecutionEngine.set_object_cache`): the
    runtime's object code read from and stored in the disk cache
    (native_setup.py), so a process does not compile it again.
    """
    global _engine, _call, _ticks
    with _lock:
        if _engine is not None:
            return True
        module = llvm.parse_assembly(RUNTIME_IR)
        target = llvm.Target.from_default_triple().create_target_machine(opt=2)
        module.triple = target.triple
        engine = llvm.create_mcjit_compiler(module, target)
        if object_cache is not None:
            engine.set_object_cache(*object_cache)
        engine.finalize_object()
        settable = (
            "team_spin",
            "team_on",
            "team_taper",
            "team_ends",
            "team_close_sleep",
            "team_solo_below",
            "team_solo_lost",
        )
        for name in (*settable, *STATS):
            _globals[name] = engine.get_global_value_address(name)
        for symbol, (real, _) in INTERPOSED.items():
            address = ctypes.cast(getattr(gomp, symbol), ctypes.c_void_p).value
            ctypes.c_void_p.from_address(engine.get_global_value_address(real)).value = address
        ctypes.c_int64.from_address(_globals["team_spin"]).value = _spin_from_env()
        two = env_flag(ENDS_ENV, None)
        if two is None:
            host = {k for k, v in llvm.get_host_cpu_features().items() if v}
            two = two_ended_default(llvm.get_host_cpu_name(), host)
        ctypes.c_int32.from_address(_globals["team_ends"]).value = int(two)
        for symbol, (_, ours) in INTERPOSED.items():
            llvm.add_symbol(symbol, engine.get_function_address(ours))
        forked = ctypes.CFUNCTYPE(None)(engine.get_function_address("lamina_team_forked"))
        os.register_at_fork(after_in_child=forked)
        address = engine.get_function_address("lamina_team_call")
        _call = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p)(
            address
        )
        _ticks = ctypes.CFUNCTYPE(ctypes.c_int64)(engine.get_function_address("lamina_team_ticks"))
        _globals["team_worker_tids"] = engine.get_global_value_address("team_worker_tids")
        _engine = engine
        _immortal(engine)
        _set("team_on", _settings.get("team_on", 1))
        for name, value in _settings.items():
            _set(name, value)
        return True


def _immortal(engine) -> None:
    """Keep `engine`'s code mapped until the process ends: the workers are detached
    pthreads that sleep (or spin) inside it, and kernels linked later call into it.
    At interpreter exit the module's globals are cleared and llvmlite would free
    the code under a thread that is still there; one reference that is never
    dropped leaves the memory to the process's own exit."""
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(engine))


def _spin_from_env() -> int:
    return env_int(SPIN_ENV, DEFAULT_SPIN, minimum=0)


STATS = (
    "team_calls",
    "team_regions",
    "team_joined",
    "team_threads",
    "team_sleeps",
    "team_call_ticks",
    "team_region_ticks",
    "team_close_ticks",
    "team_close_few_ticks",
    "team_join_ticks",
    "team_work_ticks",
    "team_caller_chunks",
    "team_worker_chunks",
    "team_close_sleeps",
    "team_solo_calls",
)
"""Counters of the runtime: calls run by a team, regions posted to it, regions a
worker ran (found still open: a late worker skips a region the caller finished),
worker threads started, and the times a worker went to sleep on the futex; time stamp
counter ticks (`tick_rate` per second; wall time, so a preempted thread's wait
counts): the callers' team calls, their regions (post to close), their waits at a
region's close for the workers still running chunks (`close_few_ticks`: of regions
of fewer than 8 iterations), the workers' delay from a region's post to joining it,
the workers' time running regions; and the chunks the callers and the workers took, and the times a caller slept at a
close (`set_close_sleep`), and the calls run alone (`set_solo_below`). Where a two-thread call's time goes (docs/performance.md, "Where
two threads lose": a few `rdtsc` per region, nothing per iteration)."""


def stats() -> dict[str, int]:
    """The runtime's counters (`STATS`, without the `team_` prefix); zeros if not installed."""
    return {
        name.removeprefix("team_"): ctypes.c_int64.from_address(_globals[name]).value
        if _engine is not None
        else 0
        for name in STATS
    }


def tick_rate() -> float:
    """Time stamp counter ticks per second (the `*_ticks` counters of `stats`), measured
    once per process against `time.perf_counter` over 20 ms; 0.0 if not installed."""
    global _tick_rate
    if _ticks is None:
        return 0.0
    if _tick_rate is None:
        start, ticks = time.perf_counter(), _ticks()
        time.sleep(0.02)
        _tick_rate = rate = (_ticks() - ticks) / (time.perf_counter() - start)
        return rate
    return _tick_rate


def installed() -> bool:
    return _engine is not None


def _set(name: str, value: int) -> None:
    """Remember `value` for the runtime's global `name`, and write it if installed."""
    _settings[name] = value
    if _engine is not None:
        ctype = ctypes.c_int64 if name == "team_spin" else ctypes.c_int32
        ctype.from_address(_globals[name]).value = value


def set_call_team(on: bool) -> None:
    """Use (or stop using) the call team for the calls that start from now on (kept
    until the team is installed when set before)."""
    _set("team_on", int(on))


def spin() -> int:
    """How many `pause` instructions a worker spins for the next region (0 if not installed)."""
    return ctypes.c_int64.from_address(_globals["team_spin"]).value if _engine is not None else 0


def set_spin(pauses: int) -> None:
    """How many `pause` instructions a worker spins for the next region before it sleeps."""
    _set("team_spin", max(0, int(pauses)))


def set_taper(on: bool) -> None:
    """Shrink the chunks towards the end of each region (`TAPER_PARTS`, `TAPER_LEAST`; on
    by default) or hand out the trampolines' chunk to the end."""
    _set("team_taper", int(on))


def set_two_ended(on: bool) -> None:
    """Let the caller take a region's chunks from the front and the workers from the back
    (`DEFAULT_TWO_ENDED`), or every thread the next chunk of one counter."""
    _set("team_ends", int(on))


def two_ended() -> bool:
    """Whether the caller and the workers take chunks from the two ends of a region."""
    if _engine is None:
        return DEFAULT_TWO_ENDED
    return bool(ctypes.c_int32.from_address(_globals["team_ends"]).value)


def set_close_sleep(on: bool) -> None:
    """Let a caller that waited `spin()` pauses at a region's close for a worker's last
    chunk sleep until the worker leaves (`DEFAULT_CLOSE_SLEEP`), or keep it yielding."""
    _set("team_close_sleep", int(on))


def set_solo_below(percent: int) -> None:
    """Run a call alone when the worker took fewer than `percent` % of the chunks of the
    last call that shared them (every `SOLO_PROBE`th call shares them anyway); 0 (the
    default, `DEFAULT_SOLO_BELOW`) always shares."""
    _set("team_solo_below", max(0, int(percent)))


def set_solo_lost(on: bool) -> None:
    """Run a call alone when the last call that shared its regions lost more at its
    closes than the worker saved (`DEFAULT_SOLO_LOST`; every `SOLO_PROBE`th call shares
    them anyway)."""
    _set("team_solo_lost", int(on))


def worker_tids() -> list[int]:
    """The kernel thread ids of the team's workers started so far (for per-thread CPU
    time in /proc/self/task/<tid>/schedstat: which threads of the process are not ours)."""
    if _engine is None:
        return []
    count = stats()["threads"]
    array = (ctypes.c_int64 * MAX_TEAM).from_address(_globals["team_worker_tids"])
    return [tid for tid in array[: min(count, MAX_TEAM)] if tid]


def call(address: int, words: list[int]) -> bool:
    """Run the entry at `address` on `words` (pointers, sizes) with one team for the whole
    call; False if the team declined (then the caller calls the entry itself)."""
    if _call is None:
        return False
    count = len(words)
    return bool(_call(address, count, (ctypes.c_int64 * max(count, 1))(*words)))


__all__ = [
    "DEFAULT_ON",
    "ENDS_ENV",
    "ENV",
    "SPIN_ENV",
    "call",
    "install",
    "installed",
    "requested",
    "set_call_team",
    "set_close_sleep",
    "set_solo_below",
    "set_solo_lost",
    "set_spin",
    "set_taper",
    "set_two_ended",
    "spin",
    "two_ended",
    "stats",
    "tick_rate",
    "two_ended_default",
    "worker_tids",
]
