"""`target-hook`: run one pass a target registered at a hook point, by position."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from lamina.core.pass_base import PRE_BUILD, LaminaPass
from lamina.dialects.lamina import Phase


@dataclass(frozen=True)
class TargetHookPass(LaminaPass):
    """Run the pass at position `index` of target `target`'s hook point `point`.

    A target may give a hook as a pass *instance* whose class is registered
    nowhere (`Target(hooks={"build": [MyPass(tag="x")]})`), so its own name
    cannot be replayed with `-p`. The pipeline names such a hook
    `target-hook{target=T point=P index=N}` instead, in `--print-pipeline`'s
    `-p` line and in reproducers: running that spec asks the target (loaded
    by name, like `--target`) for the same instance and runs it as the
    pipeline does, under the same contract and with the same diagnostics.

    Input invariant: a phase the hooked pass runs in (every phase before
    build for a plain xDSL pass); `target` is a registered target with at
    least `index + 1` passes at hook point `point`.
    Output IR: what the hooked pass makes of the module.
    Invariants: those of the hooked pass; a failure names the pass, the
    target and the hook point.
    """

    name = "target-hook"

    phases: ClassVar[frozenset[Phase]] = PRE_BUILD

    target: str = "cpu"
    point: str = "optimization"
    index: int = 0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from lamina.core.pass_manager import check_pass_phase
        from lamina.target.hooks import hook_pass

        hook = hook_pass(self.target, self.point, self.index, op)
        check_pass_phase(hook, op)
        hook.apply(ctx, op)
