"""Scalar patterns of `lower-to-llvm`: `arith` and `math` → xDSL's llvm dialect.

Most ops map one to one, so they are written the way MLIR's
`ArithToLLVM` writes them: a table of (source op, llvm op / intrinsic /
libm function) pairs, instantiating a few generic patterns
(`BinaryLowering`, `CastLowering`, `IntrinsicLowering`, ...). Ops whose
lowering is more than one op (floor division, `uitofp`, NumPy's `fptosi`,
...) keep a pattern class of their own, named `<Op>Lowering`.
Overloaded LLVM intrinsics are called through `llvm.call_intrinsic` with
their type suffix (`llvm.exp.f32`); functions LLVM has no intrinsic for
call libm (`tanhf` / `tanh`). Index values are i64.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import cast

from xdsl.dialects import arith, llvm
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import (
    AnyFloat,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerAttr,
    IntegerType,
    VectorType,
    i1,
    i64,
)
from xdsl.dialects.utils.fast_math import FastMathFlag
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from lamina.backends.llvm.conversion import (
    call_function,
    call_intrinsic,
    constant,
    convert_type,
    integer_attr,
    intrinsic_suffix,
    quick,
    replace_with,
    to_llvm,
)
from lamina.core.diagnostics import op_error

# ---------------------------------------------------------------------------
# Generic patterns: one instance per (source op, target) pair of the tables
# ---------------------------------------------------------------------------


class SourceLowering(RewritePattern):
    """Base of the table-driven patterns: an instance lowers exactly one op class, `source`.

    `lower-to-llvm` reads `source` to try each pattern only on its own ops.
    """

    def __init__(self, source: type[Operation]):
        self.source = source

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if type(op) is self.source:
            self.lower(op, rewriter)

    def lower(self, op: Operation, rewriter: PatternRewriter) -> None:
        raise NotImplementedError


class OneToOneLowering(SourceLowering):
    """An op → one llvm op on the converted operands, in the same order."""

    def __init__(self, source: type[Operation], target: type[Operation]):
        super().__init__(source)
        self.target = target

    def lower(self, op: Operation, rewriter: PatternRewriter) -> None:
        operands = [to_llvm(v, rewriter) for v in op.operands]
        replace_with(op, rewriter, rewriter.insert(quick(self.target, *operands)))


def _fastmath(op: Operation, extra: Sequence[FastMathFlag] = ()) -> llvm.FastMathAttr:
    """The op's own fastmath flags plus `extra`."""
    flags = frozenset(extra)
    own = op.properties.get("fastmath")
    if isinstance(own, arith.FastMathFlagsAttr):
        flags |= frozenset(own.data)
    return _fastmath_attr(flags)


@functools.lru_cache(maxsize=64)
def _fastmath_attr(flags: frozenset[FastMathFlag]) -> llvm.FastMathAttr:
    """`FastMathAttr` of `flags`, shared (one per float op built anew before)."""
    return llvm.FastMathAttr(tuple(sorted(flags)) if flags else None)


class FloatBinaryLowering(OneToOneLowering):
    """A float binop keeps its fastmath flags and, with `contract`, adds `contract`.

    `contract` only lets LLVM fuse a multiply and an add into an FMA (one
    rounding instead of two): well inside the 1e-5 tolerance, and never
    reassociates a reduction.
    """

    def __init__(self, source: type[Operation], target: type[Operation], contract: bool):
        super().__init__(source, target)
        self.contract = contract

    def lower(self, op: Operation, rewriter: PatternRewriter) -> None:
        lhs, rhs = (to_llvm(v, rewriter) for v in op.operands)
        extra = (FastMathFlag.ALLOW_CONTRACT,) if self.contract else ()
        new = rewriter.insert(quick(self.target, lhs, rhs, _fastmath(op, extra)))
        replace_with(op, rewriter, new)


class CastLowering(OneToOneLowering):
    """A one-operand conversion → one llvm cast op to the converted result type."""

    def lower(self, op: Operation, rewriter: PatternRewriter) -> None:
        arg = to_llvm(op.operands[0], rewriter)
        new = rewriter.insert(quick(self.target, arg, convert_type(op.results[0].type)))
        replace_with(op, rewriter, new)


