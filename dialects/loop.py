"""The `loop` dialect: loop nests over buffers, Lamina's TIR level (docs/design.md §3.4).

Values are builtin memrefs (buffers) and scalars; scalar arithmetic uses the
upstream `arith` and `math` dialects. A kernel is a `loop.func` in
destination-passing style: outputs are buffers passed in and written with
`loop.store`. Scheduling decisions are attributes of the loops themselves
(`kind`), layout decisions are `#lamina.constraint`s on buffers, and
`loop.undef` / `loop.assume` carry the facts `simplify` relies on.

Example::

    loop.func @relu(%x: memref<64xf32>, %y: memref<64xf32>) {
      %c0 = arith.constant 0 : index
      %c64 = arith.constant 64 : index
      %c1 = arith.constant 1 : index
      %zero = arith.constant 0.0 : f32
      loop.for %i = %c0 to %c64 step %c1 kind(parallel) {
        %v = loop.load %x[%i] : memref<64xf32>
        %r = arith.maximumf %v, %zero : f32
        loop.store %r, %y[%i] : memref<64xf32>
      }
      loop.return
    }
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import ClassVar, Self, TypeVar

from xdsl.builder import ImplicitBuilder
from xdsl.dialects.builtin import (
    FlatSymbolRefAttrConstr,
    IndexType,
    IntegerAttr,
    MemRefType,
    NoneAttr,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    i1,
)
from xdsl.dialects.utils import (
    AbstractYieldOperation,
    EnumAttribute,
    parse_assignment,
    print_assignment,
)
from xdsl.ir import (
    Attribute,
    Block,
    BlockArgument,
    Dialect,
    Operation,
    Region,
    SpacedOpaqueSyntaxAttribute,
    SSAValue,
    Use,
)
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    base,
    irdl_attr_definition,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import (
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    MemoryAllocEffect,
    MemoryFreeEffect,
    MemoryReadEffect,
    MemoryWriteEffect,
    Pure,
    RecursiveMemoryEffect,
    ReturnLike,
    SingleBlockImplicitTerminator,
    SymbolOpInterface,
    SymbolUserOpInterface,
    ensure_terminator,
)
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from lamina.core.clone import PLAIN_CREATE
from lamina.core.symbols import lookup_symbol
from lamina.dialects.common import (
    UndefLikeOp,
    check_one_of,
    is_scalar_type,
    parse_indexed_access,
    parse_one_of,
    print_indexed_access,
    type_list,
    verify_indices,
)
from lamina.dialects.func_like import FuncLikeCallableInterface, FuncLikeOp, ReturnLikeOp
from lamina.dialects.lamina import ConstraintAttr, DeviceAttr


class LoopKind(StrEnum):
    """How a `loop.for` is executed (set by `lower-te` and `schedule`)."""

    SERIAL = "serial"
    PARALLEL = "parallel"
    VECTORIZED = "vectorized"
    UNROLLED = "unrolled"


@irdl_attr_definition
class LoopKindAttr(EnumAttribute[LoopKind], SpacedOpaqueSyntaxAttribute):
    """`loop.for`'s `kind` property, `#loop<kind parallel>` in the generic form
    (the pretty form writes `kind(parallel)`)."""

    name = "loop.kind"


LOOP_KINDS = tuple(k.value for k in LoopKind)
"""Values of `loop.for`'s `kind`, in declaration order (for diagnostics)."""

MEMORY_SCOPES = ("global", "local")
"""Values of `loop.alloc`'s `scope`."""


def _type_mismatch(what: str, index: int, other: str, got: Attribute, want: Attribute) -> str:
    """`0-th iter_arg and 0-th loop result have different type: 'f32' != 'f64'`."""
    return f"{index}-th {what} and {index}-th {other} have different type: '{got}' != '{want}'"


def buffer_type(tensor: Attribute) -> MemRefType:
    """The row-major buffer holding a statically shaped tensor: `memref<same shape>`."""
    assert isinstance(tensor, TensorType)
    return MemRefType(tensor.element_type, tensor.get_shape())


def to_buffer_types(types: Sequence[Attribute]) -> list[Attribute]:
    """Tensors become buffers; anything else (already a buffer or a scalar) is kept."""
    return [buffer_type(t) if isinstance(t, TensorType) else t for t in types]


# ---------------------------------------------------------------------------
# Functions
# ---------------------------------------------------------------------------


