"""MLIR `-verify-diagnostics` annotations: line designators and matching rules."""

from __future__ import annotations

from lamina.core.diagnostics import Diagnostic, Severity, SourceLocation
from lamina.core.expected_diagnostics import match_diagnostics, parse_expectations

TEXT = """\
op1
// expected-error @above {{above}}
// expected-error@+2 {{plus two}}
// expected-warning @below {{below}}
op5
op6 // expected-remark {{same line}}
// expected-note @-6 {{minus six}}
// expected-error-re {{x = {{[0-9]+}}}}
"""


def at(line: int, message: str, severity: Severity = Severity.ERROR) -> Diagnostic:
    return Diagnostic(message, severity=severity, location=SourceLocation("f.mlir", line, 1))


def test_designators_resolve_to_lines_with_chunk_offset():
    expectations, errors = parse_expectations(TEXT, line_offset=10)
    assert not errors
    got = [(e.severity.value, e.text, e.line) for e in expectations]
    assert got == [
        ("error", "above", 11),
        ("error", "plus two", 15),
        ("warning", "below", 15),
        ("remark", "same line", 16),
        ("note", "minus six", 11),
        ("error", "x = {{[0-9]+}}", 18),
    ]


def test_dangling_above_and_below_are_errors():
    _, errors = parse_expectations("// expected-error @above {{x}}\n")
    assert [e.message for e in errors] == ["expected-*@above has no line above it"]
    _, errors = parse_expectations("op\n// expected-error @below {{x}}\n")
    assert [e.message for e in errors] == ["expected-*@below has no line below it"]


def test_a_designator_outside_the_input_is_an_error():
    text = "op\n// expected-error @-5 {{x}}\n// expected-error @+2 {{y}}\n"
    expectations, errors = parse_expectations(text)
    assert expectations == []
    assert [e.message for e in errors] == [
        "expected-*@-5 points outside the input (line -3)",
        "expected-*@+2 points outside the input (line 5)",
    ]


def test_matching_needs_line_severity_and_substring():
    expectations, _ = parse_expectations(TEXT)
    result = match_diagnostics(
        [
            at(5, "'x' op plus two and more"),
            at(5, "below", Severity.ERROR),  # wrong severity
            at(6, "in the same line", Severity.REMARK),
            at(8, "x = 42"),
        ],
        expectations,
    )
    assert [d.message for d in result.matched] == [
        "'x' op plus two and more",
        "in the same line",
        "x = 42",
    ]
    assert [d.message for d in result.unexpected] == ["below"]
    assert sorted(e.text for e in result.unmatched) == ["above", "below", "minus six"]


def test_notes_of_a_diagnostic_match_expected_notes_but_are_not_required():
    expectations, _ = parse_expectations("op // expected-error {{boom}}\n")
    diagnostic = at(1, "boom")
    diagnostic.notes.append("run 'legalize' first")
    result = match_diagnostics([diagnostic], expectations)
    assert result.matched == [diagnostic] and not result.unexpected and not result.unmatched
