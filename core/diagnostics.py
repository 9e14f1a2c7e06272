"""MLIR-style diagnostics: `file:line:col: error: message`, attached to ops.

xDSL's verifier raises at the first failing op and reports no source position.
Lamina's tools need more (docs/design.md §5): every diagnostic names a location, a
checker can report *all* violations, and `--verify-diagnostics` matches them
against `// expected-error` annotations by line. This module provides:

* `LocatedParser`, a parser that stamps each op with `loc("file":line:col)`
  taken from the text it was parsed from (unless the text gave a `loc(...)`);
* `Diagnostic` / `DiagnosticError`, a located message and an exception holding
  one or more of them, raised by verifiers and passes;
* `verify_module`, which verifies every op and collects one diagnostic per
  failing op instead of stopping at the first;
* `emit_remark` / `collecting_remarks`, the channel for diagnostics that do
  not stop compilation (a pass's report): printed to stderr, or collected by
  `lamina-opt --verify-diagnostics` so `expected-remark` can match them.
"""

from __future__ import annotations

import bisect
import re
import sys
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from enum import Enum
from math import prod

from xdsl.context import Context
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    FileLineColLoc,
    IntAttr,
    ModuleOp,
    ShapedType,
    StringAttr,
    TensorType,
    UnknownLoc,
    UnregisteredOp,
)
from xdsl.ir import Attribute, Operation
from xdsl.ir.core import RegionBlocks
from xdsl.parser import Parser
from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException
from xdsl.utils.lexer import Input, Span
from xdsl.utils.mlir_lexer import MLIRLexer

from lamina.core.dense_text import use_fast_string_lexer
from lamina.core.isolation import fast_isolation_check
from lamina.core.resources import ResourceError, Resources, split_resources
from lamina.core.scoped_patch import ScopedPatch
from lamina.core.symbols import indexed_symbol_lookup
from lamina.core.verify_memo import already_verified, memo_key, remember
from lamina.core.walk import preorder


class Severity(Enum):
    ERROR = "error"
    WARNING = "warning"
    REMARK = "remark"
    NOTE = "note"


@dataclass(frozen=True)
class SourceLocation:
    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


def location_of(op: Operation | None) -> SourceLocation | None:
    """The source location of `op`, or of its closest located ancestor."""
    from lamina.core.locations import file_line_col

    while op is not None:
        loc = file_line_col(op.location)  # also inside a fused location (several ops merged)
        if loc is not None:
            return SourceLocation(loc.filename.data, loc.line.data, loc.column.data)
        op = op.parent_op()
    return None


@dataclass
class Diagnostic:
    """One message, located at an op (or at an explicit source position)."""

    message: str
    op: Operation | None = None
    severity: Severity = Severity.ERROR
    location: SourceLocation | None = None
    notes: list[str] = field(default_factory=list)
    context: list[str] = field(default_factory=list)
    """Source lines (with a caret line) shown under the message, as MLIR does."""

    def resolved_location(self) -> SourceLocation | None:
        return self.location or location_of(self.op)

    def format(self) -> str:
        loc = self.resolved_location()
        prefix = f"{loc}: " if loc else ("<unknown>: " if self.op is not None else "")
        lines = [f"{prefix}{self.severity.value}: {self.message}", *self.context]
        if loc is None and self.op is not None:
            lines.append(f"note: see operation: {_op_summary(self.op)}")
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)


_remarks: ContextVar[list[Diagnostic] | None] = ContextVar("lamina_remarks", default=None)


def emit_remark(diagnostic: Diagnostic) -> None:
    """Report a diagnostic that does not stop compilation (a remark or a warning).

    MLIR routes such diagnostics through the context's handler rather than
    printing them where they arise, so that `-verify-diagnostics` can match
    them like errors. Here: collected by an enclosing `collecting_remarks()`,
    else written to stderr at once.
    """
    sink = _remarks.get()
    if sink is None:
        print(diagnostic.format(), file=sys.stderr)
    else:
        sink.append(diagnostic)


@contextmanager
def collecting_remarks() -> Iterator[list[Diagnostic]]:
    """Collect what `emit_remark` reports inside the block, instead of printing it."""
    sink: list[Diagnostic] = []
    token = _remarks.set(sink)
    try:
        yield sink
    finally:
        _remarks.reset(token)


def _op_summary(op: Operation) -> str:
    text = str(op).strip().splitlines()
    first = text[0] if text else op.name
    return first if len(first) < 160 else first[:157] + "..."


