"""Functions, calls, function values and dataflow blocks: the structure of a
graph program rather than its arithmetic.

`graph.func`/`graph.return`, `graph.call` (by symbol), `graph.lambda`,
`graph.closure` and `graph.invoke` (function values, removed by
`lift-lambdas` and `specialize-closures`), `graph.dataflow`/`graph.output`
(pure blocks) and `graph.constant`. The callee machinery (`_CalleeOp`,
`_CallOp`, symbol lookup, signature checks) is defined here and reused by the
kernel calls of `kernel_calls`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    DictionaryAttr,
    FlatSymbolRefAttrConstr,
    FunctionType,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
)
from xdsl.dialects.utils import parse_func_op_like, print_func_op_like
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
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
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (
    ConstantLike,
    EffectInstance,
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    MemoryEffect,
    Pure,
    RecursiveMemoryEffect,
    ReturnLike,
    SymbolOpInterface,
    SymbolUserOpInterface,
)
from xdsl.utils.exceptions import VerifyException

from lamina.core.symbols import lookup_symbol
from lamina.dialects.common import type_list, verify_terminator
from lamina.dialects.func_like import FuncLikeCallableInterface, ReturnLikeOp, SymbolFuncOp
from lamina.dialects.graph.base import _DeviceOp
from lamina.dialects.graph.common import _check_result_type, _unit
from lamina.dialects.graph.types import FnType, _parse_optional_results, _print_optional_results
from lamina.dialects.lamina import DeviceAttr
from lamina.dialects.layout_maps import verify_boundary_constraints


def _lookup_symbol(op: Operation, callee: SymbolRefAttr) -> tuple[bool, Operation | None]:
    """(inside a symbol table?, the op `callee` names). Detached ops are not checked."""
    try:
        return True, lookup_symbol(op, callee)
    except ValueError:
        return False, None


def _check_signature(
    what: str, arg_types: Sequence[Attribute], expected: Sequence[Attribute], kind: str
) -> None:
    """Compare the types a call passes/returns with the callee's, naming the first mismatch."""
    if len(arg_types) != len(expected):
        raise VerifyException(
            f"{what} has {len(arg_types)} {kind}s but the callee expects {len(expected)}: "
            f"got {type_list(arg_types)}, expected {type_list(expected)}"
        )
    for index, (got, want) in enumerate(zip(arg_types, expected, strict=True)):
        if got != want:
            raise VerifyException(
                f"{kind} #{index} of {what} has type {got}, but the callee expects {want}"
            )


BOUNDS_ATTR = "lamina.bounds"
BOUNDS_SPELLING = f"`{BOUNDS_ATTR} = {{N = array<i64: LO, HI>}}` with 1 <= LO <= HI"


def parse_bounds(attr: Attribute) -> tuple[str, tuple[int, int]]:
    """The batch symbol and its bounds in a `lamina.bounds` attribute.

    Checked by the `graph.func` verifier, so a malformed attribute is reported
    where it is written rather than by the first pass that reads it
    (docs/dynamic-shapes.md). Only the leading dimension can be dynamic, so
    there is exactly one symbol."""
    if not isinstance(attr, DictionaryAttr) or len(attr.data) != 1:
        raise VerifyException(
            f"{BOUNDS_ATTR} must name exactly one symbol: {BOUNDS_SPELLING} "
            "(only the leading dimension can be dynamic)"
        )
    ((symbol, value),) = attr.data.items()
    values = tuple(int(v) for v in value.get_values()) if isinstance(value, DenseArrayBase) else ()
    if len(values) != 2 or not 1 <= values[0] <= values[1]:
        raise VerifyException(f"bad bounds for {symbol}: expected {BOUNDS_SPELLING}, got {value}")
    return symbol, (values[0], values[1])


