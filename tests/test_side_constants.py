"""Large constants in a side file beside the text (core/resources.py, docs/onnx.md).

`lamina-import-onnx -o M.mlir` and `lamina-opt -o M.mlir` write constants of
1 KiB or more to `M.mlir.bin` (64-byte aligned) and name them with
`dense_resource<...>` handles; every tool reads such a text, resolving the
side file beside it; the round trip keeps the constants bit for bit; a
missing or short side file is a located diagnostic with exit status 1.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from onnx_util import make_model, run_ort

import lamina
from lamina.core.context import make_context
from lamina.core.dense import dense_value
from lamina.core.dense_text import print_module, write_module
from lamina.core.diagnostics import DiagnosticError, parse_module
from lamina.core.resources import ALIGNMENT, THRESHOLD_BYTES
from lamina.frontends.builder import GraphBuilder
from lamina.tools import lamina_compile, lamina_import_onnx, lamina_opt, lamina_run

from onnx import helper, save  # isort: skip

RNG = np.random.default_rng(0)
BIG = RNG.standard_normal((16, 32)).astype(np.float32)  # 2 KiB: to the side file
SMALL = np.array([1.5, -2.0, 0.25], np.float32)  # 12 bytes: stays in the text


def _module():
    """A program with a large constant (twice: stored once), a small one, and a
    large non-finite one (an attention mask: survives too)."""
    g = GraphBuilder()
    x = g.param((16, 32))
    mask = np.where(RNG.random((16, 32)) < 0.5, -np.inf, 0.0).astype(np.float32)
    y = g.add(g.add(g.add(x, g.constant(BIG)), g.constant(BIG.copy())), g.constant(mask))
    g.ret(y, g.add(g.param((3,)), g.constant(SMALL)))
    return g.module(), mask


def _constants(module) -> list[np.ndarray]:
    return [dense_value(op.value) for op in module.walk() if op.name == "graph.constant"]


def test_round_trip_through_a_side_file(tmp_path: Path) -> None:
    module, mask = _module()
    out = tmp_path / "m.mlir"
    write_module(module, out)
    text = out.read_text()
    side = tmp_path / "m.mlir.bin"
    assert text.count("dense_resource<") == 3 and "dense<[1.500000e+00" in text
    assert re.search(r'"blob:m\.mlir\.bin@0\+2048"', text), text
    assert side.stat().st_size == 2 * ALIGNMENT * 16 * 2  # BIG once, the mask aligned after it
    offsets = [int(o) for o in re.findall(r"@(\d+)\+", text)]
    assert all(o % ALIGNMENT == 0 for o in offsets)

    parsed = parse_module(make_context(), text, str(out))
    got = _constants(parsed)
    assert [c.tobytes() for c in got] == [c.tobytes() for c in _constants(module)]
    np.testing.assert_array_equal(got[2], mask)

    again = tmp_path / "again.mlir"  # text -> parse -> print -> parse: the same constants
    write_module(parsed, again)
    assert (tmp_path / "again.mlir.bin").read_bytes() == side.read_bytes()
    reparsed = parse_module(make_context(), again.read_text(), str(again))
    assert [c.tobytes() for c in _constants(reparsed)] == [c.tobytes() for c in got]


def test_threshold_and_inline_form(tmp_path: Path) -> None:
    g = GraphBuilder()
    just_below = np.arange(THRESHOLD_BYTES // 4 - 1, dtype=np.float32)
    g.ret(g.add(g.param(just_below.shape), g.constant(just_below)))
    write_module(g.module(), tmp_path / "m.mlir")
    assert "dense_resource" not in (tmp_path / "m.mlir").read_text()
    assert not (tmp_path / "m.mlir.bin").exists()

    module, _ = _module()
    write_module(module, tmp_path / "inline.mlir", inline_constants=True)
    assert (tmp_path / "inline.mlir").read_text() == print_module(module) + "\n"
    assert not (tmp_path / "inline.mlir.bin").exists()


def test_every_tool_reads_the_side_file_beside_the_text(tmp_path: Path, monkeypatch, capsys):
    module, mask = _module()
    (tmp_path / "sub").mkdir()
    path = tmp_path / "sub" / "m.mlir"
    write_module(module, path)
    monkeypatch.chdir(tmp_path)  # relative to the text's directory, not the working one
    x = RNG.standard_normal((16, 32)).astype(np.float32)
    want = x + BIG + BIG + mask
    for source in (str(path), path, path.read_text()):
        if isinstance(source, str) and "\n" in source:
            monkeypatch.chdir(tmp_path / "sub")  # text without a file: beside the cwd
        exe = lamina.compile(source, cache=False)
        np.testing.assert_allclose(exe.run("main", x, SMALL)[0], want, rtol=1e-6)
    monkeypatch.chdir(tmp_path)

    assert lamina_opt.main([str(path), "-o", "rt.mlir"]) == 0
    assert Path("rt.mlir.bin").read_bytes() == (tmp_path / "sub" / "m.mlir.bin").read_bytes()
    assert lamina_opt.main(["rt.mlir", "--inline-constants", "-o", "inline.mlir"]) == 0
    assert "dense_resource" not in Path("inline.mlir").read_text()
    assert not Path("inline.mlir.bin").exists()
    capsys.readouterr()
    assert lamina_opt.main(["rt.mlir"]) == 0  # stdout: everything in the text
    assert "dense_resource" not in capsys.readouterr().out

    with pytest.raises(SystemExit) as exit_:
        lamina_run.main(["rt.mlir", "--entry", "main"])
    assert exit_.value.code == 0, capsys.readouterr().err
    assert lamina_compile.run(["rt.mlir", "-o", "rt.o"]) == 0
    assert Path("rt.o").stat().st_size > 0


def test_the_cache_key_follows_the_side_file(tmp_path: Path, monkeypatch) -> None:
    """The text alone does not say what the constants are: an edited side file
    with the same text must not hit the disk cache of the old one."""
    monkeypatch.setenv("LAMINA_CACHE_DIR", str(tmp_path / "cache"))
    module, mask = _module()
    path = tmp_path / "m.mlir"
    write_module(module, path)
    x = np.zeros((16, 32), np.float32)
    assert lamina.compile(str(path)).cache_hit is False
    assert lamina.compile(str(path)).cache_hit is True
    side = tmp_path / "m.mlir.bin"
    data = bytearray(side.read_bytes())
    data[:4] = np.float32(7.0).tobytes()
    side.write_bytes(bytes(data))
    exe = lamina.compile(str(path))
    assert exe.cache_hit is False
    assert exe.run("main", x, SMALL)[0][0, 0] == 2 * np.float32(7.0) + mask[0, 0]


@pytest.mark.parametrize("damage", ["missing", "truncated"])
def test_a_missing_or_short_side_file_is_a_located_error(tmp_path: Path, damage: str) -> None:
    module, _ = _module()
    path = tmp_path / "m.mlir"
    write_module(module, path)
    side = tmp_path / "m.mlir.bin"
    if damage == "missing":
        side.unlink()
    else:
        side.write_bytes(side.read_bytes()[:3000])
    text = path.read_text()
    with pytest.raises(DiagnosticError) as err:
        parse_module(make_context(), text, str(path))
    message = err.value.format()
    line = next(i + 1 for i, s in enumerate(text.splitlines()) if "blob:" in s)
    assert message.startswith(f"{path}:{line}") or f"{path}:{line + 1}:" in message, message
    assert ("No such file" in message) if damage == "missing" else ("truncated" in message)

    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "lamina.tools.lamina_opt",
            str(path),
            "-o",
            str(tmp_path / "o.mlir"),
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1, result.stderr
    assert f"{path}:" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "o.mlir").exists() and not (tmp_path / "o.mlir.bin").exists()


def test_a_resource_of_the_wrong_size_is_located(tmp_path: Path) -> None:
    module, _ = _module()
    path = tmp_path / "m.mlir"
    write_module(module, path)
    text = path.read_text().replace("tensor<16x32xf32>\n", "tensor<16x16xf32>\n", 1)
    with pytest.raises(DiagnosticError, match="holds 2048 bytes, tensor<16x16xf32> needs 1024"):
        parse_module(make_context(), text, str(path))


def test_mlirs_inline_hex_blobs_are_read() -> None:
    """MLIR's own spelling: the blob holds its alignment (u32), then the bytes."""
    data = np.arange(4, dtype=np.float32)
    text = (
        "graph.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %c = graph.constant dense_resource<blob1> : tensor<4xf32>\n"
        "  %y = graph.add %x, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n"
        "  graph.return %y : tensor<4xf32>\n}\n"
        '{-#\n  dialect_resources: {\n    builtin: {\n      blob1: "0x04000000'
        + data.tobytes().hex()
        + '"\n    }\n  }\n#-}\n'
    )
    module = parse_module(make_context(), text, "<test>")
    np.testing.assert_array_equal(_constants(module)[0], data)


def test_import_onnx_writes_the_side_file(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    w = rng.standard_normal((8, 4, 3, 3)).astype(np.float32)  # 1152 bytes
    x = rng.standard_normal((1, 4, 6, 6)).astype(np.float32)
    model = make_model(
        [helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1], name="conv")],
        {"x": x},
        ["y"],
        {"w": w},
        17,
    )
    save(model, str(tmp_path / "m.onnx"))
    out = tmp_path / "m.mlir"
    with pytest.raises(SystemExit) as exit_:
        lamina_import_onnx.main([str(tmp_path / "m.onnx"), "-o", str(out)])
    assert exit_.value.code == 0
    assert "dense_resource<" in out.read_text()
    assert (tmp_path / "m.mlir.bin").stat().st_size == w.nbytes
    got = lamina.compile(str(out), cache=False).run("main", x)
    np.testing.assert_allclose(got, run_ort(model, {"x": x})[0], rtol=1e-4, atol=1e-5)
