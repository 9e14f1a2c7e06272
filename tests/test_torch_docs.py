"""docs/pytorch.md's worked example runs as written, and its operator list is complete."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

PAGE = Path(__file__).parent.parent / "docs" / "pytorch.md"


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.S)


def _run_block(index: int) -> str:
    """Run the page's `index`-th Python block on a fresh dynamo; what it printed."""
    torch._dynamo.reset()
    with contextlib.redirect_stdout(io.StringIO()) as out:
        code = _python_blocks()[index]
        exec(compile(code, str(PAGE), "exec"), {})  # noqa: S102 - the page's own code
    torch._dynamo.reset()
    return out.getvalue()


def test_worked_example_runs() -> None:
    assert "Lamina and PyTorch agree" in _run_block(0)


def test_dynamic_batch_example_runs() -> None:
    """ "Shapes and recompiles": three batch sizes, one dynamic Lamina compile."""
    from lamina.frontends import torch as lamina_torch

    lamina_torch._DYNAMIC_BUILDS.clear()
    assert "batch sizes 3, 8, 17: 1 dynamic Lamina compile" in _run_block(1)


def test_every_supported_operator_is_listed() -> None:
    from lamina.frontends.torch_import import SUPPORTED

    section = PAGE.read_text().split("## Operators Lamina compiles")[1].split("\n## ")[0]
    listed = set(re.findall(r"`(\w+)`", section))
    names = {
        op.overloadpacket.__name__ for op in SUPPORTED if isinstance(op, torch._ops.OpOverload)
    }
    assert names - listed == set(), "supported but not listed in docs/pytorch.md"