@irdl_op_definition
class FuncOp(SymbolFuncOp):
    """A graph function (like `func.func`): value semantics over tensors.

    The entry block arguments are the parameters. The function is pure unless
    it carries `impure`; `force_pure` declares it pure even if it calls impure
    code. `arg_attrs`/`res_attrs` carry `device` and `lamina.constraint`.

    Example: `graph.func @main(%x: tensor<4xf32>) -> tensor<4xf32> { ... }`
    """

    name = "graph.func"

    impure = opt_prop_def(UnitAttr)
    force_pure = opt_prop_def(UnitAttr)

    traits = traits_def(IsolatedFromAbove(), SymbolOpInterface(), FuncLikeCallableInterface())
    irdl_options = (ParsePropInAttrDict(),)

    _FLAG_PROPS: ClassVar[tuple[str, ...]] = ("impure", "force_pure")

    def __init__(
        self,
        name: str,
        function_type: FunctionType | tuple[Sequence[Attribute], Sequence[Attribute]],
        region: Region | None = None,
        *,
        arg_attrs: ArrayAttr[DictionaryAttr] | None = None,
        res_attrs: ArrayAttr[DictionaryAttr] | None = None,
        impure: bool = False,
        force_pure: bool = False,
    ):
        if isinstance(function_type, tuple):
            function_type = FunctionType.from_lists(*function_type)
        if region is None:
            region = Region(Block(arg_types=function_type.inputs))
        super().__init__(
            regions=[region],
            properties={
                "sym_name": StringAttr(name),
                "function_type": function_type,
                "arg_attrs": arg_attrs,
                "res_attrs": res_attrs,
                "impure": _unit(impure),
                "force_pure": _unit(force_pure),
            },
        )

    @property
    def args(self) -> tuple[SSAValue, ...]:
        return self.body.block.args

    @property
    def is_pure(self) -> bool:
        """Pure unless `impure`; `force_pure` declares purity whatever the body calls."""
        return self.impure is None or self.force_pure is not None

    def update_function_type(self) -> None:
        """Recompute `function_type` from the entry block arguments and the
        `graph.return` operands (after a pass retyped them)."""
        ret = self.get_return_op()
        outputs = ret.arguments.types if ret is not None else self.function_type.outputs.data
        self.properties["function_type"] = FunctionType.from_lists(
            self.body.block.arg_types, outputs
        )

    def verify_(self) -> None:
        inputs, outputs = self.signature
        if self.impure is not None and self.force_pure is not None:
            raise VerifyException("'impure' and 'force_pure' are mutually exclusive")
        for name, attrs, count in (
            ("arg_attrs", self.arg_attrs, len(inputs)),
            ("res_attrs", self.res_attrs, len(outputs)),
        ):
            if attrs is not None and len(attrs.data) != count:
                raise VerifyException(
                    f"{name} has {len(attrs.data)} entries, expected {count} "
                    f"(one per function {'parameter' if name == 'arg_attrs' else 'result'})"
                )
        verify_boundary_constraints(self.arg_attrs, self.res_attrs, inputs, outputs)
        if BOUNDS_ATTR in self.attributes:
            parse_bounds(self.attributes[BOUNDS_ATTR])
        if self.is_declaration:
            return
        block_types = self.body.blocks.first.arg_types  # type: ignore[union-attr]
        if tuple(block_types) != inputs:
            raise VerifyException(
                f"entry block argument types {type_list(block_types)} do not match the "
                f"function parameter types {type_list(inputs)}"
            )

    @classmethod
    def parse(cls, parser: Parser) -> FuncOp:
        name, inputs, outputs, region, extra, arg_attrs, res_attrs = parse_func_op_like(
            parser, reserved_attr_names=("sym_name", "function_type", "arg_attrs", "res_attrs")
        )
        attrs = dict(extra.data) if extra is not None else {}
        flags = {k: attrs.pop(k) for k in cls._FLAG_PROPS if k in attrs}
        func = FuncOp(
            name,
            (inputs, outputs),
            region,
            arg_attrs=arg_attrs,
            res_attrs=res_attrs,
        )
        func.properties.update(flags)
        func.attributes |= attrs
        return func

    def print(self, printer: Printer) -> None:
        flags = {k: v for k, v in self.properties.items() if k in self._FLAG_PROPS}
        print_func_op_like(
            printer,
            self.sym_name,
            self.function_type,
            self.body,
            self.attributes | flags,
            arg_attrs=self.arg_attrs,
            res_attrs=self.res_attrs,
            reserved_attr_names=("sym_name", "function_type", "arg_attrs", "res_attrs"),
        )


