"""Entry signatures: which functions of a module `Executable.run` can call, on what arrays.

Read from the IR before lowering (a top-level `graph.func` over static
tensors), or from a host function of a later phase (backends/llvm/entry_points.py
describes its buffers). A function over anything else (closures, scalars,
...) is internal, not an entry point, and the reason is kept for the error
`run` gives when it is called.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects import llvm
from xdsl.dialects.builtin import ArrayAttr, MemRefType, ModuleOp, StringAttr, TensorType
from xdsl.ir import Attribute, Operation

from lamina.backends.llvm.batch_entries import batch_entries, func_bounds
from lamina.backends.llvm.entry_points import (
    is_private,
    lowered_buffers,
    plain_buffer,
    result_count,
)
from lamina.core.dense import DTypeError
from lamina.core.dense import numpy_dtype as element_dtype
from lamina.dialects import loop
from lamina.dialects.graph import FuncOp
from lamina.runtime.executable import LaminaRuntimeError, Signature, TensorSpec


def numpy_dtype(element_type: Attribute) -> np.dtype:
    """The NumPy dtype of a tensor element type, as an error of the API if there is none."""
    try:
        return element_dtype(element_type)
    except DTypeError:
        raise LaminaRuntimeError(f"element type {element_type} has no NumPy equivalent") from None


def tensor_spec(ty: Attribute, symbol: str | None = None) -> TensorSpec:
    """The spec of a tensor type: static, or with a `?` leading dimension that is
    `symbol` (entry functions take and return nothing else)."""
    if not isinstance(ty, TensorType):
        raise LaminaRuntimeError(f"entry functions take and return static tensors, got {ty}")
    shape: tuple[int | str, ...] = tuple(ty.get_shape())
    if not ty.has_static_shape():
        if symbol is None or any(d < 0 for d in shape[1:]):
            raise LaminaRuntimeError(
                f"entry functions take and return static tensors, got {ty} "
                "(a dynamic leading dimension needs lamina.bounds)"
            )
        shape = (symbol, *shape[1:])
    return TensorSpec(shape, numpy_dtype(ty.element_type))


def entry_signatures(
    module: ModuleOp, rejected: dict[str, str] | None = None
) -> dict[str, Signature]:
    """Signatures of the top-level graph functions callable on arrays (read before lowering).

    A function over anything but static tensors (closures, scalars, ...) is
    internal, not an entry point; why is recorded in `rejected`, if given.
    """
    sigs: dict[str, Signature] = {}
    for op in module.ops:
        if _lowered_signature(op, sigs, rejected) or not isinstance(op, FuncOp):
            continue
        ftype = op.function_type
        bounds = func_bounds(op)
        symbol = bounds[0] if bounds is not None else None
        try:
            params = tuple(tensor_spec(t, symbol) for t in ftype.inputs)
            results = tuple(tensor_spec(t, symbol) for t in ftype.outputs)
        except LaminaRuntimeError as err:
            if rejected is not None:
                rejected[op.sym_name.data] = str(err)
            continue
        dynamic = not all(s.is_static for s in (*params, *results))
        symbols = {bounds[0]: bounds[1]} if bounds is not None and dynamic else {}
        sigs[op.sym_name.data] = Signature(
            op.sym_name.data, params, results, *_io_names(op), symbols
        )
    _batch_signatures(module, sigs)
    return sigs


def _batch_signatures(module: ModuleOp, sigs: dict[str, Signature]) -> None:
    """The dynamic entries `specialize-batch` recorded (later phases): the one-sample
    body's signature with the batch dimension made symbolic."""
    for entry in batch_entries(module).values():
        tail = sigs.get(entry.bodies[-1][1])
        if tail is None:
            continue

        def symbolic(spec: TensorSpec, batched: bool, symbol: str = entry.symbol) -> TensorSpec:
            return TensorSpec((symbol, *spec.shape[1:]), spec.dtype) if batched else spec

        sigs[entry.name] = Signature(
            entry.name,
            tuple(map(symbolic, tail.params, entry.params)),
            tuple(map(symbolic, tail.results, entry.results)),
            tail.param_names,
            tail.result_names,
            {entry.symbol: entry.bounds},
        )


INPUT_NAMES_ATTR = "lamina.input_names"
OUTPUT_NAMES_ATTR = "lamina.output_names"
"""Attributes of a `graph.func`: its parameters' and results' names in the source model,
verbatim (ONNX names need not be SSA names), for `run({name: array})` and
`get_inputs()`/`get_outputs()`. Without them, the SSA names are used (`%x`, and the
returned value's `%logits`)."""


def _io_names(op: FuncOp) -> tuple[tuple[str | None, ...], tuple[str | None, ...]]:
    """The names of `op`'s parameters and results (None where it has none)."""
    params: tuple[str | None, ...] = ()
    results: tuple[str | None, ...] = ()
    if op.body.blocks:
        params = tuple(arg.name_hint for arg in op.body.block.args)
        ret = op.get_return_op()
        if ret is not None:
            results = tuple(value.name_hint for value in ret.operands)
    return _names(op, INPUT_NAMES_ATTR, params), _names(op, OUTPUT_NAMES_ATTR, results)


def _names(op: FuncOp, attr: str, default: tuple[str | None, ...]) -> tuple[str | None, ...]:
    value = op.attributes.get(attr)
    if isinstance(value, ArrayAttr) and all(isinstance(v, StringAttr) for v in value.data):
        return tuple(v.data for v in value.data)  # type: ignore[union-attr]
    return default


def _buffer_spec(ty: Attribute) -> TensorSpec:
    """The spec of a plain (static, row-major) buffer parameter."""
    assert isinstance(ty, MemRefType)
    return TensorSpec(tuple(ty.get_shape()), numpy_dtype(ty.element_type))


def _lowered_signature(
    op: Operation, sigs: dict[str, Signature], rejected: dict[str, str] | None
) -> bool:
    """Record the signature of a host function of a later phase (see entry_points.py)."""
    buffers = lowered_buffers(op)
    if buffers is None or is_private(op):
        return False
    assert isinstance(op, loop.FuncOp | llvm.FuncOp), "only functions carry lamina.results"
    name = op.sym_name.data
    bad = [str(t) for t in buffers if not plain_buffer(t)]
    count = result_count(op)
    if bad or not 0 <= count <= len(buffers):
        if rejected is not None:
            rejected[name] = f"parameters must be static row-major buffers, got {', '.join(bad)}"
        return True
    specs = tuple(_buffer_spec(t) for t in buffers)
    split = len(specs) - count
    sigs[name] = Signature(name, specs[:split], specs[split:])
    return True


__all__ = [
    "INPUT_NAMES_ATTR",
    "OUTPUT_NAMES_ATTR",
    "entry_signatures",
    "numpy_dtype",
    "tensor_spec",
]
