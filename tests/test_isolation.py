"""The `IsolatedFromAbove` check by block sets (core/isolation.py): it passes and fails
exactly where xDSL's does, and a failure is xDSL's own error."""

from __future__ import annotations

import pytest
from xdsl.dialects import arith, test
from xdsl.dialects.builtin import ModuleOp, i32
from xdsl.ir import Block, Region
from xdsl.traits import IsolatedFromAbove
from xdsl.utils.exceptions import VerifyException

from lamina.core.context import make_context
from lamina.core.diagnostics import collect_verify_diagnostics, parse_module
from lamina.core.isolation import _XDSL_VERIFY, fast_isolation_check, holds
from lamina.core.walk import preorder


def _xdsl_passes(op) -> bool:
    try:
        _XDSL_VERIFY(IsolatedFromAbove(), op)
    except VerifyException:
        return False
    return True


def _isolated(module):
    return [op for op in preorder(module) if op.has_trait(IsolatedFromAbove)]


# A kernel with a loop nest: values from the function's block used two regions down.
NESTED = """\
loop.func @f(%x: memref<4x8xf32>, %n: index) {
  loop.for %i = %n to %n step %n {
    loop.for %j = %n to %n step %n {
      %v = loop.load %x[%i, %j] : memref<4x8xf32>
      %w = arith.addf %v, %v : f32
      loop.store %w, %x[%i, %j] : memref<4x8xf32>
    }
  }
  loop.return
}
"""


def test_well_formed_modules_pass_both_ways():
    module = parse_module(make_context(), NESTED)
    for op in _isolated(module):
        assert holds(op) and _xdsl_passes(op)


def _leaky_module() -> tuple[ModuleOp, arith.ConstantOp]:
    """A module whose inner op uses a value defined outside it (in another module)."""
    outside = arith.ConstantOp.from_int_and_width(1, i32)
    Block([outside])  # the constant sits in a block that is not the module's
    user = test.TestOp([outside.result])
    inner = ModuleOp([user])
    return inner, outside


def test_a_value_from_outside_fails_with_xdsls_message():
    module, _ = _leaky_module()
    assert not holds(module) and not _xdsl_passes(module)
    with fast_isolation_check(), pytest.raises(VerifyException, match="IsolatedFromAbove"):
        IsolatedFromAbove().verify(module)
    assert [d for d in collect_verify_diagnostics(module) if "IsolatedFromAbove" in d.message]


def test_a_nested_isolated_op_using_its_parents_value():
    """The nested module is not isolated (it uses the outer module's value); the outer
    module is (it does not look into the nested one's body): both checks agree."""
    holder = test.TestOp(regions=[Region(Block([]))], result_types=[i32])
    holder.regions[0].block.add_op(test.TestOp([holder.results[0]]))  # its own result
    module = ModuleOp([holder])
    nested = ModuleOp([test.TestOp([holder.results[0]])])
    module.body.block.add_op(nested)
    assert holds(module) and _xdsl_passes(module)
    assert not holds(nested) and not _xdsl_passes(nested)


def test_values_inside_nested_isolated_ops_and_block_arguments():
    arg_block = Block(arg_types=[i32])
    arg_block.add_op(test.TestOp([arg_block.args[0]]))
    nested = ModuleOp([test.TestOp(regions=[Region(arg_block)])])
    outer = ModuleOp([nested])
    assert holds(outer) and _xdsl_passes(outer)
    assert holds(nested) and _xdsl_passes(nested)


def test_the_patch_is_undone():
    original = IsolatedFromAbove.__dict__["verify"]
    with fast_isolation_check(), fast_isolation_check():
        assert IsolatedFromAbove.__dict__["verify"] is not original
    assert IsolatedFromAbove.__dict__["verify"] is original
