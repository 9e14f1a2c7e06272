"""The instruments every way of compiling shares: timing, IR dumps, phase dumps, progress.

MLIR gives every tool the same `-mlir-timing` and `-mlir-print-ir-after-all`;
Lamina's `lamina-opt`, `lamina-run`, `lamina-compile` and `lamina.compile(...)`
likewise share one `Instruments` object (built from the flags in
`lamina.tools.cli.add_instrument_arguments`). It configures the pass manager
and, because most of a compile can be LLVM (O3 and machine-code generation,
outside any pass), adds code generation's steps as rows of the same timing
report, so the report explains the whole compile time.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from xdsl.passes import ModulePass

    from lamina.backends.codegen import CompileTimings
    from lamina.core.pass_manager import PassManager

CODEGEN_ROWS = (
    ("translate", "llvm: translate (llvm dialect -> LLVM IR)"),
    ("parse_verify", "llvm: parse + verify"),
    ("optimize", "llvm: optimize (O3)"),
    ("jit", "llvm: code generation"),
)
"""`CompileTimings` field → its row in the timing report."""


@dataclass
class Instruments:
    """What to observe while compiling; passed to `lower_to_build` and `compile`."""

    pass_timing: bool = False
    """Print an execution-time report (passes, verifier, LLVM steps) at the end."""
    print_ir_after_all: bool = False
    dump_phases_to: str | os.PathLike[str] | None = None
    verbose: bool = False
    """Report progress (each phase entered, code generation) with elapsed time."""
    stream: TextIO | None = None
    """Where reports go (default: stderr)."""
    manager: PassManager | None = field(default=None, repr=False)
    _started: float = field(default_factory=time.perf_counter, repr=False)

    @property
    def out(self) -> TextIO:
        return self.stream or sys.stderr

    def pass_manager(self, passes: Sequence[ModulePass], **kwargs) -> PassManager:
        """A PassManager wired to these instruments (its report is printed by `finish`)."""
        from lamina.core.pass_manager import PassManager

        self.manager = PassManager(
            passes,
            print_ir_after_all=self.out if self.print_ir_after_all else None,
            dump_phases_to=self.dump_phases_to,
            progress=self.out if self.verbose else None,
            **kwargs,
        )
        return self.manager

    def progress(self, message: str) -> None:
        if self.verbose:
            elapsed = time.perf_counter() - self._started
            self.out.write(f"lamina: [{elapsed:7.2f} s] {message}\n")
            self.out.flush()

    def finish(self, codegen: CompileTimings | None = None, cached: bool = False) -> None:
        """Print the timing report (passes, then LLVM's steps), if asked for."""
        self.progress("done")
        if not self.pass_timing:
            return
        self.out.write(self.timing_report(codegen, cached))

    def timing_report(self, codegen: CompileTimings | None = None, cached: bool = False) -> str:
        """Every step from the start (parsing) to now, so the rows add up to the compile time."""
        from lamina.core.pass_manager import PassTiming, format_timing_report

        rows: list[PassTiming] = []
        if self.manager is not None:
            setup = getattr(self.manager, "_started", self._started) - self._started
            rows.append(PassTiming("(parse, verify input, build pipeline)", setup))
            rows += self.manager.timings
            if self.manager.verify_seconds:
                rows.append(PassTiming("(verifier)", self.manager.verify_seconds))
        if codegen is not None and cached:
            rows.append(PassTiming("llvm: (in-process cache hit, nothing compiled)", 0.0))
        elif codegen is not None:
            rows += [PassTiming(label, getattr(codegen, key)) for key, label in CODEGEN_ROWS]
        return format_timing_report(rows, time.perf_counter() - self._started)
