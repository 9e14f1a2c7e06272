"""Scalar patterns of `lower-to-llvm`: `arith` and `math` → xDSL's llvm dialect.

One `RewritePattern` per source op, named `<Op>Lowering` (STYLE convention
13). Overloaded LLVM intrinsics are called through `llvm.call_intrinsic`
with their type suffix (`llvm.exp.f32`); functions LLVM has no intrinsic
for call libm (`tanhf` / `tanh`). Index values are i64.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

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
    replace_with,
    to_llvm,
)
from lamina.core.diagnostics import op_error

# ---------------------------------------------------------------------------
# Scalar arithmetic (arith)
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
            value = DenseIntOrFPElementsAttr.from_list(ty, value.get_values())
        new = rewriter.insert(llvm.ConstantOp(value, ty))
        replace_with(op, rewriter, new)


class _SourceLowering(RewritePattern):
    """Base of the table-driven patterns: each lowers exactly one op class, `source`.

    Subclasses set `source` (and what they lower it to) and implement `lower`;
    `lower-to-llvm` also reads `source` to try each pattern only on its own ops.
    """

    source: ClassVar[type[Operation]]

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if type(op) is self.source:
            self.lower(op, rewriter)

    def lower(self, op: Operation, rewriter: PatternRewriter) -> None:
        raise NotImplementedError


class _BinaryLowering(_SourceLowering):
    """Base: a binary arith/math op → one llvm op on the converted operands."""

    source: ClassVar[type[Operation]]
    target: ClassVar[type[Operation]]

    def build(self, op: Operation, lhs: SSAValue, rhs: SSAValue) -> Operation:
        return self.target(lhs, rhs)

    def lower(self, op: Operation, rewriter: PatternRewriter) -> None:
        lhs, rhs = (to_llvm(v, rewriter) for v in op.operands)
        replace_with(op, rewriter, rewriter.insert(self.build(op, lhs, rhs)))


class AddiLowering(_BinaryLowering):
    """`arith.addi` → `llvm.add`."""

    source, target = arith.AddiOp, llvm.AddOp


class SubiLowering(_BinaryLowering):
    """`arith.subi` → `llvm.sub`."""

    source, target = arith.SubiOp, llvm.SubOp


class MuliLowering(_BinaryLowering):
    """`arith.muli` → `llvm.mul`."""

    source, target = arith.MuliOp, llvm.MulOp


class DivSILowering(_BinaryLowering):
    """`arith.divsi` → `llvm.sdiv` (truncates toward zero, like C)."""

    source, target = arith.DivSIOp, llvm.SDivOp


class DivUILowering(_BinaryLowering):
    """`arith.divui` → `llvm.udiv`."""

    source, target = arith.DivUIOp, llvm.UDivOp


class RemSILowering(_BinaryLowering):
    """`arith.remsi` → `llvm.srem` (sign of the dividend, like C)."""

    source, target = arith.RemSIOp, llvm.SRemOp


class RemUILowering(_BinaryLowering):
    """`arith.remui` → `llvm.urem`."""

    source, target = arith.RemUIOp, llvm.URemOp


class AndILowering(_BinaryLowering):
    """`arith.andi` → `llvm.and`."""

    source, target = arith.AndIOp, llvm.AndOp


class OrILowering(_BinaryLowering):
    """`arith.ori` → `llvm.or`."""

    source, target = arith.OrIOp, llvm.OrOp


class XOrILowering(_BinaryLowering):
    """`arith.xori` → `llvm.xor`."""

    source, target = arith.XOrIOp, llvm.XOrOp


class ShLILowering(_BinaryLowering):
    """`arith.shli` → `llvm.shl`."""

    source, target = arith.ShLIOp, llvm.ShlOp


class ShRUILowering(_BinaryLowering):
    """`arith.shrui` → `llvm.lshr`."""

    source, target = arith.ShRUIOp, llvm.LShrOp


class ShRSILowering(_BinaryLowering):
    """`arith.shrsi` → `llvm.ashr`."""

    source, target = arith.ShRSIOp, llvm.AShrOp


def _fastmath(op: Operation, extra: Sequence[FastMathFlag] = ()) -> llvm.FastMathAttr:
    """The op's own fastmath flags plus `extra`."""
    flags = set(extra)
    own = op.properties.get("fastmath")
    if isinstance(own, arith.FastMathFlagsAttr):
        flags |= set(own.data)
    return llvm.FastMathAttr(tuple(sorted(flags)) if flags else None)


