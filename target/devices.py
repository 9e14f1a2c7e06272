"""Which device kinds this build compiles, and the compile-time refusal of the others.

The IR may place work on any known device kind (`plan-devices`, `lamina-opt`
plan and lower IR for a `gpu` too); only a kind some registered target
compiles can become code. `lamina.compile`, `lamina-run` and
`lamina-compile` refuse the others when placements are final
(`with_device_check`), `lower-to-llvm` again before writing host code.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from lamina.core.devices import DEVICE_PROPS, named_devices
from lamina.core.diagnostics import Diagnostic, DiagnosticError
from lamina.core.walk import preorder
from lamina.dialects.lamina import DEFAULT_DEVICE_ATTR_NAME, DeviceAttr
from lamina.target.registry import get_target, target_names

IR_ONLY_DEVICE_KINDS = ("gpu",)
"""Kinds the IR may name (plan, print, lower to the lowering phase) without a
target able to compile them on this machine."""


def usable_device_kinds() -> frozenset[str]:
    """Device kinds some registered target compiles (default: only `cpu`, the host).

    The kinds the registered targets declare (`Target.device_kind`), and the
    host CPU's.
    """
    return frozenset({"cpu", *(get_target(name).device_kind for name in target_names())})


def known_device_kinds() -> frozenset[str]:
    """Kinds the IR may name: the usable ones plus IR-only kinds such as `gpu`."""
    return usable_device_kinds() | frozenset(IR_ONLY_DEVICE_KINDS)


def check_usable_devices(module: ModuleOp) -> None:
    """Refuse, at compile time, a module placing work on a device kind no target compiles.

    One diagnostic per unusable kind, at its first op, naming the kind and
    every op placed on it (so a user sees what would have run where).
    """
    usable = usable_device_kinds()
    placed: dict[str, list[Operation]] = {}
    default = module.attributes.get(DEFAULT_DEVICE_ATTR_NAME)
    if isinstance(default, DeviceAttr) and default.kind.data not in usable:
        placed.setdefault(default.kind.data, [])
    for op in preorder(module):
        if _NAMING_PROPERTIES.isdisjoint(op.properties) and _DEVICE_ATTRIBUTES.isdisjoint(
            op.attributes
        ):
            continue  # most ops name no device: `named_devices` would build an empty list
        for device in named_devices(op):
            if device.kind.data not in usable:
                ops = placed.setdefault(device.kind.data, [])
                if not ops or ops[-1] is not op:
                    ops.append(op)
    if not placed:
        return
    diagnostics = []
    for kind, ops in placed.items():
        names = ", ".join(_describe(op) for op in ops[:8]) + (" ..." if len(ops) > 8 else "")
        message = (
            f"cannot compile for device kind '{kind}': no usable target compiles it "
            f"(usable device kinds: {', '.join(sorted(usable))}); "
            f"ops placed on '{kind}': {names or 'everything (lamina.default_device)'}"
        )
        anchor = next(
            (o for o in ops if not o.name.endswith((".func", "copy"))), ops[0] if ops else module
        )
        diagnostics.append(Diagnostic(message, anchor))
    raise DiagnosticError(diagnostics)


_DEVICE_ATTRIBUTES = frozenset(DEVICE_PROPS)
_NAMING_PROPERTIES = _DEVICE_ATTRIBUTES | {"arg_attrs", "res_attrs"}
"""The properties `named_devices` reads (the attributes: `DEVICE_PROPS` only)."""


class RequireUsableDevices(ModulePass):
    """Not a pipeline step: `lamina.compile`/`lamina-run`/`lamina-compile` insert
    it where placements are final (before `legalize`) to refuse, at compile
    time, devices no target compiles (`lamina-opt` does not: IR for any
    known device kind may be planned and lowered)."""

    name = "require-usable-devices"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        check_usable_devices(op)


def with_device_check(passes: Sequence[ModulePass]) -> list[ModulePass]:
    """`passes` with `RequireUsableDevices` right after `plan-devices` (devices
    are planned, ops not yet fused or legalized), else before `legalize`, else
    before `lower-to-llvm`, else first. A module already in phase build (no
    passes left) was checked by `lower-to-llvm` itself."""
    if not passes:
        return []
    names = [p.name for p in passes]
    if "plan-devices" in names:  # right after planning: ops still as the user wrote them
        at = names.index("plan-devices") + 1
    else:
        at = next((names.index(n) for n in ("legalize", "lower-to-llvm") if n in names), 0)
    return [*passes[:at], RequireUsableDevices(), *passes[at:]]


def _describe(op: Operation) -> str:
    from lamina.core.diagnostics import location_of

    loc = location_of(op)
    sym = op.properties.get("sym_name")
    name = f"{op.name} @{sym.data}" if isinstance(sym, StringAttr) else op.name
    return f"{name} ({loc})" if loc else name


__all__ = [
    "IR_ONLY_DEVICE_KINDS",
    "RequireUsableDevices",
    "check_usable_devices",
    "known_device_kinds",
    "usable_device_kinds",
    "with_device_check",
]
