"""User directives: a `lamina.schedule = "<primitive>"` attribute on a loop.

A loop carrying `lamina.schedule = "<primitive>"` is transformed by that
primitive instead (see `schedule/primitives.py`; the function then gets no
default schedule): `split(F)`, `interchange`, `fuse` (with the next loop),
`unroll`, `unroll_and_jam`, `vectorize`, `parallel`, `pack(N)` (copy the
tile of the function's argument N the nest reads into a local buffer) and
`register_block` (the default micro-kernel on this loop, as L above).
"""

from __future__ import annotations

import re

from lamina.dialects import loop
from lamina.schedule import primitives as prim
from lamina.schedule.primitives import ScheduleError
from lamina.schedule.register_block import ReductionNest, choose_block, register_block
from lamina.target.cpu_facts import CpuFacts
from lamina.target.schedule_knobs import ScheduleKnobs

DIRECTIVE_ATTR = "lamina.schedule"
"""Discardable attribute on a `loop.for`: the primitive to apply to it."""


def directed_loops(func: loop.FuncOp) -> list[loop.ForOp]:
    """The loops of `func` carrying a directive (a function with any gets no default schedule)."""
    return [o for o in func.walk() if isinstance(o, loop.ForOp) and DIRECTIVE_ATTR in o.attributes]


_DIRECTIVE = re.compile(r"^\s*(\w+)\s*(?:\(\s*(\d+)\s*\))?\s*$")


def apply_directive(op: loop.ForOp, text: str, facts: CpuFacts, knobs: ScheduleKnobs) -> None:
    """Apply one `lamina.schedule` directive to its loop (ScheduleError if it cannot)."""
    match = _DIRECTIVE.match(text)
    if match is None:
        raise ScheduleError(f"cannot parse schedule directive '{text}'")
    name, arg = match.group(1), match.group(2)
    needs_arg = {"split", "pack"}
    if (name in needs_arg) != (arg is not None):
        raise ScheduleError(
            f"'{name}' takes {'one integer argument' if name in needs_arg else 'no argument'}"
        )
    if name == "split":
        prim.split(op, int(arg))
    elif name == "pack":
        func = _enclosing_func(op)
        index = int(arg)
        if index >= len(func.body.blocks[0].args):
            raise ScheduleError(f"pack: the function has no argument {index}")
        prim.pack(op, func.body.blocks[0].args[index])
    elif name == "fuse":
        second = op.next_op
        if not isinstance(second, loop.ForOp):
            raise ScheduleError("fuse needs a loop right after this one")
        prim.fuse(op, second)
    elif name == "register_block":
        _register_block_directive(op, facts, knobs)
    elif name in _SIMPLE:
        _SIMPLE[name](op)
    else:
        known = ", ".join(sorted({"split", "pack", "fuse", "register_block", *_SIMPLE}))
        raise ScheduleError(f"unknown schedule primitive '{name}' (known: {known})")


_SIMPLE = {
    "interchange": prim.interchange,
    "unroll": prim.unroll,
    "unroll_and_jam": prim.unroll_and_jam,
    "vectorize": prim.vectorize,
    "parallel": prim.parallelize,
}


def _register_block_directive(op: loop.ForOp, facts: CpuFacts, knobs: ScheduleKnobs) -> None:
    nest = ReductionNest.match(op)
    if nest is None:
        raise ScheduleError(
            "register_block needs a loop holding a vectorized fill loop and a "
            "reduction nest ending in a vectorized loop with the same bounds"
        )
    shape = choose_block(
        prim.trip_count(op), prim.trip_count(nest.fill), nest.element_bits(), facts, knobs
    )
    if shape is None:
        raise ScheduleError("register_block: the rows are too short to block")
    register_block(nest, shape, facts.cores, knobs)


def _enclosing_func(op: loop.ForOp) -> loop.FuncOp:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, loop.FuncOp):
        parent = parent.parent_op()
    if parent is None:
        raise ScheduleError("the loop is not inside a loop.func")
    return parent


__all__ = ["DIRECTIVE_ATTR", "apply_directive", "directed_loops"]
