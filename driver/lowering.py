"""The cold path of a compile: parse, run the pipeline down to the build phase, generate code.

driver/compiler.py imports this module on a cache miss only (it brings
xDSL, the passes and the code generator). Its functions take the compile's
`CompileRequest` whole; `lower_to_build` and `parse_source` are also the
building blocks of `lamina-compile` (tools/lamina_compile.py), which stops
at the build phase and writes files instead of loading code.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from lamina.backends.codegen import cache_stats, compile_module, split_enabled, uses_openmp
from lamina.backends.kernel_reuse import (
    AwaitKernelsPass,
    Delegating,
    ReuseKernelsPass,
    reuse_enabled,
)
from lamina.backends.parallel_lowering import ParallelLoweringFailed, abandon_all
from lamina.core.context import make_context
from lamina.core.diagnostics import parse_module, verify_module
from lamina.core.gc_pauses import fewer_gc_pauses
from lamina.core.pass_manager import PassManager, pipeline_spec_string
from lamina.dialects.lamina import get_phase
from lamina.driver.cache_key import key
from lamina.driver.compiler import CompileRequest, DeferredSource, is_path
from lamina.driver.instruments import Instruments
from lamina.driver.pipeline import passes_for_module
from lamina.driver.signatures import entry_signatures
from lamina.driver.stats import StatsRecorder
from lamina.passes.check_bounds import CheckBoundsPass
from lamina.runtime.executable import Executable
from lamina.target.devices import with_device_check


def parse_source(module_or_text: ModuleOp | str | os.PathLike[str], filename: str) -> ModuleOp:
    """A private, verified copy of the input: bad IR is reported as such, before any pass.

    A path (`os.PathLike`, or a one-line string naming an existing file or
    ending in `.mlir`) is read; any other string is the program's text.
    """
    if not isinstance(module_or_text, str | os.PathLike):
        module = module_or_text.clone()
    elif isinstance(module_or_text, os.PathLike) or is_path(module_or_text):
        path = os.fspath(module_or_text)
        with open(path, encoding="utf-8") as f:  # a missing file: OSError, a user error
            module = parse_module(make_context(), f.read(), path)
    else:
        module = parse_module(make_context(), module_or_text, filename)
    verify_module(module)
    return module


def lower_to_build(
    module: ModuleOp,
    targets: Sequence[str] | None = None,
    pipeline: str = "default",
    recorder: StatsRecorder | None = None,
    instruments: Instruments | None = None,
    *,
    check_bounds: bool = False,
    reuse_kernels: bool = False,
    parallel: bool = False,
) -> tuple[ModuleOp, dict[str, float]]:
    """Run `pipeline` on `module` (in place) down to the build phase; return it and pass times.

    With an enabled `recorder`, each phase runs under its own pass manager and
    is measured. `check_bounds` inserts `check-bounds` right before `lower-to-llvm`.
    `reuse_kernels`: kernels lowered by an earlier compile are not lowered again
    (backends/kernel_reuse.py; for code generation in units only); with `parallel`,
    a forked process lowers part of the others (backends/parallel_lowering.py).
    """
    passes = passes_for_module(pipeline, module, targets)  # from the module's phase on
    passes = with_device_check(passes)  # devices no target compiles: refused now, not at run time
    if check_bounds:
        passes = with_bounds_checks(passes)
    if reuse_kernels:
        passes = with_kernel_reuse(passes, pipeline, targets, parallel=parallel)
    if recorder is not None and recorder.enabled and instruments is None:
        return module, _run_by_phase(passes, module, recorder)
    # Records pass times; the instruments print IR, phase dumps, progress, report.
    manager = instruments.pass_manager(passes) if instruments else PassManager(passes)
    manager.run(make_context(), module)
    return module, manager.pass_times


def with_bounds_checks(passes: list) -> list:
    """`passes` with `check-bounds` right before `lower-to-llvm` (the last lowering pass)."""
    index = next((i for i, p in enumerate(passes) if p.name == "lower-to-llvm"), None)
    if index is None:
        return list(passes)  # already past the lowering phase: nothing left to guard
    return [*passes[:index], CheckBoundsPass(), *passes[index:]]


def with_kernel_reuse(
    passes: list, pipeline: str, targets: Sequence[str] | None, *, parallel: bool = False
) -> list:
    """`passes` with `reuse-kernels` right before `lower-te`, keyed by everything the
    kernels' lowering depends on: the passes from there on (with their options), the
    toolchain, Lamina's source and the plugins (the module's attributes are added by
    the pass itself)."""
    index = next((i for i, p in enumerate(passes) if p.name == "lower-te"), None)
    last = next((i for i, p in enumerate(passes) if p.name == "lower-to-llvm"), None)
    if index is None or last is None or last < index:
        return list(passes)
    rest = pipeline_spec_string(passes[index:])
    context = key(rest, filename="", pipeline=pipeline, targets=list(targets or ()))
    if not parallel:
        return [*passes[:index], ReuseKernelsPass(context), *passes[index:]]
    shared = Delegating(list(passes[index:]))
    return [
        *passes[:index],
        ReuseKernelsPass(context, shared),
        *passes[index:last],
        AwaitKernelsPass(shared),
        *passes[last:],
    ]


def compile_cold(request: CompileRequest, recorder: StatsRecorder) -> Executable:
    """Parse, run the pipeline phase by phase, JIT-compile (with fewer GC pauses)."""
    with fewer_gc_pauses():
        try:
            return _compile_cold_steps(request, recorder, parallel=True)
        except ParallelLoweringFailed:  # the lowering process failed: all in this one
            return _compile_cold_steps(request, recorder, parallel=False)
        finally:
            abandon_all()  # a failed compile leaves no lowering process behind


def _compile_cold_steps(
    request: CompileRequest, recorder: StatsRecorder, *, parallel: bool
) -> Executable:
    instruments = request.instruments()
    with recorder.phase("parse + verify"):
        source = request.source
        module = parse_source(
            source.build() if isinstance(source, DeferredSource) else source, request.filename
        )
        not_entries: dict[str, str] = {}
        signatures = entry_signatures(module, not_entries)
    start = time.perf_counter()
    lower_to_build(
        module,
        request.targets,
        request.pipeline,
        recorder,
        instruments,
        check_bounds=request.check_bounds,
        reuse_kernels=instruments is None and split_enabled() and reuse_enabled(),
        parallel=parallel,
    )
    lowering_time = time.perf_counter() - start
    if instruments is not None:
        instruments.progress("codegen: LLVM optimization and JIT compilation")
    hits = cache_stats()["hits"]
    start = time.perf_counter()
    with recorder.phase("codegen"):
        compiled = compile_module(module)
    llvm = compiled.timings
    for step, seconds in (
        ("llvm translate", llvm.translate + llvm.parse_verify),
        ("llvm optimize (O3)", llvm.optimize),
        ("llvm codegen (MCJIT)", llvm.jit),
    ):
        recorder.step(step, seconds)
    timings = {"lowering": lowering_time, "codegen": time.perf_counter() - start}
    if instruments is not None:
        instruments.finish(compiled.timings, cached=cache_stats()["hits"] > hits)
    return Executable(signatures, compiled, module, timings, not_entries)


def _run_by_phase(
    passes: list[ModulePass], module: ModuleOp, recorder: StatsRecorder
) -> dict[str, float]:
    """Run `passes` one phase at a time (a chunk ends with its transition pass), each measured."""
    ctx = make_context()
    times: dict[str, float] = {}
    while passes:
        transitions = (i + 1 for i, p in enumerate(passes) if getattr(p, "produces", None))
        cut = next(transitions, len(passes))
        manager = PassManager(passes[:cut])
        with recorder.phase(get_phase(module).label):
            manager.run(ctx, module)
        for name, seconds in manager.pass_times.items():
            times[name] = times.get(name, 0.0) + seconds
        passes = passes[cut:]
    return times


def executable_uses_openmp(exe: Executable) -> bool:
    """Does `exe`'s code call libgomp? (A cache hit must load it first.)"""
    return exe.llvm_module is not None and uses_openmp(exe.llvm_module)


__all__ = [
    "compile_cold",
    "executable_uses_openmp",
    "lower_to_build",
    "parse_source",
    "with_bounds_checks",
    "with_kernel_reuse",
]
