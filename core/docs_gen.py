"""Generated documentation: the pass table (docs/passes.md, `lamina-opt --list-passes`)."""

from __future__ import annotations

from lamina.core.pass_base import phase_list
from lamina.core.registry import get_pass_class, pass_names


def pass_rows() -> list[tuple[str, str, str, str, str]]:
    """(name, phases, produces, requires, summary) for every registered pass."""
    rows = []
    for name in pass_names():
        cls = get_pass_class(name)
        rows.append(
            (
                name,
                phase_list(cls.phases),
                cls.produces.label if cls.produces is not None else "",
                ", ".join(cls.requires),
                cls.summary(),
            )
        )
    return rows


def pass_table() -> str:
    """A Markdown table of the registered passes."""
    header = ("pass", "phases", "produces", "requires", "summary")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in pass_rows():
        cells = [f"`{row[0]}`", *row[1:]]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"