class IntrinsicLowering(SourceLowering):
    """An op → `llvm.call_intrinsic "<intrinsic>.<type>"` on its converted operands.

    Not xDSL's `llvm.intr.exp`-style ops: the translator declares those
    without a type suffix, so an f32 and an f64 use in one module collide.
    """

    def __init__(self, source: type[Operation], intrinsic: str):
        super().__init__(source)
        self.intrinsic = intrinsic

    def lower(self, op: Operation, rewriter: PatternRewriter) -> None:
        args = [to_llvm(v, rewriter) for v in op.operands]
        name = f"{self.intrinsic}.{intrinsic_suffix(args[0].type)}"
        replace_with(op, rewriter, call_intrinsic(rewriter, name, args, args[0].type))


class CountBitsLowering(IntrinsicLowering):
    """`math.ctlz` / `math.cttz` → `llvm.ctlz.*` / `llvm.cttz.*(x, false)` (defined for 0)."""

    def lower(self, op: Operation, rewriter: PatternRewriter) -> None:
        arg = to_llvm(op.operands[0], rewriter)
        zero_is_poison = constant(0, i1, rewriter)
        name = f"{self.intrinsic}.{intrinsic_suffix(arg.type)}"
        replace_with(op, rewriter, call_intrinsic(rewriter, name, [arg, zero_is_poison], arg.type))


class FloatToIntLowering(IntrinsicLowering):
    """Float → int through `llvm.fpto{s,u}i.sat.*`.

    xDSL's llvm dialect has no `fptosi` op; the saturating intrinsic truncates
    toward zero like NumPy's `astype` (and defines out-of-range inputs).
    """

    def lower(self, op: Operation, rewriter: PatternRewriter) -> None:
        arg = to_llvm(op.operands[0], rewriter)
        target = convert_type(op.results[0].type)
        name = f"{self.intrinsic}.{intrinsic_suffix(target)}.{intrinsic_suffix(arg.type)}"
        replace_with(op, rewriter, call_intrinsic(rewriter, name, [arg], target))


class LibmLowering(SourceLowering):
    """A math op without an LLVM intrinsic → a call to libm (`tanhf` / `tanh`).

    f32 calls the `f`-suffixed function, f64 the plain one; f16 is computed
    in f32. MCJIT and the system linker resolve the symbols from libm.
    """

    def __init__(self, source: type[Operation], function: str):
        super().__init__(source)
        self.function = function

    def lower(self, op: Operation, rewriter: PatternRewriter) -> None:
        args = [to_llvm(v, rewriter) for v in op.operands]
        ty = args[0].type
        if isinstance(ty, VectorType) or not isinstance(ty, AnyFloat):
            raise op_error(op, f"cannot lower '{op.name}' on {ty} to a libm call")
        compute = ty
        if isinstance(ty, Float16Type):
            compute = Float32Type()
            args = [rewriter.insert(llvm.FPExtOp(a, compute)).result for a in args]
        name = self.function + ("" if isinstance(compute, Float64Type) else "f")
        result = call_function(op, rewriter, name, args, compute).returned
        assert result is not None
        if compute != ty:
            result = rewriter.insert(llvm.FPTruncOp(result, ty)).result
        replace_with(op, rewriter, result)


# ---------------------------------------------------------------------------
# The tables
# ---------------------------------------------------------------------------

ONE_TO_ONE: tuple[tuple[type[Operation], type[Operation]], ...] = (
    (arith.AddiOp, llvm.AddOp),
    (arith.SubiOp, llvm.SubOp),
    (arith.MuliOp, llvm.MulOp),
    (arith.DivSIOp, llvm.SDivOp),  # truncates toward zero, like C
    (arith.DivUIOp, llvm.UDivOp),
    (arith.RemSIOp, llvm.SRemOp),  # sign of the dividend, like C
    (arith.RemUIOp, llvm.URemOp),
    (arith.AndIOp, llvm.AndOp),
    (arith.OrIOp, llvm.OrOp),
    (arith.XOrIOp, llvm.XOrOp),
    (arith.ShLIOp, llvm.ShlOp),
    (arith.ShRUIOp, llvm.LShrOp),
    (arith.ShRSIOp, llvm.AShrOp),
    (arith.SelectOp, llvm.SelectOp),
    (mathd.FmaOp, llvm.FMAOp),
)
"""arith/math op → the llvm op taking the same operands."""

