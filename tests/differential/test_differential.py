"""Differential testing of the whole pipeline against an independent NumPy oracle.

Random graph programs (tests/differential/programs.py) are compiled with
the default pipeline and run on random inputs; the result must match the
oracle. Then the same program must give the same result

* from the text of every phase (printed after `--compile-to PHASE`,
  re-parsed, compiled from there),
* after the optimization-phase passes in a random order (with repeats),
* with `check_bounds=True` (the bounds checks change nothing in bounds).

Hypothesis shrinks a failing program to a minimal one; fixed failures are
kept as regression programs in `regressions/` (run by `test_regressions`).

Budget: CI runs a fixed, derandomized set (a few dozen programs, about a
minute on two cores); `LAMINA_FUZZ=long` (or a number: the multiplier)
runs many more with fresh randomness.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from programs import Program, assert_matches, programs

import lamina

LONG = os.environ.get("LAMINA_FUZZ", "")
SCALE = 20 if LONG == "long" else int(LONG) if LONG.isdigit() else 1
REGRESSIONS = Path(__file__).parent / "regressions"
STATS: dict[str, int] = {}


def budget(examples: int):
    return settings(
        max_examples=examples * SCALE,
        derandomize=SCALE == 1,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        print_blob=True,
    )


def _count(key: str, n: int = 1) -> None:
    STATS[key] = STATS.get(key, 0) + n


def _run(text: str, inputs: list[np.ndarray], **options) -> np.ndarray:
    return lamina.compile(text, filename="program.mlir", **options).run("main", *inputs)


def _check_against_oracle(prog: Program, seed: int = 0) -> np.ndarray:
    inputs = prog.inputs(seed)
    got = _run(prog.text(), inputs)
    assert_matches(got, prog.oracle(inputs), prog.output.dtype)
    _count("programs")
    _count("inputs", len(inputs))
    return got


@budget(40)
@given(prog=programs())
def test_programs_match_the_numpy_oracle(prog):
    _check_against_oracle(prog)


def _phase_text(text: str, phase: str) -> str:
    from io import StringIO

    from xdsl.printer import Printer

    from lamina.core.context import make_context
    from lamina.core.diagnostics import parse_module
    from lamina.core.pass_manager import PassManager
    from lamina.dialects.lamina import Phase
    from lamina.driver.pipeline import pipeline_passes

    module = parse_module(make_context(), text, "program.mlir")
    PassManager(pipeline_passes("default", stop=Phase.from_label(phase))).run(
        make_context(), module
    )
    out = StringIO()
    Printer(stream=out).print_op(module)
    return out.getvalue()


@budget(8)
@given(prog=programs(max_ops=3))
def test_text_of_every_phase_runs_with_the_same_result(prog):
    inputs = prog.inputs(1)
    direct = _run(prog.text(), inputs)
    for phase in ("optimization", "lowering", "build"):
        again = _run(_phase_text(prog.text(), phase), inputs)
        np.testing.assert_array_equal(again, direct, err_msg=f"from the {phase} text")
        _count("phase texts")


def _passes_for(phase_label: str, done: set[str]) -> list[str]:
    """Non-transition passes legal in `phase_label` once the passes in `done` ran.

    New passes (fold-constants, fuse-ops, schedule, simplify, ...) join by
    themselves as their files land. `target-hook` replays a pass a target
    registered and has no meaning without naming one, so it is left out.
    """
    from lamina.core.registry import get_pass_class, pass_names
    from lamina.dialects.lamina import Phase

    phase = Phase.from_label(phase_label)
    names = []
    for name in pass_names():
        cls = get_pass_class(name)
        if name == "target-hook":
            continue
        if phase in cls.phases and cls.produces is None and set(cls.requires) <= done:
            names.append(name)
    return names


@budget(8)
@given(prog=programs(max_ops=3), data=st.data())
def test_passes_in_random_legal_orders(prog, data):
    """Optimization passes in any order, then lowering passes in any order: same result."""
    optimization = _passes_for("optimization", {"lift-lambdas", "normalize"})
    lowering = _passes_for("lowering", {"lift-lambdas", "normalize", "legalize", "lower-te"})
    first = data.draw(st.lists(st.sampled_from(optimization), max_size=5), label="optimization")
    second = data.draw(st.lists(st.sampled_from(lowering), max_size=5), label="lowering")
    inputs = prog.inputs(2)
    expected = _run(prog.text(), inputs)
    text = _opt(prog.text(), ["lift-lambdas", *first, "legalize", "lower-te", *second])
    got = _run(text, inputs)
    assert_matches(got, expected, prog.output.dtype)
    _count("pass orders")


def _opt(text: str, passes: list[str]) -> str:
    from io import StringIO

    from xdsl.printer import Printer

    from lamina.core.context import make_context
    from lamina.core.diagnostics import parse_module
    from lamina.core.pass_manager import PassManager, parse_pass_pipeline
    from lamina.core.registry import pass_factories

    module = parse_module(make_context(), text, "program.mlir")
    PassManager(parse_pass_pipeline(",".join(passes), pass_factories())).run(make_context(), module)
    out = StringIO()
    Printer(stream=out).print_op(module)
    return out.getvalue()


@budget(6)
@given(prog=programs(max_ops=3))
def test_bounds_checked_code_gives_the_same_results(prog):
    inputs = prog.inputs(3)
    np.testing.assert_array_equal(
        _run(prog.text(), inputs, check_bounds=True), _run(prog.text(), inputs)
    )
    _count("bounds-checked programs")


def regression_programs() -> list[Path]:
    return sorted(REGRESSIONS.glob("*.mlir"))


@pytest.mark.parametrize("path", regression_programs(), ids=lambda p: p.stem)
def test_regressions(path):
    """Programs the differential test once found wrong; each file says what and expects."""
    text = path.read_text()
    exe = lamina.compile(text, filename=str(path))
    expected_file = path.with_suffix(".npz")
    with np.load(expected_file) as data:
        inputs = [data[f"arg{i}"] for i in range(len(exe.signatures["main"].params))]
        np.testing.assert_allclose(exe.run("main", *inputs), data["out0"], rtol=1e-5, atol=1e-6)
