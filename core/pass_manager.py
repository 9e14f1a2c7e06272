"""The phase-aware pass manager (docs/design.md §2, §4; docs/internals.md).

xDSL's `PassPipeline` applies passes one after another and, in `xdsl-opt`,
verifies between them. Lamina's manager adds the phase contract:

* before a pass, it refuses a `LaminaPass` whose `phases` do not include the
  module's phase, naming the transition pass(es) to run first;
* after a transition pass (`produces` set) it records the new `lamina.phase`,
  checks the pass's `illegal_ops` and runs the phase checker
  (`lamina.core.phase_invariants.check_phase`); phases never move backwards;
* after every pass (unless `verify_each=False`) it verifies every op
  (`verify_module`) and runs the phase checker; with `verify_each=False` and
  `verify_boundaries=True` (what a compile does unless `LAMINA_VERIFY_EACH=1`
  or `--verify-each`) it does so only where it matters: after a transition
  pass, after the last pass and after a pass that declares `verify_after`
  (docs/compile-speed.md);
* instrumentation as in MLIR: IR dumps after each pass, a timing report, the
  module as it enters each phase, and a reproducer (the IR before the failing
  pass plus the exact pipeline) when a pass fails.

Pipelines are parsed from `-p` specs (`a,b{opt=1}`) with xDSL's
`parse_pipeline`; unknown names and bad options become diagnostics.
"""

from __future__ import annotations

import difflib
import os
import re
import shlex
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TextIO, TypedDict

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, ModuleOp
from xdsl.passes import ModulePass
from xdsl.printer import Printer
from xdsl.utils.arg_spec import parse_pipeline
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException

from lamina.core.diagnostics import (
    TOO_DEEP,
    Diagnostic,
    DiagnosticError,
    SourceLocation,
    verify_module,
)
from lamina.core.gc_pauses import fewer_gc_pauses
from lamina.core.locations import fill_unknown_locations
from lamina.core.pass_base import PRE_BUILD, LaminaPass, phase_list
from lamina.core.verify_memo import structure
from lamina.dialects.lamina import Phase, get_phase, set_phase
from lamina.runtime.env import env_flag, env_path

PassFactories = Mapping[str, Callable[[], type[ModulePass]]]


PIPELINE_SOURCE = "<pass-pipeline>"


class PipelineSpecError(DiagnosticError):
    """A `-p` spec that names an unknown pass, has bad options, or does not parse.

    Located in the spec text (`<pass-pipeline>:1:COL`) with a caret, as MLIR's
    pass pipeline parser reports.
    """


def _spec_error(spec: str, column: int, message: str) -> PipelineSpecError:
    return PipelineSpecError(
        Diagnostic(
            message,
            location=SourceLocation(PIPELINE_SOURCE, 1, column),
            context=[spec, " " * (column - 1) + "^"],
        )
    )


def _pass_columns(spec: str) -> list[int]:
    """1-based column where each comma-separated pass of `spec` starts."""
    columns, depth, start = [], 0, 0
    for index, char in enumerate(spec + ","):
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
        elif char == "," and depth == 0:
            stripped = len(spec[start:index]) - len(spec[start:index].lstrip())
            columns.append(start + stripped + 1)
            start = index + 1
    return columns


# ---------------------------------------------------------------------------
# Building passes from a `-p` spec
# ---------------------------------------------------------------------------


_ANCHOR = re.compile(r"\s*([\w.]+)\((.*)\)\s*", re.DOTALL)


def _strip_anchor(spec: str) -> tuple[str, int]:
    """MLIR's spelling `builtin.module(a,b)` → (`a,b`, its offset in `spec`).

    Every Lamina pass runs on the whole module, so `builtin.module` is the
    only anchor; nested anchors (`func.func(...)`) are rejected.
    """
    match = _ANCHOR.fullmatch(spec)
    if match is None or "{" in spec[: match.start(2)]:
        return spec, 0
    if match[1] != "builtin.module":
        raise _spec_error(
            spec,
            match.start(1) + 1,
            f"unsupported pass anchor '{match[1]}': Lamina passes run on the whole module, "
            "so the only anchor is 'builtin.module(...)'",
        )
    inner, offset = _strip_anchor(match[2])
    return inner, match.start(2) + offset


