"""`schedule-gather-reuse`: a copy that gathers reads the lines it gathers back to back (one rule of `schedule`; see `schedule/gather_reuse.py`)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from lamina.schedule.gather_reuse import reuse_gathered_lines
from lamina.schedule.pass_options import GatherReuseOptions, ScheduleRulePass


@dataclass(frozen=True)
class ScheduleGatherReusePass(ScheduleRulePass, GatherReuseOptions):
    """Reorder a copy whose vectorized loop gathers so that gathers sharing cache lines run back to back.

    Input invariant: phase `lowering`; loop functions.
    Output IR: a top-level perfect nest ending in a vectorized loop, whose
    loops write disjoint elements and read nothing they write, and one of
    whose loads has its last index driven by a loop two or more levels out
    (directly or modulo a period of at most one line, `gather_line_bytes`),
    has that loop split by the period and its inner part moved just
    outside the vectorized loop. Functions with `lamina.schedule`
    directives are left alone.
    Invariants: the same elements written with the same values (the nest
    only permutes independent iterations).
    """

    name = "schedule-gather-reuse"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        knobs = self.knobs(op)
        for func in self.default_scheduled(op):
            reuse_gathered_lines(func, self.function_knobs(func, knobs))


__all__ = ["ScheduleGatherReusePass"]
