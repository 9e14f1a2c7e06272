"""What the differential and fuzz tests tried, printed after the run (not a test)."""

from __future__ import annotations

import sys


def pytest_terminal_summary(terminalreporter) -> None:
    """The example counts of test_differential.py and test_fuzz.py (`STATS`), if they ran."""
    stats = getattr(sys.modules.get("test_differential"), "STATS", None)
    if stats:
        terminalreporter.write_line(f"differential and fuzz examples tried: {stats}")