FLOAT_BINARY: tuple[tuple[type[Operation], type[Operation], bool], ...] = (
    (arith.AddfOp, llvm.FAddOp, True),
    (arith.SubfOp, llvm.FSubOp, True),
    (arith.MulfOp, llvm.FMulOp, True),
    (arith.DivfOp, llvm.FDivOp, False),  # no extra flags: division must stay exact
)
"""arith float op → llvm op, and whether it gets `contract`."""

BINARY_INTRINSICS: tuple[tuple[type[Operation], str], ...] = (
    (arith.MaxnumfOp, "llvm.maxnum"),  # the non-NaN operand wins
    (arith.MinnumfOp, "llvm.minnum"),
    (arith.MaximumfOp, "llvm.maximum"),  # NaN-propagating, as NumPy's `maximum`
    (arith.MinimumfOp, "llvm.minimum"),  # NaN-propagating, as NumPy's `minimum`
    (arith.MaxSIOp, "llvm.smax"),
    (arith.MinSIOp, "llvm.smin"),
    (arith.MaxUIOp, "llvm.umax"),
    (arith.MinUIOp, "llvm.umin"),
)
"""arith binary op → LLVM intrinsic (called with the operand type's suffix)."""

CASTS: tuple[tuple[type[Operation], type[Operation]], ...] = (
    (arith.ExtFOp, llvm.FPExtOp),
    (arith.TruncFOp, llvm.FPTruncOp),  # round to nearest even, as NumPy
    (arith.SIToFPOp, llvm.SIToFPOp),
    (arith.ExtSIOp, llvm.SExtOp),
    (arith.ExtUIOp, llvm.ZExtOp),
    (arith.TruncIOp, llvm.TruncOp),
    (arith.BitcastOp, llvm.BitcastOp),
)
"""arith conversion → llvm cast op."""

MATH_INTRINSICS: tuple[tuple[type[Operation], str], ...] = (
    (mathd.ExpOp, "llvm.exp"),
    (mathd.Exp2Op, "llvm.exp2"),
    (mathd.LogOp, "llvm.log"),
    (mathd.Log2Op, "llvm.log2"),
    (mathd.Log10Op, "llvm.log10"),
    (mathd.SqrtOp, "llvm.sqrt"),
    (mathd.AbsFOp, "llvm.fabs"),
    (mathd.FloorOp, "llvm.floor"),
    (mathd.CeilOp, "llvm.ceil"),
    (mathd.TruncOp, "llvm.trunc"),  # round toward zero
    (mathd.RoundOp, "llvm.round"),  # half away from zero
    (mathd.RoundEvenOp, "llvm.roundeven"),  # half to even, as NumPy's `round`
    (mathd.SinOp, "llvm.sin"),
    (mathd.CosOp, "llvm.cos"),
    (mathd.PowFOp, "llvm.pow"),
    (mathd.CopySignOp, "llvm.copysign"),
    (mathd.CtPopOp, "llvm.ctpop"),
)
"""math op → LLVM intrinsic (unary or binary, called with the operand type's suffix)."""

COUNT_BITS: tuple[tuple[type[Operation], str], ...] = (
    (mathd.CountLeadingZerosOp, "llvm.ctlz"),
    (mathd.CountTrailingZerosOp, "llvm.cttz"),
)

LIBM: tuple[tuple[type[Operation], str], ...] = (
    (mathd.TanhOp, "tanh"),
    (mathd.ErfOp, "erf"),
    (mathd.ExpM1Op, "expm1"),
    (mathd.Log1pOp, "log1p"),
    (mathd.TanOp, "tan"),
    (mathd.SinhOp, "sinh"),
    (mathd.CoshOp, "cosh"),
    (mathd.AsinOp, "asin"),
    (mathd.AcosOp, "acos"),
    (mathd.AtanOp, "atan"),
    (mathd.Atan2Op, "atan2"),
    (mathd.AsinhOp, "asinh"),
    (mathd.AcoshOp, "acosh"),
    (mathd.AtanhOp, "atanh"),
    (mathd.CbrtOp, "cbrt"),
)
"""math op → libm function (`tanh`: `tanhf` for f32, `tanh` for f64)."""


# ---------------------------------------------------------------------------
# Ops lowered to more than one llvm op
# ---------------------------------------------------------------------------


