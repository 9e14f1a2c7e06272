"""The graph dialect's type: `!graph.fn<(ARGS) -> RESULTS>`, the type of a
function value, and the `-> T` / `-> (T1, T2)` result-list syntax that it
shares with `graph.lambda` and `graph.dataflow`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from xdsl.dialects.builtin import ArrayAttr
from xdsl.ir import Attribute, ParametrizedAttribute, TypeAttribute
from xdsl.irdl import irdl_attr_definition, param_def
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer


@irdl_attr_definition
class FnType(ParametrizedAttribute, TypeAttribute):
    """`!graph.fn<(ARGS) -> RESULTS>`: the type of a function value."""

    name = "graph.fn"

    inputs: ArrayAttr[Attribute] = param_def(ArrayAttr[Attribute])
    outputs: ArrayAttr[Attribute] = param_def(ArrayAttr[Attribute])

    def __init__(self, inputs: Iterable[Attribute], outputs: Iterable[Attribute]):
        super().__init__(ArrayAttr(tuple(inputs)), ArrayAttr(tuple(outputs)))

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> tuple[ArrayAttr, ArrayAttr]:
        with parser.in_angle_brackets():
            inputs = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_type)
            parser.parse_punctuation("->")
            outputs = _parse_result_types(parser)
        return (ArrayAttr(inputs), ArrayAttr(outputs))

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<(")
        printer.print_list(self.inputs.data, printer.print_attribute)
        printer.print_string(") -> ")
        _print_result_types(printer, self.outputs.data)
        printer.print_string(">")


def _parse_result_types(parser: AttrParser) -> list[Attribute]:
    """The types after a `->`: one bare type, or a parenthesized (possibly empty) list."""
    types = parser.parse_optional_comma_separated_list(parser.Delimiter.PAREN, parser.parse_type)
    return types if types is not None else [parser.parse_type()]


def _print_result_types(printer: Printer, types: Sequence[Attribute]) -> None:
    """The inverse of `_parse_result_types`: parentheses unless there is exactly one type."""
    if len(types) == 1:
        printer.print_attribute(types[0])
    else:
        printer.print_string("(")
        printer.print_list(types, printer.print_attribute)
        printer.print_string(")")


def _parse_optional_results(parser: Parser) -> list[Attribute]:
    """`-> T` or `-> (T1, T2)` (lambda and dataflow syntax); no arrow: no results."""
    if parser.parse_optional_punctuation("->"):
        return _parse_result_types(parser)
    return []


def _print_optional_results(printer: Printer, types: Sequence[Attribute]) -> None:
    """The inverse of `_parse_optional_results`: nothing when there are no results."""
    if types:
        printer.print_string(" -> ")
        _print_result_types(printer, types)
