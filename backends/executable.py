"""`lamina.compile` and `Executable`: the Python API of docs/design.md §7.

`compile()` parses (if given text), runs the default pipeline down to the
`build` phase, JIT-compiles the llvm-dialect module and returns an
`Executable`. `Executable.run("main", *arrays)` checks the arrays against the
entry function's signature (count, shape, dtype) and calls native code on
them without copying: inputs are passed by pointer, outputs are allocated as
NumPy arrays and filled in place (destination-passing style).

The native ABI of an entry function `@f(T0 a0, ..., Tn an) -> (R0, ..., Rm)`
is `void f(const T0* a0, ..., const Tn* an, R0* out0, ..., Rm* outm)` with
every buffer row-major and contiguous (see docs/abi.md).
"""

from __future__ import annotations

import ctypes
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from lamina.backends.stats import CompileStats, StatsRecorder

if TYPE_CHECKING:  # xDSL is imported where it is used: a disk-cache hit never needs it
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.ir import Attribute, Operation

if TYPE_CHECKING:
    from lamina.backends.device_runtime import DeviceStats
    from lamina.core.instruments import Instruments


class LaminaRuntimeError(ValueError):
    """A bad call of compiled code (wrong count, shape or dtype of arguments), or a
    failure the code reported while running (out of memory, `--check-bounds`)."""


def numpy_dtype(element_type: Attribute) -> np.dtype:
    """The NumPy dtype of a tensor element type (the runtime's mapping, raising this
    module's error)."""
    from lamina.backends import runtime

    try:
        return runtime.numpy_dtype(element_type)
    except runtime.RuntimeCallError:
        raise LaminaRuntimeError(f"element type {element_type} has no NumPy equivalent") from None


@dataclass(frozen=True)
class TensorSpec:
    """Shape and dtype of one parameter or result of an entry function."""

    shape: tuple[int, ...]
    dtype: np.dtype

    @staticmethod
    def from_type(ty: Attribute) -> TensorSpec:
        from xdsl.dialects.builtin import TensorType

        if not isinstance(ty, TensorType):
            raise LaminaRuntimeError(f"entry functions take and return static tensors, got {ty}")
        return TensorSpec(tuple(ty.get_shape()), numpy_dtype(ty.element_type))

    def __str__(self) -> str:
        return f"{self.dtype}[{', '.join(map(str, self.shape))}]"


@dataclass(frozen=True)
class Signature:
    name: str
    params: tuple[TensorSpec, ...]
    results: tuple[TensorSpec, ...]
    param_names: tuple[str | None, ...] = ()
    """The parameters' names in the source (`%x` → `x`), None where unnamed."""


def entry_signatures(
    module: ModuleOp, rejected: dict[str, str] | None = None
) -> dict[str, Signature]:
    """Signatures of the top-level graph functions callable on arrays (read before lowering).

    A function over anything but static tensors (closures, scalars, ...) is
    internal, not an entry point; why is recorded in `rejected`, if given.
    """
    from lamina.dialects.graph import FuncOp

    sigs: dict[str, Signature] = {}
    for op in module.ops:
        if _lowered_signature(op, sigs, rejected) or not isinstance(op, FuncOp):
            continue
        ftype = op.function_type
        try:
            params = tuple(TensorSpec.from_type(t) for t in ftype.inputs)
            results = tuple(TensorSpec.from_type(t) for t in ftype.outputs)
        except LaminaRuntimeError as err:
            if rejected is not None:
                rejected[op.sym_name.data] = str(err)
            continue
        names = tuple(arg.name_hint for arg in op.body.block.args) if op.body.blocks else ()
        sigs[op.sym_name.data] = Signature(op.sym_name.data, params, results, names)
    return sigs


def _allocate_result(sig: Signature, index: int) -> np.ndarray:
    """The output array for result `index`; too large for memory is an error of `run`."""
    spec = sig.results[index]
    try:
        return np.empty(spec.shape, spec.dtype)
    except (MemoryError, ValueError) as err:
        raise LaminaRuntimeError(f"@{sig.name} result {index} ({spec}): {err}") from None


