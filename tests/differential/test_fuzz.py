"""Mutation fuzzing of the parser, verifiers and pipeline, and of `run`'s argument checks.

Mutants of real programs (the examples, random graph programs, and their
lowered texts) go through `lamina.compile`: each must compile or raise a
located `DiagnosticError` (never another exception, never a signal); a
mutant that compiles must run on arrays of its signature or raise
`LaminaRuntimeError`. Then `Executable.run` gets random wrong arguments and
must answer each with `LaminaRuntimeError`, or with the right result for
arrays that are merely laid out differently (views, Fortran order).

Budget as in test_differential.py: fixed and small in CI, `LAMINA_FUZZ=long`
for more.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from programs import programs
from test_differential import _count, _phase_text, budget

import lamina
from lamina.core.diagnostics import DiagnosticError

EXAMPLES = sorted((Path(__file__).parents[2] / "examples").glob("*.mlir"))
TOKEN = re.compile(r"%\w+|@\w+|-?\d+(?:\.\d+)?(?:e[-+]?\d+)?|\w+(?:\.\w+)*|\S")
REPLACEMENTS = [
    "0", "-1", "1", "3", "999999999999", "2147483648", "f16", "f64", "i1", "i32", "index",
    "tensor<0xf32>", "tensor<f32>", "%0", "@main", "graph.add", "graph.matmul", "loop.for",
    "{", "}", "(", ")", "<", ">", ":", ",", "->", "=", "\"", "[", "]", "x", "?", "#lamina.undef",
    "array<i64: -1>", "affine_map<(d0) -> (d0 floordiv 0)>",
]  # fmt: skip


@st.composite
def mutants(draw, text: str) -> str:
    """`text` with one to three token-level mutations (delete, duplicate, replace, swap lines)."""
    for _ in range(draw(st.integers(1, 3))):
        tokens = [m.span() for m in TOKEN.finditer(text)]
        if not tokens:
            break
        start, end = tokens[draw(st.integers(0, len(tokens) - 1))]
        kind = draw(st.sampled_from(["delete", "duplicate", "replace", "replace", "lines"]))
        if kind == "delete":
            text = text[:start] + text[end:]
        elif kind == "duplicate":
            text = text[:end] + " " + text[start:end] + text[end:]
        elif kind == "replace":
            text = text[:start] + draw(st.sampled_from(REPLACEMENTS)) + text[end:]
        else:
            lines = text.splitlines()
            i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
            text = "\n".join(lines)
    return text


def _sources():
    examples = [p.read_text() for p in EXAMPLES]
    generated = programs(max_ops=3).map(lambda p: p.text())
    return st.one_of(st.sampled_from(examples), generated)


def _check_mutant(text: str) -> None:
    _count("mutants")
    try:
        exe = lamina.compile(text, filename="mutant.mlir")
    except DiagnosticError as err:
        _count("mutants rejected")
        assert err.diagnostics, "a DiagnosticError without diagnostics"
        return
    _count("mutants compiled")
    rng = np.random.default_rng(0)
    for name, sig in exe.signatures.items():
        args = [rng.standard_normal(p.shape).astype(p.dtype) for p in sig.params]
        try:
            exe.run(name, *args)
        except lamina.LaminaRuntimeError:
            pass


@budget(60)
@given(data=st.data())
def test_mutated_programs_give_diagnostics_not_crashes(data):
    source = data.draw(_sources(), label="source")
    _check_mutant(data.draw(mutants(source), label="mutant"))


@budget(10)
@given(prog=programs(max_ops=2), phase=st.sampled_from(["lowering", "build"]), data=st.data())
def test_mutated_lowered_programs_give_diagnostics_not_crashes(prog, phase, data):
    _check_mutant(data.draw(mutants(_phase_text(prog.text(), phase)), label="mutant"))


MM = """\
graph.func @main(%a: tensor<3x5xf32>, %b: tensor<5xf32>) -> (tensor<3x5xf32>, tensor<3xf32>) {
  %c = graph.add %a, %b : (tensor<3x5xf32>, tensor<5xf32>) -> tensor<3x5xf32>
  %s = graph.reduce_sum %c {axes = array<i64: 1>} : (tensor<3x5xf32>) -> tensor<3xf32>
  graph.return %c, %s : tensor<3x5xf32>, tensor<3xf32>
}
"""
_EXE: list[lamina.Executable] = []


def _exe() -> lamina.Executable:
    if not _EXE:
        _EXE.append(lamina.compile(MM))
    return _EXE[0]


def _argument(draw, shape, dtype):
    kind = draw(
        st.sampled_from(
            [
                "ok",
                "dtype",
                "shape",
                "list",
                "none",
                "scalar",
                "view",
                "fortran",
                "empty",
                "readonly",
            ]
        )
    )
    base = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) / 7
    match kind:
        case "ok":
            return base, True
        case "dtype":
            return base.astype(
                draw(st.sampled_from([np.float64, np.int32, np.float16, bool]))
            ), False
        case "shape":
            return np.zeros(
                draw(st.sampled_from([(3,), (5, 3), (3, 5, 1), (), (0,)])), np.float32
            ), False
        case "list":
            return base.tolist(), False
        case "none":
            return None, False
        case "scalar":
            return 1.5, False
        case "view":  # non-contiguous, same values
            wide = np.zeros((*shape[:-1], shape[-1] * 2), np.float32)
            wide[..., ::2] = base
            return wide[..., ::2], True
        case "fortran":
            return np.asfortranarray(base), True
        case "empty":
            return np.empty((0, *shape), np.float32), False
        case _:
            frozen = base.copy()
            frozen.flags.writeable = False
            return frozen, True


@budget(60)
@given(data=st.data())
def test_run_checks_every_argument(data):
    exe = _exe()
    count = data.draw(st.sampled_from([2, 2, 2, 0, 1, 3]), label="count")
    specs = [((3, 5), np.float32), ((5,), np.float32), ((5,), np.float32)][:count]
    drawn = [_argument(data.draw, shape, dtype) for shape, dtype in specs]
    args = [a for a, _ in drawn]
    name = data.draw(st.sampled_from(["main", "main", "nope", ""]), label="entry")
    valid = name == "main" and count == 2 and all(ok for _, ok in drawn)
    _count("run calls")
    if not valid:
        try:
            exe.run(name, *args)
        except lamina.LaminaRuntimeError:
            return
        raise AssertionError(f"accepted invalid arguments: {[type(a).__name__ for a in args]}")
    c, s = exe.run(name, *args)
    a, b = (np.asarray(x, np.float32) for x in args)
    np.testing.assert_allclose(c, a + b, rtol=1e-6)
    np.testing.assert_allclose(s, (a + b).sum(axis=1), rtol=1e-5)
