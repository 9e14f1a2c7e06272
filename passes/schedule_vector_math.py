"""`schedule-vector-math`: f32 `exp` and `tanh` become vectorizable polynomials (one rule of `schedule`; see `schedule/vector_math.py`)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from lamina.dialects import loop
from lamina.schedule.pass_options import ScheduleRulePass
from lamina.schedule.vector_math import expand_transcendentals


@dataclass(frozen=True)
class ScheduleVectorMathPass(ScheduleRulePass):
    """Expand f32 `math.exp` and `math.tanh` in loop functions into polynomials LLVM vectorizes.

    Input invariant: phase `lowering`; loop functions.
    Output IR: every f32 `math.exp` / `math.tanh` in a `loop.func` is
    replaced by arithmetic (Cephes' single-precision algorithms; other
    types keep the libm call), in functions with directives too.
    Invariants: results within 2 ulp on the normal range; NaN propagates;
    the clamped range gives 0 / +inf as expf.
    """

    name = "schedule-vector-math"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for func in [f for f in op.walk() if isinstance(f, loop.FuncOp)]:
            expand_transcendentals(func)


__all__ = ["ScheduleVectorMathPass"]