def _lowered_signature(
    op: Operation, sigs: dict[str, Signature], rejected: dict[str, str] | None
) -> bool:
    """Record the signature of a host function of a later phase (see entry_points.py)."""
    from lamina.backends.entry_points import (
        is_private,
        lowered_buffers,
        plain_buffer,
        result_count,
    )

    buffers = lowered_buffers(op)
    if buffers is None or is_private(op):
        return False
    name = op.sym_name.data
    bad = [str(t) for t in buffers if not plain_buffer(t)]
    count = result_count(op)
    if bad or not 0 <= count <= len(buffers):
        if rejected is not None:
            rejected[name] = f"parameters must be static row-major buffers, got {', '.join(bad)}"
        return True
    specs = tuple(TensorSpec(tuple(t.get_shape()), numpy_dtype(t.element_type)) for t in buffers)
    split = len(specs) - count
    sigs[name] = Signature(name, specs[:split], specs[split:])
    return True


@dataclass
class Executable:
    """Native code for a module's graph functions, callable on NumPy arrays."""

    signatures: dict[str, Signature]
    compiled: object  # backends.codegen compiled module (keeps the JIT engine alive)
    llvm_module: ModuleOp | None
    """The build-phase module; None when the code came from the disk cache."""
    timings: dict[str, float] = field(default_factory=dict)
    not_entries: dict[str, str] = field(default_factory=dict)
    """Functions that cannot be called from Python, and why."""
    cache_hit: bool | None = None
    """True/False: loaded from / written to the disk cache; None: the cache was off."""
    stats: CompileStats | None = None
    """Time and memory per phase, when compiled with `stats=True`."""
    _calls: dict[str, EntryCall] = field(default_factory=dict, repr=False)
    _errors: tuple[int, int] | None = field(default=None, repr=False)
    """Addresses of the generated code's error globals (None: it cannot fail)."""

    def __post_init__(self) -> None:
        engine = getattr(self.compiled, "engine", None)
        if engine is None:
            return
        if self.llvm_module is None:  # a disk-cache hit: no xDSL import, ask the engine
            from lamina.backends.error_globals import engine_error_addresses

            self._errors = engine_error_addresses(engine)
        else:
            from lamina.backends.llvm_errors import error_addresses

            self._errors = error_addresses(engine, self.llvm_module)

    @property
    def functions(self) -> list[str]:
        return sorted(self.signatures)

    def run(
        self, name: str, *arrays: np.ndarray, out: np.ndarray | Sequence[np.ndarray] | None = None
    ) -> np.ndarray | tuple[np.ndarray, ...]:
        """Call entry function `name`; one result → an array, several → a tuple.

        `out`: preallocated result array(s) (one array, or one per result),
        written in place and returned; checked like the inputs, and also
        C-contiguous, writeable and not overlapping an input or each other.
        """
        call = self._calls.get(name)
        if call is None:
            call = self._calls[name] = EntryCall(
                self._signature(name), self.compiled.get_function_address(name)
            )
        results = call(arrays, out)
        self._raise_pending_error()
        return results

    def _raise_pending_error(self) -> None:
        """Raise what the generated code reported (see backends/llvm_errors.py), if anything."""
        if self._errors is None:
            return
        from lamina.backends.error_globals import pending_error

        message = pending_error(self._errors)
        if message is not None:
            raise LaminaRuntimeError(message)

    def _signature(self, name: str) -> Signature:
        if name in self.not_entries:
            raise LaminaRuntimeError(
                f"@{name} cannot be called on arrays: {self.not_entries[name]}"
            )
        if name not in self.signatures:
            known = ", ".join(self.functions) or "none"
            raise LaminaRuntimeError(f"no entry function '{name}' (known: {known})")
        return self.signatures[name]

    def device_stats(self) -> dict[str, DeviceStats]:
        """Per device (`"cpu:1"`): bytes allocated, live, peak live and copied to it,
        counted by the device runtime since compilation or `reset_device_stats()`."""
        from lamina.backends.device_runtime import read_device_stats

        engine = getattr(self.compiled, "engine", None)
        stats = read_device_stats(engine) if engine is not None else {}
        return {f"cpu:{slot}": value for slot, value in sorted(stats.items())}

    def release_memory(self) -> None:
        """Free the temporaries' blocks that the compiled code keeps for its next call.

        The device runtime reuses freed blocks of 16 KiB and more across calls
        instead of returning them to the system (docs/performance.md); this
        hands them back, e.g. after the last call of a large model.
        """
        from lamina.backends.device_runtime import release_cached_blocks

        engine = getattr(self.compiled, "engine", None)
        if engine is not None:
            release_cached_blocks(engine)

    def reset_device_stats(self) -> None:
        """Zero the device counters (between runs)."""
        from lamina.backends.device_runtime import reset_device_stats

        engine = getattr(self.compiled, "engine", None)
        if engine is not None:
            reset_device_stats(engine)


