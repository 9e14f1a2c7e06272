"""`lamina-opt`: Lamina's modular optimizer driver (docs/design.md §7).

Built on xDSL's `xDSLOptMain`: its flags (`-p`, `--split-input-file`,
`--print-op-generic`, `-o`, `--disable-verify`, `--allow-unregistered-dialect`,
`--print-debuginfo`, ...), with Lamina's dialects and passes registered, every
op parsed with its `file:line:col` location, verification reporting every
failing op, and Lamina's phase-aware pass manager. Lamina adds
`--list-passes`, `--list-targets`, `--pipeline`, `--print-pipeline`, `--print-ir-after-all`,
`--pass-timing`, `--compile-to`, `--dump-phases-to`, `--reproducer` and
`--target` (a compile target; xdsl-opt's output-format `-t/--target` is gone:
the output is always MLIR text).

Every user error is an MLIR-style diagnostic on stderr and exit status 1;
`--verify-diagnostics` follows MLIR (`// expected-error@+1 {{...}}`).
A Python traceback (exit status 2, `internal error:`) is a bug.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from io import StringIO
from pathlib import Path
from typing import IO, Any, NoReturn

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr, UnknownLoc
from xdsl.ir import Attribute
from xdsl.targets.mlir import MLIRTarget
from xdsl.utils.exceptions import DiagnosticException
from xdsl.xdsl_opt_main import xDSLOptMain

from lamina import __version__
from lamina.core.diagnostics import (
    Diagnostic,
    DiagnosticError,
    Severity,
    SourceLocation,
    collecting_remarks,
    parse_module,
)
from lamina.core.expected_diagnostics import (
    match_diagnostics,
    parse_expectations,
)
from lamina.core.resources import BlobWriter, side_file_for
from lamina.dialects.lamina import PHASE_NAMES, Phase, get_phase
from lamina.tools.cli import UsageError, guarded_main

PROG = "lamina-opt"
SPLIT_MARKER = "// -----"


class _ArgumentParser(argparse.ArgumentParser):
    """argparse that raises UsageError (exit 1, no usage dump) instead of exiting 2."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


@dataclass
class Chunk:
    text: str
    line_offset: int


def split_input(text: str, split: bool) -> list[Chunk]:
    """The chunks of `text` separated by `// -----`, each with its line offset."""
    if not split:
        return [Chunk(text, 0)]
    chunks = []
    offset = 0
    for piece in text.split(SPLIT_MARKER):
        chunks.append(Chunk(piece, offset))
        offset += piece.count("\n")
    return chunks


