"""The generated pages docs/passes.md and docs/dialects.md match the code."""

from __future__ import annotations

from lamina.tools.docs_gen import (
    REGENERATE,
    describe_constraint,
    generated_pages,
    op_markdown,
    pass_table,
)


def test_generated_docs_are_up_to_date():
    stale = [
        path.name
        for path, text in generated_pages().items()
        if not path.exists() or path.read_text() != text
    ]
    assert not stale, f"stale generated docs: {', '.join(stale)}; regenerate with `{REGENERATE}`"


def test_pass_table_lists_every_pass_with_its_phases():
    from lamina.core.registry import pass_names

    table = pass_table()
    for name in pass_names():
        assert f"| `{name}` |" in table
    assert "| `lift-lambdas` | ingestion | optimization |" in table


def test_op_section_shows_operands_properties_and_traits():
    from xdsl.dialects.arith import AddiOp

    text = op_markdown(AddiOp)
    assert text.startswith("### `arith.addi`")
    assert "| `lhs` | integer_type \\| index" in text
    assert "| `overflowFlags` |" in text
    assert "Traits:" in text and "Pure" in text


def test_constraints_read_like_types():
    from xdsl.dialects.builtin import IndexType, TensorType
    from xdsl.irdl import AnyOf, BaseAttr, VarConstraint

    constr = VarConstraint("T", AnyOf((BaseAttr(TensorType), BaseAttr(IndexType))))
    assert describe_constraint(constr) == "tensor | index (all `T` equal)"
