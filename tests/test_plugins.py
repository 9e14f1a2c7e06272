"""Plugins from outside the repository: a real pip-installed package with entry points.

`tests/plugin_pkg` is the package docs/extending.md walks through (the
page itself is tested by building the package from its text alone): a dialect
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
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from plugin_util import pip_install

PKG = Path(__file__).parent / "plugin_pkg"
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def toy_site(tmp_path_factory) -> Path:
    """The plugin package, pip-installed into a fresh directory."""
    return pip_install(PKG, tmp_path_factory.mktemp("toy"))


def run(
    args: list[str], site: Path | None, env_extra: dict[str, str] | None = None, **kwargs
) -> subprocess.CompletedProcess:
    env = {**os.environ, **(env_extra or {})}
    env["PYTHONPATH"] = str(site) if site else ""
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(args, env=env, capture_output=True, text=True, **{"cwd": PKG, **kwargs})


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


def test_a_broken_target_entry_point_fails_only_the_compiles_naming_it(tmp_path):
    """Entry points load on first use: a broken plugin does not stop a cpu compile,
    is a diagnostic when named, and is listed by --list-targets with its error."""
    site = _fake_dist(tmp_path, "[lamina.targets]\nbroken = lamina_missing_mod:target\n")
    for target in (["--target", "cpu"], []):
        fine = run(["lamina-opt", "relu2.mlir", *target, "--compile-to", "lowering"], site)
        assert fine.returncode == 0 and fine.stderr == ""
    named = run(
        ["lamina-opt", "relu2.mlir", "--target", "broken", "--compile-to", "lowering"], site
    )
    assert named.returncode == 1
    assert "Traceback" not in named.stderr
    assert (
        "error: target plugin 'broken' (lamina_missing_mod:target, from package 'broken-plugin') "
        "failed to load: ModuleNotFoundError" in named.stderr
    )
    listing = run(["lamina-opt", "--list-targets"], site)
    assert listing.returncode == 0, listing.stderr
    assert "| cpu |  | built into Lamina |" in listing.stdout
    assert "| broken |  |  | broken: target plugin 'broken' (" in listing.stdout


def test_a_failing_xdsl_universe_entry_point_is_named(tmp_path):
    site = _fake_dist(tmp_path, "[xdsl.universe]\nbroken = lamina_missing_mod:U\n")
    result = run(["lamina-opt", "--list-passes"], site)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "xDSL plugin 'broken' (lamina_missing_mod:U) failed to load" in result.stderr


# ---------------------------------------------------------------------------
# tests/plugin_satx: a target extending cpu, as an outside author writes one
# ---------------------------------------------------------------------------

SATX = Path(__file__).parent / "plugin_satx"


@pytest.fixture(scope="module")
def satx_site(tmp_path_factory) -> Path:
    return pip_install(SATX, tmp_path_factory.mktemp("satx"))


def satx(args: list[str], site: Path, **kwargs) -> subprocess.CompletedProcess:
    return run(args, site, **{"cwd": SATX, **kwargs})


def test_a_plain_xdsl_pass_of_a_plugin_leaves_phase_refusals_intact(satx_site):
    """`satx-mark` (a plain ModulePass, no `produces`) is registered while the
    refusal lists the transition passes of every registered pass."""
    listing = satx(["lamina-opt", "--list-passes"], satx_site, check=True).stdout
    assert "| `satx-mark` | ingestion, optimization, lowering |" in listing
    result = satx(["lamina-opt", "sigmoid.mlir", "-p", "lower-te"], satx_site)
    assert result.returncode == 1, result.stderr
    assert "internal error" not in result.stderr
    assert (
        "error: pass 'lower-te' cannot run in phase 'ingestion' (it runs in: lowering); "
        "run 'lift-lambdas', then 'legalize' first" in result.stderr
    )


FACTS = """
import sys
from lamina.target.registry import module_facts, op_facts
from lamina.core.context import make_context
from lamina.core.diagnostics import parse_module
module = parse_module(make_context(), sys.stdin.read(), "<in>")
matmul = next(op for op in module.walk() if op.name == "graph.matmul")
for facts in (module_facts(module), op_facts(matmul)):
    print(facts.vector_bits, facts.cores)
