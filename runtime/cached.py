"""An `Executable` as a disk-cache entry, and back (runtime/cache.py stores the bytes).

An entry holds the object code MCJIT produced and, as JSON metadata, what a
hit needs to rebuild the `Executable` without the compiler: the entry
signatures, the functions that are not entries (and why), the compile
timings, the libraries the code calls (a CBLAS a target registered while
lowering: a hit skips lowering, so they are registered again before the
object is loaded) and whether it calls libgomp, and the CPU it was built for
(`{"name": ..., "features": [...]}`): a hit on a host that lacks one of those
features is `HostFeatureError`, never SIGILL.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lamina.runtime import cache as disk
from lamina.runtime.cpu_features import check_host
from lamina.runtime.executable import Executable, Signature, TensorSpec
from lamina.runtime.native_setup import LibraryLoadError, register_library
from lamina.runtime.native_setup import libraries as registered_libraries


def _spec_json(spec: TensorSpec) -> list[object]:
    return [list(spec.shape), spec.dtype.str]


def _spec_from_json(data: list[Any]) -> TensorSpec:
    shape, dtype = data
    dims = tuple(d if isinstance(d, str) else int(d) for d in shape)
    return TensorSpec(dims, np.dtype(str(dtype)))


def store(key: str, exe: Executable, *, openmp: bool) -> bool:
    """Store `exe`'s object code and entry signatures under `key`; False if there is
    nothing to store (no object code) or the cache is not writable.

    `openmp`: the code calls libgomp (the compiler knows it from the module).
    """
    pieces = getattr(exe.compiled, "object_code_pieces", None)
    code = getattr(exe.compiled, "object_code", None) if pieces is None else None
    if pieces is None and code is None:
        return False
    metadata = {
        "signatures": {
            name: {
                "params": [_spec_json(p) for p in sig.params],
                "results": [_spec_json(r) for r in sig.results],
                "param_names": list(sig.param_names),
                "result_names": list(sig.result_names),
                "bounds": {symbol: list(pair) for symbol, pair in sig.bounds.items()},
            }
            for name, sig in exe.signatures.items()
        },
        "not_entries": exe.not_entries,
        "timings": exe.timings,
        "libraries": list(registered_libraries),
        "openmp": openmp,
        "cpu": {"name": exe.target_cpu, "features": list(exe.target_features)},
    }
    if pieces is not None:  # a model compiled in units: its weights are not packed first
        entry = disk.PiecewiseEntry(pieces(), metadata)  # written on a thread if large
        return disk.write(key, entry, background=True) is not None
    assert code is not None
    return disk.write(key, disk.Entry(code, metadata)) is not None


def load(key: str) -> Executable | None:
    """The executable stored under `key`; None on a miss or an entry that cannot be used."""
    entry = disk.read(key)
    if entry is None:
        return None
    try:
        signatures = {
            name: Signature(
                name,
                tuple(_spec_from_json(p) for p in sig["params"]),
                tuple(_spec_from_json(r) for r in sig["results"]),
                tuple(sig.get("param_names", ())),
                tuple(sig.get("result_names", ())),
                {str(k): (int(lo), int(hi)) for k, (lo, hi) in sig.get("bounds", {}).items()},
            )
            for name, sig in entry.metadata["signatures"].items()
        }
        not_entries = {str(k): str(v) for k, v in entry.metadata["not_entries"].items()}
        libraries = [str(path) for path in entry.metadata["libraries"]]
        runtime = bool(libraries) or entry.metadata["openmp"] is True
        cpu = str(entry.metadata["cpu"]["name"])
        features = tuple(str(f) for f in entry.metadata["cpu"]["features"])
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    check_host(features, f"the cached code for CPU '{cpu}'")
    if libraries and not _register_libraries(libraries):
        return None
    try:
        compiled = disk.load(key, entry.object_code, signatures, runtime=runtime)
    except (RuntimeError, OSError, ValueError):  # LLVM could not load it: rebuild
        return None
    return Executable(
        signatures, compiled, None, {}, not_entries, cache_hit=True,
        target_cpu=cpu, target_features=features,
    )  # fmt: skip


def _register_libraries(paths: list[str]) -> bool:
    """Register the libraries cached code calls; False if one no longer loads (then rebuild)."""
    try:
        for path in paths:
            register_library(path)
    except LibraryLoadError:
        return False
    return True


__all__ = ["load", "store"]