def parse_pass_pipeline(spec: str, factories: PassFactories | None = None) -> list[ModulePass]:
    """Instantiate the passes of `spec` (`a,b{opt=1}`, or MLIR's `builtin.module(a,b{opt=1})`).

    Errors raise PipelineSpecError, located in `spec`.
    """
    if factories is None:
        from lamina.core.registry import pass_factories

        factories = pass_factories()
    original = spec
    spec, offset = _strip_anchor(spec)
    try:
        specs = list(parse_pipeline(spec))
    except ArgSpecParseError as err:
        text = str(err)
        where = re.search(r"pass-pipeline:\d+:(\d+)", text)
        reason = text.strip().splitlines()[-1].strip()
        column = int(where[1]) if where else 1
        raise _spec_error(original, column + offset, f"malformed pass pipeline: {reason}") from None
    columns = [column + offset for column in _pass_columns(spec)]
    spec = original
    passes: list[ModulePass] = []
    for index, arg_spec in enumerate(specs):
        column = columns[index] if index < len(columns) else 1
        if arg_spec.name not in factories:
            raise _spec_error(spec, column, unknown_pass_message(arg_spec.name, factories))
        cls = factories[arg_spec.name]()
        try:
            passes.append(cls.from_spec(arg_spec))
        except (ValueError, TypeError) as err:
            message = f"invalid options for pass '{arg_spec.name}': {err}"
            raise _spec_error(spec, column, message) from None
    return passes


def unknown_pass_message(name: str, known: Sequence[str] | PassFactories) -> str:
    """`unknown pass 'x'` plus a did-you-mean and the list of known passes."""
    names = sorted(known)
    message = f"unknown pass '{name}'"
    close = difflib.get_close_matches(name, names, n=1)
    if close:
        message += f" (did you mean '{close[0]}'?)"
    listing = ", ".join(names) if names else "none registered yet"
    return f"{message}; known passes: {listing}"


def pass_spec_string(pass_: ModulePass) -> str:
    """The exact `-p` text for `pass_`, options included (for reproducers)."""
    return str(pass_.spec(include_default=True))


def pipeline_spec_string(passes: Sequence[ModulePass]) -> str:
    return ",".join(pass_spec_string(p) for p in passes)


# ---------------------------------------------------------------------------
# Phase checks
# ---------------------------------------------------------------------------


def module_location(module: ModuleOp) -> SourceLocation | None:
    """Where to report a module-level diagnostic: the module, else its first located op."""
    for op in (module, *module.ops):
        if isinstance(op.location, FileLineColLoc):
            loc = op.location
            return SourceLocation(loc.filename.data, loc.line.data, loc.column.data)
    return None


def module_diagnostic(module: ModuleOp, message: str, notes: Sequence[str] = ()) -> Diagnostic:
    return Diagnostic(message, op=module, location=module_location(module), notes=list(notes))


def transitions_to(phase: Phase) -> list[str]:
    """Flags of registered passes whose `produces` is `phase`.

    A plugin's plain xDSL `ModulePass` has no `produces` (it never changes
    the phase), so every class attribute of the phase contract is read with
    a default here.
    """
    from lamina.core.registry import get_pass_class, pass_names

    found = []
    for name in pass_names():
        try:
            cls = get_pass_class(name)
        except Exception:  # a broken pass file must not hide the refusal message
            continue
        if getattr(cls, "produces", None) == phase:
            found.append(name)
    return found


def _transition_hint(current: Phase, accepted: frozenset[Phase]) -> str:
    """What to run first so that a pass accepting `accepted` can run after `current`."""
    later = sorted(p for p in accepted if p > current)
    if not later:
        return (
            "phases only move forward, so this pass must run before the module "
            f"leaves phase '{max(accepted).label}'"
        )
    steps = []
    for step in range(current + 1, later[0] + 1):
        flags = transitions_to(Phase(step))
        steps.append(
            " or ".join(f"'{f}'" for f in flags)
            if flags
            else f"<a transition pass producing '{Phase(step).label}' (none registered)>"
        )
    return f"run {', then '.join(steps)} first"


def check_pass_phase(pass_: ModulePass, module: ModuleOp) -> None:
    """Refuse `pass_` if the module's phase is not one of its `phases`.

    A plain xDSL `ModulePass` (a plugin's) has no phase contract: it may run
    in every phase before build (build holds only llvm ops, for codegen).
    """
    phases = pass_.phases if isinstance(pass_, LaminaPass) else PRE_BUILD
    current = get_phase(module)
    if current in phases:
        return
    raise DiagnosticError(
        module_diagnostic(
            module,
            f"pass '{pass_.name}' cannot run in phase '{current.label}' "
            f"(it runs in: {phase_list(phases)}); "
            f"{_transition_hint(current, phases)}",
        )
    )


