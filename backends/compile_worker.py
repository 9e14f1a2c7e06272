"""LLVM's optimization and code generation in a process Lamina owns: the compile worker.

LLVM's options (`llvm.set_option`, its `cl::opt`s) are process-wide: a user's
other llvmlite users (Numba, say) would see every option Lamina set. So the
options Lamina's code is built with (`OWNED_OPTIONS`) are only ever set in a
process Lamina owns:

* the **compile worker**, a Python process started once per user process (at
  the first compile, `prestart`) that imports llvmlite and nothing else of
  the compiler (`python -m lamina.backends.compile_worker`: ~0.1 s of CPU to
  start), sets the options, then takes units of LLVM IR text and returns their
  object code; it builds them on its own threads (backends/parallel_build.py),
  so the calling process only waits on a pipe, without the GIL;
* the **lowering process** of backends/parallel_lowering.py (a fork that exits
  once its kernels are compiled), which sets them before compiling its units
  (`own_process`).

Either way a unit's object code is what `build_unit` makes of its text with
the options set, in a context of its own: the same code whichever process
built it (the kernel cache's keys include the options, `options_in_effect`).

With `LAMINA_COMPILE_WORKER=0` every unit is built in the calling process with
LLVM's default options (and keyed so). When the worker cannot be started, or
dies (a crash in LLVM), or says nothing for `WAIT_SECONDS`, the units it did
not return are built in the calling process with the default options and a
warning; their code is then not what their keys name, so it is not cached
(`Built.cacheable`). The worker ends when the process that started it closes
its pipe (at exit, or when it dies).

This module imports only the standard library and llvmlite at the top: it is
the worker's main program.
"""

from __future__ import annotations

import atexit
import os
import pickle
import select
import signal
import subprocess
import sys
import threading
import time
import traceback
import warnings
from dataclasses import dataclass, field

import llvmlite.binding as llvm

from lamina.backends import parallel_build
from lamina.runtime.env import env_flag, env_int

OPT_LEVEL = 3
"""LLVM optimization level used for JIT and ahead-of-time code."""

IDLE_PASSES = (
    "loop-load-elim", "loop-simplifycfg", "constraint-elimination", "adce", "bdce",
    "loop-sink", "vector-combine", "div-rem-pairs", "float2int", "loop-distribute",
    "mldst-motion", "openmp-opt", "openmp-opt-cgscc", "aggressive-instcombine",
    "speculative-execution", "callsite-splitting", "globalopt",
)  # fmt: skip
"""O3's passes that never changed a byte of object code on any unit of the ten networks
(AVX-512, and two of them for AVX2; docs/compile-speed.md, "O3 per pass"): skipped."""

KERNEL_OPT_LEVEL_ENV = "LAMINA_KERNEL_OPT_LEVEL"
"""Environment variable: the pass pipeline's speed level for kernel units (2 or 3)."""


def kernel_opt_level(cpu: str = "", features: tuple[str, ...] | frozenset[str] = ()) -> int:
    """The pipeline level kernel units for CPU `cpu` (LLVM's name) with instruction-set
    `features` are optimized at: `LAMINA_KERNEL_OPT_LEVEL` (2 or 3) if set, else
    `OPT_LEVEL` (3) on every CPU. The host unit and a module compiled whole always
    get `OPT_LEVEL`.

    Level 2 keeps the loop and SLP vectorizers, interleaving and the unrollers (Lamina's
    IR has no vector types: every kernel needs them) and drops what LLVM does at 3 only
    (non-trivial loop unswitching, argument promotion, the larger unrolling and
    inlining thresholds). On the Intel Xeon (emeraldrapids) it cut the optimization's
    CPU time on the kernel units of ResNet-50, DenseNet-121, MobileNetV2 and GoogLeNet
    by 10-22 %, outputs bit-identical; the networks' run time stayed within the noise
    but for DenseNet-121 (1.002, 1.020, 1.043 of O3's in three runs), which is why it
    is not the default (docs/compile-speed.md, "A leaner pipeline for the kernels").
    Timed kernel by kernel against a second O3 build, what O2 changes (short row loops
    unrolled by two, not fully) may cost its units 0-2 %, with no kind of kernel
    standing out ("O2 kernels, kernel by kernel"): no rule by kernel either.
    `cpu` and `features` are where a default by CPU would be decided."""
    del cpu, features  # one default everywhere until a CPU's run time proves otherwise
    explicit = kernel_opt_level_set()
    return OPT_LEVEL if explicit is None else explicit


