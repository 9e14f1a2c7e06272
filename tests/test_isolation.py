"""core/isolation.py: `IsolatedFromAbove`'s check answers as xDSL's does, at the same op,
with the same message."""

from __future__ import annotations

import random

import pytest
from xdsl.dialects import llvm, test
from xdsl.dialects.builtin import ModuleOp, i32
from xdsl.ir import Block, Operation, Region
from xdsl.parser import Parser
from xdsl.traits import IsolatedFromAbove
from xdsl.utils.exceptions import VerifyException

from lamina.core import isolation
from lamina.core.context import make_context
from lamina.core.diagnostics import collect_verify_diagnostics
from lamina.core.isolation import _XDSL_VERIFY, fast_isolation_check, verify_isolated
from lamina.core.walk import preorder

NESTED = """\
loop.func @f(%x: memref<4x8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  loop.for %i = %c0 to %n step %c1 {
    loop.for %j = %c0 to %n step %c1 {
      %v = loop.load %x[%i, %j] : memref<4x8xf32>
      loop.store %v, %x[%j, %i] : memref<4x8xf32>
    }
  }
  loop.return
}
"""


def parse_module(text: str) -> ModuleOp:
    return Parser(make_context(), text).parse_module()


def _outcome(verify, trait: IsolatedFromAbove, op: Operation) -> str | None:
    try:
        verify(trait, op)
    except VerifyException as err:
        return str(err)
    return None


def _isolated_ops(module: Operation) -> list[Operation]:
    return [op for op in preorder(module) if op.has_trait(IsolatedFromAbove)]


def test_the_same_answers_on_a_lowered_loop_nest_and_after_breaking_it():
    module = parse_module(NESTED)
    trait = IsolatedFromAbove()
    ops = _isolated_ops(module)
    assert ops
    for op in ops:
        assert _outcome(verify_isolated, trait, op) is None is _outcome(_XDSL_VERIFY, trait, op)
    # Every load/store operand in turn pointed at a value of another function's
    # scope, or at the function op's own result-less outside: the same first failure.
    other = parse_module(NESTED)
    outside = next(iter(other.body.block.first_op.regions[0].block.args))
    users = [op for op in preorder(module) if op.operands]
    for user in random.Random(0).sample(users, min(6, len(users))):
        saved = user.operands[0]
        user.operands = [outside, *user.operands[1:]]
        expected = [_outcome(_XDSL_VERIFY, trait, op) for op in ops]
        assert any(e is not None and "IsolatedFromAbove" in e for e in expected)
        assert [_outcome(verify_isolated, trait, op) for op in ops] == expected
        user.operands = [saved, *user.operands[1:]]


def test_a_value_of_the_isolated_op_itself_and_of_a_detached_op_fail_as_in_xdsl():
    trait = IsolatedFromAbove()
    inner = Block(arg_types=[i32])
    user = test.TestOp([inner.args[0]])
    inner.add_op(user)
    func = llvm.FuncOp("g", llvm.LLVMFunctionType([]), body=Region(inner))
    ModuleOp([func])
    assert _outcome(verify_isolated, trait, func) is None is _outcome(_XDSL_VERIFY, trait, func)
    detached = test.TestOp(result_types=[i32])
    user.operands = [detached.results[0]]
    expected = _outcome(_XDSL_VERIFY, trait, func)
    assert expected is not None and _outcome(verify_isolated, trait, func) == expected


def test_installed_only_while_verifying():
    assert IsolatedFromAbove.verify is _XDSL_VERIFY
    with fast_isolation_check(), fast_isolation_check():
        assert IsolatedFromAbove.verify is verify_isolated
    assert IsolatedFromAbove.verify is _XDSL_VERIFY
    assert collect_verify_diagnostics(parse_module(NESTED)) == []
    assert IsolatedFromAbove.verify is _XDSL_VERIFY


@pytest.mark.parametrize("broken", [False, True])
def test_diagnostics_of_a_module_are_those_of_xdsls_check(broken: bool):
    module = parse_module(NESTED)
    if broken:
        load = next(op for op in preorder(module) if op.name == "loop.load")
        other = parse_module(NESTED)
        outside = next(iter(other.body.block.first_op.regions[0].block.args))
        load.operands = [outside, *load.operands[1:]]
    fast = [d.message for d in collect_verify_diagnostics(module)]
    saved = isolation.verify_isolated
    isolation.verify_isolated = _XDSL_VERIFY  # what `fast_isolation_check` installs
    try:
        slow = [d.message for d in collect_verify_diagnostics(module)]
    finally:
        isolation.verify_isolated = saved
    assert fast == slow
    assert any("IsolatedFromAbove" in m for m in fast) is broken
