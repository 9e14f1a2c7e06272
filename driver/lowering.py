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
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from xdsl.dialects.builtin import ModuleOp

from lamina.backends import compile_worker, kernel_families
from lamina.backends.codegen import cache_stats, compile_module, split_enabled, uses_openmp
from lamina.backends.kernel_reuse import (
    AwaitKernelsPass,
    Delegating,
    KeyRecordsPass,
    ReuseKernelsPass,
    reuse_enabled,
)
from lamina.backends.parallel_lowering import ParallelLoweringFailed, abandon_all
from lamina.core.accessors import fast_accessors
from lamina.core.clone import fast_building
from lamina.core.context import make_context
from lamina.core.diagnostics import parse_module, verify_module
from lamina.core.gc_pauses import fewer_gc_pauses
from lamina.core.pass_manager import (
    REPRODUCER_ENV,
    compile_verify_policy,
    pipeline_spec_string,
)
from lamina.core.walk import fast_walks
from lamina.driver.cache_key import key
from lamina.driver.compiler import CompileRequest, DeferredSource, is_path
from lamina.driver.instruments import Instruments, watching_build
from lamina.driver.pipeline import passes_for_module
from lamina.driver.signatures import entry_signatures
from lamina.driver.stats import StatsRecorder
from lamina.passes.apply_model_records import ApplyModelRecordsPass
from lamina.passes.apply_records import ApplyRecordsPass
from lamina.passes.check_bounds import CheckBoundsPass
from lamina.passes.profile_kernels import ProfileKernelsPass
from lamina.runtime.env import env_path
from lamina.runtime.executable import Executable
from lamina.target.devices import with_device_check


def parse_source(
    module_or_text: ModuleOp | str | os.PathLike[str], filename: str, *, private: bool = False
) -> ModuleOp:
    """A private, verified copy of the input: bad IR is reported as such, before any pass.

    A path (`os.PathLike`, or a one-line string naming an existing file or
    ending in `.mlir`) is read; any other string is the program's text. A module
    is cloned, unless `private` says nobody else holds it (a `DeferredSource`'s,
    built for this compile: cloning DenseNet-121's took 0.1 s before the passes).
    """
    if not isinstance(module_or_text, str | os.PathLike):
        module = module_or_text if private else module_or_text.clone()
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
    profile: bool = False,
    records: str | None = None,
    records_ignore_errors: bool = False,
    reuse_kernels: bool = False,
    parallel: bool = False,
    jit: bool = True,
) -> tuple[ModuleOp, dict[str, float]]:
    """Run `pipeline` on `module` (in place) down to the build phase; return it and pass times.

    The instruments (a quiet set on `recorder` if none) time a row per phase on
    the compile's clock (driver/stats.py), and print IR, phase dumps, progress,
    the report. `check_bounds` inserts `check-bounds` right before `lower-to-llvm`,
    `records` inserts `apply-records` right after `lower-te`.
    `reuse_kernels`: kernels lowered by an earlier compile are not lowered again
    (backends/kernel_reuse.py; for code generation in units only); with `parallel`,
    a forked process lowers part of the others (backends/parallel_lowering.py);
    `jit=False`: those kernels are built for a library (`lamina-compile`), and only
    kernels built for one are reused.
    """
    if instruments is None:
        instruments = Instruments(recorder=recorder or StatsRecorder(False))
    with instruments.recorder.phase("build pipeline"):  # imports the passes, finds targets
        passes = passes_for_module(pipeline, module, targets)  # from the module's phase on
        passes = with_device_check(passes)  # devices no target compiles: refused now
        if check_bounds:
            passes = with_bounds_checks(passes)
        if profile:
            passes = with_profiling(passes)
        if records is not None:
            passes = with_records(passes, records, records_ignore_errors)
        if reuse_kernels:
            passes = with_kernel_reuse(
                passes,
                pipeline,
                targets,
                parallel=parallel and not profile,
                records=None if records is None else (records, records_ignore_errors),
                profile=profile,
                jit=jit,
            )
    manager = instruments.pass_manager(passes, **compile_verify_policy())
    manager.run(make_context(), module)
    return module, manager.pass_times


def with_bounds_checks(passes: list) -> list:
    """`passes` with `check-bounds` right before `lower-to-llvm` (the last lowering pass)."""
    index = next((i for i, p in enumerate(passes) if p.name == "lower-to-llvm"), None)
    if index is None:
        return list(passes)  # already past the lowering phase: nothing left to guard
    return [*passes[:index], CheckBoundsPass(), *passes[index:]]


