"""Kernels compiled once: object code keyed by the kernel, in memory and on disk.

`kernel_split` gives every kernel a key: the SHA-256 of its normalized LLVM
IR and of `facts(target)` — the target's CPU name and features (the `isa`
option, or the host's), the optimization level, the LLVM options units are
built with (backends/compile_worker.py), the LLVM and llvmlite versions and the
code generator's own source — so a key names exactly one object file. `build_split` then compiles each
distinct kernel at most once:

* in this process (`_objects`: key → object code and optimized module);
* across processes, in the disk cache's `kernels/` folder (runtime/cache.py,
  on unless `LAMINA_CACHE=0`): ResNet-34 after ResNet-18 compiles only the
  kernels ResNet-18 did not have;
* identical kernels inside one module share one key, hence one build.

What is left to build (the missing kernels and the host unit, which holds
the model's own graph functions) is compiled in parallel in the compile worker
(backends/compile_worker.py, backends/parallel_build.py). `CompileTimings` receives thread time per step
and the wall time of the build; `stats()` counts hits and misses.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import llvmlite.binding as llvm

from lamina.backends import compile_worker, parallel_build
from lamina.backends.kernel_split import KERNEL_RUNTIME_IR, KernelUnit, Split
from lamina.backends.llvm.device_runtime import RUNTIME_IR
from lamina.runtime import cache as disk
from lamina.runtime.env import LaminaEnvWarning, env_path

if TYPE_CHECKING:  # codegen imports this module
    from lamina.backends.codegen import CodeTarget

_RUNTIME_SYMBOLS = tuple(
    name
    for name in re.findall(r"(?:define linkonce_odr hidden [^@]*@|^@)([\w.]+)", RUNTIME_IR, re.M)
    if not name.startswith("llvm.")
)
"""Functions and globals the device runtime defines (the host exports them to the kernels)."""


@dataclass
class KernelObject:
    """A compiled kernel: its object code, and its optimized module if built in this process."""

    symbol: str
    object_code: bytes
    module: llvm.ModuleRef | None = None


@dataclass
class BuildResult:
    """Everything the engine loads, in load order, and what to inspect."""

    objects: list[bytes]
    modules: list[llvm.ModuleRef | None]
    kernels: dict[str, str] = field(default_factory=dict)
    """Kernel symbol → where its object came from: "built", "memory" or "disk"."""


_objects: dict[str, KernelObject] = {}
_lock = threading.Lock()
_stats = {"built": 0, "memory": 0, "disk": 0}
_first_seen: dict[str, str] = {}
"""Kernels put in memory for a build to come (read from disk, or built by a lowering
process): where the build that uses them reports them from."""


def facts(target: CodeTarget, jit: bool = True) -> str:
    """Everything besides a kernel's text that shapes its object code for `target`:
    also the LLVM options units are built with (backends/compile_worker.py), and
    whether it is JIT code or position-independent code for a library (`jit`)."""
    level = compile_worker.kernel_opt_level(target.cpu, target.required)
    found = _facts(target, compile_worker.options_in_effect(), level)
    return found if jit else f"{found}\ncode=pic"


@cache
def _facts(target: CodeTarget, options: tuple[str, ...], kernel_level: int) -> str:
    import sys

    import llvmlite

    from lamina.backends import codegen, kernel_families, kernel_split

    sources = hashlib.sha256()
    modules = (
        codegen, kernel_split, kernel_families, parallel_build, compile_worker,
        sys.modules[__name__],
    )  # fmt: skip
    for module in modules:
        assert module.__file__ is not None, "a module of Lamina's source tree"
        sources.update(Path(module.__file__).read_bytes())  # wherever the modules live
    return "\n".join(
        [
            target.key,
            f"triple={llvm.get_process_triple()}",
            f"opt={codegen.OPT_LEVEL}",
            f"kernel_opt={kernel_level}",
            f"llvm={'.'.join(map(str, llvm.llvm_version_info))}",
            f"llvmlite={llvmlite.__version__}",
            f"codegen={sources.hexdigest()}",
            f"llvm_options={' '.join(options)}",
        ]
    )


def stats() -> dict[str, int]:
    """Kernels built, and found in memory or on disk, in this process."""
    with _lock:
        return {**_stats, "size": len(_objects)}


def clear() -> None:
    """Forget the kernels compiled in this process (the disk cache is untouched)."""
    with _lock:
        _objects.clear()
        _first_seen.clear()
        _stats.update(built=0, memory=0, disk=0)


def _lookup(unit: KernelUnit, use_disk: bool) -> tuple[KernelObject | None, str]:
    with _lock:
        found = _objects.get(unit.key)
    if found is not None:
        with _lock:
            if unit.key in _first_seen:
                return found, _first_seen.pop(unit.key)
        return found, "memory"
    if use_disk:
        code = disk.read_kernel(unit.key)
        if code is not None:
            found = KernelObject(unit.symbol, code)
            with _lock:
                _objects.setdefault(unit.key, found)
            return found, "disk"
    return None, "built"


def preload(key: str, symbol: str) -> bool:
    """Is the object of kernel `key` at hand (in memory, or read from disk into memory)?
    A kernel reused before lowering (backends/kernel_reuse.py) has no text to build
    from: its object must stay available until its module is linked."""
    unit = KernelUnit(key, symbol, "", ())
    found, where = _lookup(unit, disk.enabled())
    if where == "disk":
        with _lock:
            _first_seen[key] = "disk"  # reported as found on disk by the build that uses it
    return found is not None


def insert(key: str, symbol: str, object_code: bytes) -> None:
    """Object code of kernel `key` compiled elsewhere (a lowering process,
    backends/parallel_lowering.py): kept in memory and on disk, as if built here."""
    with _lock:
        _objects[key] = KernelObject(symbol, object_code)
        _first_seen[key] = "built"
    if disk.enabled():
        disk.write_kernel(key, object_code)


_split_observers: list[Callable[[Split], None]] = []


def observe_splits(observer: Callable[[Split], None]) -> Callable[[], None]:
    """Have `observer(split)` called with every split `build_split` builds from now on,
    before anything is built; returns the function that stops it. The hook of the
    tuner's measuring process (tuning/worker.py), which learns from it which kernel
    unit (which code) each kernel of a model got: a candidate whose kernels' code is
    the default's is not timed as new."""
    _split_observers.append(observer)
    return lambda: _split_observers.remove(observer)


