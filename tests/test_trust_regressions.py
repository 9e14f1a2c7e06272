"""Regression tests for six holes found by trying the tools from outside.

Each test failed on the code before the fix: two SIGSEGVs (an unresolved
external symbol in the JIT, an allocation that fails), tracebacks where a
user error belongs, later-phase text that could not be run, silent oddities
of the tools, and reproducer files littering the temporary directory.
Crashing cases run in a subprocess, so a regression fails the test instead
of killing pytest.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import lamina
from lamina.core.diagnostics import DiagnosticError

EXTERN = """\
graph.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.call_extern "ext_relu"(%x) {pure} : (tensor<4xf32>) -> tensor<4xf32>
  graph.return %0 : tensor<4xf32>
}
"""

HUGE_INTERMEDIATE = """\
graph.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %b = graph.broadcast_to %x : (tensor<4xf32>) -> tensor<100000x250000x4xf32>
  %s = graph.reduce_sum %b {axes = array<i64: 0, 1>} : (tensor<100000x250000x4xf32>) -> tensor<4xf32>
  graph.return %s : tensor<4xf32>
}
"""

SMALL = """\
graph.func @main(%a: tensor<3x5xf32>, %b: tensor<5x4xf32>) -> tensor<3x4xf32> {
  %c = graph.matmul %a, %b : (tensor<3x5xf32>, tensor<5x4xf32>) -> tensor<3x4xf32>
  %r = graph.relu %c : (tensor<3x4xf32>) -> tensor<3x4xf32>
  graph.return %r : tensor<3x4xf32>
}
"""

UNREGISTERED = """\
graph.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "foo.bar"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  graph.return %0 : tensor<4xf32>
}
"""


def _tool(name: str, *args: str | Path, env: dict[str, str] | None = None, stdin: str = ""):
    cmd = [sys.executable, "-m", f"lamina.tools.{name}", *map(str, args)]
    full_env = {**os.environ, **(env or {})}
    full_env.pop("LAMINA_REPRODUCER", None) if "LAMINA_REPRODUCER" not in (env or {}) else None
    return subprocess.run(
        cmd, capture_output=True, text=True, timeout=300, env=full_env, input=stdin
    )


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _user_error(result: subprocess.CompletedProcess[str]) -> str:
    """A user error: exit 1, an `error:` line, no traceback, no signal."""
    assert result.returncode == 1, (result.returncode, result.stderr)
    assert "error:" in result.stderr
    assert "Traceback" not in result.stderr
    return result.stderr


# -- 1. unresolved external symbol: a compile-time diagnostic, not SIGSEGV -----------


def test_unresolved_extern_is_a_compile_time_diagnostic():
    with pytest.raises(DiagnosticError) as err:
        lamina.compile(EXTERN)
    text = err.value.format()
    assert "'@ext_relu' is not defined by any loaded library" in text
    assert "register_library" in text


def test_unresolved_extern_in_lamina_run_exits_1(tmp_path):
    stderr = _user_error(_tool("lamina_run", _write(tmp_path, "ext.mlir", EXTERN)))
    assert "@ext_relu" in stderr


# -- 2. a failing allocation is an error of `run`; the process survives ----------------


def test_failed_allocation_raises_and_the_process_survives():
    code = textwrap.dedent(
        f"""
        import numpy as np, lamina
        exe = lamina.compile({HUGE_INTERMEDIATE!r})
        for _ in range(2):
            try:
                exe.run("main", np.ones(4, np.float32))
            except lamina.LaminaRuntimeError as err:
                print("raised:", err)
        small = lamina.compile({SMALL!r})
        print("still fine:", small.run("main", np.ones((3, 5), np.float32),
                                       np.ones((5, 4), np.float32))[0, 0])
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len([line for line in lines if line.startswith("raised:")]) == 2
    # The buffer is the broadcast (fuse-ops may move it into the fused kernel).
    assert re.search(
        r"kernel @\w+: cannot allocate buffer %\w+ of type memref<100000x250000x4xf32>", lines[0]
    )
    assert "400000000000 bytes" in lines[0]
    assert "still fine: 5.0" in lines[-1]