class ConstantLowering(RewritePattern):
    """`arith.constant` → `llvm.mlir.constant` (index constants become i64)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.ConstantOp, rewriter: PatternRewriter, /):
        ty = convert_type(op.result.type)
        value = op.value
        if isinstance(value, IntegerAttr) and value.type != ty:
            value = integer_attr(value.value.data, ty)
        elif isinstance(value, DenseIntOrFPElementsAttr) and ty != op.result.type:
            # An index vector becomes an i64 one; `from_list`'s overloads want the
            # element type statically known, which `convert_type` cannot show.
            value = DenseIntOrFPElementsAttr.from_list(ty, value.get_values())  # pyright: ignore[reportCallIssue, reportArgumentType]
        # `llvm.ConstantOp(value, ty)`, built as `quick` builds (every constant differs)
        new = rewriter.insert(
            llvm.ConstantOp.create(result_types=[ty], properties={"value": value})
        )
        replace_with(op, rewriter, new)


class FloorDivSILowering(RewritePattern):
    """`arith.floordivsi` → sdiv, then one less when the remainder's sign differs from the divisor's.

    q = a sdiv b;  r = a srem b
    floordiv = q - zext((r != 0) & ((r < 0) != (b < 0)))
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.FloorDivSIOp, rewriter: PatternRewriter, /):
        a, b = (to_llvm(v, rewriter) for v in op.operands)
        q, r, zero = _divmod(a, b, rewriter)
        r_neg = _icmp(rewriter, "slt", r, zero)
        b_neg = _icmp(rewriter, "slt", b, zero)
        signs_differ = rewriter.insert(llvm.XOrOp(r_neg, b_neg)).res
        adjust = rewriter.insert(llvm.AndOp(_icmp(rewriter, "ne", r, zero), signs_differ)).res
        replace_with(op, rewriter, rewriter.insert(llvm.SubOp(q, _zext(rewriter, adjust, a.type))))


class CeilDivSILowering(RewritePattern):
    """`arith.ceildivsi` → sdiv, then one more when the remainder has the divisor's sign.

    q = a sdiv b;  r = a srem b
    ceildiv = q + zext((r != 0) & ((r < 0) == (b < 0)))
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.CeilDivSIOp, rewriter: PatternRewriter, /):
        a, b = (to_llvm(v, rewriter) for v in op.operands)
        q, r, zero = _divmod(a, b, rewriter)
        r_neg = _icmp(rewriter, "slt", r, zero)
        b_neg = _icmp(rewriter, "slt", b, zero)
        same_sign = _icmp(rewriter, "eq", r_neg, b_neg)
        adjust = rewriter.insert(llvm.AndOp(_icmp(rewriter, "ne", r, zero), same_sign)).res
        replace_with(op, rewriter, rewriter.insert(llvm.AddOp(q, _zext(rewriter, adjust, a.type))))


class CeilDivUILowering(RewritePattern):
    """`arith.ceildivui` → `q = a udiv b; q + zext(a urem b != 0)`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.CeilDivUIOp, rewriter: PatternRewriter, /):
        a, b = (to_llvm(v, rewriter) for v in op.operands)
        q = rewriter.insert(llvm.UDivOp(a, b)).res
        r = rewriter.insert(llvm.URemOp(a, b)).res
        nonzero = _icmp(rewriter, "ne", r, constant(0, a.type, rewriter))
        replace_with(op, rewriter, rewriter.insert(llvm.AddOp(q, _zext(rewriter, nonzero, a.type))))


def _divmod(a: SSAValue, b: SSAValue, rewriter: PatternRewriter):
    q = rewriter.insert(llvm.SDivOp(a, b)).res
    r = rewriter.insert(llvm.SRemOp(a, b)).res
    return q, r, constant(0, a.type, rewriter)