class _FloatBinaryLowering(_BinaryLowering):
    """Base: float binops keep their fastmath flags and may add `contract`.

    `contract` only lets LLVM fuse a multiply and an add into an FMA (one
    rounding instead of two): well inside the 1e-5 tolerance, and never
    reassociates a reduction.
    """

    contract: ClassVar[bool] = True

    def build(self, op: Operation, lhs: SSAValue, rhs: SSAValue) -> Operation:
        extra = (FastMathFlag.ALLOW_CONTRACT,) if self.contract else ()
        return self.target(lhs, rhs, _fastmath(op, extra))


class AddfLowering(_FloatBinaryLowering):
    """`arith.addf` → `llvm.fadd` (contract)."""

    source, target = arith.AddfOp, llvm.FAddOp


class SubfLowering(_FloatBinaryLowering):
    """`arith.subf` → `llvm.fsub` (contract)."""

    source, target = arith.SubfOp, llvm.FSubOp


class MulfLowering(_FloatBinaryLowering):
    """`arith.mulf` → `llvm.fmul` (contract)."""

    source, target = arith.MulfOp, llvm.FMulOp


class DivfLowering(_FloatBinaryLowering):
    """`arith.divf` → `llvm.fdiv` (no extra flags: division must stay exact)."""

    source, target = arith.DivfOp, llvm.FDivOp
    contract = False


class _IntrinsicBinaryLowering(_SourceLowering):
    """Base: a binary op → `llvm.call_intrinsic "<intrinsic>.<type>"`."""

    source: ClassVar[type[Operation]]
    intrinsic: ClassVar[str]

    def lower(self, op: Operation, rewriter: PatternRewriter) -> None:
        lhs, rhs = (to_llvm(v, rewriter) for v in op.operands)
        name = f"{self.intrinsic}.{intrinsic_suffix(lhs.type)}"
        replace_with(op, rewriter, call_intrinsic(rewriter, name, [lhs, rhs], lhs.type))


class MaxnumfLowering(_IntrinsicBinaryLowering):
    """`arith.maxnumf` → `llvm.maxnum.*` (the non-NaN operand wins)."""

    source, intrinsic = arith.MaxnumfOp, "llvm.maxnum"


class MinnumfLowering(_IntrinsicBinaryLowering):
    """`arith.minnumf` → `llvm.minnum.*`."""

    source, intrinsic = arith.MinnumfOp, "llvm.minnum"


class MaximumfLowering(_IntrinsicBinaryLowering):
    """`arith.maximumf` → `llvm.maximum.*` (NaN-propagating, as NumPy's `maximum`)."""

    source, intrinsic = arith.MaximumfOp, "llvm.maximum"


class MinimumfLowering(_IntrinsicBinaryLowering):
    """`arith.minimumf` → `llvm.minimum.*` (NaN-propagating, as NumPy's `minimum`)."""

    source, intrinsic = arith.MinimumfOp, "llvm.minimum"


class MaxSILowering(_IntrinsicBinaryLowering):
    """`arith.maxsi` → `llvm.smax.*`."""

    source, intrinsic = arith.MaxSIOp, "llvm.smax"


class MinSILowering(_IntrinsicBinaryLowering):
    """`arith.minsi` → `llvm.smin.*`."""

    source, intrinsic = arith.MinSIOp, "llvm.smin"


