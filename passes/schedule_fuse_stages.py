"""`schedule-fuse-stages`: adjacent loops over the same rows become one loop (one rule of `schedule`; see `schedule/stage_fusion.py`)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from lamina.schedule.parallel import team_for_fused_stages
from lamina.schedule.pass_options import ScheduleRulePass
from lamina.schedule.stage_fusion import fuse_row_stages


@dataclass(frozen=True)
class ScheduleFuseStagesPass(ScheduleRulePass):
    """Fuse adjacent top-level loops over the same rows into one loop (one parallel region per kernel).

    Input invariant: phase `lowering`; loop functions.
    Output IR: two adjacent loops with the same bounds whose shared buffers
    are accessed, in both, only at one fixed index position holding the
    loop's induction variable become one loop (recursively inside); a
    serial stage fused with a parallel one runs in the parallel loop; a
    fused loop of serial stages that together read `parallel_min_work`
    tensor elements, is spatial and has enough iterations per core becomes
    parallel (nothing with one core);
    allocations and constants move before the first loop, frees before the
    terminator. Functions with `lamina.schedule` directives are left alone.
    Invariants: every element is computed by the same operations; iteration
    i of the fused loop only needs iteration i of the first stage.
    """

    name = "schedule-fuse-stages"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        facts = self.facts(op)
        knobs = self.knobs(op)
        for func in self.default_scheduled(op):
            fuse_row_stages(func)
            team_for_fused_stages(func, facts.cores, self.function_knobs(func, knobs))


__all__ = ["ScheduleFuseStagesPass"]
