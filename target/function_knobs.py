"""Knobs for one kernel: the `lamina.knobs` attribute of its function overrides the module's.

`apply-records` (passes/apply_records.py) writes the knob values a tuning
record holds onto the kernel's `loop.func` as `lamina.knobs = {block_rows =
4 : i64, block_vector_choices = array<i64: 1>}`; `schedule` (through
`function_knobs`) and `lower-to-llvm` (through `op_knobs`, which looks for
the attribute on the op's enclosing operations) read them for that kernel
only. A hand-written attribute works the same way, so a kernel's knobs can be
tried without a records file.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from xdsl.dialects.builtin import DenseArrayBase, DictionaryAttr, IntegerAttr, i64
from xdsl.ir import Attribute, Operation

from lamina.target.schedule_knobs import KNOB_NAMES, ScheduleKnobs, check_knob

KNOBS_ATTR = "lamina.knobs"
"""Function attribute: knob values for this function only (a dictionary)."""


class KnobsAttrError(ValueError):
    """A `lamina.knobs` attribute naming an unknown knob or holding an impossible value."""


def knobs_attr(knobs: Mapping[str, Any]) -> DictionaryAttr:
    """The attribute form of `knobs` (integers as i64, tuples as i64 arrays), sorted by name."""
    entries: dict[str, Attribute] = {}
    for name, value in sorted(knobs.items()):
        if isinstance(value, tuple | list):
            entries[name] = DenseArrayBase.from_list(i64, [int(v) for v in value])
        else:
            entries[name] = IntegerAttr(int(value), i64)
    return DictionaryAttr(entries)


def knobs_of_attr(attr: Attribute) -> dict[str, Any]:
    """The knob values of a `lamina.knobs` attribute; KnobsAttrError says what is wrong."""
    if not isinstance(attr, DictionaryAttr):
        raise KnobsAttrError(f"'{KNOBS_ATTR}' must be a dictionary of knob values")
    values: dict[str, Any] = {}
    for name, entry in attr.data.items():
        if name not in KNOB_NAMES:
            raise KnobsAttrError(f"'{KNOBS_ATTR}': unknown knob '{name}'")
        if isinstance(entry, DenseArrayBase):
            value: Any = tuple(int(v) for v in entry.get_values())
        elif isinstance(entry, IntegerAttr):
            value = entry.value.data
        else:
            raise KnobsAttrError(f"'{KNOBS_ATTR}': knob '{name}' must be an integer or array")
        why = check_knob(name, value)
        if why is not None:
            raise KnobsAttrError(f"'{KNOBS_ATTR}': knob '{name}' {why}, not {value}")
        values[name] = value
    return values


def function_knobs(op: Operation, knobs: ScheduleKnobs) -> ScheduleKnobs:
    """`knobs` with the `lamina.knobs` of `op` or its nearest enclosing operation applied."""
    current: Operation | None = op
    while current is not None:
        attr = current.attributes.get(KNOBS_ATTR)
        if attr is not None:
            return knobs.replace(**knobs_of_attr(attr))
        current = current.parent_op()
    return knobs


__all__ = ["KNOBS_ATTR", "KnobsAttrError", "function_knobs", "knobs_attr", "knobs_of_attr"]
