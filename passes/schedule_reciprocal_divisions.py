"""`schedule-reciprocal-divisions`: a division by a loop-invariant value is marked `arcp` (one rule of `schedule`; see `schedule/reciprocal_divisions.py`)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from lamina.schedule.pass_options import ScheduleRulePass
from lamina.schedule.reciprocal_divisions import reciprocal_divisions


@dataclass(frozen=True)
class ScheduleReciprocalDivisionsPass(ScheduleRulePass):
    """Mark `fastmath<arcp>` the float divisions of a vectorized loop by a value invariant in it.

    Input invariant: phase `lowering`; loop functions.
    Output IR: each `arith.divf` directly in a vectorized loop whose divisor
    cannot change between its iterations carries `arcp` (LLVM multiplies by
    one reciprocal). Functions with `lamina.schedule` directives are left
    alone.
    Invariants: results within an ulp of the divisions.
    """

    name = "schedule-reciprocal-divisions"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for func in self.default_scheduled(op):
            reciprocal_divisions(func)


__all__ = ["ScheduleReciprocalDivisionsPass"]
