"""`schedule-write-through`: compute into the output instead of a temporary the epilogue copies (one rule of `schedule`; see `schedule/write_through.py`)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from lamina.schedule.pass_options import ScheduleRulePass
from lamina.schedule.write_through import write_through_output


@dataclass(frozen=True)
class ScheduleWriteThroughPass(ScheduleRulePass):
    """Replace a local temporary by the output argument its epilogue stores at the same indices.

    Input invariant: phase `lowering`; loop functions.
    Output IR: a local temporary whose every load feeds a store of one
    output argument at the same indices (or a store back to itself), with
    that output stored nowhere else and after every store to the
    temporary, is replaced by that output; its allocation and free are
    gone. Functions with `lamina.schedule` directives are left alone.
    Invariants: every output element ends with the same value.
    """

    name = "schedule-write-through"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for func in self.default_scheduled(op):
            write_through_output(func)


__all__ = ["ScheduleWriteThroughPass"]