# -- 3. user errors of lamina-run and deeply nested input --------------------------------


def test_random_inputs_too_large_fail_fast(tmp_path):
    huge = """\
graph.func @main(%x: tensor<2147483648xf32>) -> tensor<2147483648xf32> {
  %0 = graph.relu %x : (tensor<2147483648xf32>) -> tensor<2147483648xf32>
  graph.return %0 : tensor<2147483648xf32>
}
"""
    stderr = _user_error(_tool("lamina_run", _write(tmp_path, "huge.mlir", huge)))
    assert "--random-inputs" in stderr and "--inputs" in stderr


def test_inputs_that_are_not_npz(tmp_path):
    program = _write(tmp_path, "mm.mlir", SMALL)
    text_file = _write(tmp_path, "in.npz", "not a zip")
    assert "not a .npz file" in _user_error(_tool("lamina_run", program, "--inputs", text_file))
    npy = tmp_path / "a.npy"
    np.save(npy, np.ones(3))
    assert ".npy" in _user_error(_tool("lamina_run", program, "--inputs", npy))


def test_negative_seed(tmp_path):
    program = _write(tmp_path, "mm.mlir", SMALL)
    assert "--seed" in _user_error(_tool("lamina_run", program, "--seed", "-1"))


def _nested_lambdas(depth: int) -> str:
    t = "tensor<4xf32>"
    body = f"graph.return %x : {t}"
    for i in range(depth):
        body = (
            f"%f{i} = graph.lambda (%y{i}: {t}) -> {t} {{\n{body}\n}}\n"
            f"%r{i} = graph.invoke %f{i}(%x) {{pure}} : (!graph.fn<({t}) -> {t}>, {t}) -> {t}\n"
            f"graph.return %r{i} : {t}"
        )
    return f"graph.func @main(%x: {t}) -> {t} {{\n{body}\n}}\n"


def _nested_dataflow(depth: int) -> str:
    t = "tensor<4xf32>"
    body = f"graph.output %x : {t}"
    for i in range(depth):
        body = f"%r{i} = graph.dataflow -> {t} {{\n{body}\n}}\ngraph.output %r{i} : {t}"
    body = body.rsplit("graph.output", 1)[0]
    return f"graph.func @main(%x: {t}) -> {t} {{\n{body}\ngraph.return %r{depth - 1} : {t}\n}}\n"


def _nested_type(depth: int) -> str:
    t = "tensor<4xf32>"
    for _ in range(depth):
        t = f"!graph.fn<() -> {t}>"
    return f"graph.func private @g(%f: {t}) -> tensor<4xf32>\n"


def _nested_attribute(depth: int) -> str:
    value = "0"
    for _ in range(depth):
        value = f"[{value}]"
    return (
        f"graph.func @main(%x: tensor<4xf32>) -> tensor<4xf32> attributes {{a = {value}}} {{\n"
        "  graph.return %x : tensor<4xf32>\n}\n"
    )


DEEP = {
    "lambdas": _nested_lambdas(200),
    "dataflow": _nested_dataflow(300),
    "fn_type": _nested_type(400),
    "attribute": _nested_attribute(400),
}


@pytest.mark.parametrize("kind", sorted(DEEP))
def test_deeply_nested_input_through_the_api(kind):
    try:
        lamina.compile(DEEP[kind], filename="deep.mlir")
    except DiagnosticError as err:
        assert "deep.mlir:" in err.format()
    # (compiling successfully is fine too: the point is no RecursionError)


@pytest.mark.parametrize("kind", ["lambdas", "attribute"])
def test_deeply_nested_input_through_the_tools(tmp_path, kind):
    path = _write(tmp_path, "deep.mlir", DEEP[kind])
    for tool, args in (("lamina_opt", ["--compile-to", "build"]), ("lamina_run", [])):
        result = _tool(tool, path, *args)
        assert result.returncode in (0, 1), result.stderr
        assert "Traceback" not in result.stderr
        if result.returncode:
            assert "nested too deeply" in result.stderr or "error:" in result.stderr


