from dataclasses import dataclass

from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from lamina.core.plugins import register_pass
from lamina.dialects import graph


@dataclass(frozen=True)
class FoldDoubleRelu(ModulePass):
    """relu(relu(x)) -> relu(x): a plain xDSL pass, so it may run in any phase before build."""

    name = "fold-double-relu"

    def apply(self, ctx, op):
        for relu in [o for o in op.walk() if isinstance(o, graph.ReluOp)]:
            inner = relu.operands[0].owner
            if isinstance(inner, graph.ReluOp):
                Rewriter.replace_op(relu, [], inner.results)


register_pass(FoldDoubleRelu)
