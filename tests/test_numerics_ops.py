"""Numerics of every graph compute op, compiled to native code, against NumPy.

The cases (tests/op_cases.py) cover every op over several shapes — broadcast
edge cases, size-1, 0-d and zero-size tensors, odd sizes — and f32/f64, some
f16 (plus integer and bool cases for the ops that take them), with 1e-5 (f32)
/ 1e-10 (f64) tolerances.

To keep compile time down, the cases of one op kind and one element type are
compiled together, one `graph.func @caseN` each, by `lamina.compile`. The
pipeline is the default one when all its passes exist; until then it is the
chain of transitions that lowering cannot do without (`lift-lambdas`,
`legalize`, `lower-te`, `lower-graph`, `lower-to-llvm`), registered only
while compiling.
"""

from __future__ import annotations

import math
from collections import defaultdict
from functools import cache

import numpy as np
import pytest
from op_cases import CASE_IDS, CASES, OpCase, module_of, tensor
from xdsl.dialects.builtin import BoolAttr, ModuleOp, f32, f64

import lamina
from lamina.dialects import graph
from lamina.passes.plan_layouts import ENABLE_ATTR_NAME


def compile_module(module: ModuleOp) -> lamina.Executable:
    """`lamina.compile` with the default pipeline, the one users get."""
    return lamina.compile(module)


def _group(case: OpCase) -> tuple[str, str]:
    """(op kind, first operand's element type): one compiled module per group."""
    return case.op_name, str(case.arg_types[0].get_element_type())


GROUPS: dict[tuple[str, str], list[OpCase]] = defaultdict(list)
for _case in CASES:
    GROUPS[_group(_case)].append(_case)


def _entry(case: OpCase) -> str:
    return f"case{GROUPS[_group(case)].index(case)}"


@cache
def _executable(group: tuple[str, str], layouts: bool = True) -> lamina.Executable:
    module = module_of([case.func(_entry(case)) for case in GROUPS[group]])
    if not layouts:
        module.attributes[ENABLE_ATTR_NAME] = BoolAttr.from_bool(False)
    return compile_module(module)


@pytest.mark.parametrize("layouts", [True, False], ids=["plan-layouts", "no-plan-layouts"])
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_compiled_op_matches_numpy(case: OpCase, layouts: bool) -> None:
    """Every case, with `plan-layouts` on (the default pipeline: e.g. conv2d
    runs channel-blocked) and off (`lamina.plan_layouts = false`)."""
    exe = _executable(_group(case), layouts)
    arrays = case.sample()
    got = exe.run(_entry(case), *arrays)
    case.check(np.asarray(got), arrays)


def test_f32_and_f64_math_in_one_module() -> None:
    funcs = []
    for n, element in enumerate((f32, f64)):
        case = OpCase(
            f"exp{n}",
            (tensor((3,), element),),
            lambda a: graph.ExpOp(a[0]),
            np.exp,
        )
        funcs.append(case.func(f"exp{n}"))
    exe = compile_module(module_of(funcs))
    for n, dtype in enumerate((np.float32, np.float64)):
        x = np.array([0.0, 1.0, -2.0], dtype=dtype)
        np.testing.assert_allclose(exe.run(f"exp{n}", x), np.exp(x), rtol=1e-6)


def test_f32_erf_and_gelu_are_vectorized_and_accurate() -> None:
    """f32 erf is expanded into polynomials (schedule/vector_math.py), not one
    libm `erff` call per element: within 2e-7 of erf over [-6, 6] with the
    special values kept, and exact gelu's negative tail (`1 + erf`) keeps its
    relative accuracy."""
    n = 4096
    src = f"""
    graph.func @erf(%x: tensor<{n}xf32>) -> tensor<{n}xf32> {{
      %y = graph.erf %x : (tensor<{n}xf32>) -> tensor<{n}xf32>
      graph.return %y : tensor<{n}xf32>
    }}
    graph.func @gelu(%x: tensor<{n}xf32>) -> tensor<{n}xf32> {{
      %y = graph.gelu %x : (tensor<{n}xf32>) -> tensor<{n}xf32>
      graph.return %y : tensor<{n}xf32>
    }}"""
    exe = lamina.compile(src)
    assert "erff" not in str(exe.llvm_module)
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, 0.9375, -0.9375, 4.0, -4.0]
    x = np.concatenate([np.linspace(-6, 6, n - len(specials)), specials]).astype(np.float32)
    got = exe.run("erf", x)
    want = np.array([math.erf(v) for v in x.astype(np.float64)])
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-7)
    lanes = dict(zip(map(str, specials), got[-len(specials) :], strict=True))
    assert np.isnan(lanes["nan"])
    assert lanes["1e-30"] * 1e30 == pytest.approx(2 / math.sqrt(math.pi), rel=1e-6)
    assert (lanes["inf"], lanes["-inf"]) == (1.0, -1.0)
    x = np.linspace(-5, 5, n).astype(np.float32)
    gelu = exe.run("gelu", x)
    ref = np.array([0.5 * v * math.erfc(-v / math.sqrt(2)) for v in x.astype(np.float64)])
    np.testing.assert_allclose(gelu, ref, rtol=2e-5, atol=1e-7)
