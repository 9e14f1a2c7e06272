"""Writing artifact directories: a build-phase module as library, weights and manifest.

The compiler's half of runtime/artifact.py (which describes the directory
and loads it). `write_artifact` is what `lamina-compile MODEL -o DIR/` runs
after lowering; `save_executable` is `Executable.save` for a compiled
executable: it reuses the build-phase module the JIT compiled, or, for an
executable loaded from the disk cache (which keeps no module), lowers the
compile's request again.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from lamina.runtime.artifact import (
    FORMAT,
    FORMAT_VERSION,
    LIBRARY,
    MANIFEST,
    SYMBOL_PREFIX,
    WEIGHTS,
    WEIGHTS_SYMBOL,
    artifact_output,
    entries_json,
    file_record,
    lamina_version,
)
from lamina.runtime.executable import Executable, Signature

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

    from lamina.driver.compiler import CompileRequest


def target_cpu(module: ModuleOp) -> tuple[str, list[str]]:
    """The LLVM CPU name the module's code is built for (its target's `isa`, default the
    host) and the instruction-set features that code may use: what a loader checks."""
    from lamina.backends.codegen import CodeTarget

    target = CodeTarget.of(module)
    return target.cpu, list(target.required)


def write_artifact(
    module: ModuleOp,
    signatures: dict[str, Signature],
    path: str | os.PathLike[str],
    *,
    not_entries: dict[str, str] | None = None,
    timings=None,
    private: bool = False,
) -> Path:
    """Write the build-phase `module` (not changed, unless `private` says nobody else
    uses it: then it is not cloned first) as an artifact directory at `path`.

    Raises `ArtifactError` for a path that cannot be one (before compiling);
    nothing is left behind if anything fails.
    """
    from lamina.backends import abi, codegen

    with artifact_output(path) as tmp:
        lowered = module if private else module.clone()  # ResNet-50's: 0.5-0.7 s
        symbols = abi.export_symbols(lowered, SYMBOL_PREFIX)
        region = codegen.build_artifact_library(
            lowered, tmp / LIBRARY, tmp / WEIGHTS, timings=timings
        )
        cpu, features = target_cpu(module)
        weights = {**file_record(tmp / WEIGHTS), "symbol": WEIGHTS_SYMBOL, "region": region}
        manifest = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "lamina_version": lamina_version(),
            "entries": entries_json(signatures, symbols),
            "not_entries": dict(not_entries or {}),
            "cpu": {"name": cpu, "features": features},
            "threading": "libgomp" if codegen.uses_openmp(lowered) else "none",
            "libraries": list(codegen._libraries),
            "library": file_record(tmp / LIBRARY),
            "weights": weights,
        }
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return Path(path)


def save_executable(request: CompileRequest, exe: Executable, path: str | os.PathLike[str]) -> None:
    """`Executable.save` of an executable `lamina.compile` made from `request`."""
    module = exe.llvm_module
    if module is None or _has_reused_kernels(module):
        # Loaded from the disk cache, or kernels declared from an earlier compile's objects
        # (backends/kernel_reuse.py): a library needs every kernel's code, lower it again.
        from lamina.driver.compiler import DeferredSource
        from lamina.driver.lowering import lower_to_build, parse_source

        source = request.source
        if isinstance(source, DeferredSource):  # built now for this compile: ours alone
            module = parse_source(source.build(), request.filename, private=True)
        else:
            module = parse_source(source, request.filename)
        lower_to_build(
            module,
            request.targets,
            request.pipeline,
            check_bounds=request.check_bounds,
            profile=request.profile,
            records=request.records,
            records_ignore_errors=request.records_ignore_errors,
        )
    write_artifact(module, exe.signatures, path, not_entries=exe.not_entries)


def _has_reused_kernels(module: ModuleOp) -> bool:
    from lamina.backends.kernel_reuse import REUSED_ATTR

    return REUSED_ATTR in module.attributes


__all__ = ["target_cpu", "save_executable", "write_artifact"]