def _check_input(sig: Signature, i: int, arr: object, spec: TensorSpec) -> np.ndarray:
    """Argument `i` checked against `spec` (a clear error if it does not fit), C-contiguous."""
    if not isinstance(arr, np.ndarray | np.generic):
        raise LaminaRuntimeError(
            f"@{sig.name} argument {i}: expected a numpy array {spec}, got {type(arr).__name__}"
        )
    arr = np.asarray(arr)
    if arr.dtype != spec.dtype:
        raise LaminaRuntimeError(
            f"@{sig.name} argument {i}: expected dtype {spec.dtype}, got {arr.dtype} "
            f"(convert with .astype(np.{spec.dtype}))"
        )
    if tuple(arr.shape) != spec.shape:
        raise LaminaRuntimeError(
            f"@{sig.name} argument {i}: expected shape {spec.shape}, got {tuple(arr.shape)}"
        )
    # Only non-contiguous views are copied; contiguous arrays are passed by pointer.
    return np.ascontiguousarray(arr)


def _pointer(arr: np.ndarray) -> object:
    """A ctypes argument for a C-contiguous array's data pointer, as cheaply as NumPy allows.

    `byref(c_char.from_buffer(a))` costs a quarter of `a.ctypes.data` (and a
    sixth of `a.ctypes.data_as(c_void_p)`, which `run` used to call per
    array); it needs a writeable, non-empty buffer, else `a.ctypes.data`.
    """
    if arr.flags.writeable and arr.nbytes:
        return ctypes.byref(ctypes.c_char.from_buffer(arr))
    return arr.ctypes.data


def _may_overlap(a: np.ndarray, b: np.ndarray) -> bool:
    """Could `a` and `b` share memory? Two distinct arrays owning their data cannot
    (checked first: it is 10x cheaper than `np.may_share_memory`'s bounds test)."""
    if a is b:
        return True
    if a.base is None and b.base is None:
        return False
    return bool(np.may_share_memory(a, b))


