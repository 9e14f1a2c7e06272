"""The `lamina` dialect: attributes shared by every level of the IR (docs/design.md §3.1).

Nothing here is an operation. These attributes carry the compiler's decisions
*in the IR itself* (phase, device placement, buffer-layout constraints,
targets), so that no pass ever needs a side input (seeds 000, 001, 002, 003).

Syntax::

    #lamina.phase<optimization>
    #lamina.device<"cpu", 0>            #lamina.device<"cpu", 0, "local">
    #lamina.undef
    #lamina.constraint<affine_map<(d0) -> (d0 floordiv 8, d0 mod 8)>, 0.0 : f32>
    #lamina.constraint<affine_map<(d0) -> (d0)>, #lamina.undef>
    #lamina.target<"cblas">             #lamina.target<"cpu", {threads = 4 : i64}>
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import IntEnum

from xdsl.dialects.builtin import (
    AffineMapAttr,
    DenseArrayBase,
    DictionaryAttr,
    FloatAttr,
    IntAttr,
    IntegerAttr,
    ModuleOp,
    NoneAttr,
    StringAttr,
    i64,
)
from xdsl.ir import Attribute, Dialect, Operation, ParametrizedAttribute
from xdsl.irdl import irdl_attr_definition, param_def
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

# ---------------------------------------------------------------------------
# Phases
# ---------------------------------------------------------------------------


class Phase(IntEnum):
    """The four compilation phases, ordered: a module's phase only moves forward."""

    INGESTION = 0
    OPTIMIZATION = 1
    LOWERING = 2
    BUILD = 3

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def from_label(cls, label: str) -> Phase:
        try:
            return cls[label.upper()]
        except KeyError:
            raise ValueError(
                f"unknown phase '{label}' (expected one of: {', '.join(PHASE_NAMES)})"
            ) from None


PHASE_NAMES = tuple(p.label for p in Phase)

PHASE_ATTR_NAME = "lamina.phase"
DEFAULT_DEVICE_ATTR_NAME = "lamina.default_device"
TARGETS_ATTR_NAME = "lamina.targets"
CONSTRAINT_ATTR_NAME = "lamina.constraint"
CODEGEN_ATTR_NAME = "lamina.codegen"
CONCATENATION_ATTR_NAME = "lamina.concatenation"
"""Unit attribute on a kernel call (`graph.call_te`, `graph.call_loop`, `loop.call`)
whose kernel is a plain `graph.concat` of its inputs: `legalize` sets it,
`concat-in-place` and `plan-memory` rely on it (never on the kernel's name)."""
DEVICE_ATTR_NAME = "device"


@irdl_attr_definition
class PhaseAttr(ParametrizedAttribute):
    """`#lamina.phase<NAME>`: the phase a module is in (docs/design.md §2)."""

    name = "lamina.phase"

    phase_name: StringAttr = param_def(StringAttr)

    def __init__(self, phase: Phase | str):
        label = phase.label if isinstance(phase, Phase) else phase
        super().__init__(StringAttr(label))

    @property
    def phase(self) -> Phase:
        return Phase.from_label(self.phase_name.data)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> tuple[StringAttr]:
        with parser.in_angle_brackets():
            pos = parser.pos
            label = parser.parse_identifier("phase name")
            if label not in PHASE_NAMES:
                parser.raise_error(
                    f"unknown phase '{label}' (expected one of: {', '.join(PHASE_NAMES)})",
                    pos,
                    parser.pos,
                )
        return (StringAttr(label),)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.phase_name.data}>")

    def verify(self) -> None:
        if self.phase_name.data not in PHASE_NAMES:
            raise VerifyException(
                f"unknown phase '{self.phase_name.data}' "
                f"(expected one of: {', '.join(PHASE_NAMES)})"
            )


def get_phase(module: ModuleOp) -> Phase:
    """The phase recorded on `module`; a module without `lamina.phase` is in ingestion."""
    attr = module.attributes.get(PHASE_ATTR_NAME)
    if attr is None:
        return Phase.INGESTION
    if not isinstance(attr, PhaseAttr):
        raise VerifyException(
            f"module attribute '{PHASE_ATTR_NAME}' must be a #lamina.phase, got {attr}"
        )
    return attr.phase