"""


def test_options_of_a_target_extending_cpu_reach_the_facts_layouts_and_schedules_read(satx_site):
    """satx's own `options` (vector_bits=256) and `--target 'satx{cores=3}'` are the facts
    of the module, not the host's: the schedule blocks columns by 16 only at 256 bits."""
    for spec, expected in (("satx", "256 2"), ("satx{cores=3}", "256 3"),
                           ("satx{vector_bits=128 cores=1}", "128 1")):  # fmt: skip
        ir = satx(
            ["lamina-opt", "matmul.mlir", "--target", spec, "--compile-to", "optimization"],
            satx_site,
            check=True,
        ).stdout
        facts = satx([sys.executable, "-c", FACTS], satx_site, input=ir, check=True).stdout
        got = facts.split()
        assert got[0::2] == [expected.split()[0]] * 2, (spec, facts)
        if spec != "satx":  # cores default to the host's
            assert got[1::2] == [expected.split()[1]] * 2, (spec, facts)

    def lowered(spec: str) -> str:
        args = ["lamina-opt", "matmul.mlir", "--target", spec, "--compile-to", "lowering"]
        return satx(args, satx_site, check=True).stdout

    assert "step %c16 kind(parallel)" in lowered("satx")
    assert "step %c16 kind(parallel)" not in lowered("satx{vector_bits=512}")


def test_a_satx_sigmoid_runs_its_own_kernel_and_equals_numpy(satx_site):
    code = (
        "import sys, numpy as np, lamina\n"
        "exe = lamina.compile(open('sigmoid.mlir').read(), targets=['satx'])\n"
        "assert 'satx_sigmoid_4x8' in str(exe.llvm_module)\n"
        "x = np.linspace(-4, 4, 32, dtype=np.float32).reshape(4, 8)\n"
        "print(np.abs(exe.run('main', x) - 1 / (1 + np.exp(-x))).max())\n"
    )
    result = satx([sys.executable, "-c", code], satx_site, check=True)
    assert float(result.stdout) < 1e-6


@pytest.mark.parametrize("hook, error", [("claim", "ValueError: satx-bad-claim cannot decide"),
                                         ("lower", "RuntimeError: satx-bad-lower has no kernel")])  # fmt: skip
def test_a_raising_claim_or_lower_is_a_diagnostic_naming_target_and_package(satx_site, hook, error):
    args = [
        "lamina-opt",
        "sigmoid.mlir",
        "--target",
        f"satx-bad-{hook}",
        "--compile-to",
        "lowering",
    ]
    result = satx(args, satx_site)
    assert result.returncode == 1
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr
    assert (
        f"error: target 'satx-bad-{hook}' (from package 'lamina-satx') failed in its "
        f"`{hook}` on '" in result.stderr
    )
    assert error in result.stderr
    if hook == "lower":  # located at the op the hook was called on
        assert result.stderr.startswith("sigmoid.mlir:2:3: error:")


def _reproducer_command(path: Path) -> str:
    (line,) = [x for x in path.read_text().splitlines() if "reproduce with:" in x]
    return line.split("reproduce with: ", 1)[1]


def test_an_instance_hook_replays_from_print_pipeline_and_from_a_reproducer(satx_site, tmp_path):
    """satx's build hook is a pass instance whose class no registry knows: the
    pipeline spells it target-hook{...}, and both printed commands run."""
    printed = satx(["lamina-opt", "--print-pipeline", "--target", "satx"], satx_site, check=True)
    spec = printed.stdout.strip().splitlines()[-1]
    assert 'target-hook{target="satx" point="build" index=0}' in spec
    replayed = satx(["bash", "-c", f"lamina-opt sigmoid.mlir {spec}"], satx_site)
    assert replayed.returncode == 0, replayed.stderr
    assert 'satx.stamp = "build"' in replayed.stdout and "llvm.func @main" in replayed.stdout

    refused = tmp_path / "refuse.mlir"
    refused.write_text((SATX / "sigmoid.mlir").read_text().replace("@main", "@refuse_stamp"))
    repro = tmp_path / "repro.mlir"
    args = ["lamina-opt", str(refused), "--target", "satx", "--compile-to", "build"]
    first = satx([*args, "--reproducer", str(repro)], satx_site)
    assert first.returncode == 1
    assert "satx-stamp refuses a module with @refuse_stamp" in first.stderr
    command = _reproducer_command(repro)
    assert "--target=satx" in command and "target-hook{" in command
    again = satx(["bash", "-c", command], satx_site, cwd=tmp_path)
    assert again.returncode == 1
    assert "error: satx-stamp refuses a module with @refuse_stamp" in again.stderr
    assert "unknown pass" not in again.stderr


