"""`claim-ops`: a target marks the graph ops and functions it will lower itself."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr

from lamina.core.diagnostics import Diagnostic, DiagnosticError
from lamina.core.pass_base import LaminaPass
from lamina.dialects.lamina import CODEGEN_ATTR_NAME, Phase, codegen_target


@dataclass(frozen=True)
class ClaimOpsPass(LaminaPass):
    """Mark every graph op or `graph.func` that target `target` claims with `lamina.codegen`.

    The claim hook of a target (docs/extending.md): a target (e.g. `cblas`) decides, op by op,
    what it lowers itself instead of legalize and te; the decision is written
    into the module (`lamina.codegen = "<target>"`), so later passes and a
    re-run of the pipeline see it without side inputs. The pipeline inserts
    `claim-ops{target=T}` at the `claim` hook point (before fusion and
    layout planning) of every target that has a claim hook; `lower-claimed{target=T}` lowers the claims.

    Input invariant: phase ingestion or optimization; `target` is a
    registered target (see docs/extending.md).
    Output IR: the same ops, claimed ones carrying
    `lamina.codegen = "<target>"`. Ops are visited in IR order, so a claim may
    depend on an earlier one (cblas claims a bias `add` after a claimed
    `matmul`).
    Invariants: no op is added, removed or moved. An op another target
    already claimed is not taken over: the later claim is refused with a
    diagnostic naming both targets. A plugin's `claim` that raises is a
    diagnostic at the op naming the target and its package.
    """

    name = "claim-ops"

    phases: ClassVar[frozenset[Phase]] = frozenset({Phase.INGESTION, Phase.OPTIMIZATION})

    target: str = "cpu"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from lamina.target.registry import call_target_hook, get_target

        target = get_target(self.target)
        if target.claim is None:
            return
        refused = []
        for candidate in op.walk():
            if candidate is op or candidate.dialect_name() != "graph":
                continue
            if not call_target_hook(target, "claim", candidate):
                continue
            owner = codegen_target(candidate)
            if owner is None:
                candidate.attributes[CODEGEN_ATTR_NAME] = StringAttr(target.name)
            elif owner != target.name:
                refused.append(
                    Diagnostic(
                        f"'{candidate.name}' is already claimed by target '{owner}'; "
                        f"target '{target.name}' cannot claim it too (the later claim "
                        "is refused)",
                        candidate,
                    )
                )
        if refused:
            raise DiagnosticError(refused)
