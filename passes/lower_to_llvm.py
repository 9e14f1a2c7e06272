"""`lower-to-llvm`: loop nests, scalar arithmetic and buffers → xDSL's llvm dialect.

The transition into phase `build` (DESIGN §2, §4). xDSL has no
arith/math/func/cf/memref → llvm conversions of its own (XDSL_NOTES §4), so
every source op gets its own `RewritePattern`, named `<Op>Lowering`, driven
by one greedy `PatternRewriteWalker`.

ABI (what `backends/codegen.py` and `backends/runtime.py` rely on):

* every memref becomes a bare `!llvm.ptr` to its first element. Shapes are
  static and the memref type's shape *is* the physical layout, row-major
  (or the static strides/offset of a strided layout); a
  `lamina.constraint` only informs `simplify` and is dropped here;
* `loop.func @f(memref..., scalars...)` becomes
  `llvm.func @f(!llvm.ptr {llvm.noalias, lamina.buffer = memref<...>}, ...)`:
  buffer parameters never overlap (destination-passing style), and
  `lamina.buffer` records the memref type for the runtime's checks;
* `index` becomes `i64`.

Type conversion works as in MLIR's dialect conversion: a pattern that needs
an operand in its llvm type asks `_to_llvm`, which looks through (or
inserts) a `builtin.unrealized_conversion_cast`, and results are cast back
to their original type for users not lowered yet (`_from_llvm`).
`UnrealizedCastFolding` removes cast pairs as they meet; none survives.

xDSL's translator converts blocks in list order, so each function's blocks
are finally sorted in reverse post-order (definitions before uses).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import UnionType
from typing import ClassVar, Union, get_args, get_origin

from xdsl.context import Context
from xdsl.dialects import arith, llvm
from xdsl.dialects import math as mathd
from xdsl.dialects import memref as memrefd
from xdsl.dialects.builtin import (
    AnyFloat,
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    StringAttr,
    UnitAttr,
    UnrealizedConversionCastOp,
    VectorType,
    i1,
    i64,
)
from xdsl.dialects.utils.fast_math import FastMathFlag
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import BlockInsertPoint, InsertPoint, Rewriter
from xdsl.traits import SymbolTable

from lamina.core.diagnostics import op_error
from lamina.core.pass_base import LaminaPass
from lamina.dialects import loop
from lamina.dialects.lamina import Phase, set_phase

LOOP_KIND_ATTR = "lamina.loop_kind"
"""Attribute of a loop's back-edge `llvm.br`: the `loop.for` kind, turned into
`!llvm.loop` metadata by codegen (xDSL's llvm dialect has no loop metadata)."""

LOOP_HINT_KINDS = ("vectorized", "unrolled")

INTERNAL_ATTR = "lamina.internal"
"""Unit attribute of a `loop.func` the compiler made (not callable from outside)."""

BUFFER_ATTR = "lamina.buffer"
"""Argument attribute recording the memref type behind an `!llvm.ptr` parameter."""

ALLOC_ALIGNMENT = 64
"""Byte alignment of heap buffers (a cache line; enough for AVX-512 loads)."""

MAX_STACK_BYTES = 64 * 1024
"""`loop.alloc` with scope `local` up to this size becomes an entry-block `llvm.alloca`."""

# ---------------------------------------------------------------------------
# Types and casts
# ---------------------------------------------------------------------------


def convert_type(ty: Attribute) -> Attribute:
    """The llvm-dialect type of a loop-level type: memref → ptr, index → i64."""
    match ty:
        case MemRefType():
            return llvm.LLVMPointerType()
        case IndexType():
            return i64
        case VectorType() if isinstance(ty.element_type, IndexType):
            return VectorType(i64, ty.get_shape())
    return ty


def element_size(ty: Attribute) -> int:
    """Size in bytes of one memref element."""
    match ty:
        case Float16Type():
            return 2
        case Float32Type():
            return 4
        case Float64Type():
            return 8
        case IndexType():
            return 8
        case IntegerType():
            return max(1, (ty.width.data + 7) // 8)
        case VectorType():
            return element_size(ty.element_type) * math.prod(ty.get_shape())
    raise ValueError(f"no element size for {ty}")


def intrinsic_suffix(ty: Attribute) -> str:
    """LLVM's overload suffix of a type: `f32`, `i64`, `v8f32`."""
    match ty:
        case Float16Type():
            return "f16"
        case Float32Type():
            return "f32"
        case Float64Type():
            return "f64"
        case IntegerType():
            return f"i{ty.width.data}"
        case IndexType():
            return "i64"
        case VectorType():
            return f"v{math.prod(ty.get_shape())}{intrinsic_suffix(ty.element_type)}"
    raise ValueError(f"no intrinsic suffix for {ty}")


def _to_llvm(value: SSAValue, rewriter: PatternRewriter, at: InsertPoint | None = None) -> SSAValue:
    """`value` in its llvm type: the input of a cast that produced it, or a new cast."""
    target = convert_type(value.type)
    if target == value.type:
        return value
    owner = value.owner
    if isinstance(owner, UnrealizedConversionCastOp) and owner.inputs[0].type == target:
        return owner.inputs[0]
    cast = UnrealizedConversionCastOp.get([value], [target])
    rewriter.insert(cast, at)
    return cast.results[0]


def _from_llvm(
    value: SSAValue, original: Attribute, rewriter: PatternRewriter, at: InsertPoint | None = None
) -> SSAValue:
    """Cast an llvm-typed value back to `original` for users that are not lowered yet."""
    if value.type == original:
        return value
    cast = UnrealizedConversionCastOp.get([value], [original])
    rewriter.insert(cast, at)
    return cast.results[0]


def _constant(value: int | float, ty: Attribute, rewriter: PatternRewriter, at=None) -> SSAValue:
    attr = FloatAttr(value, ty) if isinstance(ty, AnyFloat) else IntegerAttr(int(value), ty)
    return rewriter.insert(llvm.ConstantOp(attr, ty), at).result


def _replace(op: Operation, rewriter: PatternRewriter, new: Operation | SSAValue | None) -> None:
    """Replace `op` (already having inserted `new`) by `new`'s result cast back to op's type."""
    if new is None:
        rewriter.erase(op)
        return
    value = new.results[0] if isinstance(new, Operation) else new
    if value.name_hint is None:
        value.name_hint = op.results[0].name_hint
    rewriter.replace(op, [], [_from_llvm(value, op.results[0].type, rewriter)])


def _module_of(op: Operation) -> ModuleOp:
    while not isinstance(op, ModuleOp):
        parent = op.parent_op()
        assert parent is not None, "op is not inside a module"
        op = parent
    return op


def _declare(
    op: Operation,
    rewriter: PatternRewriter,
    name: str,
    inputs: Sequence[Attribute],
    output: Attribute,
) -> None:
    """Declare the external function `name` at the top of op's module, once."""
    module = _module_of(op)
    if SymbolTable.lookup_symbol(module, name) is not None:
        return
    decl = llvm.FuncOp(
        name, llvm.LLVMFunctionType(inputs, output), linkage=llvm.LinkageAttr("external")
    )
    rewriter.insert(decl, InsertPoint.at_start(module.body.block))


def _call(
    op: Operation,
    rewriter: PatternRewriter,
    name: str,
    args: Sequence[SSAValue],
    result: Attribute | None,
    at: InsertPoint | None = None,
) -> llvm.CallOp:
    """Insert `llvm.call @name(args)` (declaring `name` if needed)."""
    _declare(op, rewriter, name, [a.type for a in args], result or llvm.LLVMVoidType())
    return rewriter.insert(llvm.CallOp(name, *args, return_type=result), at)


def _intrinsic(
    rewriter: PatternRewriter, name: str, args: Sequence[SSAValue], result: Attribute | None
) -> llvm.CallIntrinsicOp:
    return rewriter.insert(llvm.CallIntrinsicOp(name, args, [result] if result else []))


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
            value = IntegerAttr(value.value.data, ty)
        elif isinstance(value, DenseIntOrFPElementsAttr) and ty != op.result.type:
            value = DenseIntOrFPElementsAttr.from_list(ty, value.get_values())
        new = rewriter.insert(llvm.ConstantOp(value, ty))
        _replace(op, rewriter, new)


class _BinaryLowering(RewritePattern):
    """Base: a binary arith/math op → one llvm op on the converted operands."""

    source: ClassVar[type[Operation]]
    target: ClassVar[type[Operation]]

    def build(self, op: Operation, lhs: SSAValue, rhs: SSAValue) -> Operation:
        return self.target(lhs, rhs)

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if type(op) is not self.source:
            return
        lhs, rhs = (_to_llvm(v, rewriter) for v in op.operands)
        _replace(op, rewriter, rewriter.insert(self.build(op, lhs, rhs)))


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


class _IntrinsicBinaryLowering(RewritePattern):
    """Base: a binary op → `llvm.call_intrinsic "<intrinsic>.<type>"`."""

    source: ClassVar[type[Operation]]
    intrinsic: ClassVar[str]

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if type(op) is not self.source:
            return
        lhs, rhs = (_to_llvm(v, rewriter) for v in op.operands)
        name = f"{self.intrinsic}.{intrinsic_suffix(lhs.type)}"
        _replace(op, rewriter, _intrinsic(rewriter, name, [lhs, rhs], lhs.type))


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
        a, b = (_to_llvm(v, rewriter) for v in op.operands)
        q, r, zero = _divmod(a, b, rewriter)
        r_neg = _icmp(rewriter, "slt", r, zero)
        b_neg = _icmp(rewriter, "slt", b, zero)
        signs_differ = rewriter.insert(llvm.XOrOp(r_neg, b_neg)).res
        adjust = rewriter.insert(llvm.AndOp(_icmp(rewriter, "ne", r, zero), signs_differ)).res
        _replace(op, rewriter, rewriter.insert(llvm.SubOp(q, _zext(rewriter, adjust, a.type))))


class CeilDivSILowering(RewritePattern):
    """`arith.ceildivsi` → sdiv, then one more when the remainder has the divisor's sign.

    q = a sdiv b;  r = a srem b
    ceildiv = q + zext((r != 0) & ((r < 0) == (b < 0)))
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.CeilDivSIOp, rewriter: PatternRewriter, /):
        a, b = (_to_llvm(v, rewriter) for v in op.operands)
        q, r, zero = _divmod(a, b, rewriter)
        r_neg = _icmp(rewriter, "slt", r, zero)
        b_neg = _icmp(rewriter, "slt", b, zero)
        same_sign = _icmp(rewriter, "eq", r_neg, b_neg)
        adjust = rewriter.insert(llvm.AndOp(_icmp(rewriter, "ne", r, zero), same_sign)).res
        _replace(op, rewriter, rewriter.insert(llvm.AddOp(q, _zext(rewriter, adjust, a.type))))


class CeilDivUILowering(RewritePattern):
    """`arith.ceildivui` → `q = a udiv b; q + zext(a urem b != 0)`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.CeilDivUIOp, rewriter: PatternRewriter, /):
        a, b = (_to_llvm(v, rewriter) for v in op.operands)
        q = rewriter.insert(llvm.UDivOp(a, b)).res
        r = rewriter.insert(llvm.URemOp(a, b)).res
        nonzero = _icmp(rewriter, "ne", r, _constant(0, a.type, rewriter))
        _replace(op, rewriter, rewriter.insert(llvm.AddOp(q, _zext(rewriter, nonzero, a.type))))


def _divmod(a: SSAValue, b: SSAValue, rewriter: PatternRewriter):
    q = rewriter.insert(llvm.SDivOp(a, b)).res
    r = rewriter.insert(llvm.SRemOp(a, b)).res
    return q, r, _constant(0, a.type, rewriter)


def _icmp(rewriter: PatternRewriter, pred: str, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
    flag = llvm.ICmpPredicateFlag(pred)
    return rewriter.insert(llvm.ICmpOp(lhs, rhs, IntegerAttr(flag.to_int(), i64))).res


def _zext(rewriter: PatternRewriter, value: SSAValue, ty: Attribute) -> SSAValue:
    return rewriter.insert(llvm.ZExtOp(value, ty)).res


class CmpiLowering(RewritePattern):
    """`arith.cmpi <pred>` → `llvm.icmp "<pred>"` (same predicate names)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.CmpiOp, rewriter: PatternRewriter, /):
        lhs, rhs = _to_llvm(op.lhs, rewriter), _to_llvm(op.rhs, rewriter)
        pred = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
        _replace(op, rewriter, _icmp(rewriter, pred, lhs, rhs))


class CmpfLowering(RewritePattern):
    """`arith.cmpf <pred>` → `llvm.fcmp "<pred>"`; `false` / `true` → an i1 constant."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.CmpfOp, rewriter: PatternRewriter, /):
        pred = arith.CMPF_COMPARISON_OPERATIONS[op.predicate.value.data]
        if pred in ("false", "true"):
            # xDSL's translator cannot emit `fcmp false/true`; they are constants.
            _replace(op, rewriter, _constant(int(pred == "true"), i1, rewriter))
            return
        lhs, rhs = _to_llvm(op.lhs, rewriter), _to_llvm(op.rhs, rewriter)
        _replace(op, rewriter, rewriter.insert(llvm.FCmpOp(lhs, rhs, pred)))


class SelectLowering(RewritePattern):
    """`arith.select` → `llvm.select`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.SelectOp, rewriter: PatternRewriter, /):
        cond, lhs, rhs = (_to_llvm(v, rewriter) for v in op.operands)
        _replace(op, rewriter, rewriter.insert(llvm.SelectOp(cond, lhs, rhs)))


class NegfLowering(RewritePattern):
    """`arith.negf` → `llvm.fneg`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.NegfOp, rewriter: PatternRewriter, /):
        new = llvm.FNegOp(_to_llvm(op.operand, rewriter), _fastmath(op))
        _replace(op, rewriter, rewriter.insert(new))


class _CastLowering(RewritePattern):
    """Base: a one-operand conversion → one llvm cast op to the converted result type."""

    source: ClassVar[type[Operation]]
    target: ClassVar[type[Operation]]

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if type(op) is not self.source:
            return
        arg = _to_llvm(op.operands[0], rewriter)
        new = rewriter.insert(self.target(arg, convert_type(op.results[0].type)))
        _replace(op, rewriter, new)


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
        arg = _to_llvm(op.input, rewriter)
        target = convert_type(op.result.type)
        src_w, dst_w = _int_width(arg.type), _int_width(target)
        if src_w == dst_w:
            new: Operation | SSAValue = arg
        elif src_w < dst_w:
            new = rewriter.insert(llvm.SExtOp(arg, target))
        else:
            new = rewriter.insert(llvm.TruncOp(arg, target))
        _replace(op, rewriter, new)


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
        arg = _to_llvm(op.input, rewriter)
        target = op.result.type
        if _int_width(arg.type) < 64:
            wide = _zext(rewriter, arg, i64)
            _replace(op, rewriter, rewriter.insert(llvm.SIToFPOp(wide, target)))
            return
        one = _constant(1, arg.type, rewriter)
        big = _icmp(rewriter, "slt", arg, _constant(0, arg.type, rewriter))
        low_bit = rewriter.insert(llvm.AndOp(arg, one)).res
        shifted = rewriter.insert(llvm.LShrOp(arg, one)).res
        half = rewriter.insert(llvm.OrOp(shifted, low_bit)).res
        half_f = rewriter.insert(llvm.SIToFPOp(half, target)).result
        doubled = rewriter.insert(llvm.FAddOp(half_f, half_f)).res
        direct = rewriter.insert(llvm.SIToFPOp(arg, target)).result
        _replace(op, rewriter, rewriter.insert(llvm.SelectOp(big, doubled, direct)))


class FPowILowering(RewritePattern):
    """`math.fpowi` → `llvm.powi.<float>.<int>` (repeated multiplication)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: mathd.FPowIOp, rewriter: PatternRewriter, /):
        base, exponent = (_to_llvm(v, rewriter) for v in op.operands)
        name = f"llvm.powi.{intrinsic_suffix(base.type)}.{intrinsic_suffix(exponent.type)}"
        _replace(op, rewriter, _intrinsic(rewriter, name, [base, exponent], base.type))


class _FloatToIntLowering(RewritePattern):
    """Base: float → int through `llvm.fpto{s,u}i.sat.*`.

    xDSL's llvm dialect has no `fptosi` op; the saturating intrinsic truncates
    toward zero like NumPy's `astype` (and defines out-of-range inputs).
    """

    source: ClassVar[type[Operation]]
    intrinsic: ClassVar[str]

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if type(op) is not self.source:
            return
        arg = _to_llvm(op.operands[0], rewriter)
        target = convert_type(op.results[0].type)
        name = f"{self.intrinsic}.{intrinsic_suffix(target)}.{intrinsic_suffix(arg.type)}"
        _replace(op, rewriter, _intrinsic(rewriter, name, [arg], target))


class FPToSILowering(_FloatToIntLowering):
    """`arith.fptosi` → `llvm.fptosi.sat.iN.fM` (truncation toward zero)."""

    source, intrinsic = arith.FPToSIOp, "llvm.fptosi.sat"


class FPToUILowering(_FloatToIntLowering):
    """`arith.fptoui` → `llvm.fptoui.sat.iN.fM`."""

    source, intrinsic = arith.FPToUIOp, "llvm.fptoui.sat"


# ---------------------------------------------------------------------------
# math
# ---------------------------------------------------------------------------


class _UnaryCallIntrinsicLowering(RewritePattern):
    """Base: a unary math op → `llvm.call_intrinsic "<intrinsic>.<type>"`.

    Not xDSL's `llvm.intr.exp`-style ops: the translator declares those
    without a type suffix, so an f32 and an f64 use in one module collide.
    """

    source: ClassVar[type[Operation]]
    intrinsic: ClassVar[str]

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if type(op) is not self.source:
            return
        arg = _to_llvm(op.operands[0], rewriter)
        name = f"{self.intrinsic}.{intrinsic_suffix(arg.type)}"
        _replace(op, rewriter, _intrinsic(rewriter, name, [arg], arg.type))


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
        a, b, c = (_to_llvm(v, rewriter) for v in op.operands)
        _replace(op, rewriter, rewriter.insert(llvm.FMAOp(a, b, c)))


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


class _CountBitsLowering(RewritePattern):
    """Base: `math.ctlz` / `math.cttz` → `llvm.ctlz.*` / `llvm.cttz.*(x, false)` (defined for 0)."""

    source: ClassVar[type[Operation]]
    intrinsic: ClassVar[str]

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if type(op) is not self.source:
            return
        arg = _to_llvm(op.operands[0], rewriter)
        zero_is_poison = _constant(0, i1, rewriter)
        name = f"{self.intrinsic}.{intrinsic_suffix(arg.type)}"
        _replace(op, rewriter, _intrinsic(rewriter, name, [arg, zero_is_poison], arg.type))


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
        arg = _to_llvm(op.operand, rewriter)
        poison = _constant(0, i1, rewriter)
        name = f"llvm.abs.{intrinsic_suffix(arg.type)}"
        _replace(op, rewriter, _intrinsic(rewriter, name, [arg, poison], arg.type))


class RsqrtLowering(RewritePattern):
    """`math.rsqrt` → `1.0 / llvm.sqrt(x)` (no approximate reciprocal)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: mathd.RsqrtOp, rewriter: PatternRewriter, /):
        arg = _to_llvm(op.operand, rewriter)
        name = f"llvm.sqrt.{intrinsic_suffix(arg.type)}"
        root = _intrinsic(rewriter, name, [arg], arg.type).results[0]
        one = _constant(1.0, arg.type, rewriter)
        _replace(op, rewriter, rewriter.insert(llvm.FDivOp(one, root)))