class EntryCall:
    """One entry function, prepared on its first call: the native prototype and the specs.

    A call then costs a few attribute checks per array (type, dtype, shape,
    contiguity: the same checks and messages as ever, via `_check_input` on
    the slow path) and one ctypes call.
    """

    __slots__ = ("sig", "cfunc", "params", "results")

    def __init__(self, sig: Signature, address: int):
        self.sig = sig
        count = len(sig.params) + len(sig.results)
        self.cfunc = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * count))(address)
        self.params = tuple((spec.shape, spec.dtype) for spec in sig.params)
        self.results = tuple((spec.shape, spec.dtype) for spec in sig.results)

    def __call__(
        self, arrays: Sequence[object], out: object
    ) -> np.ndarray | tuple[np.ndarray, ...]:
        sig = self.sig
        if len(arrays) != len(self.params):
            raise LaminaRuntimeError(
                f"@{sig.name} expects {len(sig.params)} argument(s), got {len(arrays)}"
            )
        inputs = []
        for i, arr in enumerate(arrays):
            shape, dtype = self.params[i]
            if not (
                type(arr) is np.ndarray
                and arr.dtype == dtype
                and arr.shape == shape
                and arr.flags.c_contiguous
            ):
                arr = _check_input(sig, i, arr, sig.params[i])
            inputs.append(arr)
        if out is None:
            try:
                outputs = [np.empty(shape, dtype) for shape, dtype in self.results]
            except (MemoryError, ValueError):  # the same again, as a clear error of `run`
                outputs = [_allocate_result(sig, i) for i in range(len(self.results))]
        else:
            outputs = self._check_outputs(out, inputs)
        self.cfunc(*[_pointer(a) for a in inputs], *[_pointer(a) for a in outputs])
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def _check_outputs(self, out: object, inputs: list[np.ndarray]) -> list[np.ndarray]:
        """`out` as a list of arrays the native code may write (else a clear error)."""
        sig = self.sig
        outs = [out] if isinstance(out, np.ndarray) else out
        if not isinstance(outs, list | tuple) or len(outs) != len(sig.results):
            raise LaminaRuntimeError(
                f"@{sig.name} out=: expected {len(sig.results)} array(s) "
                f"({', '.join(map(str, sig.results))})"
            )
        for i, (arr, spec) in enumerate(zip(outs, sig.results, strict=True)):
            where = f"@{sig.name} out[{i}]"
            if not isinstance(arr, np.ndarray):
                raise LaminaRuntimeError(
                    f"{where}: expected a numpy array {spec}, got {type(arr).__name__}"
                )
            if arr.dtype != spec.dtype or arr.shape != spec.shape:
                raise LaminaRuntimeError(
                    f"{where}: expected {spec}, got {arr.dtype}{list(arr.shape)}"
                )
            if not (arr.flags.c_contiguous and arr.flags.writeable):
                raise LaminaRuntimeError(f"{where}: must be C-contiguous and writeable")
            # Generated code assumes its buffers do not alias (`noalias`).
            for j, other in enumerate([*inputs, *outs[:i]]):
                if _may_overlap(arr, other):
                    what = f"argument {j}" if j < len(inputs) else f"out[{j - len(inputs)}]"
                    raise LaminaRuntimeError(f"{where}: overlaps {what} (outputs must not alias)")
        return list(outs)


def _as_module(module_or_text: ModuleOp | str | os.PathLike[str], filename: str) -> ModuleOp:
    """A private, verified copy of the input: bad IR is reported as such, before any pass.

    A path (`os.PathLike`, or a one-line string naming an existing file or
    ending in `.mlir`) is read; any other string is the program's text.
    """
    from lamina.core.context import make_context
    from lamina.core.diagnostics import parse_module, verify_module

    if not isinstance(module_or_text, str | os.PathLike):
        module = module_or_text.clone()
    elif _is_path(module_or_text):
        path = os.fspath(module_or_text)
        with open(path, encoding="utf-8") as f:  # a missing file: OSError, a user error
            module = parse_module(make_context(), f.read(), path)
    else:
        module = parse_module(make_context(), module_or_text, filename)
    verify_module(module)
    return module


def _is_path(source: object) -> bool:
    if isinstance(source, os.PathLike):
        return True
    return (
        isinstance(source, str)
        and "\n" not in source
        and (source.endswith(".mlir") or os.path.isfile(source))
    )