# -- 4. the text of every phase runs in every tool ----------------------------------------


@pytest.mark.parametrize("phase", ["optimization", "lowering", "build"])
def test_text_of_each_phase_runs(tmp_path, phase):
    from lamina.tools.lamina_opt import main as opt_main

    src = _write(tmp_path, "mm.mlir", SMALL)
    lowered = tmp_path / f"{phase}.mlir"
    assert opt_main([str(src), "--compile-to", phase, "-o", str(lowered)]) == 0
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 5), np.float32), rng.standard_normal((5, 4), np.float32)
    expected = lamina.compile(SMALL).run("main", a, b)
    got = lamina.compile(lowered.read_text()).run("main", a, b)
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    result = _tool("lamina_run", lowered, "--seed", "1")
    assert result.returncode == 0, result.stderr
    assert "out0: float32[3, 4]" in result.stdout
    so = tmp_path / f"{phase}.so"
    assert _tool("lamina_compile", lowered, "-o", so).returncode == 0
    assert so.exists()


# -- 5. silent oddities ---------------------------------------------------------------------


def test_empty_pipeline_name_is_an_error(tmp_path):
    program = _write(tmp_path, "mm.mlir", SMALL)
    assert "--pipeline" in _user_error(_tool("lamina_opt", program, "--pipeline", ""))


def test_output_directory_is_an_error_and_output_name_is_kept(tmp_path):
    program = _write(tmp_path, "mm.mlir", SMALL)
    (tmp_path / "outdir").mkdir()
    assert "directory" in _user_error(_tool("lamina_run", program, "--output", tmp_path / "outdir"))
    assert not (tmp_path / "outdir.npz").exists()
    target = tmp_path / "results.bin"
    assert _tool("lamina_run", program, "--output", target).returncode == 0
    with np.load(target) as data:
        assert data["out0"].shape == (3, 4)


def test_empty_file_is_an_empty_module_everywhere(tmp_path):
    empty = _write(tmp_path, "empty.mlir", "// nothing here\n")
    assert _tool("lamina_compile", empty, "-o", tmp_path / "e.so").returncode == 0
    assert _tool("lamina_opt", empty).returncode == 0
    assert lamina.compile("").functions == []


def test_unregistered_op_is_named_and_rejected_from_optimization_on(tmp_path):
    program = _write(tmp_path, "u.mlir", UNREGISTERED)
    stderr = _user_error(
        _tool("lamina_opt", program, "--allow-unregistered-dialect", "--compile-to", "build")
    )
    assert "'foo.bar' is not allowed from phase optimization on" in stderr
    assert "builtin.unregistered" not in stderr
    assert "lift-lambdas" in stderr


def test_failed_run_leaves_no_output_file(tmp_path):
    program = _write(tmp_path, "u.mlir", UNREGISTERED)
    out = tmp_path / "out.mlir"
    _user_error(_tool("lamina_opt", program, "-o", out))
    assert not out.exists()


# -- 6. reproducers only on request, with the exact command ---------------------------------


def test_no_reproducer_unless_asked(tmp_path):
    program = _write(tmp_path, "u.mlir", UNREGISTERED)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    result = _tool(
        "lamina_opt",
        program,
        "--allow-unregistered-dialect",
        "--compile-to",
        "build",
        env={"TMPDIR": str(scratch)},
    )
    stderr = _user_error(result)
    assert list(scratch.iterdir()) == []
    assert "--reproducer FILE" in stderr and "LAMINA_REPRODUCER" in stderr