def kernel_opt_level_set() -> int | None:
    """`LAMINA_KERNEL_OPT_LEVEL` (2 or 3), or None when unset (the level is then the
    target's: a function of what the kernel keys already hold)."""
    return env_int(KERNEL_OPT_LEVEL_ENV, None, minimum=2, maximum=3)


OWNED_OPTIONS: tuple[str, ...] = (f"-opt-disable={','.join(IDLE_PASSES)}",)
"""LLVM options set in the processes Lamina owns (never in the user's)."""

ENV = "LAMINA_COMPILE_WORKER"
"""Environment variable: `0` builds every unit in the calling process, LLVM's defaults."""

IDLE_SECONDS = 60.0
"""A worker without work for this long ends (its ~140 MiB freed); the next build
starts another (~0.1 s of CPU)."""

WAIT_SECONDS = 900.0
"""A worker silent for this long while it owes units is stopped (units built here)."""

_owned = False
"""Is this process Lamina's own (the worker, a lowering process)? Then options are set."""
_options_set = False
_options_lock = threading.Lock()


def enabled() -> bool:
    """Build in a process Lamina owns, with `OWNED_OPTIONS`? On unless `LAMINA_COMPILE_WORKER=0`."""
    return env_flag(ENV, True)


def options_in_effect() -> tuple[str, ...]:
    """The LLVM options units are built with (what the kernel cache's keys include):
    none with the worker off, or once a worker failed in this process (`failed`)."""
    return OWNED_OPTIONS if enabled() and failed is None else ()


def own_process() -> None:
    """This process is Lamina's (a lowering process about to build units): units built
    here from now on are built with `options_in_effect()`."""
    global _owned
    _owned = True


def _ensure_options() -> tuple[str, ...]:
    """Set the options in this process if it is Lamina's own; the options units get."""
    global _options_set
    if not _owned:
        return ()
    options = options_in_effect()
    with _options_lock:
        if not _options_set:
            for option in options:
                llvm.set_option("lamina", option)
            _options_set = True
    return options


# ---------------------------------------------------------------------------
# Building one unit (here, in a lowering process or in the worker)
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class UnitSpec:
    """Everything that shapes one unit's object code: its text and how it is built."""

    text: str
    cpu: str
    features: str
    jit: bool = True
    runtime: str | None = None
    """The device runtime's IR, linked in when the unit refers to one of `runtime_symbols`
    (the host defines it, exported; a kernel sees it `available_externally`)."""
    runtime_symbols: tuple[str, ...] = ()
    export_runtime: bool = False
    hide_lamina: bool = False
    """A shared library's unit: `__lamina_` symbols hidden, the runtime too."""
    opt_level: int = OPT_LEVEL
    """The pipeline's speed level (`optimize`): `kernel_opt_level()` for a kernel unit."""


def target_machine(cpu: str, features: str, *, jit: bool) -> llvm.TargetMachine:
    """A fresh TargetMachine (never share one across MCJIT engines). The native target
    must be initialized (`codegen._ensure_llvm`, or the worker's start)."""
    machine = llvm.Target.from_triple(llvm.get_process_triple())
    return machine.create_target_machine(
        cpu=cpu,
        features=features,
        opt=OPT_LEVEL,
        reloc="default" if jit else "pic",
        codemodel="jitdefault" if jit else "default",
        jit=jit,
    )


def optimize(ref: llvm.ModuleRef, tm: llvm.TargetMachine, run=None, level: int = OPT_LEVEL) -> None:
    """Run LLVM's O3 pipeline (`level` 2: O2's; both with loop and SLP vectorization)
    for `tm`'s CPU, in place, then a cleanup of what vectorization leaves (`cleanup`).

    `run(mpm, ref, builder)` runs the pass manager (default: `mpm.run`); the
    parallel build passes one that does not take llvmlite's global lock.
    """
    ref.triple = tm.triple
    ref.data_layout = str(tm.target_data)
    options = llvm.PipelineTuningOptions(speed_level=level)
    options.loop_vectorization = True
    options.slp_vectorization = True
    options.loop_interleaving = True
    options.loop_unrolling = True
    with (
        llvm.create_pass_builder(tm, options) as builder,
        builder.getModulePassManager() as mpm,
    ):
        (run or _run)(mpm, ref, builder)
        with llvm.create_new_module_pass_manager() as after:
            cleanup(after)
            (run or _run)(after, ref, builder)