def lower_to_build(
    module: ModuleOp,
    targets: Sequence[str] | None = None,
    pipeline: str = "default",
    recorder: StatsRecorder | None = None,
    instruments: Instruments | None = None,
    *,
    check_bounds: bool = False,
) -> tuple[ModuleOp, dict[str, float]]:
    """Run `pipeline` on `module` (in place) down to the build phase; return it and pass times.

    With an enabled `recorder`, each phase runs under its own pass manager and
    is measured. `check_bounds` inserts `check-bounds` right before `lower-to-llvm`.
    """
    from lamina.core.context import make_context
    from lamina.core.devices import with_device_check
    from lamina.core.pass_manager import PassManager
    from lamina.core.pipeline import passes_for_module

    passes = passes_for_module(pipeline, module, targets)  # from the module's phase on
    passes = with_device_check(passes)  # devices no target compiles: refused now, not at run time
    if check_bounds:
        passes = with_bounds_checks(passes)
    if recorder is not None and recorder.enabled and instruments is None:
        return module, _run_by_phase(passes, module, recorder)
    # Records pass times; the instruments print IR, phase dumps, progress, report.
    manager = instruments.pass_manager(passes) if instruments else PassManager(passes)
    manager.run(make_context(), module)
    return module, manager.pass_times


def with_bounds_checks(passes: list) -> list:
    """`passes` with `check-bounds` right before `lower-to-llvm` (the last lowering pass)."""
    from lamina.passes.check_bounds import CheckBoundsPass

    index = next((i for i, p in enumerate(passes) if p.name == "lower-to-llvm"), None)
    if index is None:
        return list(passes)  # already past the lowering phase: nothing left to guard
    return [*passes[:index], CheckBoundsPass(), *passes[index:]]


def compile(  # noqa: A001 - the API name is docs/design.md §7's
    module_or_text: ModuleOp | str | os.PathLike[str],
    targets: Sequence[str] | None = None,
    *,
    pipeline: str = "default",
    filename: str = "<input>",
    cache: bool | None = None,
    stats: bool = False,
    pass_timing: bool = False,
    print_ir_after_all: bool = False,
    dump_phases_to: str | os.PathLike[str] | None = None,
    verbose: bool = False,
    check_bounds: bool = False,
) -> Executable:
    """Compile a graph program (module, text or path of a `.mlir` file; any phase) to native code.

    `cache`: use the disk cache of compiled code (backends/cache.py;
    default: on unless `LAMINA_CACHE=0`; off while an instrument below is
    on, since they observe the compile). `stats`: record time and memory
    per phase in `Executable.stats`. The instruments are the tools' flags
    (docs/instruments.md): `pass_timing` prints a timing report (passes, then
    LLVM's steps) to stderr, `print_ir_after_all` the IR after every pass,
    `dump_phases_to` writes the module as it enters each phase, `verbose`
    reports progress by phase. `check_bounds`: generated code checks every
    buffer access (docs/runtime-errors.md).

    Raises `DiagnosticError` (with located diagnostics) for bad IR or a failed
    pass; `Executable.run` raises `LaminaRuntimeError` for bad arguments and
    for failures the code reports (out of memory; with `check_bounds`, an
    out-of-bounds access, named by kernel, buffer and index).
    """
    instruments = (pass_timing, print_ir_after_all, dump_phases_to, verbose)
    try:
        return _compile(
            module_or_text, targets, pipeline, filename, cache, stats, check_bounds, instruments
        )
    except RecursionError:  # deeply nested input that no stage caught itself
        from lamina.core.diagnostics import TOO_DEEP, Diagnostic, DiagnosticError, SourceLocation

        raise DiagnosticError(
            Diagnostic(TOO_DEEP, location=SourceLocation(filename, 1, 1))
        ) from None


