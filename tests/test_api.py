"""The Python API of docs/design.md §7: `lamina.compile` and `Executable.run`.

Bad programs raise located `DiagnosticError`s; bad calls raise
`LaminaRuntimeError` naming the argument and comparing expected vs got; the
process never crashes on a user error.
"""

from __future__ import annotations

import numpy as np
import pytest

import lamina

ADD = """\
graph.func @main(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %c = graph.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  graph.return %c : tensor<2x3xf32>
}
"""

TWO_RESULTS = """\
graph.func @main(%a: tensor<4xf64>) -> (tensor<4xf64>, tensor<4xf64>) {
  %e = graph.exp %a : (tensor<4xf64>) -> tensor<4xf64>
  %n = graph.neg %a : (tensor<4xf64>) -> tensor<4xf64>
  graph.return %e, %n : tensor<4xf64>, tensor<4xf64>
}
"""


@pytest.fixture(scope="module")
def add_exe() -> lamina.Executable:
    return lamina.compile(ADD)


def test_one_result_is_an_array(add_exe):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.array([10, 20, 30], dtype=np.float32)
    out = add_exe.run("main", a, b)
    assert isinstance(out, np.ndarray)
    np.testing.assert_array_equal(out, a + b)


def test_several_results_are_a_tuple():
    x = np.linspace(-1, 1, 4)
    e, n = lamina.compile(TWO_RESULTS).run("main", x)
    np.testing.assert_allclose(e, np.exp(x), rtol=1e-12)
    np.testing.assert_array_equal(n, -x)


def test_non_contiguous_inputs_are_accepted(add_exe):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)[:2, :3]  # a strided view
    b = np.ones(3, np.float32)
    np.testing.assert_array_equal(add_exe.run("main", a, b), a + b)


def test_compile_accepts_a_module_and_leaves_it_untouched():
    from lamina.core.context import make_context
    from lamina.core.diagnostics import parse_module

    module = parse_module(make_context(), ADD)
    before = str(module)
    lamina.compile(module)
    assert str(module) == before


@pytest.mark.parametrize(
    "args, message",
    [
        ((), r"@main expects 2 argument\(s\), got 0"),
        ((np.zeros((2, 3), np.float32),), r"expects 2 argument\(s\), got 1"),
        (
            (np.zeros((2, 3), np.float64), np.zeros(3, np.float32)),
            "argument 0: expected dtype float32, got float64",
        ),
        (
            (np.zeros((3, 2), np.float32), np.zeros(3, np.float32)),
            r"argument 0: expected shape \(2, 3\), got \(3, 2\)",
        ),
        ((np.zeros((2, 3), np.float32), [1.0, 2.0, 3.0]), "argument 1: expected a numpy array"),
    ],
)
def test_bad_calls_raise_clear_errors(add_exe, args, message):
    with pytest.raises(lamina.LaminaRuntimeError, match=message):
        add_exe.run("main", *args)


def test_unknown_entry_lists_the_known_ones(add_exe):
    with pytest.raises(
        lamina.LaminaRuntimeError, match=r"no entry function 'nope' \(known: main\)"
    ):
        add_exe.run("nope")


def test_syntax_error_is_located():
    with pytest.raises(lamina.DiagnosticError) as info:
        lamina.compile("graph.func @main(", filename="bad.mlir")
    assert info.value.format().startswith("bad.mlir:1:18: error:")


def test_invalid_ir_is_reported_before_any_pass():
    text = "graph.func @main(%a: tensor<2xf32>) -> tensor<3xf32> {\n  graph.return %a : tensor<2xf32>\n}\n"
    with pytest.raises(lamina.DiagnosticError) as info:
        lamina.compile(text, filename="bad.mlir")
    report = info.value.format()
    assert report.startswith("bad.mlir:2:3: error: 'graph.return' op")
    assert "while running pass" not in report


def test_same_program_compiles_once_per_process():
    from lamina.backends.codegen import cache_stats

    lamina.compile(ADD, cache=False)  # the in-process cache; the disk cache is test_cache.py's
    hits = cache_stats()["hits"]
    lamina.compile(ADD, cache=False)
    assert cache_stats()["hits"] == hits + 1


def test_a_function_over_scalars_says_why_it_is_not_an_entry():
    text = """\
graph.func @main(%a: tensor<4xf32>, %s: f32) -> tensor<4xf32> {
  graph.return %a : tensor<4xf32>
}
"""
    with pytest.raises(
        lamina.LaminaRuntimeError, match="@main cannot be called on arrays: .* got f32"
    ):
        lamina.compile(text).run("main", np.zeros(4, np.float32), np.float32(1))


def test_unknown_target_is_an_error():
    with pytest.raises(lamina.DiagnosticError, match="unknown target 'tpu'"):
        lamina.compile(ADD, targets=["tpu"])


@pytest.mark.parametrize(
    ("source", "targets", "message"),
    [
        (12, None, "expected a module, IR text, a path .* got int"),
        (ADD, "cpu", "targets must be a list of target strings"),
        (ADD, [5], "targets must be a list of target strings"),
    ],
)
def test_arguments_of_the_wrong_type_are_type_errors(source, targets, message):
    """As Python's own calls do, not an AttributeError from deep inside (a string of
    targets would otherwise be read as one target per character)."""
    with pytest.raises(TypeError, match=message):
        lamina.compile(source, targets=targets)


def test_a_negative_tuning_budget_is_refused(tmp_path):
    with pytest.raises(ValueError, match="budget must be >= 0 seconds, got -1"):
        lamina.tune(ADD, budget=-1, records=tmp_path / "r.jsonl")
    assert not (tmp_path / "r.jsonl").exists()
