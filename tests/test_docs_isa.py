"""docs/performance.md, "Instruction set": its worked example runs as written."""

from __future__ import annotations

import re
from pathlib import Path

PAGE = Path(__file__).resolve().parent.parent / "docs" / "performance.md"


def test_worked_example_runs(capsys):
    section = PAGE.read_text().split("## Instruction set (`isa`)")[1].split("\n## ")[0]
    (example,) = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    exec(compile(example, str(PAGE), "exec"), {})
    lines = capsys.readouterr().out.splitlines()
    assert lines[:3] == ["haswell False", "True", "True"]
    assert "unknown isa 'avx3'" in lines[3] and "host, avx2, avx512" in lines[3]
