"""Where values are last used in a block: the liveness questions buffer passes ask.

`lower-te` and `lower-graph` free a buffer after its last use, and
`plan-memory` returns a buffer to its pool after its last use. All three ask
"which top-level op of this block is the last to use this value (directly or
from a nested region)?". `Block.get_operation_index` is a linear scan, so
`BlockOrder` numbers the ops once and answers each question in time linear in
the value's uses.
"""

from __future__ import annotations

from collections.abc import Iterable

from xdsl.ir import Block, Operation, SSAValue

from lamina.core.walk import preorder


class BlockOrder:
    """Positions of a block's ops, numbered once.

    Ops inserted after construction are numbered on demand by a scan (rare:
    passes insert `loop.free`s, which are never the users asked about).
    """

    def __init__(self, block: Block):
        self.block = block
        self._index = {op: i for i, op in enumerate(block.ops)}

    def index(self, op: Operation) -> int:
        position = self._index.get(op)
        return position if position is not None else self.block.get_operation_index(op)

    def top_level_users(self, values: Iterable[SSAValue]) -> Iterable[Operation]:
        """The ops of the block that use any of `values`, directly or in a nested region."""
        for value in values:
            for use in value.uses:
                op = self.block.find_ancestor_op_in_block(use.operation)
                if op is not None:
                    yield op

    def last_user(self, *values: SSAValue) -> Operation | None:
        """The last top-level op using any of `values`, or None if nothing in the block does."""
        return max(self.top_level_users(values), key=self.index, default=None)

    def last_use_index(self, values: Iterable[SSAValue], default: int) -> int:
        """Index of the last top-level op using any of `values` (`default` if none)."""
        return max((self.index(op) for op in self.top_level_users(values)), default=default)


def captured_values(op: Operation) -> list[SSAValue]:
    """Values used inside `op`'s regions but defined outside `op`, in order of first
    use: what outlining `op` (a lambda lifted to a function, a parallel loop's body)
    must pass in.

    The ops inside are collected once, so each operand is one set lookup rather than a
    walk up its parents (`lower-to-llvm` asks this for every parallel loop of every
    kernel)."""
    ops = preorder(op)
    inside: set[Operation] = set(ops)
    seen: dict[SSAValue, None] = {}
    for inner in ops:
        if inner is op:
            continue
        for operand in inner.operands:
            owner = operand.owner
            defining = owner.parent_op() if isinstance(owner, Block) else owner
            if defining not in inside:
                seen.setdefault(operand, None)
    return list(seen)
