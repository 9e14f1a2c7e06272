"""core/symbols.py: the indexed symbol lookup answers exactly as xDSL's scan."""

from __future__ import annotations

from xdsl.dialects import llvm
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.traits import SymbolTable

from lamina.core.symbols import (
    _XDSL_LOOKUP,
    SymbolNames,
    indexed_symbol_lookup,
    lookup_symbol,
)


def _func(name: str) -> llvm.FuncOp:
    return llvm.FuncOp(name, llvm.LLVMFunctionType([]))


def test_hits_misses_and_every_kind_of_change_agree_with_xdsl():
    a, b = _func("a"), _func("b")
    module = ModuleOp([a, b])

    def agree(name: str):
        found = lookup_symbol(module, name)
        assert found is SymbolTable.lookup_symbol(module, name)
        return found

    assert agree("a") is a and agree("b") is b and agree("c") is None
    c = _func("c")
    module.body.block.add_op(c)  # added after the index was built
    assert agree("c") is c
    b.detach()  # removed
    assert agree("b") is None
    a.sym_name = StringAttr("renamed")  # renamed in place
    assert agree("a") is None and agree("renamed") is a
    b2 = _func("b")
    module.body.block.insert_op_before(b2, c)  # a new op under an old name
    assert agree("b") is b2


def test_an_op_outside_any_symbol_table_raises_like_xdsl():
    import pytest

    with pytest.raises(ValueError, match="no SymbolTable ancestor"):
        lookup_symbol(_func("lonely"), "x")


def test_the_patch_used_while_verifying_is_undone_even_when_nested():
    with indexed_symbol_lookup():
        with indexed_symbol_lookup():
            assert SymbolTable.__dict__["lookup_symbol"] is not _XDSL_LOOKUP
        assert SymbolTable.__dict__["lookup_symbol"] is not _XDSL_LOOKUP
    assert SymbolTable.__dict__["lookup_symbol"] is _XDSL_LOOKUP


def test_a_class_that_becomes_a_symbol_later_is_found():
    """The per-class answer (`_is_symbol_class`) follows a trait added to the class."""
    from xdsl.irdl import IRDLOperation, irdl_op_definition, prop_def
    from xdsl.traits import SymbolOpInterface

    @irdl_op_definition
    class Later(IRDLOperation):
        name = "test.later"
        sym_name = prop_def(StringAttr)

    op = Later.create(properties={"sym_name": StringAttr("x")})
    module = ModuleOp([op])
    assert lookup_symbol(module, "x") is None is SymbolTable.lookup_symbol(module, "x")
    Later.traits.add_trait(SymbolOpInterface())
    assert lookup_symbol(module, "x") is op is SymbolTable.lookup_symbol(module, "x")


def _first_unused_by_lookups(module: ModuleOp, base: str) -> str:
    """What `lower-to-llvm` asked before: `lookup_symbol` misses, one rescan each."""
    index = 0
    while SymbolTable.lookup_symbol(module, f"{base}{index}") is not None:
        index += 1
    return f"{base}{index}"


def test_fresh_names_are_those_a_loop_of_lookups_finds():
    """`SymbolNames.fresh` gives the first free `<base><n>`, as a loop of lookups does, as
    symbols are inserted at the end (the outlined functions) and at the start (the
    declarations) of the block and reported to it."""
    module = ModuleOp([_func("k_par0"), _func("k"), _func("j_par1")])
    names = SymbolNames(module)
    for base in ("k_par", "j_par", "k_par", "j_par", "new_par"):
        expected = _first_unused_by_lookups(module, base)
        name = names.fresh(base)
        assert name == expected
        module.body.block.add_op(op := _func(name))  # as the outlining inserts it
        names.observe(op)
    block = module.body.block
    first = _func("k_par3")
    block.insert_op_before(first, block.first_op)  # mid-block, as a declaration goes
    names.observe(first)
    assert names.fresh("k_par") == _first_unused_by_lookups(module, "k_par") == "k_par4"


def test_fresh_names_count_a_name_handed_out_as_taken():
    names = SymbolNames(ModuleOp([_func("f_par0")]))
    assert [names.fresh("f_par"), names.fresh("f_par"), names.fresh("g_par")] == [
        "f_par1",
        "f_par2",
        "g_par0",
    ]


def test_observe_ignores_ops_outside_the_block_and_non_symbols():
    module = ModuleOp([_func("f")])
    names = SymbolNames(module)
    names.observe(_func("f_par0"))  # not in the block
    names.observe(llvm.ReturnOp())
    assert names.fresh("f_par") == "f_par0"


def test_the_lowering_reports_symbols_its_rewriter_inserts():
    """Through `locating_walker(on_insert=...)`, a symbol a pattern inserts at the start
    of the module, where a scan remembered from before would not look, is known."""
    from xdsl.pattern_rewriter import PatternRewriter, RewritePattern
    from xdsl.rewriter import InsertPoint

    from lamina.core.locations import locating_walker

    module = ModuleOp([_func("f")])
    names = SymbolNames(module)

    class Declare(RewritePattern):
        def match_and_rewrite(self, op, rewriter: PatternRewriter, /):
            if isinstance(op, llvm.FuncOp) and op.sym_name.data == "f":
                if lookup_symbol(module, "f_par0") is None:
                    rewriter.insert(_func("f_par0"), InsertPoint.at_start(module.body.block))

    locating_walker(Declare(), on_insert=(names.observe,)).rewrite_module(module)
    assert names.fresh("f_par") == "f_par1" == _first_unused_by_lookups(module, "f_par")