def cleanup(mpm) -> None:
    """Store-to-load forwarding (GVN) and dead-store elimination after O3.

    A register-blocked micro-kernel accumulates its tile in memory at loop
    level (schedule/register_block.py): a vectorized loop stores the zeros,
    the reduction loop's accumulators are loaded before it (LLVM's LICM keeps
    them in registers across it) and stored after it, where a sunk epilogue
    (schedule/epilogue_sinking.py) loads them again. O3 runs GVN before the
    loop vectorizer makes those loops vector code, so it forwards none of
    it: every block stored and reloaded its tile twice, and the reloads of
    512-bit stores wait for the stores to complete. GVN and DSE after O3
    start the accumulators at zero in registers and hand the finished tile
    to its epilogue in registers (measured, one thread, A/B in one process,
    same output bits: the 128x256 @ 256x2048 feed-forward matmul with bias
    and relu 10 % faster, ResNet-18 6 %, ResNet-50 5 %, the transformer
    encoder 4 %, MobileNetV2 2 %; compile time within noise)."""
    mpm.add_new_gvn_pass()
    mpm.add_dead_store_elimination_pass()
    mpm.add_instruction_combine_pass()


def _run(mpm, ref: llvm.ModuleRef, builder) -> None:
    mpm.run(ref, builder)


def optimized_module(spec: UnitSpec) -> tuple[llvm.ModuleRef, llvm.TargetMachine, dict]:
    """Parse `spec.text` into a context of its own, link the runtime, verify, optimize;
    the module, its TargetMachine and the thread's CPU seconds per step."""
    seconds: dict[str, float] = {}
    start = time.thread_time()
    context = llvm.create_context()
    ref = parallel_build.parse(spec.text, context)
    if spec.runtime is not None:
        _link_runtime(ref, context, spec)
    if spec.hide_lamina:  # a shared library exports the graph functions only
        _hide_lamina_symbols(ref)
    parallel_build.verify(ref)
    start = parallel_build.timed("parse", seconds, start)
    tm = target_machine(spec.cpu, spec.features, jit=spec.jit)
    optimize(ref, tm, run=parallel_build.run_module_passes, level=spec.opt_level)
    parallel_build.timed("optimize", seconds, start)
    return ref, tm, seconds


def build_unit(spec: UnitSpec) -> parallel_build.BuiltUnit:
    """`spec`'s object code (with `OWNED_OPTIONS` in a process Lamina owns), timed per step."""
    _ensure_options()
    ref, tm, seconds = optimized_module(spec)
    start = time.thread_time()
    code = parallel_build.emit_object(tm, ref)
    parallel_build.timed("codegen", seconds, start)
    return parallel_build.BuiltUnit(code, ref, seconds)


def _link_runtime(ref: llvm.ModuleRef, context, spec: UnitSpec) -> None:
    """Link the device runtime into a unit that declares it.

    The host defines it, exported (the kernels' objects call it); a kernel
    sees it `available_externally`: LLVM reads the definitions (and inlines
    them where it did when the module was one) but emits none.
    """
    names = {f.name for f in ref.functions}
    if not any(n in names for n in spec.runtime_symbols):
        return
    assert spec.runtime is not None
    runtime = parallel_build.parse(spec.runtime, context)
    runtime.triple = ref.triple
    runtime.data_layout = ref.data_layout
    ref.link_in(runtime)
    if spec.export_runtime:
        for value in [*ref.functions, *ref.global_variables]:
            if value.name in spec.runtime_symbols and not value.is_declaration:
                # weak_odr, as ODR as linkonce_odr (LLVM infers no more about it than
                # it did in a whole module) but kept though the host may not call it.
                value.linkage = llvm.Linkage.weak_odr
                hidden = spec.hide_lamina
                value.visibility = llvm.Visibility.hidden if hidden else llvm.Visibility.default


def _hide_lamina_symbols(ref: llvm.ModuleRef) -> None:
    """Kernel entries, their messages and the runtime: hidden, resolved inside the
    library when it is linked, never by another library loaded in the same process."""
    for value in [*ref.functions, *ref.global_variables]:
        local = value.linkage in (llvm.Linkage.internal, llvm.Linkage.private)
        if value.name.startswith("__lamina_") and not value.is_declaration and not local:
            value.visibility = llvm.Visibility.hidden


