"""The code layout shows the design (docs/internals.md, "Code map").

* the graph dialect is a package with one module per op family, and each op's
  compute builder sits in the module of the same family under `kernels/`;
* `schedule/` and `kernels/` sit below the passes: they never import
  `passes/` or `tools/`, `schedule/` never imports `kernels/`, and neither
  hides an import inside a function (to dodge a cycle) nor has a cycle;
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

from lamina import kernels
from lamina.dialects import graph

ROOT = Path(__file__).resolve().parent.parent
GRAPH_DIR = ROOT / "dialects" / "graph"
KERNELS_DIR = ROOT / "kernels"
SCHEDULE_DIR = ROOT / "schedule"

GRAPH_FAMILIES = {
    "common", "base", "types", "control", "kernel_calls", "devices",
    "elementwise", "linalg", "nn", "reduce", "shape", "layout",
}  # fmt: skip
"""The modules of `dialects/graph/` (docs/internals.md lists what each holds)."""

KERNEL_SHARED = {
    "__init__",
    "kernel",
    "te_emit",
    "window",
    "strategy",
    "conv_blocked",
    "conv_winograd",
}
"""Modules of `kernels/` that are not an op family: the builder base, the scalar
emitter, sliding windows, the strategy table and the conv2d algorithms."""


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


def test_compute_builder_sits_in_the_module_of_the_ops_family():
    """`graph.X` defined in `dialects/graph/F.py` is built by `kernels/F.py`, and
    `kernels.BUILDERS` covers exactly the graph's compute ops."""
    assert {p.stem for p in KERNELS_DIR.glob("*.py")} - KERNEL_SHARED <= GRAPH_FAMILIES
    ops = {op.name: op for op in graph.COMPUTE_OPS}
    assert set(kernels.BUILDERS) == set(ops)
    for name, builder in kernels.BUILDERS.items():
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


def _module_name(path: Path) -> str:
    return "lamina." + ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(
        ".__init__"
    )


def test_schedule_and_kernels_sit_below_the_passes():
    """kernels may use schedule (the register block a packed operand is laid out
    for); schedule never uses kernels; neither uses passes or tools."""
    rules = {
        SCHEDULE_DIR: ("lamina.passes", "lamina.tools", "lamina.kernels", "lamina.frontends"),
        KERNELS_DIR: ("lamina.passes", "lamina.tools", "lamina.frontends"),
    }
    offenders = [
        f"{path.relative_to(ROOT)} imports {m}"
        for folder, banned in rules.items()
        for path in sorted(folder.rglob("*.py"))
        for m in _imports(path)
        if m.startswith(banned)
    ]
    assert not offenders, offenders


def test_nothing_below_imports_schedule_or_kernels():
    """core, dialects and backends (the target model with its tuning knobs) sit
    below `schedule/` and `kernels/`."""
    offenders = [
        f"{path.relative_to(ROOT)} imports {m}"
        for folder in ("core", "dialects", "backends")
        for path in sorted((ROOT / folder).rglob("*.py"))
        for m in _imports(path)
        if m.startswith(("lamina.schedule", "lamina.kernels"))
    ]
    assert not offenders, offenders


def test_no_function_local_imports_in_schedule_and_kernels():
    """An import inside a function is how a cycle hides; these packages have none."""
    offenders = []
    for folder in (SCHEDULE_DIR, KERNELS_DIR):
        for path in sorted(folder.rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    for inner in ast.walk(node):
                        if isinstance(inner, ast.Import | ast.ImportFrom):
                            offenders.append(f"{path.relative_to(ROOT)}:{inner.lineno}")
    assert not offenders, offenders


def test_schedule_and_kernels_have_no_import_cycle():
    """Module-level imports form a DAG (a submodule loading its package first is
    Python's order, not a cycle; importing *from* the package is an edge)."""
    paths = [p for folder in (SCHEDULE_DIR, KERNELS_DIR) for p in sorted(folder.rglob("*.py"))]
    names = {_module_name(p): p for p in paths}
    graph_ = {
        name: {m for m in _imports(path) if m in names and m != name}
        for name, path in names.items()
    }
    done: set[str] = set()

    def visit(name: str, path: list[str]) -> None:
        assert name not in path, " -> ".join([*path[path.index(name) :], name])
        if name in done:
            return
        for dep in sorted(graph_[name]):
            visit(dep, [*path, name])
        done.add(name)

    for name in sorted(graph_):
        visit(name, [])


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
    named = set(re.findall(r"`((?:dialects/graph|kernels|schedule)/\w+\.py)`", text))
    modules = {
        str(path.relative_to(ROOT))
        for folder in (GRAPH_DIR, KERNELS_DIR, SCHEDULE_DIR)
        for path in folder.glob("*.py")
        if path.stem != "__init__"
    }
    assert named == modules, f"missing: {modules - named}, stale: {named - modules}"
