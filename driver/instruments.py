"""The instruments every way of compiling shares: timing, IR dumps, phase dumps, progress.

MLIR gives every tool the same `-mlir-timing` and `-mlir-print-ir-after-all`;
Lamina's `lamina-opt`, `lamina-run`, `lamina-compile` and `lamina.compile(...)`
likewise share one `Instruments` object (built from the flags in
`lamina.tools.cli.add_instrument_arguments`). It configures the pass manager
and observes it (each phase entered, each pass started).

One clock, one set of rows: the compile's `StatsRecorder` (driver/stats.py)
times parsing, each phase, code generation with LLVM's steps, and `(other)`;
the timing report (`--pass-timing`) prints those rows with each phase's
passes and verifier beneath it, `--stats` prints them with memory, `-v`
stamps its lines on the same clock, and all of them end at the same total.

The progress line: while a compile runs, one line on a terminal's stderr
says the phase, the pass or the kernels built of the total and how many
came from the caches, and the time left while kernels build; rewritten in
place (`\\r`), erased when the compile ends, never shown under `-v` (whose
lines say the same) nor when stderr is not a terminal, unless asked for.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TextIO

from lamina.driver.stats import CODEGEN_ROWS, StatsRecorder, build_summary

if TYPE_CHECKING:
    from xdsl.passes import ModulePass

    from lamina.backends.codegen import CompileTimings
    from lamina.core.pass_manager import PassManager, PassTiming

__all__ = ["CODEGEN_ROWS", "Instruments", "ProgressLine", "progress_wanted"]


def progress_wanted(progress: bool | None, verbose: bool, stream: TextIO) -> bool:
    """Show the progress line? Asked for (True/False), else when `stream` is a
    terminal; never with `-v`, whose lines would interleave with it."""
    if verbose:
        return False
    if progress is not None:
        return progress
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class ProgressLine:
    """One status line rewritten in place (`\\r`, then erase to the end of the line)."""

    INTERVAL = 0.1
    """Seconds between redraws: a compile of 5000 passes does not print 5000 lines' worth."""

    def __init__(self, stream: TextIO):
        self.stream = stream
        self._last = 0.0
        self._shown = False

    def show(self, text: str, *, force: bool = False) -> None:
        now = time.perf_counter()
        if not force and now - self._last < self.INTERVAL:
            return
        self._last = now
        self.stream.write(f"\r{text}\x1b[K")
        self.stream.flush()
        self._shown = True

    def clear(self) -> None:
        """Erase the line, so what follows (a report, a diagnostic) starts clean."""
        if self._shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._shown = False