def _compile(
    module_or_text: ModuleOp | str | os.PathLike[str],
    targets: Sequence[str] | None,
    pipeline: str,
    filename: str,
    cache: bool | None,
    stats: bool,
    check_bounds: bool,
    instrument_flags: tuple,
) -> Executable:
    """Cache lookup, else a cold compile (then stored)."""
    from lamina.backends import cache as disk
    from lamina.core.instruments import Instruments

    pass_timing, print_ir_after_all, dump_phases_to, verbose = instrument_flags

    if _is_path(module_or_text):  # the cache key is the text, not the path
        filename = os.fspath(module_or_text)
        with open(filename, encoding="utf-8") as f:  # a missing file: OSError, a user error
            module_or_text = f.read()
    observed = pass_timing or print_ir_after_all or dump_phases_to is not None or verbose
    instruments = (
        Instruments(pass_timing, print_ir_after_all, dump_phases_to, verbose) if observed else None
    )
    recorder = StatsRecorder(stats)
    key = None
    if (disk.enabled() if cache is None else cache) and not observed:
        start = time.perf_counter()
        with recorder.phase("cache lookup"):
            key = _cache_key(module_or_text, targets, pipeline, filename, check_bounds)
            hit = _from_cache(key)
        if hit is not None:
            hit.timings["cache"] = time.perf_counter() - start  # key, read, load: all of it
            hit.stats = recorder.finish(cache_hit=True)
            return hit
    exe = _compile_cold(
        module_or_text, targets, pipeline, filename, recorder, instruments, check_bounds
    )
    if key is not None:
        with recorder.phase("cache write"):
            _to_cache(key, exe)
        exe.cache_hit = False
    exe.stats = recorder.finish(cache_hit=None if key is None else False)
    return exe


def _compile_cold(
    module_or_text: ModuleOp | str,
    targets: Sequence[str] | None,
    pipeline: str,
    filename: str,
    recorder: StatsRecorder,
    instruments: Instruments | None = None,
    check_bounds: bool = False,
) -> Executable:
    """Parse, run the pipeline phase by phase, JIT-compile (with fewer GC pauses)."""
    from lamina.core.gc_pauses import fewer_gc_pauses

    with fewer_gc_pauses():
        return _compile_cold_steps(
            module_or_text, targets, pipeline, filename, recorder, instruments, check_bounds
        )


def _compile_cold_steps(
    module_or_text: ModuleOp | str,
    targets: Sequence[str] | None,
    pipeline: str,
    filename: str,
    recorder: StatsRecorder,
    instruments: Instruments | None,
    check_bounds: bool,
) -> Executable:
    from lamina.backends.codegen import cache_stats, compile_module

    with recorder.phase("parse + verify"):
        module = _as_module(module_or_text, filename)
        not_entries: dict[str, str] = {}
        signatures = entry_signatures(module, not_entries)
    start = time.perf_counter()
    lower_to_build(module, targets, pipeline, recorder, instruments, check_bounds=check_bounds)
    lowering_time = time.perf_counter() - start
    if instruments is not None:
        instruments.progress("codegen: LLVM optimization and JIT compilation")
    hits = cache_stats()["hits"]
    start = time.perf_counter()
    with recorder.phase("codegen"):
        compiled = compile_module(module)
    llvm = compiled.timings
    for step, seconds in (
        ("llvm translate", llvm.translate + llvm.parse_verify),
        ("llvm optimize (O3)", llvm.optimize),
        ("llvm codegen (MCJIT)", llvm.jit),
    ):
        recorder.step(step, seconds)
    timings = {"lowering": lowering_time, "codegen": time.perf_counter() - start}
    if instruments is not None:
        instruments.finish(compiled.timings, cached=cache_stats()["hits"] > hits)
    return Executable(signatures, compiled, module, timings, not_entries)


def _run_by_phase(passes: list, module: ModuleOp, recorder: StatsRecorder) -> dict[str, float]:
    """Run `passes` one phase at a time (a chunk ends with its transition pass), each measured."""
    from lamina.core.context import make_context
    from lamina.core.pass_manager import PassManager
    from lamina.dialects.lamina import get_phase

    ctx = make_context()
    times: dict[str, float] = {}
    while passes:
        transitions = (i + 1 for i, p in enumerate(passes) if getattr(p, "produces", None))
        cut = next(transitions, len(passes))
        manager = PassManager(passes[:cut])
        with recorder.phase(get_phase(module).label):
            manager.run(ctx, module)
        for name, seconds in manager.pass_times.items():
            times[name] = times.get(name, 0.0) + seconds
        passes = passes[cut:]
    return times


# ---------------------------------------------------------------------------
# The disk cache (backends/cache.py)
# ---------------------------------------------------------------------------