def run_phase_checker(module: ModuleOp) -> None:
    """The well-formed checker for the module's phase (docs/design.md §5); every violation reported."""
    from lamina.core.phase_invariants import check_phase

    diagnostics = check_phase(module)
    if diagnostics:
        raise DiagnosticError(diagnostics)


# ---------------------------------------------------------------------------
# The manager
# ---------------------------------------------------------------------------


REPRODUCER_ENV = "LAMINA_REPRODUCER"
"""Environment variable: write a reproducer to this file (or a fresh file in this directory)."""

REPRODUCER_HINT = (
    "to save a reproducer (the IR before this pass and the command that fails), "
    f"rerun lamina-opt with --reproducer FILE, or set {REPRODUCER_ENV}=FILE"
)


@dataclass
class PassTiming:
    name: str
    seconds: float


class PassObserver(Protocol):
    """What a pass manager tells whoever observes a compile (driver/instruments.py)."""

    def phase_entered(self, phase: str) -> None: ...

    def pass_started(self, index: int, count: int, name: str) -> None: ...


class PassManager:
    """Runs `passes` over a module, enforcing phases and verifying between passes.

    Pass times are always recorded (`timings`, `pass_times`); with `timing`
    the MLIR-style report (`timing_report()`) is also written to
    `timing_stream` (default stderr) at the end of `run`. `dump_suffix` is
    appended to phase-dump file names (one per split chunk). A
    `reproducer_path` that is a directory gets a fresh file inside it.
    """

    def __init__(
        self,
        passes: Sequence[ModulePass],
        *,
        verify_each: bool = True,
        verify_boundaries: bool = False,
        print_ir_after_all: TextIO | None = None,
        print_ir_after_failure: TextIO | None = None,
        timing: bool = False,
        dump_phases_to: str | os.PathLike[str] | None = None,
        reproducer_path: Path | str | None = None,
        timing_stream: TextIO | None = None,
        dump_suffix: str = "",
        progress: TextIO | None = None,
        reproducer_flags: Sequence[str] = (),
        observer: PassObserver | None = None,
    ):
        self.passes = list(passes)
        self.verify_each = verify_each
        self.verify_boundaries = verify_boundaries
        """Without `verify_each`: verify at phase boundaries, after the last pass and after
        passes declaring `verify_after` (a compile's default); off, only transitions run
        the phase checker (`lamina-opt --disable-verify`)."""
        self.print_ir_after_all = print_ir_after_all
        self.print_ir_after_failure = print_ir_after_failure
        self.timing = timing
        self.dump_phases_to = Path(dump_phases_to) if dump_phases_to is not None else None
        if reproducer_path is None:  # only on request: a flag, or the environment for scripts
            reproducer_path = env_path(REPRODUCER_ENV)
        self.reproducer_path = Path(reproducer_path) if reproducer_path is not None else None
        self.reproducer_flags = list(reproducer_flags)
        """lamina-opt flags the failure depends on (--allow-unregistered-dialect, ...)."""
        self.timing_stream = timing_stream
        self.dump_suffix = dump_suffix
        self.progress = progress
        """Where to report each phase entered, with the elapsed time (`-v`)."""
        self.observer = observer
        """Told of each phase entered and each pass started (driver/instruments.py:
        statistics rows, the progress line, `-v`), on the compile's own clock."""
        self.timings: list[PassTiming] = []
        self.total_seconds = 0.0
        self.verify_seconds = 0.0
        """Time spent verifying and phase-checking between passes."""

    @property
    def pipeline_spec(self) -> str:
        return pipeline_spec_string(self.passes)

    @property
    def pass_times(self) -> dict[str, float]:
        """Seconds spent in each pass (summed if a pass runs more than once)."""
        times: dict[str, float] = {}
        for timing in self.timings:
            times[timing.name] = times.get(timing.name, 0.0) + timing.seconds
        return times

    def timing_report(self) -> str:
        verifier = [PassTiming("(verifier)", self.verify_seconds)] if self.verify_seconds else []
        return format_timing_report([*self.timings, *verifier], self.total_seconds)

    def run(self, ctx: Context, module: ModuleOp) -> None:
        """Apply every pass in order; a failure raises DiagnosticError (with a reproducer note)."""
        self.timings = []
        self.verify_seconds = 0.0
        self._verified_structure: list[tuple] | None = None
        start = self._started = time.perf_counter()
        try:
            self._report_progress(module)
            self._dump_phase(module)
            with fewer_gc_pauses():
                for index, pass_ in enumerate(self.passes):
                    self._run_one(ctx, module, index, pass_)
        finally:
            self.total_seconds = time.perf_counter() - start
            if self.timing:
                (self.timing_stream or sys.stderr).write(self.timing_report())

    def _run_one(self, ctx: Context, module: ModuleOp, index: int, pass_: ModulePass) -> None:
        check_pass_phase(pass_, module)
        before_phase = get_phase(module)
        snapshot = module.clone() if self.reproducer_path is not None else None
        if self.observer is not None:
            self.observer.pass_started(index, len(self.passes), pass_.name)
        try:
            started = time.perf_counter()
            try:
                pass_.apply(ctx, module)  # its walkers locate what they insert
                fill_unknown_locations(module)
            finally:
                self.timings.append(PassTiming(pass_.name, time.perf_counter() - started))
            self._after_pass(module, pass_, before_phase, last=index == len(self.passes) - 1)
        except RecursionError:
            raise DiagnosticError(
                module_diagnostic(module, TOO_DEEP, [f"while running pass '{pass_.name}'"])
            ) from None
        except DiagnosticException as err:
            diagnostics = as_diagnostics(err, module)
            diagnostics[0].notes.append(f"while running pass '{pass_.name}'")
            if snapshot is not None:
                path = self._write_reproducer(snapshot, index)
                diagnostics[0].notes.append(f"reproducer written to {path}")
            else:
                diagnostics[0].notes.append(REPRODUCER_HINT)
            _dump_ir(self.print_ir_after_failure, f"{pass_.name} Failed", module)
            raise DiagnosticError(diagnostics) from None
        _dump_ir(self.print_ir_after_all, pass_.name, module)

    def _after_pass(
        self, module: ModuleOp, pass_: ModulePass, before: Phase, *, last: bool = False
    ) -> None:
        """Record a transition, then check legality, the IR and the phase invariants."""
        produces = getattr(pass_, "produces", None)
        after = get_phase(module)
        if produces is None and after != before:
            raise DiagnosticError(
                module_diagnostic(
                    module,
                    f"pass '{pass_.name}' changed the module phase from '{before.label}' to "
                    f"'{after.label}', but only a transition pass may change it",
                )
            )
        if produces is not None:
            if produces < before:
                raise DiagnosticError(
                    module_diagnostic(
                        module,
                        f"pass '{pass_.name}' would move the module back from phase "
                        f"'{before.label}' to '{produces.label}'; phases only move forward",
                    )
                )
            set_phase(module, produces)
            if isinstance(pass_, LaminaPass):  # only a Lamina pass transitions (`produces`)
                pass_.check_legality(module)
        started = time.perf_counter()
        try:
            self._verify(module, produces is not None, last, _verify_after(pass_))
        finally:
            self.verify_seconds += time.perf_counter() - started
        if produces is not None and produces != before:
            self._report_progress(module)
            self._dump_phase(module)

    def _verify(self, module: ModuleOp, transition: bool, last: bool, asked: bool) -> None:
        """Verify every op and check the phase invariants, unless the module is exactly
        the IR that passed both after an earlier pass (`verify_memo.structure`; not
        computed after the last pass, where no later pass could skip by it).

        Without `verify_each`, only at a boundary (`transition`, `last`, or a pass
        that `asked`): a pass inside a phase is then trusted until the next boundary,
        whose verifier still reports any op left malformed, where it is."""
        if not self.verify_each:
            if self.verify_boundaries and (transition or last or asked):
                verify_module(module)
                run_phase_checker(module)
            elif transition:
                run_phase_checker(module)
            return
        if last:
            verify_module(module)
            run_phase_checker(module)
            return
        current = structure(module)
        if current == self._verified_structure:
            return
        self._verified_structure = None
        verify_module(module)
        run_phase_checker(module)
        self._verified_structure = current

    def _report_progress(self, module: ModuleOp) -> None:
        if self.observer is not None:
            self.observer.phase_entered(get_phase(module).label)
        if self.progress is not None:
            elapsed = time.perf_counter() - self._started
            self.progress.write(
                f"lamina: [{elapsed:7.2f} s] entering phase {get_phase(module).label}\n"
            )
            self.progress.flush()

    def _dump_phase(self, module: ModuleOp) -> None:
        if self.dump_phases_to is None:
            return
        phase = get_phase(module)
        path = self.dump_phases_to / f"{int(phase)}_{phase.label}{self.dump_suffix}.mlir"
        try:
            self.dump_phases_to.mkdir(parents=True, exist_ok=True)
            with path.open("w") as out:
                Printer(stream=out).print_op(module)
                out.write("\n")
        except OSError as err:
            raise DiagnosticError(f"cannot write the phase dump '{path}': {err.strerror}") from None

    def _write_reproducer(self, snapshot: ModuleOp, index: int) -> Path:
        """IR before the failing pass, headed by the pipeline that reproduces the failure
        and the flags it needs: the plugins loaded in this process, then the caller's."""
        assert self.reproducer_path is not None
        # Driver steps that are not registered passes (kernel reuse) cannot be replayed.
        replayable = [p for p in self.passes[index:] if getattr(p, "replayable", True)]
        remaining = pipeline_spec_string(replayable)
        path = self.reproducer_path
        if path.is_dir():
            fd, name = tempfile.mkstemp(prefix="lamina-reproducer-", suffix=".mlir", dir=path)
            os.close(fd)
            path = Path(name)
        from lamina.core.plugins import load_plugin_flags

        plugins = [f for f in load_plugin_flags() if f not in self.reproducer_flags]
        flags = "".join(f"{shlex.quote(flag)} " for flag in [*plugins, *self.reproducer_flags])
        with path.open("w") as out:
            out.write(f"// configuration: {flags}-p '{remaining}'\n")
            out.write(
                f"// note: reproduce with: lamina-opt {shlex.quote(str(path))} "
                f"{flags}-p '{remaining}'\n"
            )
            Printer(stream=out, print_debuginfo=True).print_op(snapshot)
            out.write("\n")
        return path


