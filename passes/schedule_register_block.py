"""`schedule-register-block`: reductions that accumulate rows in memory become register-blocked micro-kernels (one rule of `schedule`; see `schedule/register_block.py, schedule/packing.py`)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from lamina.schedule.pass_options import RegisterBlockOptions, ScheduleRulePass
from lamina.schedule.register_block import block_reductions, jam_channel_blocks


@dataclass(frozen=True)
class ScheduleRegisterBlockPass(ScheduleRulePass, RegisterBlockOptions):
    """Register-blocked micro-kernels for row-accumulating reductions, column panels packed where it pays.

    Input invariant: phase `lowering`; loop nests as `lower-te` emits them
    (`L { fill; reduction }` with a vectorized row loop), indices affine.
    Output IR: each such nest whose rows share the row's loads (a matmul's
    B[k, j]; a convolution's output channels, moved inside its rows) is
    split into row blocks of MR and column blocks of NR (sizes from the
    target's vector width and registers, `block_*` knobs), the MR rows
    jammed into the vectorized loop; with column blocks, the column-block
    loop goes outermost (parallel when there are enough for every core)
    and the operands read along the row are packed into contiguous panels
    where it pays (`pack_*` knobs). A channel-blocked pointwise
    convolution whose output row is longer than one register block has its
    output-channel-block loop split by F and the F blocks jammed into the
    rows (`conv_channel_jam*` knobs): one input broadcast feeds F FMAs, and
    an unchunked jammed pointwise convolution prefetches the next step's
    weights (`conv_weight_prefetch`, `loop.prefetch`).
    Functions with `lamina.schedule` directives are left alone.
    Invariants: every output element is accumulated by the same operations
    in the same order.
    """

    name = "schedule-register-block"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        facts = self.facts(op)
        knobs = self.knobs(op)
        for func in self.default_scheduled(op):
            func_knobs = self.function_knobs(func, knobs)
            block_reductions(func, facts, func_knobs)
            jam_channel_blocks(func, func_knobs.conv_weight_prefetch)


__all__ = ["ScheduleRegisterBlockPass"]