class Deferred:
    """The optimized module of a unit built in another process, made here when printed
    (`CompiledModule.optimized_ir`, for inspection): O3 without `OWNED_OPTIONS`,
    which change no IR but the code generator's (and skip passes that change nothing)."""

    def __init__(self, spec: UnitSpec):
        self.spec = spec

    def __str__(self) -> str:
        return str(optimized_module(self.spec)[0])


# ---------------------------------------------------------------------------
# The calling side
# ---------------------------------------------------------------------------


@dataclass
class Built:
    """A build's units in order, and whether their code is what their keys name."""

    units: list[parallel_build.BuiltUnit]
    cacheable: bool = True
    options: tuple[str, ...] = field(default_factory=tuple)


def build_all(specs: list[UnitSpec]) -> Built:
    """Object code of every unit in `specs` (in their order), built with
    `options_in_effect()`: in the worker, or here when this process is Lamina's own
    or the worker is off; here with LLVM's defaults (not cacheable) when the worker
    fails."""
    global failed
    options = options_in_effect()
    if not options or _owned:
        return Built(parallel_build.build_all(build_unit, specs), True, _ensure_options())
    with _lock:
        done: dict[int, parallel_build.BuiltUnit] = {}
        try:
            try:
                _worker().build(specs, done)
            except _Retired:  # it ended, idle, as the request went out: a new one
                _stop_worker()
                _worker().build(specs, done)
            return Built([done[i] for i in range(len(specs))], True, options)
        except (WorkerFailed, _Retired) as err:
            failed = str(err)
            _stop_worker()
        except UnitError:
            raise  # every answer came: the worker is ready for the next build
        except BaseException:
            _stop_worker()  # interrupted: its answers would reach the next build
            raise
    warnings.warn(
        f"lamina: the compile worker failed ({failed}); building "
        f"{len(specs) - len(done)} units in this process with LLVM's default options "
        "(not cached), and every unit from now on (cached again)",
        RuntimeWarning,
        stacklevel=3,
    )
    rest = [i for i in range(len(specs)) if i not in done]
    fallback = parallel_build.build_all(build_unit, [specs[i] for i in rest])
    for i, unit in zip(rest, fallback, strict=True):
        done[i] = unit
    return Built([done[i] for i in range(len(specs))], False, ())


class WorkerFailed(Exception):
    """The worker ended, sent garbage, or was silent for `WAIT_SECONDS`."""


class _Retired(Exception):
    """The worker ended (idle for `IDLE_SECONDS`) before it read the request."""


class UnitError(RuntimeError):
    """A unit the worker could not build (LLVM rejected it): raised as here."""


@dataclass
class _Worker:
    process: subprocess.Popen
    pid: int
    """The process that started the worker (a fork of it must not use it)."""
    options: tuple[str, ...]
    """The LLVM options it sets (its first message), before it builds anything."""
    ready: bool = False

    def build(self, specs: list[UnitSpec], done: dict) -> None:
        """Send `specs`, receive their objects into `done` (index → BuiltUnit), reporting
        progress; a unit's error is raised once every answer has come."""
        if not self.ready:
            self._send({"options": list(self.options), "idle": IDLE_SECONDS})
            hello = self._receive()
            if tuple(hello.get("options", ())) != self.options:
                raise WorkerFailed(f"it set other options: {hello.get('options')}")
            self.ready = True
        self._send({"specs": specs, "like": _scheduling()})
        failure = None
        for _ in range(len(specs)):
            message = self._receive()
            if "retired" in message:
                raise _Retired("it ended after being idle for IDLE_SECONDS")
            index = message["index"]
            if "error" in message:
                failure = failure or message["error"]
                continue
            done[index] = parallel_build.BuiltUnit(
                message["code"],
                Deferred(specs[index]),  # pyright: ignore[reportArgumentType] (printed only)
                message["seconds"],
            )
            parallel_build.report("built", len(done), len(specs))
        if failure is not None:
            raise UnitError(failure)

    def _send(self, payload: dict) -> None:
        data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
        try:
            stdin = self.process.stdin
            assert stdin is not None
            stdin.write(len(data).to_bytes(8, "little"))
            stdin.write(data)
            stdin.flush()
        except OSError as err:
            raise WorkerFailed(self._ended() or f"writing to it failed: {err}") from None

    def _receive(self) -> dict:
        header = self._read(8)
        try:
            return pickle.loads(self._read(int.from_bytes(header, "little")))
        except WorkerFailed:
            raise
        except Exception:  # noqa: BLE001 - a message it could not finish
            raise WorkerFailed("it sent an unreadable message") from None

    def _read(self, size: int) -> bytes:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        chunks, left = [], size
        while left:
            if not select.select([fd], [], [], WAIT_SECONDS)[0]:
                raise WorkerFailed(f"it was silent for {WAIT_SECONDS:.0f} s")
            chunk = os.read(fd, min(left, 1 << 22))
            if not chunk:
                raise WorkerFailed(self._ended() or "it closed its pipe")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def _ended(self) -> str | None:
        try:
            code = self.process.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            return None
        if code < 0:
            try:
                return f"it died of signal {signal.Signals(-code).name}"
            except ValueError:
                return f"it died of signal {-code}"
        return f"it exited with status {code}"