class _LibmLowering(RewritePattern):
    """Base: a math op without an LLVM intrinsic → a call to libm (`tanhf` / `tanh`).

    f32 calls the `f`-suffixed function, f64 the plain one; f16 is computed
    in f32. MCJIT and the system linker resolve the symbols from libm.
    """

    source: ClassVar[type[Operation]]
    function: ClassVar[str]

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if type(op) is not self.source:
            return
        args = [_to_llvm(v, rewriter) for v in op.operands]
        ty = args[0].type
        if isinstance(ty, VectorType) or not isinstance(ty, AnyFloat):
            raise op_error(op, f"cannot lower '{op.name}' on {ty} to a libm call")
        compute = ty
        if isinstance(ty, Float16Type):
            compute = Float32Type()
            args = [rewriter.insert(llvm.FPExtOp(a, compute)).result for a in args]
        name = self.function + ("" if isinstance(compute, Float64Type) else "f")
        result = _call(op, rewriter, name, args, compute).returned
        assert result is not None
        if compute != ty:
            result = rewriter.insert(llvm.FPTruncOp(result, ty)).result
        _replace(op, rewriter, result)


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
# Buffers
# ---------------------------------------------------------------------------


def _element_address(
    buffer: SSAValue, indices: Sequence[SSAValue], rewriter: PatternRewriter
) -> SSAValue:
    """`&buffer[i, j, ...]`: one `getelementptr` by the linearized (row-major) index.

    offset = layout_offset + i * stride0 + j * stride1 + ...   (i64, nsw)
    """
    mtype = buffer.type
    assert isinstance(mtype, MemRefType)
    ptr = _to_llvm(buffer, rewriter)
    strides = mtype.get_strides()
    offset = mtype.get_offset()
    if strides is None or offset is None or None in strides:
        raise ValueError(f"buffer type {mtype} has no static strides")
    nsw = llvm.OverflowAttr((llvm.OverflowFlag.NO_SIGNED_WRAP,))
    linear: SSAValue | None = None
    for index, stride in zip(indices, strides, strict=True):
        term = _to_llvm(index, rewriter)
        if stride != 1:
            term = rewriter.insert(
                llvm.MulOp(term, _constant(stride, i64, rewriter), overflow=nsw)
            ).res
        linear = (
            term if linear is None else rewriter.insert(llvm.AddOp(linear, term, overflow=nsw)).res
        )
    if offset:
        off = _constant(offset, i64, rewriter)
        linear = (
            off if linear is None else rewriter.insert(llvm.AddOp(linear, off, overflow=nsw)).res
        )
    if linear is None:
        return ptr
    elem = convert_type(mtype.element_type)
    gep = llvm.GEPOp.from_mixed_indices(ptr, [linear], elem, inbounds=True)
    return rewriter.insert(gep).result


