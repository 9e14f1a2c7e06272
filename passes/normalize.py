"""`normalize`: the canonical form of ingested graph programs (phase ingestion).

TVM's Normalize (apache/tvm #15009, P2) puts a freshly parsed program into the
form later passes may assume. In SSA form most of that (A-normal form, named
values) holds by construction; what remains is structural clean-up of
dataflow blocks and dead code, so that `lift-lambdas`, `fuse-ops`, `legalize`
and `plan-devices` see one shape for one program.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    RewritePattern,
)
from xdsl.rewriter import InsertPoint
from xdsl.traits import IsTerminator

from lamina.core.locations import locating_walker
from lamina.core.pass_base import LaminaPass
from lamina.core.phase_invariants import in_codegen, is_pure_in_dataflow, own_ops
from lamina.dialects.lamina import Phase


def _dataflow_output(dataflow: Operation) -> Operation | None:
    """The `graph.output` terminating a dataflow block's (single) block."""
    block = dataflow.regions[0].blocks.first if dataflow.regions else None
    if block is None or block.last_op is None or block.last_op.name != "graph.output":
        return None
    return block.last_op


def _inline_dataflow(dataflow: Operation, rewriter: PatternRewriter) -> None:
    """Move the ops of `dataflow` before it and replace its results by the outputs."""
    output = _dataflow_output(dataflow)
    assert output is not None
    outputs = list(output.operands)
    block = dataflow.regions[0].block
    rewriter.erase(output)
    rewriter.inline_block(block, InsertPoint.before(dataflow))
    rewriter.replace(dataflow, [], outputs)


class FlattenNestedDataflow(RewritePattern):
    """A dataflow block inside a dataflow block adds nothing: splice its ops into the parent.

      %r = graph.dataflow { %a = ...; %b = graph.dataflow { %c = f(%a) graph.output %c }
                            graph.output %b }
    ⇒ %r = graph.dataflow { %a = ...; %c = f(%a); graph.output %c }
    """

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if op.name != "graph.dataflow" or _dataflow_output(op) is None or in_codegen(op):
            return
        parent = op.parent_op()
        if parent is None or parent.name != "graph.dataflow":
            return
        _inline_dataflow(op, rewriter)


class InlineTrivialDataflow(RewritePattern):
    """A dataflow block that computes nothing (only `graph.output`) is replaced by its outputs."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if op.name != "graph.dataflow" or in_codegen(op):
            return
        output = _dataflow_output(op)
        if output is None or output is not op.regions[0].block.first_op:
            return
        _inline_dataflow(op, rewriter)


class RemoveDeadPureOp(RewritePattern):
    """Erase a pure op none of whose results is used (impure calls stay)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not is_dead(op):
            return
        rewriter.erase(op)


def is_dead(op: Operation) -> bool:
    """Unused and removable without changing what the program does."""
    if op.has_trait(IsTerminator) or op.name in ("graph.func", "builtin.module"):
        return False
    if any(result.uses for result in op.results):
        return False
    module = _module_of(op)
    if module is None or in_codegen(op):
        return False
    if op.name == "graph.lambda":
        return True  # creating a closure runs nothing
    if op.name == "graph.dataflow":
        # The ops the block executes: lambda bodies inside it do not run.
        return all(
            inner.name == "graph.output" or is_pure_in_dataflow(inner, module)
            for inner in own_ops(op)
        )
    return not op.regions and is_pure_in_dataflow(op, module)


def _module_of(op: Operation) -> ModuleOp | None:
    current = op.parent_op()
    while current is not None and not isinstance(current, ModuleOp):
        current = current.parent_op()
    return current


@dataclass(frozen=True)
class NormalizePass(LaminaPass):
    """Put an ingested module into the canonical form later passes rely on.

    Input invariant: a verified module in phase ingestion.
    Output IR:
      1. no `graph.dataflow` directly inside another `graph.dataflow`: nested
         dataflow blocks are spliced into their parent;
      2. no trivial `graph.dataflow` (one whose block holds only its
         `graph.output`): its results are replaced by the output values;
      3. no dead pure op: an op whose results are all unused is erased if it
         is pure (graph ops with value semantics, `graph.call` of a pure
         function, `graph.call_extern`/`graph.invoke` marked `pure`,
         `call_te`/`call_loop`, side-effect-free upstream ops), an unused
         `graph.lambda`, or an unused `graph.dataflow` of pure ops. Impure
         calls, terminators and functions are kept, dead or not.
      Functions already have a single-block body ending in `graph.return`,
      and `lamina.default_device` defaults to `#lamina.device<"cpu", 0>` when
      absent (`get_default_device`): normalize adds neither.
      Code claimed by a target (`lamina.codegen`) is left untouched.
    Invariants: idempotent (normalize twice = normalize once); does not change
    the phase; the results of every function are unchanged.
    """

    name = "normalize"
    phases = frozenset({Phase.INGESTION})

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        patterns = GreedyRewritePatternApplier(
            [FlattenNestedDataflow(), InlineTrivialDataflow(), RemoveDeadPureOp()],
            ctx=ctx,
            folding_enabled=False,
            dce_enabled=False,
        )
        locating_walker(patterns, walk_reverse=True).rewrite_module(op)
