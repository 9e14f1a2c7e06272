"""`lamina.compile` and `Executable`: the Python API of DESIGN §7.

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
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Attribute, Operation

from lamina.core.context import make_context
from lamina.core.diagnostics import DiagnosticError, parse_module, verify_module

_DTYPES: dict[str, np.dtype] = {
    "f16": np.dtype(np.float16),
    "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
    "i1": np.dtype(np.bool_),
    "i8": np.dtype(np.int8),
    "i16": np.dtype(np.int16),
    "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
}


class LaminaRuntimeError(ValueError):
    """A bad call of compiled code (wrong count, shape or dtype of arguments), or a
    failure the code reported while running (out of memory, `--check-bounds`)."""


def numpy_dtype(element_type: Attribute) -> np.dtype:
    """The NumPy dtype of a tensor element type."""
    key = str(element_type)
    if key not in _DTYPES:
        raise LaminaRuntimeError(f"element type {key} has no NumPy equivalent")
    return _DTYPES[key]


@dataclass(frozen=True)
class TensorSpec:
    """Shape and dtype of one parameter or result of an entry function."""

    shape: tuple[int, ...]
    dtype: np.dtype

    @staticmethod
    def from_type(ty: Attribute) -> TensorSpec:
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
        sigs[op.sym_name.data] = Signature(op.sym_name.data, params, results)
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
    llvm_module: ModuleOp
    timings: dict[str, float] = field(default_factory=dict)
    not_entries: dict[str, str] = field(default_factory=dict)
    """Functions that cannot be called from Python, and why."""
    _cfuncs: dict[str, object] = field(default_factory=dict, repr=False)
    _errors: tuple[int, int] | None = field(default=None, repr=False)
    """Addresses of the generated code's error globals (None: it cannot fail)."""

    def __post_init__(self) -> None:
        from lamina.backends.llvm_errors import error_addresses

        engine = getattr(self.compiled, "engine", None)
        if engine is not None:
            self._errors = error_addresses(engine, self.llvm_module)

    @property
    def functions(self) -> list[str]:
        return sorted(self.signatures)

    def run(self, name: str, *arrays: np.ndarray) -> np.ndarray | tuple[np.ndarray, ...]:
        """Call entry function `name`; one result → an array, several → a tuple."""
        sig = self._signature(name)
        inputs = self._check_inputs(sig, arrays)
        outputs = [_allocate_result(sig, i) for i in range(len(sig.results))]
        cfunc = self._cfunc(name, len(inputs) + len(outputs))
        cfunc(*(a.ctypes.data_as(ctypes.c_void_p) for a in (*inputs, *outputs)))
        self._raise_pending_error()
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def _signature(self, name: str) -> Signature:
        if name in self.not_entries:
            raise LaminaRuntimeError(
                f"@{name} cannot be called on arrays: {self.not_entries[name]}"
            )
        if name not in self.signatures:
            known = ", ".join(self.functions) or "none"
            raise LaminaRuntimeError(f"no entry function '{name}' (known: {known})")
        return self.signatures[name]

    @staticmethod
    def _check_inputs(sig: Signature, arrays: Sequence[object]) -> list[np.ndarray]:
        if len(arrays) != len(sig.params):
            raise LaminaRuntimeError(
                f"@{sig.name} expects {len(sig.params)} argument(s), got {len(arrays)}"
            )
        checked = []
        for i, (arr, spec) in enumerate(zip(arrays, sig.params, strict=True)):
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
            checked.append(np.ascontiguousarray(arr))
        return checked

    def _raise_pending_error(self) -> None:
        """Raise what the generated code reported (see backends/llvm_errors.py), if anything."""
        from lamina.backends.llvm_errors import pending_error

        message = pending_error(self._errors)
        if message is not None:
            raise LaminaRuntimeError(message)

    def _cfunc(self, name: str, nargs: int):
        if name not in self._cfuncs:
            address = self.compiled.get_function_address(name)
            proto = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * nargs))
            self._cfuncs[name] = proto(address)
        return self._cfuncs[name]


def _as_module(module_or_text: ModuleOp | str, filename: str) -> ModuleOp:
    """A private, verified copy of the input: bad IR is reported as such, before any pass."""
    if isinstance(module_or_text, ModuleOp):
        module = module_or_text.clone()
    else:
        module = parse_module(make_context(), module_or_text, filename)
    verify_module(module)
    return module


def lower_to_build(
    module: ModuleOp,
    targets: Sequence[str] | None = None,
    pipeline: str = "default",
    *,
    check_bounds: bool = False,
) -> tuple[ModuleOp, dict[str, float]]:
    """Run `pipeline` on `module` (in place) down to the build phase; return it and pass times.

    `check_bounds` inserts `check-bounds` right before `lower-to-llvm`.
    """
    from lamina.core.pass_manager import PassManager
    from lamina.core.pipeline import passes_for_module

    passes = passes_for_module(pipeline, module, targets)  # from the module's phase on
    if check_bounds:
        passes = with_bounds_checks(passes)
    manager = PassManager(passes)  # records pass times; timing=True would print a report
    manager.run(make_context(), module)
    return module, manager.pass_times


def with_bounds_checks(passes: list) -> list:
    """`passes` with `check-bounds` right before `lower-to-llvm` (the last lowering pass)."""
    from lamina.passes.check_bounds import CheckBoundsPass

    index = next((i for i, p in enumerate(passes) if p.name == "lower-to-llvm"), None)
    if index is None:
        return list(passes)  # already past the lowering phase: nothing left to guard
    return [*passes[:index], CheckBoundsPass(), *passes[index:]]


def compile(  # noqa: A001 - the API name is DESIGN §7's
    module_or_text: ModuleOp | str,
    targets: Sequence[str] | None = None,
    *,
    pipeline: str = "default",
    filename: str = "<input>",
    check_bounds: bool = False,
) -> Executable:
    """Compile a graph program (module or text, of any phase) to native code.

    Raises `DiagnosticError` (with located diagnostics) for bad IR or a failed
    pass; `Executable.run` raises `LaminaRuntimeError` for bad arguments and
    for failures the code reports (out of memory; with `check_bounds`, an
    out-of-bounds access, named by kernel, buffer and index).
    """
    try:
        return _compile(module_or_text, targets, pipeline, filename, check_bounds)
    except RecursionError:  # deeply nested input that no stage caught itself
        from lamina.core.diagnostics import TOO_DEEP, Diagnostic, SourceLocation

        raise DiagnosticError(
            Diagnostic(TOO_DEEP, location=SourceLocation(filename, 1, 1))
        ) from None


def _compile(
    module_or_text: ModuleOp | str,
    targets: Sequence[str] | None,
    pipeline: str,
    filename: str,
    check_bounds: bool,
) -> Executable:
    from lamina.backends.codegen import compile_module

    module = _as_module(module_or_text, filename)
    not_entries: dict[str, str] = {}
    signatures = entry_signatures(module, not_entries)
    start = time.perf_counter()
    lowered, _ = lower_to_build(module, targets, pipeline, check_bounds=check_bounds)
    lowering_time = time.perf_counter() - start
    start = time.perf_counter()
    compiled = compile_module(lowered)
    timings = {"lowering": lowering_time, "codegen": time.perf_counter() - start}
    return Executable(signatures, compiled, lowered, timings, not_entries)


__all__ = ["compile", "Executable", "LaminaRuntimeError", "DiagnosticError", "TensorSpec"]