def _access_error(op: Operation, err: ValueError):
    return op_error(op, f"cannot lower this access to LLVM: {err}")


class LoadLowering(RewritePattern):
    """`loop.load %buf[%i, %j]` / `memref.load` → `getelementptr` + aligned `llvm.load`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: loop.LoadOp | memrefd.LoadOp, rewriter: PatternRewriter, /):
        buffer = op.buffer if isinstance(op, loop.LoadOp) else op.memref
        try:
            address = _element_address(buffer, op.indices, rewriter)
        except ValueError as err:
            raise _access_error(op, err) from None
        ty = convert_type(op.results[0].type)
        load = llvm.LoadOp(address, ty, alignment=element_size(op.results[0].type))
        _replace(op, rewriter, rewriter.insert(load))


class StoreLowering(RewritePattern):
    """`loop.store %v, %buf[%i, %j]` / `memref.store` → `getelementptr` + aligned `llvm.store`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: loop.StoreOp | memrefd.StoreOp, rewriter: PatternRewriter, /):
        buffer = op.buffer if isinstance(op, loop.StoreOp) else op.memref
        try:
            address = _element_address(buffer, op.indices, rewriter)
        except ValueError as err:
            raise _access_error(op, err) from None
        value = _to_llvm(op.value, rewriter)
        rewriter.insert(llvm.StoreOp(value, address, alignment=element_size(op.value.type)))
        rewriter.erase(op)