DUMP_ENV = "LAMINA_DUMP_UNITS"
"""Environment variable: a directory `build_split` writes every unit's LLVM IR text to
(`host.ll`, and `<kernel>.ll` per kernel it has the text of), to diff the code two
versions of the compiler generate (docs/environment.md)."""


def _dump_units(split: Split) -> None:
    """Write `split`'s units to `$LAMINA_DUMP_UNITS` (nothing when it is unset)."""
    directory = env_path(DUMP_ENV)
    if directory is None:
        return
    path = Path(directory)
    try:
        path.mkdir(parents=True, exist_ok=True)
        (path / "host.ll").write_text(split.host)
        for unit in split.kernels:
            if unit.text:
                (path / f"{unit.names[0] if unit.names else unit.symbol}.ll").write_text(unit.text)
    except OSError as error:  # a debugging aid: the compile goes on without it
        warnings.warn(
            f"{DUMP_ENV}: cannot write the units: {error}", LaminaEnvWarning, stacklevel=2
        )


def build_split(
    split: Split, timings, target: CodeTarget, *, use_memory: bool = True, jit: bool = True
) -> BuildResult:
    """Object code for every unit of `split` for `target`: kernels from the caches where
    possible, the rest (and the host) compiled in parallel. `timings`: a
    `codegen.CompileTimings`. The observers (`observe_splits`) see `split` first.
    `jit=False`: position-independent code for a library (`split` keyed with
    `facts(target, jit=False)`)."""
    for observer in list(_split_observers):
        observer(split)
    _dump_units(split)
    use_disk = disk.enabled()
    found: dict[str, tuple[KernelObject, str]] = {}
    missing: list[KernelUnit] = []
    awaited: list[KernelUnit] = []  # a lowering process's, still being compiled there
    for unit in split.kernels:
        reused = not unit.text  # no text: compiled before, preloaded, or by a lowering process
        obj, where = _lookup(unit, use_disk) if use_memory or reused else (None, "built")
        if obj is None and reused:
            awaited.append(unit)
        elif obj is None:
            missing.append(unit)
        else:
            found[unit.key] = (obj, where)

    parallel_build.report("cached", len(split.kernels) - len(missing), len(split.kernels))
    wall = time.perf_counter()
    outcome = compile_worker.build_all([unit_spec(u, target, jit) for u in [split.host, *missing]])
    built = outcome.units
    _record(timings, built, time.perf_counter() - wall)
    host, kernel_builds = built[0], built[1:]
    for unit, result in zip(missing, kernel_builds, strict=True):
        obj = KernelObject(unit.symbol, result.object_code, result.module)
        found[unit.key] = (obj, "built")
        if use_memory and outcome.cacheable:
            with _lock:
                _objects[unit.key] = obj
        if use_disk and outcome.cacheable:
            disk.write_kernel(unit.key, result.object_code)
    if awaited:
        _collect_awaited(awaited, found, use_disk)
    result = BuildResult([host.object_code], [host.module])
    with _lock:
        for unit in split.kernels:
            obj, where = found[unit.key]
            _stats[where] += 1
            result.objects.append(obj.object_code)
            result.modules.append(obj.module)
            result.kernels[unit.symbol] = where
    return result


