"""The kernel under construction and the index helpers every builder uses.

`KernelBuilder` assembles one `te.func` (parameters, a DAG of `te.compute`,
`te.return`); `TeEmitter` is the scalar emitter of a `te.compute` body that
can also read tensors. The helpers translate output indices into operand
indices: NumPy broadcasting (`broadcast_indices`), inserting or dropping an
axis, and the clamp-and-select of a padded index (`shifted_index`,
`guarded`), the only way a builder may read near a border.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import AnyFloat, FloatAttr, TensorType
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.rewriter import Rewriter

from lamina.dialects import graph, te
from lamina.dialects.lamina import ConstraintAttr
from lamina.kernels.te_emit import INDEX, ScalarEmitter

Indices = list[SSAValue]


Body = Callable[["TeEmitter", Indices, Indices], SSAValue]


class TeEmitter(ScalarEmitter):
    """A ScalarEmitter that can also read tensors (`te.read`) and make `te.undef`."""

    def read(self, tensor: SSAValue, indices: Sequence[SSAValue]) -> SSAValue:
        return self.emit(te.ReadOp(tensor, list(indices)))

    def undef(self, t: Attribute) -> SSAValue:
        return self.emit(te.UndefOp(t))


@dataclass(frozen=True)
class DerivedInput:
    """A kernel parameter computed at compile time from a constant operand:
    every call passes `fn(value of its operand #source)` as a constant (calls
    sharing the kernel have their own constants, hence a function)."""

    source: int
    fn: Callable[[np.ndarray], np.ndarray]
    type: TensorType
    constraint: ConstraintAttr | None = None
    """How the parameter lays out the source's elements, when it is a layout."""


class KernelBuilder:
    """Builds one `te.func`: parameters, a DAG of `te.compute`, `te.return`."""

    def __init__(self, input_types: Sequence[Attribute], constant: Sequence[bool] = ()):
        self.block = Block(arg_types=input_types)
        self.args: list[SSAValue] = list(self.block.args)
        self.operand_constraints: list[ConstraintAttr | None] = [None] * len(self.args)
        """Layout constraints the kernel's inputs are known to satisfy."""
        self.constant = list(constant) or [False] * len(self.args)
        """Which inputs are constants in every call of the kernel."""
        self.derived: list[DerivedInput] = []
        """Parameters appended by `derived_input`, after the inputs."""
        self.dropped: list[int] = []
        """Inputs `finish` removed: read only through what was derived from them,
        or splat constants `inline_splat` made literals of."""
        self.inlined: list[int] = []
        """Inputs whose reads `inline_splat` replaced by their value."""
        for n, arg in enumerate(self.args):
            arg.name_hint = f"in{n}"

    def derived_input(
        self,
        source: SSAValue,
        fn: Callable[[np.ndarray], np.ndarray],
        result: TensorType,
        constraint: ConstraintAttr | None = None,
    ) -> SSAValue | None:
        """A parameter holding `fn(source)` computed at compile time, or None
        when `source` is not an input that every call passes as a constant (a
        transform of constant weights, such as Winograd's, then costs nothing
        at run time)."""
        index = next((n for n, a in enumerate(self.args) if a is source), None)
        if index is None or not self.constant[index]:
            return None
        arg = self.block.insert_arg(result, len(self.block.args))
        arg.name_hint = f"in{len(self.block.args) - 1}"
        self.derived.append(DerivedInput(index, fn, result, constraint))
        return arg

    def inline_splat(self, index: int, value: float) -> bool:
        """Read input `index`, a constant whose elements all equal `value`, as
        that literal: a clamp bound (relu6's 0 and 6 are one-element constants
        of the graph) is then a constant of the kernel, so the code clamps
        with one `maxps` instead of loading the bound and checking it for NaN
        per element. False (nothing changed) when the input is not only read
        element by element."""
        arg = self.args[index]
        reads = [use.operation for use in arg.uses]
        if not reads or not all(isinstance(r, te.ReadOp) for r in reads):
            return False
        element = graph.element_type(arg)
        assert isinstance(element, AnyFloat), "only float constants are read as literals"
        for read in reads:
            Rewriter.replace_op(read, arith.ConstantOp(FloatAttr(value, element)))
        self.inlined.append(index)
        return True

    def compute(
        self,
        shape: Sequence[int],
        element: Attribute,
        body: Body,
        reduce_extents: Sequence[int] = (),
        combiner: str = "sum",
        constraint: ConstraintAttr | None = None,
    ) -> SSAValue:
        """Append a `te.compute` of `tensor<shape x element>` whose element is `body(...)`.

        Reductions start from the combiner's identity (te's default `init`):
        0 for sum, −∞ (or the smallest integer) for max. A reduction over an
        empty domain (an extent of 0, which te.compute does not allow) is the
        identity everywhere.
        """
        if 0 in reduce_extents:
            identity = te.combiner_identity(combiner, element).value.data
            return self.compute(shape, element, lambda em, _sp, _red: em.const(identity, element))
        region_block = Block(arg_types=[INDEX] * (len(shape) + len(reduce_extents)))
        em = TeEmitter(region_block)
        spatial = list(region_block.args[: len(shape)])
        reduction = list(region_block.args[len(shape) :])
        for n, arg in enumerate(spatial):
            arg.name_hint = f"i{n}"
        for n, arg in enumerate(reduction):
            arg.name_hint = f"k{n}"
        value = body(em, spatial, reduction)
        region_block.add_op(te.YieldOp(value))
        op = te.ComputeOp(
            TensorType(element, list(shape)),
            reduce_extents=list(reduce_extents),
            combiner=combiner if reduce_extents else None,
            constraint=constraint,
            body=region_block,
        )
        self.block.add_op(op)
        return op.results[0]

    def finish(self, name: str, results: Sequence[SSAValue]) -> te.FuncOp:
        """Terminate the body with `te.return results` and wrap it in `te.func @name`.

        An input that the kernel reads only through a derived parameter is no
        parameter at all (`dropped`; its calls do not pass it)."""
        self.block.add_op(te.ReturnOp(*results))
        sources = {d.source for d in self.derived} | set(self.inlined)
        self.dropped = sorted(n for n in sources if not self.args[n].uses)
        for n in reversed(self.dropped):
            self.block.erase_arg(self.args[n])
        inputs = [a.type for a in self.block.args]
        # Kernels are private: only host functions are entry points, and internal
        # linkage lets LLVM inline them into their callers.
        signature = (inputs, [r.type for r in results])
        return te.FuncOp(name, signature, Region(self.block), visibility="private")


