"""Every op under an op, in `Operation.walk()`'s order, without a generator per level.

xDSL's `walk` nests three generators per nesting level (op, region, block), and every
op it yields passes through all of them: in a loop nest eight deep, two dozen
generator resumptions per op. The checks that read every op of a module after a pass
(the verifier, the legality check, the device check) spent more in that walk than in
what they check. `preorder` collects the same ops in the same order, with one loop.

`lazy_preorder` is the walk itself in one generator, as lazy as xDSL's (a caller
may erase or insert ops as it goes, with the same effect on what it is given);
`fast_walks` makes it the `walk()` of ops, blocks and regions for the duration of a
compile (driver/lowering.py), so that every pass, pattern applier and xDSL
helper walking the IR uses it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from xdsl.ir import Block, Operation, Region

from lamina.core.scoped_patch import ScopedPatch


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


def lazy_preorder(root: Operation) -> Iterator[Operation]:
    """`root.walk()` exactly, in one generator: the same ops in the same order, each
    looked up when xDSL's nested generators look it up, so a caller may change the IR
    as it goes as it may with xDSL's walk. An op's regions are read when the walk
    comes back from yielding it, a region's first block and a block's first op when
    the walk enters them, and an op's successor (`next_op`) when the op is yielded,
    before the caller sees it (so the caller may erase or move the op it is given)."""
    yield root
    regions = root.regions
    if regions:
        yield from _descend([iter(regions)], [_REGIONS])


def _block_preorder(block: Block) -> Iterator[Operation]:
    """`block.walk()` exactly (see `lazy_preorder`)."""
    return _descend([[block.first_op]], [_OPS])


def _region_preorder(region: Region) -> Iterator[Operation]:
    """`region.walk()` exactly (see `lazy_preorder`)."""
    return _descend([iter(region.blocks)], [_BLOCKS])


_REGIONS, _BLOCKS, _OPS = 0, 1, 2


def _descend(stack: list, kinds: list[int]) -> Iterator[Operation]:
    """The ops under the iterators of `stack` (each of the kind in `kinds`: an op's
    regions, a region's blocks, or a cursor on a block's next op), depth first."""
    while stack:
        kind = kinds[-1]
        top = stack[-1]
        if kind == _OPS:
            op = top[0]
            if op is None:
                stack.pop()
                kinds.pop()
                continue
            top[0] = op._next_op  # noqa: SLF001 - what `_BlockOpsIterator` reads, when it does
            yield op
            regions = op.regions
            if regions:
                stack.append(iter(regions))
                kinds.append(_REGIONS)
            continue
        child = next(top, None)
        if child is None:
            stack.pop()
            kinds.pop()
        elif kind == _REGIONS:
            stack.append(iter(child.blocks))
            kinds.append(_BLOCKS)
        else:
            stack.append([child.first_op])
            kinds.append(_OPS)


def _walk(
    self: Operation, *, reverse: bool = False, region_first: bool = False
) -> Iterator[Operation]:
    """`Operation.walk` while `fast_walks` is active: the default order by
    `lazy_preorder`, the others by xDSL's own walk."""
    if reverse or region_first:
        return _XDSL_OP_WALK(self, reverse=reverse, region_first=region_first)
    return lazy_preorder(self)


def _block_walk(
    self: Block, *, reverse: bool = False, region_first: bool = False
) -> Iterable[Operation]:
    if reverse or region_first:
        return _XDSL_BLOCK_WALK(self, reverse=reverse, region_first=region_first)
    return _block_preorder(self)


def _region_walk(
    self: Region, *, reverse: bool = False, region_first: bool = False
) -> Iterator[Operation]:
    if reverse or region_first:
        return _XDSL_REGION_WALK(self, reverse=reverse, region_first=region_first)
    return _region_preorder(self)


_XDSL_OP_WALK = Operation.walk
_XDSL_BLOCK_WALK = Block.walk
_XDSL_REGION_WALK = Region.walk
_PATCHES = (
    ScopedPatch(Operation, "walk", _walk),
    ScopedPatch(Block, "walk", _block_walk),
    ScopedPatch(Region, "walk", _region_walk),
)


@contextmanager
def fast_walks() -> Iterator[None]:
    """Within the block (a compile), `walk()` of an op, a block or a region is
    `lazy_preorder`: the same ops, in the same order, as lazily, without three
    generators per nesting level (a walk of a lowered module 2.5x faster). The
    other orders (`reverse`, `region_first`) are xDSL's. Reentrant and thread-safe
    (`core/scoped_patch.py`)."""
    with _PATCHES[0].active(), _PATCHES[1].active(), _PATCHES[2].active():
        yield


__all__ = ["fast_walks", "lazy_preorder", "preorder"]
