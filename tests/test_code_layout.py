"""The code layout shows the design (docs/internals.md, "Code map").

* the graph dialect is a package with one module per op family, and each op's
  compute builder sits in the module of the same family under `kernels/`;
* `schedule/` and `kernels/` sit below the passes: they never import
  `passes/` or `tools/`, `schedule/` never imports `kernels/`, and neither
  hides an import inside a function (to dodge a cycle) nor has a cycle;
* passes and backends do not depend on a frontend (`lamina.core.dense` holds
  what they share with the builder);
* every Python package of the repository is listed in pyproject.toml, so the
  wheel holds it;
* the layers of docs/internals.md: a module imports nothing from a layer above
  its own, and the runtime imports neither xDSL, llvmlite nor the compiler;
* docs/internals.md's code map names every module.
"""

from __future__ import annotations

import ast
import inspect
import os
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
        for folder in ("core", "dialects", "passes", "schedule", "kernels", "target", "backends")
        + ("driver", "runtime", "tools", "frontends", "serve")
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


# ---------------------------------------------------------------------------
# Layering: which package may import which (docs/internals.md, "Layers")
# ---------------------------------------------------------------------------

LAYERS: dict[str, int] = {
    "lamina.runtime": 0,
    "lamina.core": 1,
    "lamina.dialects": 1,
    "lamina.target": 2,
    "lamina.backends.targets": 2,
    "lamina.backends.llvm": 3,
    "lamina.passes": 4,
    "lamina.schedule": 4,
    "lamina.kernels": 4,
    "lamina.backends": 5,
    "lamina.driver": 6,
    "lamina.frontends": 7,
    "lamina.tuning": 7,
    "lamina.tools": 8,
    "lamina.serve": 9,
}
"""Package → layer: a module imports only modules of its own layer or below.

runtime (calls compiled code; imports no other package) ← core and dialects
(the IR and its infrastructure) ← target (the target model) ← backends.llvm
(the loop → llvm patterns `lower-to-llvm` applies) ← passes (with the
scheduling and kernel packages they use) ← backends (code generation) ←
driver (`lamina.compile`, the pipeline) ← frontends ← tools ← serve (Ray
Serve deployments of compiled models). The most
specific package name wins (`lamina.backends.llvm` before `lamina.backends`).
`lamina.compile` itself is `frontends/sources.py`: it imports an ONNX model
(a frontend) and then calls the driver."""

LAYER_EXCEPTIONS = {
    ("lamina.core.registry", "lamina.passes"): "the registry of passes loads the built-in "
    "ones by flag (`lamina.passes.<flag>`), as xDSL's own registry does",
}
"""(module, imported package) pairs allowed to reach up, and why."""

LIBRARY_FOLDERS = tuple(
    sorted({name.split(".")[1] for name in LAYERS if (ROOT / name.split(".")[1]).is_dir()})
)


def _layer(module: str) -> int | None:
    """The layer of `module` (its most specific package in LAYERS), None if in none."""
    parts = module.split(".")
    for end in range(len(parts), 1, -1):
        layer = LAYERS.get(".".join(parts[:end]))
        if layer is not None:
            return layer
    return None


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(("lamina", *parts[: -1 if parts[-1] == "__init__" else None]))


