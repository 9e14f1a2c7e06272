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


def lazy_preorder(
    root: Operation, reverse: bool = False, region_first: bool = False
) -> Iterator[Operation]:
    """`root.walk(reverse=..., region_first=...)` exactly, in one generator: the same
    ops in the same order, each looked up when xDSL's nested generators look it up,
    so a caller may change the IR as it goes as it may with xDSL's walk. An op's
    regions are read when the walk comes back from yielding it (before its regions,
    `region_first`: when the walk reaches it), a region's first (last) block and a
    block's first (last) op when the walk enters them, and an op's successor
    (`next_op`, `prev_op` in reverse) when the iterator of its block returns it,
    before the caller sees the op (so the caller may erase or move the op it is
    given)."""
    if region_first:
        yield from _descend([_enter_regions(root, reverse)], [_REGIONS], reverse, region_first)
        yield root
        return
    yield root
    regions = root.regions
    if regions:
        yield from _descend([[iter(regions), None]], [_REGIONS], reverse, region_first)


def _enter_regions(op: Operation, reverse: bool, after: Operation | None = None) -> list:
    regions = op.regions
    return [reversed(regions) if reverse else iter(regions), after]


def _block_preorder(block: Block, reverse: bool, region_first: bool) -> Iterator[Operation]:
    """`block.walk(...)` exactly (see `lazy_preorder`): its first (last) op read when
    the walk starts."""
    first = block.last_op if reverse else block.first_op
    yield from _descend([[first]], [_OPS], reverse, region_first)


def _region_preorder(region: Region, reverse: bool, region_first: bool) -> Iterator[Operation]:
    """`region.walk(...)` exactly (see `lazy_preorder`): its blocks' iterator made when
    the walk starts."""
    blocks = reversed(region.blocks) if reverse else iter(region.blocks)
    yield from _descend([blocks], [_BLOCKS], reverse, region_first)


_REGIONS, _BLOCKS, _OPS = 0, 1, 2


def _descend(
    stack: list, kinds: list[int], reverse: bool, region_first: bool
) -> Iterator[Operation]:
    """The ops under the entries of `stack`, depth first. Each entry is of the kind
    in `kinds`: an op's regions (`[iterator, the op to yield after them or None]`),
    a region's blocks (an iterator), or a block's ops (`[the next op or None]`).
    The entries are made when xDSL's generators would evaluate the same things."""
    while stack:
        kind = kinds[-1]
        top = stack[-1]
        if kind == _OPS:
            op = top[0]
            if op is None:
                stack.pop()
                kinds.pop()
                continue
            # what `_BlockOpsIterator` (`_BlockOpsReverseIterator`) reads, when it does
            top[0] = op._prev_op if reverse else op._next_op  # noqa: SLF001
            if region_first:
                if op.regions:
                    stack.append(_enter_regions(op, reverse, op))
                    kinds.append(_REGIONS)
                else:
                    yield op
                continue
            yield op
            if op.regions:
                stack.append(_enter_regions(op, reverse))
                kinds.append(_REGIONS)
            continue
        if kind == _REGIONS:
            region = next(top[0], None)
            if region is None:
                stack.pop()
                kinds.pop()
                if top[1] is not None:
                    yield top[1]
                continue
            stack.append(reversed(region.blocks) if reverse else iter(region.blocks))
            kinds.append(_BLOCKS)
            continue
        block = next(top, None)
        if block is None:
            stack.pop()
            kinds.pop()
        else:
            stack.append([block.last_op if reverse else block.first_op])
            kinds.append(_OPS)


def _walk(
    self: Operation, *, reverse: bool = False, region_first: bool = False
) -> Iterator[Operation]:
    """`Operation.walk` while `fast_walks` is active."""
    return lazy_preorder(self, reverse, region_first)


def _block_walk(
    self: Block, *, reverse: bool = False, region_first: bool = False
) -> Iterable[Operation]:
    return _block_preorder(self, reverse, region_first)


def _region_walk(
    self: Region, *, reverse: bool = False, region_first: bool = False
) -> Iterator[Operation]:
    return _region_preorder(self, reverse, region_first)


_PATCHES = (
    ScopedPatch(Operation, "walk", _walk),
    ScopedPatch(Block, "walk", _block_walk),
    ScopedPatch(Region, "walk", _region_walk),
)


@contextmanager
def fast_walks() -> Iterator[None]:
    """Within the block (a compile), `walk()` of an op, a block or a region, in any
    order, is `lazy_preorder`'s: the same ops, in the same order, as lazily, without
    three generators per nesting level (a walk of a lowered module 2.5x faster).
    Reentrant and thread-safe (`core/scoped_patch.py`)."""
    with _PATCHES[0].active(), _PATCHES[1].active(), _PATCHES[2].active():
        yield


__all__ = ["fast_walks", "lazy_preorder", "preorder"]
