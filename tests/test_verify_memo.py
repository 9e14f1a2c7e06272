"""Memoized op verification (core/verify_memo.py): faster, and not one invariant weaker.

A key that verified is not verified again; everything else (other keys, the
ops whose verifier reads beyond the op, terminator rules, failures) is
verified in full every time.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from xdsl.context import Context
from xdsl.dialects import llvm
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from lamina.core import pass_manager
from lamina.core.context import make_context
from lamina.core.diagnostics import DiagnosticError, collect_verify_diagnostics, parse_module
from lamina.core.pass_base import ALL_PHASES, LaminaPass
from lamina.core.pass_manager import PassManager
from lamina.core.verify_memo import _declared_local, is_local, memo_key, structure
from lamina.dialects import loop

GOOD = """\
loop.func @f(%x: memref<4x8xf32>, %i: index, %j: index) {
  %v = loop.load %x[%i, %j] : memref<4x8xf32>
  %w = arith.addf %v, %v : f32
  loop.store %w, %x[%i, %j] : memref<4x8xf32>
  loop.return
}
"""


def _parse(text: str) -> ModuleOp:
    return Parser(make_context(), text).parse_module()


def _messages(module: ModuleOp) -> list[str]:
    return [d.message for d in collect_verify_diagnostics(module)]


def test_classification_reads_the_verifiers_and_traits():
    assert is_local(llvm.AddOp) and is_local(llvm.GEPOp) and is_local(llvm.ConstantOp)
    assert is_local(loop.LoadOp) and is_local(loop.StoreOp) and is_local(loop.AllocOp)
    # position, parents, symbol tables, nested regions: never memoized
    for cls in (llvm.BrOp, llvm.ReturnOp, llvm.CallOp, llvm.FuncOp, loop.ForOp, loop.YieldOp):
        assert not is_local(cls), cls.name
    assert not is_local(loop.CallOp) and not is_local(loop.FuncOp)


def test_a_memoized_key_still_lets_a_different_bad_op_fail():
    assert _messages(_parse(GOOD)) == []
    assert _messages(_parse(GOOD)) == []  # now from the memo
    bad = """\
loop.func @f(%x: memref<4x8xf32>, %i: index, %j: index) {
  %v = "loop.load"(%x, %i, %j) : (memref<4x8xf32>, index, index) -> f64
  loop.return
}
"""
    (message,) = [m for m in _messages(_parse(bad)) if "loop.load" in m]
    assert "value type must be the buffer's element type: expected f32, got f64" in message


def test_a_memoized_op_that_ends_a_block_is_still_checked_as_a_terminator():
    module = _parse(GOOD)
    assert _messages(module) == []
    func = next(op for op in module.walk() if isinstance(op, loop.FuncOp))
    block = func.body.block
    block.last_op.detach()  # loop.store, an op whose key verified, now ends the block
    assert memo_key(block.last_op) is None
    assert any("is not a terminator" in m for m in _messages(module))


@pytest.mark.parametrize("repeat", [1, 2])
def test_every_failure_is_reported_every_time(repeat):
    bad = """\
loop.func @g(%x: memref<4xf32>, %i: i64) {
  %v = "loop.load"(%x, %i) : (memref<4xf32>, i64) -> f32
  %w = "loop.load"(%x, %i) : (memref<4xf32>, i64) -> f32
  loop.return
}
"""
    for _ in range(repeat):
        messages = _messages(_parse(bad))
        assert len(messages) == 2 and all("index #0 must be of type index" in m for m in messages)


def test_keys_distinguish_types_and_attributes():
    module = _parse(
        """\