def with_profiling(passes: list) -> list:
    """`passes` with `profile-kernels` right after `lower-to-llvm` (at the end if the
    module is already past it)."""
    index = next((i for i, p in enumerate(passes) if p.name == "lower-to-llvm"), None)
    at = len(passes) if index is None else index + 1
    return [*passes[:at], ProfileKernelsPass(), *passes[at:]]


def with_records(passes: list, records: str, ignore_errors: bool = False) -> list:
    """`passes` with `apply-records` right after `lower-te` (or first, if `lower-te` already
    ran: the module's kernels are then already loop functions, maybe scheduled), and
    `apply-model-records` first when `plan-layouts` is still to run."""
    if any(p.name == "plan-layouts" for p in passes):
        model = ApplyModelRecordsPass(records=records, ignore_errors=ignore_errors)
        passes = [model, *passes]
    step = ApplyRecordsPass(records=records, ignore_errors=ignore_errors)
    index = next((i for i, p in enumerate(passes) if p.name == "lower-te"), None)
    if index is None:
        return [step, *passes] if any(p.name == "schedule" for p in passes) else list(passes)
    return [*passes[: index + 1], step, *passes[index + 1 :]]


def with_kernel_reuse(
    passes: list,
    pipeline: str,
    targets: Sequence[str] | None,
    *,
    parallel: bool = False,
    records: tuple[str, bool] | None = None,
    profile: bool = False,
    jit: bool = True,
) -> list:
    """`passes` with `reuse-kernels` right before `lower-te`, keyed by everything the
    kernels' lowering depends on: the passes from there on (with their options), the
    toolchain, Lamina's source and the plugins (the module's attributes are added by
    the pass itself).

    With `records` (path, ignore errors) `apply-records` is left out of that context
    (a path says nothing of what the file holds): each kernel's key adds the knobs
    its own record gives it, so a kernel whose record did not change is reused
    whatever the others' say (`key-records` after `apply-records` learns and keys
    the kernels lowered in full). A profiling build (`profile`, whose context holds
    `profile-kernels`) reuses the kernels of earlier profiling builds, with their
    parallel regions; it delegates none to a lowering process (`parallel` off):
    the table is written before that process's records would arrive. Kernels built
    for a library (`jit=False`, position-independent) are keyed apart from JIT ones."""
    index = next((i for i, p in enumerate(passes) if p.name == "lower-te"), None)
    last = next((i for i, p in enumerate(passes) if p.name == "lower-to-llvm"), None)
    if index is None or last is None or last < index:
        return list(passes)
    keyed = [p for p in passes[index:] if p.name != "apply-records"]
    extra = {} if jit else {"code": "pic"}
    if not kernel_families.enabled():  # a kernel's record says whether it has a family
        extra["families"] = "off"
    level = compile_worker.kernel_opt_level_set()  # unset: the target's (in the context)
    if level is not None:  # a record names its unit's key, made at that level
        extra["kernel_opt"] = str(level)
    context = key(
        pipeline_spec_string(keyed),
        filename="",
        pipeline=pipeline,
        targets=list(targets or ()),
        extra=extra or None,
    )
    if records is not None or profile:  # learn (and key) the kernels lowered in full
        after = max(i for i, p in enumerate(passes) if p.name in ("lower-te", "apply-records"))
        passes = [*passes[: after + 1], KeyRecordsPass(), *passes[after + 1 :]]
        last += 1
    reuse = ReuseKernelsPass(context, records=records, profile=profile)
    if not parallel:
        return [*passes[:index], reuse, *passes[index:]]
    shared = Delegating(list(passes[index:]), jit=jit)
    object.__setattr__(reuse, "parallel", shared)
    return [
        *passes[:index],
        reuse,
        *passes[index:last],
        AwaitKernelsPass(shared),
        *passes[last:],
    ]


def compile_cold(
    request: CompileRequest, recorder: StatsRecorder, instruments: Instruments | None = None
) -> Executable:
    """Parse, run the pipeline phase by phase, JIT-compile (with fewer GC pauses and
    xDSL's walk in one generator, `core/walk.py`, its named operands read
    directly, `core/accessors.py`, and its clone in one pass, `core/clone.py`)."""
    with fewer_gc_pauses(), fast_walks(), fast_accessors(), fast_building():
        try:
            return _compile_cold_steps(request, recorder, instruments, parallel=True)
        except ParallelLoweringFailed:  # the lowering process failed: all in this one
            return _compile_cold_steps(request, recorder, instruments, parallel=False)
        finally:
            abandon_all()  # a failed compile leaves no lowering process behind