_lock = threading.Lock()
_current: _Worker | None = None
failed: str | None = None
"""Why the worker failed in this process, if it did (once is enough: a crash in LLVM
would crash the next one too): units are then built here, with no options."""


def prestart() -> None:
    """Start the worker now (its start-up then overlaps the compile's own work), if
    units will be built in it. Cheap when it runs already."""
    if options_in_effect() and not _owned:
        with _lock:
            try:
                _worker()
            except WorkerFailed:
                pass  # said by the build


def _worker() -> _Worker:
    """The running worker of this process, started if need be (`WorkerFailed`: it
    cannot be)."""
    global _current
    if _current is not None and _current.pid == os.getpid():
        if _current.process.poll() is None and _current.options == options_in_effect():
            return _current
        if _current.process.poll() is None:
            shutdown()  # other options asked for: a new worker
        else:
            _stop_worker()
    if _current is not None and _current.pid != os.getpid():
        _current = None  # a fork's copy: the worker is its parent's
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", f"{__package__}.compile_worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            bufsize=0,
            close_fds=True,
        )
    except OSError as err:
        raise WorkerFailed(f"starting {sys.executable}: {err}") from None
    for pipe in (process.stdin, process.stdout):
        _widen(pipe)
    _current = _Worker(process, os.getpid(), options_in_effect())
    return _current


PIPE_BYTES = 1 << 20
"""Pipe buffer asked for (Linux; at most /proc/sys/fs/pipe-max-size, 1 MiB by
default): a model's units (ResNet-50's 0.3 MB of text) go in one write, without
waiting for the worker to be scheduled to read each 64 KiB."""


def _widen(pipe) -> None:
    import fcntl

    if pipe is not None and hasattr(fcntl, "F_SETPIPE_SZ"):
        try:
            fcntl.fcntl(pipe.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        except OSError:
            pass  # a smaller limit: the default size works too


def _detach_worker() -> _Worker | None:
    """Forget this process's worker and close its pipes (it exits on their end);
    None when there is none, or it is a parent's (a forked copy leaves it alone)."""
    global _current
    worker, _current = _current, None
    if worker is None or worker.pid != os.getpid():
        return None
    for pipe in (worker.process.stdin, worker.process.stdout):
        try:
            if pipe is not None:
                pipe.close()
        except OSError:
            pass
    return worker


def _stop_worker() -> None:
    """Stop this process's worker (it failed): closed, killed, reaped."""
    worker = _detach_worker()
    if worker is None:
        return
    try:
        worker.process.kill()
        worker.process.wait(timeout=5.0)
    except (OSError, subprocess.TimeoutExpired):
        pass


def shutdown() -> None:
    """End this process's worker: it exits when its pipe closes (at exit, too)."""
    worker = _detach_worker()
    if worker is None:
        return
    try:
        worker.process.wait(timeout=5.0)
    except subprocess.TimeoutExpired:
        worker.process.kill()


atexit.register(shutdown)


def _forget_in_child() -> None:
    """In a fork: the worker is the parent's. Our copies of its pipes become /dev/null
    (so that it still sees its input end when the parent goes), under the same fd
    numbers: the file objects that own them close /dev/null, never a reused number."""
    global _current
    worker, _current = _current, None
    if worker is None:
        return
    _inherited.append(worker)  # never finalized early
    try:
        null = os.open(os.devnull, os.O_RDWR)
    except OSError:
        return
    try:
        for pipe in (worker.process.stdin, worker.process.stdout):
            try:
                if pipe is not None:
                    os.dup2(null, pipe.fileno())
            except (OSError, ValueError):
                pass
    finally:
        os.close(null)


_inherited: list[_Worker] = []


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)


