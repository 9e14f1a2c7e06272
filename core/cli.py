"""What every Lamina command-line tool shares: user errors become diagnostics, exit 1.

A traceback is a bug (DESIGN §5): user errors (bad text, bad IR, wrong phase,
bad arguments, missing files) print an MLIR-style `error:` line and exit with
status 1; only genuine internal failures print a traceback, and exit 2.
"""

from __future__ import annotations

import os
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

    # Any OSError reaching a tool's top level comes from reading or writing a
    # file the user named (input, -o, --dump-phases-to, --reproducer, ...).
    return (UsageError, LaminaRuntimeError, OSError)


def guarded_main(tool: str, body: Callable[[], int | None]) -> int:
    """Run a tool's `body`, turning every user error into a diagnostic and exit status 1."""
    try:
        return body() or 0
    except DiagnosticError as err:
        print(err.format(), file=sys.stderr)
        return EXIT_USER_ERROR
    except BrokenPipeError:  # `tool ... | head`: the reader left; not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_USER_ERROR
    except user_error_types() as err:
        print(f"{tool}: error: {_describe(err)}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        return 130
    except RecursionError:  # deeply nested input, anywhere the stages above did not catch it
        from lamina.core.diagnostics import TOO_DEEP

        print(f"{tool}: error: {TOO_DEEP}", file=sys.stderr)
        return EXIT_USER_ERROR
    except Exception:
        print(f"{tool}: internal error: this is a bug in Lamina, please report it", file=sys.stderr)
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
