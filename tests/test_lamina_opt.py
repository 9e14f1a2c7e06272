"""`lamina-opt` as a user meets it: every mistake is a located diagnostic and exit 1.

Each case runs the real tool in a subprocess and checks the exit status, an
MLIR-style `error:` line (with `file:line:col` when the error is in the
input) and that no Python traceback leaks out (docs/design.md §5).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

LOCATED_ERROR = re.compile(r"^(?P<file>[^\s:]+):(?P<line>\d+):(?P<col>\d+): error: ", re.M)

MATMUL = """\
graph.func @main(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %c = graph.matmul %a, %b : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  graph.return %c : tensor<2x4xf32>
}
"""


def lamina_opt(*args: str, stdin: str | None = None, cwd: Path | None = None):
    return subprocess.run(
        [sys.executable, "-m", "lamina.tools.lamina_opt", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


def write(tmp_path: Path, text: str, name: str = "input.mlir") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def assert_user_error(result, *fragments: str, located: str | None = None) -> str:
    """Exit status 1, an `error:` line, each fragment in stderr, and no traceback."""
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "Traceback" not in output, output
    assert "error:" in result.stderr, output
    for fragment in fragments:
        assert fragment in result.stderr, output
    if located is not None:
        match = LOCATED_ERROR.search(result.stderr)
        assert match, f"no file:line:col in {result.stderr!r}"
        where = f"{match['file']}:{match['line']}:{match['col']}"
        # `located` is `file:line:col`, or `file:line:` when the column is xDSL's choice.
        assert where == located or where.startswith(located) and located.endswith(":"), (
            result.stderr
        )
    return result.stderr


def test_valid_input_round_trips(tmp_path):
    result = lamina_opt(str(write(tmp_path, MATMUL)))
    assert result.returncode == 0, result.stderr
    assert "graph.matmul %a, %b" in result.stdout


def test_truncated_text(tmp_path):
    path = write(tmp_path, MATMUL[:-40])
    stderr = assert_user_error(lamina_opt(str(path)))
    assert LOCATED_ERROR.search(stderr), stderr
    assert "^" in stderr  # the source line with a caret, as MLIR prints it


def test_unknown_op(tmp_path):
    text = MATMUL.replace("graph.matmul", "graph.matmull")
    path = write(tmp_path, text)
    assert_user_error(lamina_opt(str(path)), "graph.matmull", located=f"{path}:2:")


def test_wrong_shape_is_reported_at_the_op(tmp_path):
    text = MATMUL.replace("%b: tensor<3x4xf32>", "%b: tensor<5x4xf32>").replace(
        "tensor<3x4xf32>) ->", "tensor<5x4xf32>) ->"
    )
    path = write(tmp_path, text)
    assert_user_error(lamina_opt(str(path)), "'graph.matmul' op", located=f"{path}:2:3")


def test_every_failing_op_is_reported(tmp_path):
    text = """\