def _buffer_bytes(mtype: MemRefType) -> int:
    return math.prod(mtype.get_shape()) * element_size(mtype.element_type)


def _is_stack_alloc(op: Operation) -> bool:
    """A `loop.alloc` small enough and `local` enough to live on the stack."""
    return (
        isinstance(op, loop.AllocOp)
        and op.scope.data == "local"
        and _buffer_bytes(op.result.type) <= MAX_STACK_BYTES
    )


def _is_stack_buffer(value: SSAValue) -> bool:
    """Does `value` come from a stack allocation (lowered or not)?"""
    owner = value.owner
    if isinstance(owner, UnrealizedConversionCastOp):
        return isinstance(owner.inputs[0].owner, llvm.AllocaOp)
    return isinstance(owner, Operation) and _is_stack_alloc(owner)


def _entry_block(op: Operation) -> Block:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, llvm.FuncOp | loop.FuncOp):
        parent = parent.parent_op()
    assert parent is not None, "buffer allocation outside a function"
    return parent.body.blocks[0]


class AllocLowering(RewritePattern):
    """`loop.alloc` / `memref.alloc` → `aligned_alloc(64, bytes)`; small `local` ones → `llvm.alloca`.

    The byte count is rounded up to a multiple of the alignment, as C11's
    `aligned_alloc` requires. A stack buffer is allocated once, in the
    function's entry block, so that a loop around it does not grow the stack.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: loop.AllocOp | memrefd.AllocOp, rewriter: PatternRewriter, /):
        mtype = op.results[0].type
        assert isinstance(mtype, MemRefType)
        if not mtype.has_static_shape():
            raise op_error(op, f"cannot allocate {mtype}: shapes must be static")
        if _is_stack_alloc(op):
            at = InsertPoint.at_start(_entry_block(op))
            count = _constant(math.prod(mtype.get_shape()), i64, rewriter, at)
            alloca = llvm.AllocaOp(count, convert_type(mtype.element_type), ALLOC_ALIGNMENT)
            rewriter.insert(alloca, InsertPoint.after(count.owner))
            _replace(op, rewriter, alloca)
            return
        size = -(-max(_buffer_bytes(mtype), 1) // ALLOC_ALIGNMENT) * ALLOC_ALIGNMENT
        args = [_constant(ALLOC_ALIGNMENT, i64, rewriter), _constant(size, i64, rewriter)]
        call = _call(op, rewriter, "aligned_alloc", args, llvm.LLVMPointerType())
        _replace(op, rewriter, call)


class FreeLowering(RewritePattern):
    """`loop.free` / `memref.dealloc` → `free(ptr)`; nothing for a stack buffer."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: loop.FreeOp | memrefd.DeallocOp, rewriter: PatternRewriter, /):
        buffer = op.operands[0]
        if not _is_stack_buffer(buffer):
            _call(op, rewriter, "free", [_to_llvm(buffer, rewriter)], None)
        rewriter.erase(op)


