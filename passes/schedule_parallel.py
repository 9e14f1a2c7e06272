"""`schedule-parallel`: `parallel` moves from a one-iteration loop to the spatial loop it holds (one rule of `schedule`; see `schedule/parallel.py`)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from lamina.schedule.parallel import balance_parallel
from lamina.schedule.pass_options import ParallelOptions, ScheduleRulePass


@dataclass(frozen=True)
class ScheduleParallelPass(ScheduleRulePass, ParallelOptions):
    """Balance the thread team: a parallel loop of one iteration hands `parallel` to the loop it holds; a panel-packed matrix-vector product shares its columns; a small spatial nest is shared with a call's thread team only.

    Input invariant: phase `lowering`; loop functions.
    Output IR: a top-level `parallel` loop of one iteration holding only a
    serial loop with at least `parallel_min_iterations_per_core` iterations
    per core, whose iterations write disjoint elements, becomes serial and
    that loop parallel (nothing with one core); a serial reduction nest
    whose innermost vectorized loop reads a matrix stored in panels of W
    columns (a batch-1 classifier, `kernels/linalg.py`) has that loop split
    by W and the blocks moved outermost, parallel with two cores or more;
    with two cores or more, a top-level serial spatial nest (or one whose
    iterations of step S write disjoint blocks of S elements) that reads at
    least `parallel_team_min_work` tensor elements (a gathered read counting
    `parallel_gather_reads`) becomes `parallel` with the unit attribute
    `lamina.team_only` (shared only by a call's thread team; elsewhere it
    runs on the calling thread), on the loop inside a loop of one iteration,
    its rows shared too when it has few iterations; last, with two cores or
    more and `parallel_grain_work` above 0 (default 0), every parallel loop
    of a top-level nest that reads fewer tensor elements than that becomes
    serial (a region shorter than twice its fork/join cost).
    Functions with `lamina.schedule` directives are left alone.
    Invariants: the same operations on the same elements; only which thread
    runs an iteration changes.
    """

    name = "schedule-parallel"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        facts = self.facts(op)
        knobs = self.knobs(op)
        for func in self.default_scheduled(op):
            balance_parallel(func, facts.cores, self.function_knobs(func, knobs))


__all__ = ["ScheduleParallelPass"]