class DiagnosticError(DiagnosticException):
    """A user-facing failure carrying one or more located diagnostics.

    Raised by op verifiers (via `verify_module`), the phase checker, the pass
    manager and passes. Tools print `format()` and exit with status 1.
    """

    def __init__(
        self, diagnostics: Iterable[Diagnostic] | Diagnostic | str, op: Operation | None = None
    ):
        if isinstance(diagnostics, str):
            diagnostics = [Diagnostic(diagnostics, op)]
        elif isinstance(diagnostics, Diagnostic):
            diagnostics = [diagnostics]
        self.diagnostics = list(diagnostics)
        super().__init__("\n".join(d.message for d in self.diagnostics))

    def format(self) -> str:
        return "\n".join(d.format() for d in self.diagnostics)

    def __str__(self) -> str:
        """The located, MLIR-style text (`file:line:col: error: ...`), as tools print it.

        Diagnostics with neither a location nor an op stay plain messages, so
        that wrapping one (`UsageError(str(err))`) does not repeat `error:`.
        """
        if all(d.op is None and d.resolved_location() is None for d in self.diagnostics):
            return "\n".join(d.message for d in self.diagnostics)
        return self.format()


def op_name(op: Operation) -> str:
    """The name the user wrote: an unregistered op (--allow-unregistered-dialect) is not
    'builtin.unregistered' but the name it was parsed with."""
    if isinstance(op, UnregisteredOp):
        name = op.attributes.get("op_name__")
        if isinstance(name, StringAttr):
            return name.data
    return op.name


def op_error(op: Operation, message: str) -> DiagnosticError:
    """`'graph.matmul' op <message>` located at `op` — the MLIR convention."""
    return DiagnosticError([Diagnostic(f"'{op_name(op)}' op {message}", op)])


# ---------------------------------------------------------------------------
# Parsing with locations
# ---------------------------------------------------------------------------


# xDSL 0.74's string-literal regex nests quantifiers (`(?:[^"...]+|...)*"`), so an
# unterminated `"` backtracks exponentially in the length of the line: a user's
# typo hangs the parser. Matching one character per repetition is equivalent
# (the alternatives are disjoint) and linear.
MLIRLexer._unescaped_characters_regex = re.compile(
    r'"(?:[^"\\\n\v\f]|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"'
)


_PARSER_FAILURES = (
    ValueError,
    KeyError,
    IndexError,
    TypeError,
    AssertionError,
    NotImplementedError,
)
"""Python errors xDSL's parsers raise on some bad input instead of a ParseError."""


class LocatedParser(Parser):
    """An xDSL parser that records each op's `file:line:col` as its location.

    Ops keep an explicit `loc(...)` from the text. `line_offset` shifts lines
    for `--split-input-file` chunks so locations refer to the original file.
    """

    def __init__(
        self,
        ctx: Context,
        input: str | bytes,
        name: str = "<stdin>",
        line_offset: int = 0,
        resources: Resources | None = None,
    ):
        super().__init__(ctx, input, name)
        use_fast_string_lexer(self.lexer)  # megabytes of hex weights lex in linear time
        self._resources = resources or Resources()
        self._line_offset = line_offset
        self._filename_attr = StringAttr(name)
        self._newlines: list[int] | None = None

    def parse_operation(self) -> Operation:
        start = self._current_token.span
        try:
            op = super().parse_operation()
        except VerifyException as err:
            # Attribute verifiers run while parsing: report at the op being parsed.
            raise ParseError(start, str(err)) from None
        except _PARSER_FAILURES as failure:
            # xDSL's own parsers failing with a Python error on bad input
            # (see parse_module): reported at the op being parsed.
            raise ParseError(
                start, f"cannot parse this: {type(failure).__name__}: {failure}"
            ) from None
        if isinstance(op.location, UnknownLoc):
            line, col = self._line_col(start.start)
            op.location = FileLineColLoc(
                self._filename_attr,
                IntAttr(line + start.line_offset + self._line_offset),
                IntAttr(col),
            )
        return op

    def _parse_builtin_dense_resource_attr(self) -> Attribute:
        """`dense_resource<handle> : type` whose bytes the text's resource section
        names (core/resources.py) is an ordinary dense attribute: no pass needs to
        know where the bytes were. Other handles stay xDSL's `DenseResourceAttr`."""
        if not self._resources.entries:
            return super()._parse_builtin_dense_resource_attr()
        self.parse_characters("<", " in dense_resource attribute")
        at = self._current_token.span
        handle = self.parse_identifier(" for resource handle")
        self.parse_characters(">", " in dense_resource attribute")
        self.parse_characters(":", " in dense_resource attribute")
        type_ = self.parse_type()
        if not isinstance(type_, ShapedType):
            self.raise_error(f"dense resource should have a shaped type, got: {type_}", at)
        if handle not in self._resources.entries:
            return DenseResourceAttr.from_params(handle, type_)
        data = self._resources.data(handle)
        if not isinstance(type_, TensorType):
            self.raise_error(f"resource '{handle}' needs a static tensor type, got {type_}", at)
        width = getattr(type_.get_element_type(), "compile_time_size", None)
        shape = type_.get_shape()
        if width is None or any(d < 0 for d in shape):
            self.raise_error(f"resource '{handle}' needs a static tensor type, got {type_}", at)
        expected = width * prod(shape)
        if len(data) != expected:
            self.raise_error(
                f"resource '{handle}' holds {len(data)} bytes, {type_} needs {expected}", at
            )
        return DenseIntOrFPElementsAttr(type_, BytesAttr(data))

    def _line_col(self, pos: int) -> tuple[int, int]:
        """1-based line and column of `pos`, as xDSL's `Span.get_location` computes them.

        xDSL counts the newlines from the start of the input for every call,
        which made parsing quadratic (1000 functions: a fifth of the parse).
        Here the newline offsets are found once and bisected.
        """
        if self._newlines is None:
            source = self.lexer.input
            pattern = re.escape(source.newline)
            self._newlines = [m.start() for m in re.finditer(pattern, source.content)]
        before = bisect.bisect_left(self._newlines, pos)  # newlines before pos
        line_start = self._newlines[before - 1] + 1 if before else 0
        return before + 1, pos - line_start + 1


