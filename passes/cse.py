"""`cse`: xDSL's common subexpression elimination with a Lamina phase contract."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.transforms.common_subexpression_elimination import cse

from lamina.core.pass_base import ALL_PHASES, LaminaPass


@dataclass(frozen=True)
class CsePass(LaminaPass):
    """Merge identical side-effect-free ops (same name, operands, properties, attributes, types).

    Input invariant: a verified module, in any phase.
    Output IR: of two ops that are identical and side-effect free (or only
    read memory, with no write in between), the one dominated by the other is
    removed and its uses take the dominating op's results (xDSL's `cse`).
    Impure ops (`graph.call_extern` / `graph.invoke` without `pure`, calls of
    `impure` functions, stores) are never merged.
    Invariants: does not change the phase, the number of distinct
    computations can only shrink, no op is added.
    """

    name = "cse"
    phases = ALL_PHASES

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        cse(op)
