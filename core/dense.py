"""NumPy arrays as dense elements attributes and back, without a Python value per element.

`graph.constant` holds a `DenseIntOrFPElementsAttr`. Everything that makes or
reads one — the graph builder and the ONNX importer, `fold-constants`,
`plan-layouts`' constant hoisting, the reference evaluator — goes through
`dense_attr`/`dense_value`, which keep the data as bytes (row-major,
little-endian): converting ResNet-18's weights costs a copy, not 11 M Python
floats. `core/dense_text.py` does the same for the text form.

These live in `core` (not in `frontends/builder.py`, which re-exports them)
because passes and backends need them and must not depend on a frontend.
The element type ↔ dtype correspondence lives here, both ways: NumPy dtype
names → element types (`ELEMENT_TYPES`) and element types → dtypes
(`numpy_dtype`).
"""

from __future__ import annotations

from math import prod

import numpy as np
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    TensorType,
    f16,
    f32,
    f64,
    i1,
)
from xdsl.ir import Attribute

ELEMENT_TYPES: dict[str, Attribute] = {
    "float16": f16,
    "float32": f32,
    "float64": f64,
    "bool": i1,
    **{f"int{w}": IntegerType(w) for w in (8, 16, 32, 64)},
}
"""NumPy dtype name → tensor element type (the dtypes a graph tensor can have)."""


class DTypeError(ValueError):
    """A NumPy dtype that no graph element type stands for (`uint8`, `complex64`, ...)."""


def numpy_dtype(element_type: Attribute) -> np.dtype:
    """The NumPy dtype of a builtin scalar type (f16/f32/f64, i1 as bool, iN as intN)."""
    match element_type:
        case Float16Type():
            return np.dtype(np.float16)
        case Float32Type():
            return np.dtype(np.float32)
        case Float64Type():
            return np.dtype(np.float64)
        case IntegerType(width=width) if width.data == 1:
            return np.dtype(np.bool_)
        case IntegerType(width=width) if width.data in (8, 16, 32, 64):
            return np.dtype(f"int{width.data}")
    raise DTypeError(f"element type {element_type} has no NumPy dtype")


def element_type_of(dtype: np.dtype | type | str) -> Attribute:
    """The tensor element type of a NumPy dtype (`float32` → `f32`, `bool` → `i1`)."""
    key = np.dtype(dtype).name
    if key not in ELEMENT_TYPES:
        raise DTypeError(f"dtype {key} has no graph element type")
    return ELEMENT_TYPES[key]


def dense_attr(array: np.ndarray) -> DenseIntOrFPElementsAttr:
    """A bytes-backed dense attribute holding `array` (row-major, little-endian).

    A strided `array` (a transposed weight) is gathered by `tobytes` alone, not
    made contiguous first and then copied into bytes."""
    array = np.asarray(array)
    little = array.astype(array.dtype.newbyteorder("<"), copy=False)
    data = _whole_bytes(little) if little.flags.c_contiguous else None
    if data is None:
        data = little.tobytes()
    ttype = TensorType(element_type_of(array.dtype), [int(d) for d in array.shape])
    # The element type is one of ELEMENT_TYPES, a dense element type; pyright cannot
    # see that through `element_type_of`'s `Attribute`.
    return DenseIntOrFPElementsAttr(ttype, BytesAttr(data))  # pyright: ignore[reportArgumentType]


def _whole_bytes(array: np.ndarray) -> bytes | None:
    """The `bytes` object whose every byte `array` (C-contiguous) views, in order, if
    there is one: those are `array.tobytes()`, and immutable, so the attribute can
    hold them without a copy. An ONNX initializer is such a view of the protobuf's
    raw data (`numpy_helper.to_array`): ResNet-50's 100 MB of weights were
    copied once more here."""
    base = array.base
    while isinstance(base, np.ndarray):
        base = base.base
    if not isinstance(base, bytes) or len(base) != array.nbytes or not array.nbytes:
        return None
    start = np.frombuffer(base, dtype=np.uint8).ctypes.data
    return base if array.ctypes.data == start and array.flags.c_contiguous else None


def dense_value(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    """The NumPy array a dense attribute holds (splats expanded), without Python lists."""
    dtype = numpy_dtype(attr.get_element_type()).newbyteorder("<")
    flat = np.frombuffer(attr.data.data, dtype=dtype)
    shape = tuple(attr.get_shape())
    if flat.size == 1 and prod(shape) != 1:
        return np.broadcast_to(flat[0], shape).copy()
    return flat.reshape(shape).astype(dtype.newbyteorder("="))


def dense_view(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    """`dense_value` without its copy where it can: a read-only view of the attribute's
    bytes (for a reader that makes a new array of it anyway, as `plan-layouts`'
    constant hoisting does: one copy of every re-laid-out weight fewer)."""
    dtype = numpy_dtype(attr.get_element_type()).newbyteorder("<")
    shape = tuple(attr.get_shape())
    if prod(shape) == 1 or dtype != dtype.newbyteorder("="):  # a splat; a big-endian host
        return dense_value(attr)
    flat = np.frombuffer(attr.data.data, dtype=dtype)
    return flat.reshape(shape) if flat.size == prod(shape) else dense_value(attr)
