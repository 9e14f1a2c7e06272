"""`LAMINA_*` environment variables (runtime/env.py): one parser, a visible warning for a
value it does not accept (then the default), and every reader of such a variable uses it."""

from __future__ import annotations

import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from lamina.runtime import env
from lamina.runtime.env import LaminaEnvWarning, env_flag, env_int, env_path

ROOT = Path(__file__).resolve().parents[1]
NAME = "LAMINA_TEST_ENV_VARIABLE"


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    monkeypatch.delenv(NAME, raising=False)
    monkeypatch.setattr(env, "_warned", set())


@pytest.mark.parametrize("value", ["1", "on", "TRUE", " yes ", "Yes"])
def test_flag_true(value, monkeypatch):
    monkeypatch.setenv(NAME, value)
    assert env_flag(NAME, False) is True


@pytest.mark.parametrize("value", ["0", "off", "False", " no", "NO"])
def test_flag_false(value, monkeypatch):
    monkeypatch.setenv(NAME, value)
    assert env_flag(NAME, True) is False


@pytest.mark.parametrize("value", [None, "", "   "])
def test_flag_unset_or_empty_is_the_default(value, monkeypatch):
    if value is not None:
        monkeypatch.setenv(NAME, value)
    assert env_flag(NAME, True) is True
    assert env_flag(NAME, False) is False
    assert env_flag(NAME, None) is None


def test_a_bad_flag_warns_once_with_the_name_value_and_accepted_values(monkeypatch):
    monkeypatch.setenv(NAME, "banana")
    with pytest.warns(LaminaEnvWarning) as caught:
        assert env_flag(NAME, True) is True
    text = str(caught[0].message)
    assert NAME in text and "'banana'" in text
    assert all(spelling in text for spelling in ("1", "0", "on", "off", "true", "false"))
    assert "default (on)" in text
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a second read of the same value does not warn
        assert env_flag(NAME, True) is True
    monkeypatch.setenv(NAME, "bananas")  # another bad value does
    with pytest.warns(LaminaEnvWarning, match="bananas"):
        assert env_flag(NAME, None) is None


def test_a_warning_turned_into_an_error_is_raised_again(monkeypatch):
    """The test suite's `filterwarnings = error`: the error is not swallowed the second time."""
    monkeypatch.setenv(NAME, "maybe")
    for _ in range(2):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(LaminaEnvWarning):
                env_flag(NAME, True)


@pytest.mark.parametrize(
    "value, kwargs, expected",
    [
        ("4", {}, 4),
        (" 12 ", {"minimum": 1}, 12),
        ("-3", {}, -3),
        ("0", {"minimum": 0}, 0),
        ("8", {"minimum": 1, "maximum": 8}, 8),
    ],
)
def test_int(value, kwargs, expected, monkeypatch):
    monkeypatch.setenv(NAME, value)
    assert env_int(NAME, 7, **kwargs) == expected


@pytest.mark.parametrize(
    "value, kwargs, accepted",
    [
        ("x", {}, "a whole number"),
        ("2.5", {"minimum": 1}, "a whole number >= 1"),
        ("0", {"minimum": 1}, "a whole number >= 1"),
        ("-1", {"minimum": 0}, "a whole number >= 0"),
        ("9", {"minimum": 1, "maximum": 8}, "a whole number from 1 to 8"),
        ("9", {"maximum": 8}, "a whole number <= 8"),
    ],
)
def test_a_bad_int_warns_and_gives_the_default(value, kwargs, accepted, monkeypatch):
    monkeypatch.setenv(NAME, value)
    with pytest.warns(LaminaEnvWarning, match=re.escape(accepted)) as caught:
        assert env_int(NAME, 7, **kwargs) == 7
    assert f"{NAME}={value!r}" in str(caught[0].message)
    assert env_int(NAME, None, **kwargs) is None  # warned once already


def test_int_unset_or_empty(monkeypatch):
    assert env_int(NAME, 3) == 3
    monkeypatch.setenv(NAME, "")
    assert env_int(NAME, None) is None


def test_path(monkeypatch):
    assert env_path(NAME) is None
    monkeypatch.setenv(NAME, "  ")
    assert env_path(NAME) is None
    monkeypatch.setenv(NAME, "/tmp/a b")
    assert env_path(NAME) == "/tmp/a b"