@irdl_op_definition
class ReturnOp(ReturnLikeOp, _DeviceOp):
    """Terminator of `graph.func` and `graph.lambda`: the function's results.

    Example: `graph.return %r : tensor<4xf32>`
    """

    name = "graph.return"
    # `arguments`, builder and syntax come from ReturnLikeOp, `device` from _DeviceOp.

    traits = lazy_traits_def(lambda: (HasParent(FuncOp, LambdaOp), IsTerminator(), ReturnLike()))

    def verify_(self) -> None:
        parent = self.parent_op()
        if not isinstance(parent, FuncOp | LambdaOp):
            return
        expected = parent.signature[1]
        got = tuple(self.arguments.types)
        if got != expected:
            raise VerifyException(
                f"returned types {type_list(got)} do not match the "
                f"{'function' if isinstance(parent, FuncOp) else 'lambda'} result types "
                f"{type_list(expected)}"
            )


class _CalleeSymbolUser(SymbolUserOpInterface):
    """Delegates symbol-use verification to the op's `verify_symbol_uses()`."""

    def verify(self, op: Operation) -> None:
        op.verify_symbol_uses()  # type: ignore[attr-defined]


class _CallEffects(MemoryEffect):
    """A call is as pure as its callee: effect-free if the callee is a graph.func
    without `impure` (or with `force_pure`), unknown otherwise."""

    @classmethod
    def get_effects(cls, op: Operation) -> set[EffectInstance] | None:
        assert isinstance(op, CallOp)
        _, callee = _lookup_symbol(op, op.callee)
        if isinstance(callee, FuncOp) and (callee.impure is None or callee.force_pure):
            return set()
        return None


class _PureFlagEffects(MemoryEffect):
    """Effect-free when the op carries the unit `pure`, unknown otherwise."""

    @classmethod
    def get_effects(cls, op: Operation) -> set[EffectInstance] | None:
        return set() if op.properties.get("pure") is not None else None


def _symbol_ref(callee: str | SymbolRefAttr) -> SymbolRefAttr:
    """Builders take a callee as `"f"` or `@f`."""
    return SymbolRefAttr(callee) if isinstance(callee, str) else callee


class _CalleeOp(_DeviceOp):
    """Shared by the ops that name a function by symbol (calls and closures):
    `callee` and the lookup that starts their `verify_symbol_uses()`."""

    callee = prop_def(FlatSymbolRefAttrConstr)

    CALLEE_OP_NAME: ClassVar[str] = "graph.func"
    """The name of the op `callee` must reference."""

    def _resolve_callee(self) -> Operation | None:
        """The op `callee` names, checked to be a `CALLEE_OP_NAME`; None when
        the op is not inside a symbol table (detached ops are not checked)."""
        in_table, callee = _lookup_symbol(self, self.callee)
        if not in_table:
            return None
        if callee is None:
            raise VerifyException(f"callee {self.callee} does not name a symbol in the module")
        if callee.name != self.CALLEE_OP_NAME:
            raise VerifyException(
                f"callee {self.callee} is a '{callee.name}', expected a {self.CALLEE_OP_NAME}"
            )
        return callee


CALL_FORMAT = "$callee `(` $arguments `)` attr-dict `:` functional-type($arguments, $res)"
"""Syntax of every call: `graph.call`, `graph.call_te`/`call_loop`, `graph.call_extern`."""


class _CallOp(_CalleeOp):
    """Shared by `graph.call` and the kernel calls: arguments, results, builder, syntax."""

    arguments = var_operand_def()
    res = var_result_def()

    assembly_format = CALL_FORMAT

    def __init__(
        self,
        callee: str | SymbolRefAttr,
        arguments: Sequence[SSAValue | Operation],
        result_types: Sequence[Attribute],
        device: DeviceAttr | None = None,
    ):
        super().__init__(
            operands=[arguments],
            result_types=[result_types],
            properties={"callee": _symbol_ref(callee), "device": device},
        )


