"""docs/compile-speed.md: its worked example runs as written."""

from __future__ import annotations

import re
from pathlib import Path

PAGE = Path(__file__).resolve().parent.parent / "docs" / "compile-speed.md"


def test_worked_example_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LAMINA_CACHE_DIR", str(tmp_path / "cache"))
    (example,) = re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.DOTALL)
    exec(compile(example, str(PAGE), "exec"), {})
    printed = capsys.readouterr().out
    assert "compile statistics (disk cache: miss)" in printed
    for row in ("ingestion", "optimization", "lowering", "llvm: optimize (O3)", "cache write"):
        assert row in printed
    assert len(list((tmp_path / "cache").glob("*.lxc"))) == 1