loop.func @h(%x: memref<4xf32>, %y: memref<4xf64>, %i: index) {
  %a = loop.load %x[%i] : memref<4xf32>
  %b = loop.load %y[%i] : memref<4xf64>
  %c = loop.load %x[%i] {tag} : memref<4xf32>
  %d = loop.load %x[%i] : memref<4xf32>
  loop.return
}
"""
    )
    loads = [op for op in module.walk() if isinstance(op, loop.LoadOp)]
    keys = [memo_key(op) for op in loads]
    assert keys[0] == keys[3]
    assert len({keys[0], keys[1], keys[2]}) == 3


# ---------------------------------------------------------------------------
# Whole modules: the pass manager does not re-verify a module no pass changed
# ---------------------------------------------------------------------------

MATMUL = """\
graph.func @main(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %c = graph.matmul %a, %b : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  graph.return %c : tensor<2x4xf32>
}
"""


@dataclass(frozen=True)
class Noop(LaminaPass):
    name = "test-memo-noop"
    phases = ALL_PHASES

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        pass


@dataclass(frozen=True)
class SwapOperands(Noop):
    """Swaps the matmul's operands: every op still exists, only a use-def edge changed."""

    name = "test-memo-swap"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        (matmul,) = [inner for inner in op.walk() if inner.name == "graph.matmul"]
        lhs, rhs = matmul.operands
        matmul.operands = [rhs, lhs]


def _module() -> ModuleOp:
    return parse_module(make_context(), MATMUL, "m.mlir")


def test_structure_is_equal_for_equal_ir_and_differs_on_any_edge_change():
    module = _module()
    assert structure(module) == structure(module) == structure(module.clone())
    before = structure(module)
    SwapOperands().apply(make_context(), module)
    assert structure(module) != before


def test_an_unchanged_module_is_verified_once(monkeypatch):
    calls = []
    real = pass_manager.verify_module
    monkeypatch.setattr(pass_manager, "verify_module", lambda m: calls.append(1) or real(m))
    PassManager([Noop(), Noop(), Noop(), Noop()]).run(make_context(), _module())
    assert len(calls) == 2  # after the first pass, and after the last (no later pass to skip)


def test_a_change_after_unchanged_passes_is_still_verified_and_caught():
    """The swapped matmul (3x4 @ 2x3) is invalid: a skipped verification would miss it."""
    with pytest.raises(DiagnosticError) as err:
        PassManager([Noop(), Noop(), SwapOperands(), Noop()]).run(make_context(), _module())
    text = err.value.format()
    assert "graph.matmul" in text and "while running pass 'test-memo-swap'" in text


def test_graph_compute_ops_are_local_and_an_override_must_declare_it_again():
    """`VERIFIES_LOCALLY` counts only on the class that defines `verify_`."""
    from lamina.dialects import graph

    assert is_local(graph.AddOp) and is_local(graph.Conv2dOp) and is_local(graph.GatherOp)
    assert not is_local(graph.CallOp) and not is_local(graph.ReturnOp)

    class Declared:
        VERIFIES_LOCALLY = True

        def verify_(self) -> None:
            pass

    class Inherits(Declared):
        pass

    class Overrides(Declared):  # e.g. a verifier that reads beyond the op
        def verify_(self) -> None:
            raise VerifyException("looks at the parent")

    assert _declared_local(Declared, Declared.verify_)
    assert _declared_local(Inherits, Inherits.verify_)
    assert not _declared_local(Overrides, Overrides.verify_)


def test_the_identity_memo_answers_like_the_value_memo(monkeypatch):
    """An op whose attributes are the very objects of a verified key is known by
    identity; an equal key made of other objects is found by value."""
    from lamina.core import verify_memo

    monkeypatch.setattr(verify_memo, "_verified", set())
    monkeypatch.setattr(verify_memo, "_by_identity", {})
    module = _parse(GOOD)
    ops = [op for op in module.walk() if memo_key(op) is not None]
    key = memo_key(ops[0])
    assert key is not None and not verify_memo.already_verified(key)
    verify_memo.remember(key)
    again = memo_key(ops[0])
    assert again is not None and verify_memo.already_verified(again)
    func = _parse(GOOD).body.block.first_op
    assert func is not None and func.regions[0].block.first_op is not None
    other = memo_key(func.regions[0].block.first_op)  # the same key from new objects
    assert (
        other is not None
        and other == key
        and verify_memo._identity(other) != verify_memo._identity(key)
    )
    assert verify_memo.already_verified(other)  # by value, then remembered by identity
    assert verify_memo._identity(other) in verify_memo._by_identity
