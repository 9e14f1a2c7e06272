"""Source locations that survive every pass, as in MLIR.

An op a pass creates must carry the location of the op it came from, so that
`--print-debuginfo` after any phase and any later diagnostic (a verifier, a
runtime check) points at the user's source line. Rather than asking every
pattern of every pass to copy `op.location` (and every future pass to
remember to), the pass manager applies two rules around each pass:

1. `locating_walker(pattern, ...)`, xDSL's `PatternRewriteWalker` with a
   rewriter listener: every op a pattern inserts — and every op nested in
   it — that has no location takes the location of the op the pattern
   matched (MLIR patterns do the same by hand with `op->getLoc()`). Every
   walker of Lamina's passes is one; a plugin's plain walker gets rule 2.
2. `fill_unknown_locations(module)` after the pass, for ops created outside
   a rewriter: a function the pass created (a `te.func` for a `graph.add`, a
   kernel outlined for OpenMP) takes the *fused* location of the ops that
   reference it (one kernel shared by two call sites has both lines); any
   other op takes the location of its closest located ancestor, and block
   arguments the location of the op that owns their block.

Diagnostics read through fused, named and call-site locations to the first
`file:line:col` (`file_line_col`), as MLIR's source-manager handler does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from xdsl.dialects.builtin import (
    ArrayAttr,
    CallSiteLoc,
    FileLineColLoc,
    FusedLoc,
    LocationAttr,
    ModuleOp,
    NameLoc,
    NoneAttr,
    StringAttr,
    SymbolRefAttr,
    UnknownLoc,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriterListener,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.rewriter import Rewriter

from lamina.core.walk import preorder

_LOCATIONS = (UnknownLoc, FileLineColLoc, CallSiteLoc, NameLoc, FusedLoc)
"""The classes of `LocationAttr` (a type alias, not a class `isinstance` accepts)."""


def is_known(loc: Attribute) -> bool:
    """Is `loc` a location (not `UnknownLoc`, not `NoneAttr`)? Asked once per class
    (`_known_classes`): this runs for every op after every pass, and an `isinstance`
    against xDSL's attribute classes goes through `ABCMeta.__instancecheck__`."""
    kind = type(loc)
    answer = _known_classes.get(kind)
    if answer is None:
        answer = _known_classes[kind] = not isinstance(loc, UnknownLoc | NoneAttr)
    return answer


def file_line_col(loc: Attribute) -> FileLineColLoc | None:
    """The first `file:line:col` inside `loc` (through fused, named, call-site locations)."""
    if isinstance(loc, FileLineColLoc):
        return loc
    if isinstance(loc, FusedLoc):
        for inner in _fused(loc):
            found = file_line_col(inner)
            if found is not None:
                return found
    if isinstance(loc, NameLoc):
        return file_line_col(loc.location)
    if isinstance(loc, CallSiteLoc):
        return file_line_col(loc.caller)
    return None


def _fused(loc: FusedLoc) -> tuple[Attribute, ...]:
    """The locations a fused location holds (xDSL types the parameter as `Attribute`)."""
    return loc.locations.data if isinstance(loc.locations, ArrayAttr) else ()


def fuse(locations: Sequence[Attribute]) -> LocationAttr:
    """MLIR's `FusedLoc::get`: unknowns dropped, duplicates and nesting flattened."""
    flat: list[LocationAttr] = []
    for loc in locations:
        inner = _fused(loc) if isinstance(loc, FusedLoc) else (loc,)
        for item in inner:
            if isinstance(item, _LOCATIONS) and is_known(item) and item not in flat:
                flat.append(item)
    if not flat:
        return UnknownLoc()
    if len(flat) == 1:
        return flat[0]
    return FusedLoc(ArrayAttr(flat), NoneAttr())


def stamp(op: Operation, loc: LocationAttr) -> None:
    """Give `op`, and every op nested in it, `loc` where they have none."""
    if not is_known(loc):
        return
    for inner in op.walk():
        if not is_known(inner.location):
            inner.location = loc


def replace_op(
    op: Operation,
    new_ops: Operation | Sequence[Operation],
    new_results: Sequence[SSAValue | None] | None = None,
) -> None:
    """xDSL's `Rewriter.replace_op`, the new ops taking `op`'s location where they have
    none: rule 1 for a pass that rewrites without a pattern walker (rule 2 would give
    them their function's location, and lose which op they came from)."""
    for new in [new_ops] if isinstance(new_ops, Operation) else new_ops:
        stamp(new, op.location)
    Rewriter.replace_op(op, new_ops, new_results)


def stamp_trailing(block: Block, loc: LocationAttr) -> None:
    """Give the ops at the end of `block` that have no location `loc`.

    For passes that build a block op by op (`add_op`) from source ops: call
    it after emitting each source op's replacement. Costs only the new ops.
    """
    op = block.last_op
    while op is not None and not is_known(op.location):
        stamp(op, loc)
        op = op.prev_op


class _MatchedOp(RewritePattern):
    """`pattern`, remembering the op it is applied to for the walker's listener."""

    def __init__(self, pattern: RewritePattern):
        self.pattern = pattern
        self.op: Operation | None = None

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        self.op = op
        self.pattern.match_and_rewrite(op, rewriter)

    def locate(self, new: Operation) -> None:
        """The listener's insertion handler: `new` takes the matched op's location."""
        if self.op is not None:
            stamp(new, self.op.location)