@irdl_op_definition
class FuncOp(FuncLikeOp):
    """A function over buffers and scalars (destination-passing style).

    Like `func.func`: `sym_name`, `function_type`, `arg_attrs`, `res_attrs`,
    optional `sym_visibility`; a body-less op declares an external function.
    A parameter's attribute dictionary may carry `lamina.constraint`
    (`#lamina.constraint`, the buffer's layout) and `device`
    (`#lamina.device`, where the buffer lives). Kernels usually return
    nothing; scalar (and, for host code, buffer) results are allowed.

        loop.func @k(%a: memref<4x8xf32> {device = #lamina.device<"cpu", 0>}) { ... }
        loop.func private @ext(memref<4xf32>)
    """

    name = "loop.func"

    traits = traits_def(IsolatedFromAbove(), SymbolOpInterface(), FuncLikeCallableInterface())

    TYPE_DESCRIPTION: ClassVar[str] = "a memref or a scalar (integer, index, float)"

    @classmethod
    def allowed_type(cls, type: Attribute) -> bool:
        return isinstance(type, MemRefType) or is_scalar_type(type)


@irdl_op_definition
class ReturnOp(ReturnLikeOp):
    """Terminator of `loop.func`: `loop.return` or `loop.return %x : f32`."""

    name = "loop.return"

    traits = traits_def(HasParent(FuncOp), IsTerminator(), ReturnLike(), Pure())


# ---------------------------------------------------------------------------
# Structured control flow
# ---------------------------------------------------------------------------


@irdl_op_definition
class YieldOp(AbstractYieldOperation[Attribute]):
    """Terminator of `loop.for` (next iter_args) and `loop.if` (its results)."""

    name = "loop.yield"

    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(ForOp, IfOp), Pure()))