VERIFY_EACH_ENV = "LAMINA_VERIFY_EACH"
"""Environment variable: `1` verifies after every pass of a compile (`--verify-each`)."""


def verify_each_requested() -> bool:
    """Whether a compile verifies after every pass (`LAMINA_VERIFY_EACH=1`, set by
    `--verify-each` and by the test suite) instead of at phase boundaries only."""
    return env_flag(VERIFY_EACH_ENV, False)


class VerifyPolicy(TypedDict):
    """`PassManager`'s verification arguments."""

    verify_each: bool
    verify_boundaries: bool


def compile_verify_policy() -> VerifyPolicy:
    """A compile's `PassManager` verification arguments: at phase boundaries (the module
    entering each phase, the result, passes declaring `verify_after`), or after every pass
    with `LAMINA_VERIFY_EACH=1` (`--verify-each`; the test suite sets it). The verifier after
    every pass was 10-25 % of a cold compile of a network (docs/compile-speed.md)."""
    return {"verify_each": verify_each_requested(), "verify_boundaries": True}


def _verify_after(pass_: ModulePass) -> bool:
    """A pass's `verify_after` (core/pass_base.py): verify after it even at boundaries only."""
    return bool(getattr(pass_, "verify_after", False))


def _dump_ir(stream: TextIO | None, label: str, module: ModuleOp) -> None:
    """MLIR's `// -----// IR Dump After <label> //----- //` followed by the module."""
    if stream is None:
        return
    stream.write(f"// -----// IR Dump After {label} //----- //\n")
    Printer(stream=stream).print_op(module)
    stream.write("\n\n")


