"""xDSL's trivial dead-code check, answered without collecting every nested effect.

A `GreedyRewritePatternApplier` with `dce_enabled` (the default) asks
`is_trivially_dead` of every op it visits before trying its patterns. For an
op without used results, xDSL collects the memory effects of the op and,
through `RecursiveMemoryEffect`, of every op nested in it, into a set, then
checks that all of them are reads (or allocations of values defined inside).
A loop is visited once per nesting level on its way down, and each time its
whole body was collected: 6-9 % of the CPU time of a cold compile of
ResNet-50 or MobileNet-V2 (`simplify` and `lower-to-llvm` visit every op of
every kernel), for a few per cent of ops found dead.

`is_trivially_dead` here gives the same answer and stops at the first effect
that decides it: an op with unknown effects, or an effect other than a read
or an allocation of a value defined inside the op. Nested ops are visited
last first, since a loop body's stores come after its index arithmetic and
loads: a loop nest is decided in about as many steps as it is deep. Which
effect is found first does not matter: any one of them makes xDSL's set fail
its check too. The traits an op class has are looked up once per class.

`GreedyApplier` is `GreedyRewritePatternApplier` with this check; the
passes that let the applier remove dead ops use it
(tests/test_dead_ops.py compares the two checks op by op on lowered kernels).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.folder import Folder
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import GreedyRewritePatternApplier, PatternRewriter, RewritePattern
from xdsl.traits import (
    ConstantLike,
    HasFolder,
    IsTerminator,
    MemoryEffect,
    MemoryEffectKind,
    RecursiveMemoryEffect,
    SymbolOpInterface,
)

_RECURSIVE = RecursiveMemoryEffect.get_effects.__func__  # type: ignore[attr-defined]


@dataclass(frozen=True)
class _ClassFacts:
    """What the dead-code check reads from an op class's traits."""

    removable: bool
    """Neither a terminator nor a symbol."""
    effects: tuple[tuple[MemoryEffect, bool], ...]
    """Its memory-effect traits, each with whether it is `RecursiveMemoryEffect`'s
    (the effects of the nested ops) rather than its own."""


_facts: dict[type[Operation], _ClassFacts] = {}


def _class_facts(cls: type[Operation]) -> _ClassFacts:
    facts = _facts.get(cls)
    if facts is None:
        removable = not cls.has_trait(
            IsTerminator, value_if_unregistered=False
        ) and not cls.has_trait(SymbolOpInterface, value_if_unregistered=False)
        effects = tuple(
            (trait, getattr(type(trait).get_effects, "__func__", None) is _RECURSIVE)
            for trait in cls.get_traits_of_type(MemoryEffect)
        )
        facts = _facts[cls] = _ClassFacts(removable, effects)
    return facts


def is_trivially_dead(op: Operation) -> bool:
    """`xdsl.transforms.dead_code_elimination.is_trivially_dead(op)`, decided at the
    first effect that settles it."""
    for result in op.results:
        if result.first_use is not None:
            return False
    if not _class_facts(type(op)).removable:
        return False
    return _only_result_effects(op, op)


def _only_result_effects(root: Operation, op: Operation) -> bool:
    """Are all of `op`'s effects (nested ones included, as xDSL's `get_effects`
    collects them) reads, or allocations of values defined inside `root`?"""
    facts = _class_facts(type(op))
    if not facts.effects:
        return False  # unknown effects
    for trait, recursive in facts.effects:
        if recursive:
            for region in op.regions:
                for block in region.blocks:
                    child = block.last_op
                    while child is not None:
                        if not _only_result_effects(root, child):
                            return False
                        child = child.prev_op
            continue
        effects = trait.get_effects(op)
        if effects is None:
            return False
        for effect in effects:
            if effect.kind == MemoryEffectKind.READ:
                continue
            value = effect.value
            if (
                effect.kind == MemoryEffectKind.ALLOC
                and isinstance(value, SSAValue)
                and root.is_ancestor(value.owner)
            ):
                continue
            return False
    return True


def _expected_types(pattern: RewritePattern) -> object | None:
    """The op type (or union) `pattern` rewrites, when its `match_and_rewrite` is xDSL's
    `op_type_rewrite_pattern` wrapper (which returns at once for any other op), else None."""
    function = getattr(type(pattern), "match_and_rewrite", None)
    names = getattr(getattr(function, "__code__", None), "co_freevars", ())
    closure = getattr(function, "__closure__", None)
    if function is None or "expected_type" not in names or closure is None:
        return None
    if getattr(function, "__qualname__", "") != _IMPL_QUALNAME:
        return None
    return closure[names.index("expected_type")].cell_contents


_IMPL_QUALNAME = "op_type_rewrite_pattern.<locals>.impl"


def _may_match(cls: type[Operation], expected: object | None) -> bool:
    """Whether an op of class `cls` passes the wrapper's `isinstance(op, expected)`
    (None, or a type `issubclass` cannot answer for: assumed to)."""
    if expected is None:
        return True
    try:
        return issubclass(cls, expected)  # type: ignore[arg-type]
    except TypeError:
        return True


class GreedyApplier(GreedyRewritePatternApplier):
    """`GreedyRewritePatternApplier` whose dead-code check is `is_trivially_dead` above
    (the same ops removed, sooner decided), and which tries on an op only the patterns
    whose declared op type it is: an `op_type_rewrite_pattern` given another op returns
    at once, after an `isinstance` through `ABCMeta` (most of the applier's own time
    when a pass has many patterns and most ops match none). The patterns left are
    called in the same order, so the same one rewrites. Which patterns an op class
    may match is decided once per class and pattern list."""

    _by_class: tuple | None = None
    """(the pattern list, its length, each pattern's expected types, op class → the
    patterns to try); made again if the list is replaced or changes length."""

    def _patterns_for(self, cls: type[Operation]) -> tuple[RewritePattern, ...]:
        patterns = self.rewrite_patterns
        cache = self._by_class
        if cache is None or cache[0] is not patterns or cache[1] != len(patterns):
            expected = [_expected_types(pattern) for pattern in patterns]
            cache = self._by_class = (patterns, len(patterns), expected, {})
        by_class = cache[3]
        chosen = by_class.get(cls)
        if chosen is None:
            chosen = by_class[cls] = tuple(
                pattern
                for pattern, types in zip(patterns, cache[2], strict=True)
                if _may_match(cls, types)
            )
        return chosen

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if self.dce_enabled and is_trivially_dead(op):
            rewriter.erase(op)
            return
        # The rest of xDSL's method: fold (not a constant: it would fold forever), or
        # the first pattern that rewrites.
        if (
            self.folding_enabled
            and op.has_trait(HasFolder, value_if_unregistered=False)
            and not op.has_trait(ConstantLike, value_if_unregistered=True)
        ):
            if self.ctx is None:
                raise ValueError("Context is required for folding")
            folded = Folder(self.ctx).try_fold(op)
            if folded is not None:
                values, ops = folded
                rewriter.replace(op, new_ops=ops, new_results=values)
                return
        for pattern in self._patterns_for(type(op)):
            pattern.match_and_rewrite(op, rewriter)
            if rewriter.has_done_action:
                return


__all__ = ["GreedyApplier", "is_trivially_dead"]