def set_phase(module: ModuleOp, phase: Phase) -> None:
    """Record `phase` on `module`."""
    module.attributes[PHASE_ATTR_NAME] = PhaseAttr(phase)


# ---------------------------------------------------------------------------
# Devices
# ---------------------------------------------------------------------------


@irdl_attr_definition
class DeviceAttr(ParametrizedAttribute):
    """`#lamina.device<KIND, INDEX[, SCOPE]>`: a virtual device (docs/devices.md).

    KIND is a device kind (`"cpu"`, `"gpu"` or a registered target's kind),
    INDEX distinguishes devices of one kind, SCOPE is a memory scope
    (default `"global"`, printed only when it differs).
    """

    name = "lamina.device"

    kind: StringAttr = param_def(StringAttr)
    index: IntAttr = param_def(IntAttr)
    scope: StringAttr = param_def(StringAttr)

    def __init__(self, kind: str, index: int = 0, scope: str = "global"):
        super().__init__(StringAttr(kind), IntAttr(index), StringAttr(scope))

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> tuple[StringAttr, IntAttr, StringAttr]:
        with parser.in_angle_brackets():
            kind = parser.parse_str_literal("device kind")
            parser.parse_punctuation(",")
            pos = parser.pos
            index = parser.parse_integer(allow_boolean=False, allow_negative=True)
            if index < 0:
                parser.raise_error(f"device index must be >= 0, got {index}", pos, parser.pos)
            scope = "global"
            if parser.parse_optional_punctuation(","):
                scope = parser.parse_str_literal("memory scope")
        return (StringAttr(kind), IntAttr(index), StringAttr(scope))

    def print_parameters(self, printer: Printer) -> None:
        scope = "" if self.scope.data == "global" else f', "{self.scope.data}"'
        printer.print_string(f'<"{self.kind.data}", {self.index.data}{scope}>')

    def verify(self) -> None:
        if not self.kind.data:
            raise VerifyException("device kind must not be empty")
        if self.index.data < 0:
            raise VerifyException(f"device index must be >= 0, got {self.index.data}")

    def __str__(self) -> str:
        scope = "" if self.scope.data == "global" else f":{self.scope.data}"
        return f"{self.kind.data}:{self.index.data}{scope}"


CPU0 = DeviceAttr("cpu", 0)


def get_default_device(module: ModuleOp) -> DeviceAttr:
    """`lamina.default_device` of `module`, `#lamina.device<"cpu", 0>` when absent."""
    attr = module.attributes.get(DEFAULT_DEVICE_ATTR_NAME)
    return attr if isinstance(attr, DeviceAttr) else CPU0


# ---------------------------------------------------------------------------
# Layout constraints (docs/layouts.md)
# ---------------------------------------------------------------------------


@irdl_attr_definition
class UndefAttr(ParametrizedAttribute):
    """`#lamina.undef`: "any value" — padding the compiler may leave unspecified."""

    name = "lamina.undef"


PadValue = FloatAttr | IntegerAttr | UndefAttr


