"""`schedule-split-borders`: window loops split into border strips and a guard-free interior (one rule of `schedule`; see `schedule/border_split.py`)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from lamina.schedule.border_split import split_borders
from lamina.schedule.pass_options import ScheduleRulePass


@dataclass(frozen=True)
class ScheduleSplitBordersPass(ScheduleRulePass):
    """Index-set splitting of the loops whose window guards an interior range decides.

    Input invariant: phase `lowering`; loop functions.
    Output IR: a serial loop with constant bounds and step 1 whose body
    guards a value (`select`) on comparisons of a linear form in its variable
    and in the variable of a loop inside it (a window's tap) with a constant
    is three loops: the border strips before and after, guards kept, and
    the interior, where every such guard holds for every tap (`simplify`
    then removes them). In such a sum over the taps whose innermost loops
    are vectorized loops over the lanes, one vectorized loop goes around the
    taps (those of at most 9 iterations together: a 3x3 window whole, a row
    of a 5x5 one), which become `unrolled`, and takes in the vectorized loop
    before it that zeroes the same accumulators: one lane loop per piece
    reaches LLVM instead of one per tap. Functions with `lamina.schedule`
    directives are left alone.
    Invariants: each output element sees the same operations in the same
    order, so the results are unchanged.
    """

    name = "schedule-split-borders"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for func in self.default_scheduled(op):
            split_borders(func)


__all__ = ["ScheduleSplitBordersPass"]
