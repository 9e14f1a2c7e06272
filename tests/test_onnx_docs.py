"""docs/onnx.md's worked example runs as written, and so does examples/resnet18_onnx.py."""

from __future__ import annotations

import contextlib
import io
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

ROOT = Path(__file__).parent.parent
PAGE = ROOT / "docs" / "onnx.md"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", PAGE.read_text(), re.S)


def test_worked_example_runs(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    python = _blocks("python")[0]
    exec(compile(python, str(PAGE), "exec"), {})  # noqa: S102 - the page's own code
    (shell,) = _blocks("sh")
    bin_dir = Path(sys.executable).parent
    for line in shell.strip().splitlines():
        tool, *args = line.split()
        done = subprocess.run([str(bin_dir / tool), *args], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    assert "graph.conv2d" in (tmp_path / "small.mlir").read_text()
    assert "dense_resource<__elided__>" in (tmp_path / "small-outline.mlir").read_text()


def test_onnx_in_every_tool_example_runs(tmp_path, monkeypatch) -> None:
    """The "`.onnx` in every tool" block: lamina.compile on a .onnx path with input_shapes."""
    monkeypatch.chdir(tmp_path)
    (python,) = [block for block in _blocks("python") if "input_shapes=" in block]
    exec(compile(python, str(PAGE), "exec"), {})  # noqa: S102 - the page's own code
    bin_dir = Path(sys.executable).parent
    done = subprocess.run([str(bin_dir / "lamina-run"), "dynamic.onnx", "--input-shape",
                           "image=2,3,8,8"], capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "out0: float32[2, 4, 8, 8]" in done.stdout


def test_pytorch_example_runs(tmp_path, monkeypatch) -> None:
    """The "From PyTorch" block: torchvision's ResNet-18 exported, imported, compiled,
    checked against PyTorch."""
    pytest.importorskip("torchvision")
    pytest.importorskip("onnxscript")
    monkeypatch.chdir(tmp_path)
    (python,) = [block for block in _blocks("python") if "torch.onnx.export" in block]
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()) as out:
        # PyTorch's exporter warns about its own internals (not the model's).
        warnings.simplefilter("ignore")
        exec(compile(python, str(PAGE), "exec"), {})  # noqa: S102 - the page's own code
    assert "Lamina and PyTorch agree" in out.getvalue()


def test_resnet18_example_runs_small() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "resnet18_onnx.py"), "--size", "32",
         "--repeat", "1"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "time per image: lamina" in done.stdout


def test_node_names_in_the_profile_example_runs(tmp_path, monkeypatch, capsys) -> None:
    """The "Which node is slow" block: each call site of a profile names its nodes."""
    monkeypatch.chdir(tmp_path)
    (python,) = [block for block in _blocks("python") if "sites_table" in block]
    exec(compile(python, str(PAGE), "exec"), {})  # noqa: S102 - the page's own code
    out = capsys.readouterr().out.splitlines()
    printed = re.findall(r"```text\n(.*?)```", PAGE.read_text().split("sites_table")[1], re.S)[0]
    assert out[:4] == printed.splitlines()
    assert out[4] == "@main: 20 runs, 4 call sites"
    assert any(line.endswith("block2/conv, block2/relu") for line in out[6:])
