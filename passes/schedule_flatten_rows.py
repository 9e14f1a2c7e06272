"""`schedule-flatten-rows`: a 1x1 convolution's image as one row of H*W pixels (one rule of `schedule`; see `schedule/row_flattening.py`)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from lamina.schedule.pass_options import FlattenRowsOptions, ScheduleRulePass
from lamina.schedule.pixel_rows import flatten_nchw_pixels
from lamina.schedule.row_flattening import flatten_rows


@dataclass(frozen=True)
class ScheduleFlattenRowsPass(ScheduleRulePass, FlattenRowsOptions):
    """Run the pixels of a pointwise convolution kernel as one row of a 1 x H*W image.

    Input invariant: phase `lowering`; loop nests as `lower-te` emits them.
    Output IR: a function whose image rows have at most `conv_flatten_rows`
    columns (the knob: the target's default, or this pass's option) and
    whose every access to its rank-5 pixel buffers `[N, C/c, H, W, c]` indexes rows and columns by the loop
    variables of a rows-columns nest, one of which holds a reduction over
    jammed output-channel blocks, has those nests merged into one loop over
    the `H*W` pixels -- or, on several `cores` with few output-channel
    steps, G rows of `H*W/G` (the fewest that leave the parallel loop
    `parallel_collapse_below` iterations; none when that takes H); its
    parameters among those buffers are read and written through a
    `loop.reshape` to `[N, C/c, G, H*W/G, c]`, its temporaries allocated in
    that shape. Functions with `lamina.schedule` directives are left alone.
    An NCHW pointwise convolution (rank-4 buffers `[N, C, H, W]`, a matrix
    product of its weights by the pixels) on an image of at least
    `conv_nchw_flat_pixels` pixels gets one row of `H*W` the same way
    (`schedule/pixel_rows.py`). Invariants: every output element is computed by the same operations in
    the same order; the function's signature is unchanged.
    """

    name = "schedule-flatten-rows"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        cores, knobs = self.facts(op).cores, self.knobs(op)
        for func in self.default_scheduled(op):
            func_knobs = self.function_knobs(func, knobs)
            flatten_rows(func, cores, func_knobs)
            flatten_nchw_pixels(func, func_knobs)


__all__ = ["ScheduleFlattenRowsPass"]
