"""Scalar emission inside `te.compute` regions, used by `legalize`.

A `ScalarEmitter` appends `arith`/`math` ops to one block and hands back their
results, choosing the float or integer flavour of an operation from the
operand type, folding index arithmetic on constants (so `i * 1 + 0` emits
nothing) and reusing constants within the block. Keeping this in one place
lets the per-op builders in `kernels/` read like index formulas.

Index values are `index`-typed SSA values; signed comparisons (`slt`, `sge`)
are used because an index into an unpadded input (`i - pad` for a padded
index `i`) can be negative before it is guarded.
"""

from __future__ import annotations

import math as pymath
from collections.abc import Sequence

from xdsl.dialects import arith
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import (
    AnyFloat,
    Float32Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from lamina.schedule.vector_math import EXP_NORMAL_HI, EXP_NORMAL_LO

INDEX = IndexType()
I1 = IntegerType(1)

_CMPI_PREDICATES = {
    name: IntegerAttr(value, 64)
    for value, name in enumerate(
        ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")
    )
}
"""`arith.cmpi`'s predicate attributes (xDSL's numbering), made once."""


def cmpi_op(a: SSAValue, b: SSAValue, pred: str) -> arith.CmpiOp:
    """`arith.CmpiOp(a, b, pred)`, the same op, without building its predicate and result
    type attributes anew: `CmpiOp.__init__` took 0.1-0.2 ms (DenseNet-121's fused kernels
    build 1,600, two per clamp and one per input of a concatenation's select chain).
    Anything unusual (operand types that differ, an unknown predicate) goes to the
    constructor, which reports it."""
    predicate = _CMPI_PREDICATES.get(pred)
    if predicate is None or a.type != b.type:
        return arith.CmpiOp(a, b, pred)
    return arith.CmpiOp.create(
        operands=[a, b], result_types=[I1], properties={"predicate": predicate}
    )


def is_float(t: Attribute) -> bool:
    return isinstance(t, AnyFloat)


def is_bool(t: Attribute) -> bool:
    return isinstance(t, IntegerType) and t.width.data == 1


class ScalarEmitter:
    """Appends scalar ops to `block`; every method returns the new SSA value."""

    def __init__(self, block: Block):
        self.block = block
        self._consts: dict[tuple[Attribute, float | int | str], SSAValue] = {}
        self._const_values: dict[SSAValue, int] = {}

    # -- plumbing ----------------------------------------------------------

    def emit(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0]

    def index(self, value: int) -> SSAValue:
        """An `index` constant (cached per block)."""
        key = (INDEX, value)
        if key not in self._consts:
            v = self.emit(arith.ConstantOp(IntegerAttr(value, INDEX)))
            self._consts[key] = v
            self._const_values[v] = value
        return self._consts[key]

    def const(self, value: float | int | bool, t: Attribute) -> SSAValue:
        """A scalar constant of element type `t` (float, integer or i1)."""
        if t == INDEX:
            return self.index(int(value))
        key = (t, repr(float(value)) if is_float(t) else int(value))
        if key not in self._consts:
            if is_float(t):
                attr = FloatAttr(float(value), t)  # pyright: ignore[reportArgumentType]
            else:
                assert isinstance(t, IntegerType)
                attr = IntegerAttr(_wrap_signed(int(value), t.width.data), t)
            self._consts[key] = self.emit(arith.ConstantOp(attr))
        return self._consts[key]

    def const_value(self, v: SSAValue) -> int | None:
        """The integer value of an index constant created here, else None."""
        return self._const_values.get(v)

    # -- index arithmetic (folds constants) ---------------------------------

    def iadd(self, a: SSAValue, b: SSAValue | int) -> SSAValue:
        if b == 0:
            return a
        b = self.index(b) if isinstance(b, int) else b
        ca, cb = self.const_value(a), self.const_value(b)
        if ca is not None and cb is not None:
            return self.index(ca + cb)
        if cb == 0:
            return a
        if ca == 0:
            return b
        return self.emit(arith.AddiOp(a, b))

    def imul(self, a: SSAValue, b: int) -> SSAValue:
        ca = self.const_value(a)
        if ca is not None:
            return self.index(ca * b)
        if b == 1:
            return a
        if b == 0:
            return self.index(0)
        return self.emit(arith.MuliOp(a, self.index(b)))

    def idiv(self, a: SSAValue, b: int) -> SSAValue:
        """Unsigned (non-negative) floor division of an index by a constant."""
        ca = self.const_value(a)
        if ca is not None:
            return self.index(ca // b)
        return a if b == 1 else self.emit(arith.DivUIOp(a, self.index(b)))

    def irem(self, a: SSAValue, b: int) -> SSAValue:
        """Unsigned remainder of a non-negative index by a constant."""
        ca = self.const_value(a)
        if ca is not None:
            return self.index(ca % b)
        return self.index(0) if b == 1 else self.emit(arith.RemUIOp(a, self.index(b)))

    def affine(self, terms: Sequence[tuple[SSAValue, int]], offset: int = 0) -> SSAValue:
        """`sum(coef * value) + offset` on indices, emitting only what is needed."""
        acc: SSAValue | None = None
        for value, coef in terms:
            if coef == 0:
                continue
            term = self.imul(value, coef)
            acc = term if acc is None else self.iadd(acc, term)
        if acc is None:
            return self.index(offset)
        return self.iadd(acc, offset)

    def cmpi(self, pred: str, a: SSAValue, b: SSAValue | int) -> SSAValue:
        b = self.index(b) if isinstance(b, int) else b
        return self.emit(cmpi_op(a, b, pred))

    def and_(self, conds: Sequence[SSAValue]) -> SSAValue | None:
        """The conjunction of `conds` (None when empty: always true)."""
        acc: SSAValue | None = None
        for c in conds:
            acc = c if acc is None else self.emit(arith.AndIOp(acc, c))
        return acc

    def select(self, cond: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(arith.SelectOp(cond, a, b))

    def clamp(self, i: SSAValue, hi: int, lower: bool = True, upper: bool = True) -> SSAValue:
        """`i` clamped to `[0, hi]` by compare-and-select (keeps reads in bounds)."""
        ci = self.const_value(i)
        if ci is not None:
            return self.index(min(max(ci, 0), hi))
        if lower:
            i = self.select(self.cmpi("slt", i, 0), self.index(0), i)
        if upper:
            i = self.select(self.cmpi("sgt", i, hi), self.index(hi), i)
        return i

    def index_to(self, i: SSAValue, t: Attribute) -> SSAValue:
        """An index value converted to scalar type `t` (via i64)."""
        as_int = self.emit(arith.IndexCastOp(i, IntegerType(64)))
        if is_float(t):
            return self.emit(arith.SIToFPOp(as_int, t))
        if t == IntegerType(64):
            return as_int
        return self.emit(arith.TruncIOp(as_int, t))

    # -- element arithmetic (float or integer by operand type) ---------------

    def add(self, a: SSAValue, b: SSAValue) -> SSAValue:
        """`a + b`; on i1 NumPy's logical or."""
        if is_float(a.type):
            return self.emit(arith.AddfOp(a, b))
        return self.emit(arith.OrIOp(a, b) if is_bool(a.type) else arith.AddiOp(a, b))

    def sub(self, a: SSAValue, b: SSAValue) -> SSAValue:
        if is_float(a.type):
            return self.emit(arith.SubfOp(a, b))
        return self.emit(arith.XOrIOp(a, b) if is_bool(a.type) else arith.SubiOp(a, b))

    def mul(self, a: SSAValue, b: SSAValue) -> SSAValue:
        if is_float(a.type):
            return self.emit(arith.MulfOp(a, b))
        return self.emit(arith.AndIOp(a, b) if is_bool(a.type) else arith.MuliOp(a, b))

    def div(self, a: SSAValue, b: SSAValue) -> SSAValue:
        """Float division, or integer division truncating toward zero (C, ONNX, TVM `truncdiv`).

        Integer division never traps: `x / 0` is 0 (NumPy's result) and
        `MIN / -1` wraps to MIN, both chosen by selects around a division by a
        divisor that is never 0 or -1.
        """
        if is_float(a.type):
            return self.emit(arith.DivfOp(a, b))
        if is_bool(a.type):
            return a
        t = a.type
        by_zero = self.emit(arith.CmpiOp(b, self.const(0, t), "eq"))
        by_minus_one = self.emit(arith.CmpiOp(b, self.const(-1, t), "eq"))
        unsafe = self.emit(arith.OrIOp(by_zero, by_minus_one))
        quotient = self.emit(arith.DivSIOp(a, self.select(unsafe, self.const(1, t), b)))
        quotient = self.select(by_minus_one, self.neg(a), quotient)
        return self.select(by_zero, self.const(0, t), quotient)

    def max(self, a: SSAValue, b: SSAValue) -> SSAValue:
        """NaN-propagating maximum (numpy `maximum`)."""
        if is_float(a.type):
            return self.emit(arith.MaximumfOp(a, b))
        return self.emit(arith.OrIOp(a, b) if is_bool(a.type) else arith.MaxSIOp(a, b))

    def min(self, a: SSAValue, b: SSAValue) -> SSAValue:
        if is_float(a.type):
            return self.emit(arith.MinimumfOp(a, b))
        return self.emit(arith.AndIOp(a, b) if is_bool(a.type) else arith.MinSIOp(a, b))

    def neg(self, a: SSAValue) -> SSAValue:
        if is_float(a.type):
            return self.emit(arith.NegfOp(a))
        return a if is_bool(a.type) else self.emit(arith.SubiOp(self.const(0, a.type), a))

    def cmpf(self, pred: str, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(arith.CmpfOp(a, b, pred))

    # -- math ----------------------------------------------------------------

    def exp(self, a: SSAValue) -> SSAValue:
        return self.emit(mathd.ExpOp(a))

    def log(self, a: SSAValue) -> SSAValue:
        return self.emit(mathd.LogOp(a))

    def sqrt(self, a: SSAValue) -> SSAValue:
        return self.emit(mathd.SqrtOp(a))

    def rsqrt(self, a: SSAValue) -> SSAValue:
        """`1 / sqrt(a)`: spelled with divf so that back ends need only `math.sqrt`."""
        return self.div(self.const(1.0, a.type), self.sqrt(a))

    def tanh(self, a: SSAValue) -> SSAValue:
        return self.emit(mathd.TanhOp(a))

    def erf(self, a: SSAValue) -> SSAValue:
        return self.emit(mathd.ErfOp(a))

    def sigmoid(self, x: SSAValue) -> SSAValue:
        """`1 / (1 + exp(-x))`: an `exp` that overflows gives `1 / inf = 0`, the right limit.

        For f32 the exponent is clamped to [-87, 88], which changes no result
        by more than 1e-38 (sigmoid(x) for x < -88 is below 6e-39; for x > 87
        the sum is 1 exactly either way) and tells `schedule`'s polynomial exp
        that its argument needs neither its own clamp nor the second scaling
        for denormal results (docs/performance.md, "Sigmoid and SiLU"): about
        half the vector instructions of the general exp, in every swish
        epilogue of EfficientNet.
        """
        t = x.type
        arg = self.neg(x)
        if t == Float32Type():
            arg = self.min(
                self.max(arg, self.const(EXP_NORMAL_LO, t)), self.const(EXP_NORMAL_HI, t)
            )
        one = self.const(1.0, t)
        return self.div(one, self.add(one, self.exp(arg)))

    def gelu(self, x: SSAValue, approximate: str) -> SSAValue:
        """`0.5·x·(1 + erf(x/√2))`, or the tanh form `0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`."""
        t = x.type
        if approximate == "tanh":
            x3 = self.mul(self.mul(x, x), x)
            inner = self.add(x, self.mul(self.const(0.044715, t), x3))
            g = self.tanh(self.mul(self.const(pymath.sqrt(2.0 / pymath.pi), t), inner))
        else:
            g = self.erf(self.mul(x, self.const(1.0 / pymath.sqrt(2.0), t)))
        half_x = self.mul(self.const(0.5, t), x)
        return self.mul(half_x, self.add(self.const(1.0, t), g))


def _wrap_signed(value: int, width: int) -> int:
    """`value` wrapped into the signed range of an iN (i1 uses 0/1)."""
    if width == 1:
        return value & 1
    value &= (1 << width) - 1
    return value - (1 << width) if value >= 1 << (width - 1) else value


def lowest(t: Attribute) -> float | int:
    """The identity of `max`: −∞ for floats, the smallest signed integer otherwise."""
    if is_float(t):
        return float("-inf")
    assert isinstance(t, IntegerType)
    return 0 if t.width.data == 1 else -(1 << (t.width.data - 1))