class MaxUILowering(_IntrinsicBinaryLowering):
    """`arith.maxui` → `llvm.umax.*`."""

    source, intrinsic = arith.MaxUIOp, "llvm.umax"


class MinUILowering(_IntrinsicBinaryLowering):
    """`arith.minui` → `llvm.umin.*`."""

    source, intrinsic = arith.MinUIOp, "llvm.umin"


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
    return rewriter.insert(llvm.ICmpOp(lhs, rhs, integer_attr(flag.to_int(), i64))).res


def _zext(rewriter: PatternRewriter, value: SSAValue, ty: Attribute) -> SSAValue:
    return rewriter.insert(llvm.ZExtOp(value, ty)).res


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
        replace_with(op, rewriter, rewriter.insert(llvm.FCmpOp(lhs, rhs, pred)))


class SelectLowering(RewritePattern):
    """`arith.select` → `llvm.select`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.SelectOp, rewriter: PatternRewriter, /):
        cond, lhs, rhs = (to_llvm(v, rewriter) for v in op.operands)
        replace_with(op, rewriter, rewriter.insert(llvm.SelectOp(cond, lhs, rhs)))


class NegfLowering(RewritePattern):
    """`arith.negf` → `llvm.fneg`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.NegfOp, rewriter: PatternRewriter, /):
        new = llvm.FNegOp(to_llvm(op.operand, rewriter), _fastmath(op))
        replace_with(op, rewriter, rewriter.insert(new))


class _CastLowering(_SourceLowering):
    """Base: a one-operand conversion → one llvm cast op to the converted result type."""

    source: ClassVar[type[Operation]]
    target: ClassVar[type[Operation]]

    def lower(self, op: Operation, rewriter: PatternRewriter) -> None:
        arg = to_llvm(op.operands[0], rewriter)
        new = rewriter.insert(self.target(arg, convert_type(op.results[0].type)))
        replace_with(op, rewriter, new)


class ExtFLowering(_CastLowering):
    """`arith.extf` → `llvm.fpext`."""

    source, target = arith.ExtFOp, llvm.FPExtOp


class TruncFLowering(_CastLowering):
    """`arith.truncf` → `llvm.fptrunc` (round to nearest even, as NumPy)."""

    source, target = arith.TruncFOp, llvm.FPTruncOp


class SIToFPLowering(_CastLowering):
    """`arith.sitofp` → `llvm.sitofp`."""

    source, target = arith.SIToFPOp, llvm.SIToFPOp


class ExtSILowering(_CastLowering):
    """`arith.extsi` → `llvm.sext`."""

    source, target = arith.ExtSIOp, llvm.SExtOp


class ExtUILowering(_CastLowering):
    """`arith.extui` → `llvm.zext`."""

    source, target = arith.ExtUIOp, llvm.ZExtOp


class TruncILowering(_CastLowering):
    """`arith.trunci` → `llvm.trunc`."""

    source, target = arith.TruncIOp, llvm.TruncOp


class BitcastLowering(_CastLowering):
    """`arith.bitcast` → `llvm.bitcast`."""

    source, target = arith.BitcastOp, llvm.BitcastOp


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
            new = rewriter.insert(llvm.SExtOp(arg, target))
        else:
            new = rewriter.insert(llvm.TruncOp(arg, target))
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


class _FloatToIntLowering(_SourceLowering):
    """Base: float → int through `llvm.fpto{s,u}i.sat.*`.

    xDSL's llvm dialect has no `fptosi` op; the saturating intrinsic truncates
    toward zero like NumPy's `astype` (and defines out-of-range inputs).
    """

    source: ClassVar[type[Operation]]
    intrinsic: ClassVar[str]

    def lower(self, op: Operation, rewriter: PatternRewriter) -> None:
        arg = to_llvm(op.operands[0], rewriter)
        target = convert_type(op.results[0].type)
        name = f"{self.intrinsic}.{intrinsic_suffix(target)}.{intrinsic_suffix(arg.type)}"
        replace_with(op, rewriter, call_intrinsic(rewriter, name, [arg], target))


