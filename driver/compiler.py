"""`lamina.compile`: one `CompileRequest`, answered from the disk cache or compiled cold.

`compile()` (docs/design.md §7) turns its arguments into a frozen
`CompileRequest` (the program's text or module, the targets, the pipeline,
the code options, the cache and instrument settings) and hands that one
object on. `compile_request` looks the request's key up in the disk cache
(runtime/cached.py) and, on a miss, has driver/lowering.py parse it, run
the pipeline phase by phase and generate code, then stores the result.

This module imports neither xDSL nor the code generator: a cache hit loads
the object code without them (about 0.3 s of imports saved). The cold path
is imported on the first miss.
"""

from __future__ import annotations

import functools
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lamina.core.gc_pauses import fewer_gc_pauses
from lamina.driver.cache_key import key
from lamina.driver.instruments import Instruments, progress_wanted
from lamina.driver.stats import StatsRecorder
from lamina.runtime import cache as disk
from lamina.runtime import cached
from lamina.runtime.env import env_flag
from lamina.runtime.executable import Executable

if TYPE_CHECKING:  # the module type only: a cache hit never imports xDSL
    from xdsl.dialects.builtin import ModuleOp


@dataclass(frozen=True)
class DeferredSource:
    """A program that is costly to produce, such as an ONNX model to import:
    `key` identifies it in the cache key (e.g. the digest of the model file
    and the import options), `build()` produces the module on a cache miss
    only, so a hit skips the import as it skips the passes."""

    key: str
    build: Callable[[], ModuleOp]


def _is_module(value: object) -> bool:
    """Is `value` an xDSL module? Checked without importing xDSL: whoever built a module has."""
    builtin = sys.modules.get("xdsl.dialects.builtin")
    return builtin is not None and isinstance(value, builtin.ModuleOp)


@dataclass(frozen=True)
class CompileRequest:
    """Everything a compile depends on, in one value (the parameters of `compile`).

    `source` is the program (a module, or its text: a path was read when the
    request was made, so the cache key is the text). The code options
    (`targets`, `pipeline`, `check_bounds`) shape the generated code and are
    in the cache key (`cache_key`); the rest only decides whether the cache
    is used and what is observed.
    """

    source: ModuleOp | str | DeferredSource
    filename: str = "<input>"
    targets: tuple[str, ...] | None = None
    """None: the module's own `lamina.targets` (default: cpu)."""
    pipeline: str = "default"
    check_bounds: bool = False
    profile: bool = False
    """Time each kernel call (`profile-kernels`; `Executable.profile` reads the times)."""
    records: str | None = None
    """A tuning-records file (docs/tuning.md): each kernel with a record for this CPU
    is scheduled with the record's knobs."""
    records_ignore_errors: bool = False
    cache: bool | None = None
    """None: on unless `LAMINA_CACHE=0`. Off anyway while an instrument is on."""
    stats: bool = False
    pass_timing: bool = False
    print_ir_after_all: bool = False
    dump_phases_to: str | os.PathLike[str] | None = None
    verbose: bool = False
    progress: bool | None = None
    """The progress line on stderr (None: when stderr is a terminal; never with
    `verbose`). Not an instrument: it neither turns the cache off nor changes code."""

    @staticmethod
    def of(
        source: ModuleOp | str | os.PathLike[str] | DeferredSource,
        targets: Sequence[str] | None = None,
        filename: str = "<input>",
        **settings: Any,
    ) -> CompileRequest:
        """The request for `source` (a path is read now: a missing file is an OSError;
        a source or target of the wrong type a TypeError, as Python's own calls raise)."""
        program: ModuleOp | str | DeferredSource
        if not isinstance(source, str | os.PathLike | DeferredSource) and not _is_module(source):
            raise TypeError(
                "lamina.compile: expected a module, IR text, a path (.mlir or .onnx) or an "
                f"ONNX model, got {type(source).__name__}"
            )
        if isinstance(targets, str) or (
            targets is not None and not all(isinstance(t, str) for t in targets)
        ):
            raise TypeError(
                "lamina.compile: targets must be a list of target strings such as "
                f"['cpu{{isa=avx2}}'], got {targets!r}"
            )
        if isinstance(source, os.PathLike) or (isinstance(source, str) and is_path(source)):
            filename = os.fspath(source)
            with open(filename, encoding="utf-8") as f:
                program = f.read()
        else:
            program = source
        listed = tuple(targets) if targets is not None else None
        return CompileRequest(program, filename, listed, **settings)

    @property
    def observed(self) -> bool:
        """Is an instrument on? Then the compile runs (and is observed), never a cache hit."""
        return (
            self.pass_timing
            or self.print_ir_after_all
            or self.dump_phases_to is not None
            or self.verbose
        )

    @property
    def uses_cache(self) -> bool:
        return (disk.enabled() if self.cache is None else self.cache) and not self.observed

    def instruments(self, recorder: StatsRecorder | None = None) -> Instruments | None:
        """A fresh `Instruments` for the instruments that are on, on `recorder`'s clock
        (None if none is and there is no progress line to show)."""
        if not self.observed and not progress_wanted(self.progress, self.verbose, sys.stderr):
            return None
        return Instruments(
            self.pass_timing,
            self.print_ir_after_all,
            self.dump_phases_to,
            self.verbose,
            show_progress=self.progress,
            recorder=recorder or StatsRecorder(False),
        )

    def record_set(self):
        """The records of `records` (read once per change of the file)."""
        from lamina.target.tuning_records import load_records

        assert self.records is not None
        return load_records(self.records, ignore_errors=self.records_ignore_errors)

    def cache_key(self) -> str:
        """The disk-cache key. Unknown targets or pipelines get a key too: they fail to
        compile, so nothing is ever stored under it.

        Every option that changes the generated code (such as `check_bounds`)
        must be in `options` below, or a compile with it would load code
        compiled without it.
        """
        source = self.source
        if isinstance(source, DeferredSource):
            source = f"deferred source {source.key}"
        elif not isinstance(source, str):  # large constants by digest: megabytes of weights
            from lamina.core.dense_text import print_module

            source = print_module(source, digest=True)
        options: dict[str, object] = {"check_bounds": self.check_bounds}
        if self.profile:  # absent when off: existing cache entries keep their keys
            options["profile"] = True
        if isinstance(source, str):  # constants in side files: the text only names them
            from lamina.core.resources import side_file_digests

            if blobs := side_file_digests(source, self.filename):
                options["side_files"] = blobs
        if self.records is not None:  # the knobs that apply here, not the file's timings
            options["records"] = self.record_set().digest()
        return key(
            source,
            filename=self.filename,
            pipeline=self.pipeline,
            targets=list(self.targets or ()),
            options=options,
        )


