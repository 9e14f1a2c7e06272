"""docs/python-api.md: every snippet runs, in order, in one namespace, as written."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "python-api.md"


def test_snippets_run_in_order(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    snippets = re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.DOTALL)
    assert len(snippets) >= 7
    namespace: dict[str, object] = {}
    for snippet in snippets:
        exec(compile(snippet, str(PAGE), "exec"), namespace)
    printed = capsys.readouterr().out
    assert "<lamina.Executable main(x: float32[64, 784]" in printed
    assert "['x', 'w1', 'b1', 'w2', 'b2', 'w3', 'b3']" in printed
    assert "['manifest.json', 'model.so', 'weights.bin']" in printed
    assert "compile statistics" in printed and "cpu:0" in printed


def test_the_table_lists_dir_lamina():
    import lamina

    text = PAGE.read_text()
    for name in dir(lamina):
        if name != "__version__":
            assert f"`lamina.{name}" in text, name
