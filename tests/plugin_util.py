"""Installing the test plugin packages (`tests/plugin_pkg`, `tests/plugin_satx`) for a test."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path


def pip_install(source: Path, work: Path) -> Path:
    """`source` pip-installed (no dependencies) into a fresh directory under `work`.

    The tools see it on PYTHONPATH, and importlib.metadata finds its entry
    points exactly as for a package installed in the environment, while the
    test process (and docs/passes.md) stays free of it.
    """
    shutil.copytree(source, work / "src", ignore=shutil.ignore_patterns("build", "*.egg-info"))
    site = work / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site),
         str(work / "src")],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return site
