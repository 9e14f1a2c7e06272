"""Symbol lookup in constant time: a drop-in for `SymbolTable.lookup_symbol`.

xDSL's `SymbolTable.lookup_symbol` scans the symbol table's block on every
call. Verifiers and lowerings look up one callee per call op, so a module
with N functions and N calls cost O(N²): on a chain of 300 `graph.call`
functions, lookups were two thirds of the whole compile.

`lookup_symbol` here keeps a name → op index per symbol-table block (in a
`WeakKeyDictionary`, so it dies with the block) and never trusts it blindly:

* a hit is used only if the indexed op still sits directly in that block
  and still carries that name (an erased, moved or renamed op fails this
  check, and the index is rebuilt);
* a miss rebuilds the index once before answering "no such symbol", so an
  op added since the index was built is found.

So the answer is the one `SymbolTable.lookup_symbol` gives, as long as the
block holds each name once (the `SymbolTable` verifier's rule; while a pass
transiently holds two ops of one name, the index may return either). A miss
costs one scan, as before; hits, the common case, cost O(1).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager

from xdsl.dialects.builtin import StringAttr, SymbolRefAttr
from xdsl.ir import Block, Operation
from xdsl.traits import SymbolOpInterface, SymbolTable

_indexes: weakref.WeakKeyDictionary[Block, dict[str, Operation]] = weakref.WeakKeyDictionary()


def _symbol_name(op: Operation) -> str | None:
    """The op's symbol name, if it is a symbol (same rule as xDSL's lookup)."""
    if not _is_symbol_class(type(op)):
        return None
    name = op.get_attr_or_prop("sym_name")
    return name.data if isinstance(name, StringAttr) else None


_symbol_classes: dict[type[Operation], tuple[object, bool]] = {}
"""Op class → (its trait set, whether one is a `SymbolOpInterface`)."""


def _is_symbol_class(kind: type[Operation]) -> bool:
    """Whether ops of class `kind` are symbols, decided once per class and trait set.

    A miss rebuilds the index (`_build_index`), and `lower-to-llvm` misses once per
    parallel loop (a new function's unused name): asking every op of the module for
    its trait was most of the rebuild. The answer is remembered with the class's
    trait set (`OpTraits.traits`, replaced when a trait is added): the same answer
    as `get_trait`."""
    traits = kind.traits.traits
    known = _symbol_classes.get(kind)
    if known is not None and known[0] is traits:
        return known[1]
    answer = kind.get_trait(SymbolOpInterface) is not None
    _symbol_classes[kind] = (traits, answer)
    return answer


def _build_index(block: Block) -> dict[str, Operation]:
    """name → first op of that name in `block` (xDSL returns the first match too)."""
    index: dict[str, Operation] = {}
    for op in block.ops:
        name = _symbol_name(op)
        if name is not None and name not in index:
            index[name] = op
    _indexes[block] = index
    return index


def _valid(op: Operation | None, block: Block, name: str) -> bool:
    if op is None or op.parent is not block:
        return False
    sym = op.get_attr_or_prop("sym_name")
    return isinstance(sym, StringAttr) and sym.data == name


def lookup_in_block(block: Block, name: str) -> Operation | None:
    """The symbol `name` defined directly in `block` (a symbol table's body), or None."""
    index = _indexes.get(block)
    if index is not None and _valid(index.get(name), block, name):
        return index[name]
    found = _build_index(block).get(name)
    return found


def _table_of(op: Operation) -> Operation:
    anchor: Operation | None = op
    while anchor is not None and not anchor.has_trait(SymbolTable):
        anchor = anchor.parent_op()
    if anchor is None:
        raise ValueError(f"Operation {op} has no SymbolTable ancestor")
    return anchor


def lookup_symbol(op: Operation, name: str | StringAttr | SymbolRefAttr) -> Operation | None:
    """As `SymbolTable.lookup_symbol(op, name)` (same results, same ValueError), in O(1)."""
    table = _table_of(op)
    if isinstance(name, str | StringAttr):
        name = SymbolRefAttr(name)
    found = lookup_in_block(table.regions[0].block, name.root_reference.data)
    if found is None or not name.nested_references:
        return found
    nested_root, *nested = name.nested_references.data
    return lookup_symbol(found, SymbolRefAttr(nested_root, nested))


_names_seen: weakref.WeakKeyDictionary[Block, tuple[set[str], Operation | None]] = (
    weakref.WeakKeyDictionary()
)
"""Symbol-table block → the names `unused_symbol_name` knows there, and the block's last
op when they were collected."""


def unused_symbol_name(table: Operation, base: str) -> str:
    """`base` followed by the smallest index (0, 1, ...) no symbol of `table` is named.

    What a loop of `lookup_symbol` calls finds, without its cost: every call ended in a
    miss, and each miss rescans the block (`lower-to-llvm` asks once per parallel loop
    it outlines, the module's block holding every kernel: 0.2 s of CPU on
    DenseNet-121). The names are collected once per block; later calls add the ops
    appended since (new functions go at the end of the module) and the names handed
    out. A symbol inserted elsewhere in the block afterwards is not seen, nor an erased
    one forgotten: the callers' new names (`<function>_par<n>`) come from here only.
    """
    block = table.regions[0].block
    known = _names_seen.get(block)
    if known is None or (known[1] is not None and known[1].parent is not block):
        names: set[str] = set(_build_index(block))
    else:
        names, last = known
        op = block.first_op if last is None else last.next_op
        while op is not None:
            if (name := _symbol_name(op)) is not None:
                names.add(name)
            op = op.next_op
    index = 0
    while f"{base}{index}" in names:
        index += 1
    names.add(f"{base}{index}")
    _names_seen[block] = (names, block.last_op)
    return f"{base}{index}"


_XDSL_LOOKUP = SymbolTable.__dict__["lookup_symbol"]
_patch_lock = threading.Lock()
_patch_depth = 0


@contextmanager
def indexed_symbol_lookup() -> Iterator[None]:
    """Within the block, xDSL's own verifiers (e.g. `llvm.call`'s) use `lookup_symbol` too.

    Upstream ops call `SymbolTable.lookup_symbol` directly; verifying a module
    with N `llvm.call`s was O(N²) because of it. The replacement returns the
    same ops, so the verifier checks exactly what it checked before. Nested
    and concurrent blocks are counted: xDSL's original is back once the last
    one ends.
    """
    global _patch_depth
    with _patch_lock:
        if _patch_depth == 0:
            SymbolTable.lookup_symbol = staticmethod(lookup_symbol)
        _patch_depth += 1
    try:
        yield
    finally:
        with _patch_lock:
            _patch_depth -= 1
            if _patch_depth == 0:
                SymbolTable.lookup_symbol = _XDSL_LOOKUP


__all__ = ["indexed_symbol_lookup", "lookup_in_block", "lookup_symbol", "unused_symbol_name"]