def _offset_line_col(text: str, offset: int) -> tuple[int, int]:
    """1-based line and column of `offset` in `text`."""
    line_start = text.rfind("\n", 0, offset) + 1
    return text.count("\n", 0, offset) + 1, offset - line_start + 1


def _is_blank(text: str | bytes) -> bool:
    """Nothing but whitespace and `//` comments."""
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    return all(not line.strip() or line.strip().startswith("//") for line in text.splitlines())


TOO_DEEP = (
    "input nested too deeply (regions, types or attributes nested hundreds of levels "
    "exceed Lamina's recursion limit)"
)
"""The diagnostic for a Python RecursionError caused by deeply nested input."""


def _visible(message: str) -> str:
    """`message` with control characters spelled out (xDSL quotes the offending
    character raw: "Unexpected character: \x01" would print an invisible byte)."""
    return "".join(
        f"U+{ord(c):04X}" if (ord(c) < 32 and c not in "\n\t") or ord(c) == 127 else c
        for c in message
    )


def parse_error_diagnostic(err: ParseError, line_offset: int = 0) -> Diagnostic:
    """Turn xDSL's ParseError (file:line:col, source line, carets) into a Diagnostic."""
    loc = err.span.get_location()
    message = _visible(err.msg.strip())
    if err.span.start >= len(err.span.input.content):  # xDSL says little at end of input
        message = "unexpected end of input" + (f" ({message})" if message else "")
    return Diagnostic(
        message,
        location=SourceLocation(loc.file, loc.line + line_offset, loc.col),
        context=err.span.print_with_context().splitlines()[1:3],
    )


def _current_span(parser: LocatedParser | None, text: str | bytes, name: str) -> Span:
    """Where parsing stopped (the start of the input if the parser was never made)."""
    if parser is not None:
        return parser._current_token.span
    content = text.decode(errors="replace") if isinstance(text, bytes) else text
    return Span(0, 0, Input(content, name))


def parse_module(
    ctx: Context, text: str | bytes, name: str = "<stdin>", line_offset: int = 0
) -> ModuleOp:
    """Parse `text` into a module with located ops; syntax errors raise DiagnosticError."""
    if _is_blank(text):  # as MLIR (and lamina-opt): an empty file is an empty module
        module = ModuleOp([])
        module.location = FileLineColLoc(StringAttr(name), IntAttr(line_offset + 1), IntAttr(1))
        return module
    parser: LocatedParser | None = None
    whole = text
    try:
        resources = None
        if isinstance(text, str):  # large constants in a side file (core/resources.py)
            text, resources = split_resources(text, name)
        # Inside the try: the parser lexes the first token as it is made, so an
        # unclosed string or a stray control byte at the start fails right here.
        parser = LocatedParser(ctx, text, name, line_offset, resources)
        return parser.parse_module()
    except ResourceError as err:
        line, col = _offset_line_col(str(whole), err.offset)
        location = SourceLocation(name, line + line_offset, col)
        raise DiagnosticError([Diagnostic(str(err), location=location)]) from None
    except RecursionError:
        err = ParseError(_current_span(parser, text, name), TOO_DEEP)
        raise DiagnosticError([parse_error_diagnostic(err, line_offset)]) from None
    except _PARSER_FAILURES as failure:
        # A custom op parser that fails with a Python error (found by fuzzing:
        # `llvm.icmp " " ...` raises ValueError in xDSL; `dense<1> :
        # tensor<2xi128>` NotImplementedError, no byte format for i128) is
        # still bad input here.
        message = f"cannot parse this: {type(failure).__name__}: {failure}"
        err = ParseError(_current_span(parser, text, name), message)
        raise DiagnosticError([parse_error_diagnostic(err, line_offset)]) from None
    except ParseError as err:
        raise DiagnosticError([parse_error_diagnostic(err, line_offset)]) from None
    except VerifyException as err:
        # Attribute verifiers run at construction time, i.e. while parsing.
        raise DiagnosticError(
            [Diagnostic(str(err), location=SourceLocation(name, line_offset + 1, 1))]
        ) from None


