"""The progress line (driver/instruments.py): on a terminal's stderr by default,
quiet when piped, `--progress`/`--no-progress` in every tool and
`lamina.compile(progress=...)`, never mixed into `-v` output.

The terminal is a real pseudo-terminal (`pty`), the tools real processes.
"""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import lamina

PROGRAM = """\
graph.func @main(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %c = graph.matmul %a, %b : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %d = graph.relu %c : (tensor<8x8xf32>) -> tensor<8x8xf32>
  graph.return %d : tensor<8x8xf32>
}
"""


@pytest.fixture()
def program(tmp_path: Path) -> Path:
    path = tmp_path / "p.mlir"
    path.write_text(PROGRAM)
    return path


def _run(tool: str, *argv: str, tty: bool) -> tuple[int, str, str]:
    """Run `tool` with stderr on a pseudo-terminal (`tty`) or a pipe; (status, out, err)."""
    command = [sys.executable, "-m", f"lamina.tools.{tool}", *argv]
    env = {**os.environ, "LAMINA_CACHE": "0"}
    if not tty:
        done = subprocess.run(command, capture_output=True, env=env, timeout=600)  # bytes: keep \r
        return done.returncode, done.stdout.decode(), done.stderr.decode()
    leader, follower = pty.openpty()
    try:
        with subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=follower, env=env, text=True
        ) as process:
            os.close(follower)
            chunks = []
            while True:
                try:
                    chunk = os.read(leader, 65536)
                except OSError:  # the follower side closed: the process is done
                    break
                if not chunk:
                    break
                chunks.append(chunk)
            out = process.stdout.read() if process.stdout else ""
            status = process.wait(timeout=600)
    finally:
        os.close(leader)
    return status, out, b"".join(chunks).decode(errors="replace")


def test_a_terminal_sees_one_updating_line(program: Path) -> None:
    status, out, err = _run("lamina_run", str(program), tty=True)
    assert status == 0, err
    assert "\r" in err and "\x1b[K" in err and "lamina: " in err
    # A row is shown as it starts, the last unit built too; the passes and the
    # other units in between at most ten times a second.
    for row in ("parse + verify", "optimization", "lowering", "codegen | built 2/2 units"):
        assert f"lamina: {row} | " in err, err
    assert "ETA" in err
    assert err.rstrip("\n").endswith("\r\x1b[K"), repr(err[-80:])  # erased at the end
    assert "\n" not in err.replace("\r\n", "")  # one line, never scrolled
    assert "compile: " in out and "out0: float32[8, 8]" in out


def test_quiet_when_piped_unless_asked(program: Path) -> None:
    status, _, err = _run("lamina_run", str(program), tty=False)
    assert status == 0 and err == ""
    status, _, err = _run("lamina_run", str(program), "--progress", tty=False)
    assert status == 0 and "\r" in err and "codegen | built " in err
    status, _, err = _run("lamina_run", str(program), "--no-progress", tty=True)
    assert status == 0 and "\r" not in err


def test_never_mixed_into_verbose_output(program: Path) -> None:
    status, _, err = _run("lamina_run", str(program), "-v", "--progress", tty=True)
    assert status == 0
    assert "\r\x1b" not in err and "entering phase lowering" in err


def test_every_tool_takes_the_flags(program: Path, tmp_path: Path) -> None:
    status, _, err = _run(
        "lamina_compile", str(program), "-o", str(tmp_path / "p.o"), "--progress", tty=False
    )
    assert status == 0 and "\r" in err and "codegen" in err, err
    status, out, err = _run("lamina_opt", str(program), "--compile-to", "lowering", tty=True)
    assert status == 0 and "\r" in err and "lamina: lowering | " in err, err
    # The module goes to stdout, never into the progress line (which may name a slow
    # pass such as `lower-graph` on a loaded machine).
    assert "graph.func" not in err and "module" in out
    status, _, err = _run(
        "lamina_opt", str(program), "--compile-to", "lowering", "--no-progress", tty=True
    )
    assert status == 0 and err == ""


def test_a_diagnostic_starts_on_a_clean_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.mlir"
    bad.write_text(PROGRAM.replace("graph.relu %c", "graph.relu %nope"))
    status, _, err = _run("lamina_run", str(bad), "--progress", tty=False)
    assert status == 1
    assert f"\n{bad}:" in "\n" + err.split("\r\x1b[K")[-1], repr(err)


def test_compile_progress_argument(capsys) -> None:
    a = np.eye(8, dtype=np.float32)
    exe = lamina.compile(PROGRAM, cache=False, progress=True)
    np.testing.assert_array_equal(exe.run("main", a, a), a)
    err = capsys.readouterr().err
    assert "\r" in err and "codegen" in err
    lamina.compile(PROGRAM, cache=False, progress=False)
    lamina.compile(PROGRAM, cache=False)  # pytest's stderr is not a terminal
    assert capsys.readouterr().err == ""
