"""MLIR's `-verify-diagnostics`: match produced diagnostics against source annotations.

An annotation is a comment such as::

    // expected-error {{message}}            on this line
    // expected-error@+1 {{message}}         N lines below (also `@-N`)
    // expected-warning @above {{message}}   the closest line above without an annotation
    // expected-note @below {{message}}      the closest line below without an annotation
    // expected-error-re {{value {{[0-9]+}} is}}   `{{...}}` inside is a regex

Severities: `error`, `warning`, `note`, `remark`. A produced diagnostic matches
an unmatched annotation of its severity on its line whose text is a substring
of its message. Every error, warning and remark must be expected, and every
annotation must be matched (MLIR's rules). Notes attached to a diagnostic
(`Diagnostic.notes`) are checked only against `expected-note` annotations on
the diagnostic's line: an unexpected note is not an error, so tests need not
spell out hints such as "run 'legalize' first".

`lamina-opt` applies these rules to a file with at least one annotation. A
file without any follows xdsl-opt's `--verify-diagnostics` instead: the
diagnostics are printed to stdout for FileCheck and the exit status is 0.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from lamina.core.diagnostics import Diagnostic, Severity

_ANNOTATION = re.compile(
    r"expected-(?P<severity>error|warning|note|remark)(?P<regex>-re)?"
    r"[ \t]*(?:@(?P<designator>[+-]\d+|above|below))?"
    r"[ \t]*\{\{(?P<text>.*)\}\}[ \t]*$",
    re.MULTILINE,
)


def _re_pattern(text: str) -> re.Pattern[str]:
    """`expected-*-re` text: literal outside `{{...}}`, a regular expression inside."""
    parts = re.split(r"\{\{(.*?)\}\}", text)
    return re.compile("".join(p if i % 2 else re.escape(p) for i, p in enumerate(parts)))


def has_annotations(text: str) -> bool:
    """True if `text` holds at least one `expected-*` annotation."""
    return _ANNOTATION.search(text) is not None


@dataclass
class Expectation:
    severity: Severity
    text: str
    line: int
    """The line the diagnostic must be reported at (1-based, in the whole file)."""
    annotation_line: int
    matched: bool = False
    pattern: re.Pattern[str] | None = None
    """For `expected-*-re`: the message must contain a match of this."""

    def accepts(self, message: str) -> bool:
        if self.pattern is not None:
            return self.pattern.search(message) is not None
        return self.text in message


@dataclass
class AnnotationError:
    line: int
    message: str


def parse_expectations(
    text: str, line_offset: int = 0
) -> tuple[list[Expectation], list[AnnotationError]]:
    """Annotations in `text` (a split-input chunk starting after `line_offset` lines)."""
    lines = text.splitlines()
    expectations: list[Expectation] = []
    errors: list[AnnotationError] = []
    pending_below: list[Expectation] = []
    last_plain_line: int | None = None
    for index, line in enumerate(lines):
        number = index + 1 + line_offset
        found = list(_ANNOTATION.finditer(line))
        if not found:
            for expectation in pending_below:
                expectation.line = number
            pending_below.clear()
            last_plain_line = number
            continue
        for match in found:
            text = match["text"].strip()
            expectation = Expectation(Severity(match["severity"]), text, number, number)
            if match["regex"]:
                try:
                    expectation.pattern = _re_pattern(text)
                except re.error as err:
                    errors.append(AnnotationError(number, f"invalid regex in annotation: {err}"))
                    continue
            designator = match["designator"]
            if designator == "below":
                pending_below.append(expectation)
            elif designator == "above":
                if last_plain_line is None:
                    errors.append(AnnotationError(number, "expected-*@above has no line above it"))
                    continue
                expectation.line = last_plain_line
            elif designator is not None:
                expectation.line = number + int(designator)
                if not line_offset < expectation.line <= line_offset + len(lines):
                    message = f"expected-*@{designator} points outside the input (line {expectation.line})"
                    errors.append(AnnotationError(number, message))
                    continue
            expectations.append(expectation)
    for expectation in pending_below:
        errors.append(
            AnnotationError(expectation.annotation_line, "expected-*@below has no line below it")
        )
    return expectations, errors


@dataclass
class VerifyResult:
    matched: list[Diagnostic]
    unexpected: list[Diagnostic]
    unmatched: list[Expectation]


def _take(
    expectations: list[Expectation], severity: Severity, line: int | None, message: str
) -> bool:
    for expectation in expectations:
        if (
            not expectation.matched
            and expectation.severity == severity
            and expectation.line == line
            and expectation.accepts(message)
        ):
            expectation.matched = True
            return True
    return False


def match_diagnostics(
    diagnostics: Iterable[Diagnostic], expectations: list[Expectation]
) -> VerifyResult:
    """Pair each diagnostic (and its notes) with an annotation on its line."""
    matched: list[Diagnostic] = []
    unexpected: list[Diagnostic] = []
    for diagnostic in diagnostics:
        loc = diagnostic.resolved_location()
        line = loc.line if loc else None
        if _take(expectations, diagnostic.severity, line, diagnostic.message):
            matched.append(diagnostic)
        else:
            unexpected.append(diagnostic)
        for note in diagnostic.notes:
            _take(expectations, Severity.NOTE, line, note)
    unmatched = [e for e in expectations if not e.matched]
    return VerifyResult(matched, unexpected, unmatched)
