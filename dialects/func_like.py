"""Shared pieces of Lamina's function ops (`graph.func`, `te.func`, `loop.func`).

All three are `func.func` look-alikes: a symbol with `sym_name`,
`function_type`, `arg_attrs` and `res_attrs` (`SymbolFuncOp`); a body region
whose entry block arguments are the parameters (or no body at all: an
external declaration); and a `*.return` terminator (`ReturnLikeOp`).
`te.func` and `loop.func` also share an optional `sym_visibility`, their
builder, syntax and verifier (`FuncLikeOp`): the `lamina.constraint` and
`device` entries of `arg_attrs`/`res_attrs` must be a `#lamina.constraint` and
a `#lamina.device`, and each dialect states which argument and result types it
accepts (`allowed_type`). xDSL cannot subclass a concrete
`@irdl_op_definition` op, so the fields and the custom syntax live in the
undecorated bases below; each dialect decorates its own subclass. Pieces that
are not about functions are in `common`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Self

from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FunctionType,
    StringAttr,
    SymbolNameConstraint,
)
from xdsl.dialects.utils import parse_func_op_like, print_func_op_like
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.irdl import IRDLOperation, opt_prop_def, prop_def, region_def, var_operand_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import CallableOpInterface
from xdsl.utils.exceptions import VerifyException

from lamina.dialects.common import type_list
from lamina.dialects.lamina import (
    CONSTRAINT_ATTR_NAME,
    DEVICE_ATTR_NAME,
    ConstraintAttr,
    DeviceAttr,
)
from lamina.dialects.layout_maps import verify_boundary_constraints


class FuncLikeCallableInterface(CallableOpInterface):
    """CallableOpInterface over an op's `body` and `signature` (used by inliners
    and call verifiers): every `SymbolFuncOp`, and `graph.lambda`."""

    @classmethod
    def get_callable_region(cls, op: Operation) -> Region:
        return op.body  # pyright: ignore[reportAttributeAccessIssue]

    @classmethod
    def get_argument_types(cls, op: Operation) -> tuple[Attribute, ...]:
        return op.signature[0]  # pyright: ignore[reportAttributeAccessIssue]

    @classmethod
    def get_result_types(cls, op: Operation) -> tuple[Attribute, ...]:
        return op.signature[1]  # pyright: ignore[reportAttributeAccessIssue]


class SymbolFuncOp(IRDLOperation):
    """Fields and queries of every function op (`graph.func`, `te.func`, `loop.func`)."""

    body = region_def()
    sym_name = prop_def(SymbolNameConstraint())
    function_type = prop_def(FunctionType)
    arg_attrs = opt_prop_def(ArrayAttr[DictionaryAttr])
    res_attrs = opt_prop_def(ArrayAttr[DictionaryAttr])

    @property
    def signature(self) -> tuple[tuple[Attribute, ...], tuple[Attribute, ...]]:
        """(parameter types, result types)."""
        return self.function_type.inputs.data, self.function_type.outputs.data

    @property
    def is_declaration(self) -> bool:
        """True for an external function (no body)."""
        return not self.body.blocks

    def get_return_op(self) -> ReturnLikeOp | None:
        """The body's `*.return`, if the function has a body ending in one."""
        if self.is_declaration:
            return None
        last = self.body.blocks.last.last_op  # type: ignore[union-attr]
        return last if isinstance(last, ReturnLikeOp) else None