@irdl_op_definition
class ForOp(IRDLOperation):
    """A counted loop `for (iv = lb; iv < ub; iv += step)` with loop-carried values.

    `kind` says how it runs: `serial` (default), `parallel` (iterations on
    threads), `vectorized`, `unrolled`. The body's block arguments are the
    induction variable (`index`) then one per iter_arg; `loop.yield` passes
    the next iter_args, and the loop's results are the final ones.

        loop.for %i = %lb to %ub step %s kind(parallel) { ... }
        %r = loop.for %i = %lb to %ub step %s iter_args(%acc = %init) -> (f32) {
          ...
          loop.yield %next : f32
        }
    """

    name = "loop.for"

    lb = operand_def(IndexType)
    ub = operand_def(IndexType)
    step = operand_def(IndexType)
    iter_args = var_operand_def()
    res = var_result_def()
    body = region_def("single_block")

    kind = opt_prop_def(LoopKindAttr, default_value=LoopKindAttr(LoopKind.SERIAL))

    traits = traits_def(SingleBlockImplicitTerminator(YieldOp), RecursiveMemoryEffect())

    irdl_options = (ParsePropInAttrDict(),)

    def __init__(
        self,
        lb: SSAValue | Operation,
        ub: SSAValue | Operation,
        step: SSAValue | Operation,
        iter_args: Sequence[SSAValue | Operation] = (),
        kind: str | LoopKind | LoopKindAttr = LoopKind.SERIAL,
        body: Region | Block | Sequence[Operation] | None = None,
    ):
        """Build a loop; without `body`, an empty body with the right block arguments.

        The default body ends with an empty `loop.yield` when there are no
        iter_args (insert before it); with iter_args the caller adds the yield.
        """
        iter_types = [SSAValue.get(a).type for a in iter_args]
        if body is None:
            body = Region(_new_block([IndexType(), *iter_types], with_yield=not iter_types))
        elif isinstance(body, Block):
            body = Region(body)
        kind_attr = kind if isinstance(kind, LoopKindAttr) else LoopKindAttr(LoopKind(kind))
        super().__init__(
            operands=[lb, ub, step, iter_args],
            result_types=[iter_types],
            regions=[body],
            properties={"kind": None if kind_attr.data == LoopKind.SERIAL else kind_attr},
        )

    @classmethod
    def create(cls, *, properties: Mapping[str, Attribute] = {}, **fields) -> Self:  # noqa: B006 - xDSL's signature
        """As `Operation.create`, also taking the kind as a string in the generic form
        (`<{kind = "parallel"}>`, the encoding docs/design.md lists), stored as the
        `#loop<kind parallel>` the verifier and the passes read."""
        kind = properties.get("kind")
        if isinstance(kind, StringAttr) and kind.data in LOOP_KINDS:
            properties = {**properties, "kind": LoopKindAttr(LoopKind(kind.data))}
        return super().create(properties=properties, **fields)

    # -- queries ---------------------------------------------------------------

    @property
    def induction_var(self) -> BlockArgument:
        """The induction variable (the body's first block argument)."""
        return self.body.block.args[0]

    @property
    def region_iter_args(self) -> tuple[BlockArgument, ...]:
        """The body's block arguments bound to the loop-carried values."""
        return tuple(self.body.block.args[1:])

    @property
    def kind_name(self) -> LoopKind:
        """`kind` (`serial` when absent); a `StrEnum`, equal to its name as a string."""
        return self.kind.data

    def set_kind(self, kind: LoopKind | str) -> None:
        """Set `kind`; `serial`, the default, is stored as no property at all."""
        kind = LoopKind(kind)
        if kind == LoopKind.SERIAL:
            self.properties.pop("kind", None)
        else:
            self.properties["kind"] = LoopKindAttr(kind)

    @property
    def yield_op(self) -> YieldOp:
        """The body's terminator."""
        last = self.body.block.last_op
        assert isinstance(last, YieldOp)
        return last

    # -- verification ------------------------------------------------------------

    def verify_(self) -> None:
        block = self.body.block
        if not block.args or not isinstance(block.args[0].type, IndexType):
            got = block.args[0].type if block.args else "no block argument"
            raise VerifyException(
                f"expected the body's first block argument to be the index induction "
                f"variable, got {got}"
            )
        n_iter = len(self.iter_args)
        if len(self.res) != n_iter:
            raise VerifyException(
                f"expected as many loop results as iter_args: {n_iter} iter_args, "
                f"{len(self.res)} results"
            )
        if len(block.args) - 1 != n_iter:
            raise VerifyException(
                f"expected {n_iter + 1} body block arguments (induction variable and "
                f"{n_iter} iter_args), got {len(block.args)}"
            )
        for i, (init, result, arg) in enumerate(
            zip(self.iter_args, self.res, block.args[1:], strict=True)
        ):
            if init.type != result.type:
                raise VerifyException(
                    _type_mismatch("iter_arg", i, "loop result", init.type, result.type)
                )
            if arg.type != result.type:
                raise VerifyException(
                    _type_mismatch("region iter_arg", i, "loop result", arg.type, result.type)
                )
        last = block.last_op
        if isinstance(last, YieldOp):
            _verify_yield(last, self.res.types, "loop result")

    # -- syntax --------------------------------------------------------------------

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.induction_var)
        printer.print_string(" = ")
        printer.print_ssa_value(self.lb)
        printer.print_string(" to ")
        printer.print_ssa_value(self.ub)
        printer.print_string(" step ")
        printer.print_ssa_value(self.step)
        if self.kind.data != LoopKind.SERIAL:
            printer.print_string(f" kind({self.kind.data.value})")
        if self.iter_args:
            printer.print_string(" iter_args(")
            printer.print_list(
                zip(self.region_iter_args, self.iter_args, strict=False),
                lambda pair: print_assignment(printer, *pair),
            )
            printer.print_string(") -> (")
            printer.print_list(self.res.types, printer.print_attribute)
            printer.print_string(")")
        printer.print_string(" ")
        printer.print_region(
            self.body,
            print_entry_block_args=False,
            print_empty_block=False,
            print_block_terminators=bool(self.iter_args),
        )
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        indvar = parser.parse_argument(expect_type=False)
        parser.parse_punctuation("=")
        lb = parser.parse_operand(IndexType())
        parser.parse_keyword("to")
        ub = parser.parse_operand(IndexType())
        parser.parse_keyword("step")
        step = parser.parse_operand(IndexType())
        kind = _parse_optional_kind(parser)

        pos = parser.pos
        iter_vars: list[Parser.UnresolvedArgument] = []
        iter_inits: list[UnresolvedOperand] = []
        iter_types: list[Attribute] = []
        if parser.parse_optional_keyword("iter_args"):
            for var, init in parser.parse_comma_separated_list(
                Parser.Delimiter.PAREN, lambda: parse_assignment(parser)
            ):
                iter_vars.append(var)
                iter_inits.append(init)
            parser.parse_punctuation("->")
            iter_types = parser.parse_comma_separated_list(
                Parser.Delimiter.PAREN, parser.parse_type
            )
        if len(iter_types) != len(iter_vars):
            parser.raise_error(
                f"expected {len(iter_vars)} iter_args types, got {len(iter_types)}", pos
            )
        inits = parser.resolve_operands(iter_inits, iter_types, pos)
        if kind is None:
            kind = _parse_optional_kind(parser) or "serial"
        args = [indvar.resolve(IndexType())]
        args += [v.resolve(t) for v, t in zip(iter_vars, iter_types, strict=True)]
        body = parser.parse_region(args)
        attrs = parser.parse_optional_attr_dict()
        kind_attr = attrs.pop("kind", None)  # `{kind = "parallel"}` also sets the property
        if kind_attr is not None:
            kind = _kind_from_attr(parser, kind_attr, pos)
        op = cls(lb, ub, step, inits, kind, body)
        op.attributes |= attrs
        if not iter_vars:
            ensure_terminator(op, SingleBlockImplicitTerminator(YieldOp))
        return op


