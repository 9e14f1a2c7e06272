"""`lower-claimed`: a target lowers the graph ops and functions it claimed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from lamina.core.diagnostics import Diagnostic, DiagnosticError
from lamina.core.pass_base import LaminaPass
from lamina.dialects.lamina import Phase, codegen_target


@dataclass(frozen=True)
class LowerClaimedPass(LaminaPass):
    """Call target `target`'s lowering on every op or function it claimed (`lamina.codegen`).

    The lowering half of a target's claim hook: what `claim-ops` marked is
    lowered by the target itself, bypassing te (to a `graph.call_loop` of a
    kernel it adds, a `graph.call_extern` of a library, ...). The pipeline
    inserts `lower-claimed{target=T}` at the `lowering` hook point, before
    `lower-te`.

    Input invariant: phase lowering (after `legalize`, which leaves claimed
    ops alone).
    Output IR: every op claimed by `target` replaced by what the target's
    `lower` builds; other ops untouched.
    Invariants: no op claimed by `target` survives (one that does is
    reported at the op, naming the target); the phase stays lowering. A
    plugin's `lower` that raises is a diagnostic at the op naming the
    target and its package.
    """

    name = "lower-claimed"

    phases: ClassVar[frozenset[Phase]] = frozenset({Phase.LOWERING})
    requires: ClassVar[tuple[str, ...]] = ("claim-ops", "legalize")

    target: str = "cpu"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from lamina.target.registry import call_target_hook, get_target

        target = get_target(self.target)
        if target.lower is None:
            return
        for claimed in self._claimed(op):
            if _inside(claimed, op):  # not removed while lowering an earlier claim
                call_target_hook(target, "lower", claimed)
        left = self._claimed(op)
        if left:
            raise DiagnosticError(
                Diagnostic(
                    f"target '{target.name}' claimed '{claimed.name}' but did not lower it",
                    claimed,
                )
                for claimed in left
            )

    def _claimed(self, module: ModuleOp) -> list:
        return [
            op for op in module.walk() if op is not module and codegen_target(op) == self.target
        ]


def _inside(op: Operation, module: ModuleOp) -> bool:
    """Whether `op` is still in `module` (a claimed function takes its claimed ops along)."""
    current = op.parent_op()
    while current is not None and current is not module:
        current = current.parent_op()
    return current is module