class FPToSILowering(_FloatToIntLowering):
    """`arith.fptosi` → truncation toward zero with NumPy's results (on x86) where C has none.

    In range, `llvm.fptosi.sat` truncates. NaN, ±inf and out-of-range values
    give what NumPy's `astype` gives on x86 (where NumPy itself says
    "undefined"): the "integer indefinite" value MIN of i32/i64 (what
    `cvttss2si` returns), and for i8/i16 the low bits of the i32 conversion
    (NumPy converts through int32), e.g. 300.7 → i8 44, NaN → i8 0. See
    docs/design.md §3.2.
    """

    source, intrinsic = arith.FPToSIOp, "llvm.fptosi.sat"

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


class FPToUILowering(_FloatToIntLowering):
    """`arith.fptoui` → `llvm.fptoui.sat.iN.fM`."""

    source, intrinsic = arith.FPToUIOp, "llvm.fptoui.sat"


# ---------------------------------------------------------------------------
# math
# ---------------------------------------------------------------------------


class _UnaryCallIntrinsicLowering(_SourceLowering):
    """Base: a unary math op → `llvm.call_intrinsic "<intrinsic>.<type>"`.

    Not xDSL's `llvm.intr.exp`-style ops: the translator declares those
    without a type suffix, so an f32 and an f64 use in one module collide.
    """

    source: ClassVar[type[Operation]]
    intrinsic: ClassVar[str]

    def lower(self, op: Operation, rewriter: PatternRewriter) -> None:
        arg = to_llvm(op.operands[0], rewriter)
        name = f"{self.intrinsic}.{intrinsic_suffix(arg.type)}"
        replace_with(op, rewriter, call_intrinsic(rewriter, name, [arg], arg.type))


class ExpLowering(_UnaryCallIntrinsicLowering):
    """`math.exp` → `llvm.exp.*`."""

    source, intrinsic = mathd.ExpOp, "llvm.exp"


class Exp2Lowering(_UnaryCallIntrinsicLowering):
    """`math.exp2` → `llvm.exp2.*`."""

    source, intrinsic = mathd.Exp2Op, "llvm.exp2"


class LogLowering(_UnaryCallIntrinsicLowering):
    """`math.log` → `llvm.log.*`."""

    source, intrinsic = mathd.LogOp, "llvm.log"


class Log2Lowering(_UnaryCallIntrinsicLowering):
    """`math.log2` → `llvm.log2.*`."""

    source, intrinsic = mathd.Log2Op, "llvm.log2"


class SqrtLowering(_UnaryCallIntrinsicLowering):
    """`math.sqrt` → `llvm.sqrt.*`."""

    source, intrinsic = mathd.SqrtOp, "llvm.sqrt"


class AbsFLowering(_UnaryCallIntrinsicLowering):
    """`math.absf` → `llvm.fabs.*`."""

    source, intrinsic = mathd.AbsFOp, "llvm.fabs"


class FloorLowering(_UnaryCallIntrinsicLowering):
    """`math.floor` → `llvm.floor.*`."""

    source, intrinsic = mathd.FloorOp, "llvm.floor"


class CeilLowering(_UnaryCallIntrinsicLowering):
    """`math.ceil` → `llvm.ceil.*`."""

    source, intrinsic = mathd.CeilOp, "llvm.ceil"


class SinLowering(_UnaryCallIntrinsicLowering):
    """`math.sin` → `llvm.sin.*`."""

    source, intrinsic = mathd.SinOp, "llvm.sin"


class CosLowering(_UnaryCallIntrinsicLowering):
    """`math.cos` → `llvm.cos.*`."""

    source, intrinsic = mathd.CosOp, "llvm.cos"