class FuncLikeOp(SymbolFuncOp):
    """Visibility, builder, syntax and verifier shared by `te.func` and `loop.func`."""

    sym_visibility = opt_prop_def(StringAttr)

    TYPE_DESCRIPTION: ClassVar[str] = "any type"
    """Human-readable description of `allowed_type`, used in verifier messages."""

    def __init__(
        self,
        name: str,
        function_type: FunctionType | tuple[Sequence[Attribute], Sequence[Attribute]],
        region: Region | type[Region.DEFAULT] | None = Region.DEFAULT,
        visibility: StringAttr | str | None = None,
        *,
        arg_attrs: ArrayAttr[DictionaryAttr] | None = None,
        res_attrs: ArrayAttr[DictionaryAttr] | None = None,
    ):
        """Build a function; `region=None` builds a body-less (external) declaration.

        With the default region, the body is one empty block whose arguments
        are the parameters, ready for a builder to fill.
        """
        if isinstance(visibility, str):
            visibility = StringAttr(visibility)
        if isinstance(function_type, tuple):
            function_type = FunctionType.from_lists(*function_type)
        if region is None:
            region = Region()
        elif not isinstance(region, Region):
            region = Region(Block(arg_types=function_type.inputs))
        properties: dict[str, Attribute | None] = {
            "sym_name": StringAttr(name),
            "function_type": function_type,
            "sym_visibility": visibility,
            "arg_attrs": arg_attrs,
            "res_attrs": res_attrs,
        }
        super().__init__(properties=properties, regions=[region])

    # -- queries ---------------------------------------------------------------

    @property
    def args(self) -> tuple[SSAValue, ...]:
        """The parameters (entry block arguments); empty for a declaration."""
        block = self.body.blocks.first
        return tuple(block.args) if block is not None else ()

    def arg_attr(self, index: int, name: str) -> Attribute | None:
        """The `name` entry of the `index`-th parameter's attribute dictionary, if any."""
        if self.arg_attrs is None or index >= len(self.arg_attrs.data):
            return None
        return self.arg_attrs.data[index].data.get(name)

    def res_attr(self, index: int, name: str) -> Attribute | None:
        """The `name` entry of the `index`-th result's attribute dictionary, if any."""
        if self.res_attrs is None or index >= len(self.res_attrs.data):
            return None
        return self.res_attrs.data[index].data.get(name)

    # -- verification ------------------------------------------------------------

    @classmethod
    def allowed_type(cls, type: Attribute) -> bool:
        """Whether a parameter or result may have `type`; dialects narrow this."""
        return True

    def verify_(self) -> None:
        ftype = self.function_type
        for what, types in (("argument", ftype.inputs.data), ("result", ftype.outputs.data)):
            for i, t in enumerate(types):
                if not self.allowed_type(t):
                    raise VerifyException(f"{what} #{i} must be {self.TYPE_DESCRIPTION}, got {t}")
        self._verify_attr_arrays()
        self._verify_placement_attrs()
        verify_boundary_constraints(
            self.arg_attrs, self.res_attrs, ftype.inputs.data, ftype.outputs.data
        )
        if self.is_declaration:
            return
        block_types = tuple(self.body.block.arg_types) if len(self.body.blocks) == 1 else None
        if block_types is None:
            raise VerifyException(
                f"expected a body with a single block, got {len(self.body.blocks)} blocks"
            )
        if block_types != ftype.inputs.data:
            raise VerifyException(
                "entry block argument types must match the function's input types: "
                f"expected {type_list(ftype.inputs.data)}, got {type_list(block_types)}"
            )

    def _verify_attr_arrays(self) -> None:
        """`arg_attrs`/`res_attrs` have one dictionary per argument/result."""
        ftype = self.function_type
        for what, attrs, types in (
            ("arg_attrs", self.arg_attrs, ftype.inputs.data),
            ("res_attrs", self.res_attrs, ftype.outputs.data),
        ):
            if attrs is not None and len(attrs.data) != len(types):
                raise VerifyException(
                    f"{what} must have one dictionary per "
                    f"{'argument' if what == 'arg_attrs' else 'result'}: "
                    f"expected {len(types)}, got {len(attrs.data)}"
                )

    def _verify_placement_attrs(self) -> None:
        """`lamina.constraint` / `device` entries of arg/res attrs have the right kinds."""
        for what, attrs in (("parameter", self.arg_attrs), ("result", self.res_attrs)):
            for i, entry in enumerate(attrs.data if attrs is not None else ()):
                constraint = entry.data.get(CONSTRAINT_ATTR_NAME)
                if constraint is not None and not isinstance(constraint, ConstraintAttr):
                    raise VerifyException(
                        f"'{CONSTRAINT_ATTR_NAME}' of {what} #{i} must be a "
                        f"#lamina.constraint, got {constraint}"
                    )
                device = entry.data.get(DEVICE_ATTR_NAME)
                if device is not None and not isinstance(device, DeviceAttr):
                    raise VerifyException(
                        f"'{DEVICE_ATTR_NAME}' of {what} #{i} must be a #lamina.device, "
                        f"got {device}"
                    )

    # -- syntax ------------------------------------------------------------------

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        visibility = parser.parse_optional_visibility_keyword()
        name, inputs, outputs, region, extra_attrs, arg_attrs, res_attrs = parse_func_op_like(
            parser, reserved_attr_names=("sym_name", "function_type", "sym_visibility")
        )
        extra = dict(extra_attrs.data) if extra_attrs is not None else {}
        # A declaration spells its arg/res attrs in `attributes {...}` (see `print`).
        arg_attrs = arg_attrs or _pop_attr_array(extra, "arg_attrs")
        res_attrs = res_attrs or _pop_attr_array(extra, "res_attrs")
        func = cls(
            name,
            (inputs, outputs),
            region,
            visibility,
            arg_attrs=arg_attrs,
            res_attrs=res_attrs,
        )
        func.attributes |= extra
        return func

    def print(self, printer: Printer) -> None:
        if self.sym_visibility:
            printer.print_string(f" {self.sym_visibility.data}")
        attributes = dict(self.attributes)
        if self.is_declaration:
            # xDSL's declaration syntax `@f(T1, T2) -> R` has no room for per-argument
            # attributes, so a declaration keeps them in its `attributes {...}`.
            for name, attrs in (("arg_attrs", self.arg_attrs), ("res_attrs", self.res_attrs)):
                if attrs is not None:
                    attributes[name] = attrs
        print_func_op_like(
            printer,
            self.sym_name,
            self.function_type,
            self.body,
            attributes,
            arg_attrs=self.arg_attrs,
            res_attrs=self.res_attrs,
            reserved_attr_names=("sym_name", "function_type", "sym_visibility"),
        )


def _pop_attr_array(attrs: dict[str, Attribute], name: str) -> ArrayAttr[DictionaryAttr] | None:
    """Remove and return `attrs[name]` if it is an array of dictionaries."""
    value = attrs.get(name)
    if isinstance(value, ArrayAttr) and all(isinstance(d, DictionaryAttr) for d in value.data):
        del attrs[name]
        return value  # pyright: ignore[reportUnknownVariableType]
    return None


class ReturnLikeOp(IRDLOperation):
    """`*.return`: terminator of a `SymbolFuncOp` returning values of its result types.

    The check here serves `te.return` and `loop.return`; `graph.return` (whose
    parent may also be a `graph.lambda`) has its own."""

    arguments = var_operand_def()

    assembly_format = "attr-dict ($arguments^ `:` type($arguments))?"

    def __init__(self, *values: SSAValue | Operation):
        super().__init__(operands=[values])

    def verify_(self) -> None:
        func = self.parent_op()
        if not isinstance(func, FuncLikeOp):
            return  # HasParent reports the misplaced terminator
        expected = func.function_type.outputs.data
        got = self.arguments.types
        if expected != got:
            raise VerifyException(
                "returned types must match the function's result types: "
                f"expected {type_list(expected)}, got {type_list(got)}"
            )