def is_path(source: object) -> bool:
    """Does `source` name a file? (`os.PathLike`, or a one-line string naming an existing
    file or ending in `.mlir`; any other string is the program's text.)"""
    if isinstance(source, os.PathLike):
        return True
    return (
        isinstance(source, str)
        and "\n" not in source
        and (source.endswith(".mlir") or os.path.isfile(source))
    )


def compile(  # noqa: A001 - the API name is docs/design.md §7's
    module_or_text: ModuleOp | str | os.PathLike[str],
    targets: Sequence[str] | None = None,
    *,
    pipeline: str = "default",
    filename: str = "<input>",
    cache: bool | None = None,
    stats: bool = False,
    pass_timing: bool = False,
    print_ir_after_all: bool = False,
    dump_phases_to: str | os.PathLike[str] | None = None,
    verbose: bool = False,
    check_bounds: bool = False,
    profile: bool = False,
    progress: bool | None = None,
    records: str | os.PathLike[str] | None = None,
    records_ignore_errors: bool = False,
) -> Executable:
    """Compile a graph program (module, text or path of a `.mlir` file; any phase) to native code.

    `cache`: use the disk cache of compiled code (runtime/cache.py;
    default: on unless `LAMINA_CACHE=0`; off while an instrument below is
    on, since they observe the compile). `stats`: record time and memory
    per phase in `Executable.stats`. The instruments are the tools' flags
    (docs/instruments.md): `pass_timing` prints a timing report (passes, then
    LLVM's steps) to stderr, `print_ir_after_all` the IR after every pass,
    `dump_phases_to` writes the module as it enters each phase, `verbose`
    reports progress by phase. `progress`: one status line on stderr while
    compiling (phase, kernels built, ETA; default: when stderr is a terminal
    and not `verbose`). `check_bounds`: generated code checks every buffer
    access (docs/runtime-errors.md). `profile`: generated code times each kernel
    call, which `Executable.profile` reports (docs/performance.md). `Executable.timings["total"]` is the
    compile's wall time, the total every report shows.

    Raises `DiagnosticError` (with located diagnostics) for bad IR or a failed
    pass; `Executable.run` raises `LaminaRuntimeError` for bad arguments and
    for failures the code reports (out of memory; with `check_bounds`, an
    out-of-bounds access, named by kernel, buffer and index). `records`: a
    tuning-records file written by `lamina-tune` (docs/tuning.md); kernels
    with a record for this CPU and Lamina version get its knobs (a malformed
    file is a `RecordsError` naming the line, unless `records_ignore_errors`).
    """
    try:
        request = CompileRequest.of(
            module_or_text,
            targets,
            filename,
            pipeline=pipeline,
            check_bounds=check_bounds,
            profile=profile,
            records=None if records is None else os.fspath(records),
            records_ignore_errors=records_ignore_errors,
            cache=cache,
            stats=stats,
            pass_timing=pass_timing,
            print_ir_after_all=print_ir_after_all,
            dump_phases_to=dump_phases_to,
            verbose=verbose,
            progress=progress,
        )
        return compile_request(request)
    except RecursionError:  # deeply nested input that no stage caught itself
        from lamina.core.diagnostics import TOO_DEEP, Diagnostic, DiagnosticError, SourceLocation

        raise DiagnosticError(
            Diagnostic(TOO_DEEP, location=SourceLocation(filename, 1, 1))
        ) from None