def _cache_key(
    module_or_text: ModuleOp | str,
    targets: Sequence[str] | None,
    pipeline: str,
    filename: str,
    check_bounds: bool = False,
) -> str:
    """The disk-cache key. Unknown targets or pipelines get a key too: they fail to
    compile, so nothing is ever stored under it.

    Every `compile` option that changes the generated code (a new keyword
    such as a bounds-checking flag) must go into `CODE_OPTIONS` below, or a
    compile with it would load code compiled without it.
    """
    from lamina.backends import cache as disk

    source = module_or_text if isinstance(module_or_text, str) else str(module_or_text)
    options: dict[str, object] = {"check_bounds": check_bounds}  # CODE_OPTIONS
    return disk.key(
        source, filename=filename, pipeline=pipeline, targets=list(targets or ()), options=options
    )


def _spec_json(spec: TensorSpec) -> list[object]:
    return [list(spec.shape), spec.dtype.str]


def _spec_from_json(data: list[object]) -> TensorSpec:
    shape, dtype = data
    return TensorSpec(tuple(int(d) for d in shape), np.dtype(str(dtype)))


def _to_cache(key: str, exe: Executable) -> bool:
    """Store `exe`'s object code and entry signatures; False if there is nothing to store."""
    from lamina.backends import cache as disk
    from lamina.backends.codegen import _uses_openmp
    from lamina.backends.native_setup import libraries as registered_libraries

    code = getattr(exe.compiled, "object_code", None)
    if code is None:
        return False
    metadata = {
        "signatures": {
            name: {
                "params": [_spec_json(p) for p in sig.params],
                "results": [_spec_json(r) for r in sig.results],
                "param_names": list(sig.param_names),
            }
            for name, sig in exe.signatures.items()
        },
        "not_entries": exe.not_entries,
        "timings": exe.timings,
        # Libraries the code may call (e.g. a CBLAS a target registered while lowering):
        # a hit skips lowering, so it registers them before loading the object.
        "libraries": list(registered_libraries),
        "openmp": exe.llvm_module is not None and _uses_openmp(exe.llvm_module),
    }
    return disk.write(key, disk.Entry(code, metadata)) is not None


def _from_cache(key: str) -> Executable | None:
    """The executable stored under `key`; None on a miss or an entry that cannot be used."""
    from lamina.backends import cache as disk

    entry = disk.read(key)
    if entry is None:
        return None
    try:
        signatures = {
            name: Signature(
                name,
                tuple(_spec_from_json(p) for p in sig["params"]),
                tuple(_spec_from_json(r) for r in sig["results"]),
                tuple(sig.get("param_names", ())),
            )
            for name, sig in entry.metadata["signatures"].items()
        }
        not_entries = {str(k): str(v) for k, v in entry.metadata["not_entries"].items()}
        libraries = [str(path) for path in entry.metadata["libraries"]]
        runtime = bool(libraries) or entry.metadata["openmp"] is True
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    if libraries and not _register_libraries(libraries):
        return None
    try:
        compiled = disk.load(key, entry.object_code, signatures, runtime=runtime)
    except (RuntimeError, OSError, ValueError):  # LLVM could not load it: rebuild
        return None
    return Executable(signatures, compiled, None, {}, not_entries, cache_hit=True)


def _register_libraries(paths: list[str]) -> bool:
    """Register the libraries cached code calls; False if one no longer loads (then rebuild)."""
    from lamina.backends.native_setup import LibraryLoadError, register_library

    try:
        for path in paths:
            register_library(path)
    except LibraryLoadError:
        return False
    return True


def __getattr__(name: str):
    """`DiagnosticError` is re-exported lazily: importing it imports xDSL (not needed on a hit)."""
    if name == "DiagnosticError":
        from lamina.core.diagnostics import DiagnosticError

        return DiagnosticError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["compile", "Executable", "LaminaRuntimeError", "DiagnosticError", "TensorSpec"]  # noqa: F822