class LaminaOptMain(xDSLOptMain):
    """xdsl-opt with Lamina's dialects, passes, located diagnostics and pass manager."""

    version_format = f"lamina-opt {__version__} (xDSL {{xdsl_version}})"

    def __init__(self, args: Sequence[str] | None = None):
        # xDSLOptMain.__init__ validates xdsl-opt's output `--target`, which
        # Lamina replaces by a compile target; the rest is the same sequence.
        self.available_frontends = {}
        self.available_passes = {}
        self.available_targets = {}
        self.input_name = "<stdin>"
        self.blobs: BlobWriter | None = None
        self.ctx = Context()
        _load_plugins(args)  # before registration: plugins add dialects, passes, targets
        self.register_all_dialects()
        self.register_all_frontends()
        self.register_all_passes()
        self.register_all_targets()
        arg_parser = _ArgumentParser(
            prog=PROG,
            description="Lamina modular optimizer driver",
            allow_abbrev=False,
            conflict_handler="resolve",  # Lamina's flags replace some of xdsl-opt's
        )
        self.register_all_arguments(arg_parser)
        self.args = arg_parser.parse_args(args=args)
        self.ctx.allow_unregistered = self.args.allow_unregistered_dialect
        if self.args.disable_verify:
            Attribute.__post_init__ = lambda self: None
        self._validate_targets()
        self.setup_pipeline()

    # -- registration -------------------------------------------------------

    def register_all_dialects(self) -> None:
        from lamina.core.context import all_dialect_factories

        for name, factory in all_dialect_factories().items():
            self.ctx.register_dialect(name, factory)

    def register_all_passes(self) -> None:
        from lamina.core.registry import pass_factories

        for name, factory in pass_factories().items():
            self.register_pass(name, factory)

    def register_all_targets(self) -> None:
        from xdsl.universe import Universe

        self.available_targets["mlir"] = Universe.get_multiverse().all_targets["mlir"]

    def register_all_frontends(self) -> None:
        def parse_mlir(io: IO[bytes]) -> ModuleOp:
            return self._parse_text(io.read().decode(), 0)

        self.available_frontends["mlir"] = parse_mlir

    def parse_chunk(
        self, chunk: IO[bytes], file_extension: str, start_offset: int = 0
    ) -> ModuleOp | None:
        return self._parse_text(chunk.read().decode(), start_offset)

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        from lamina.tools.cli import add_instrument_arguments

        super().register_all_arguments(arg_parser)
        arg_parser.add_argument(
            "-p",
            "--passes",
            "--pass-pipeline",
            dest="passes",
            default="",
            help="passes to run: 'a,b{opt=1}' or MLIR's 'builtin.module(a,b{opt=1})'",
        )
        # Replace xdsl-opt's output-format `-t/--target`, `--time-passes` and
        # `--print-between-passes` by the flags every Lamina tool shares
        # (lamina.tools.cli; aliases kept).
        add_instrument_arguments(arg_parser, opt=True)
        arg_parser.add_argument(
            "--print-ir-after-failure",
            action="store_true",
            help="print the IR to stderr after a pass fails",
        )
        arg_parser.add_argument(
            "--load-plugin",
            action="append",
            default=[],
            metavar="MODULE",
            help="import a Python module (name or .py file) that registers dialects, "
            "passes or targets (repeatable); see docs/extending.md",
        )
        arg_parser.add_argument(
            "--list-passes",
            action="store_true",
            help="list the registered passes with their phases and exit",
        )
        arg_parser.add_argument(
            "--list-targets",
            action="store_true",
            help="list the compile targets (built in, registered, installed plugins; "
            "a plugin that fails to load is listed with its error) and exit",
        )
        arg_parser.add_argument(
            "--pipeline", metavar="NAME", help="run a named pipeline (e.g. default)"
        )
        arg_parser.add_argument(
            "--print-pipeline",
            action="store_true",
            help="print the pipeline that would run (-p, --pipeline or the default, "
            "with target hooks) and exit",
        )
        arg_parser.add_argument(
            "--compile-to",
            metavar="PHASE",
            choices=PHASE_NAMES,
            help=f"run the default pipeline up to the end of PHASE ({', '.join(PHASE_NAMES)})",
        )
        arg_parser.add_argument(
            "--reproducer",
            metavar="FILE",
            help="when a pass fails, write the IR before it and the command that reproduces "
            "the failure to FILE (a directory: a fresh file in it); also LAMINA_REPRODUCER=FILE",
        )
        arg_parser.add_argument(
            "--mlir-elide-elementsattrs-if-larger",
            "--elide-constants-larger-than",
            dest="elide_larger_than",
            type=int,
            default=0,
            metavar="N",
            help="print constants of more than N elements as dense_resource<__elided__> "
            "(readable, not parseable back; 0: print every value)",
        )
        arg_parser.add_argument(
            "--inline-constants",
            action="store_true",
            help="with -o FILE, keep every constant in the text as hex instead of writing "
            "those of 1 KiB or more to FILE.bin (docs/onnx.md)",
        )
        arg_parser.add_argument(
            "--verify-diagnostics",
            action="store_true",
            help="check diagnostics against `// expected-error {{...}}` annotations "
            "(MLIR rules: an unexpected diagnostic fails, annotations or not; "
            "matched diagnostics are printed)",
        )

    # -- set-up ---------------------------------------------------------------

    def _validate_targets(self) -> None:
        from lamina.driver.pipeline import resolve_targets

        resolve_targets(self.args.targets)

    def setup_pipeline(self) -> None:
        """Build the pass list from `-p`, `--pipeline` or `--compile-to` (one of them)."""
        from lamina.core.pass_manager import PipelineSpecError, parse_pass_pipeline
        from lamina.driver.pipeline import PipelineError, pipeline_passes

        chosen = [
            flag
            for flag, value in (
                ("-p", self.args.passes),
                ("--pipeline", self.args.pipeline),
                ("--compile-to", self.args.compile_to),
            )
            if value
        ]
        if self.args.pipeline is not None and not self.args.pipeline.strip():
            raise UsageError("--pipeline needs a pipeline name (e.g. --pipeline default)")
        if len(chosen) > 1 and chosen != ["--pipeline", "--compile-to"]:
            raise UsageError(f"{' and '.join(chosen)} cannot be combined")
        self.stop_phase: Phase | None = (
            Phase.from_label(self.args.compile_to) if self.args.compile_to else None
        )
        self.pipeline_name: str | None = self.args.pipeline or (
            "default" if self.stop_phase is not None else None
        )
        self.passes = []
        try:
            if self.args.passes:
                self.passes = parse_pass_pipeline(self.args.passes, self.available_passes)
            elif self.pipeline_name and not self.args.print_pipeline:
                self.passes = pipeline_passes(
                    self.pipeline_name, targets=self.args.targets, stop=self.stop_phase
                )
        except PipelineSpecError:
            raise  # located in the -p text, printed as a diagnostic
        except PipelineError as err:
            raise UsageError(str(err)) from None

    # -- running ----------------------------------------------------------------

    def run(self) -> int:
        """Process the input; returns the exit status."""
        if self.args.list_passes:
            from lamina.tools.docs_gen import pass_options_listing, pass_table

            print(pass_table() + pass_options_listing(), end="")
            return 0
        if self.args.list_targets:
            print(target_table(), end="")
            return 0
        if self.args.print_pipeline and self.args.passes:
            from lamina.core.pass_manager import pipeline_spec_string

            print(f"// pipeline from -p\n-p '{pipeline_spec_string(self.passes)}'")
            return 0
        if self.args.print_pipeline:
            from lamina.driver.pipeline import PipelineError, format_pipeline

            try:
                text = format_pipeline(self.pipeline_name or "default", self.args.targets)
            except PipelineError as err:
                raise UsageError(str(err)) from None
            print(text, end="")
            return 0
        name, text = self._read_input()
        self.input_name = name
        output = self._open_output()
        self.blobs = self._side_file()
        status = 0
        try:
            chunks = split_input(text, self.args.split_input_file)
            for index, chunk in enumerate(chunks):
                if index > 0:
                    output.write(SPLIT_MARKER + "\n")
                if not self._process_chunk(chunk, index, len(chunks), output):
                    status = 1
                output.flush()
            if status == 0 and self.blobs is not None:
                self.blobs.write()
        except BaseException:
            status = 1
            raise
        finally:
            if output is not sys.stdout:
                output.close()
                if status != 0:  # a failed run leaves no (partial) output file behind
                    Path(self.args.output_file).unlink(missing_ok=True)
        return status

    def _side_file(self) -> BlobWriter | None:
        """Where large constants of the output go: FILE.bin beside `-o FILE` (unless
        `--inline-constants`, elided constants, or the generic form); none on stdout."""
        out = self.args.output_file
        if out in (None, "-") or self.args.inline_constants or self.args.elide_larger_than:
            return None
        return BlobWriter(side_file_for(out))

    def _read_input(self) -> tuple[str, str]:
        path = self.args.input_file
        if path is None or path == "-":
            return "<stdin>", sys.stdin.read()
        try:
            return path, Path(path).read_text()
        except (OSError, UnicodeDecodeError) as err:
            reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
            raise UsageError(f"could not open input file '{path}': {reason}") from None

    def _open_output(self) -> IO[str]:
        if self.args.output_file is None or self.args.output_file == "-":
            return sys.stdout
        try:
            return open(self.args.output_file, "w")
        except OSError as err:
            raise UsageError(
                f"could not open output file '{self.args.output_file}': {err.strerror}"
            ) from None

    def _process_chunk(self, chunk: Chunk, index: int, count: int, output: IO[str]) -> bool:
        """Parse, verify, transform and print one chunk; False if it failed."""
        diagnostics: list[Diagnostic] = []
        module: ModuleOp | None = None
        # --verify-diagnostics matches remarks too; otherwise they print as they come.
        collect = collecting_remarks() if self.args.verify_diagnostics else nullcontext([])
        with collect as remarks:
            try:
                module = self._parse_text(chunk.text, chunk.line_offset)
                if not self.args.disable_verify:
                    from lamina.core.diagnostics import verify_module

                    verify_module(module)
                    get_phase(module)  # a malformed `lamina.phase` is a verification error
                self._apply_passes(module, index if count > 1 else None)
            except DiagnosticError as err:
                diagnostics = err.diagnostics
            except DiagnosticException as err:
                from lamina.core.pass_manager import as_diagnostics

                diagnostics = as_diagnostics(err, module) if module else [Diagnostic(str(err))]

        if self.args.verify_diagnostics:
            return self._check_expectations(chunk, [*remarks, *diagnostics], module, output)
        if diagnostics:
            if self.args.parsing_diagnostics and module is None:
                for diagnostic in diagnostics:
                    print(diagnostic.format())
                return True
            for diagnostic in diagnostics:
                print(diagnostic.format(), file=sys.stderr)
            return False
        assert module is not None
        output.write(self.output_resulting_program(module))
        return True

    def _parse_text(self, text: str, line_offset: int) -> ModuleOp:
        if _is_blank(text):  # MLIR reads an empty file (or chunk) as an empty module
            module = ModuleOp([])
        else:
            module = parse_module(self.ctx, text, self.input_name, line_offset)
        if isinstance(module.location, UnknownLoc):
            if self.args.no_implicit_module:
                raise DiagnosticError(
                    Diagnostic(
                        "expected a single top-level 'builtin.module' (--no-implicit-module)",
                        location=SourceLocation(self.input_name, line_offset + 1, 1),
                    )
                )
            # An implicit module: report module-level errors at its first op.
            first = next(iter(module.ops), None)
            if first is not None and isinstance(first.location, FileLineColLoc):
                module.location = first.location
            else:
                module.location = FileLineColLoc(
                    StringAttr(self.input_name), IntAttr(line_offset + 1), IntAttr(1)
                )
        return module

    def _apply_passes(self, module: ModuleOp, chunk_index: int | None) -> None:
        from lamina.core.pass_manager import PassManager
        from lamina.driver.lowering import with_records
        from lamina.driver.pipeline import passes_for_module

        passes = self.passes
        if self.pipeline_name and not self.args.passes:
            passes = passes_for_module(
                self.pipeline_name, module, self.args.targets, self.stop_phase
            )
        if self.args.records is not None:
            passes = with_records(passes, **_records(self.args))
        if not passes and not self.args.dump_phases_to:
            return
        manager = PassManager(
            passes,
            verify_each=not self.args.disable_verify,
            print_ir_after_all=sys.stderr if self.args.print_ir_after_all else None,
            print_ir_after_failure=sys.stderr if self.args.print_ir_after_failure else None,
            progress=sys.stderr if self.args.verbose else None,
            timing=self.args.pass_timing,
            dump_phases_to=self.args.dump_phases_to,
            reproducer_path=self.args.reproducer,
            dump_suffix=f".{chunk_index}" if chunk_index is not None else "",
            reproducer_flags=self._reproducer_flags(),
        )
        from lamina.driver.instruments import Instruments

        line = Instruments(
            verbose=self.args.verbose,
            show_progress=self.args.progress,
            print_ir_after_all=self.args.print_ir_after_all or self.args.print_ir_after_failure,
        )
        line.manager = manager
        manager.observer = line  # the progress line only: lamina-opt reports the rest itself
        try:
            manager.run(self.ctx, module)
        finally:
            line.close_line()

    def _reproducer_flags(self) -> list[str]:
        """The flags a reproducer's command needs to fail the same way (the pass
        manager adds the `--load-plugin`s, `core/plugins.py`)."""
        flags = [f"--target={t}" for t in self.args.targets]
        if self.args.allow_unregistered_dialect:
            flags.append("--allow-unregistered-dialect")
        if self.args.disable_verify:
            flags.append("--disable-verify")
        return flags

    def _check_expectations(
        self,
        chunk: Chunk,
        diagnostics: list[Diagnostic],
        module: ModuleOp | None,
        output: IO[str],
    ) -> bool:
        """MLIR's -verify-diagnostics for one chunk; prints matches, reports mismatches.

        As in MLIR, every diagnostic must be expected: in a file without any
        `expected-*` annotation, any diagnostic fails the run.
        """
        expectations, annotation_errors = parse_expectations(chunk.text, chunk.line_offset)
        result = match_diagnostics(diagnostics, expectations)
        for diagnostic in result.matched:
            output.write(diagnostic.format().splitlines()[0] + "\n")
        if module is not None and all(d.severity != Severity.ERROR for d in diagnostics):
            output.write(self.output_resulting_program(module))  # remarks only: it ran
        name = self.input_name
        for error in annotation_errors:
            print(f"{name}:{error.line}: error: {error.message}", file=sys.stderr)
        for expectation in result.unmatched:
            print(
                f"{name}:{expectation.line}: error: expected {expectation.severity.value} "
                f'"{expectation.text}" was not produced',
                file=sys.stderr,
            )
        for diagnostic in result.unexpected:
            loc = diagnostic.resolved_location()
            prefix = f"{loc}: " if loc else f"{name}: "
            print(
                f"{prefix}error: unexpected {diagnostic.severity.value}: {diagnostic.message}",
                file=sys.stderr,
            )
        return not (annotation_errors or result.unmatched or result.unexpected)

    def output_resulting_program(self, prog: ModuleOp) -> str:
        if self.args.elide_larger_than < 0:
            raise UsageError("--mlir-elide-elementsattrs-if-larger expects N >= 0")
        blobs = self.blobs
        if (self.args.elide_larger_than or blobs) and not self.args.print_op_generic:
            from lamina.core.dense_text import print_module

            return (
                print_module(
                    prog,
                    self.args.elide_larger_than,
                    blobs=blobs,
                    print_properties_as_attributes=self.args.print_no_properties,
                    print_debuginfo=self.args.print_debuginfo,
                )
                + "\n"
            )
        out = StringIO()
        MLIRTarget(
            print_generic_format=self.args.print_op_generic,
            print_properties_as_attributes=self.args.print_no_properties,
            print_debuginfo=self.args.print_debuginfo,
            syntax_highlight=self.args.syntax_highlight,
        ).emit(self.ctx, prog, out)
        return out.getvalue()