def compile_request(request: CompileRequest) -> Executable:
    """Cache lookup, else a cold compile (then stored)."""
    disk.flush()  # an earlier compile's entry still being written: no thread alive now
    recorder = StatsRecorder(request.stats)
    key = None
    if request.uses_cache:
        start = time.perf_counter()
        with recorder.phase("cache lookup"), fewer_gc_pauses():  # a hit imports llvmlite
            key = request.cache_key()
            hit = cached.load(key)
        if hit is not None:
            hit.timings["cache"] = time.perf_counter() - start  # key, read, load: all of it
            hit.stats = recorder.finish(cache_hit=True)
            hit.saver = functools.partial(_save, request)
            hit.timings["total"] = recorder.elapsed()
            return hit
    instruments = request.instruments(recorder)
    try:
        # The first miss imports xDSL and codegen: hundreds of classes, whose creation
        # set off ~180 young collections (0.1 s of CPU) at CPython's thresholds.
        with recorder.phase("import compiler"), fewer_gc_pauses():
            prestart_compile_worker()
            from lamina.driver import lowering

        # The same class, seen by pyright as `driver.compiler` and `lamina.driver.compiler`
        # (the repository root is the package, see pyproject.toml).
        exe = lowering.compile_cold(request, recorder, instruments)  # pyright: ignore[reportArgumentType]
        if key is not None:
            with recorder.phase("cache write"):
                cached.store(key, exe, openmp=lowering.executable_uses_openmp(exe))
            exe.cache_hit = False
    finally:
        if instruments is not None:  # a failed compile's diagnostic starts on a clean line
            instruments.close_line()
    exe.stats = recorder.finish(cache_hit=None if key is None else False)
    exe.saver = functools.partial(_save, request)
    exe.timings["total"] = recorder.elapsed()
    return exe


SPLIT_ENV = "LAMINA_SPLIT_KERNELS"
"""backends/codegen.py's `SPLIT_ENV`, read here without importing the code generator."""


def prestart_compile_worker() -> None:
    """Start the compile worker (backends/compile_worker.py) as a miss begins, if its
    units will be built there (split into units, the worker on): a new interpreter
    importing llvmlite, ~0.1 s of CPU, then waiting for units. Code generation started
    it, next to the two lowering processes on two cores; now its start-up overlaps the
    compiler's imports, which leave the other core idle."""
    if not env_flag(SPLIT_ENV, True):
        return
    from lamina.backends import compile_worker

    compile_worker.prestart()


def _save(request: CompileRequest, exe: Executable, path: str | os.PathLike[str]) -> None:
    """`Executable.save`: the artifact writer (imported, with the compiler, when used)."""
    from lamina.driver.artifact import save_executable

    # The same class, seen by pyright under two module names (see compile_request).
    save_executable(request, exe, path)  # pyright: ignore[reportArgumentType]


__all__ = ["CompileRequest", "DeferredSource", "compile", "compile_request", "is_path"]