def _kind_not_a_string(op: Operation) -> bool:
    """`ForOp.create` is `Operation.create` for a loop whose kind is not a string."""
    return not isinstance(op.properties.get("kind"), StringAttr)


PLAIN_CREATE[ForOp] = _kind_not_a_string  # core/clone.py: `fast_clone` builds these


def _new_block(arg_types: Sequence[Attribute], with_yield: bool) -> Block:
    """A fresh body block, optionally ending in an empty `loop.yield`.

    The yield is built under its own ImplicitBuilder so that constructing a
    loop inside a caller's `ImplicitBuilder` does not insert it there.
    """
    block = Block(arg_types=arg_types)
    if with_yield:
        with ImplicitBuilder(block):
            YieldOp()
    return block


def _add_implicit_yield(region: Region) -> None:
    """Append the elided empty `loop.yield` to a parsed region that has a block."""
    for block in region.blocks:
        last = block.last_op
        if last is None or not last.has_trait(IsTerminator, value_if_unregistered=False):
            with ImplicitBuilder(block):
                YieldOp()


def _kind_from_attr(parser: Parser, attr: Attribute, pos: int) -> LoopKind:
    """The kind an attribute-dictionary entry `kind = "parallel"` (or
    `#loop<kind parallel>`) names; anything else is a parse error."""
    if isinstance(attr, LoopKindAttr):
        return attr.data
    if isinstance(attr, StringAttr) and attr.data in LOOP_KINDS:
        return LoopKind(attr.data)
    parser.raise_error(f"kind must be one of {', '.join(LOOP_KINDS)}, got {attr}", pos)


def _parse_optional_kind(parser: Parser) -> str | None:
    """`kind(parallel)` (loop.for's pretty syntax), checked against LOOP_KINDS."""
    if not parser.parse_optional_keyword("kind"):
        return None
    return parse_one_of(parser, "loop kind", LOOP_KINDS)


def _verify_yield(yield_op: YieldOp, expected: Sequence[Attribute], what: str) -> None:
    """A `loop.yield` yields exactly the expected types (`what` names them)."""
    got = yield_op.arguments.types
    if len(got) != len(expected):
        raise VerifyException(
            f"expected loop.yield to yield {len(expected)} values matching the "
            f"{what}s {type_list(expected)}, got {len(got)}"
        )
    for i, (g, e) in enumerate(zip(got, expected, strict=True)):
        if g != e:
            raise VerifyException(_type_mismatch("yielded value", i, what, g, e))


