"""core/accessors.py: within `fast_accessors`, every named single operand and result
reads the same value xDSL's accessor reads, at every phase of a pipeline."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr, i64
from xdsl.irdl.operations import BaseAccessor, BeforeVariadicSingleAccessor

from lamina.core.accessors import fast_accessors
from lamina.core.context import make_context
from lamina.core.diagnostics import parse_module
from lamina.driver.pipeline import passes_for_module

EXAMPLES = Path(__file__).parent.parent / "examples"


def _named(op) -> dict[str, object]:
    """Every named construct of `op`'s class read through its accessor (or the error)."""
    out: dict[str, object] = {}
    for klass in type(op).__mro__:
        for name, accessor in vars(klass).items():
            if isinstance(accessor, BaseAccessor) and name not in out:
                try:
                    out[name] = getattr(op, name)
                except Exception as err:  # noqa: BLE001 - the same error both ways
                    out[name] = type(err)
    return out


def _same(a: dict[str, object], b: dict[str, object]) -> bool:
    if a.keys() != b.keys():
        return False
    for name, x in a.items():
        y = b[name]
        if isinstance(x, type):
            if x is not y:
                return False
        elif isinstance(x, list | tuple) or hasattr(x, "__len__") and not hasattr(x, "type"):
            if list(x) != list(y):  # pyright: ignore[reportArgumentType]
                return False
        elif x is not y:
            return False
    return True


@pytest.mark.parametrize("name", ["cnn.mlir", "attention.mlir"])
def test_same_values_in_every_phase(name):
    ctx = make_context()
    module = parse_module(ctx, (EXAMPLES / name).read_text(), name)
    checked = 0
    for p in passes_for_module("default", module, None):
        p.apply(ctx, module)
        for op in list(module.walk())[:3000]:
            plain = _named(op)
            with fast_accessors():
                fast = _named(op)
            assert _same(plain, fast), op.name
            checked += len(plain)
    assert checked > 1000


def test_scoped_and_class_reads():
    a, b = arith.ConstantOp(IntegerAttr(1, i64)), arith.ConstantOp(IntegerAttr(2, i64))
    add = arith.AddiOp(a, b)
    assert "__get__" not in BeforeVariadicSingleAccessor.__dict__
    with fast_accessors():
        with fast_accessors():
            assert add.lhs is a.result and add.rhs is b.result
        assert add.result is add.results[0]
        with pytest.raises(AttributeError):
            _ = arith.AddiOp.lhs  # read from the class: xDSL's own error
    assert "__get__" not in BeforeVariadicSingleAccessor.__dict__  # inherited again
    assert add.lhs is a.result