def test_readers_use_the_parser(monkeypatch):
    """The variables' readers give the default for a bad value, with the warning."""
    from lamina.backends import codegen, compile_worker, kernel_reuse, parallel_lowering
    from lamina.core import pass_manager
    from lamina.runtime import cache, call_team, constant_blob, host

    flags = [
        ("LAMINA_CACHE", cache.enabled, True),
        ("LAMINA_HUGE_PAGES", constant_blob._huge_pages_on, True),
        ("LAMINA_COMPILE_WORKER", compile_worker.enabled, True),
        ("LAMINA_SPLIT_KERNELS", codegen.split_enabled, True),
        ("LAMINA_REUSE_KERNELS", kernel_reuse.reuse_enabled, True),
        ("LAMINA_VERIFY_EACH", pass_manager.verify_each_requested, False),
        ("LAMINA_TEAM_SPIN", call_team._spin_from_env, call_team.DEFAULT_SPIN),
        ("LAMINA_BUILD_THREADS", host.build_threads, host.usable_cores()),
    ]
    for name, read, default in flags:
        monkeypatch.setenv(name, "banana")
        with pytest.warns(LaminaEnvWarning, match=name):
            assert read() == default, name
    monkeypatch.setenv("LAMINA_LOWER_PROCESSES", "banana")
    with pytest.warns(LaminaEnvWarning, match="LAMINA_LOWER_PROCESSES"):
        parallel_lowering.enabled()
    monkeypatch.setenv("LAMINA_TEAM_SPIN", "-5")  # a negative count is not accepted either
    with pytest.warns(LaminaEnvWarning, match=">= 0"):
        assert call_team._spin_from_env() == call_team.DEFAULT_SPIN


def test_a_tool_with_a_bad_value_warns_and_runs(tmp_path):
    """A typo in the environment is visible on stderr, and the tool still runs (no
    traceback): `lamina-run` with bad values for the cache, the call team's chunk order
    and the thread count."""
    bad = {
        "LAMINA_CACHE": "banana",
        "LAMINA_TEAM_ENDS": "maybe",
        "LAMINA_NUM_THREADS": "two",
        "LAMINA_CACHE_DIR": str(tmp_path),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "lamina.tools.lamina_run", str(ROOT / "examples" / "mlp.mlir"),
         "--random-inputs", "--seed", "0"],
        capture_output=True, text=True, timeout=600, check=False,
        env={**_clean_env(), **bad},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    for name, value in bad.items():
        if name != "LAMINA_CACHE_DIR":
            assert f"{name}={value!r} is not accepted" in proc.stderr, proc.stderr


def _clean_env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("LAMINA_")}


READS = re.compile(
    r"os\.(?:environ\.get|getenv)\(\s*([A-Za-z_\"'][\w\"']*)|os\.environ\[([^\]]+)\](?!\s*=)"
)


def test_no_module_reads_a_lamina_variable_directly():
    """Every `LAMINA_*` variable is read through runtime/env.py (writes are fine: a
    benchmark or a tool setting one for itself or a child)."""
    offenders = []
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT)
        if rel.parts[0] in ("tests", ".venv", "build") or rel == Path("runtime/env.py"):
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for match in READS.finditer(line):
                arg = (match.group(1) or match.group(2) or "").strip()
                if "LAMINA_" in arg or arg.endswith("ENV"):
                    offenders.append(f"{rel}:{number}: {line.strip()}")
    assert not offenders, offenders


def test_a_tool_prints_a_bad_value_as_its_own_one_line_warning(monkeypatch, capsys):
    """Under a tool (`guarded_main`) the warning is `tool: warning: ...`, not Python's
    report of a line inside Lamina; other warnings keep Python's form."""
    from lamina.tools.cli import guarded_main

    monkeypatch.setenv(NAME, "sometimes")

    def body() -> int:
        env_flag(NAME, False)
        warnings.warn("another warning", UserWarning, stacklevel=1)
        return 0

    passed_on: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("always")  # the suite's filterwarnings=error would raise them
        warnings.showwarning = lambda message, *_args, **_kw: passed_on.append(str(message))
        assert guarded_main("lamina-x", body) == 0
    err = capsys.readouterr().err
    assert f"lamina-x: warning: {NAME}='sometimes' is not accepted" in err
    assert "using the default (off)" in err
    assert "env.py" not in err
    assert passed_on == ["another warning"]  # to the showwarning in force before
