"""Conventions for the test suite itself (docs/internals.md, "Tests").

* every lit test under tests/filecheck (`.mlir`, `.test`, outside `Inputs/`)
  has a `RUN:` line and a `CHECK` line — a file without them tests nothing;
* every registered pass flag has `tests/filecheck/passes/<flag>.mlir`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lamina.core.registry import pass_names

FILECHECK_DIR = Path(__file__).parent / "filecheck"
LIT_SUFFIXES = (".mlir", ".test")
NOT_TESTS = {"Inputs", "Output"}


def lit_tests() -> list[Path]:
    """The files lit runs (same suffixes and exclusions as tests/filecheck/lit.cfg)."""
    return sorted(
        path
        for path in FILECHECK_DIR.rglob("*")
        if path.suffix in LIT_SUFFIXES
        and path.is_file()
        and not NOT_TESTS.intersection(path.relative_to(FILECHECK_DIR).parts)
    )


def test_there_are_lit_tests():
    assert lit_tests(), f"no lit tests found under {FILECHECK_DIR}"


_PREFIX_OPTION = re.compile(r"--check-prefix(?:es)?[= ]([\w,-]+)")


def check_prefixes(text: str) -> set[str]:
    """FileCheck prefixes the RUN lines use (`CHECK` unless --check-prefix(es) says otherwise)."""
    prefixes: set[str] = set()
    for line in text.splitlines():
        if "RUN:" not in line or "filecheck" not in line.lower():
            continue
        groups = _PREFIX_OPTION.findall(line) or ["CHECK"]
        prefixes.update(p for group in groups for p in group.split(","))
    return prefixes or {"CHECK"}


@pytest.mark.parametrize("path", lit_tests(), ids=lambda p: str(p.relative_to(FILECHECK_DIR)))
def test_lit_test_has_run_and_check_lines(path: Path):
    text = path.read_text()
    name = path.relative_to(FILECHECK_DIR)
    assert "RUN:" in text, f"{name} has no RUN: line"
    directive = re.compile(
        rf"\b({'|'.join(map(re.escape, check_prefixes(text)))})(-[A-Z]+)?:", re.MULTILINE
    )
    assert directive.search(text), f"{name} has no CHECK line (prefixes: {check_prefixes(text)})"


def test_every_pass_has_a_filecheck_test_named_after_its_flag():
    missing = [
        f"tests/filecheck/passes/{flag}.mlir"
        for flag in pass_names()
        if not (FILECHECK_DIR / "passes" / f"{flag}.mlir").is_file()
    ]
    assert not missing, "passes without a FileCheck test: " + ", ".join(missing)


def test_pass_test_files_name_registered_passes():
    """`passes/<flag>.mlir` and `passes/<flag>-<variant>.mlir` belong to a registered pass."""
    flags = pass_names()
    orphans = [
        path.name
        for path in sorted((FILECHECK_DIR / "passes").glob("*.mlir"))
        if not any(path.stem == flag or path.stem.startswith(f"{flag}-") for flag in flags)
    ]
    assert not orphans, "tests named after no registered pass: " + ", ".join(orphans)
