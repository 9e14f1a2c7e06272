"""core/walk.py: `preorder` lists exactly the ops `Operation.walk()` yields, in order."""

from __future__ import annotations

from pathlib import Path

import pytest

from lamina.core.context import make_context
from lamina.core.diagnostics import parse_module
from lamina.core.walk import preorder
from lamina.driver.pipeline import passes_for_module

EXAMPLES = Path(__file__).parent.parent / "examples"


@pytest.mark.parametrize("name", ["cnn.mlir", "attention.mlir", "residual.mlir"])
def test_preorder_is_walks_order_in_every_phase(name):
    """At every pass of the default pipeline (graph functions, te kernels, loop nests,
    parallel loops, the llvm dialect), on the module and on each of its ops."""
    ctx = make_context()
    module = parse_module(ctx, (EXAMPLES / name).read_text(), name)
    for p in passes_for_module("default", module, None):
        p.apply(ctx, module)
        walked = list(module.walk())
        listed = preorder(module)
        assert len(listed) == len(walked)
        assert all(a is b for a, b in zip(listed, walked, strict=True))
        for op in walked[1:200]:
            assert preorder(op) == list(op.walk())
