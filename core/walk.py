"""Every op under an op, in `Operation.walk()`'s order, without a generator per level.

xDSL's `walk` nests three generators per nesting level (op, region, block), and every
op it yields passes through all of them: in a loop nest eight deep, two dozen
generator resumptions per op. The checks that read every op of a module after a pass
(the verifier, the legality check, the device check) spent more in that walk than in
what they check. `preorder` collects the same ops in the same order, with one loop.
"""

from __future__ import annotations

from xdsl.ir import Operation


def preorder(root: Operation) -> list[Operation]:
    """`list(root.walk())`: `root`, then each region's blocks' ops, each before its own
    regions' ops. The list is taken before the caller looks at any op: for readers
    only (a caller that changes the IR as it goes wants xDSL's lazy walk)."""
    out: list[Operation] = []
    stack = [root]
    while stack:
        op = stack.pop()
        out.append(op)
        if op.regions:
            children: list[Operation] = []
            for region in op.regions:
                for block in region.blocks:
                    child = block.first_op
                    while child is not None:
                        children.append(child)
                        child = child.next_op
            children.reverse()
            stack += children
    return out


__all__ = ["preorder"]