@irdl_op_definition
class IfOp(IRDLOperation):
    """`loop.if %cond [-> (types)] { ... } [else { ... }]`, as `scf.if`.

    With results, both regions end with a `loop.yield` of the result types and
    the else region is required.
    """

    name = "loop.if"

    cond = operand_def(i1)
    output = var_result_def()
    then_region = region_def("single_block")
    else_region = region_def()

    traits = traits_def(SingleBlockImplicitTerminator(YieldOp), RecursiveMemoryEffect())

    def __init__(
        self,
        cond: SSAValue | Operation,
        result_types: Sequence[Attribute] = (),
        then_region: Region | Sequence[Operation] | Sequence[Block] | None = None,
        else_region: Region | Sequence[Operation] | Sequence[Block] | None = None,
    ):
        """Without `then_region`, an empty then block (ending in `loop.yield` when
        there are no results); `else_region=None` means no else branch."""
        if then_region is None:
            then_region = Region(_new_block([], with_yield=not result_types))
        super().__init__(
            operands=[cond],
            result_types=[result_types],
            regions=[then_region, else_region if else_region is not None else Region()],
        )

    def verify_(self) -> None:
        if len(self.else_region.blocks) > 1:
            raise VerifyException("expected the else region to have at most one block")
        if self.output and not self.else_region.blocks:
            raise VerifyException(
                f"an if with results {type_list(self.output.types)} needs an else region"
            )
        for region in (self.then_region, self.else_region):
            for block in region.blocks:
                if isinstance(block.last_op, YieldOp):
                    _verify_yield(block.last_op, self.output.types, "if result")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.cond)
        if self.output:
            printer.print_string(" -> (")
            printer.print_list(self.output.types, printer.print_attribute)
            printer.print_string(")")
        printer.print_string(" ")
        show_yields = bool(self.output)
        printer.print_region(
            self.then_region, print_entry_block_args=False, print_block_terminators=show_yields
        )
        if self.else_region.blocks:
            printer.print_string(" else ")
            printer.print_region(
                self.else_region, print_entry_block_args=False, print_block_terminators=show_yields
            )
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        cond = parser.parse_operand(i1)
        result_types: list[Attribute] = []
        if parser.parse_optional_punctuation("->"):
            result_types = parser.parse_comma_separated_list(
                Parser.Delimiter.PAREN, parser.parse_type
            )
        then_region = parser.parse_region()
        else_region = parser.parse_region() if parser.parse_optional_keyword("else") else None
        attrs = parser.parse_optional_attr_dict()
        op = cls(cond, result_types, then_region, else_region)
        op.attributes |= attrs
        if not result_types:
            for region in op.regions:
                _add_implicit_yield(region)
        return op


# ---------------------------------------------------------------------------
# Element access
# ---------------------------------------------------------------------------


def _verify_access(buffer: SSAValue, indices: Sequence[SSAValue], value_type: Attribute) -> None:
    """Shared by load and store: one index per dimension, value type = element type."""
    mtype = buffer.type
    if not isinstance(mtype, MemRefType):
        raise VerifyException(f"expected a memref buffer, got {mtype}")
    verify_indices(indices, mtype)
    if value_type != mtype.element_type:
        raise VerifyException(
            f"value type must be the buffer's element type: expected {mtype.element_type}, "
            f"got {value_type}"
        )


_LoadLike = TypeVar("_LoadLike", bound=IRDLOperation)


def _parse_load_like(cls: type[_LoadLike], parser: Parser) -> _LoadLike:
    """`%buf[%i, %j] {attrs} : type` into `cls(buffer, indices)` (load, prefetch)."""
    buffer, indices, attrs, _ = _parse_access(parser)
    op = cls(buffer, indices)  # pyright: ignore[reportCallIssue]
    op.attributes |= attrs
    return op


def _parse_access(
    parser: Parser,
) -> tuple[SSAValue, list[SSAValue], dict[str, Attribute], MemRefType]:
    """`%buf[%i, %j] {attrs} : memref<...>` (the tail of load and store)."""
    return parse_indexed_access(parser, MemRefType, "a memref type")


@irdl_op_definition
class LoadOp(IRDLOperation):
    """`%v = loop.load %buf[%i, %j] : memref<4x8xf32>`: read one element."""

    name = "loop.load"

    buffer = operand_def(base(MemRefType))
    indices = var_operand_def()
    result = result_def()

    traits = traits_def(MemoryReadEffect())
    VERIFIES_LOCALLY: ClassVar[bool] = True  # verify_ reads only types and properties

    def __init__(self, buffer: SSAValue | Operation, indices: Sequence[SSAValue | Operation]):
        mtype = SSAValue.get(buffer).type
        assert isinstance(mtype, MemRefType), f"loop.load needs a memref, got {mtype}"
        super().__init__(operands=[buffer, indices], result_types=[mtype.element_type])

    def verify_(self) -> None:
        _verify_access(self.buffer, self.indices, self.result.type)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        print_indexed_access(printer, self, self.buffer, self.indices)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        return _parse_load_like(cls, parser)