@irdl_op_definition
class CallOp(_CallOp):
    """Call a `graph.func` by symbol.

    Example: `%r = graph.call @f(%x) : (tensor<4xf32>) -> tensor<4xf32>`
    """

    name = "graph.call"

    traits = traits_def(_CalleeSymbolUser(), _CallEffects())

    def verify_symbol_uses(self) -> None:
        callee = self._resolve_callee()
        if callee is None:
            return
        assert isinstance(callee, FuncOp)
        inputs, outputs = callee.signature
        _check_signature("the call", self.arguments.types, inputs, "operand")
        _check_signature("the call", self.res.types, outputs, "result")


def _region_signature(region: Region) -> tuple[Attribute, ...]:
    block = region.blocks.first
    return tuple(block.arg_types) if block is not None else ()


@irdl_op_definition
class LambdaOp(_DeviceOp):
    """An inner function: its region becomes a `!graph.fn<...>` value.

    The body may use values of the enclosing scope (lambda lifting turns them
    into closure captures). The block arguments are the parameters.

    Example::

        %f = graph.lambda (%x: tensor<4xf32>) -> tensor<4xf32> {
          graph.return %x : tensor<4xf32>
        }
    """

    name = "graph.lambda"

    body = region_def("single_block")
    result = result_def(FnType)

    traits = traits_def(Pure(), FuncLikeCallableInterface())

    def __init__(
        self,
        inputs: Sequence[Attribute],
        outputs: Sequence[Attribute],
        region: Region | None = None,
        device: DeviceAttr | None = None,
    ):
        if region is None:
            region = Region(Block(arg_types=inputs))
        super().__init__(
            regions=[region],
            result_types=[FnType(inputs, outputs)],
            properties={"device": device},
        )

    @property
    def fn_type(self) -> FnType:
        assert isinstance(self.result.type, FnType)
        return self.result.type

    @property
    def signature(self) -> tuple[tuple[Attribute, ...], tuple[Attribute, ...]]:
        return self.fn_type.inputs.data, self.fn_type.outputs.data

    def verify_(self) -> None:
        block_types = _region_signature(self.body)
        if block_types != self.signature[0]:
            raise VerifyException(
                f"block argument types {type_list(block_types)} do not match the parameter "
                f"types of {self.fn_type}"
            )
        verify_terminator(self.body.block, ReturnOp, "body")

    @classmethod
    def parse(cls, parser: Parser) -> LambdaOp:
        args = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_argument)
        outputs = _parse_optional_results(parser)
        attrs = parser.parse_optional_attr_dict_with_keyword()
        region = parser.parse_region(args)
        op = LambdaOp([a.type for a in args], outputs, region)
        _split_props(op, attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" (")
        printer.print_list(self.body.block.args, printer.print_block_argument)
        printer.print_string(")")
        _print_optional_results(printer, self.signature[1])
        _print_attrs_with_props(printer, self)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)


def _split_props(op: IRDLOperation, attrs: DictionaryAttr | dict[str, Attribute] | None) -> None:
    """Route a parsed attribute dictionary into the op's properties and attributes."""
    if attrs is None:
        return
    data = attrs.data if isinstance(attrs, DictionaryAttr) else attrs
    known = op.get_irdl_definition().properties
    for key, value in data.items():
        if key in known:
            op.properties[key] = value
        else:
            op.attributes[key] = value


def _print_attrs_with_props(printer: Printer, op: Operation) -> None:
    """Print `attributes {...}` holding both discardable attributes and properties."""
    printer.print_op_attributes(op.attributes | op.properties, print_keyword=True)