@pytest.mark.parametrize("how", ["flag", "env"])
def test_requested_reproducer_reproduces_exactly(tmp_path, how):
    program = _write(tmp_path, "u.mlir", UNREGISTERED)
    repro = tmp_path / "repro.mlir"
    args = [program, "--allow-unregistered-dialect", "--compile-to", "build"]
    if how == "flag":
        first = _tool("lamina_opt", *args, "--reproducer", repro)
    else:
        first = _tool("lamina_opt", *args, env={"LAMINA_REPRODUCER": str(repro)})
    _user_error(first)
    header = repro.read_text().splitlines()[1]
    assert "--allow-unregistered-dialect" in header
    command = header.split("reproduce with: lamina-opt ", 1)[1]
    import shlex

    again = _tool("lamina_opt", *shlex.split(command))
    first_error = first.stderr.splitlines()[0]
    assert _user_error(again).splitlines()[0] == first_error


def test_missing_compiler_runtime_helper_is_a_diagnostic_not_sigsegv():
    """Found by the differential test: f64 → f16 needs __truncdfhf2 (libgcc_s).
    Built for AVX2: a host with AVX512-FP16 (Sapphire Rapids and later) converts
    f64 → f16 in one instruction and needs no helper."""
    cast = """\
graph.func @main(%x: tensor<f64>) -> tensor<f64> {
  %h = graph.cast %x : (tensor<f64>) -> tensor<f16>
  %r = graph.cast %h : (tensor<f16>) -> tensor<f64>
  graph.return %r : tensor<f64>
}
"""
    exe = lamina.compile(cast, targets=["cpu{isa=avx2}"])
    assert exe.run("main", np.array(0.1257)) == np.float16(0.1257)
    code = textwrap.dedent(
        f"""
        import lamina.runtime.native_setup as native
        native.load_runtime_libraries = lambda: None  # as on a system without libgcc_s
        import lamina
        try:
            lamina.compile({cast!r}, targets=["cpu{{isa=avx2}}"], cache=False)  # not the cached code
        except lamina.DiagnosticError as err:
            print(err.format())
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert "needs '__truncdfhf2', which no loaded library defines" in result.stdout


def test_result_too_large_for_memory_is_an_error_of_run():
    big_out = """\
graph.func @main(%x: tensor<4xf32>) -> tensor<100000x250000x4xf32> {
  %b = graph.broadcast_to %x : (tensor<4xf32>) -> tensor<100000x250000x4xf32>
  graph.return %b : tensor<100000x250000x4xf32>
}
"""
    exe = lamina.compile(big_out)
    with pytest.raises(lamina.LaminaRuntimeError, match=r"@main result 0 \(float32\[100000"):
        exe.run("main", np.ones(4, np.float32))


def test_parser_errors_of_custom_op_parsers_are_diagnostics():
    """Found by mutation fuzzing: xDSL's `llvm.icmp` parser raised ValueError on a bad predicate."""
    text = """\
builtin.module attributes {lamina.phase = #lamina.phase<build>} {
  llvm.func @f(%a: i64) {
    %0 = llvm.icmp " " "slt" %a, %a : i64
    llvm.return
  }
}
"""
    with pytest.raises(DiagnosticError) as err:
        lamina.compile(text, filename="bad.mlir")
    assert "bad.mlir:3:" in err.value.format()
    assert "cannot parse this: ValueError" in err.value.format()


def test_dense_of_an_element_type_without_byte_format_is_a_diagnostic(tmp_path):
    """Found while splitting the graph dialect: xDSL raises NotImplementedError
    packing `dense<1> : tensor<2xi128>` (no byte format for i128)."""
    src = tmp_path / "i128.mlir"
    src.write_text(
        "graph.func @main() -> tensor<2xi128> {\n"
        "  %c = graph.constant dense<1> : tensor<2xi128>\n"
        "  graph.return %c : tensor<2xi128>\n"
        "}\n"
    )
    run = subprocess.run(
        [sys.executable, "-m", "lamina.tools.lamina_opt", str(src)],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 1, run.stderr
    assert "i128.mlir:2:" in run.stderr and "i128" in run.stderr
    assert "Traceback" not in run.stderr