# ---------------------------------------------------------------------------
# The worker's main program
# ---------------------------------------------------------------------------


def _serve(source, sink) -> None:
    """Answer build requests from `source` on `sink` until `source` ends."""
    from concurrent.futures import ThreadPoolExecutor, as_completed

    write_lock = threading.Lock()

    def send(payload: dict) -> None:
        data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
        with write_lock:
            sink.write(len(data).to_bytes(8, "little") + data)
            sink.flush()

    header = source.read(8)
    if len(header) < 8:
        return
    first = pickle.loads(source.read(int.from_bytes(header, "little")))
    options, idle = first["options"], first["idle"]
    for option in options:  # this process is Lamina's: the options touch no one else
        llvm.set_option("lamina", option)
    send({"options": options, "pid": os.getpid()})
    pool, threads = None, 0
    while True:
        if not select.select([source], [], [], idle)[0]:
            send({"retired": True})  # a request sent meanwhile is sent again
            return
        header = source.read(8)
        if len(header) < 8:
            return
        request = pickle.loads(source.read(int.from_bytes(header, "little")))
        specs: list[UnitSpec] = request["specs"]
        if _schedule_like(request["like"]) != threads or pool is None:  # this thread too
            if pool is not None:
                pool.shutdown()
            threads = request["like"]["threads"]
            pool = ThreadPoolExecutor(threads, thread_name_prefix="lamina-worker")
        order = sorted(range(len(specs)), key=lambda i: -len(specs[i].text))
        like = request["like"]
        futures = {pool.submit(_build_like, like, specs[i]): i for i in order}
        for future in as_completed(futures):
            index = futures[future]
            try:
                built = future.result()
            except Exception as err:  # noqa: BLE001 - sent back, raised there
                message = str(err) if isinstance(err, RuntimeError) else traceback.format_exc()
                send({"index": index, "error": message})
                continue
            send({"index": index, "code": built.object_code, "seconds": built.seconds})
            built.module.close()


def _scheduling() -> dict:
    """How the calling process runs now (its cores, priority, build threads): the worker
    builds the same way, though it was started earlier (`_schedule_like`)."""
    like: dict = {"threads": parallel_build.threads()}
    for name, get in (
        ("affinity", lambda: os.sched_getaffinity(0)),
        ("policy", lambda: (os.sched_getscheduler(0), os.sched_getparam(0).sched_priority)),
        ("nice", lambda: os.getpriority(os.PRIO_PROCESS, 0)),
    ):
        try:
            like[name] = get()
        except (AttributeError, OSError):
            pass
    return like


def _schedule_like(like: dict) -> int:
    """Run this process (and the threads it starts) as `like` says; its thread count."""
    for name, apply in (
        ("affinity", lambda value: os.sched_setaffinity(0, value)),
        ("policy", lambda value: os.sched_setscheduler(0, value[0], os.sched_param(value[1]))),
        ("nice", lambda value: os.setpriority(os.PRIO_PROCESS, 0, value)),
    ):
        if name in like:
            try:
                apply(like[name])
            except (AttributeError, OSError):
                pass  # not allowed (a higher priority), or not on this system
    return like["threads"]


def _build_like(like: dict, spec: UnitSpec) -> parallel_build.BuiltUnit:
    """`build_unit` on a thread scheduled as the caller is (Linux schedules threads)."""
    _schedule_like(like)
    return build_unit(spec)


def main() -> None:
    global _owned, _options_set
    _owned = _options_set = True  # the options come in the first message
    # The specs' class, unpickled by its module's name, is this module's: no second copy.
    sys.modules[f"{__package__ or 'lamina.backends'}.compile_worker"] = sys.modules[__name__]
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    llvm.initialize_native_asmparser()
    source, sink = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing else may write to the pipe
    try:
        _serve(source, sink)
    except (BrokenPipeError, KeyboardInterrupt):
        pass
    os._exit(0)  # no thread pool shutdown: the parent is gone or done


if __name__ == "__main__":
    main()


__all__ = [
    "ENV",
    "IDLE_PASSES",
    "OPT_LEVEL",
    "OWNED_OPTIONS",
    "Built",
    "Deferred",
    "UnitSpec",
    "build_all",
    "build_unit",
    "enabled",
    "kernel_opt_level",
    "kernel_opt_level_set",
    "optimize",
    "options_in_effect",
    "own_process",
    "prestart",
    "shutdown",
    "target_machine",
]