@irdl_op_definition
class ClosureOp(_CalleeOp):
    """A closure over a top-level `graph.func`: captured values come first in
    the callee's parameters; the result takes the remaining ones.

    Example: `%c = graph.closure @f(%w) : (tensor<4xf32>) -> !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>`
    """

    name = "graph.closure"

    captures = var_operand_def()
    result = result_def(FnType)

    traits = traits_def(Pure(), _CalleeSymbolUser())
    assembly_format = "$callee `(` $captures `)` attr-dict `:` functional-type($captures, $result)"

    def __init__(
        self,
        callee: str | SymbolRefAttr,
        captures: Sequence[SSAValue | Operation],
        fn_type: FnType,
        device: DeviceAttr | None = None,
    ):
        super().__init__(
            operands=[captures],
            result_types=[fn_type],
            properties={"callee": _symbol_ref(callee), "device": device},
        )

    def verify_symbol_uses(self) -> None:
        callee = self._resolve_callee()
        if callee is None:
            return
        assert isinstance(callee, FuncOp)
        if not isinstance(callee.parent_op(), ModuleOp):
            raise VerifyException(f"callee {self.callee} must be a top-level graph.func")
        inputs, outputs = callee.signature
        captured = self.captures.types
        if len(captured) > len(inputs):
            raise VerifyException(
                f"closure captures {len(captured)} values but callee {self.callee} has only "
                f"{len(inputs)} parameters"
            )
        for index, (got, want) in enumerate(zip(captured, inputs, strict=False)):
            if got != want:
                raise VerifyException(
                    f"captured value #{index} has type {got}, but callee parameter #{index} "
                    f"has type {want}"
                )
        _check_result_type(self.result.type, FnType(inputs[len(captured) :], outputs))


@irdl_op_definition
class InvokeOp(_DeviceOp):
    """Call a function value (`!graph.fn<...>`); `pure` marks the call effect-free.

    The pretty form gives the call's signature, from which the function
    value's type follows; the long form spells the function type as the
    first input (and is what is printed when the types disagree)::

        %r = graph.invoke %f(%x) : (tensor<4xf32>) -> tensor<4xf32>
        %r = graph.invoke %f(%x) : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, tensor<4xf32>) -> tensor<4xf32>
    """

    name = "graph.invoke"

    fn = operand_def(FnType)
    arguments = var_operand_def()
    res = var_result_def()
    pure = opt_prop_def(UnitAttr)

    traits = traits_def(_PureFlagEffects())

    def __init__(
        self,
        fn: SSAValue | Operation,
        arguments: Sequence[SSAValue | Operation],
        pure: bool = False,
        device: DeviceAttr | None = None,
    ):
        fn_type = SSAValue.get(fn).type
        assert isinstance(fn_type, FnType)
        super().__init__(
            operands=[fn, arguments],
            result_types=[fn_type.outputs.data],
            properties={"pure": _unit(pure), "device": device},
        )

    def verify_(self) -> None:
        fn_type = self.fn.type
        assert isinstance(fn_type, FnType)
        _check_signature("the invocation", self.arguments.types, fn_type.inputs.data, "operand")
        _check_signature("the invocation", self.res.types, fn_type.outputs.data, "result")

    @classmethod
    def parse(cls, parser: Parser) -> InvokeOp:
        fn = parser.parse_unresolved_operand()
        args = parser.parse_comma_separated_list(
            parser.Delimiter.PAREN, parser.parse_unresolved_operand
        )
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        pos = parser.pos
        signature = parser.parse_function_type()
        inputs, outputs = signature.inputs.data, signature.outputs.data
        if len(inputs) == len(args) + 1 and isinstance(inputs[0], FnType):
            fn_type, arg_types = inputs[0], inputs[1:]
        elif len(inputs) == len(args):
            fn_type, arg_types = FnType(inputs, outputs), inputs
        else:
            parser.raise_error(
                f"expected {len(args)} argument types (or the function type and "
                f"{len(args)} argument types), got {len(inputs)}",
                pos,
            )
        op = InvokeOp.create(
            operands=[
                parser.resolve_operand(fn, fn_type),
                *(parser.resolve_operand(a, t) for a, t in zip(args, arg_types, strict=True)),
            ],
            result_types=outputs,
        )
        _split_props(op, attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.fn)
        printer.print_string("(")
        printer.print_list(self.arguments, printer.print_operand)
        printer.print_string(")")
        printer.print_op_attributes(self.attributes | self.properties)
        inputs = list(self.arguments.types)
        if self.fn.type != FnType(inputs, self.res.types):
            inputs.insert(0, self.fn.type)
        printer.print_string(" : ")
        printer.print_attribute(FunctionType.from_lists(inputs, self.res.types))