class PowFLowering(_IntrinsicBinaryLowering):
    """`math.powf` → `llvm.pow.*`."""

    source, intrinsic = mathd.PowFOp, "llvm.pow"


class CopySignLowering(_IntrinsicBinaryLowering):
    """`math.copysign` → `llvm.copysign.*`."""

    source, intrinsic = mathd.CopySignOp, "llvm.copysign"


class FmaLowering(RewritePattern):
    """`math.fma` → `llvm.intr.fma`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: mathd.FmaOp, rewriter: PatternRewriter, /):
        a, b, c = (to_llvm(v, rewriter) for v in op.operands)
        replace_with(op, rewriter, rewriter.insert(llvm.FMAOp(a, b, c)))


class TruncLowering(_UnaryCallIntrinsicLowering):
    """`math.trunc` → `llvm.trunc.*` (round toward zero)."""

    source, intrinsic = mathd.TruncOp, "llvm.trunc"


class RoundLowering(_UnaryCallIntrinsicLowering):
    """`math.round` → `llvm.round.*` (half away from zero)."""

    source, intrinsic = mathd.RoundOp, "llvm.round"


class RoundEvenLowering(_UnaryCallIntrinsicLowering):
    """`math.roundeven` → `llvm.roundeven.*` (half to even, as NumPy's `round`)."""

    source, intrinsic = mathd.RoundEvenOp, "llvm.roundeven"


class Log10Lowering(_UnaryCallIntrinsicLowering):
    """`math.log10` → `llvm.log10.*`."""

    source, intrinsic = mathd.Log10Op, "llvm.log10"


class CtPopLowering(_UnaryCallIntrinsicLowering):
    """`math.ctpop` → `llvm.ctpop.*`."""

    source, intrinsic = mathd.CtPopOp, "llvm.ctpop"


class _CountBitsLowering(_SourceLowering):
    """Base: `math.ctlz` / `math.cttz` → `llvm.ctlz.*` / `llvm.cttz.*(x, false)` (defined for 0)."""

    source: ClassVar[type[Operation]]
    intrinsic: ClassVar[str]

    def lower(self, op: Operation, rewriter: PatternRewriter) -> None:
        arg = to_llvm(op.operands[0], rewriter)
        zero_is_poison = constant(0, i1, rewriter)
        name = f"{self.intrinsic}.{intrinsic_suffix(arg.type)}"
        replace_with(op, rewriter, call_intrinsic(rewriter, name, [arg, zero_is_poison], arg.type))


class CountLeadingZerosLowering(_CountBitsLowering):
    """`math.ctlz` → `llvm.ctlz.*`."""

    source, intrinsic = mathd.CountLeadingZerosOp, "llvm.ctlz"


class CountTrailingZerosLowering(_CountBitsLowering):
    """`math.cttz` → `llvm.cttz.*`."""

    source, intrinsic = mathd.CountTrailingZerosOp, "llvm.cttz"


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


class _LibmLowering(_SourceLowering):
    """Base: a math op without an LLVM intrinsic → a call to libm (`tanhf` / `tanh`).

    f32 calls the `f`-suffixed function, f64 the plain one; f16 is computed
    in f32. MCJIT and the system linker resolve the symbols from libm.
    """

    source: ClassVar[type[Operation]]
    function: ClassVar[str]

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


class TanhLowering(_LibmLowering):
    """`math.tanh` → `tanhf` / `tanh`."""

    source, function = mathd.TanhOp, "tanh"


class ErfLowering(_LibmLowering):
    """`math.erf` → `erff` / `erf`."""

    source, function = mathd.ErfOp, "erf"


class ExpM1Lowering(_LibmLowering):
    """`math.expm1` → `expm1f` / `expm1`."""

    source, function = mathd.ExpM1Op, "expm1"


class Log1pLowering(_LibmLowering):
    """`math.log1p` → `log1pf` / `log1p`."""

    source, function = mathd.Log1pOp, "log1p"


class TanLowering(_LibmLowering):
    """`math.tan` → `tanf` / `tan`."""

    source, function = mathd.TanOp, "tan"


class SinhLowering(_LibmLowering):
    """`math.sinh` → `sinhf` / `sinh`."""

    source, function = mathd.SinhOp, "sinh"


class CoshLowering(_LibmLowering):
    """`math.cosh` → `coshf` / `cosh`."""

    source, function = mathd.CoshOp, "cosh"


class AsinLowering(_LibmLowering):
    """`math.asin` → `asinf` / `asin`."""

    source, function = mathd.AsinOp, "asin"


class AcosLowering(_LibmLowering):
    """`math.acos` → `acosf` / `acos`."""

    source, function = mathd.AcosOp, "acos"


class AtanLowering(_LibmLowering):
    """`math.atan` → `atanf` / `atan`."""

    source, function = mathd.AtanOp, "atan"


class Atan2Lowering(_LibmLowering):
    """`math.atan2` → `atan2f` / `atan2`."""

    source, function = mathd.Atan2Op, "atan2"


class AsinhLowering(_LibmLowering):
    """`math.asinh` → `asinhf` / `asinh`."""

    source, function = mathd.AsinhOp, "asinh"


class AcoshLowering(_LibmLowering):
    """`math.acosh` → `acoshf` / `acosh`."""

    source, function = mathd.AcoshOp, "acosh"


class AtanhLowering(_LibmLowering):
    """`math.atanh` → `atanhf` / `atanh`."""

    source, function = mathd.AtanhOp, "atanh"


class CbrtLowering(_LibmLowering):
    """`math.cbrt` → `cbrtf` / `cbrt`."""

    source, function = mathd.CbrtOp, "cbrt"


# ---------------------------------------------------------------------------
# Pattern lists
# ---------------------------------------------------------------------------

ARITH_PATTERNS: tuple[type[RewritePattern], ...] = (
    ConstantLowering, AddiLowering, SubiLowering, MuliLowering, DivSILowering,
    DivUILowering, RemSILowering, RemUILowering, AndILowering, OrILowering,
    XOrILowering, ShLILowering, ShRUILowering, ShRSILowering, AddfLowering,
    SubfLowering, MulfLowering, DivfLowering, MaxnumfLowering, MinnumfLowering,
    MaximumfLowering, MinimumfLowering, MaxSILowering, MinSILowering,
    MaxUILowering, MinUILowering, FloorDivSILowering, CeilDivSILowering,
    CeilDivUILowering, CmpiLowering, CmpfLowering, SelectLowering, NegfLowering,
    ExtFLowering, TruncFLowering, SIToFPLowering, UIToFPLowering, ExtSILowering,
    ExtUILowering, TruncILowering, BitcastLowering, IndexCastLowering,
    FPToSILowering, FPToUILowering,
)  # fmt: skip

MATH_PATTERNS: tuple[type[RewritePattern], ...] = (
    ExpLowering, Exp2Lowering, LogLowering, Log2Lowering, Log10Lowering,
    SqrtLowering, RsqrtLowering, AbsFLowering, AbsILowering, FloorLowering,
    CeilLowering, TruncLowering, RoundLowering, RoundEvenLowering, SinLowering,
    CosLowering, PowFLowering, CopySignLowering, FmaLowering, CtPopLowering,
    CountLeadingZerosLowering, CountTrailingZerosLowering, FPowILowering,
    TanhLowering, ErfLowering, ExpM1Lowering, Log1pLowering, TanLowering,
    SinhLowering, CoshLowering, AsinLowering, AcosLowering, AtanLowering,
    Atan2Lowering, AsinhLowering, AcoshLowering, AtanhLowering, CbrtLowering,
)  # fmt: skip
