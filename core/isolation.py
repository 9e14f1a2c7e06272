"""xDSL's `IsolatedFromAbove` check, answered by a set of blocks instead of an ancestor
climb per operand.

xDSL's `IsolatedFromAbove.verify(op)` visits every op nested in `op` (not
descending into nested ops that are isolated themselves) and asks, for each
operand, `op.is_ancestor(operand.owner)`: a climb through the parents of the
value's owner, up to `op`, through properties, for every operand. The builtin
module is isolated and an `llvm.func` is not, so verifying the llvm-dialect
module of a network climbed once per operand of every kernel: the module op
alone was ~45 % of the verifier's time after `lower-to-llvm` (ResNet-50: 73 ms
of 165 ms for the ops not memoized, core/verify_memo.py).

`holds(op)` collects the blocks under `op` and the blocks that define the
checked operands (an op result's: its op's block; a block argument's: its
block) in one walk, and passes when every defining block is one of `op`'s: then
every owner is under `op` and is not `op` (whose own block is outside it), which
is the original's rule. Anything else (a value that is neither an op result nor
a block argument, a defining block outside `op`) is not decided here: the
original runs and raises what it raised before, with its message. So the check
passes and fails exactly where xDSL's does (tests/test_isolation.py).

`fast_isolation_check()` installs it for the verifier's duration (nested and
concurrent uses counted: `core/scoped_patch.py`).
"""

from __future__ import annotations

from contextlib import AbstractContextManager

from xdsl.ir import BlockArgument, Operation, OpResult
from xdsl.traits import IsolatedFromAbove

from lamina.core.scoped_patch import ScopedPatch

_isolated_classes: dict[type[Operation], tuple[object, bool]] = {}
"""Op class → (its trait set, whether it has `IsolatedFromAbove`)."""


def _is_isolated(kind: type[Operation]) -> bool:
    """`has_trait(IsolatedFromAbove)` for ops of class `kind`, remembered with the
    class's trait set (replaced when a trait is added)."""
    traits = kind.traits.traits
    known = _isolated_classes.get(kind)
    if known is not None and known[0] is traits:
        return known[1]
    answer = kind.has_trait(IsolatedFromAbove)
    _isolated_classes[kind] = (traits, answer)
    return answer


def holds(op: Operation) -> bool:
    """True when xDSL's `IsolatedFromAbove.verify(op)` passes; False when this check
    cannot tell (the original then decides)."""
    inside: set[object] = set()  # every block under `op`, at any depth
    defining: set[object] = set()  # the blocks defining the operands xDSL checks
    result_class, argument_class = OpResult, BlockArgument
    # (region, checked): the operands in `checked` regions are xDSL's to check; the
    # others (under a nested isolated op) only contribute their blocks.
    stack: list[tuple[object, bool]] = [(region, True) for region in op.regions]
    while stack:
        region, checked = stack.pop()
        block = region.first_block  # type: ignore[attr-defined]
        while block is not None:
            inside.add(block)
            child = block.first_op
            while child is not None:
                if checked:
                    for value in child._operands:  # pyright: ignore[reportPrivateUsage]
                        kind = type(value)
                        if kind is result_class:
                            defining.add(value.op.parent)  # type: ignore[attr-defined]
                        elif kind is argument_class:
                            defining.add(value.block)  # type: ignore[attr-defined]
                        else:
                            return False
                if child.regions:
                    nested = checked and not _is_isolated(type(child))
                    stack.extend((sub, nested) for sub in child.regions)
                child = child._next_op  # pyright: ignore[reportPrivateUsage]
            block = block.next_block
    return defining <= inside


def _verify(self: IsolatedFromAbove, op: Operation) -> None:
    if not holds(op):
        _XDSL_VERIFY(self, op)


_PATCH = ScopedPatch(IsolatedFromAbove, "verify", _verify)
_XDSL_VERIFY = _PATCH.original


def fast_isolation_check() -> AbstractContextManager[None]:
    """Within the block, `IsolatedFromAbove.verify` decides by `holds` first (the same
    answer; a failure is the original's, raised by the original)."""
    return _PATCH.active()


__all__ = ["fast_isolation_check", "holds"]