@irdl_op_definition
class DataflowOp(_DeviceOp):
    """A dataflow block: a single block of pure ops whose `graph.output`
    operands become the op's results (Relax's DataflowBlock).

    Example::

        %r = graph.dataflow -> tensor<4xf32> {
          %s = graph.exp %x : (tensor<4xf32>) -> tensor<4xf32>
          graph.output %s : tensor<4xf32>
        }
    """

    name = "graph.dataflow"

    body = region_def("single_block")
    res = var_result_def()

    traits = traits_def(RecursiveMemoryEffect())

    def __init__(
        self,
        result_types: Sequence[Attribute],
        region: Region | None = None,
        device: DeviceAttr | None = None,
    ):
        super().__init__(
            regions=[region if region is not None else Region(Block())],
            result_types=[result_types],
            properties={"device": device},
        )

    def verify_(self) -> None:
        block = self.body.block
        if block.args:
            raise VerifyException(
                f"body must have no block arguments, got {type_list(block.arg_types)}"
            )
        last = verify_terminator(block, OutputOp, "body")
        if tuple(last.outputs.types) != tuple(self.res.types):
            raise VerifyException(
                f"graph.output types {type_list(last.outputs.types)} do not match the "
                f"dataflow result types {type_list(self.res.types)}"
            )

    @classmethod
    def parse(cls, parser: Parser) -> DataflowOp:
        result_types = _parse_optional_results(parser)
        attrs = parser.parse_optional_attr_dict_with_keyword()
        region = parser.parse_region()
        op = DataflowOp(result_types, region)
        _split_props(op, attrs)
        return op

    def print(self, printer: Printer) -> None:
        _print_optional_results(printer, self.res.types)
        _print_attrs_with_props(printer, self)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)


@irdl_op_definition
class OutputOp(_DeviceOp):
    """Terminator of `graph.dataflow`: the values the block exposes.

    Example: `graph.output %a, %b : tensor<4xf32>, tensor<2xf32>`
    """

    name = "graph.output"

    outputs = var_operand_def()

    traits = traits_def(HasParent(DataflowOp), IsTerminator(), ReturnLike())
    assembly_format = "attr-dict ($outputs^ `:` type($outputs))?"

    def __init__(self, *values: SSAValue | Operation):
        super().__init__(operands=[values])


@irdl_op_definition
class ConstantOp(_DeviceOp):
    """A constant tensor; the result type is the type of `value`.

    Example: `%c = graph.constant dense<1.0> : tensor<4xf32>`
    """

    name = "graph.constant"

    value = prop_def(DenseIntOrFPElementsAttr)
    result = result_def(TensorType)

    traits = traits_def(Pure(), ConstantLike())

    def __init__(self, value: DenseIntOrFPElementsAttr, device: DeviceAttr | None = None):
        super().__init__(
            result_types=[value.get_type()], properties={"value": value, "device": device}
        )

    def verify_(self) -> None:
        _check_result_type(self.result.type, self.value.get_type())

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        attrs = parser.parse_optional_attr_dict()
        pos = parser.pos
        value = parser.parse_attribute()
        if isinstance(value, DenseResourceAttr) and value.resource_handle.data == "__elided__":
            parser.raise_error(
                "this constant's value was elided when the IR was printed "
                "(--mlir-elide-elementsattrs-if-larger): print it without that flag "
                "to get text that compiles",
                pos,
            )
        if not isinstance(value, DenseIntOrFPElementsAttr):
            parser.raise_error(
                "expected a dense elements attribute, e.g. dense<1.0> : tensor<4xf32>", pos
            )
        op = ConstantOp(value)
        _split_props(op, attrs)
        return op

    def print(self, printer: Printer) -> None:
        props = {k: v for k, v in self.properties.items() if k != "value"}
        printer.print_op_attributes(self.attributes | props)
        printer.print_string(" ")
        printer.print_attribute(self.value)
