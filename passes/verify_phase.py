"""`verify-phase`: the phase invariants of core/phase_invariants.py as a pass.

The checker itself lives in `core/` because the pass manager runs it after
every phase transition; this pass lets a pipeline (or a FileCheck test) run
it at any point.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from lamina.core.diagnostics import DiagnosticError
from lamina.core.pass_base import ALL_PHASES, LaminaPass
from lamina.core.phase_invariants import check_phase
from lamina.dialects.lamina import Phase


@dataclass(frozen=True)
class VerifyPhasePass(LaminaPass):
    """Check the phase invariants of the module's phase (or of `phase`).

    Input invariant: none (runs in every phase).
    Output IR: unchanged.
    Invariants: fails with one diagnostic per violation, at the offending op,
    naming the phase, the invariant's number and the fix:
    `phase 'lowering' invariant 4 violated: 'graph.dataflow' is not allowed
    from phase lowering on (run legalize to flatten dataflow blocks)`.
    The invariants, for phase >= [phase]:
      1. [optimization] no `graph.lambda` (except in `lamina.codegen` code);
      2. [optimization] every `graph.closure` names a top-level `graph.func`;
      3. [optimization] only builtin, graph, te, loop, llvm, arith and math ops;
      4. [lowering] no `graph.dataflow` (except in `lamina.codegen` code);
      5. [lowering] no graph compute op (`GraphCompute`), except claimed ones;
      6. [lowering] every `graph.func` is `impure` or `force_pure`;
      7. [lowering] no `graph.call_extern` or `graph.invoke` carries `pure`;
      8. [build] only `builtin.module` and `llvm.*` ops (subsumes the others);
      9. [ingestion] a `graph.dataflow` block holds only pure ops;
     10. [ingestion] a pure `graph.func` calls nothing impure.
    """

    name = "verify-phase"
    phases = ALL_PHASES

    phase: str | None = None
    """Check this phase's invariants instead of the module's `lamina.phase`."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        try:
            phase = Phase.from_label(self.phase) if self.phase is not None else None
        except ValueError as err:
            raise DiagnosticError(f"verify-phase: {err}", op) from None
        diagnostics = check_phase(op, phase)
        if diagnostics:
            raise DiagnosticError(diagnostics)