# ---------------------------------------------------------------------------
# Verification that reports every failing op
# ---------------------------------------------------------------------------


def _clean_verify_message(op: Operation, err: Exception) -> str:
    msg = str(err)
    msg = msg.removeprefix("Operation does not verify: ")
    if msg.startswith(f"'{op.name}' op"):
        msg = msg.removeprefix(f"'{op.name}' op").lstrip()
    return f"'{op_name(op)}' op {msg}"


_counts = threading.local()
"""This thread's verification: region → its number of blocks (`_counted_blocks`)."""


def _counted_len(blocks: RegionBlocks) -> int:
    """`len(region.blocks)`, counted once per region and verification on the thread
    verifying (the IR does not change while it verifies); xDSL's count elsewhere."""
    counts = getattr(_counts, "regions", None)
    if counts is None:
        return _XDSL_LEN(blocks)
    region = blocks._region  # pyright: ignore[reportPrivateUsage]
    known = counts.get(id(region))
    if known is not None and known[0] is region:
        return known[1]
    count = _XDSL_LEN(blocks)
    counts[id(region)] = (region, count)  # the region kept: its id is not reused
    return count


_BLOCKS_PATCH = ScopedPatch(RegionBlocks, "__len__", _counted_len)
_XDSL_LEN = RegionBlocks.__len__


@contextmanager
def _counted_blocks() -> Iterator[None]:
    """Within the block, this thread's `len(region.blocks)` counts each region once.
    xDSL's `Operation.verify` counts the blocks of the region of every op ending a
    block (twice: one block or several), walking them: quadratic in the blocks of a
    function (DenseNet-121's llvm-dialect kernels: 4,200 blocks, 205,000 steps)."""
    outer = getattr(_counts, "regions", None)
    _counts.regions = {}
    try:
        with _BLOCKS_PATCH.active():
            yield
    finally:
        _counts.regions = outer


def collect_verify_diagnostics(root: Operation) -> list[Diagnostic]:
    """Verify every op under `root` (inclusive) and return one diagnostic per failure.

    Each op is verified without its nested ops, so a failure is attributed to
    the op that actually broke a rule, and sibling failures are all reported.
    """
    diagnostics: list[Diagnostic] = []
    with indexed_symbol_lookup(), fast_isolation_check(), _counted_blocks():
        for op in preorder(root):
            _verify_one(op, diagnostics)
    return diagnostics


def _verify_one(op: Operation, diagnostics: list[Diagnostic]) -> None:
    """Verify `op` alone, appending a located diagnostic for each failure.

    An op whose verification reads only its own types and attributes, and
    whose key verified before, is not verified again (core/verify_memo.py).
    """
    key = memo_key(op)
    if key is not None and already_verified(key):
        return
    try:
        op.verify(verify_nested_ops=False)
        if key is not None:
            remember(key)
    except DiagnosticError as err:
        diagnostics.extend(err.diagnostics)
    except (VerifyException, DiagnosticException) as err:
        diagnostics.append(Diagnostic(_clean_verify_message(op, err), op))
    except RecursionError:
        diagnostics.append(Diagnostic(f"'{op.name}' op: {TOO_DEEP}", op))
    except Exception as err:  # a verifier bug must still point at the op
        diagnostics.append(
            Diagnostic(f"'{op.name}' op verifier crashed: {type(err).__name__}: {err}", op)
        )


def verify_module(root: Operation) -> None:
    """Verify `root`, raising a DiagnosticError listing every failing op."""
    try:
        diagnostics = collect_verify_diagnostics(root)
    except RecursionError:  # walking the nested regions themselves
        diagnostics = [Diagnostic(TOO_DEEP, root)]
    if diagnostics:
        raise DiagnosticError(diagnostics)
