"""Entry points of a module in any phase: which functions `run` can call, and their signatures.

Before `lower-graph` the entry points are the public `graph.func`s over
static tensors. `lower-graph` turns each into a host `loop.func` whose
parameters are the inputs followed by one output buffer per result
(destination-passing style), and records how many of the trailing buffers
are results in the function attribute `lamina.results`; `lower-to-llvm`
keeps it on the `llvm.func`, whose buffer parameters carry their memref
type in `lamina.buffer`. So the text of every phase still says which
functions are entry points and what they take and return, and every tool
can run it.
"""

from __future__ import annotations

from xdsl.dialects import llvm
from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, MemRefType, NoneAttr, StringAttr
from xdsl.ir import Attribute, Operation

RESULTS_ATTR = "lamina.results"
"""On a host `loop.func` / `llvm.func`: how many trailing buffer parameters are results."""

BUFFER_ATTR = "lamina.buffer"


def lowered_buffers(op: Operation) -> list[Attribute] | None:
    """The memref types of a lowered entry function's parameters, or None if it is not one."""
    from lamina.dialects import loop

    count = op.attributes.get(RESULTS_ATTR)
    if not isinstance(count, IntegerAttr):
        return None
    if isinstance(op, loop.FuncOp):
        if not op.body.blocks:
            return None
        return list(op.function_type.inputs.data)
    if isinstance(op, llvm.FuncOp) and op.body.blocks:
        attrs = op.arg_attrs.data if op.arg_attrs is not None else ()
        types: list[Attribute] = []
        for ty, entry in zip(op.function_type.inputs.data, attrs, strict=False):
            buffer = entry.data.get(BUFFER_ATTR) if isinstance(entry, DictionaryAttr) else None
            types.append(buffer if buffer is not None else ty)
        if len(types) != len(op.function_type.inputs.data):
            return None
        return types
    return None


def result_count(op: Operation) -> int:
    count = op.attributes[RESULTS_ATTR]
    assert isinstance(count, IntegerAttr)
    return count.value.data


def is_private(op: Operation) -> bool:
    """Not callable from outside the module (private visibility or internal linkage)."""
    vis = op.properties.get("sym_visibility") or op.attributes.get("sym_visibility")
    if isinstance(vis, StringAttr) and vis.data == "private":
        return True
    return isinstance(op, llvm.FuncOp) and op.linkage.linkage.data in ("internal", "private")


def plain_buffer(ty: Attribute) -> bool:
    """A statically shaped, row-major contiguous memref (what a NumPy array passes)."""
    return isinstance(ty, MemRefType) and ty.has_static_shape() and isinstance(ty.layout, NoneAttr)


__all__ = ["RESULTS_ATTR", "lowered_buffers", "plain_buffer", "result_count"]
