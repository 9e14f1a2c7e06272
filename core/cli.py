"""What every Lamina command-line tool shares: user errors become diagnostics, exit 1.

A traceback is a bug (DESIGN §5): user errors (bad text, bad IR, wrong phase,
bad arguments, missing files) print an MLIR-style `error:` line and exit with
status 1; only genuine internal failures print a traceback, and exit 2.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable

from lamina.core.diagnostics import DiagnosticError

EXIT_USER_ERROR = 1
EXIT_INTERNAL_ERROR = 2


class UsageError(Exception):
    """A bad command-line argument or input file, reported as `error: ...`."""


def user_error_types() -> tuple[type[BaseException], ...]:
    from lamina.backends.executable import LaminaRuntimeError

    return (UsageError, LaminaRuntimeError, FileNotFoundError, IsADirectoryError, PermissionError)


def guarded_main(tool: str, body: Callable[[], int | None]) -> int:
    """Run a tool's `body`, turning every user error into a diagnostic and exit status 1."""
    try:
        return body() or 0
    except DiagnosticError as err:
        print(err.format(), file=sys.stderr)
        return EXIT_USER_ERROR
    except user_error_types() as err:
        print(f"{tool}: error: {_describe(err)}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        return 130
    except Exception:
        print(f"{tool}: internal error (please report it with the input):", file=sys.stderr)
        traceback.print_exc()
        return EXIT_INTERNAL_ERROR


def _describe(err: BaseException) -> str:
    if isinstance(err, OSError) and err.filename:
        return f"{err.strerror}: '{err.filename}'"
    return str(err)


def read_source(path: str) -> str:
    """The text of `path` (or stdin for '-'), as a user error if it cannot be read."""
    if path == "-":
        return sys.stdin.read()
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except UnicodeDecodeError:
        raise UsageError(f"'{path}' is not UTF-8 text") from None