@irdl_op_definition
class PrefetchOp(IRDLOperation):
    """`loop.prefetch %buf[%i, %j] {locality = 2} : memref<4x8xf32>`: a hint that
    the element's cache line is read soon (`llvm.prefetch`: locality 3 keeps it
    in L1, 2 in L2). Reads nothing the program sees, so it orders with no
    access; kept by every pass (it has no result, and no effect trait)."""

    name = "loop.prefetch"

    buffer = operand_def(base(MemRefType))
    indices = var_operand_def()

    def __init__(
        self,
        buffer: SSAValue | Operation,
        indices: Sequence[SSAValue | Operation],
        locality: int = 3,
    ):
        super().__init__(
            operands=[buffer, indices],
            attributes={"locality": IntegerAttr(locality, 32)},
        )

    @property
    def locality(self) -> int:
        attr = self.attributes.get("locality")
        return attr.value.data if isinstance(attr, IntegerAttr) else 3

    def verify_(self) -> None:
        mtype = SSAValue.get(self.buffer).type
        assert isinstance(mtype, MemRefType)
        _verify_access(self.buffer, self.indices, mtype.element_type)
        if not 0 <= self.locality <= 3:
            raise VerifyException(f"locality must be 0-3, got {self.locality}")

    # The text of a load without its result: `%buf[%i, %j] {attrs} : type`.
    print = LoadOp.print

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        return _parse_load_like(cls, parser)


@irdl_op_definition
class StoreOp(IRDLOperation):
    """`loop.store %v, %buf[%i, %j] : memref<4x8xf32>`: write one element."""

    name = "loop.store"

    value = operand_def()
    buffer = operand_def(base(MemRefType))
    indices = var_operand_def()

    traits = traits_def(MemoryWriteEffect())
    VERIFIES_LOCALLY: ClassVar[bool] = True  # verify_ reads only types and properties

    def __init__(
        self,
        value: SSAValue | Operation,
        buffer: SSAValue | Operation,
        indices: Sequence[SSAValue | Operation],
    ):
        super().__init__(operands=[value, buffer, indices])

    def verify_(self) -> None:
        _verify_access(self.buffer, self.indices, self.value.type)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.value)
        printer.print_string(", ")
        print_indexed_access(printer, self, self.buffer, self.indices)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        value = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        buffer, indices, attrs, mtype = _parse_access(parser)
        op = cls(parser.resolve_operand(value, mtype.element_type), buffer, indices)
        op.attributes |= attrs
        return op


# ---------------------------------------------------------------------------
# Buffers
# ---------------------------------------------------------------------------


def verify_constraint_rank(constraint: ConstraintAttr, mtype: MemRefType, what: str) -> None:
    """A constraint's map yields one physical index per dimension of the buffer."""
    n_results = len(constraint.index_map.data.results)
    if n_results != mtype.get_num_dims():
        raise VerifyException(
            f"{what} maps to {n_results} physical dimensions but the buffer {mtype} "
            f"has rank {mtype.get_num_dims()}"
        )


@irdl_op_definition
class AllocOp(IRDLOperation):
    """`%b = loop.alloc {device = ..., constraint = ..., scope = "local"} : memref<...>`.

    Allocates a buffer on `device` (default: the module's default device) in
    memory `scope` (`global`, the default, or `local`: thread/stack-local
    scratch). With `constraint`, the memref is the *physical* buffer of a
    layout constraint: its rank is the map's number of results.
    """

    name = "loop.alloc"

    result = result_def(base(MemRefType))
    device = opt_prop_def(DeviceAttr)
    constraint = opt_prop_def(ConstraintAttr)
    scope = opt_prop_def(StringAttr, default_value=StringAttr("global"))

    traits = traits_def(MemoryAllocEffect())
    VERIFIES_LOCALLY: ClassVar[bool] = True  # verify_ reads only types and properties

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "attr-dict `:` type($result)"

    def __init__(
        self,
        type: MemRefType,
        device: DeviceAttr | None = None,
        constraint: ConstraintAttr | None = None,
        scope: str = "global",
    ):
        super().__init__(
            result_types=[type],
            properties={
                "device": device,
                "constraint": constraint,
                "scope": None if scope == "global" else StringAttr(scope),
            },
        )

    def verify_(self) -> None:
        check_one_of("scope", self.scope.data, MEMORY_SCOPES)
        mtype = self.result.type
        assert isinstance(mtype, MemRefType)
        if not mtype.has_static_shape():
            raise VerifyException(f"expected a statically shaped buffer, got {mtype}")
        if self.constraint is not None:
            verify_constraint_rank(self.constraint, mtype, "constraint")


