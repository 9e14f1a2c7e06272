"""The `te` dialect: tensor expressions, Lamina's TE level (docs/design.md §3.3).

A `te.func` is a function over tensors (value semantics) whose body is a DAG
of `te.compute` ops. Each `te.compute` defines its result tensor element-wise:
its region maps the spatial indices (one per result dimension) and, for a
reduction, the reduction indices to one scalar, which the `combiner` folds
over the reduction domain starting from `init`. The region reads tensors of
the enclosing function with `te.read`; scalar arithmetic is `arith`/`math`.

Example (a 64x784 by 784x512 matmul)::

    te.func @matmul(%a: tensor<64x784xf32>, %b: tensor<784x512xf32>) -> tensor<64x512xf32> {
      %c = te.compute [64, 512] reduce [784] combiner(sum) (%i, %j, %k) {
        %x = te.read %a[%i, %k] : tensor<64x784xf32>
        %y = te.read %b[%k, %j] : tensor<784x512xf32>
        %p = arith.mulf %x, %y : f32
        te.yield %p : f32
      } : tensor<64x512xf32>
      te.return %c : tensor<64x512xf32>
    }

`lower-te` turns each `te.compute` into a loop nest over a buffer. It orders
the loops so the innermost one walks contiguous memory: a reduction becomes
either an innermost accumulator loop (e.g. a row sum) or, when a spatial
index is the better innermost loop (e.g. matmul's column), an accumulation in
the destination row initialised to `init`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Self

from xdsl.dialects.builtin import (
    AnyFloat,
    DenseArrayBase,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, Block, BlockArgument, Dialect, Operation, Region, SSAValue, Use
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    base,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (
    ConstantLike,
    HasAncestor,
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    Pure,
    RecursiveMemoryEffect,
    ReturnLike,
    SymbolOpInterface,
)
from xdsl.utils.exceptions import VerifyException

from lamina.dialects.common import (
    UndefLikeOp,
    check_index_types,
    check_one_of,
    is_scalar_type,
    parse_indexed_access,
    parse_one_of,
    parse_type_of,
    print_indexed_access,
    verify_indices,
    verify_terminator,
)
from lamina.dialects.func_like import FuncLikeCallableInterface, FuncLikeOp, ReturnLikeOp
from lamina.dialects.lamina import ConstraintAttr

COMBINERS = ("sum", "max", "min", "prod")
"""Values of `te.compute`'s `combiner`: how a reduction folds its values."""


def combiner_identity(combiner: str, type: Attribute) -> FloatAttr | IntegerAttr:
    """The identity of `combiner` on scalar `type`: the default `init` of a reduction.

    sum → 0, prod → 1, max → -inf (smallest integer), min → +inf (largest integer);
    on i1, max and min are logical or/and, so their identities are 0 and 1.
    """
    if isinstance(type, AnyFloat):
        value = {"sum": 0.0, "prod": 1.0, "max": float("-inf"), "min": float("inf")}[combiner]
        return FloatAttr(value, type)
    assert isinstance(type, IntegerType | IndexType), f"no identity on {type}"
    width = type.width.data if isinstance(type, IntegerType) else 64
    if width == 1:
        value = {"sum": 0, "prod": 1, "max": 0, "min": 1}[combiner]
        return IntegerAttr(value, type)
    lowest, highest = -(1 << (width - 1)), (1 << (width - 1)) - 1
    value = {"sum": 0, "prod": 1, "max": lowest, "min": highest}[combiner]
    return IntegerAttr(value, type)


def _array(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, list(values))


def _ints(attr: DenseArrayBase | None) -> tuple[int, ...]:
    return tuple(attr.iter_values()) if attr is not None else ()  # type: ignore[arg-type]


# ---------------------------------------------------------------------------
# Functions
# ---------------------------------------------------------------------------


