"""Call any function of a build-phase module with NumPy arrays and scalars, without copies.

Below the `Executable` API (which calls only entry functions, by the
graph-level signature): `Kernel` JIT-compiles an llvm-dialect module and
calls any function in it, kernels included (tests, debugging). A function produced by `lower-to-llvm` takes every buffer as a
bare pointer to its first element (row-major, contiguous) and scalars by
value; index values are `int64_t`. `JitFunction` turns its llvm-dialect
signature into a ctypes prototype and passes each NumPy array's data pointer
directly, so arrays must already be C-contiguous with the right dtype (a
mismatch raises `RuntimeCallError` rather than silently copying, since the
callee writes its outputs in place).

`lower-to-llvm` records the memref type of each buffer parameter in the
argument attribute `lamina.buffer`; when present, `JitFunction` checks the
array's shape and dtype against it.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import llvm
from xdsl.dialects.builtin import (
    DictionaryAttr,
    Float32Type,
    Float64Type,
    IntegerType,
    MemRefType,
    ModuleOp,
    NoneAttr,
)
from xdsl.ir import Attribute

from lamina.backends.codegen import CompiledModule, compile_module, exported_functions
from lamina.backends.llvm.errors import error_addresses, pending_error
from lamina.core import dense

BUFFER_ATTR = "lamina.buffer"
"""Argument attribute of an `llvm.func` parameter: the memref type the pointer stands for."""


class RuntimeCallError(TypeError):
    """A call's arguments do not match the compiled function's signature."""


class KernelError(RuntimeError):
    """The compiled code stopped with an error (out of memory, an out-of-bounds access)."""


def numpy_dtype(element_type: Attribute) -> np.dtype:
    """The NumPy dtype of a builtin scalar type (core/dense.py's mapping, raising this
    module's error)."""
    try:
        return dense.numpy_dtype(element_type)
    except dense.DTypeError:
        raise RuntimeCallError(f"no NumPy dtype for element type {element_type}") from None


_CTYPES_INT = {1: ctypes.c_bool, 8: ctypes.c_int8, 16: ctypes.c_int16, 32: ctypes.c_int32}


def ctypes_type(ty: Attribute) -> type | None:
    """The ctypes type of an llvm-dialect parameter/result type (None for void)."""
    match ty:
        case llvm.LLVMVoidType():
            return None
        case llvm.LLVMPointerType():
            return ctypes.c_void_p
        case Float32Type():
            return ctypes.c_float
        case Float64Type():
            return ctypes.c_double
        case IntegerType(width=width):
            return _CTYPES_INT.get(width.data, ctypes.c_int64)
    raise RuntimeCallError(f"cannot pass a value of type {ty} through the C ABI")


def _parameter_type(param: Parameter) -> type:
    """The ctypes type of a parameter (never void, unlike a result)."""
    found = ctypes_type(param.type)
    if found is None:
        raise RuntimeCallError(f"parameter #{param.index} has no value type ({param.type})")
    return found


@dataclass(frozen=True)
class Parameter:
    """One parameter of a jitted function: its llvm type and, for buffers, its memref type."""

    index: int
    type: Attribute
    buffer: MemRefType | None

    @property
    def is_pointer(self) -> bool:
        return isinstance(self.type, llvm.LLVMPointerType)


class JitFunction:
    """A callable handle on one function of a `CompiledModule`.

    `fn(*args)` takes NumPy arrays for pointer parameters (no copies) and
    Python/NumPy scalars for the others, and returns the function's scalar
    result (or None). The `CompiledModule` is kept alive by this object.
    """

    def __init__(self, compiled: CompiledModule, name: str, func_op: llvm.FuncOp | None = None):
        self.compiled = compiled
        self.name = name
        self.address = compiled.get_function_address(name)
        fn_type = compiled.signatures[name]
        self.parameters = _parameters(fn_type, func_op)
        self.restype = ctypes_type(fn_type.output)
        argtypes = [_parameter_type(p) for p in self.parameters]
        self._cfunc = ctypes.CFUNCTYPE(self.restype, *argtypes)(self.address)
        self._errors = error_addresses(compiled.engine)

    def __repr__(self) -> str:
        return f"<JitFunction {self.name} at {self.address:#x}>"

    def __call__(self, *args: object) -> object:
        if len(args) != len(self.parameters):
            raise RuntimeCallError(
                f"{self.name}: expected {len(self.parameters)} argument(s), got {len(args)}"
            )
        converted = [self._convert(p, a) for p, a in zip(self.parameters, args, strict=True)]
        result = self._cfunc(*converted)
        message = pending_error(self._errors)
        if message is not None:  # reported by the generated code (backends/llvm/errors.py)
            raise KernelError(message)
        return result

    def _convert(self, param: Parameter, value: object) -> object:
        if not param.is_pointer:
            if isinstance(value, np.ndarray):
                raise RuntimeCallError(
                    f"{self.name}: argument #{param.index} is a scalar of type {param.type}, "
                    f"got an array of shape {value.shape}"
                )
            return value
        if not isinstance(value, np.ndarray):
            raise RuntimeCallError(
                f"{self.name}: argument #{param.index} is a buffer, expected a NumPy array, "
                f"got {type(value).__name__}"
            )
        if not value.flags.c_contiguous:
            raise RuntimeCallError(
                f"{self.name}: argument #{param.index} must be C-contiguous "
                "(use np.ascontiguousarray)"
            )
        if param.buffer is not None:
            _check_buffer(self.name, param, value)
        return value.ctypes.data


def _check_buffer(name: str, param: Parameter, array: np.ndarray) -> None:
    """`array` must have the memref's dtype and hold the elements the function may touch.

    With the default (row-major) layout that is exactly the shape's element
    count, in any shape; a strided layout needs at least its extent.
    """
    assert param.buffer is not None
    mtype = param.buffer
    expected_dtype = numpy_dtype(mtype.element_type)
    expected_shape = tuple(mtype.get_shape())
    if array.dtype != expected_dtype:
        raise RuntimeCallError(
            f"{name}: argument #{param.index} expected dtype {expected_dtype}, got {array.dtype}"
        )
    if isinstance(mtype.layout, NoneAttr):
        if array.size != int(np.prod(expected_shape)):
            raise RuntimeCallError(
                f"{name}: argument #{param.index} expected shape {expected_shape}, "
                f"got {array.shape}"
            )
        return
    extent = storage_extent(mtype)
    if extent is not None and array.size < extent:
        raise RuntimeCallError(
            f"{name}: argument #{param.index} ({mtype}) needs at least {extent} elements, "
            f"got {array.size}"
        )


def storage_extent(mtype: MemRefType) -> int | None:
    """Elements from the buffer's base pointer to one past its last element (None if dynamic)."""
    strides, offset = mtype.get_strides(), mtype.get_offset()
    if strides is None or offset is None:
        return None
    known = [stride for stride in strides if stride is not None]
    if len(known) != len(strides):
        return None
    shape = mtype.get_shape()
    if 0 in shape:
        return 0
    return offset + sum((dim - 1) * stride for dim, stride in zip(shape, known, strict=True)) + 1


def _parameters(fn_type: llvm.LLVMFunctionType, func_op: llvm.FuncOp | None) -> list[Parameter]:
    arg_attrs: Sequence[DictionaryAttr] = ()
    if func_op is not None and func_op.arg_attrs is not None:
        arg_attrs = func_op.arg_attrs.data
    params = []
    for i, ty in enumerate(fn_type.inputs.data):
        buffer = arg_attrs[i].data.get(BUFFER_ATTR) if i < len(arg_attrs) else None
        params.append(Parameter(i, ty, buffer if isinstance(buffer, MemRefType) else None))
    return params


class Kernel:
    """A compiled build-phase module: look up functions by name and call them with arrays."""

    def __init__(self, module: ModuleOp, *, use_cache: bool = True):
        self.module = module
        self.compiled = compile_module(module, use_cache=use_cache)
        self._funcs = exported_functions(module)
        self._handles: dict[str, JitFunction] = {}

    @property
    def function_names(self) -> list[str]:
        return sorted(self._funcs)

    def get_function_address(self, name: str) -> int:
        return self.compiled.get_function_address(name)

    def function(self, name: str) -> JitFunction:
        """The callable handle of `name` (created once)."""
        if name not in self._handles:
            self._handles[name] = JitFunction(self.compiled, name, self._funcs.get(name))
        return self._handles[name]

    def call(self, name: str, *args: object) -> object:
        """Call `name` with arrays (buffers, written in place) and scalars."""
        return self.function(name)(*args)


def call(module: ModuleOp, name: str, *args: object) -> object:
    """Compile (cached) and call `name` of a build-phase module in one step."""
    return Kernel(module).call(name, *args)
