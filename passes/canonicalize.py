"""`canonicalize`: xDSL's canonicalizer with a Lamina phase contract."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.transforms.canonicalize import CanonicalizationRewritePattern
from xdsl.transforms.dead_code_elimination import region_dce

from lamina.core.dead_ops import GreedyApplier
from lamina.core.locations import locating_walker
from lamina.core.pass_base import ALL_PHASES, LaminaPass


@dataclass(frozen=True)
class CanonicalizePass(LaminaPass):
    """Apply every op's canonicalization patterns and folders, and remove dead code.

    Input invariant: a verified module, in any phase.
    Output IR: each op's `HasCanonicalizationPatternsTrait` patterns and
    `HasFolder` folders applied to a fixpoint (xDSL's `canonicalize`);
    side-effect-free ops whose results are unused and unreachable blocks
    removed. Ops with effects (impure calls, stores) are never removed.
    Invariants: does not change the phase nor introduce ops the phase
    forbids (patterns rewrite within a level: graph to graph, loop to loop).
    """

    name = "canonicalize"
    phases = ALL_PHASES

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        # xDSL's CanonicalizePass.apply, with a walker that locates the ops it creates.
        pattern = GreedyApplier([CanonicalizationRewritePattern()], ctx=ctx, folding_enabled=True)
        locating_walker(pattern, post_walk_func=region_dce).rewrite_module(op)