@irdl_op_definition
class FuncOp(FuncLikeOp):
    """A function over tensors whose body is a DAG of `te.compute`.

    Like `func.func` (`sym_name`, `function_type`, `arg_attrs`, `res_attrs`,
    optional `sym_visibility`). At the top level of the body only
    `te.compute`, constants (`arith.constant`) and `te.return` may appear;
    element reads (`te.read`) and scalar arithmetic live inside the
    `te.compute` regions.
    """

    name = "te.func"

    traits = traits_def(IsolatedFromAbove(), SymbolOpInterface(), FuncLikeCallableInterface())

    TYPE_DESCRIPTION: ClassVar[str] = "a statically shaped tensor"

    @classmethod
    def allowed_type(cls, type: Attribute) -> bool:
        return isinstance(type, TensorType) and type.has_static_shape()

    def verify_(self) -> None:
        super().verify_()
        if self.is_declaration:
            return
        for op in self.body.block.ops:
            if isinstance(op, ComputeOp | ReturnOp) or op.has_trait(ConstantLike):
                continue
            raise VerifyException(
                "body may only contain te.compute, constants and te.return at the top "
                f"level, got {op.name}"
            )


@irdl_op_definition
class ReturnOp(ReturnLikeOp):
    """Terminator of `te.func`: `te.return %c : tensor<64x512xf32>`."""

    name = "te.return"

    traits = traits_def(HasParent(FuncOp), IsTerminator(), ReturnLike(), Pure())


# ---------------------------------------------------------------------------
# Compute
# ---------------------------------------------------------------------------


@irdl_op_definition
class YieldOp(IRDLOperation):
    """`te.yield %v : f32`: the element (or reduction term) a `te.compute` region defines."""

    name = "te.yield"

    value = operand_def()

    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(ComputeOp), Pure()))

    assembly_format = "$value attr-dict `:` type($value)"

    def __init__(self, value: SSAValue | Operation):
        super().__init__(operands=[value])


MATERIALIZE_ATTR = "lamina.materialize"
"""Discardable unit attribute of a `te.compute`: keep it as its own loop nest
(a buffer), never inlined into its reader by `fuse-ops`. For a producer
whose reader would otherwise recompute it per read or read it under a
condition (the zero-padded input of Winograd's input transform)."""