class CopyLowering(RewritePattern):
    """`loop.copy` / `memref.copy` → `llvm.memcpy` of the whole (contiguous) buffer.

    Both buffers live on the host here; a copy between different devices is
    a target's business before this pass.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: loop.CopyOp | memrefd.CopyOp, rewriter: PatternRewriter, /):
        source, target = op.operands[0], op.operands[1]
        size = min(_buffer_bytes(source.type), _buffer_bytes(target.type))
        args = [
            _to_llvm(target, rewriter),
            _to_llvm(source, rewriter),
            _constant(size, i64, rewriter),
            _constant(0, i1, rewriter),
        ]
        _intrinsic(rewriter, "llvm.memcpy.p0.p0.i64", args, None)
        rewriter.erase(op)


class UndefLowering(RewritePattern):
    """`loop.undef` → `llvm.mlir.undef` (any value; `simplify` usually removed its stores)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: loop.UndefOp, rewriter: PatternRewriter, /):
        _replace(op, rewriter, rewriter.insert(llvm.UndefOp(convert_type(op.result.type))))


class AssumeLowering(RewritePattern):
    """`loop.assume %c` → `llvm.assume(%c)`, so LLVM may rely on it too."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: loop.AssumeOp, rewriter: PatternRewriter, /):
        _intrinsic(rewriter, "llvm.assume", [_to_llvm(op.cond, rewriter)], None)
        rewriter.erase(op)


# ---------------------------------------------------------------------------
# Functions and calls
# ---------------------------------------------------------------------------


def _function_type(op: Operation, inputs: Sequence[Attribute], outputs: Sequence[Attribute]):
    if len(outputs) > 1:
        raise op_error(
            op, f"cannot lower a function with {len(outputs)} results to LLVM (at most 1)"
        )
    output = convert_type(outputs[0]) if outputs else llvm.LLVMVoidType()
    return llvm.LLVMFunctionType([convert_type(t) for t in inputs], output)


def _arg_attrs(inputs: Sequence[Attribute]) -> ArrayAttr[DictionaryAttr]:
    """`{llvm.noalias, lamina.buffer = <memref>}` for buffers, `{}` for scalars."""
    entries = []
    for ty in inputs:
        if isinstance(ty, MemRefType):
            entries.append(DictionaryAttr({"llvm.noalias": UnitAttr(), BUFFER_ATTR: ty}))
        else:
            entries.append(DictionaryAttr({}))
    return ArrayAttr(entries)


class FuncLowering(RewritePattern):
    """`loop.func` → `llvm.func` with the converted signature (see the module docstring's ABI).

    The body moves over unchanged; each entry-block argument gets its llvm
    type and is cast back for the (not yet lowered) ops that use it. A
    function the compiler created itself (`lamina.internal`, e.g. an
    outlined parallel loop body) gets internal linkage.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: loop.FuncOp, rewriter: PatternRewriter, /):
        inputs, outputs = op.function_type.inputs.data, op.function_type.outputs.data
        fn_type = _function_type(op, inputs, outputs)
        body = rewriter.move_region_contents_to_new_regions(op.body)
        internal = INTERNAL_ATTR in op.attributes and bool(body.blocks)
        new = llvm.FuncOp(
            op.sym_name.data,
            fn_type,
            linkage=llvm.LinkageAttr("internal" if internal else "external"),
            body=body,
            other_props={"arg_attrs": _arg_attrs(inputs)} if inputs else None,
        )
        if body.blocks:
            _retype_block_args(body.blocks[0], rewriter)
        rewriter.replace(op, new)


