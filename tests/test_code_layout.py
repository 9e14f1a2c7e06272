"""The code layout shows the design (docs/internals.md, "Code map").

* the graph dialect is a package with one module per op family, and each op's
  legalization sits in the module of the same family under
  `passes/_legalize_ops/`;
* passes and backends do not depend on a frontend (`lamina.core.dense` holds
  what they share with the builder);
* every Python package of the repository is listed in pyproject.toml, so the
  wheel holds it.
"""

from __future__ import annotations

import ast
import inspect
import re
import tomllib
from pathlib import Path

from xdsl.dialects.builtin import TensorType, f32

from lamina import kernels as _legalize_ops
from lamina.dialects import graph

ROOT = Path(__file__).resolve().parent.parent
GRAPH_DIR = ROOT / "dialects" / "graph"
LEGALIZE_DIR = ROOT / "kernels"

GRAPH_FAMILIES = {
    "common", "base", "types", "control", "kernel_calls", "devices",
    "elementwise", "linalg", "nn", "reduce", "shape", "layout",
}  # fmt: skip
"""The modules of `dialects/graph/` (docs/internals.md lists what each holds)."""

LOWERED_ELSEWHERE = {
    "graph.layout_transform": "lamina.kernels.layout",
}
"""Compute ops whose te builder has a module of its own (shared with plan-layouts)."""


def _family(obj: object) -> str:
    return inspect.getmodule(obj).__name__.rsplit(".", 1)[-1]  # type: ignore[union-attr]


def test_graph_package_has_one_documented_module_per_family():
    modules = {p.stem for p in GRAPH_DIR.glob("*.py")} - {"__init__"}
    assert modules == GRAPH_FAMILIES
    for path in GRAPH_DIR.glob("*.py"):
        assert ast.get_docstring(ast.parse(path.read_text())), f"{path.name} has no docstring"


def test_every_graph_op_is_defined_in_a_family_module():
    for op in graph.Graph.operations:
        assert _family(op) in GRAPH_FAMILIES - {"common", "base", "types"}, op.name


def test_legalization_sits_in_the_module_of_the_ops_family():
    """`graph.X` defined in `dialects/graph/F.py` is built by `passes/_legalize_ops/F.py`."""
    assert {p.stem for p in LEGALIZE_DIR.glob("*.py")} - {"__init__", "kernel"} <= GRAPH_FAMILIES
    ops = {op.name: op for op in graph.COMPUTE_OPS}
    assert set(_legalize_ops.BUILDERS) == set(ops)
    for name, builder in _legalize_ops.BUILDERS.items():
        if name in LOWERED_ELSEWHERE:
            assert builder.__module__ == LOWERED_ELSEWHERE[name], name
            continue
        assert builder.__module__ == f"lamina.kernels.{_family(ops[name])}", name


def test_old_import_paths_keep_working():
    """Importers name the packages, not their modules: `graph.Conv2dOp`, ..."""
    from lamina.kernels import Window, build_kernel, window_input

    assert graph.Conv2dOp.name == "graph.conv2d"
    assert graph.blocked_conv_layout("NCHW8c", "OIHW8i8o") == (8, 8, 8)
    assert graph.tensor_shape(TensorType(f32, [2, 3])) == (2, 3)
    assert (
        callable(build_kernel) and callable(window_input) and Window.__module__.endswith("window")
    )
    for name in graph.__all__:
        assert hasattr(graph, name), name


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_passes_and_backends_do_not_depend_on_frontends():
    offenders = [
        str(path.relative_to(ROOT))
        for folder in ("passes", "backends", "dialects", "core")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if any(m.startswith("lamina.frontends") for m in _imports(path))
    ]
    assert not offenders, f"import lamina.core.dense instead of the frontends: {offenders}"


def test_every_package_is_in_pyproject():
    listed = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    packages = {
        "lamina." + ".".join(init.parent.relative_to(ROOT).parts)
        for folder in (
            "core",
            "dialects",
            "passes",
            "schedule",
            "kernels",
            "backends",
            "tools",
            "frontends",
        )
        for init in (ROOT / folder).rglob("__init__.py")
    }
    assert packages <= listed, f"add to pyproject.toml's packages: {sorted(packages - listed)}"


def test_internals_code_map_names_every_family_module():
    """docs/internals.md's code map stays current: it names each module, and each
    module it names exists."""
    text = (ROOT / "docs" / "internals.md").read_text()
    named = set(re.findall(r"`((?:dialects/graph|passes/_legalize_ops)/\w+\.py)`", text))
    modules = {
        str(path.relative_to(ROOT))
        for folder in (GRAPH_DIR, LEGALIZE_DIR)
        for path in folder.glob("*.py")
        if path.stem != "__init__"
    }
    assert named == modules, f"missing: {modules - named}, stale: {named - modules}"