@irdl_op_definition
class ComputeOp(IRDLOperation):
    """A tensor defined element-wise: `result[i...] = combine_k region(i..., k...)`.

    Properties: `shape` (`array<i64>`, equal to the result shape),
    `reduce_extents` (`array<i64>`, absent for no reduction), `combiner`
    (`sum`, `max`, `min`, `prod`; required with `reduce_extents`), `init`
    (the reduction's start value; default the combiner's identity) and
    `constraint` (`#lamina.constraint`, the layout the result must be stored
    in). The region's block arguments are the spatial indices, then the
    reduction indices (all `index`); it ends with `te.yield` of one scalar of
    the result element type.

        %r = te.compute [64, 512] (%i, %j) { ... te.yield %v : f32 } : tensor<64x512xf32>
        %s = te.compute [64] reduce [512] combiner(max) init(0.0 : f32) (%i, %k) {
          ...
        } {constraint = #lamina.constraint<...>} : tensor<64xf32>
    """

    name = "te.compute"

    result = result_def(base(TensorType))
    body = region_def("single_block")

    shape = prop_def(DenseArrayBase.constr(i64))
    reduce_extents = opt_prop_def(DenseArrayBase.constr(i64))
    combiner = opt_prop_def(StringAttr)
    init = opt_prop_def(base(FloatAttr) | base(IntegerAttr))
    constraint = opt_prop_def(ConstraintAttr)

    traits = traits_def(RecursiveMemoryEffect(), HasParent(FuncOp))

    irdl_options = (ParsePropInAttrDict(),)

    def __init__(
        self,
        result_type: TensorType,
        reduce_extents: Sequence[int] = (),
        combiner: str | None = None,
        init: FloatAttr | IntegerAttr | None = None,
        constraint: ConstraintAttr | None = None,
        body: Region | Block | None = None,
    ):
        """Build a compute; without `body`, an empty block with the index arguments.

        The caller fills the block and ends it with `te.yield`. A reduction
        (non-empty `reduce_extents`) defaults its combiner to `sum`.
        """
        shape = result_type.get_shape()
        if body is None:
            body = Block(arg_types=[IndexType()] * (len(shape) + len(reduce_extents)))
        if isinstance(body, Block):
            body = Region(body)
        if reduce_extents and combiner is None:
            combiner = "sum"
        super().__init__(
            result_types=[result_type],
            regions=[body],
            properties={
                "shape": _array(shape),
                "reduce_extents": _array(reduce_extents) if reduce_extents else None,
                "combiner": StringAttr(combiner) if combiner is not None else None,
                "init": init,
                "constraint": constraint,
            },
        )

    # -- queries ---------------------------------------------------------------

    @property
    def shape_values(self) -> tuple[int, ...]:
        return _ints(self.shape)

    @property
    def reduce_values(self) -> tuple[int, ...]:
        """The reduction extents; empty when the compute is not a reduction."""
        return _ints(self.reduce_extents)

    @property
    def is_reduction(self) -> bool:
        return bool(self.reduce_values)

    @property
    def spatial_indices(self) -> tuple[BlockArgument, ...]:
        return tuple(self.body.block.args[: len(self.shape_values)])

    @property
    def reduce_indices(self) -> tuple[BlockArgument, ...]:
        return tuple(self.body.block.args[len(self.shape_values) :])

    @property
    def element_type(self) -> Attribute:
        rtype = self.result.type
        assert isinstance(rtype, TensorType)
        return rtype.element_type

    @property
    def yield_op(self) -> YieldOp:
        last = self.body.block.last_op
        assert isinstance(last, YieldOp)
        return last

    @property
    def yielded(self) -> SSAValue:
        """The scalar the region yields."""
        return self.yield_op.value

    def init_value(self) -> FloatAttr | IntegerAttr | None:
        """The reduction's start value: `init`, else the combiner's identity (None if no reduction)."""
        if not self.is_reduction or self.combiner is None:
            return None
        return self.init or combiner_identity(self.combiner.data, self.element_type)

    # -- verification ------------------------------------------------------------

    def verify_(self) -> None:
        rtype = self.result.type
        assert isinstance(rtype, TensorType)
        result_shape = tuple(rtype.get_shape())
        if self.shape_values != result_shape:
            raise VerifyException(
                f"shape {list(self.shape_values)} must equal the result shape {list(result_shape)}"
            )
        if not is_scalar_type(rtype.element_type):
            raise VerifyException(f"result element type must be a scalar, got {rtype.element_type}")
        self._verify_reduction()
        self._verify_block(len(result_shape))
        last = self.body.block.last_op
        if isinstance(last, YieldOp) and last.value.type != rtype.element_type:
            raise VerifyException(
                f"yielded type must be the result element type: expected "
                f"{rtype.element_type}, got {last.value.type}"
            )

    def _verify_reduction(self) -> None:
        """Extents are positive; combiner iff reduce_extents; init has the element type."""
        if any(e <= 0 for e in self.reduce_values):
            raise VerifyException(
                f"reduce_extents must be positive, got {list(self.reduce_values)}"
            )
        if self.reduce_extents is not None and not self.reduce_values:
            raise VerifyException("reduce_extents must not be empty (omit it instead)")
        if self.is_reduction and self.combiner is None:
            raise VerifyException(
                f"a reduction (reduce_extents) needs a combiner (one of {', '.join(COMBINERS)})"
            )
        if not self.is_reduction:
            for name in ("combiner", "init"):
                if self.properties.get(name) is not None:
                    raise VerifyException(f"'{name}' is only allowed with reduce_extents")
            return
        assert self.combiner is not None
        check_one_of("combiner", self.combiner.data, COMBINERS)
        if self.init is not None and self.init.type != self.element_type:
            raise VerifyException(
                f"init type must be the result element type: expected {self.element_type}, "
                f"got {self.init.type}"
            )

    def _verify_block(self, rank: int) -> None:
        """One `index` block argument per result dimension, then per reduction extent."""
        args = self.body.block.args
        expected = rank + len(self.reduce_values)
        if len(args) != expected:
            raise VerifyException(
                f"expected {expected} index block arguments ({rank} spatial, "
                f"{len(self.reduce_values)} reduction), got {len(args)}"
            )
        check_index_types(args, "block argument")
        verify_terminator(self.body.block, YieldOp, "region", quote=False)

    # -- syntax --------------------------------------------------------------------

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        _print_int_list(printer, self.shape_values)
        if self.reduce_extents is not None:
            printer.print_string(" reduce ")
            _print_int_list(printer, self.reduce_values)
        if self.combiner is not None:
            printer.print_string(f" combiner({self.combiner.data})")
        if self.init is not None:
            printer.print_string(" init(")
            printer.print_attribute(self.init)
            printer.print_string(")")
        printer.print_string(" (")
        printer.print_list(self.body.block.args, printer.print_ssa_value)
        printer.print_string(") ")
        printer.print_region(self.body, print_entry_block_args=False)
        attrs = dict(self.attributes)
        if self.constraint is not None:
            attrs = {"constraint": self.constraint, **attrs}
        printer.print_op_attributes(attrs)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        shape = _parse_int_list(parser)
        reduce = _parse_int_list(parser) if parser.parse_optional_keyword("reduce") else None
        combiner = None
        if parser.parse_optional_keyword("combiner"):
            combiner = parse_one_of(parser, "combiner", COMBINERS)
        init = None
        if parser.parse_optional_keyword("init"):
            with parser.in_parens():
                pos = parser.pos
                init = parser.parse_attribute()
                if not isinstance(init, FloatAttr | IntegerAttr):
                    parser.raise_error(f"expected a typed scalar init value, got {init}", pos)
        args = parser.parse_comma_separated_list(
            Parser.Delimiter.PAREN, lambda: parser.parse_argument(expect_type=False)
        )
        body = parser.parse_region([a.resolve(IndexType()) for a in args])
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        rtype = parse_type_of(parser, TensorType, "a tensor result type")
        props: dict[str, Attribute | None] = {
            "shape": _array(shape),
            "reduce_extents": _array(reduce) if reduce is not None else None,
            "combiner": StringAttr(combiner) if combiner is not None else None,
            "init": init,
        }
        # Properties may also be spelled in the attribute dictionary (as in the
        # generic form); `constraint` is printed there.
        for name in ("shape", "reduce_extents", "combiner", "init", "constraint"):
            if name in attrs:
                props[name] = attrs.pop(name)
        op = cls.create(
            result_types=[rtype],
            regions=[body],
            properties={k: v for k, v in props.items() if v is not None},
            attributes=attrs,
        )
        return op