class _SelectiveWalker(PatternRewriteWalker):
    """xDSL's walker, visiting only the top-level ops of the rewritten region that `only`
    accepts (with everything nested in them), in the order the plain walker visits them."""

    only: Callable[[Operation], bool]

    def _populate_worklist(self, op: Operation | Region | Block) -> None:
        if not isinstance(op, Region):
            super()._populate_worklist(op)
            return
        reverse, region_first = not self.walk_reverse, not self.walk_regions_first
        for block in reversed(op.blocks) if reverse else op.blocks:
            for top in reversed(block.ops) if reverse else block.ops:
                if self.only(top):
                    for sub_op in top.walk(reverse=reverse, region_first=region_first):
                        self._worklist.push(sub_op)


def locating_walker(
    pattern: RewritePattern,
    walker: type[PatternRewriteWalker] = PatternRewriteWalker,
    on_insert: Sequence[Callable[[Operation], None]] = (),
    only: Callable[[Operation], bool] | None = None,
    **options: Any,
) -> PatternRewriteWalker:
    """`walker(pattern, **options)` applying rule 1 of the module docstring.

    The walker's listener sees every op its rewriter inserts; the wrapped
    pattern tells it which op was matched. `walker`: a subclass of xDSL's
    walker (`lower-to-llvm`'s skips the ops no pattern would touch).
    `on_insert`: more handlers called with every inserted op (`lower-to-llvm`
    reports the symbols it inserts to its `SymbolNames`).
    `only`: visit only the top-level ops it accepts (and their nested ops), for a
    pattern that can match nowhere else: `legalize` and `lower-graph` skip the
    kernels' bodies, most of a network's ops (DenseNet-121's 53,000 loop ops cost
    `lower-graph` 0.4 s of empty matches). The default walker only.
    """
    matched = _MatchedOp(pattern)
    listener = PatternRewriterListener(operation_insertion_handler=[matched.locate, *on_insert])
    if only is not None:
        assert walker is PatternRewriteWalker, "`only` selects the walker itself"
        selective = _SelectiveWalker(matched, listener=listener, **options)
        selective.only = only
        return selective
    return walker(matched, listener=listener, **options)


def fill_unknown_locations(module: ModuleOp) -> None:
    """Rule 2 of the module docstring: locate every op of `module` that has no location.

    One walk of the module (this runs after every pass): it lists the ops and finds
    the references to the unlocated top-level functions; the functions are then
    located from their users, and the listed ops from their ancestors."""
    top = [op for op in module.ops if not is_known(op.location)]
    wanted = {name.data for op in top if isinstance(name := _symbol_name(op), StringAttr)}
    ops = preorder(module)
    if not _any_known(ops):
        return  # nothing to take a location from (a module built without any)
    users = _symbol_users(ops, wanted) if wanted else {}
    while top:  # a new function called only from another new one waits for its caller
        waiting = []
        for op in top:
            name = _symbol_name(op)
            callers = users.get(name.data, []) if isinstance(name, StringAttr) else []
            op.location = fuse([_resolved(caller) for caller in callers])
            if not is_known(op.location):
                waiting.append(op)
        if len(waiting) == len(top):
            break
        top = waiting
    for op in ops:
        if not is_known(op.location):
            parent = op.parent_op()
            if parent is not None and not isinstance(parent, ModuleOp):
                op.location = parent.location
        if op.regions and is_known(op.location):
            _locate_block_arguments(op)


_known_classes: dict[type, bool] = {}
"""Location class → `is_known` of its instances."""


def _any_known(ops: list[Operation]) -> bool:
    """Does any of `ops` have a known location? (`is_known` asked once per location
    class: models imported from ONNX have none, and this runs after every pass.)"""
    known = _known_classes
    for op in ops:
        kind = type(op.location)
        answer = known.get(kind)
        if answer is None:
            answer = known[kind] = is_known(op.location)
        if answer:
            return True
    return False


def _symbol_name(op: Operation) -> Attribute | None:
    return op.properties.get("sym_name") or op.attributes.get("sym_name")


def _locate_block_arguments(op: Operation) -> None:
    """Block arguments without a location take their op's (MLIR does this when parsing)."""
    for region in op.regions:
        for block in region.blocks:
            for arg in block.args:
                if not is_known(arg.location):
                    arg.location = op.location


def _resolved(op: Operation) -> LocationAttr:
    """`op`'s location, else its closest located ancestor's (the module's does not count)."""
    current: Operation | None = op
    while current is not None and not isinstance(current, ModuleOp):
        if is_known(current.location):
            return current.location
        current = current.parent_op()
    return UnknownLoc()


def _symbol_users(ops: Sequence[Operation], names: set[str]) -> dict[str, list[Operation]]:
    """Flat symbol name (of `names`) → the ops of `ops` whose properties or attributes
    reference it."""
    users: dict[str, list[Operation]] = {}
    for op in ops:
        for table in (op.properties, op.attributes):
            for value in table.values():
                if isinstance(value, SymbolRefAttr) and value.root_reference.data in names:
                    users.setdefault(value.root_reference.data, []).append(op)
    return users