def _icmp(rewriter: PatternRewriter, pred: str, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
    flag = llvm.ICmpPredicateFlag(pred)
    predicate = cast(IntegerAttr[IntegerType], integer_attr(flag.to_int(), i64))
    return rewriter.insert(quick(llvm.ICmpOp, lhs, rhs, predicate)).res


def _zext(rewriter: PatternRewriter, value: SSAValue, ty: Attribute) -> SSAValue:
    return rewriter.insert(quick(llvm.ZExtOp, value, ty)).res


class CmpiLowering(RewritePattern):
    """`arith.cmpi <pred>` → `llvm.icmp "<pred>"` (same predicate names)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.CmpiOp, rewriter: PatternRewriter, /):
        lhs, rhs = to_llvm(op.lhs, rewriter), to_llvm(op.rhs, rewriter)
        pred = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
        replace_with(op, rewriter, _icmp(rewriter, pred, lhs, rhs))


class CmpfLowering(RewritePattern):
    """`arith.cmpf <pred>` → `llvm.fcmp "<pred>"`; `false` / `true` → an i1 constant."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.CmpfOp, rewriter: PatternRewriter, /):
        pred = arith.CMPF_COMPARISON_OPERATIONS[op.predicate.value.data]
        if pred in ("false", "true"):
            # xDSL's translator cannot emit `fcmp false/true`; they are constants.
            replace_with(op, rewriter, constant(int(pred == "true"), i1, rewriter))
            return
        lhs, rhs = to_llvm(op.lhs, rewriter), to_llvm(op.rhs, rewriter)
        replace_with(op, rewriter, rewriter.insert(quick(llvm.FCmpOp, lhs, rhs, pred)))


class NegfLowering(RewritePattern):
    """`arith.negf` → `llvm.fneg`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.NegfOp, rewriter: PatternRewriter, /):
        new = quick(llvm.FNegOp, to_llvm(op.operand, rewriter), _fastmath(op))
        replace_with(op, rewriter, rewriter.insert(new))


def _int_width(ty: Attribute) -> int:
    ty = convert_type(ty)
    if isinstance(ty, VectorType):
        ty = ty.element_type
    assert isinstance(ty, IntegerType)
    return ty.width.data


class IndexCastLowering(RewritePattern):
    """`arith.index_cast` → `llvm.sext` / `llvm.trunc` / nothing (index is i64)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.IndexCastOp, rewriter: PatternRewriter, /):
        arg = to_llvm(op.input, rewriter)
        target = convert_type(op.result.type)
        src_w, dst_w = _int_width(arg.type), _int_width(target)
        if src_w == dst_w:
            new: Operation | SSAValue = arg
        elif src_w < dst_w:
            new = rewriter.insert(quick(llvm.SExtOp, arg, target))
        else:
            new = rewriter.insert(quick(llvm.TruncOp, arg, target))
        replace_with(op, rewriter, new)


class UIToFPLowering(RewritePattern):
    """`arith.uitofp` → `llvm.sitofp` of a non-negative value (xDSL has no `uitofp` op).

    Up to i32 the source is zero-extended to i64 first. An i64 with the top
    bit set is halved keeping the lowest bit (so rounding is unchanged),
    converted, and doubled, as compilers do::

        big  = x <s 0
        half = (x >>u 1) | (x & 1)
        r    = big ? 2 * sitofp(half) : sitofp(x)
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.UIToFPOp, rewriter: PatternRewriter, /):
        arg = to_llvm(op.input, rewriter)
        target = op.result.type
        if _int_width(arg.type) < 64:
            wide = _zext(rewriter, arg, i64)
            replace_with(op, rewriter, rewriter.insert(llvm.SIToFPOp(wide, target)))
            return
        one = constant(1, arg.type, rewriter)
        big = _icmp(rewriter, "slt", arg, constant(0, arg.type, rewriter))
        low_bit = rewriter.insert(llvm.AndOp(arg, one)).res
        shifted = rewriter.insert(llvm.LShrOp(arg, one)).res
        half = rewriter.insert(llvm.OrOp(shifted, low_bit)).res
        half_f = rewriter.insert(llvm.SIToFPOp(half, target)).result
        doubled = rewriter.insert(llvm.FAddOp(half_f, half_f)).res
        direct = rewriter.insert(llvm.SIToFPOp(arg, target)).result
        replace_with(op, rewriter, rewriter.insert(llvm.SelectOp(big, doubled, direct)))


class FPowILowering(RewritePattern):
    """`math.fpowi` → `llvm.powi.<float>.<int>` (repeated multiplication)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: mathd.FPowIOp, rewriter: PatternRewriter, /):
        base, exponent = (to_llvm(v, rewriter) for v in op.operands)
        name = f"llvm.powi.{intrinsic_suffix(base.type)}.{intrinsic_suffix(exponent.type)}"
        replace_with(op, rewriter, call_intrinsic(rewriter, name, [base, exponent], base.type))


