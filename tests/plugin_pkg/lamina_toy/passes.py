from dataclasses import dataclass

from xdsl.rewriter import Rewriter

from lamina.core.pass_base import LaminaPass
from lamina.dialects import graph
from lamina.dialects.lamina import Phase
from lamina_toy.dialect import DoubleOp


@dataclass(frozen=True)
class ToyLowerPass(LaminaPass):
    """Lower `toy.double %x` to `graph.add %x, %x`.

    Input invariant: phase ingestion or optimization.
    Output IR: no `toy.double` op.
    Invariants: the phase is unchanged.
    """

    name = "toy-lower"
    phases = frozenset({Phase.INGESTION, Phase.OPTIMIZATION})

    def apply(self, ctx, op):
        for double in [o for o in op.walk() if isinstance(o, DoubleOp)]:
            Rewriter.replace_op(double, graph.AddOp(double.input, double.input))
