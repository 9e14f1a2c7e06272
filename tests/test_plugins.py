"""Plugins from outside the repository: a real pip-installed package with entry points.

`tests/plugin_pkg` is the package docs/extending.md walks through: a dialect
(`toy`) and a pass (`toy-lower`) registered through xDSL's `xdsl.universe`
entry point, and a target (`toy`, one hook and a claim) through
`lamina.targets`. It is pip-installed into a temporary `--target` directory
that the tools see on PYTHONPATH, so the entry points are discovered by
importlib.metadata exactly as for a package installed in the environment,
while this test process (and docs/passes.md) stays free of it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

PKG = Path(__file__).parent / "plugin_pkg"
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def toy_site(tmp_path_factory) -> Path:
    """The plugin package, pip-installed into a fresh directory."""
    work = tmp_path_factory.mktemp("toy")
    shutil.copytree(PKG, work / "src", ignore=shutil.ignore_patterns("build", "*.egg-info"))
    site = work / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site),
         str(work / "src")],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return site


def run(args: list[str], site: Path | None, **kwargs) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(site) if site else ""
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(args, env=env, capture_output=True, text=True, cwd=PKG, **kwargs)


def test_entry_points_are_discovered_by_importlib_metadata(toy_site):
    code = (
        "from importlib.metadata import entry_points as e\n"
        "print(sorted(x.name for x in e(group='xdsl.universe')))\n"
        "print(sorted(x.name for x in e(group='lamina.targets')))\n"
    )
    result = run([sys.executable, "-c", code], toy_site, check=True)
    assert "'lamina_toy'" in result.stdout and "['toy']" in result.stdout


def test_plugin_pass_is_listed_and_runs_by_name(toy_site):
    listing = run(["lamina-opt", "--list-passes"], toy_site, check=True).stdout
    assert "| `toy-lower` | ingestion, optimization |" in listing
    out = run(["lamina-opt", "toy.mlir", "-p", "toy-lower"], toy_site, check=True).stdout
    assert "graph.add %x, %x" in out and "toy.double" not in out


def test_plugin_pass_keeps_its_phase_contract(toy_site):
    result = run(
        ["lamina-opt", "toy.mlir", "-p", "toy-lower,lift-lambdas,legalize,toy-lower"], toy_site
    )
    assert result.returncode == 1
    assert "pass 'toy-lower' cannot run in phase 'lowering'" in result.stderr


def test_plugin_target_hooks_and_claims_through_lamina_opt(toy_site):
    pipeline = run(["lamina-opt", "--print-pipeline", "--target", "toy"], toy_site, check=True)
    assert "    toy-lower   (hook optimization (target toy))" in pipeline.stdout
    assert "    claim-ops{target=toy}   (hook claim (target toy))" in pipeline.stdout
    lowered = run(
        ["lamina-opt", "toy.mlir", "--target", "toy", "--compile-to", "lowering"],
        toy_site,
        check=True,
    ).stdout
    assert '#lamina.target<"toy">' in lowered
    assert "loop.call @toy_relu_4(" in lowered and "loop.func private @toy_relu_4(" in lowered


def test_plugin_pass_filecheck_test_passes(toy_site):
    result = run(["lit", "-q", "lamina_toy/tests"], toy_site)
    assert result.returncode == 0, result.stdout + result.stderr


def test_plugin_target_through_lamina_compile(toy_site):
    code = (
        "import sys, numpy as np, lamina\n"
        "exe = lamina.compile(open('toy.mlir').read(), targets=['toy'])\n"
        "x = np.array([-1.5, 2.0, -3.0, 4.25], np.float32)\n"
        "np.save(sys.argv[1], exe.run('main', x))\n"
    )
    out = PKG.parent / "plugin_pkg_out.npy"
    try:
        run([sys.executable, "-c", code, str(out)], toy_site, check=True)
        got = np.load(out)
    finally:
        out.unlink(missing_ok=True)
    x = np.array([-1.5, 2.0, -3.0, 4.25], np.float32)
    np.testing.assert_array_equal(got, np.maximum(2 * x, 0))


def test_without_the_plugin_its_dialect_is_unknown(toy_site):
    result = run(["lamina-opt", "toy.mlir"], None)
    assert result.returncode == 1
    assert "toy.double" in result.stderr and "Traceback" not in result.stderr


def test_plugin_ops_are_rejected_in_phases_they_are_not_declared_for(toy_site):
    result = run(["lamina-opt", "toy.mlir", "-p", "lift-lambdas,legalize"], toy_site)
    assert result.returncode == 1
    assert "phase 'lowering' invariant 3 violated: 'toy.double'" in result.stderr


def _fake_dist(tmp_path: Path, entry_points: str) -> Path:
    """A distribution on sys.path declaring `entry_points` (nothing else installed)."""
    info = tmp_path / "broken_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(entry_points)
    return tmp_path


def test_a_failing_target_entry_point_is_named(tmp_path):
    site = _fake_dist(tmp_path, "[lamina.targets]\nbroken = lamina_missing_mod:target\n")
    result = run(["lamina-opt", "--print-pipeline", "--target", "cpu"], site)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert (
        "target plugin 'broken' (lamina_missing_mod:target, from package 'broken-plugin') "
        "failed to load: ModuleNotFoundError" in result.stderr
    )


def test_a_failing_xdsl_universe_entry_point_is_named(tmp_path):
    site = _fake_dist(tmp_path, "[xdsl.universe]\nbroken = lamina_missing_mod:U\n")
    result = run(["lamina-opt", "--list-passes"], site)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "xDSL plugin 'broken' (lamina_missing_mod:U) failed to load" in result.stderr


# ---------------------------------------------------------------------------
# docs/extending.md: its snippets are the package's files, its commands run
# ---------------------------------------------------------------------------

DOC = Path(__file__).parents[1] / "docs" / "extending.md"
_BLOCK = re.compile(r"<!-- (file: (?P<path>\S+)|run) -->\n```\w*\n(?P<body>.*?)```", re.DOTALL)


def doc_blocks() -> list[tuple[str | None, str]]:
    """(file path or None for a command block, text) for every marked block of the page."""
    return [(m["path"], m["body"]) for m in _BLOCK.finditer(DOC.read_text())]


def test_every_file_in_the_extending_guide_is_the_tested_package_file():
    files = [(path, body) for path, body in doc_blocks() if path]
    assert len(files) >= 9
    for path, body in files:
        assert (PKG / path).read_text() == body, f"docs/extending.md shows a stale {path}"


def test_every_command_in_the_extending_guide_runs(toy_site):
    commands = [
        line for path, body in doc_blocks() if path is None for line in body.splitlines() if line
    ]
    assert len(commands) >= 8
    for command in commands:
        result = run(["bash", "-c", command], toy_site)
        assert result.returncode == 0, f"{command}\n{result.stderr}"


def test_register_dialect_from_python_with_phases(monkeypatch):
    """`register_dialect` (what a --load-plugin script calls): parsed, and legal where declared."""
    from xdsl.irdl import IRDLOperation, irdl_op_definition

    from lamina.core import plugins
    from lamina.core.context import make_context
    from lamina.core.diagnostics import parse_module
    from lamina.core.phase_invariants import check_phase
    from lamina.dialects.lamina import Phase, set_phase

    @irdl_op_definition
    class MarkOp(IRDLOperation):
        name = "mark.here"

    from xdsl.ir import Dialect

    monkeypatch.setattr(plugins, "_dialects", {})
    monkeypatch.setattr(plugins, "_dialect_phases", {})
    plugins.register_dialect("mark", Dialect("mark", [MarkOp]), phases=["optimization"])
    module = parse_module(make_context(), '"mark.here"() : () -> ()', "<m>")
    set_phase(module, Phase.OPTIMIZATION)
    assert check_phase(module) == []
    set_phase(module, Phase.LOWERING)
    assert "invariant 3 violated: 'mark.here'" in check_phase(module)[0].message
    with pytest.raises(plugins.PluginError, match="clashes with the dialect 'graph'"):
        plugins.register_dialect("graph", Dialect("graph", []))
    with pytest.raises(plugins.PluginError, match="cannot be legal in phase build"):
        plugins.declare_dialect_phases("mark", ["build"])
