"""`IsolatedFromAbove`'s verifier without a walk up the parents per operand.

xDSL's `IsolatedFromAbove.verify(op)` checks every operand of every op under a
function (not under nested isolated ops: they check themselves) with
`op.is_ancestor(operand.owner)`, which climbs from the operand's owner through
every enclosing region, block and op up to the function: one climb per operand,
as deep as the loop nest (DenseNet-121's lowering: 245,000 calls at the phase
boundaries, a tenth of the verifier's time).

`verify_isolated` answers the same question from the set of blocks nested in
`op` (collected once per verification): a value is defined inside `op` exactly
when the block holding its defining op, or owning it as an argument, is one of
them. The ops are visited in xDSL's order and the first failure raises xDSL's
exception with xDSL's message, so a module that fails fails at the same op with
the same text. `fast_isolation_check()` installs it while a verification runs
(core/diagnostics.py), as `core/symbols.py` installs its symbol lookup.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from xdsl.ir import Block, Operation, Region
from xdsl.traits import IsolatedFromAbove
from xdsl.utils.exceptions import VerifyException

_XDSL_VERIFY = IsolatedFromAbove.__dict__["verify"]


def _nested_blocks(op: Operation) -> set[int]:
    """The ids of every block nested in `op`, at any depth."""
    inside: set[int] = set()
    regions: list[Region] = list(op.regions)
    while regions:
        region = regions.pop()
        for block in region.blocks:
            inside.add(id(block))
            for child in block.ops:
                if child.regions:
                    regions += child.regions
    return inside


def verify_isolated(self: IsolatedFromAbove, op: Operation) -> None:
    """`IsolatedFromAbove.verify(op)`: the same checks in the same order, the same error."""
    inside = _nested_blocks(op)
    regions: list[Region] = list(op.regions)
    while regions:
        region = regions.pop()
        for block in region.blocks:
            for child_op in block.ops:
                for operand in child_op.operands:
                    owner = operand.owner
                    if isinstance(owner, Operation):
                        where = owner.parent
                        defined_inside = where is not None and id(where) in inside
                    elif isinstance(owner, Block):
                        defined_inside = id(owner) in inside
                    else:  # not a value of the IR (xDSL's own test decides)
                        defined_inside = op.is_ancestor(owner) and owner is not op
                    if not defined_inside:
                        raise VerifyException(
                            "Operation using value defined out of its "
                            f"IsolatedFromAbove parent: {child_op}"
                        )
                if not child_op.has_trait(IsolatedFromAbove):
                    regions += child_op.regions


_lock = threading.Lock()
_depth = 0


@contextmanager
def fast_isolation_check() -> Iterator[None]:
    """Within the block, `IsolatedFromAbove.verify` is `verify_isolated` (reentrant,
    thread-safe: xDSL's method is back when the last block ends)."""
    global _depth
    with _lock:
        if _depth == 0:
            IsolatedFromAbove.verify = verify_isolated  # type: ignore[method-assign]
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                IsolatedFromAbove.verify = _XDSL_VERIFY  # type: ignore[method-assign]


__all__ = ["fast_isolation_check", "verify_isolated"]