def _retype_block_args(block: Block, rewriter: PatternRewriter) -> None:
    """Give every argument of `block` its llvm type; old uses see a cast of the new argument."""
    for index, arg in enumerate(list(block.args)):
        target = convert_type(arg.type)
        if target == arg.type:
            continue
        new_arg = rewriter.insert_block_argument(block, index, target)
        new_arg.name_hint = arg.name_hint
        cast = UnrealizedConversionCastOp.get([new_arg], [arg.type])
        rewriter.insert(cast, InsertPoint.at_start(block))
        rewriter.replace_all_uses_with(arg, cast.results[0])
        rewriter.erase_block_argument(arg)


class ReturnLowering(RewritePattern):
    """`loop.return [%v]` → `llvm.return [%v]`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: loop.ReturnOp, rewriter: PatternRewriter, /):
        values = [_to_llvm(v, rewriter) for v in op.operands]
        if len(values) > 1:
            raise op_error(op, f"cannot return {len(values)} values from an llvm.func")
        rewriter.replace(op, llvm.ReturnOp(values[0] if values else None))


class CallLowering(RewritePattern):
    """`loop.call @f(args)` → `llvm.call @f(args)`; an external `@f` is declared in the module."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: loop.CallOp, rewriter: PatternRewriter, /):
        name = op.callee.root_reference.data
        fn_type = _function_type(op, op.arguments.types, op.res.types)
        _declare(op, rewriter, name, fn_type.inputs.data, fn_type.output)
        args = [_to_llvm(v, rewriter) for v in op.arguments]
        result = None if isinstance(fn_type.output, llvm.LLVMVoidType) else fn_type.output
        call = rewriter.insert(llvm.CallOp(name, *args, return_type=result))
        _replace(op, rewriter, call if result is not None else None)


# ---------------------------------------------------------------------------
# Structured control flow
# ---------------------------------------------------------------------------


def _lower_yields(
    region_blocks: Sequence[Block],
    rewriter: PatternRewriter,
    make_branch: Callable[[list[SSAValue], InsertPoint], Operation],
) -> None:
    """Replace each `loop.yield` terminating one of `region_blocks` by `make_branch(values)`."""
    for block in region_blocks:
        term = block.last_op
        if not isinstance(term, loop.YieldOp):
            continue
        at = InsertPoint.before(term)
        values = [_to_llvm(v, rewriter, at) for v in term.operands]
        rewriter.insert(make_branch(values, at), at)
        rewriter.erase(term)


