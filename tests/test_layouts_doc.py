"""docs/layouts.md's worked examples compile, run and say what they claim."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

import lamina

DOC = Path(__file__).parent.parent / "docs" / "layouts.md"


def _blocks() -> list[tuple[str, str]]:
    """The page's fenced code blocks as (language, text)."""
    blocks: list[tuple[str, str]] = []
    lang: str | None = None
    lines: list[str] = []
    for line in DOC.read_text().splitlines():
        if lang is None and line.startswith("```"):
            lang, lines = line[3:].strip(), []
        elif lang is not None and line.strip() == "```":
            blocks.append((lang, "\n".join(lines) + "\n"))
            lang = None
        elif lang is not None:
            lines.append(line)
    return blocks


def _examples() -> list[str]:
    return [text for lang, text in _blocks() if lang == "mlir"]


def _example() -> str:
    return _examples()[0]


def _lowered(tmp_path: Path, program: str) -> str:
    source = tmp_path / "example.mlir"
    source.write_text(program)
    return subprocess.run(
        [sys.executable, "-m", "lamina.tools.lamina_opt", str(source), "--compile-to", "lowering"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def _plain_block(starting: str) -> str:
    """The unlabelled code block of the page that starts with `starting`."""
    (block,) = [text for lang, text in _blocks() if not lang and text.startswith(starting)]
    return block


def test_worked_example_results() -> None:
    x = (np.arange(12, dtype=np.float32) - 6).reshape(1, 3, 2, 2)
    blocked, back = lamina.compile(_example()).run("main", x)
    np.testing.assert_array_equal(blocked[0, 0, 0, 0], [-6, -2, 2, 0, 0, 0, 0, 0])
    np.testing.assert_array_equal(back, np.maximum(x, 0))


def test_worked_example_constraint_reaches_the_relu_kernel(tmp_path: Path) -> None:
    lowered = _lowered(tmp_path, _example())
    claimed = re.search(r"^(loop\.func private @te_relu.*\}), \.\.\.$", DOC.read_text(), re.M)
    assert claimed is not None
    assert claimed.group(1) in lowered


def test_left_padding_example_results() -> None:
    """The section "Padding at the start": the physical tensor the page prints
    (pad, data, pad) and relu(x) back through the cropping inverse."""
    x = np.arange(14, dtype=np.float32) - 7
    tiles, back = lamina.compile(_examples()[1]).run("main", x)
    printed = ast.literal_eval(_plain_block("[[").strip())
    np.testing.assert_array_equal(tiles, np.array(printed, dtype=np.float32))
    np.testing.assert_array_equal(back, np.maximum(x, 0))


def test_left_padding_example_inverse_kernel(tmp_path: Path) -> None:
    """The inverse's loop the page shows is the one `--compile-to lowering` prints."""
    shown = [line.strip() for line in _plain_block("loop.for %i0").splitlines()]
    lowered = [line.strip() for line in _lowered(tmp_path, _examples()[1]).splitlines()]
    starts = [i for i, line in enumerate(lowered) if line == shown[0]]
    assert any(lowered[i : i + len(shown)] == shown for i in starts)