def _runtime_imports(tree: ast.Module) -> list[tuple[str, bool]]:
    """(imported module, inside a function?) for each import that runs (not under
    `if TYPE_CHECKING:`, which only annotations see)."""
    found: list[tuple[str, bool]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for child in node.orelse:
                visit(child, in_function)
            return
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.extend((f"{node.module}.{a.name}", in_function) for a in node.names)
        elif isinstance(node, ast.Import):
            found.extend((alias.name, in_function) for alias in node.names)
        inner = in_function or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        for child in ast.iter_child_nodes(node):
            visit(child, inner)

    visit(tree, False)
    return found


def _library_modules() -> list[tuple[str, Path]]:
    return [
        (_module_name(path), path)
        for folder in LIBRARY_FOLDERS
        for path in sorted((ROOT / folder).rglob("*.py"))
        if "__pycache__" not in path.parts
    ]


def test_every_library_package_has_a_layer():
    unplaced = sorted({name for name, _ in _library_modules() if _layer(name) is None})
    assert not unplaced, f"add their package to LAYERS: {unplaced}"


def test_no_module_imports_a_higher_layer():
    """core ← target ← passes ← driver/tools, checked on the source's import statements."""
    offenders = []
    for name, path in _library_modules():
        own = _layer(name)
        for imported, _ in _runtime_imports(ast.parse(path.read_text())):
            target = _layer(imported)
            if target is None or own is None or target <= own:
                continue
            if any(name == m and imported.startswith(p) for m, p in LAYER_EXCEPTIONS):
                continue
            offenders.append(f"{name} imports {imported}")
    assert not offenders, "\n".join(offenders)


def test_runtime_source_imports_neither_xdsl_nor_the_compiler():
    """The runtime imports only itself; LLVM's loader only inside the function loading code."""
    offenders = []
    for name, path in _library_modules():
        if _layer(name) != LAYERS["lamina.runtime"]:
            continue
        for imported, in_function in _runtime_imports(ast.parse(path.read_text())):
            top = imported.split(".")[0]
            if top == "xdsl" or (top == "llvmlite" and not in_function):
                offenders.append(f"{name} imports {imported}")
            if top == "lamina" and imported != "lamina" and _layer(imported) != 0:
                offenders.append(f"{name} imports {imported}")
    assert not offenders, "\n".join(offenders)


def test_importing_the_runtime_loads_neither_xdsl_llvmlite_nor_the_compiler():
    import subprocess
    import sys

    modules = sorted(name for name, _ in _library_modules() if _layer(name) == 0)
    script = (
        f"import sys\nfor m in {modules!r}:\n    __import__(m)\n"
        "print('\\n'.join(m for m in sys.modules if m.split('.')[0] in ('xdsl', 'llvmlite')\n"
        "    or m.startswith(('lamina.core', 'lamina.dialects', 'lamina.passes',\n"
        "        'lamina.backends', 'lamina.target', 'lamina.driver'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert len(modules) >= 5 and out.stdout.strip() == ""


MAPPED_FOLDERS = (
    "runtime", "core", "target", "backends", "driver", "frontends", "tools", "schedule", "kernels",
    "serve",
    "tuning",
)  # fmt: skip
"""Folders whose every module has a row in docs/internals.md's code map."""


def test_internals_code_map_names_every_module():
    text = (ROOT / "docs" / "internals.md").read_text()
    named = set(re.findall(r"`((?:[a-z_]+/)+[a-z_]+\.py)`", text))
    modules = {
        str(path.relative_to(ROOT))
        for folder in MAPPED_FOLDERS
        if (ROOT / folder).is_dir()
        for path in (ROOT / folder).rglob("*.py")
        if path.stem != "__init__" and "__pycache__" not in path.parts
    }
    assert modules <= named, f"add to docs/internals.md's code map: {sorted(modules - named)}"
    stale = {name for name in named if not (ROOT / name).exists()}
    assert not stale, f"docs/internals.md names modules that do not exist: {sorted(stale)}"


OUTSIDE_REFERENCE = re.compile(
    "|".join(
        (
            r"\bSTYLE" + r"(?: convention|\.md| §)",
            r"XDSL" + r"_NOTES",
            r"\b[Ss]eed" + r" 00\d",
            r"\b[Ii]ssue" + r" \d+",
            r"DESIGN" + r"\.md",
            r"\bshared" + r"/",
        )
    )
)
"""References to documents that are not in the repository (planning notes,
the design contract's working copy): users have only the repository, so
code, docstrings and docs point to docs/*.md instead."""


def test_nothing_points_outside_the_repository():
    offenders = []
    for folder, dirs, files in os.walk(ROOT):  # not into virtual environments or links
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in ("build", "__pycache__")]
        for name in files:
            path = Path(folder) / name
            if path.suffix in (".py", ".md", ".mlir", ".cfg", ".toml", ".test"):
                offenders += _outside_references(path)
    assert not offenders, "\n".join(offenders)


def _outside_references(path: Path) -> list[str]:
    """`path:line: text` of each line of `path` that names an outside document."""
    lines = path.read_text(errors="replace").splitlines()
    return [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for number, line in enumerate(lines, 1)
        if OUTSIDE_REFERENCE.search(line)
    ]