class ForLowering(RewritePattern):
    """`loop.for` → a header block with the induction variable and iter_args as block arguments.

    Every kind lowers to this loop (`parallel` ones reach here only as
    reductions, see `ParallelForLowering`). For `vectorized` and `unrolled`
    the back edge carries `lamina.loop_kind`, which codegen turns into
    `llvm.loop.vectorize.enable` (forced vectorization, which also lets LLVM
    reorder a floating-point reduction across lanes) or
    `llvm.loop.unroll.full` metadata::

        ^pre:     ...ops before the loop...
                  llvm.br ^header(%lb, %init...)
                      │
                      ▼
        ^header(%iv: i64, %acc...):  ◀──────────────┐
                  %c = llvm.icmp "slt" %iv, %ub      │
                  llvm.cond_br %c, ^body, ^exit      │
                      │            │                 │
                      ▼            │                 │
        ^body:    ...loop body (any number of blocks)│
                  %next = llvm.add %iv, %step        │
                  llvm.br ^header(%next, %yield...) ─┘
                                   │
                                   ▼
        ^exit:    ...ops after the loop; the loop's results are the
                  header's iter_args (the header dominates the exit)

    Blocks are placed in this order, which is also a dominance order.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: loop.ForOp, rewriter: PatternRewriter, /):
        pre = op.parent_block()
        if pre is None:
            return
        kind = op.kind.data
        before = InsertPoint.before(op)
        lb, ub, step = (_to_llvm(v, rewriter, before) for v in (op.lb, op.ub, op.step))
        inits = [_to_llvm(v, rewriter, before) for v in op.iter_args]
        result_types = list(op.res.types)

        exit_block = pre.split_before(op)
        body_first = op.body.blocks[0]
        header = Block(arg_types=[i64, *(convert_type(t) for t in result_types)])
        iv, *carried = header.args
        for new, old in zip(header.args, body_first.args, strict=True):
            new.name_hint = old.name_hint
        # Body block arguments become casts of the header's arguments.
        for old, new in zip(body_first.args, header.args, strict=True):
            rewriter.replace_all_uses_with(
                old, _from_llvm(new, old.type, rewriter, InsertPoint.at_end(header))
            )
        for arg in reversed(body_first.args):
            rewriter.erase_block_argument(arg)
        body_blocks = list(op.body.blocks)

        def latch(values: list[SSAValue], at: InsertPoint) -> Operation:
            nsw = llvm.OverflowAttr((llvm.OverflowFlag.NO_SIGNED_WRAP,))
            nxt = rewriter.insert(llvm.AddOp(iv, step, overflow=nsw), at).res
            back_edge = llvm.BrOp(header, nxt, *values)
            if kind in LOOP_HINT_KINDS:
                back_edge.attributes[LOOP_KIND_ATTR] = StringAttr(kind)
            return back_edge

        _lower_yields(body_blocks, rewriter, latch)
        rewriter.inline_region(op.body, BlockInsertPoint.before(exit_block))
        Rewriter.insert_block(header, BlockInsertPoint.before(body_first))

        cond = _icmp_at(rewriter, "slt", iv, ub, InsertPoint.at_end(header))
        rewriter.insert(
            llvm.CondBrOp(cond, body_first, [], exit_block, []), InsertPoint.at_end(header)
        )
        rewriter.insert(llvm.BrOp(header, lb, *inits), InsertPoint.at_end(pre))

        at_exit = InsertPoint.at_start(exit_block)
        results = [
            _from_llvm(v, t, rewriter, at_exit) for v, t in zip(carried, result_types, strict=True)
        ]
        rewriter.replace(op, [], results)


def _icmp_at(rewriter: PatternRewriter, pred: str, lhs: SSAValue, rhs: SSAValue, at: InsertPoint):
    flag = llvm.ICmpPredicateFlag(pred)
    return rewriter.insert(llvm.ICmpOp(lhs, rhs, IntegerAttr(flag.to_int(), i64)), at).res


class IfLowering(RewritePattern):
    """`loop.if` → `llvm.cond_br` to the then/else blocks, which branch to a merge block::

    ^pre:   ...ops before...
            llvm.cond_br %c, ^then, ^else        (^else = ^merge without else region)
             │                │
             ▼                ▼
    ^then:  ...         ^else:  ...
            llvm.br ^merge(%t...)   llvm.br ^merge(%e...)
             │                │
             ▼                ▼
    ^merge(%r...):  ...ops after; the if's results are the block arguments
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: loop.IfOp, rewriter: PatternRewriter, /):
        pre = op.parent_block()
        if pre is None:
            return
        cond = _to_llvm(op.cond, rewriter, InsertPoint.before(op))
        result_types = list(op.output.types)
        merge = pre.split_before(op)
        for index, ty in enumerate(result_types):
            rewriter.insert_block_argument(merge, index, convert_type(ty))

        def to_merge(values: list[SSAValue], at: InsertPoint) -> Operation:
            return llvm.BrOp(merge, *values)

        targets = []
        for region in (op.then_region, op.else_region):
            if not region.blocks:
                targets.append(merge)
                continue
            targets.append(region.blocks[0])
            _lower_yields(list(region.blocks), rewriter, to_merge)
            rewriter.inline_region(region, BlockInsertPoint.before(merge))
        rewriter.insert(
            llvm.CondBrOp(cond, targets[0], [], targets[1], []), InsertPoint.at_end(pre)
        )
        at_merge = InsertPoint.before(op)
        results = [
            _from_llvm(v, t, rewriter, at_merge)
            for v, t in zip(merge.args, result_types, strict=True)
        ]
        rewriter.replace(op, [], results)


# ---------------------------------------------------------------------------
# Casts and block order
# ---------------------------------------------------------------------------