@dataclass
class Instruments:
    """What to observe while compiling; passed to `lower_to_build` and `compile`."""

    pass_timing: bool = False
    """Print an execution-time report (phases and their passes, LLVM steps) at the end."""
    print_ir_after_all: bool = False
    dump_phases_to: str | os.PathLike[str] | None = None
    verbose: bool = False
    """Report each phase entered, code generation, with the compile's elapsed time."""
    stream: TextIO | None = None
    """Where reports go (default: stderr)."""
    show_progress: bool | None = False
    """The progress line: True/False, or None for 'when the stream is a terminal'."""
    recorder: StatsRecorder = field(default_factory=lambda: StatsRecorder(False))
    """The compile's clock and rows (shared with `--stats`)."""
    manager: PassManager | None = field(default=None, repr=False)
    _marks: list[tuple[str, int, float]] = field(default_factory=list, repr=False)
    _phase: str = field(default="parse", repr=False)
    _line: ProgressLine | None = field(default=None, repr=False)
    _reported: bool = field(default=False, repr=False)

    def __post_init__(self) -> None:
        # Not over IR dumps either: they would scroll the line away mid-dump.
        if progress_wanted(self.show_progress, self.verbose, self.out) and not (
            self.print_ir_after_all
        ):
            self._line = ProgressLine(self.out)
            self.recorder.on_enter = lambda row: self._show(row, force=True)

    @property
    def out(self) -> TextIO:
        return self.stream or sys.stderr

    def pass_manager(self, passes: Sequence[ModulePass], **kwargs) -> PassManager:
        """A PassManager wired to these instruments (its report is printed by `finish`)."""
        from lamina.core.pass_manager import PassManager

        self._marks = []
        self.manager = PassManager(
            passes,
            print_ir_after_all=self.out if self.print_ir_after_all else None,
            dump_phases_to=self.dump_phases_to,
            observer=self,
            **kwargs,
        )
        return self.manager

    # -- what the pass manager tells (core/pass_manager.py's PassObserver) -------------

    def phase_entered(self, phase: str) -> None:
        """A row per phase that runs passes; the phase reached after the last pass
        (`build`) ends the rows, its time belongs to what follows."""
        manager = self.manager
        if manager is not None:
            self._marks.append((phase, len(manager.timings), manager.verify_seconds))
        if manager is None or len(manager.timings) < len(manager.passes):
            self.recorder.enter(phase)
        else:
            self.recorder.leave()
        self._phase = phase
        self.progress(f"entering phase {phase}")

    def pass_started(self, index: int, count: int, name: str) -> None:
        self._show(f"{self._phase} | pass {index + 1}/{count} {name}")

    # -- code generation ----------------------------------------------------------

    @contextmanager
    def watching_build(self) -> Iterator[None]:
        """While code is generated, the progress line counts kernels built (backends/
        parallel_build.py reports each unit done and the kernels the caches had)."""
        if self._line is None:
            yield
            return
        from lamina.backends import parallel_build

        start = time.perf_counter()
        cached = [0, 0]

        def listener(event: str, done: int, total: int) -> None:
            if event == "cached":
                cached[:] = [done, total]
                text = f"codegen | {done} of {total} kernels from the cache, building the rest"
                self._show(text, force=True)
                return
            spent = time.perf_counter() - start
            eta = spent / done * (total - done) if done else 0.0
            hits = f", {cached[0]} from the cache" if cached[0] else ""
            self._show(
                f"codegen | built {done}/{total} units{hits} | ETA {eta:.0f} s",
                force=done == total,
            )

        self._show("codegen | LLVM", force=True)
        with parallel_build.reporting(listener):
            yield

    def _show(self, text: str, *, force: bool = False) -> None:
        if self._line is not None:
            self._line.show(f"lamina: {text} | {self.recorder.elapsed():.1f} s", force=force)

    # -- reports ------------------------------------------------------------------

    def progress(self, message: str, at: float | None = None) -> None:
        """A `-v` line, stamped with the compile's clock (the progress line shows
        the rows as they start instead)."""
        if self.verbose:
            elapsed = self.recorder.elapsed() if at is None else at
            self.out.write(f"lamina: [{elapsed:7.2f} s] {message}\n")
            self.out.flush()

    def finish(self, codegen: CompileTimings | None = None, cached: bool = False) -> None:
        """Stop the clock; print the timing report, if asked for. `codegen`: LLVM's
        steps, unless the recorder has them already (driver/lowering.py records them)."""
        if self._reported:
            return
        self._reported = True
        recorder = self.recorder
        if codegen is not None and not cached and not _has_codegen_rows(recorder):
            recorder.codegen_steps(codegen)
        if cached:
            recorder.step("llvm: (in-process cache hit, nothing compiled)", 0.0)
        total = recorder.close()
        self.close_line()
        self.progress("done", at=total)
        if self.pass_timing:
            self.out.write(self.timing_report())

    def close_line(self) -> None:
        """Erase the progress line (before a report, a diagnostic, or the program's output)."""
        if self._line is not None:
            self._line.clear()

    def timing_report(self) -> str:
        """The recorder's rows (each phase with its passes and verifier nested beneath
        it), in MLIR's format; they add up to the total every other report shows."""
        from lamina.core.pass_manager import format_timing_report

        rows: list[PassTiming] = []
        nested = self._phase_passes()
        for row in self.recorder.rows:
            rows.append(_timing("  " * row.depth + row.name, row.seconds))
            rows += nested.get(row.name, []) if row.depth == 0 else []
        report = format_timing_report(rows, self.recorder.elapsed())
        summary = build_summary(
            self.recorder.kernels, self.recorder.build_wall, self.recorder.build_cpu
        )
        return report + ("\n".join(summary) + "\n\n" if summary else "")

    def _phase_passes(self) -> dict[str, list[PassTiming]]:
        """Phase → its passes and its verifier time, from the marks the manager left."""
        manager = self.manager
        if manager is None:
            return {}
        bounds = [*self._marks, ("", len(manager.timings), manager.verify_seconds)]
        nested: dict[str, list[PassTiming]] = {}
        for (phase, start, verified), (_, end, verified_end) in zip(
            bounds, bounds[1:], strict=False
        ):
            rows = [_timing(f"  {t.name}", t.seconds) for t in manager.timings[start:end]]
            if verified_end > verified:
                rows.append(_timing("  (verifier)", verified_end - verified))
            if rows:
                nested[phase] = rows
        return nested


def _timing(name: str, seconds: float) -> PassTiming:
    from lamina.core.pass_manager import PassTiming

    return PassTiming(name, seconds)


def _has_codegen_rows(recorder: StatsRecorder) -> bool:
    labels = {label for _, label in CODEGEN_ROWS}
    return any(row.name in labels for row in recorder.rows)


def watching_build(instruments: Instruments | None) -> AbstractContextManager[None]:
    """`instruments.watching_build()`, or nothing without instruments."""
    return instruments.watching_build() if instruments is not None else nullcontext()