@irdl_op_definition
class FreeOp(IRDLOperation):
    """`loop.free %b : memref<...>`: release a buffer from `loop.alloc`."""

    name = "loop.free"

    buffer = operand_def(base(MemRefType))

    traits = traits_def(MemoryFreeEffect())

    assembly_format = "$buffer attr-dict `:` type($buffer)"

    def __init__(self, buffer: SSAValue | Operation):
        super().__init__(operands=[buffer])


@irdl_op_definition
class CopyOp(IRDLOperation):
    """`loop.copy %a, %b {src = #lamina.device<...>, dst = ...} : memref<..> to memref<..>`.

    Copies every element of `source` into `target`, possibly from device
    `src` to device `dst`. Shapes and element types must match.
    """

    name = "loop.copy"

    source = operand_def(base(MemRefType))
    target = operand_def(base(MemRefType))
    src = opt_prop_def(DeviceAttr)
    dst = opt_prop_def(DeviceAttr)

    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$source `,` $target attr-dict `:` type($source) `to` type($target)"

    def __init__(
        self,
        source: SSAValue | Operation,
        target: SSAValue | Operation,
        src: DeviceAttr | None = None,
        dst: DeviceAttr | None = None,
    ):
        super().__init__(operands=[source, target], properties={"src": src, "dst": dst})

    def verify_(self) -> None:
        s, t = self.source.type, self.target.type
        assert isinstance(s, MemRefType) and isinstance(t, MemRefType)
        if s.get_shape() != t.get_shape():
            raise VerifyException(
                f"source and target shapes must match: {list(s.get_shape())} != "
                f"{list(t.get_shape())}"
            )
        if s.element_type != t.element_type:
            raise VerifyException(
                f"source and target element types must match: {s.element_type} != {t.element_type}"
            )


@irdl_op_definition
class ReshapeOp(IRDLOperation):
    """`%v = loop.reshape %b : memref<1x8x7x7x8xf32> to memref<1x8x1x49x8xf32>`.

    The same memory seen with another static shape of the same element
    count: no copy, `lower-to-llvm` gives the result the source's pointer.
    Both types are contiguous and row-major (no strided layout), so element
    `i` in row-major order is the same element in both. `schedule` uses it
    to compute a 1x1 convolution over an image's pixels as one row
    (`schedule/row_flattening.py`).
    """

    name = "loop.reshape"

    source = operand_def(base(MemRefType))
    result = result_def(base(MemRefType))

    traits = traits_def(Pure())
    VERIFIES_LOCALLY: ClassVar[bool] = True  # verify_ reads only types

    assembly_format = "$source attr-dict `:` type($source) `to` type($result)"

    def __init__(self, source: SSAValue | Operation, result_type: MemRefType):
        super().__init__(operands=[source], result_types=[result_type])

    def verify_(self) -> None:
        s, t = self.source.type, self.result.type
        assert isinstance(s, MemRefType) and isinstance(t, MemRefType)
        for mtype in (s, t):
            if not mtype.has_static_shape():
                raise VerifyException(f"expected a statically shaped buffer, got {mtype}")
            if not isinstance(mtype.layout, NoneAttr):
                raise VerifyException(f"expected a contiguous row-major buffer, got {mtype}")
        if s.element_type != t.element_type:
            raise VerifyException(
                f"source and result element types must match: {s.element_type} != {t.element_type}"
            )
        if math.prod(s.get_shape()) != math.prod(t.get_shape()):
            raise VerifyException(
                f"source and result must have as many elements: {s} has "
                f"{math.prod(s.get_shape())}, {t} has {math.prod(t.get_shape())}"
            )


