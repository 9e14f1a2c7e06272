"""Shared pieces of the llvm-dialect lowering (`lower-to-llvm`): types, casts, declarations.

Type conversion works as in MLIR's dialect conversion: a pattern that needs
an operand in its llvm type asks `to_llvm`, which looks through (or
inserts) a `builtin.unrealized_conversion_cast`, and results are cast back
to their original type for users not lowered yet (`from_llvm`,
`replace_with`). The pass removes cast pairs as they meet; none survives.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import TypeVar

from xdsl.dialects import llvm
from xdsl.dialects.builtin import (
    UNKNOWN_LOC,
    AnyFloat,
    DenseArrayBase,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    UnitAttr,
    UnrealizedConversionCastOp,
    VectorType,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.ir.core import OpResult, SSAValues, Use
from xdsl.irdl import OptionalDef
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.rewriter import InsertPoint

from lamina.core.symbols import lookup_symbol
from lamina.dialects import loop

OpT = TypeVar("OpT", bound=Operation)

LOOP_KIND_ATTR = "lamina.loop_kind"
"""Attribute of a loop's back-edge `llvm.br`: the `loop.for` kind, turned into
`!llvm.loop` metadata by codegen (xDSL's llvm dialect has no loop metadata)."""

LOOP_HINT_KINDS = ("vectorized", "vectorized-tail", "vectorized-short", "unrolled")

INTERNAL_ATTR = "lamina.internal"
"""Unit attribute of a `loop.func` the compiler made (not callable from outside)."""

BUFFER_ATTR = "lamina.buffer"
"""Argument attribute recording the memref type behind an `!llvm.ptr` parameter."""

ALLOC_ALIGNMENT = 64
"""Byte alignment of heap buffers (a cache line; enough for AVX-512 loads)."""

MAX_STACK_BYTES = 64 * 1024
"""`loop.alloc` with scope `local` up to this size becomes an entry-block `llvm.alloca`."""

# ---------------------------------------------------------------------------
# Building ops
# ---------------------------------------------------------------------------

_NO_ATTRIBUTES: dict[str, Attribute] = {}


def _defaults(cls: type[Operation]) -> tuple[tuple[tuple[str, Attribute], ...], ...]:
    """The default properties and attributes `IRDLOperation.__post_init__` fills in for
    `cls` (those not optional, with a default value), once per class."""
    found = _DEFAULTS.get(cls)
    if found is None:
        op_def = cls.get_irdl_definition()  # pyright: ignore[reportAttributeAccessIssue]
        found = _DEFAULTS[cls] = tuple(
            tuple(
                (name, d.default_value)
                for name, d in defs.items()
                if not isinstance(d, OptionalDef) and d.default_value is not None
            )
            for defs in (op_def.properties, op_def.attributes)
        )
    return found


_DEFAULTS: dict[type[Operation], tuple[tuple[tuple[str, Attribute], ...], ...]] = {}


def fast_create(
    cls: type[OpT],
    *,
    operands: Sequence[SSAValue] = (),
    result_types: Sequence[Attribute] = (),
    properties: dict[str, Attribute] = _NO_ATTRIBUTES,
    attributes: dict[str, Attribute] = _NO_ATTRIBUTES,
    successors: Sequence[Block] = (),
) -> OpT:
    """`cls.create(...)` (an IRDL op without regions), field for field, at a third of
    its cost: `lower-to-llvm` creates about 90,000 ops for DenseNet-121, and
    `Operation.__init__` went through the operand and successor setters (each a
    generator, a `zip` and a use list swap), `SSAValues` of a generator, a lazy
    import for the unknown location, and `IRDLOperation.__post_init__`'s loop
    over the definition's properties and attributes (`_defaults`, here once per
    class). The op is the same: operands and successors with their uses linked
    first in their values' use lists (as `add_use` links them), results, copies of
    `properties` and `attributes` with the definition's defaults, no location."""
    op = object.__new__(cls)
    operands = SSAValues(operands)
    uses = tuple([Use(op, index) for index in range(len(operands))])
    for value, use in zip(operands, uses, strict=True):
        first = value.first_use
        use._next_use = first  # pyright: ignore[reportPrivateUsage]
        if first is not None:
            first._prev_use = use  # pyright: ignore[reportPrivateUsage]
        value.first_use = use
    op._operands = operands  # pyright: ignore[reportPrivateUsage]
    op._operand_uses = uses  # pyright: ignore[reportPrivateUsage]
    op.results = SSAValues([OpResult(ty, op, index) for index, ty in enumerate(result_types)])
    op.properties = dict(properties)
    op.attributes = dict(attributes)
    op.location = UNKNOWN_LOC
    if successors:
        targets = tuple(successors)
        target_uses = tuple([Use(op, index) for index in range(len(targets))])
        for block, use in zip(targets, target_uses, strict=True):
            block.add_use(use)
        op._successors = targets  # pyright: ignore[reportPrivateUsage]
        op._successor_uses = target_uses  # pyright: ignore[reportPrivateUsage]
    else:
        op._successors = ()  # pyright: ignore[reportPrivateUsage]
        op._successor_uses = ()  # pyright: ignore[reportPrivateUsage]
    op.regions = ()
    default_properties, default_attributes = _defaults(cls)
    for name, value in default_properties:
        if name not in op.properties:
            op.properties[name] = value
    for name, value in default_attributes:
        if name not in op.attributes:
            op.attributes[name] = value
    return op


# ---------------------------------------------------------------------------
# Types and casts
# ---------------------------------------------------------------------------


def convert_type(ty: Attribute) -> Attribute:
    """The llvm-dialect type of a loop-level type: memref → ptr, index → i64."""
    if type(ty) in _UNCHANGED:  # most asks (a class comparison; `match` is isinstance's)
        return ty
    match ty:
        case MemRefType():
            return _PTR  # shared: asked for every buffer operand (DenseNet-121: 14,700 times)
        case IndexType():
            return i64
        case VectorType() if isinstance(ty.element_type, IndexType):
            return VectorType(i64, ty.get_shape())
    return ty


_UNCHANGED = frozenset({Float16Type, Float32Type, Float64Type, IntegerType, llvm.LLVMPointerType})
"""Classes of types that are their own llvm type (`convert_type` returns them as they are)."""


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


def to_llvm(value: SSAValue, rewriter: PatternRewriter, at: InsertPoint | None = None) -> SSAValue:
    """`value` in its llvm type: the input of a cast that produced it, or a new cast."""
    target = convert_type(value.type)
    if target is value.type:  # `convert_type` returns a type that needs no conversion itself
        return value
    owner = value.owner
    if type(owner) is UnrealizedConversionCastOp:  # (no subclass; its operands are its inputs)
        for source in owner._operands:  # the first one, from the tuple itself
            if source.type == target:
                return source
            break
    cast = _cast(value, target)
    rewriter.insert(cast, at)
    return cast.results[0]


def _cast(value: SSAValue, target: Attribute) -> UnrealizedConversionCastOp:
    """`UnrealizedConversionCastOp.get([value], [target])` built as `nsw_binop` builds:
    `lower-to-llvm` casts every index and buffer it converts, each a checked build."""
    return fast_create(UnrealizedConversionCastOp, operands=[value], result_types=[target])


def from_llvm(
    value: SSAValue, original: Attribute, rewriter: PatternRewriter, at: InsertPoint | None = None
) -> SSAValue:
    """Cast an llvm-typed value back to `original` for users that are not lowered yet."""
    if value.type == original:
        return value
    cast = _cast(value, original)
    rewriter.insert(cast, at)
    return cast.results[0]


def constant(value: int | float, ty: Attribute, rewriter: PatternRewriter, at=None) -> SSAValue:
    """Insert `llvm.mlir.constant(value) : ty`."""
    attr = FloatAttr(value, ty) if isinstance(ty, AnyFloat) else integer_attr(int(value), ty)
    op = fast_create(llvm.ConstantOp, result_types=[ty], properties={"value": attr})  # as nsw_binop
    return rewriter.insert(op, at).result


@functools.lru_cache(maxsize=4096)
def integer_attr(value: int, ty: Attribute) -> IntegerAttr:
    """`IntegerAttr(value, ty)`, shared: attributes are immutable, and building (and
    verifying) one per index constant was a tenth of lower-to-llvm's time on a CNN.

    `ty` is an integer or index type; xDSL's overloads want it statically
    narrowed, which callers passing a converted type cannot show (hence the
    pyright ignore)."""
    return IntegerAttr(value, ty)  # pyright: ignore[reportCallIssue, reportArgumentType]


NSW = IntegerAttr(llvm.OverflowAttr((llvm.OverflowFlag.NO_SIGNED_WRAP,)).to_int(), 32)
"""The `nsw` overflow flags of `llvm.add`/`llvm.mul` (index arithmetic), built once:
`overflow=OverflowAttr(...)` converts to this per op, doubling the op's build time."""


_GEP_ONE_INDEX = DenseArrayBase.from_list(i32, [llvm.GEP_USE_SSA_VAL])
_NO_WRAP = IntegerAttr(0, 32)
_PTR = llvm.LLVMPointerType()
_UNIT = UnitAttr()
_ORDERING_NONE = IntegerAttr(0, i64)


def nsw_binop(
    cls: type[llvm.AddOp] | type[llvm.MulOp], lhs: SSAValue, rhs: SSAValue
) -> llvm.AddOp | llvm.MulOp:
    """`cls(lhs, rhs, overflow=NSW)` (both of type `lhs.type`), built without xDSL's
    checked constructor: `lower-to-llvm` builds one per index term of every access,
    and the constructor's argument checks were most of the op's cost. The op is the
    constructor's, property for property; the verifier after lowering checks it."""
    return fast_create(
        cls, operands=[lhs, rhs], result_types=[lhs.type], properties={"overflowFlags": NSW}
    )


def inbounds_gep(ptr: SSAValue, index: SSAValue, element: Attribute) -> llvm.GEPOp:
    """`GEPOp.from_mixed_indices(ptr, [index], element, inbounds=True)` built as
    `nsw_binop` builds: one per load and store, and the constructor built the constant
    index array anew each time (67 us an op, 12 us this way)."""
    return fast_create(
        llvm.GEPOp,
        operands=[ptr, index],
        result_types=[_PTR],
        properties={
            "rawConstantIndices": _GEP_ONE_INDEX,
            "elem_type": element,
            "noWrapFlags": _NO_WRAP,
            "inbounds": _UNIT,
        },
    )


def aligned_load(ptr: SSAValue, ty: Attribute, alignment: int) -> llvm.LoadOp:
    """`llvm.LoadOp(ptr, ty, alignment=alignment)` built as `nsw_binop` builds (one per
    `loop.load`; the constructor built its two integer attributes anew each time)."""
    return fast_create(
        llvm.LoadOp,
        operands=[ptr],
        result_types=[ty],
        properties={"ordering": _ORDERING_NONE, "alignment": integer_attr(alignment, i64)},
    )


def aligned_store(value: SSAValue, ptr: SSAValue, alignment: int) -> llvm.StoreOp:
    """`llvm.StoreOp(value, ptr, alignment=alignment)`, as `aligned_load`."""
    return fast_create(
        llvm.StoreOp,
        operands=[value, ptr],
        properties={"ordering": _ORDERING_NONE, "alignment": integer_attr(alignment, i64)},
    )


@functools.lru_cache(maxsize=256)
def _constant_indices(index: int) -> DenseArrayBase:
    return DenseArrayBase.from_list(i32, [index])


def constant_gep(ptr: SSAValue, index: int, element: Attribute) -> llvm.GEPOp:
    """`GEPOp(ptr, [index], element)` (`&ptr[index]`, a constant index) built as
    `inbounds_gep` builds: the parallel lowering addresses every captured value's
    slot this way, and each constructor call built the index array anew."""
    return fast_create(
        llvm.GEPOp,
        operands=[ptr],
        result_types=[_PTR],
        properties={
            "rawConstantIndices": _constant_indices(index),
            "elem_type": element,
            "noWrapFlags": _NO_WRAP,
        },
    )


_RECIPES: dict[tuple, tuple[tuple[Attribute, ...], dict, dict] | None] = {}
"""`quick`'s recipes: (op class, argument types and constants) → what its constructor built."""

RECIPES_BOUND = 4096
"""At most this many recipes are kept; the next one empties the table first. A network
needs few (ResNet-50: 47, the transformer encoder: 34: the keys are op classes, types
and flags, not values), but a long-lived process compiling models of ever new types
would grow it without end. Emptied, the table refills from the constructors: the same
ops, built once more the slow way."""


def quick(cls: type[OpT], *args: object, **kwargs: object) -> OpT:
    """`cls(*args, **kwargs)`, built as `nsw_binop` builds once the constructor has
    shown what it builds for these argument types.

    `lower-to-llvm` builds tens of thousands of llvm ops (DenseNet-121: 41,000
    through constructors), and xDSL's checked constructors (`irdl_op_init`:
    argument lists, segment sizes, None filtering) cost about as much as the
    op itself. For a class whose constructor takes SSA values and constants
    (attributes, strings, flags) and makes the values its operands, in order,
    what it builds besides the operands depends on the constants and the
    values' types only: the first call per such key runs the constructor and
    keeps its result types, properties and attributes; later ones `create` the
    same op. A constructor that does anything else (successors, regions,
    operands in another order) is always called.
    """
    try:
        key = (
            cls,
            *(a.type if isinstance(a, SSAValue) else a for a in args),
            *kwargs.items(),
        )
        recipe = _RECIPES.get(key, ())
    except TypeError:  # an unhashable constant: no recipe
        return cls(*args, **kwargs)
    operands = [a for a in args if isinstance(a, SSAValue)]
    if recipe:
        result_types, properties, attributes = recipe
        return fast_create(
            cls,
            operands=operands,
            result_types=result_types,
            properties=properties,
            attributes=attributes,
        )
    op = cls(*args, **kwargs)
    if recipe is None:
        return op  # this key's constructor does more than a recipe repeats
    same = (
        len(op.operands) == len(operands)
        and all(a is b for a, b in zip(op.operands, operands, strict=True))
        and not op.successors
        and not op.regions
        and all(not isinstance(a, Operation | Block) for a in (*args, *kwargs.values()))
    )
    if len(_RECIPES) >= RECIPES_BOUND:
        _RECIPES.clear()
    _RECIPES[key] = (
        (tuple(op.result_types), dict(op.properties), dict(op.attributes)) if same else None
    )
    return op


def branch(dest: Block, values: Sequence[SSAValue]) -> llvm.BrOp:
    """`llvm.BrOp(dest, *values)` built as `quick` builds (one per loop latch and
    branch to a merge block)."""
    return fast_create(llvm.BrOp, operands=values, successors=[dest])


_NO_SEGMENTS: dict[str, Attribute] = {
    "operandSegmentSizes": DenseArrayBase.from_list(i32, [1, 0, 0])
}


def cond_branch(cond: SSAValue, then_block: Block, else_block: Block) -> llvm.CondBrOp:
    """`llvm.CondBrOp(cond, then_block, [], else_block, [])` built as `quick` builds:
    its constructor builds the operand segment sizes anew each time."""
    return fast_create(
        llvm.CondBrOp, operands=[cond], successors=[then_block, else_block], properties=_NO_SEGMENTS
    )


def replace_with(
    op: Operation, rewriter: PatternRewriter, new: Operation | SSAValue | None
) -> None:
    """Replace `op` (already having inserted `new`) by `new`'s result cast back to op's type."""
    if new is None:
        rewriter.erase(op)
        return
    value = new.results[0] if isinstance(new, Operation) else new
    if value.name_hint is None:
        value.name_hint = op.results[0].name_hint
    replacement = from_llvm(value, op.results[0].type, rewriter)
    if len(op.results) != 1:
        rewriter.replace(op, [], [replacement])  # raises xDSL's error
        return
    _replace_result(op, rewriter, replacement)


def _replace_result(op: Operation, rewriter: PatternRewriter, new: SSAValue) -> None:
    """`rewriter.replace(op, [], [new])` for an op of one result: the same listener calls
    in the same order, the same use lists and name hints, with each use moved by
    `_move_uses` instead of xDSL's operand view (a new view object, three slices
    through `SSAValues.__getitem__` and a new operand tuple per use: DenseNet-121's
    lowering moves about 140,000 uses)."""
    rewriter.has_done_action = True
    old = op.results[0]
    rewriter.handle_operation_replacement(op, (new,))
    if old is not new:  # `rewriter.replace_all_uses_with(old, new)`
        users = _move_uses(old, new)
        if users:
            for user in users:
                rewriter.handle_operation_modification(user)
    if not new.name_hint:
        new.name_hint = old.name_hint
    rewriter.erase(op)


def _move_uses(old: SSAValue, new: SSAValue) -> list[Operation]:
    """`old.replace_all_uses_with(new)`, returning the users (one per use, in use order).

    As xDSL does it use by use (`OpOperands.__setitem__`): each use, first to last,
    leaves `old`'s list, goes to the front of `new`'s, and its operation gets a new
    operand tuple; then `new` takes `old`'s name hint if it has none."""
    users: list[Operation] = []
    use = old.first_use
    while use is not None:
        following = use._next_use  # pyright: ignore[reportPrivateUsage]
        old.first_use = following
        if following is not None:
            following._prev_use = None  # pyright: ignore[reportPrivateUsage]
        first = new.first_use
        use._next_use = first  # pyright: ignore[reportPrivateUsage]
        use._prev_use = None  # pyright: ignore[reportPrivateUsage]
        if first is not None:
            first._prev_use = use  # pyright: ignore[reportPrivateUsage]
        new.first_use = use
        user = use._operation  # pyright: ignore[reportPrivateUsage]
        operands = list(user._operands)  # pyright: ignore[reportPrivateUsage]
        operands[use._index] = new  # pyright: ignore[reportPrivateUsage]
        user._operands = SSAValues(operands)  # pyright: ignore[reportPrivateUsage]
        users.append(user)
        use = following
    if new.name_hint is None:
        new.name_hint = old.name_hint
    return users


def module_of(op: Operation) -> ModuleOp:
    """The module enclosing `op` (where external functions get declared)."""
    while not isinstance(op, ModuleOp):
        parent = op.parent_op()
        assert parent is not None, "op is not inside a module"
        op = parent
    return op


def declare_function(
    op: Operation,
    rewriter: PatternRewriter,
    name: str,
    inputs: Sequence[Attribute],
    output: Attribute,
) -> None:
    """Declare the external function `name` at the top of op's module, once."""
    module = module_of(op)
    if lookup_symbol(module, name) is not None:
        return
    decl = llvm.FuncOp(
        name, llvm.LLVMFunctionType(inputs, output), linkage=llvm.LinkageAttr("external")
    )
    rewriter.insert(decl, InsertPoint.at_start(module.body.block))


def call_function(
    op: Operation,
    rewriter: PatternRewriter,
    name: str,
    args: Sequence[SSAValue],
    result: Attribute | None,
    at: InsertPoint | None = None,
) -> llvm.CallOp:
    """Insert `llvm.call @name(args)` (declaring `name` if needed)."""
    declare_function(op, rewriter, name, [a.type for a in args], result or llvm.LLVMVoidType())
    return rewriter.insert(quick(llvm.CallOp, name, *args, return_type=result), at)


def call_intrinsic(
    rewriter: PatternRewriter, name: str, args: Sequence[SSAValue], result: Attribute | None
) -> llvm.CallIntrinsicOp:
    """Insert `llvm.call_intrinsic "name"(args)`; `name` carries LLVM's type suffixes."""
    return rewriter.insert(llvm.CallIntrinsicOp(name, args, [result] if result else []))


def entry_block(op: Operation) -> Block:
    """The entry block of the function (loop.func or llvm.func) containing `op`."""
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, llvm.FuncOp | loop.FuncOp):
        parent = parent.parent_op()
    assert parent is not None, f"'{op.name}' is not inside a function"
    return parent.body.blocks[0]
