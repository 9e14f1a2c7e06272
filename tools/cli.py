"""What every Lamina command-line tool shares: user errors become diagnostics, exit 1.

A traceback is a bug (docs/design.md §5): user errors (bad text, bad IR, wrong phase,
bad arguments, missing files) print an MLIR-style `error:` line and exit with
status 1; only genuine internal failures print a traceback, and exit 2.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import traceback
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from lamina.core.diagnostics import DiagnosticError

EXIT_USER_ERROR = 1
EXIT_INTERNAL_ERROR = 2


class UsageError(Exception):
    """A bad command-line argument or input file, reported as `error: ...`."""


def user_error_types() -> tuple[type[BaseException], ...]:
    from lamina.core.dense import DTypeError
    from lamina.runtime.cpu_features import HostFeatureError
    from lamina.runtime.executable import LaminaRuntimeError
    from lamina.target.tuning_records import RecordsError
    from lamina.tuning.ray_cluster import RayUnavailable

    # Any OSError reaching a tool's top level comes from reading or writing a
    # file the user named (input, -o, --dump-phases-to, --reproducer, ...).
    # DTypeError: an element type with no NumPy dtype, in a constant or an entry.
    # HostFeatureError: code built for CPU features this host lacks (`isa`).
    return (
        UsageError,
        LaminaRuntimeError,
        DTypeError,
        HostFeatureError,
        OSError,
        RecordsError,
        RayUnavailable,
    )


def guarded_main(tool: str, body: Callable[[], int | None]) -> int:
    """Run a tool's `body`, turning every user error into a diagnostic and exit status 1."""
    try:
        with _tool_warnings(tool):
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


@contextlib.contextmanager
def _tool_warnings(tool: str) -> Iterator[None]:
    """A bad `LAMINA_*` value (runtime/env.py's `LaminaEnvWarning`) printed as the
    tool's own one-line warning, not as Python's `file:line:` report of a line
    inside Lamina; every other warning as Python prints it."""
    from lamina.runtime.env import LaminaEnvWarning

    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        if issubclass(category, LaminaEnvWarning):
            print(f"{tool}: warning: {message}", file=sys.stderr)
        else:
            shown(message, category, filename, lineno, file, line)

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = shown


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


# ---------------------------------------------------------------------------
# Flags every compiling tool shares (lamina-opt, lamina-run, lamina-compile)
# ---------------------------------------------------------------------------


def add_target_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-t",
        "--target",
        dest="targets",
        action="append",
        default=[],
        metavar="T",
        help="compile target (repeatable), e.g. cpu, 'cpu{isa=avx2}' or "
        "'cpu{vector_bits=256 cores=1}' (isa: the instruction set, host by default; "
        "options override the host's code-generation facts; docs/performance.md)",
    )


def add_instrument_arguments(parser: argparse.ArgumentParser, *, opt: bool = False) -> None:
    """The instruments of `lamina.driver.instruments.Instruments`, spelled as in lamina-opt.

    `opt=True` leaves out what lamina-opt defines its own way (its `-v` is
    xdsl-opt's `--version`; its `--print-pipeline` also honours `--pipeline`).
    """
    add_target_argument(parser)
    parser.add_argument(
        "--records",
        metavar="PATH",
        help="tuning records (lamina-tune): kernels with a record for this CPU get its "
        "knobs (docs/tuning.md)",
    )
    parser.add_argument(
        "--records-ignore-errors",
        action="store_true",
        help="skip malformed lines of --records instead of failing",
    )
    parser.add_argument(
        "--pass-timing",
        "--time-passes",
        dest="pass_timing",
        action="store_true",
        help="print an execution time report of the passes (and, when compiling, "
        "LLVM's optimization and code generation) to stderr",
    )
    parser.add_argument(
        "--print-ir-after-all",
        "--print-between-passes",
        dest="print_ir_after_all",
        action="store_true",
        help="print the IR after every pass to stderr",
    )
    parser.add_argument(
        "--dump-phases-to",
        metavar="DIR",
        help="write the module as it enters each phase to DIR/<n>_<phase>.mlir",
    )
    verbose = ["--verbose"] if opt else ["-v", "--verbose"]
    if not opt:  # lamina-opt verifies after every pass unless --disable-verify
        parser.add_argument(
            "--verify-each",
            action="store_true",
            help="verify the IR after every pass (default: when the module enters each "
            "phase and at the end; the same as LAMINA_VERIFY_EACH=1; docs/compile-speed.md)",
        )
        parser.add_argument(
            "--print-pipeline",
            action="store_true",
            help="print the pipeline that would run (with the targets' hooks) and exit",
        )
    parser.add_argument(
        *verbose,
        action="store_true",
        help="report progress on stderr: each phase entered, code generation, elapsed time",
    )
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="one status line on stderr while compiling: phase, pass, kernels built and "
        "from the cache, ETA (default: when stderr is a terminal; never with -v)",
    )


def instrument_options(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of `lamina.compile` that the shared flags ask for.

    `--verify-each` is the process's `LAMINA_VERIFY_EACH=1`, so that the forked
    lowering process (backends/parallel_lowering.py) verifies as its parent does."""
    if getattr(args, "verify_each", False):
        from lamina.core.pass_manager import VERIFY_EACH_ENV

        os.environ[VERIFY_EACH_ENV] = "1"
    return {
        "pass_timing": args.pass_timing,
        "print_ir_after_all": args.print_ir_after_all,
        "dump_phases_to": args.dump_phases_to,
        "verbose": getattr(args, "verbose", False),
        "progress": getattr(args, "progress", None),
    }


def records_options(
    args: argparse.Namespace, note: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """`records` and `records_ignore_errors` of `lamina.compile` from `--records`; the file
    is read now, so a malformed one fails before anything is compiled. `note` is told
    which records do not apply here (another CPU or version) and why (`-v`)."""
    if args.records is None:
        return {}
    from lamina.target.tuning_records import load_records

    loaded = load_records(args.records, ignore_errors=args.records_ignore_errors)
    if note is not None:
        for line in loaded.notes():
            note(line)
    return {"records": args.records, "records_ignore_errors": args.records_ignore_errors}


def print_pipeline(args: argparse.Namespace, pipeline: str = "default") -> int:
    """`--print-pipeline` of lamina-run/lamina-compile: the expanded pipeline, then exit 0."""
    from lamina.driver.pipeline import format_pipeline

    print(format_pipeline(pipeline, args.targets), end="")
    return 0