class CallOpSymbolUserInterface(SymbolUserOpInterface):
    """A `loop.call` to a `loop.func` must match its signature; unknown symbols are external."""

    def verify(self, op: Operation) -> None:
        assert isinstance(op, CallOp)
        try:
            callee = lookup_symbol(op, op.callee)
        except ValueError:  # detached op: nothing to resolve against
            return
        if callee is None:
            return
        if not isinstance(callee, FuncOp):
            raise VerifyException(
                f"'{op.callee}' does not reference a loop.func, got {callee.name}"
            )
        ftype = callee.function_type
        args, results = op.arguments.types, op.res.types
        if args != ftype.inputs.data:
            raise VerifyException(
                f"argument types do not match the callee {op.callee}: expected "
                f"{type_list(ftype.inputs.data)}, got {type_list(args)}"
            )
        if results != ftype.outputs.data:
            raise VerifyException(
                f"result types do not match the callee {op.callee}: expected "
                f"{type_list(ftype.outputs.data)}, got {type_list(results)}"
            )


@irdl_op_definition
class CallOp(IRDLOperation):
    """`loop.call @f(%a, %b) : (memref<..>, memref<..>) -> ()`.

    Calls a `loop.func` of the module (types must match its signature) or an
    external symbol not defined in the module (resolved at link time).
    """

    name = "loop.call"

    arguments = var_operand_def()
    callee = prop_def(FlatSymbolRefAttrConstr)
    res = var_result_def()

    traits = traits_def(CallOpSymbolUserInterface())

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$callee `(` $arguments `)` attr-dict `:` functional-type($arguments, $res)"

    def __init__(
        self,
        callee: str | SymbolRefAttr,
        arguments: Sequence[SSAValue | Operation],
        result_types: Sequence[Attribute] = (),
    ):
        if isinstance(callee, str):
            callee = SymbolRefAttr(callee)
        super().__init__(
            operands=[arguments], result_types=[result_types], properties={"callee": callee}
        )


# ---------------------------------------------------------------------------
# Facts for the simplifier
# ---------------------------------------------------------------------------


@irdl_op_definition
class UndefOp(UndefLikeOp):
    """`%u = loop.undef : f32`: any value (TVM's T.undef).

    Only legal as a value that is stored: each use must be the value operand
    of a `loop.store`, or a value operand of an `arith.select` whose result
    (recursively) is only stored -- the guarded padding store
    `loop.store (select %in_bounds, %x, %undef)` that `lower-te` produces from
    `te.undef`. `simplify` deletes undef stores and folds such selects.
    """

    name = "loop.undef"

    MISUSE_MESSAGE: ClassVar[str] = (
        "result may only be stored (the value of a loop.store, directly or "
        "through arith.select), but is used by {user}"
    )

    @classmethod
    def is_sink(cls, use: Use) -> bool:
        return isinstance(use.operation, StoreOp) and use.index == 0


@irdl_op_definition
class AssumeOp(IRDLOperation):
    """`loop.assume %cond`: the simplifier may take `%cond` (i1) to be true here (T.assume)."""

    name = "loop.assume"

    cond = operand_def(i1)

    assembly_format = "$cond attr-dict"

    def __init__(self, cond: SSAValue | Operation):
        super().__init__(operands=[cond])


Loop = Dialect(
    "loop",
    [
        FuncOp,
        ReturnOp,
        ForOp,
        IfOp,
        YieldOp,
        LoadOp,
        StoreOp,
        AllocOp,
        FreeOp,
        CopyOp,
        ReshapeOp,
        CallOp,
        UndefOp,
        AssumeOp,
        PrefetchOp,
    ],
    [LoopKindAttr],
)


TEAM_ONLY_ATTR = "lamina.team_only"
"""Discardable unit attribute on a `parallel` loop (`team_for_small_nests`,
schedule/parallel.py): share its iterations only with the workers of a call's
thread team (runtime/call_team.py), whose regions cost a few microseconds;
elsewhere (one libgomp region per kernel, whose workers wake from a futex, or a
`lamina-compile` library) run them on the calling thread. The lowering
(backends/llvm/parallel.py) asks libgomp for one thread, `GOMP_parallel(fn, data,
1, 0)` (no worker is woken); the call team's `GOMP_parallel` ignores the count and
posts the region. Defined here, in the IR both read, so the scheduler does not
import the backend."""

ROWS_FIRST_ATTR = "lamina.rows_first"
"""Discardable unit attribute on a `parallel` loop holding one `parallel` loop
(`share_rows`, schedule/parallel.py): when `lower-to-llvm` collapses the two
(backends/llvm/parallel.py, `collapse_nested`), the inner loop's index is the
major one of the flat index (rows x blocks) instead of the outer one's (blocks
x rows), so a thread's chunks hold whole rows of every block. The same
iterations; only which thread runs which changes."""
