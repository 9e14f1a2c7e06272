"""Devices in the IR: what later passes ask about placement.

`plan-devices` writes its decisions into the IR (`device` on graph ops,
`device` in `arg_attrs`/`res_attrs`, `graph.device_copy` at boundaries), so
no pass needs a side input. This module is how the passes after it read and
keep that plan:

* `device_of(value)` — the device a tensor value lives on, read from its
  producer (or, for a parameter, from its function's `arg_attrs`);
* `carry_device(old, new_ops)` — a rewriter helper: replacement ops inherit
  the device of the op they replace, so a rewrite never loses a placement;
* `named_devices(op)` — every device an op names.

Which device kinds can be compiled is the targets' business
(target/devices.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, FunctionType, SymbolRefAttr
from xdsl.ir import Attribute, BlockArgument, Operation, OpResult, SSAValue

from lamina.core.symbols import lookup_symbol  # O(1): one lookup per call op
from lamina.dialects.lamina import (
    DEVICE_ATTR_NAME,
    DeviceAttr,
)

DEVICE_PROPS = ("device", "src", "dst")
"""Op properties that name a device (`graph.device_copy`/`loop.copy` have `src`/`dst`)."""


def device_of(value: SSAValue) -> DeviceAttr | None:
    """The device `value` lives on according to the IR, or None if it says nothing.

    A result lives where its producer ran (`device`; `dst` for a copy); a
    function parameter where its `arg_attrs` put it. After `plan-devices`
    every tensor value of a graph function has a device.
    """
    if isinstance(value, OpResult):
        op = value.op
        if op.name == "graph.call":  # each result is where the callee delivers it
            ref = op.properties["callee"]
            assert isinstance(ref, SymbolRefAttr), "graph.call's verifier checks its callee"
            callee = lookup_symbol(op, ref)
            found = None
            if callee is not None and callee.name == "graph.func":
                found = res_device(callee, value.index)
            elif callee is not None:  # already a host loop.func: outputs follow the inputs
                buffers = [v for v in op.operands if v.type.name != "graph.fn"]
                found = arg_device(callee, len(buffers) + value.index)
            if found is not None:
                return found
        name = "dst" if "dst" in op.properties and op.name.endswith("copy") else "device"
        attr = op.properties.get(name) or op.attributes.get(name)
        return attr if isinstance(attr, DeviceAttr) else None
    if isinstance(value, BlockArgument):
        owner = value.block.parent_op()
        if owner is not None and value.block is _entry_block(owner):
            return arg_device(owner, value.index)
    return None


def _entry_block(op: Operation):
    return op.regions[0].blocks.first if op.regions else None


def _attr_device(attrs: Attribute | None, index: int) -> DeviceAttr | None:
    if not isinstance(attrs, ArrayAttr) or index >= len(attrs.data):
        return None
    entry = attrs.data[index]
    if not isinstance(entry, DictionaryAttr):
        return None
    device = entry.data.get(DEVICE_ATTR_NAME)
    return device if isinstance(device, DeviceAttr) else None


def arg_device(func: Operation, index: int) -> DeviceAttr | None:
    """`device` of parameter `index` in a function's `arg_attrs`, if any."""
    return _attr_device(func.properties.get("arg_attrs"), index)


def res_device(func: Operation, index: int) -> DeviceAttr | None:
    """`device` of result `index` in a function's `res_attrs`, if any."""
    return _attr_device(func.properties.get("res_attrs"), index)


def op_device(op: Operation) -> DeviceAttr | None:
    """The `device` property of `op` (where it runs), if any."""
    attr = op.properties.get("device")
    return attr if isinstance(attr, DeviceAttr) else None


def carry_device(old: Operation, new_ops: Iterable[Operation]) -> None:
    """Give every replacement op that can carry `device` (and has none) the
    device of `old`: a rewrite must never lose a placement decision."""
    device = op_device(old)
    if device is None:
        return
    for op in new_ops:
        definition = getattr(op, "get_irdl_definition", None)
        if definition is None or "device" not in definition().properties:
            continue
        if op.properties.get("device") is None:
            op.properties["device"] = device


def with_device(
    attrs: ArrayAttr[DictionaryAttr] | None, count: int, devices: Sequence[DeviceAttr | None]
) -> ArrayAttr[DictionaryAttr] | None:
    """`arg_attrs`/`res_attrs` with `device` set to `devices[i]` (None: left as is)."""
    if attrs is None and all(d is None for d in devices):
        return None
    entries = list(attrs.data) if attrs is not None else [DictionaryAttr({})] * count
    for i, device in enumerate(devices):
        if device is not None:
            entries[i] = DictionaryAttr({**entries[i].data, DEVICE_ATTR_NAME: device})
    return ArrayAttr(entries)


def mark_kernel_device(kernel: Operation, device: DeviceAttr | None) -> None:
    """A kernel (`te.func`, later `loop.func`) learns its device: `device` on
    every parameter and result, so the buffers it reads and writes, and the
    target that compiles it, are known from the kernel alone."""
    if device is None:
        return
    ftype = kernel.properties["function_type"]
    assert isinstance(ftype, FunctionType)
    for key, count in (("arg_attrs", len(ftype.inputs)), ("res_attrs", len(ftype.outputs))):
        current = kernel.properties.get(key)
        assert current is None or isinstance(current, ArrayAttr)  # the func's verifier
        attrs = with_device(current, count, [device] * count)
        if attrs is not None:
            kernel.properties[key] = attrs


# ---------------------------------------------------------------------------
# Compile-time refusal of devices no target compiles
# ---------------------------------------------------------------------------


def named_devices(op: Operation) -> list[DeviceAttr]:
    """Every device `op` names: its device properties and arg/res attrs."""
    found = [
        attr
        for name in DEVICE_PROPS
        if isinstance(attr := op.properties.get(name) or op.attributes.get(name), DeviceAttr)
    ]
    for key in ("arg_attrs", "res_attrs"):
        attrs = op.properties.get(key)
        if isinstance(attrs, ArrayAttr):
            found += [d for i in range(len(attrs.data)) if (d := _attr_device(attrs, i))]
    return found


__all__ = [
    "arg_device",
    "carry_device",
    "device_of",
    "mark_kernel_device",
    "named_devices",
    "op_device",
    "res_device",
    "with_device",
]