@pytest.mark.parametrize("tool", ["lamina-opt", "lamina-run"])
def test_a_reproducer_of_a_load_plugin_target_loads_the_plugin(tmp_path, tool):
    """The reproducer's command repeats --load-plugin (a script by its absolute path),
    whichever tool wrote it (lamina-run: through LAMINA_REPRODUCER)."""
    script = Path(__file__).parent / "filecheck" / "targets" / "Inputs" / "hook_targets.py"
    source = tmp_path / "refuse.mlir"
    source.write_text((SATX / "sigmoid.mlir").read_text().replace("@main", "@refuse_stamp"))
    repro = tmp_path / "repro.mlir"
    relative = os.path.relpath(script, PKG)
    args = [tool, str(source), "--load-plugin", relative, "--target", "stamper"]
    if tool == "lamina-opt":
        args += ["--compile-to", "build", "--reproducer", str(repro)]
        first = run(args, None)
    else:
        first = run([*args, "--random-inputs"], None, env_extra={"LAMINA_REPRODUCER": str(repro)})
    assert first.returncode == 1 and "test-stamp refuses" in first.stderr
    command = _reproducer_command(repro)
    assert f"--load-plugin={script}" in command  # absolute: runs from anywhere
    again = run(["bash", "-c", command], None, cwd=tmp_path)
    assert again.returncode == 1
    assert "error: test-stamp refuses a module with @refuse_stamp" in again.stderr


# ---------------------------------------------------------------------------
# docs/extending.md, followed literally: the package is built from the page alone
# ---------------------------------------------------------------------------

DOC = Path(__file__).parents[1] / "docs" / "extending.md"
_BLOCK = re.compile(r"<!-- (file: (?P<path>\S+)|run) -->\n```\w*\n(?P<body>.*?)```", re.DOTALL)


def doc_blocks() -> list[tuple[str | None, str]]:
    """(file path or None for a command block, text) for every marked block of the page."""
    return [(m["path"], m["body"]) for m in _BLOCK.finditer(DOC.read_text())]


def page_script() -> str:
    """The page as one shell session: each file block written where the page says,
    each command block run, in the page's order; the first failure stops it."""
    lines = ["set -ex"]
    for path, body in doc_blocks():
        if path is None:
            lines.append(body)
        else:
            lines += [
                f'mkdir -p "$(dirname {path})"',
                f"cat > {path} <<'PAGE_EOF'",
                body + "PAGE_EOF",
            ]
    return "\n".join(lines) + "\n"


def test_following_the_extending_guide_literally_builds_a_working_plugin(tmp_path):
    """Nothing but the page's text: its files in an empty folder, its commands in order.
    The page's `pip install .` installs into a temporary directory (a `pip` on PATH
    that adds `--target DIR --no-deps`, so the suite's environment stays as it is
    and nothing is downloaded), which the tools then see on PYTHONPATH."""
    files = [path for path, _ in doc_blocks() if path]
    assert {"pyproject.toml", "lamina_toy/__init__.py", "lamina_toy/tests/lit.cfg"} <= set(files)
    site, shims = tmp_path / "site", tmp_path / "shims"
    shims.mkdir()
    pip = shims / "pip"
    pip.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m pip "$@" --target "{site}" --no-deps\n')
    pip.chmod(0o755)
    env = dict(os.environ)
    env.update(
        PATH=os.pathsep.join([str(shims), str(BIN), env.get("PATH", "")]),
        PYTHONPATH=str(site),
        PIP_DISABLE_PIP_VERSION_CHECK="1",
    )
    work = tmp_path / "work"
    work.mkdir()
    result = subprocess.run(
        ["bash", "-c", page_script()], cwd=work, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = result.stdout
    assert (work / "lamina-toy" / "lamina_toy" / "tests" / "lit.cfg").is_file()
    assert "PASS: lamina-toy :: toy-lower.mlir" in out  # lit found and ran the test
    assert "| `toy-lower` | ingestion, optimization |" in out
    assert "    toy-lower   (hook optimization (target toy))" in out
    assert "loop.call @toy_relu_4(" in out
    assert "[0. 4. 0. 8.]" in out  # lamina.compile(..., targets=['toy']): relu(2x)
    assert "| toy | cpu | from package 'lamina-toy' |" in out  # --list-targets


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


def test_every_list_of_hook_points_is_the_registry_s():
    """HOOK_POINTS, the pipeline's hook points, and every place that lists them in words."""
    import lamina.target.registry as targets
    from lamina.driver.pipeline import DEFAULT_STAGES, HookPoint
    from lamina.target.registry import HOOK_POINTS

    points = list(HOOK_POINTS)
    assert points == [s.name for st in DEFAULT_STAGES for s in st.steps if isinstance(s, HookPoint)]
    root = Path(__file__).parents[1]
    table = re.findall(r"^\| `(\w+)` \|", DOC.read_text().split("The hook points")[1], re.M)
    assert table == points
    design = (root / "docs" / "design.md").read_text()
    (sentence,) = re.findall(r"hook points ((?:`\w+`,? )+and `\w+`)", design)
    assert re.findall(r"`(\w+)`", sentence) == points
    diagram = design.split("```")[1]
    assert re.findall(r"\[hooks: (\w+)\]", diagram) == points
    assert all(f"`{p}`" in (targets.__doc__ or "") for p in points)
    assert all(f"`{p}`" in (targets.Target.__doc__ or "") for p in points)
