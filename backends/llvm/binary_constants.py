"""Dense constant globals go to LLVM IR as raw bytes, never as Python numbers.

xDSL's translator turns the dense value of an `llvm.mlir.global` into a
Python list (`get_values()`) and llvmlite prints every element as a hex
float: about 8 s per million elements, so a ResNet-18's 11 M weights would
take minutes. The data of a `DenseIntOrFPElementsAttr` already is the
row-major little-endian byte image the generated code reads, so
`translate` detaches such values before the translator runs and gives the
global an `[N x i8] c"..."` initializer built from the bytes with NumPy
(about 0.1 s per million f32 elements). Globals are reached through opaque
pointers (`addressof` + GEP with an explicit element type), so the global's
declared value type does not matter to its users.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from math import prod

import llvmlite.ir as llvm_ir
import numpy as np
from xdsl.dialects import llvm as llvm_dialect
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, ModuleOp

_BACKSLASH = ord("\\")


class _RawBytesConstant(llvm_ir.Constant):
    """An `[N x i8]` constant printed straight from bytes as `c"\\XX..."`."""

    def __init__(self, data: bytes):
        super().__init__(llvm_ir.ArrayType(llvm_ir.IntType(8), len(data)), None)
        self._text = _escaped(data)

    def _to_string(self) -> str:
        return f"{self.type} {self.get_reference()}"

    def get_reference(self) -> str:
        return self._text


def _escaped(data: bytes) -> str:
    """`c"\\XX\\XX..."` for `data`, built without a Python loop over bytes."""
    if not data:
        return "zeroinitializer"
    hex_digits = np.frombuffer(data.hex().upper().encode("ascii"), dtype=np.uint8)
    text = np.empty((len(data), 3), dtype=np.uint8)
    text[:, 0] = _BACKSLASH
    text[:, 1:] = hex_digits.reshape(-1, 2)
    return 'c"' + text.tobytes().decode("ascii") + '"'


@contextmanager
def detached_dense_globals(module: ModuleOp) -> Iterator[dict[str, bytes]]:
    """Strip the dense values of `module`'s globals for the translator's run.

    Yields `{global name: data bytes}`; the values are put back on exit, so
    the module is unchanged afterwards (codegen caches by its text). Only
    constants: their bytes may go to the shared, read-only weights blob
    (backends/kernel_split.py), which a global the code writes must never
    be in -- a profiling build's counters of 1 KiB or more (GoogLeNet's 82
    kernels) went there, so that the build found no counters to read.
    """
    detached: dict[llvm_dialect.GlobalOp, DenseIntOrFPElementsAttr] = {}
    for op in module.ops:
        if (
            isinstance(op, llvm_dialect.GlobalOp)
            and op.constant is not None
            and isinstance(op.value, DenseIntOrFPElementsAttr)
        ):
            detached[op] = op.value
    for op in detached:
        del op.properties["value"]
    try:
        yield {op.sym_name.data: _bytes_of(value) for op, value in detached.items()}
    finally:
        for op, value in detached.items():
            op.properties["value"] = value


def _bytes_of(value: DenseIntOrFPElementsAttr) -> bytes:
    """The row-major element bytes of `value`, splats expanded."""
    data = value.data.data
    count = prod(value.get_shape())
    if len(value) == 1 and count > 1:
        return data * count
    return data


def attach_bytes(ir_module: llvm_ir.Module, blobs: dict[str, bytes]) -> None:
    """Give every detached global its bytes as an `[N x i8]` initializer."""
    for name, data in blobs.items():
        gvar = ir_module.get_global(name)
        init = _RawBytesConstant(data)
        gvar.value_type = init.type
        gvar.initializer = init
        gvar.align = 64
