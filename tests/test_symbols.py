"""core/symbols.py: the indexed symbol lookup answers exactly as xDSL's scan."""

from __future__ import annotations

from xdsl.dialects import llvm
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.traits import SymbolTable

from lamina.core.symbols import _XDSL_LOOKUP, indexed_symbol_lookup, lookup_symbol


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
