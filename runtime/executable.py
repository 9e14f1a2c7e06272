"""`Executable`: compiled code callable on NumPy arrays, the result of `lamina.compile`.

`Executable.run("main", *arrays)` checks the arrays against the entry
function's signature (count, shape, dtype) and calls native code on them
without copying: inputs are passed by pointer, outputs are allocated as
NumPy arrays and filled in place (destination-passing style).

The native ABI of an entry function `@f(T0 a0, ..., Tn an) -> (R0, ..., Rm)`
is `void f(const T0* a0, ..., const Tn* an, R0* out0, ..., Rm* outm)` with
every buffer row-major and contiguous (see docs/abi.md).

This module is the runtime half of the API: it imports neither xDSL nor the
code generator. The compile driver (driver/compiler.py) builds an
`Executable` from a fresh compile, runtime/cached.py from a disk-cache
entry.
"""

from __future__ import annotations

import ctypes
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import numpy as np

from lamina.runtime import call_team
from lamina.runtime.device_stats import (
    DeviceStats,
    read_device_stats,
    release_cached_blocks,
    reset_device_stats,
)
from lamina.runtime.error_globals import CallErrors, call_errors, engine_error_addresses
from lamina.runtime.profile import (
    KernelProfile,
    profile_addresses,
    read_counters,
    reset_counters,
    slot_kernels,
    summarize,
)

if TYPE_CHECKING:  # annotations only: the runtime never imports the compiler
    from xdsl.dialects.builtin import ModuleOp

    from lamina.driver.stats import CompileStats


class CompiledCode(Protocol):
    """What an `Executable` uses of its code: function addresses (and, if it has one,
    the `engine` whose globals hold errors and device counters)."""

    def get_function_address(self, name: str) -> int: ...


class LaminaRuntimeError(ValueError):
    """A bad call of compiled code (wrong count, shape or dtype of arguments), or a
    failure the code reported while running (out of memory, `--check-bounds`)."""


@dataclass(frozen=True)
class TensorSpec:
    """Shape and dtype of one parameter or result of an entry function.

    A `str` entry of `shape` is a symbolic size (`"N"`, the dynamic batch),
    bounded by the signature's `bounds` and fixed per call by the arrays.
    """

    shape: tuple[int | str, ...]
    dtype: np.dtype

    @property
    def is_static(self) -> bool:
        return all(isinstance(d, int) for d in self.shape)

    def resolved(self, sizes: dict[str, int]) -> tuple[int, ...]:
        """The shape with each symbol replaced by its size in `sizes`."""
        return tuple(sizes[d] if isinstance(d, str) else d for d in self.shape)

    def __str__(self) -> str:
        return f"{self.dtype}[{', '.join(map(str, self.shape))}]"


@dataclass(frozen=True)
class Signature:
    name: str
    params: tuple[TensorSpec, ...]
    results: tuple[TensorSpec, ...]
    param_names: tuple[str | None, ...] = ()
    """The parameters' names in the source (`%x` → `x`, an ONNX input's name), None where
    unnamed."""
    result_names: tuple[str | None, ...] = ()
    """The results' names (an ONNX output's name, the returned value's `%name`)."""
    bounds: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Inclusive bounds of each symbolic size (`{"N": (1, 64)}`); the native entry takes
    the sizes first, in this order (docs/abi.md)."""

    @property
    def symbols(self) -> tuple[str, ...]:
        return tuple(self.bounds)

    def input_names(self) -> list[str]:
        """Every parameter's name: its own, else `input<i>` (unique either way)."""
        return _unique_names(self.param_names, len(self.params), "input")

    def output_names(self) -> list[str]:
        """Every result's name: its own, else `output<i>` (unique either way)."""
        return _unique_names(self.result_names, len(self.results), "output")


def _unique_names(names: Sequence[str | None], count: int, stem: str) -> list[str]:
    """`names` padded to `count` with `<stem><i>`; a repeated name gets `_<i>` appended."""
    out: list[str] = []
    for i in range(count):
        given = names[i] if i < len(names) else None
        name = given or f"{stem}{i}"
        out.append(name if name not in out else f"{name}_{i}")
    return out


