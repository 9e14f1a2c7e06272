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

import weakref
from contextlib import AbstractContextManager

from xdsl.dialects.builtin import StringAttr, SymbolRefAttr
from xdsl.ir import Block, Operation
from xdsl.traits import SymbolOpInterface, SymbolTable

from lamina.core.scoped_patch import ScopedPatch

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


class SymbolNames:
    """The symbol names of one symbol table, owned by the pass that inserts symbols into it.

    `lower-to-llvm` outlines every parallel loop into new functions named
    `<function>_par<n>`, `n` the first index no symbol of the module has. A loop of
    `lookup_symbol` calls answers that with a miss, so a rescan of the module's
    block, per parallel loop (0.2 s of CPU on DenseNet-121). Instead the pass builds
    this set once (one scan) when it starts, reports every op its rewriter inserts
    (`observe`, an insertion handler of its walker's listener: declarations inserted
    at the top of the module as well as the outlined functions at its end) and takes
    new names from `fresh`, which also records the name it hands out. The set lives
    as long as the pass's run, so nothing outside it (another pass, an earlier run on
    the same block) can leave it stale. Erasing a symbol does not free its name: the
    next `fresh` skips it (lowering erases no function).
    """

    __slots__ = ("block", "names")

    def __init__(self, table: Operation) -> None:
        self.block = table.regions[0].block
        self.names: set[str] = {
            name for op in self.block.ops if (name := _symbol_name(op)) is not None
        }

    def observe(self, op: Operation) -> None:
        """Record `op`'s name if it is a symbol just inserted into the table's block."""
        if op.parent is self.block and (name := _symbol_name(op)) is not None:
            self.names.add(name)

    def fresh(self, base: str) -> str:
        """`base` + the smallest index (0, 1, ...) no known symbol has; recorded as taken."""
        index = 0
        names = self.names
        while f"{base}{index}" in names:
            index += 1
        name = f"{base}{index}"
        names.add(name)
        return name


_PATCH = ScopedPatch(SymbolTable, "lookup_symbol", staticmethod(lookup_symbol))
_XDSL_LOOKUP = _PATCH.original


def indexed_symbol_lookup() -> AbstractContextManager[None]:
    """Within the block, xDSL's own verifiers (e.g. `llvm.call`'s) use `lookup_symbol` too.

    Upstream ops call `SymbolTable.lookup_symbol` directly; verifying a module
    with N `llvm.call`s was O(N²) because of it. The replacement returns the
    same ops, so the verifier checks exactly what it checked before. Nested
    and concurrent blocks are counted (`core/scoped_patch.py`): xDSL's original
    is back once the last one ends.
    """
    return _PATCH.active()


__all__ = ["SymbolNames", "indexed_symbol_lookup", "lookup_in_block", "lookup_symbol"]