def _print_int_list(printer: Printer, values: Sequence[int]) -> None:
    printer.print_string("[" + ", ".join(str(v) for v in values) + "]")


def _parse_int_list(parser: Parser) -> list[int]:
    return parser.parse_comma_separated_list(Parser.Delimiter.SQUARE, parser.parse_integer)


@irdl_op_definition
class ReadOp(IRDLOperation):
    """`%v = te.read %a[%i, %k] : tensor<64x784xf32>`: one element of a tensor.

    Only inside a `te.compute` region; the tensor comes from the enclosing
    `te.func` (an argument or another `te.compute`'s result).
    """

    name = "te.read"

    tensor = operand_def(base(TensorType))
    indices = var_operand_def()
    result = result_def()

    traits = lazy_traits_def(lambda: (Pure(), HasAncestor(ComputeOp)))

    def __init__(self, tensor: SSAValue | Operation, indices: Sequence[SSAValue | Operation]):
        ttype = SSAValue.get(tensor).type
        assert isinstance(ttype, TensorType), f"te.read needs a tensor, got {ttype}"
        super().__init__(operands=[tensor, indices], result_types=[ttype.element_type])

    def verify_(self) -> None:
        ttype = self.tensor.type
        assert isinstance(ttype, TensorType)
        verify_indices(self.indices, ttype)
        if self.result.type != ttype.element_type:
            raise VerifyException(
                f"result type must be the tensor's element type: expected "
                f"{ttype.element_type}, got {self.result.type}"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        print_indexed_access(printer, self, self.tensor, self.indices)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        tensor, indices, attrs, _ = parse_indexed_access(parser, TensorType, "a tensor type")
        op = cls(tensor, indices)
        op.attributes |= attrs
        return op


@irdl_op_definition
class UndefOp(UndefLikeOp):
    """`%u = te.undef : f32`: any value (TVM's T.undef).

    Only legal as a value that is yielded: each use must be a `te.yield`, or
    a value operand of an `arith.select` whose result (recursively) is only
    yielded. Used for padding elements of a layout whose PAD is
    `#lamina.undef`.
    """

    name = "te.undef"

    MISUSE_MESSAGE: ClassVar[str] = (
        "result may only be yielded (used by te.yield, directly or through arith.select)"
    )

    @classmethod
    def is_sink(cls, use: Use) -> bool:
        return isinstance(use.operation, YieldOp)


TE = Dialect(
    "te",
    [FuncOp, ReturnOp, ComputeOp, ReadOp, YieldOp, UndefOp],
    [],
)