@dataclass(frozen=True)
class TensorInfo:
    """A parameter or result as `get_inputs()`/`get_outputs()` describe it (as
    onnxruntime's `NodeArg` does): its name, NumPy dtype and shape (a string for a
    dynamic dimension)."""

    name: str
    dtype: np.dtype
    shape: tuple[int | str, ...]

    def __str__(self) -> str:
        return f"{self.name}: {self.dtype}[{', '.join(map(str, self.shape))}]"


def _allocate_result(sig: Signature, index: int, sizes: dict[str, int] | None = None) -> np.ndarray:
    """The output array for result `index`; too large for memory is an error of `run`."""
    spec = sig.results[index]
    try:
        return np.empty(spec.resolved(sizes or {}), spec.dtype)
    except (MemoryError, ValueError) as err:
        raise LaminaRuntimeError(f"@{sig.name} result {index} ({spec}): {err}") from None


@dataclass
class Executable:
    """Native code for a module's graph functions, callable on NumPy arrays."""

    signatures: dict[str, Signature]
    compiled: CompiledCode
    """The code (keeps its JIT engine alive): a `backends/codegen.py` CompiledModule, or
    the cache's LoadedCode."""
    llvm_module: ModuleOp | None
    """The build-phase module; None when the code came from the disk cache."""
    timings: dict[str, float] = field(default_factory=dict)
    not_entries: dict[str, str] = field(default_factory=dict)
    """Functions that cannot be called from Python, and why."""
    cache_hit: bool | None = None
    """True/False: loaded from / written to the disk cache; None: the cache was off."""
    stats: CompileStats | None = None
    """Time and memory per phase, when compiled with `stats=True`."""
    target_cpu: str = ""  # LLVM CPU name the code was compiled for ("" = host)
    target_features: tuple[str, ...] = ()  # cpu_features.required(...) of the code's features
    saver: Callable[[Executable, str | os.PathLike[str]], None] | None = field(
        default=None, repr=False
    )
    """Writes this executable as an artifact directory (`save`): set by whoever made it
    (the compile driver rebuilds it as a shared library; a loaded artifact copies itself)."""
    _calls: dict[str, EntryCall] = field(default_factory=dict, repr=False)
    _errors: CallErrors | None = field(default=None, repr=False)
    """The generated code's error globals, read after each call (None: it cannot fail)."""

    def __post_init__(self) -> None:
        engine = getattr(self.compiled, "engine", None)
        if engine is not None:  # the engine knows whether the code has error globals
            addresses = engine_error_addresses(engine)
            self._errors = call_errors(addresses) if addresses is not None else None

    @property
    def functions(self) -> list[str]:
        return sorted(self.signatures)

    def __repr__(self) -> str:
        entries = ", ".join(
            f"{name}({', '.join(map(str, self.get_inputs(name)))}) -> "
            f"({', '.join(map(str, self.get_outputs(name)))})"
            for name in self.functions
        )
        return f"<lamina.Executable {entries or 'without entry functions'}>"

    def run(
        self,
        name: str | Mapping[str, object] | np.ndarray,
        *arrays: np.ndarray,
        out: np.ndarray | Sequence[np.ndarray] | Mapping[str, np.ndarray] | None = None,
    ) -> np.ndarray | tuple[np.ndarray, ...] | dict[str, np.ndarray]:
        """Call entry function `name`; one result → an array, several → a tuple.

        `run(x, ...)` (no name) calls the default entry (`main`, or the only one).

        `run({"x": x, ...})` calls the entry function (`main`, or the only one)
        with its inputs by name and returns a dict of its outputs by name, in
        order (`get_inputs()`/`get_outputs()` list the names).

        `out`: preallocated result array(s) (one array, or one per result; by
        name for a call by name), written in place and returned; checked like
        the inputs, and also C-contiguous, writeable and not overlapping an
        input or each other.
        """
        if isinstance(name, Mapping):
            if arrays:
                raise LaminaRuntimeError("run(inputs): pass the inputs by name or by position")
            return self._run_named(self.default_entry(), name, out)
        if not isinstance(name, str):  # run(x, y): the default entry's inputs by position
            name, arrays = self.default_entry(), (name, *arrays)
        if isinstance(out, Mapping):
            raise LaminaRuntimeError("run(name, *arrays): out= takes an array or a sequence")
        call = self._calls.get(name)
        if call is None:
            sig = self._signature(name)
            address = self.compiled.get_function_address(name)
            # Code that links libgomp itself (an artifact's library) never meets the team.
            team = getattr(self.compiled, "call_team", True)
            call = self._calls[name] = (
                DynamicEntryCall(sig, address, team)
                if sig.bounds
                else EntryCall(sig, address, team)
            )
        errors = self._errors
        if errors is None:
            return call(arrays, out)
        token = errors.begin()
        try:
            results = call(arrays, out)
        finally:
            message = errors.end(token)
        if message is not None:
            raise LaminaRuntimeError(message)
        return results

    def _run_named(
        self, entry: str, inputs: Mapping[str, object], out: object
    ) -> dict[str, np.ndarray]:
        """`run` with the inputs (and `out`) by name; the outputs by name."""
        sig = self._signature(entry)
        names = sig.input_names()
        unknown = [key for key in inputs if key not in names]
        missing = [key for key in names if key not in inputs]
        if unknown or missing:
            problems = [f"unknown {', '.join(map(repr, unknown))}"] if unknown else []
            problems += [f"missing {', '.join(map(repr, missing))}"] if missing else []
            raise LaminaRuntimeError(
                f"@{entry} inputs: {'; '.join(problems)} (expected {', '.join(names)})"
            )
        outputs = sig.output_names()
        if isinstance(out, Mapping):
            if sorted(out) != sorted(outputs):
                raise LaminaRuntimeError(
                    f"@{entry} out=: expected an array for each of {', '.join(outputs)}"
                )
            out = [out[key] for key in outputs]
        result = self.run(entry, *[inputs[key] for key in names], out=out)  # type: ignore[arg-type]
        values: tuple[np.ndarray, ...] = result if isinstance(result, tuple) else (result,)  # type: ignore[assignment]
        return dict(zip(outputs, values, strict=True))

    def default_entry(self) -> str:
        """The entry function a call by name runs: `main`, else the only one."""
        if "main" in self.signatures:
            return "main"
        if len(self.signatures) == 1:
            return next(iter(self.signatures))
        known = ", ".join(self.functions) or "none"
        raise LaminaRuntimeError(f"no entry function 'main' to call by name (known: {known})")

    def get_inputs(self, entry: str | None = None) -> list[TensorInfo]:
        """The parameters of `entry` (default: `default_entry()`): name, dtype, shape."""
        sig = self._signature(entry or self.default_entry())
        return [
            TensorInfo(name, spec.dtype, tuple(spec.shape))
            for name, spec in zip(sig.input_names(), sig.params, strict=True)
        ]

    def get_outputs(self, entry: str | None = None) -> list[TensorInfo]:
        """The results of `entry` (default: `default_entry()`): name, dtype, shape."""
        sig = self._signature(entry or self.default_entry())
        return [
            TensorInfo(name, spec.dtype, tuple(spec.shape))
            for name, spec in zip(sig.output_names(), sig.results, strict=True)
        ]

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write this executable as an artifact directory at `path` (a shared library,
        its weights file and `manifest.json`; docs/python-api.md), which
        `lamina.runtime.load(path)` loads without the compiler."""
        if self.saver is None:
            raise LaminaRuntimeError(
                "this executable cannot be saved: it was not made by lamina.compile "
                "nor loaded from an artifact"
            )
        self.saver(self, path)

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
        engine = getattr(self.compiled, "engine", None)
        stats = read_device_stats(engine) if engine is not None else {}
        return {f"cpu:{slot}": value for slot, value in sorted(stats.items())}

    def release_memory(self) -> None:
        """Free the temporaries' blocks that the compiled code keeps for its next call.

        The device runtime reuses freed blocks of 16 KiB and more across calls
        instead of returning them to the system (docs/performance.md); this
        hands them back, e.g. after the last call of a large model.
        """
        engine = getattr(self.compiled, "engine", None)
        if engine is not None:
            release_cached_blocks(engine)

    def reset_device_stats(self) -> None:
        """Zero the device counters (between runs)."""
        engine = getattr(self.compiled, "engine", None)
        if engine is not None:
            reset_device_stats(engine)

    def profile(
        self, name: str, *arrays: np.ndarray, runs: int = 10, warmup: int = 1
    ) -> KernelProfile:
        """Run entry `name` `warmup` + `runs` times on `arrays`; where the `runs` took
        their time, per kernel symbol: calls, total ms, share of the wall time, and
        the parallel regions it opens (docs/performance.md, Profiling).

        Needs a profiling build (`lamina.compile(..., profile=True)`): kernel
        calls are timed only in code built for it, so other builds pay nothing.
        """
        engine = getattr(self.compiled, "engine", None)
        addresses = profile_addresses(engine) if engine is not None else None
        if addresses is None:
            raise LaminaRuntimeError(
                "this executable was not built to profile: compile it with profile=True "
                "(lamina-run --profile)"
            )
        if runs < 1 or warmup < 0:
            raise LaminaRuntimeError(
                f"profile: runs must be >= 1 and warmup >= 0, got {runs}, {warmup}"
            )
        kernels = slot_kernels(addresses)
        for _ in range(warmup):
            self.run(name, *arrays)
        reset_counters(addresses, len(kernels))
        start = time.perf_counter()
        for _ in range(runs):
            self.run(name, *arrays)
        wall = time.perf_counter() - start
        counts = read_counters(addresses, len(kernels))
        return summarize(name, runs, wall, kernels, counts)


def _check_input(
    sig: Signature, i: int, arr: object, spec: TensorSpec, sizes: dict[str, int] | None = None
) -> np.ndarray:
    """Argument `i` checked against `spec` (a clear error if it does not fit), C-contiguous;
    `sizes` gives the symbols' sizes of this call."""
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
    expected = spec.resolved(sizes) if sizes is not None else spec.shape
    if tuple(arr.shape) != expected:
        symbolic = "" if spec.is_static else f" = {_shape_text(spec.shape)}"
        raise LaminaRuntimeError(
            f"@{sig.name} argument {i}: expected shape {expected}{symbolic}, got {tuple(arr.shape)}"
        )
    # Only non-contiguous views are copied; contiguous arrays are passed by pointer.
    return np.ascontiguousarray(arr)


