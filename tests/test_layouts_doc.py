"""docs/layouts.md's worked example compiles, runs and says what it claims."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np

import lamina

DOC = Path(__file__).parent.parent / "docs" / "layouts.md"


def _example() -> str:
    (program,) = re.findall(r"```mlir\n(.*?)```", DOC.read_text(), re.DOTALL)
    return program


def test_worked_example_results() -> None:
    x = (np.arange(12, dtype=np.float32) - 6).reshape(1, 3, 2, 2)
    blocked, back = lamina.compile(_example()).run("main", x)
    np.testing.assert_array_equal(blocked[0, 0, 0, 0], [-6, -2, 2, 0, 0, 0, 0, 0])
    np.testing.assert_array_equal(back, np.maximum(x, 0))


def test_worked_example_constraint_reaches_the_relu_kernel(tmp_path: Path) -> None:
    source = tmp_path / "example.mlir"
    source.write_text(_example())
    lowered = subprocess.run(
        [sys.executable, "-m", "lamina.tools.lamina_opt", str(source), "--compile-to", "lowering"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    claimed = re.search(r"^(loop\.func private @te_relu.*\}), \.\.\.$", DOC.read_text(), re.M)
    assert claimed is not None
    assert claimed.group(1) in lowered