func.func @f(%a: i32) -> i32 {
  "func.return"(%a, %a) : (i32, i32) -> ()
}
func.func @g(%a: i32) -> i32 {
  "func.return"() : () -> ()
}
"""
    stderr = assert_user_error(lamina_opt(str(write(tmp_path, text))))
    lines = [m["line"] for m in LOCATED_ERROR.finditer(stderr)]
    assert lines == ["2", "5"], stderr


def test_bad_attribute(tmp_path):
    text = (
        '"test.op"() {c = #lamina.constraint<affine_map<()[s0] -> (s0)>, 0.0 : f32>} : () -> ()\n'
    )
    path = write(tmp_path, text)
    result = lamina_opt(str(path), "--allow-unregistered-dialect")
    assert_user_error(result, "must not have symbols", located=f"{path}:1:1")


def test_bad_device_attribute(tmp_path):
    text = '"test.op"() {d = #lamina.device<cpu, 0>} : () -> ()\n'
    path = write(tmp_path, text)
    assert_user_error(lamina_opt(str(path), "--allow-unregistered-dialect"), located=f"{path}:1:33")


def test_unknown_phase_name(tmp_path):
    path = write(tmp_path, "module attributes {lamina.phase = #lamina.phase<bogus>} {}\n")
    assert_user_error(lamina_opt(str(path)), "unknown phase 'bogus'", located=f"{path}:1:49")


def test_unknown_flag(tmp_path):
    stderr = assert_user_error(lamina_opt(str(write(tmp_path, MATMUL)), "--no-such-flag"))
    assert "lamina-opt: error: unrecognized arguments: --no-such-flag" in stderr


def test_bad_compile_to_phase(tmp_path):
    assert_user_error(lamina_opt(str(write(tmp_path, MATMUL)), "--compile-to", "bogus"), "bogus")


def test_missing_file(tmp_path):
    missing = tmp_path / "missing.mlir"
    assert_user_error(lamina_opt(str(missing)), str(missing), "No such file")


def test_bad_pass_name(tmp_path):
    result = lamina_opt(str(write(tmp_path, MATMUL)), "-p", "cse,canonicalise")
    stderr = assert_user_error(result, located="<pass-pipeline>:1:5")
    assert "cse,canonicalise\n    ^" in stderr
    assert "unknown pass 'canonicalise'" in stderr
    assert "did you mean 'canonicalize'" in stderr


def test_bad_pass_option(tmp_path):
    result = lamina_opt(str(write(tmp_path, MATMUL)), "-p", "cse{bogus=1}")
    assert_user_error(result, "invalid options for pass 'cse'", "bogus")


def test_malformed_pipeline(tmp_path):
    assert_user_error(lamina_opt(str(write(tmp_path, MATMUL)), "-p", "cse{"), "malformed")


def test_unknown_target(tmp_path):
    result = lamina_opt(str(write(tmp_path, MATMUL)), "--target", "quantum")
    assert_user_error(result, "unknown target 'quantum'")


def test_unknown_pipeline(tmp_path):
    result = lamina_opt(str(write(tmp_path, MATMUL)), "--pipeline", "fastest")
    assert_user_error(result, "unknown pipeline 'fastest'")


def test_pass_in_wrong_phase_is_refused(tmp_path):
    text = "module attributes {lamina.phase = #lamina.phase<optimization>} {\n" + MATMUL + "}\n"
    path = write(tmp_path, text)
    stderr = assert_user_error(lamina_opt(str(path), "-p", "normalize"), located=f"{path}:1:1")
    assert "pass 'normalize' cannot run in phase 'optimization'" in stderr
    assert "it runs in: ingestion" in stderr


def test_pass_before_its_transition_names_the_transition(tmp_path):
    path = write(tmp_path, MATMUL)
    stderr = assert_user_error(lamina_opt(str(path), "-p", "legalize"), located=f"{path}:1:1")
    assert "pass 'legalize' cannot run in phase 'ingestion'" in stderr
    assert "run 'lift-lambdas' first" in stderr


def test_verify_diagnostics_mismatch_fails(tmp_path):
    text = MATMUL.replace("  %c =", "  // expected-error @+1 {{never produced}}\n  %c =")
    result = lamina_opt(str(write(tmp_path, text)), "--verify-diagnostics")
    assert result.returncode == 1
    assert 'expected error "never produced" was not produced' in result.stderr
    assert "Traceback" not in result.stderr


def test_output_file(tmp_path):
    out = tmp_path / "out.mlir"
    result = lamina_opt(str(write(tmp_path, MATMUL)), "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert "graph.matmul" in out.read_text()


def test_stdin_and_empty_input():
    result = lamina_opt(stdin="")
    assert result.returncode == 0, result.stderr
    assert "builtin.module" in result.stdout


def test_list_passes():
    result = lamina_opt("--list-passes")
    assert result.returncode == 0, result.stderr
    assert "| `lift-lambdas` | ingestion | optimization |" in result.stdout


def test_print_pipeline_marks_every_default_pass():
    result = lamina_opt("--print-pipeline")
    assert result.returncode == 0, result.stderr
    for name in ("normalize", "lift-lambdas", "legalize", "lower-to-llvm"):
        assert f"  {name}" in result.stdout


@pytest.mark.parametrize("flag", ["--pass-timing", "--print-ir-after-all"])
def test_instrumentation_goes_to_stderr(tmp_path, flag):
    result = lamina_opt(str(write(tmp_path, MATMUL)), "-p", "canonicalize,cse", flag)
    assert result.returncode == 0, result.stderr
    assert "graph.matmul" in result.stdout
    marker = "Execution time report" if flag == "--pass-timing" else "IR Dump After cse"
    assert marker in result.stderr


def test_dump_phases(tmp_path):
    dump = tmp_path / "phases"
    result = lamina_opt(
        str(write(tmp_path, MATMUL)), "-p", "lift-lambdas", "--dump-phases-to", str(dump)
    )
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in dump.iterdir()) == ["0_ingestion.mlir", "1_optimization.mlir"]
    assert "#lamina.phase<optimization>" in (dump / "1_optimization.mlir").read_text()
    assert "lamina.phase" not in (dump / "0_ingestion.mlir").read_text()


def test_malformed_phase_attribute(tmp_path):
    path = write(tmp_path, "module attributes {lamina.phase = 1 : i32} {\n}\n")
    assert_user_error(lamina_opt(str(path)), "must be a #lamina.phase", located=f"{path}:1:1")


def test_unterminated_string_on_a_long_line_fails_fast(tmp_path):
    """xDSL's string regex backtracked exponentially on this (a hang, not an error)."""
    text = MATMUL.replace("%c = graph.matmul", '" = graph.matmul')
    path = write(tmp_path, text)
    result = lamina_opt(str(path))  # subprocess timeout: 120 s
    assert_user_error(result, "closing string literal", located=f"{path}:2:3")