def _check_count(sig: Signature, arrays: Sequence[object]) -> None:
    if len(arrays) != len(sig.params):
        raise LaminaRuntimeError(
            f"@{sig.name} expects {len(sig.params)} argument(s), got {len(arrays)}"
        )


def _words(inputs: list[np.ndarray], outputs: list[np.ndarray]) -> list[int]:
    """The arrays' data addresses as integers, for `call_team.call`."""
    return [a.ctypes.data for a in inputs] + [a.ctypes.data for a in outputs]


def _pointer(arr: np.ndarray) -> object:
    """A ctypes argument for a C-contiguous array's data pointer, as cheaply as NumPy allows.

    `byref(c_char.from_buffer(a))` costs a quarter of `a.ctypes.data` (and a
    sixth of `a.ctypes.data_as(c_void_p)`, which `run` used to call per
    array); it needs a writeable, non-empty buffer, else `a.ctypes.data`.
    """
    if arr.flags.writeable and arr.nbytes:
        # A writeable array exports a writeable buffer; typeshed's WriteableBuffer
        # does not list ndarray.
        return ctypes.byref(ctypes.c_char.from_buffer(arr))  # pyright: ignore[reportArgumentType]
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

    __slots__ = ("sig", "cfunc", "params", "results", "address", "team")

    def __init__(self, sig: Signature, address: int, team: bool = True):
        self.sig = sig
        self.address = address
        self.team = team and call_team.installed()
        """Call through one thread team per call (runtime/call_team.py): JIT-linked code only."""
        count = len(sig.params) + len(sig.results)
        self.cfunc = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * count))(address)
        self.params = tuple((spec.resolved({}), spec.dtype) for spec in sig.params)
        self.results = tuple((spec.resolved({}), spec.dtype) for spec in sig.results)

    def __call__(
        self, arrays: Sequence[object], out: object
    ) -> np.ndarray | tuple[np.ndarray, ...]:
        sig = self.sig
        _check_count(sig, arrays)
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
        if not (self.team and call_team.call(self.address, _words(inputs, outputs))):
            self.cfunc(*[_pointer(a) for a in inputs], *[_pointer(a) for a in outputs])
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def _check_outputs(
        self, out: object, inputs: list[np.ndarray], sizes: dict[str, int] | None = None
    ) -> list[np.ndarray]:
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
            if arr.dtype != spec.dtype or arr.shape != spec.resolved(sizes or {}):
                shape = ", ".join(map(str, spec.resolved(sizes or {})))
                raise LaminaRuntimeError(
                    f"{where}: expected {spec.dtype}[{shape}], got {arr.dtype}{list(arr.shape)}"
                )
            if not (arr.flags.c_contiguous and arr.flags.writeable):
                raise LaminaRuntimeError(f"{where}: must be C-contiguous and writeable")
            # Generated code assumes its buffers do not alias (`noalias`).
            for j, other in enumerate([*inputs, *outs[:i]]):
                if _may_overlap(arr, other):
                    what = f"argument {j}" if j < len(inputs) else f"out[{j - len(inputs)}]"
                    raise LaminaRuntimeError(f"{where}: overlaps {what} (outputs must not alias)")
        return list(outs)