def format_timing_report(timings: Sequence[PassTiming], total: float) -> str:
    """An MLIR-style `Execution time report` (wall time per pass)."""
    rule = "===" + "-" * 73 + "==="
    lines = [
        rule,
        "Execution time report".center(len(rule)).rstrip(),
        rule,
        f"  Total Execution Time: {total:.4f} seconds",
        "",
        "  ----Wall Time----  ----Name----",
    ]
    denominator = total if total > 0 else 1.0
    for timing in timings:
        share = 100.0 * timing.seconds / denominator
        lines.append(f"  {timing.seconds:8.4f} ({share:5.1f}%)  {timing.name}")
    lines.append(f"  {total:8.4f} (100.0%)  Total")
    return "\n".join(lines) + "\n\n"


def as_diagnostics(err: DiagnosticException, module: ModuleOp) -> list[Diagnostic]:
    """Diagnostics for any xDSL diagnostic exception; unlocated ones point at the module."""
    if isinstance(err, DiagnosticError):
        diagnostics = err.diagnostics
    else:
        diagnostics = [Diagnostic(str(err), op=None)]
    located = []
    for diagnostic in diagnostics:
        if diagnostic.resolved_location() is None:
            diagnostic.location = module_location(module)
        located.append(diagnostic)
    return located or [module_diagnostic(module, "pass failed")]


__all__ = [
    "VERIFY_EACH_ENV",
    "VerifyPolicy",
    "PassManager",
    "PipelineSpecError",
    "as_diagnostics",
    "check_pass_phase",
    "compile_verify_policy",
    "module_location",
    "parse_pass_pipeline",
    "pipeline_spec_string",
    "run_phase_checker",
    "transitions_to",
    "verify_each_requested",
]
