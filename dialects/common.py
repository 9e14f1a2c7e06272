"""Op pieces shared by Lamina's dialects that are not about functions (see `func_like`).

Type lists in messages (`type_list`), the scalar types of te and loop, the
terminator check of region ops, `one of ...` keywords, the indexed element
access `%x[%i, %j] : type` of `te.read`/`loop.load`/`loop.store`, and the
base of `te.undef`/`loop.undef`. Each keeps the exact message its ops report.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import ClassVar, TypeVar

from xdsl.dialects.builtin import AnyFloat, IndexType, IntegerType, MemRefType, TensorType
from xdsl.ir import Attribute, Block, Operation, SSAValue, Use
from xdsl.irdl import IRDLOperation, result_def, traits_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException


def type_list(types: Iterable[Attribute]) -> str:
    """`(memref<4xf32>, f32)`: a type list as it is written in the IR (and in messages)."""
    return "(" + ", ".join(str(t) for t in types) + ")"


def is_scalar_type(type: Attribute) -> bool:
    """Integers (incl. i1), index and floats: the scalars te and loop compute with
    (te's element types; what loads, stores and undef produce)."""
    return isinstance(type, IntegerType | IndexType | AnyFloat)


TerminatorT = TypeVar("TerminatorT", bound=Operation)


def verify_terminator(
    block: Block, terminator: type[TerminatorT], where: str, *, quote: bool = True
) -> TerminatorT:
    """The block's last op, which must be a `terminator`; otherwise the error
    `{where} must end with {terminator.name}, got 'op.name'` (`quote=False`:
    the name unquoted), or `got an empty block`."""
    last = block.last_op
    if isinstance(last, terminator):
        return last
    got = "an empty block" if last is None else (f"'{last.name}'" if quote else last.name)
    raise VerifyException(f"{where} must end with {terminator.name}, got {got}")


def one_of_message(what: str, value: str, allowed: Sequence[str]) -> str:
    """`kind must be one of serial, parallel, got 'x'`."""
    return f"{what} must be one of {', '.join(allowed)}, got '{value}'"


def check_one_of(what: str, value: str, allowed: Sequence[str]) -> None:
    """Verify that the keyword-valued property `what` is one of `allowed`."""
    if value not in allowed:
        raise VerifyException(one_of_message(what, value, allowed))


def parse_one_of(parser: Parser, what: str, allowed: Sequence[str]) -> str:
    """`(keyword)` where the keyword must be one of `allowed` (reported at its position)."""
    with parser.in_parens():
        pos = parser.pos
        value = parser.parse_identifier(what)
        if value not in allowed:
            parser.raise_error(one_of_message(what, value, allowed), pos)
    return value


# ---------------------------------------------------------------------------
# Indexed element access: `%x[%i, %j] {attrs} : type`
# ---------------------------------------------------------------------------

ShapedT = TypeVar("ShapedT", TensorType, MemRefType)


def check_index_types(values: Iterable[SSAValue], noun: str) -> None:
    """Every value is an `index` (`{noun} #i must be of type index, got T`)."""
    for i, value in enumerate(values):
        if not isinstance(value.type, IndexType):
            raise VerifyException(f"{noun} #{i} must be of type index, got {value.type}")


def verify_indices(indices: Sequence[SSAValue], container: TensorType | MemRefType) -> None:
    """One `index` value per dimension of `container`."""
    rank = len(container.get_shape())
    if len(indices) != rank:
        raise VerifyException(
            f"expected {rank} indices (one per dimension of {container}), got {len(indices)}"
        )
    check_index_types(indices, "index")


def parse_type_of(parser: Parser, kind: type[ShapedT], what: str) -> ShapedT:
    """A type that must be a `kind` (`expected {what}, got T` at its position)."""
    pos = parser.pos
    typ = parser.parse_type()
    if not isinstance(typ, kind):
        parser.raise_error(f"expected {what}, got {typ}", pos)
    return typ


def parse_indexed_access(
    parser: Parser, kind: type[ShapedT], what: str
) -> tuple[SSAValue, list[SSAValue], dict[str, Attribute], ShapedT]:
    """`%x[%i, %j] {attrs} : type`: the container and indices resolved against
    the type (a `kind`, `what` in the error), the attributes and the type."""
    container = parser.parse_unresolved_operand()
    indices = parser.parse_comma_separated_list(
        Parser.Delimiter.SQUARE, parser.parse_unresolved_operand
    )
    attrs = parser.parse_optional_attr_dict()
    parser.parse_punctuation(":")
    typ = parse_type_of(parser, kind, what)
    resolved = parser.resolve_operand(container, typ)
    return resolved, [parser.resolve_operand(i, IndexType()) for i in indices], attrs, typ


def print_indexed_access(
    printer: Printer, op: Operation, container: SSAValue, indices: Sequence[SSAValue]
) -> None:
    """The inverse of `parse_indexed_access`."""
    printer.print_ssa_value(container)
    printer.print_string("[")
    printer.print_list(indices, printer.print_ssa_value)
    printer.print_string("]")
    printer.print_op_attributes(op.attributes)
    printer.print_string(" : ")
    printer.print_attribute(container.type)


# ---------------------------------------------------------------------------
# Undefined scalars
# ---------------------------------------------------------------------------


class UndefLikeOp(IRDLOperation):
    """`te.undef`/`loop.undef`: any scalar value, only legal where its value can
    never be observed. Subclasses say which uses sink it (`is_sink`) and how a
    misuse is reported (`MISUSE_MESSAGE`, formatted with `user`, the op name)."""

    result = result_def()

    traits = traits_def(Pure())

    assembly_format = "attr-dict `:` type($result)"

    MISUSE_MESSAGE: ClassVar[str]

    def __init__(self, type: Attribute):
        super().__init__(result_types=[type])

    @classmethod
    def is_sink(cls, use: Use) -> bool:
        """Whether `use` consumes the undefined value without observing it."""
        raise NotImplementedError

    @classmethod
    def first_misuse(cls, value: SSAValue) -> Operation | None:
        """The first user of `value` that is neither a sink nor an `arith.select`
        (as a value operand) whose result is itself only sunk -- the guard
        `select(in_bounds, x, undef)`; None when every use is fine."""
        for use in value.uses:
            user = use.operation
            if cls.is_sink(use):
                continue
            if user.name == "arith.select" and use.index in (1, 2):
                if cls.first_misuse(user.results[0]) is None:
                    continue
            return user
        return None

    def verify_(self) -> None:
        if not is_scalar_type(self.result.type):
            raise VerifyException(
                f"result must be a scalar (integer, index, float), got {self.result.type}"
            )
        if (user := self.first_misuse(self.result)) is not None:
            raise VerifyException(self.MISUSE_MESSAGE.format(user=user.name))