class DynamicEntryCall(EntryCall):
    """An entry over symbolic sizes: they are read from the arrays, checked against the
    bounds and passed first (docs/dynamic-shapes.md); every check precedes the call, so
    a refused call writes nothing."""

    __slots__ = ()

    def __init__(self, sig: Signature, address: int, team: bool = True):
        self.sig = sig
        self.address = address
        self.team = team and call_team.installed()
        count = len(sig.params) + len(sig.results)
        argtypes = [ctypes.c_int64] * len(sig.bounds) + [ctypes.c_void_p] * count
        self.cfunc = ctypes.CFUNCTYPE(None, *argtypes)(address)

    def __call__(
        self, arrays: Sequence[object], out: object
    ) -> np.ndarray | tuple[np.ndarray, ...]:
        sig = self.sig
        _check_count(sig, arrays)
        sizes = infer_sizes(sig, arrays)
        inputs = [
            _check_input(sig, i, arr, spec, sizes)
            for i, (arr, spec) in enumerate(zip(arrays, sig.params, strict=True))
        ]
        if out is None:
            outputs = [_allocate_result(sig, i, sizes) for i in range(len(sig.results))]
        else:
            outputs = self._check_outputs(out, inputs, sizes)
        sized = [sizes[s] for s in sig.symbols]
        if self.team and call_team.call(self.address, sized + _words(inputs, outputs)):
            return outputs[0] if len(outputs) == 1 else tuple(outputs)
        self.cfunc(
            *sized,
            *[_pointer(a) for a in inputs],
            *[_pointer(a) for a in outputs],
        )
        return outputs[0] if len(outputs) == 1 else tuple(outputs)