@irdl_attr_definition
class ConstraintAttr(ParametrizedAttribute):
    """`#lamina.constraint<MAP, PAD>`: a buffer-layout constraint (docs/layouts.md).

    The physical buffer is indexed by MAP(logical indices); every physical
    element that no logical index maps to (padding) holds PAD, or is
    unspecified when PAD is `#lamina.undef`.
    """

    name = "lamina.constraint"

    index_map: AffineMapAttr = param_def(AffineMapAttr)
    pad: Attribute = param_def(Attribute)
    logical: Attribute = param_def(Attribute)
    """`NoneAttr` or `array<i64: ...>`: the logical shape whose image is the
    data; physical slots outside that image are padding. Recorded where it
    is known (a layout_transform's operand) so that a consumer can tell which
    slots hold PAD (printed as `, logical = array<i64: ...>`)."""

    def __init__(
        self,
        index_map: AffineMapAttr,
        pad: Attribute,
        logical: Sequence[int] | DenseArrayBase | None = None,
    ):
        if logical is None:
            logical_attr: Attribute = NoneAttr()
        elif isinstance(logical, DenseArrayBase):
            logical_attr = logical
        else:
            logical_attr = DenseArrayBase.from_list(i64, list(logical))
        super().__init__(index_map, pad, logical_attr)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> tuple[AffineMapAttr, Attribute, Attribute]:
        with parser.in_angle_brackets():
            pos = parser.pos
            index_map = parser.parse_attribute()
            if not isinstance(index_map, AffineMapAttr):
                parser.raise_error("expected an affine_map as the constraint's index map", pos)
            parser.parse_punctuation(",")
            pos = parser.pos
            pad = parser.parse_attribute()
            if not isinstance(pad, FloatAttr | IntegerAttr | UndefAttr):
                parser.raise_error(
                    "expected a scalar pad value (e.g. `0.0 : f32`) or #lamina.undef", pos
                )
            logical: Attribute = NoneAttr()
            if parser.parse_optional_punctuation(","):
                parser.parse_keyword("logical")
                parser.parse_punctuation("=")
                pos = parser.pos
                logical = parser.parse_attribute()
                if not isinstance(logical, DenseArrayBase) or logical.elt_type != i64:
                    parser.raise_error("expected the logical shape as `array<i64: ...>`", pos)
        return (index_map, pad, logical)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<")
        printer.print_attribute(self.index_map)
        printer.print_string(", ")
        printer.print_attribute(self.pad)
        if not isinstance(self.logical, NoneAttr):
            printer.print_string(", logical = ")
            printer.print_attribute(self.logical)
        printer.print_string(">")

    def verify(self) -> None:
        if not isinstance(self.pad, FloatAttr | IntegerAttr | UndefAttr):
            raise VerifyException(
                f"constraint pad must be a scalar or #lamina.undef, got {self.pad}"
            )
        if self.index_map.data.num_symbols != 0:
            raise VerifyException("constraint index map must not have symbols")
        if not isinstance(self.logical, NoneAttr):
            if not isinstance(self.logical, DenseArrayBase) or self.logical.elt_type != i64:
                raise VerifyException(
                    f"constraint logical shape must be an array<i64: ...>, got {self.logical}"
                )
            if len(self.logical.get_values()) != self.index_map.data.num_dims:
                raise VerifyException(
                    f"constraint logical shape has rank {len(self.logical.get_values())} but "
                    f"the map has {self.index_map.data.num_dims} dimensions"
                )

    @property
    def logical_shape(self) -> tuple[int, ...] | None:
        """The recorded logical shape, if any."""
        if isinstance(self.logical, DenseArrayBase):
            return tuple(int(v) for v in self.logical.get_values())
        return None

    def with_logical(self, shape: Sequence[int] | None) -> ConstraintAttr:
        """This constraint with logical shape `shape` (None: without one)."""
        return ConstraintAttr(self.index_map, self.pad, shape)

    @property
    def pad_is_undef(self) -> bool:
        return isinstance(self.pad, UndefAttr)


# ---------------------------------------------------------------------------
# Targets (docs/extending.md)
# ---------------------------------------------------------------------------


@irdl_attr_definition
class TargetAttr(ParametrizedAttribute):
    """`#lamina.target<NAME[, {OPTIONS}]>`: the registered target compiling a device kind."""

    name = "lamina.target"

    target_name: StringAttr = param_def(StringAttr)
    options: DictionaryAttr = param_def(DictionaryAttr)

    def __init__(self, target_name: str, options: dict[str, Attribute] | None = None):
        super().__init__(StringAttr(target_name), DictionaryAttr(options or {}))

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> tuple[StringAttr, DictionaryAttr]:
        with parser.in_angle_brackets():
            name = parser.parse_str_literal("target name")
            options = DictionaryAttr({})
            if parser.parse_optional_punctuation(","):
                pos = parser.pos
                attr = parser.parse_attribute()
                if not isinstance(attr, DictionaryAttr):
                    parser.raise_error("expected a dictionary of target options", pos)
                options = attr
        return (StringAttr(name), options)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f'<"{self.target_name.data}"')
        if self.options.data:
            printer.print_string(", ")
            printer.print_attribute(self.options)
        printer.print_string(">")


def codegen_target(op: Operation) -> str | None:
    """The target that claimed `op` (its `lamina.codegen`), if any."""
    attr = op.attributes.get(CODEGEN_ATTR_NAME)
    return attr.data if isinstance(attr, StringAttr) else None


Lamina = Dialect(
    "lamina",
    [],
    [PhaseAttr, DeviceAttr, UndefAttr, ConstraintAttr, TargetAttr],
)