def _may_reuse_kernels(request: CompileRequest) -> bool:
    """`may_reuse_kernels` for `request`'s instruments."""
    return may_reuse_kernels(request.print_ir_after_all, request.dump_phases_to)


def may_reuse_kernels(print_ir_after_all: bool, dump_phases_to: object) -> bool:
    """Kernels reused or lowered in another process never pass through this process's
    IR: the instruments that print or dump it, and a reproducer, need every kernel's IR.
    (A profiling build reuses the kernels of profiling builds, whose records keep the
    parallel regions its table needs: `with_kernel_reuse`.) The timing instruments (`--pass-timing`, `-v`, `stats`)
    observe the compile as it runs unobserved (the lowering process's passes are its
    wait in `lower-to-llvm`)."""
    return (
        not print_ir_after_all
        and dump_phases_to is None
        and env_path(REPRODUCER_ENV) is None
        and split_enabled()
        and reuse_enabled()
    )


def _compile_cold_steps(
    request: CompileRequest,
    recorder: StatsRecorder,
    instruments: Instruments | None,
    *,
    parallel: bool,
) -> Executable:
    if instruments is None:
        instruments = request.instruments(recorder)
    with recorder.phase("parse + verify"):
        source = request.source
        if isinstance(source, DeferredSource):  # built now for this compile: ours alone
            module = parse_source(source.build(), request.filename, private=True)
        else:
            module = parse_source(source, request.filename)
        not_entries: dict[str, str] = {}
        signatures = entry_signatures(module, not_entries)
    if instruments is not None and request.records is not None:
        for note in request.record_set().notes():  # other CPUs' records: why they do not apply
            instruments.progress(note)
    start = time.perf_counter()
    lower_to_build(
        module,
        request.targets,
        request.pipeline,
        recorder,
        instruments,
        check_bounds=request.check_bounds,
        profile=request.profile,
        records=request.records,
        records_ignore_errors=request.records_ignore_errors,
        reuse_kernels=_may_reuse_kernels(request),
        parallel=parallel,
    )
    lowering_time = time.perf_counter() - start
    if instruments is not None:
        instruments.progress("codegen: LLVM optimization and JIT compilation")
    hits = cache_stats()["hits"]
    start = time.perf_counter()
    with recorder.phase("codegen"), watching_build(instruments), _weights_laid_out_early():
        compiled = compile_module(module)
    recorder.codegen_steps(compiled.timings)
    timings = {"lowering": lowering_time, "codegen": time.perf_counter() - start}
    if instruments is not None and request.observed:  # else the cache write is still to come
        instruments.finish(compiled.timings, cached=cache_stats()["hits"] > hits)
    target = compiled.target
    return Executable(
        signatures,
        compiled,
        module,
        timings,
        not_entries,
        target_cpu=target.cpu if target else "",
        target_features=target.required if target else (),
    )


@contextmanager
def _weights_laid_out_early() -> Iterator[None]:
    """Within the block, the weights of every module split for the JIT are laid out on
    a thread while LLVM builds its units (`constant_blob.prefill`, from the split
    observer of backends/kernel_cache.py), not after the build: filling ResNet-50's
    100 MB blob on huge pages took 0.02-0.25 s at the end of a cold compile."""
    from lamina.backends import kernel_cache
    from lamina.runtime import constant_blob

    started: list = []
    stop = kernel_cache.observe_splits(
        lambda split: started.append(constant_blob.prefill(split.constants))
    )
    try:
        yield
    finally:
        stop()
        # What the build's `register` did not take (a build that failed before linking):
        # its thread waited for, never raising in place of the build's own error.
        constant_blob.discard(started)


def executable_uses_openmp(exe: Executable) -> bool:
    """Does `exe`'s code call libgomp? (A cache hit must load it first.)"""
    return exe.llvm_module is not None and uses_openmp(exe.llvm_module)


__all__ = [
    "compile_cold",
    "executable_uses_openmp",
    "lower_to_build",
    "parse_source",
    "with_bounds_checks",
    "with_records",
    "with_kernel_reuse",
]