def _describe(sig: Signature, i: int) -> str:
    name = sig.param_names[i] if i < len(sig.param_names) else None
    return f"@{sig.name} argument {i}" + (f" ({name})" if name else "")


def infer_sizes(sig: Signature, arrays: Sequence[object]) -> dict[str, int]:
    """Each symbol's size, read from the first argument that has it; an array of the wrong
    rank, a size out of bounds or two arguments disagreeing is a `LaminaRuntimeError`."""
    sizes: dict[str, int] = {}
    origin: dict[str, int] = {}
    for i, (arr, spec) in enumerate(zip(arrays, sig.params, strict=True)):
        if spec.is_static or not isinstance(arr, np.ndarray | np.generic):
            continue
        shape = np.shape(arr)
        if len(shape) != len(spec.shape):
            raise LaminaRuntimeError(
                f"{_describe(sig, i)}: expected rank {len(spec.shape)} "
                f"(shape {_shape_text(spec.shape)}), got shape {tuple(shape)}"
            )
        for dim, (want, got) in enumerate(zip(spec.shape, shape, strict=True)):
            if not isinstance(want, str):
                continue
            lo, hi = sig.bounds[want]
            if not lo <= got <= hi:
                raise LaminaRuntimeError(
                    f"{_describe(sig, i)}: dimension {dim} is {want} = {got}, "
                    f"out of bounds [{lo}, {hi}] (compiled for {lo} <= {want} <= {hi})"
                )
            if want in sizes and sizes[want] != got:
                raise LaminaRuntimeError(
                    f"{_describe(sig, i)}: dimension {dim} is {want} = {got}, but "
                    f"{_describe(sig, origin[want])[len(sig.name) + 2 :]} has {want} = "
                    f"{sizes[want]} (every argument must agree on {want})"
                )
            sizes.setdefault(want, got)
            origin.setdefault(want, i)
    return sizes


def _shape_text(shape: tuple[int | str, ...]) -> str:
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


__all__ = [
    "DynamicEntryCall",
    "EntryCall",
    "Executable",
    "LaminaRuntimeError",
    "Signature",
    "TensorInfo",
    "TensorSpec",
]
