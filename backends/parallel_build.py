"""Optimize and compile independent LLVM modules to object code on every core.

The units of `kernel_split` share nothing, so each is parsed into an LLVM
context of its own, optimized (O3, the code generator's pipeline) and
compiled to an object file by its own TargetMachine, on a thread pool.

Threads, not processes: parsing, O3 and instruction selection are single
calls into libLLVM, and ctypes releases the GIL around them. llvmlite
serializes every call with one process-wide lock (it cannot know which calls
are independent); the three long calls (parse, the pass manager, code
emission) are made here without it, which is safe because each thread only
touches its own context, module, pass builder and target machine — the way
LLVM's own parallel back ends (ThinLTO) run. Measured on a 2-core machine,
ResNet-50's kernels: see docs/compile-speed.md. These threads run in the
compile worker (backends/compile_worker.py: a process of Lamina's own, which
only receives the units' text and returns their object code), in a lowering
process, or, with the worker off, in the calling process.

`LAMINA_BUILD_THREADS` sets the number of threads (default: the cores this
process may use; 1 builds in the calling thread). The result does not
depend on it: every unit is compiled alone, and results come back in the
order of the units.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from ctypes import c_char_p, string_at
from dataclasses import dataclass, field
from typing import TypeVar

import llvmlite.binding as llvm
from llvmlite.binding import ffi

from lamina.runtime.host import BUILD_THREADS_ENV, build_threads

_Unit = TypeVar("_Unit")

THREADS_ENV = BUILD_THREADS_ENV
"""Environment variable: threads that compile units (default: the usable cores)."""

threads = build_threads


def _unlocked(name: str):
    """The raw ctypes function of llvmlite's `name`, without llvmlite's global lock."""
    return getattr(ffi.lib, name)._cfn


@dataclass
class BuiltUnit:
    """One unit's object code and its optimized module (for inspection)."""

    object_code: bytes
    module: llvm.ModuleRef
    seconds: dict[str, float] = field(default_factory=dict)
    """CPU time of its thread per step: parse (and link, verify), optimize, codegen."""


def parse(text: str, context: llvm.ContextRef) -> llvm.ModuleRef:
    """`llvm.parse_assembly` into `context`, without the global lock."""
    with ffi.OutputString() as errmsg:
        handle = _unlocked("LLVMPY_ParseAssembly")(context, c_char_p(text.encode()), errmsg)
        ref = llvm.ModuleRef(handle, context)
        if errmsg:
            ref.close()
            raise RuntimeError(f"LLVM IR parsing error\n{errmsg}")
    return ref


def verify(ref: llvm.ModuleRef) -> None:
    with ffi.OutputString() as message:
        if _unlocked("LLVMPY_VerifyModule")(ref, message):
            raise RuntimeError(str(message))


def run_module_passes(mpm, ref: llvm.ModuleRef, builder) -> None:
    """`ModulePassManager.run` without the global lock."""
    _unlocked("LLVMPY_RunNewModulePassManager")(mpm, ref, builder)


def emit_object(tm: llvm.TargetMachine, ref: llvm.ModuleRef) -> bytes:
    """`TargetMachine.emit_object` without the global lock (for the long code emission)."""
    with ffi.OutputString() as error:
        buffer = _unlocked("LLVMPY_TargetMachineEmitToMemory")(tm, ref, 1, error)
        if not buffer:
            raise RuntimeError(str(error))
    try:
        return string_at(
            ffi.lib.LLVMPY_GetBufferStart(buffer), ffi.lib.LLVMPY_GetBufferSize(buffer)
        )
    finally:
        ffi.lib.LLVMPY_DisposeMemoryBuffer(buffer)


def build_all(
    build: Callable[[_Unit], BuiltUnit], units: Sequence[_Unit], workers: int | None = None
) -> list[BuiltUnit]:
    """`build(unit)` for every unit, on `workers` threads; results in the units' order.

    The largest units start first (by text length, when the units are
    strings or have `.text`), so one long kernel does not finish alone at
    the end. The first exception is raised after every thread is done.
    """
    workers = min(workers or threads(), len(units))
    if workers <= 1:
        built = []
        for unit in units:
            built.append(build(unit))
            report("built", len(built), len(units))
        return built
    order = sorted(range(len(units)), key=lambda i: -_size(units[i]))
    results: list[BuiltUnit | None] = [None] * len(units)
    with ThreadPoolExecutor(workers, thread_name_prefix="lamina-build") as pool:
        futures = {i: pool.submit(build, units[i]) for i in order}
        for done, future in enumerate(as_completed(futures.values()), 1):
            if future.exception() is None:
                report("built", done, len(units))
        for i, future in futures.items():
            results[i] = future.result()
    return results  # type: ignore[return-value]


_listeners: list[Callable[[str, int, int], None]] = []


@contextmanager
def reporting(listener: Callable[[str, int, int], None]) -> Iterator[None]:
    """Within the block, `listener(event, done, total)` hears of the build's progress:
    `("built", units done, units)` as each unit finishes (from the calling thread),
    `("cached", kernels found, kernels)` when the caches were looked up
    (backends/kernel_cache.py). The progress line of driver/instruments.py."""
    _listeners.append(listener)
    try:
        yield
    finally:
        _listeners.remove(listener)


def report(event: str, done: int, total: int) -> None:
    """Tell the listeners (none, usually: then this costs a list check)."""
    for listener in list(_listeners):
        listener(event, done, total)


def _size(unit: object) -> int:
    text = unit if isinstance(unit, str) else getattr(unit, "text", "")
    return len(text) if isinstance(text, str) else 0


def timed(step: str, seconds: dict[str, float], start: float) -> float:
    """Add the thread's CPU time since `start` to `seconds[step]`; return now.

    CPU time, not wall time: on a busy machine a thread's wall time counts
    the time it waited for a core, and the steps' shares would be wrong."""
    now = time.thread_time()
    seconds[step] = seconds.get(step, 0.0) + now - start
    return now


__all__ = [
    "THREADS_ENV",
    "BuiltUnit",
    "build_all",
    "report",
    "reporting",
    "emit_object",
    "parse",
    "run_module_passes",
    "threads",
    "timed",
    "verify",
]