class FPToSILowering(FloatToIntLowering):
    """`arith.fptosi` → truncation toward zero with NumPy's results (on x86) where C has none.

    In range, `llvm.fptosi.sat` truncates. NaN, ±inf and out-of-range values
    give what NumPy's `astype` gives on x86 (where NumPy itself says
    "undefined"): the "integer indefinite" value MIN of i32/i64 (what
    `cvttss2si` returns), and for i8/i16 the low bits of the i32 conversion
    (NumPy converts through int32), e.g. 300.7 → i8 44, NaN → i8 0. See
    docs/design.md §3.2.
    """

    def __init__(self):
        super().__init__(arith.FPToSIOp, "llvm.fptosi.sat")

    def lower(self, op: Operation, rewriter: PatternRewriter) -> None:
        arg = to_llvm(op.operands[0], rewriter)
        target = convert_type(op.results[0].type)
        if not isinstance(target, IntegerType) or not isinstance(arg.type, AnyFloat):
            return super().lower(op, rewriter)  # vectors: saturating conversion
        width = target.width.data
        via = IntegerType(max(width, 32))
        value = _numpy_fptosi(arg, via, rewriter)
        if via != target:
            value = rewriter.insert(llvm.TruncOp(value, target)).res
        replace_with(op, rewriter, value)


def _numpy_fptosi(arg: SSAValue, target: IntegerType, rewriter: PatternRewriter) -> SSAValue:
    """`select(-2^(w-1) <= x < 2^(w-1), fptosi.sat(x), MIN)`; NaN fails both ordered compares."""
    width = target.width.data
    name = f"llvm.fptosi.sat.{intrinsic_suffix(target)}.{intrinsic_suffix(arg.type)}"
    converted = call_intrinsic(rewriter, name, [arg], target).results[0]
    limit = float(2 ** (width - 1))
    if isinstance(arg.type, Float16Type) and limit > 65504.0:
        limit = float("inf")
    low = rewriter.insert(llvm.FCmpOp(arg, constant(-limit, arg.type, rewriter), "oge")).res
    high = rewriter.insert(llvm.FCmpOp(arg, constant(limit, arg.type, rewriter), "olt")).res
    ok = rewriter.insert(llvm.AndOp(low, high)).res
    minimum = constant(-(2 ** (width - 1)), target, rewriter)
    return rewriter.insert(llvm.SelectOp(ok, converted, minimum)).res


class AbsILowering(RewritePattern):
    """`math.absi` → `llvm.abs.*(x, false)` (INT_MIN stays INT_MIN, as NumPy)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: mathd.AbsIOp, rewriter: PatternRewriter, /):
        arg = to_llvm(op.operand, rewriter)
        poison = constant(0, i1, rewriter)
        name = f"llvm.abs.{intrinsic_suffix(arg.type)}"
        replace_with(op, rewriter, call_intrinsic(rewriter, name, [arg, poison], arg.type))


class RsqrtLowering(RewritePattern):
    """`math.rsqrt` → `1.0 / llvm.sqrt(x)` (no approximate reciprocal)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: mathd.RsqrtOp, rewriter: PatternRewriter, /):
        arg = to_llvm(op.operand, rewriter)
        name = f"llvm.sqrt.{intrinsic_suffix(arg.type)}"
        root = call_intrinsic(rewriter, name, [arg], arg.type).results[0]
        one = constant(1.0, arg.type, rewriter)
        replace_with(op, rewriter, rewriter.insert(llvm.FDivOp(one, root)))


# ---------------------------------------------------------------------------
# Pattern lists
# ---------------------------------------------------------------------------


def scalar_patterns() -> list[RewritePattern]:
    """One pattern per arith and math op `lower-to-llvm` handles."""
    return [
        ConstantLowering(),
        *(OneToOneLowering(source, target) for source, target in ONE_TO_ONE),
        *(FloatBinaryLowering(*row) for row in FLOAT_BINARY),
        *(IntrinsicLowering(source, name) for source, name in BINARY_INTRINSICS),
        FloorDivSILowering(),
        CeilDivSILowering(),
        CeilDivUILowering(),
        CmpiLowering(),
        CmpfLowering(),
        NegfLowering(),
        *(CastLowering(source, target) for source, target in CASTS),
        UIToFPLowering(),
        IndexCastLowering(),
        FPToSILowering(),
        FloatToIntLowering(arith.FPToUIOp, "llvm.fptoui.sat"),
        *(IntrinsicLowering(source, name) for source, name in MATH_INTRINSICS),
        RsqrtLowering(),
        AbsILowering(),
        *(CountBitsLowering(source, name) for source, name in COUNT_BITS),
        FPowILowering(),
        *(LibmLowering(source, function) for source, function in LIBM),
    ]


__all__ = ["scalar_patterns"]