def shape_of(v: SSAValue | Attribute) -> tuple[int, ...]:
    return graph.tensor_shape(v)


def elt(v: SSAValue | Attribute) -> Attribute:
    return graph.element_type(v)


def broadcast_indices(em: TeEmitter, out: Indices, in_shape: Sequence[int]) -> Indices:
    """Indices into an operand of `in_shape` broadcast (NumPy) to the output `out`."""
    lead = len(out) - len(in_shape)
    return [em.index(0) if d == 1 else out[lead + j] for j, d in enumerate(in_shape)]


def insert_at(indices: Sequence[SSAValue], axis: int, value: SSAValue) -> Indices:
    return [*indices[:axis], value, *indices[axis:]]


def drop_at(indices: Sequence[SSAValue], axis: int) -> Indices:
    return [*indices[:axis], *indices[axis + 1 :]]


def shifted_index(
    em: TeEmitter, i: SSAValue, lo: int, size: int, extent: int
) -> tuple[SSAValue, list[SSAValue]]:
    """Input index `i - lo` for a padded index `i` in `[0, extent)`, clamped into
    `[0, size)`, plus the in-bounds conditions (only for sides that can overflow)."""
    raw = em.iadd(i, -lo)
    conds: list[SSAValue] = []
    index = raw
    if lo > 0:
        conds.append(em.cmpi("sge", raw, 0))
        index = em.select(conds[-1], index, em.index(0))
    if extent - 1 - lo > size - 1:
        conds.append(em.cmpi("slt", raw, size))
        index = em.select(conds[-1], index, em.index(size - 1))
    return index, conds


def guarded(em: TeEmitter, conds: Sequence[SSAValue], value: SSAValue, other: SSAValue) -> SSAValue:
    """`value` where every condition holds, else `other`."""
    ok = em.and_(conds)
    return value if ok is None else em.select(ok, value, other)