def _collect_awaited(
    awaited: list[KernelUnit], found: dict[str, tuple[KernelObject, str]], use_disk: bool
) -> None:
    """The kernels a lowering process compiles (backends/parallel_lowering.py), received
    once this process has built its own units: both processes compile at once."""
    from lamina.backends import parallel_lowering

    parallel_lowering.collect_all()
    for unit in awaited:
        obj, where = _lookup(unit, use_disk)
        if obj is None:
            raise RuntimeError(f"kernel {unit.symbol} vanished from the kernel cache")
        found[unit.key] = (obj, where)


def unit_spec(unit: KernelUnit | str, target: CodeTarget, jit: bool = True):
    """How to build `unit` (`str`: the host) for `target`'s CPU (backends/compile_worker.py)."""
    is_host = isinstance(unit, str)
    runtime = None
    if is_host:
        runtime = RUNTIME_IR
    elif unit.uses_runtime:
        runtime = KERNEL_RUNTIME_IR
    return compile_worker.UnitSpec(
        unit if is_host else unit.text,
        target.cpu,
        target.features,
        jit=jit,
        runtime=runtime,
        runtime_symbols=_RUNTIME_SYMBOLS,
        export_runtime=is_host,
        hide_lamina=not jit,
        opt_level=(
            compile_worker.OPT_LEVEL
            if is_host
            else compile_worker.kernel_opt_level(target.cpu, target.required)
        ),
    )


def _build_unit(unit: KernelUnit | str, target: CodeTarget, jit: bool = True):
    """Parse (into a context of its own), link the runtime, verify, optimize and compile
    one unit (`str`: the host) for `target`'s CPU in this process, timed per step."""
    from lamina.backends.codegen import _ensure_llvm

    _ensure_llvm()
    return compile_worker.build_unit(unit_spec(unit, target, jit))


def _record(timings, built: list[parallel_build.BuiltUnit], wall: float) -> None:
    """The build's wall time, shared among parse, optimize and codegen in proportion
    to their CPU time, so the steps still add up to the compile's wall time; the
    CPU time summed over threads goes to `build_cpu`."""
    steps = {"parse": 0.0, "optimize": 0.0, "codegen": 0.0}
    for result in built:
        for step in steps:
            steps[step] += result.seconds.get(step, 0.0)
    cpu = sum(steps.values())
    share = wall / cpu if cpu > 0 else 0.0
    timings.build_wall, timings.build_cpu = wall, cpu
    timings.parse_verify += steps["parse"] * share
    timings.optimize += steps["optimize"] * share
    timings.jit += steps["codegen"] * share


__all__ = [
    "BuildResult",
    "KernelObject",
    "build_split",
    "clear",
    "insert",
    "observe_splits",
    "preload",
    "facts",
    "stats",
    "unit_spec",
]
