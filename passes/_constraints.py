"""Which `#lamina.constraint` a graph value is known to satisfy (docs/layouts.md).

Layouts are decided at graph level; kernels learn them from the values they
are given. A value satisfies a constraint when it is produced by a
`graph.layout_transform` (without `crop`), returned by a kernel whose output
records one, or comes through a function boundary (`arg_attrs` /
`res_attrs`). `legalize` copies these onto the `te.func` parameters, so a
kernel compiled separately from its producer can still rely on the padding.
"""

from __future__ import annotations

from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp, StringAttr, SymbolRefAttr
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.traits import SymbolTable

from lamina.dialects import graph, te
from lamina.dialects.lamina import CONSTRAINT_ATTR_NAME, ConstraintAttr


def constraint_of(
    value: SSAValue, pending: dict[str, te.FuncOp] | None = None
) -> ConstraintAttr | None:
    """The layout constraint `value` is known to satisfy, if any (`pending`:
    te.funcs built but not yet inserted into the module, by name)."""
    if isinstance(value, BlockArgument):
        func = value.block.parent_op()
        if isinstance(func, graph.FuncOp) and value.block is func.body.blocks.first:
            return _dict_constraint(func.arg_attrs, value.index)
        return None
    owner = value.owner
    recorded = owner.attributes.get(CONSTRAINT_ATTR_NAME)
    if isinstance(recorded, ConstraintAttr) and len(owner.results) == 1:
        return recorded  # decided by plan-layouts
    if isinstance(owner, graph.LayoutTransformOp):
        if owner.crop is not None:
            return None
        return owner.constraint.with_logical(graph.tensor_shape(owner.input))
    if isinstance(owner, graph.CallOp | graph.CallTeOp):
        callee = (pending or {}).get(owner.callee.string_value()) or _lookup(owner, owner.callee)
        index = owner.results.index(value) if value in owner.results else 0
        if isinstance(callee, graph.FuncOp):
            return _dict_constraint(callee.res_attrs, index)
        if isinstance(callee, te.FuncOp):
            return te_output_constraint(callee, index)
    return None


def te_output_constraint(func: te.FuncOp, index: int) -> ConstraintAttr | None:
    """The constraint of a te.func's result #index (res_attrs, else its te.compute)."""
    recorded = _dict_constraint(func.res_attrs, index)
    if recorded is not None or func.is_declaration:
        return recorded
    ret = func.body.block.last_op
    if isinstance(ret, te.ReturnOp) and index < len(ret.operands):
        producer = ret.operands[index].owner
        if isinstance(producer, te.ComputeOp):
            return producer.constraint
    return None


def _dict_constraint(attrs, index: int) -> ConstraintAttr | None:
    if attrs is None or index >= len(attrs.data):
        return None
    found = attrs.data[index].data.get(CONSTRAINT_ATTR_NAME)
    return found if isinstance(found, ConstraintAttr) else None


def _lookup(op: Operation, callee: SymbolRefAttr | StringAttr) -> Operation | None:
    module = op.get_toplevel_object()
    if not isinstance(module, ModuleOp):
        return None
    name = callee if isinstance(callee, SymbolRefAttr) else SymbolRefAttr(callee.data)
    return SymbolTable.lookup_symbol(module, name)


def record_arg_constraints(func: te.FuncOp, constraints: list[ConstraintAttr | None]) -> None:
    """Put each known operand constraint into the kernel's `arg_attrs`."""
    if not any(constraints):
        return
    entries = []
    for n, c in enumerate(constraints):
        old = dict(func.arg_attrs.data[n].data) if func.arg_attrs else {}
        if c is not None:
            old[CONSTRAINT_ATTR_NAME] = c
        entries.append(DictionaryAttr(old))
    func.arg_attrs = ArrayAttr(entries)


def record_result_constraint(func: te.FuncOp, op: Operation) -> None:
    """The constraint plan-layouts recorded on a graph op (`lamina.constraint`)
    becomes its kernel's `res_attrs`, so consumers' kernels learn it."""
    recorded = op.attributes.get(CONSTRAINT_ATTR_NAME)
    if isinstance(recorded, ConstraintAttr) and len(op.results) == 1:
        func.res_attrs = ArrayAttr([DictionaryAttr({CONSTRAINT_ATTR_NAME: recorded})])
