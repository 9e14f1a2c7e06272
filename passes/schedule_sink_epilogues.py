"""`schedule-sink-epilogues`: an elementwise epilogue joins the register blocks of its matmul or convolution (one rule of `schedule`; see `schedule/epilogue_sinking.py`)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from lamina.schedule.epilogue_sinking import sink_epilogues
from lamina.schedule.pass_options import EpilogueSinkOptions, ScheduleRulePass


@dataclass(frozen=True)
class ScheduleSinkEpiloguesPass(ScheduleRulePass, EpilogueSinkOptions):
    """Fuse an elementwise epilogue into the column-blocked reduction before it, block by block.

    Input invariant: phase `lowering`; loop functions.
    Output IR: a loop nest `for i { for j kind(vectorized) {...} }` that
    directly follows a column-blocked reduction (`for jo step NR { for io
    step MR {...} }`, as `schedule-register-block` leaves a matmul), covers
    the same M x N elements and reads what the reduction writes only at its
    own element, is tiled by (MR, NR) and fused into it: each register block
    applies its epilogue (bias, activation, residual) right after its
    reduction, its MR rows jammed into one vectorized loop; the block of the
    M mod MR tail rows that follows the row blocks inside the column block
    gets its own part. An epilogue longer than `epilogue_jam_max_ops`
    (a `math` function counting 30) keeps its MR rows as a loop inside
    the block, jamming the fewest rows dividing MR that hold
    `epilogue_step_vectors` vectors per step: its code once per step, not
    once per row. A row-block loop whose blocks span whole rows
    (`for io step MR { fill; reduce }`, a channel-blocked convolution's
    output columns) takes an epilogue over the same rows split by MR alone.
    The pair stays as it was when a reduction iteration touches anything
    outside its tile, or N has a tail. Functions with `lamina.schedule`
    directives are left alone.
    Invariants: every element is computed by the same operations; an
    element's epilogue runs after its reduction has finished.
    """

    name = "schedule-sink-epilogues"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        knobs = self.knobs(op)
        for func in self.default_scheduled(op):
            sink_epilogues(func, self.function_knobs(func, knobs))


__all__ = ["ScheduleSinkEpiloguesPass"]