class UnrealizedCastFolding(RewritePattern):
    """`cast(cast(%x : A → B) : B → A)` → `%x`; unused casts disappear."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: UnrealizedConversionCastOp, rewriter: PatternRewriter, /):
        if not op.results[0].uses:
            rewriter.erase(op)
            return
        producer = op.inputs[0].owner
        if (
            isinstance(producer, UnrealizedConversionCastOp)
            and producer.inputs[0].type == op.results[0].type
        ):
            rewriter.replace(op, [], [producer.inputs[0]])


def _op_types(pattern: RewritePattern) -> tuple[type[Operation], ...]:
    """The op classes `pattern` matches: its `source`, or its `op_type_rewrite_pattern` type.

    () means unknown, and the pattern is tried on every op.
    """
    source = getattr(pattern, "source", None)
    if source is not None:
        return (source,)
    for cell in type(pattern).match_and_rewrite.__closure__ or ():
        value = cell.cell_contents
        if isinstance(value, type) and issubclass(value, Operation):
            return (value,)
        if get_origin(value) in (Union, UnionType):
            return get_args(value)
    return ()


class TypeDispatch(RewritePattern):
    """Try only the patterns written for the op's class (in list order).

    With ~100 patterns, asking each one about every op took most of the
    pass's time; the candidates per op class are computed once.
    """

    def __init__(self, patterns: Sequence[RewritePattern]):
        self.patterns = [(p, _op_types(p)) for p in patterns]
        self.by_type: dict[type[Operation], list[RewritePattern]] = {}

    def candidates(self, op_type: type[Operation]) -> list[RewritePattern]:
        if op_type not in self.by_type:
            self.by_type[op_type] = [
                p for p, types in self.patterns if not types or issubclass(op_type, types)
            ]
        return self.by_type[op_type]

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        for pattern in self.candidates(type(op)):
            pattern.match_and_rewrite(op, rewriter)
            if rewriter.has_done_action:
                return


def order_blocks(func: llvm.FuncOp) -> None:
    """Sort `func`'s blocks in reverse post-order (xDSL's translator needs defs before uses)."""
    region: Region = func.body
    if len(region.blocks) < 2:
        return
    entry = region.blocks[0]
    seen: set[Block] = set()
    postorder: list[Block] = []
    stack: list[tuple[Block, int]] = [(entry, 0)]
    seen.add(entry)
    while stack:
        block, i = stack.pop()
        # Successors in reverse, so that a loop body comes before the loop exit.
        succs = list(reversed(block.last_op.successors)) if block.last_op else []
        if i < len(succs):
            stack.append((block, i + 1))
            nxt = succs[i]
            if nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, 0))
        else:
            postorder.append(block)
    order = list(reversed(postorder)) + [b for b in region.blocks if b not in seen]
    if order == list(region.blocks):
        return
    for block in order:
        region.detach_block(block)
    region.add_block(order)


# ---------------------------------------------------------------------------
# The pass
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

LOOP_PATTERNS: tuple[type[RewritePattern], ...] = (
    FuncLowering, ReturnLowering, CallLowering, ForLowering, IfLowering,
    LoadLowering, StoreLowering, AllocLowering, FreeLowering, CopyLowering,
    UndefLowering, AssumeLowering, UnrealizedCastFolding,
)  # fmt: skip


@dataclass(frozen=True)
class LowerToLLVMPass(LaminaPass):
    """Lower loop functions with arith/math scalar code to the llvm dialect (enters phase build).

    Input invariant: phase `lowering`; every function is a `loop.func` over
    statically shaped memrefs (host buffers) and scalars, its body made of
    `loop`, `arith` and `math` ops (`memref.load/store/alloc/dealloc/copy`
    are accepted too).

    Output IR: only `builtin.module`, `llvm.func` and other `llvm.*` ops.
    Buffers are `!llvm.ptr {llvm.noalias}` parameters pointing at the first
    element of a row-major contiguous array, index is i64, loops are
    header/body/latch CFGs with block arguments, heap buffers come from
    `aligned_alloc(64, n)` / `free`, transcendental functions without an
    LLVM intrinsic call libm. A `parallel` loop (without iter_args) is
    outlined into an internal function run by OpenMP's `GOMP_parallel`;
    `vectorized` / `unrolled` loops mark their back edge for codegen.

    Invariants: blocks of every function are in reverse post-order; no
    `builtin.unrealized_conversion_cast` survives; an op that cannot be
    lowered is reported at the op.
    """

    name = "lower-to-llvm"

    phases: ClassVar[frozenset[Phase]] = frozenset({Phase.LOWERING})
    produces: ClassVar[Phase | None] = Phase.BUILD
    illegal_ops: ClassVar[tuple[str, ...]] = (
        "loop.*", "arith.*", "math.*", "memref.*", "graph.*", "te.*",
        "builtin.unrealized_conversion_cast", "func.*", "scf.*", "cf.*",
    )  # fmt: skip

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from lamina.backends.llvm_parallel import ParallelForLowering

        # ParallelForLowering must see a parallel loop before ForLowering does.
        patterns = [ParallelForLowering()]
        patterns += [p() for p in (*LOOP_PATTERNS, *ARITH_PATTERNS, *MATH_PATTERNS)]
        PatternRewriteWalker(
            GreedyRewritePatternApplier([TypeDispatch(patterns)]), apply_recursively=True
        ).rewrite_module(op)
        self.check_legality(op)
        for func in op.ops:
            if isinstance(func, llvm.FuncOp):
                order_blocks(func)
        set_phase(op, Phase.BUILD)


__all__ = ["LowerToLLVMPass", "convert_type", "order_blocks", "BUFFER_ATTR"]
