"""Large constants through text without a Python operation per element.

Imported models carry megabytes of weights; their text form is MLIR's hex
`dense<"0x...">`. Two xDSL hot spots make that slow, and this module
replaces both with byte-level code:

* printing: xDSL unpacks every dense value into a Python list (to detect
  splats) before printing it; `DensePrinter` prints any dense value of more
  than 100 elements straight from its bytes, in xDSL's own hex form, and so
  any float value holding an infinity or a NaN: xDSL prints those elements
  as hex literals (`0xff800000`) that its parser reads back as integers
  (4.29e9), so a masked-attention constant would not survive the text;
* lexing: xDSL matches string literals with a regular expression that runs
  at about 3 MB/s; `FastStringLexer` finds the closing quote of a literal
  without escapes with `str.find` (falling back to xDSL for the rest).

Printing and parsing ResNet-18's 11 M weights then take a second or two
instead of a minute.
"""

from __future__ import annotations

import hashlib
import io
import os
from pathlib import Path

import numpy as np
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, Float16Type, Float32Type, Float64Type
from xdsl.ir import Attribute, Operation
from xdsl.printer import Printer
from xdsl.utils.lexer import Position, Token
from xdsl.utils.mlir_lexer import MLIRLexer, MLIRToken, MLIRTokenKind, StringLiteral

from lamina.core.resources import BlobWriter, side_file_for

HEX_THRESHOLD = 100
"""Dense values with more elements print as hex (xDSL's own threshold)."""


ELIDED = "dense_resource<__elided__>"
"""What an elided constant prints as: MLIR's marker (with
`--mlir-elide-elementsattrs-if-larger`), readable, deliberately not
parseable back into a value."""


class DensePrinter(Printer):
    """An xDSL `Printer` that prints large dense attributes from their bytes,
    or elides those above `elide_larger_than` elements (0: never), as MLIR's
    `--mlir-elide-elementsattrs-if-larger` does, so a model's IR stays
    readable. With `digest=True` a large value prints as the SHA-256 of its
    bytes instead: text for a cache key (driver/cache_key.py), which hashes
    megabytes of weights at memory speed instead of formatting them."""

    def __init__(
        self,
        *args,
        elide_larger_than: int = 0,
        digest: bool = False,
        blobs: BlobWriter | None = None,
        **kwargs,
    ):
        super().__init__(*args, **kwargs)
        self.elide_larger_than = elide_larger_than
        self.digest = digest
        self.blobs = blobs

    def print_attribute(self, attribute: Attribute) -> None:
        if isinstance(attribute, DenseIntOrFPElementsAttr):
            size = len(attribute)
            if self.elide_larger_than and size > self.elide_larger_than:
                self.print_string(f"{ELIDED} : ")
                self.print_attribute(attribute.get_type())
                return
            if self.digest and size > HEX_THRESHOLD:
                digest = hashlib.sha256(attribute.data.data).hexdigest()
                self.print_string(f'dense<"sha256:{digest}"> : ')
                self.print_attribute(attribute.get_type())
                return
            if self.blobs is not None and self.blobs.wants(attribute.data.data):
                handle = self.blobs.add(attribute.data.data)
                self.print_string(f"dense_resource<{handle}> : ")
                self.print_attribute(attribute.get_type())
                return
            if size > HEX_THRESHOLD or _has_non_finite(attribute):
                self.print_string(f'dense<"0x{attribute.data.data.hex().upper()}"> : ')
                self.print_attribute(attribute.get_type())
                return
        super().print_attribute(attribute)


def _has_non_finite(attribute: DenseIntOrFPElementsAttr) -> bool:
    """Does a float dense value hold an infinity or a NaN (see the module docstring)?"""
    dtype = _FLOAT_DTYPES.get(type(attribute.get_element_type()))
    if dtype is None:
        return False
    return not np.isfinite(np.frombuffer(attribute.data.data, dtype)).all()


_FLOAT_DTYPES = {Float16Type: np.float16, Float32Type: np.float32, Float64Type: np.float64}


def print_module(
    op: Operation,
    elide_larger_than: int = 0,
    digest: bool = False,
    blobs: BlobWriter | None = None,
    **printer_options,
) -> str:
    """The text of `op` (custom form), large constants in hex (or elided, or digested).

    With `blobs`, constants of `blobs.threshold` bytes or more print as
    `dense_resource<handle>`, their bytes go to `blobs` (written by the caller,
    `BlobWriter.write`), and the text ends with the resource section naming
    them (core/resources.py).
    """
    stream = io.StringIO()
    printer = DensePrinter(
        stream=stream,
        elide_larger_than=elide_larger_than,
        digest=digest,
        blobs=blobs,
        **printer_options,
    )
    printer.print_op(op)
    if blobs is not None:
        stream.write(blobs.section())
    return stream.getvalue()


def write_module(
    op: Operation,
    output: str | os.PathLike[str],
    *,
    inline_constants: bool = False,
    elide_larger_than: int = 0,
    **printer_options,
) -> None:
    """Write `op` as text to the file `output`, large constants in its side file
    (`output` + `.bin`, core/resources.py) unless `inline_constants` (or elided)."""
    blobs = None
    if not inline_constants and not elide_larger_than:
        blobs = BlobWriter(side_file_for(output))
    text = print_module(op, elide_larger_than, blobs=blobs, **printer_options) + "\n"
    if blobs is not None:
        blobs.write()
    try:
        Path(output).write_text(text)
    except BaseException:  # a failed write leaves neither file behind
        if blobs is not None:
            blobs.path.unlink(missing_ok=True)
        raise


class FastStringLexer(MLIRLexer):
    """xDSL's MLIR lexer with a linear-time scan for escape-free string literals."""

    def _lex_string_literal(self, start_pos: Position) -> MLIRToken:
        content = self.input.content
        end = content.find('"', start_pos + 1)
        if end < 0 or _has_special(content, start_pos + 1, end):
            return super()._lex_string_literal(start_pos)
        self.pos = end + 1
        return Token(MLIRTokenKind.STRING_LIT, StringLiteral(start_pos, self.pos, self.input))


def _has_special(content: str, start: int, end: int) -> bool:
    """Does `content[start:end]` hold a character the fast path does not handle?"""
    return any(content.find(c, start, end) >= 0 for c in "\\\n\v\f")


def use_fast_string_lexer(lexer: object) -> None:
    """Switch a parser's lexer (`parser.lexer`) to `FastStringLexer`."""
    if type(lexer) is MLIRLexer:
        lexer.__class__ = FastStringLexer
