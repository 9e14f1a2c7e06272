"""`schedule`: the default loop schedules in order, or a function's `lamina.schedule` directives.

`lower-te` leaves each `te.compute` as a loop nest whose innermost loop walks
memory contiguously. `schedule` composes the rules of `lamina.schedule`,
each also a pass of its own, in this order (docs/internals.md):

0. `schedule-flatten-rows`: a pointwise convolution kernel's H x W pixels
   become one row of a 1 x H*W image, or as few rows as its threads share
   (`schedule/row_flattening.py`) -- first, so that every rule below sees
   the flat image;
1. index divisions that ranges make affine are rewritten (`simplify`'s
   rules), so that tiles and packed panels see sums of loop variables;
2. `schedule-gather-reuse`: a copy whose vectorized loop gathers reads the
   lines it gathers back to back (`schedule/gather_reuse.py`);
3. `schedule-split-borders` on the output columns of reduction nests: a
   window read in place (a depthwise convolution's taps) gets border
   strips and a guard-free interior (`schedule/border_split.py`) -- before
   register blocking, so that the interior is blocked without guards;
4. `schedule-register-block`: reductions that accumulate rows in memory
   become register-blocked micro-kernels, their column panels packed where
   it pays (`schedule/register_block.py`, `schedule/packing.py`) -- first,
   since fusing stages would hide the nests;
5. `schedule-fuse-stages`: adjacent loops over the same rows become one
   loop, one parallel region per kernel (`schedule/stage_fusion.py`), and
   a fused loop of stages each too small for a thread team gets one when
   together they are worth it (`team_for_fused_stages`, schedule/parallel.py);
6. `schedule-write-through`: a kernel computes into its output instead of a
   temporary its epilogue copies (`schedule/write_through.py`);
   `schedule-sink-epilogues`: an elementwise epilogue after a
   column-blocked matmul, or after a convolution's blocks of whole output
   rows, runs in each of its register blocks
   (`schedule/epilogue_sinking.py`); then the pointwise convolutions that step 4 marked get F output-channel blocks
   per input broadcast, their fused epilogues jammed with them
   (`schedule/register_block.py`, `jam_channel_blocks`), and prefetch the
   next step's weights (`conv_weight_prefetch`, `schedule/weight_prefetch.py`);
7. `schedule-split-borders` on every other loop (the output rows): after
   fusion and write-through, so that a row's epilogue is split with it;
   then each border piece of a sum read in place keeps one lane loop around
   its unrolled taps (`lanes_outside_taps`: LLVM sees one loop per piece,
   not one per tap);
8. `schedule-fold-storage`: a temporary keeps one slice along a serial loop
   that indexes it (`schedule/storage_folding.py`) -- after write-through:
   the output beats any temporary;
9. `schedule-parallel`: `parallel` moves from a one-iteration loop to the
   spatial loop it holds (`schedule/parallel.py`);
10. `schedule-reciprocal-divisions`: a division by a loop-invariant value
   in a vectorized loop is marked `arcp` (`schedule/reciprocal_divisions.py`);
11. `schedule-vector-math`: f32 `math.exp`/`math.tanh` become polynomials
   (`schedule/vector_math.py`), in every loop function.

A function with a loop carrying `lamina.schedule = "<primitive>"` gets its
directives applied instead of steps 0-10 (`schedule/directives.py`):
`split(F)`, `interchange`, `fuse` (with the next loop), `unroll`,
`unroll_and_jam`, `vectorize`, `parallel`, `pack(N)` (copy the tile of the
function's argument N the nest reads into a local buffer) and
`register_block` (the default micro-kernel on this loop).

Every threshold the rules use is a knob of `target/schedule_knobs.py`, overridable
here by an option of its name or by a target option.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr

from lamina.core.diagnostics import op_error
from lamina.dialects import loop
from lamina.passes.simplify import make_indices_affine
from lamina.schedule.border_split import split_borders
from lamina.schedule.directives import DIRECTIVE_ATTR, apply_directive, directed_loops
from lamina.schedule.epilogue_sinking import sink_epilogues
from lamina.schedule.gather_reuse import reuse_gathered_lines
from lamina.schedule.parallel import (
    balance_parallel,
    share_rows_before_folding,
    team_for_fused_stages,
)
from lamina.schedule.pass_options import (
    EpilogueSinkOptions,
    FlattenRowsOptions,
    GatherReuseOptions,
    RegisterBlockOptions,
    ScheduleRulePass,
)
from lamina.schedule.pixel_rows import flatten_nchw_pixels
from lamina.schedule.primitives import ScheduleError
from lamina.schedule.reciprocal_divisions import reciprocal_divisions
from lamina.schedule.register_block import block_reductions, jam_channel_blocks
from lamina.schedule.row_flattening import flatten_rows
from lamina.schedule.stage_fusion import fuse_row_stages
from lamina.schedule.storage_folding import contract_temporaries
from lamina.schedule.vector_math import expand_transcendentals
from lamina.schedule.write_through import write_through_output
from lamina.target.cpu_facts import CpuFacts
from lamina.target.schedule_knobs import ScheduleKnobs


def default_schedule(func: loop.FuncOp, facts: CpuFacts, knobs: ScheduleKnobs) -> None:
    """Steps 0-10 of the module docstring on one function without directives."""
    flatten_rows(func, facts.cores, knobs)  # first: every later rule sees the 1 x H*W image
    flatten_nchw_pixels(func, knobs)  # the same for an NCHW pointwise convolution
    make_indices_affine(func)
    reuse_gathered_lines(func, knobs)
    split_borders(func, columns_only=True)  # the interior columns are blocked guard-free
    block_reductions(func, facts, knobs)  # first: fusing stages would hide the nests
    fuse_row_stages(func)
    team_for_fused_stages(func, facts.cores, knobs)  # before storage folding
    write_through_output(func)
    sink_epilogues(func, knobs)  # after write-through: the epilogue writes the output
    jam_channel_blocks(func, knobs.conv_weight_prefetch)  # after fusion: epilogue jammed too
    split_borders(func)  # after both: a row's epilogue is split with it, into the output
    share_rows_before_folding(func, facts.cores, knobs, facts.l2_bytes)  # keeps its slices
    contract_temporaries(func)  # after: the output beats any temporary
    balance_parallel(func, facts.cores, knobs)
    reciprocal_divisions(func)


@dataclass(frozen=True)
class SchedulePass(
    ScheduleRulePass,
    RegisterBlockOptions,
    GatherReuseOptions,
    EpilogueSinkOptions,
    FlattenRowsOptions,
):
    """Loop schedules: the default rules in order, or `lamina.schedule` directives on request.

    Input invariant: phase `lowering`; loop nests as `lower-te` emits them.
    Output IR: each function without directives has gone through the rule
    passes in order (`schedule-flatten-rows`, `schedule-gather-reuse`,
    `schedule-split-borders` on reduction columns, `schedule-register-block`,
    `schedule-fuse-stages`,
    `schedule-write-through`, `schedule-sink-epilogues`, `schedule-split-borders`,
    `schedule-fold-storage`, `schedule-parallel`,
    `schedule-reciprocal-divisions`, after making index divisions affine; with
    two cores, rows of a parallel loop of few iterations are shared before
    storage folding too, where the slices kept fit the L2 cache);
    a function with directives has them applied and removed instead; every
    function's f32 `exp`/`tanh` are polynomials (`schedule-vector-math`).
    Invariants: every output element is computed by the same operations in
    the same order (a division by a loop-invariant value may become a
    multiplication by its reciprocal, within an ulp); a directive that
    cannot apply is a diagnostic at its loop.
    """

    name = "schedule"

    default: bool = True
    """Apply the default schedules to functions without directives."""
    polynomial_math: bool = True
    """Expand f32 `math.exp`/`math.tanh` into vectorizable polynomials (`schedule-vector-math`)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        facts = self.facts(op)
        knobs = self.knobs(op)
        for func in [f for f in op.walk() if isinstance(f, loop.FuncOp)]:
            if func.is_declaration:  # an external function: nothing to schedule
                continue
            directed = directed_loops(func)
            func_knobs = self.function_knobs(func, knobs)
            if directed:
                for loop_op in directed:
                    self._apply_directive(loop_op, facts, func_knobs)
            elif self.default:
                default_schedule(func, facts, func_knobs)
            if self.polynomial_math:
                expand_transcendentals(func)

    @staticmethod
    def _apply_directive(op: loop.ForOp, facts: CpuFacts, knobs: ScheduleKnobs) -> None:
        attr = op.attributes.pop(DIRECTIVE_ATTR)
        if not isinstance(attr, StringAttr):
            raise op_error(op, f"'{DIRECTIVE_ATTR}' must be a string attribute")
        try:
            apply_directive(op, attr.data, facts, knobs)
        except ScheduleError as err:
            raise op_error(op, f"schedule: {err}") from None


__all__ = ["SchedulePass", "default_schedule"]