def target_table() -> str:
    """`--list-targets`: a Markdown table of every target; a broken plugin says why."""
    from lamina.target.registry import list_targets

    lines = ["| target | extends | from | description |", "|---|---|---|---|"]
    for item in list_targets():
        if item.error is not None:
            row = [item.name, "", "", f"broken: {item.error}"]
        else:
            row = [item.name, item.extends or "", item.origin, item.description]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |")
    return "\n".join(lines) + "\n"


def _load_plugins(argv: Sequence[str] | None) -> None:
    """Import every `--load-plugin MODULE` of `argv` (argparse runs after registration)."""
    from lamina.core.plugins import load_plugin

    args = list(sys.argv[1:] if argv is None else argv)
    for index, arg in enumerate(args):
        if arg == "--load-plugin" and index + 1 < len(args):
            load_plugin(args[index + 1])
        elif arg.startswith("--load-plugin="):
            load_plugin(arg.split("=", 1)[1])


def _is_blank(text: str) -> bool:
    """True if `text` holds nothing but whitespace and `//` comments."""
    return all(not line.strip() or line.strip().startswith("//") for line in text.splitlines())


def _records(args) -> dict[str, Any]:
    """`with_records`' arguments from `--records` (`--verbose`: which records do not apply)."""
    from lamina.tools.cli import records_options

    def note(line: str) -> None:
        print(f"lamina-opt: {line}", file=sys.stderr)

    options = records_options(args, note if args.verbose else None)
    return {"records": options["records"], "ignore_errors": options["records_ignore_errors"]}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `lamina-opt`; returns (and exits with) the status."""
    try:
        return guarded_main(PROG, lambda: LaminaOptMain(argv).run())
    except SystemExit as exit_:  # --help / --version
        return exit_.code if isinstance(exit_.code, int) else 0


if __name__ == "__main__":
    sys.exit(main())
