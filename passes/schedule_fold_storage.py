"""`schedule-fold-storage`: a temporary keeps one slice along a serial loop that indexes it (one rule of `schedule`; see `schedule/storage_folding.py`)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from lamina.schedule.pass_options import ScheduleRulePass
from lamina.schedule.storage_folding import contract_temporaries


@dataclass(frozen=True)
class ScheduleFoldStoragePass(ScheduleRulePass):
    """Storage folding: drop a local temporary's dimensions that one serial loop indexes.

    Input invariant: phase `lowering`; loop functions.
    Output IR: a local, unconstrained temporary whose every access has, at
    position d, the induction variable of the same serial loop (not one
    around the allocation) loses dimension d; its accesses drop that index.
    Functions with `lamina.schedule` directives are left alone.
    Invariants: every value is read in the iteration that wrote it, so the
    results are unchanged.
    """

    name = "schedule-fold-storage"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for func in self.default_scheduled(op):
            contract_temporaries(func)


__all__ = ["ScheduleFoldStoragePass"]
