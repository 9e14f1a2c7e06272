"""`lamina.compile`: `driver.compiler.compile`, taking ONNX models too.

An ONNX source — an `onnx.ModelProto`, the path of a `.onnx` file, or any
file that is not UTF-8 text and loads as an ONNX model — is imported on the
way (docs/onnx.md); `input_shapes={name: shape}` fixes its dynamic input
dimensions. A model file is imported on a cache miss only: its cache key is
the digest of the file (and the input shapes), so a hit reads the file once
and loads the code. Anything else goes to `driver.compiler.compile` unchanged.
Graph IR sources import neither the ONNX frontend nor xDSL here, so a cache
hit stays as light as `driver.compiler.compile`'s.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping, Sequence
from typing import Any

DEFAULT_BATCH_BOUNDS: tuple[int, int] = (1, 64)
"""Bounds of an ONNX model's dynamic batch (a `dim_param` leading dimension) unless
`batch_bounds=`/`--batch-bounds` gives them (docs/dynamic-shapes.md)."""


def compile(  # noqa: A001 - the API name is docs/design.md §7's
    module_or_text: Any,
    targets: Sequence[str] | None = None,
    *,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    batch_bounds: tuple[int, int] | None = None,
    filename: str = "<input>",
    **options: Any,
):
    """`lamina.driver.compiler.compile(module_or_text, targets, **options)`, with
    ONNX models imported first (see the module docstring). Raises `DiagnosticError`.

    `batch_bounds=(lo, hi)`: bounds of an ONNX model's dynamic batch (a
    `dim_param` leading dimension; default (1, 64), docs/dynamic-shapes.md)."""
    from lamina.core.gc_pauses import fewer_gc_pauses

    with fewer_gc_pauses():  # NumPy's and the driver's classes: 54 young collections, 30 ms
        from lamina.driver.compiler import compile as compile_ir

    path = None if is_model_proto(module_or_text) else candidate_path(module_or_text)
    if path is not None and os.path.isfile(path):  # imported on a cache miss only
        remember = options.get("cache") is not False
        source = _deferred_import(path, input_shapes, batch_bounds, remember=remember)
        return compile_ir(source, targets, filename=path, **options)
    if input_shapes or batch_bounds or might_be_onnx(module_or_text):
        from lamina.frontends.onnx import import_source

        result = import_source(
            module_or_text,
            dict(input_shapes or {}),
            filename=filename,
            batch_bounds=batch_bounds,
        )
        if result is not None:
            if isinstance(module_or_text, str | os.PathLike):
                filename = os.fspath(module_or_text)
            module_or_text = result.module
    return compile_ir(module_or_text, targets, filename=filename, **options)


def _deferred_import(
    path: str,
    input_shapes: Mapping[str, Sequence[int]] | None,
    batch_bounds: tuple[int, int] | None = None,
    *,
    remember: bool = True,
):
    """The ONNX model at `path` as a source the driver imports only on a cache miss,
    keyed by the digest of the file, the input shapes and the batch bounds (the digest
    is remembered by the file's status in the disk cache, `remember` and the cache on:
    runtime/cache.py `file_digest`)."""
    from lamina.driver.compiler import DeferredSource
    from lamina.runtime import cache as disk

    bounds = tuple(batch_bounds or DEFAULT_BATCH_BOUNDS)
    shapes = {name: tuple(shape) for name, shape in sorted((input_shapes or {}).items())}
    contents: list[bytes] = []  # the file's bytes, if it was read while hashing it
    digest = disk.file_digest(
        path,
        remember=remember and disk.enabled(),
        meanwhile=_imports_for_a_miss(),
        contents=contents,
    )

    def build():
        from lamina.frontends.onnx import import_source

        data = contents.pop() if contents else None  # the bytes hashed are the bytes imported
        result = import_source(path, dict(shapes), filename=path, batch_bounds=bounds, data=data)  # type: ignore[arg-type]
        assert result is not None, "a candidate path is a model or a diagnostic, never IR"
        return result.module

    key = f"onnx {digest} input_shapes={shapes!r}"
    if bounds != DEFAULT_BATCH_BOUNDS:
        key += f" batch_bounds={bounds!r}"
    return DeferredSource(key, build)


MISS_IMPORTS = (
    "llvmlite.binding",
    "xdsl.ir",
    "xdsl.dialects.builtin",
    "xdsl.dialects.arith",
    "xdsl.dialects.llvm",
    "lamina.dialects.graph",
    "lamina.dialects.te",
    "lamina.dialects.loop",
    "lamina.driver.lowering",
    "onnx",
    "lamina.frontends.onnx",
)
"""What a cache miss of a model file imports, in steps (dependencies first):
`_imports_for_a_miss`."""


def _imports_for_a_miss():
    """One import of `MISS_IMPORTS` per call, False when none is left: the steps that
    runtime/cache.py `file_digest` takes while another thread hashes the model's file
    (only when its digest is not remembered: a file this cache has not compiled yet,
    so most likely a miss, which imports all of them anyway). A hit stops at the
    step during which the digest became known."""
    steps = iter(MISS_IMPORTS)

    def step() -> bool:
        name = next(steps, None)
        if name is None:
            return False
        from lamina.core.gc_pauses import fewer_gc_pauses

        try:
            with fewer_gc_pauses():  # class creation: young collections finding nothing
                importlib.import_module(name)
        except ImportError:  # onnx missing: the model's import says so, with a diagnostic
            pass
        return True

    return step


def is_model_proto(source: object) -> bool:
    """Is `source` an `onnx.ModelProto`? (Without importing onnx for other sources.)"""
    kind = type(source)
    return kind.__name__ == "ModelProto" and kind.__module__.startswith("onnx")


def candidate_path(source: object) -> str | None:
    """The path `source` names if it may hold an ONNX model: a `.onnx` path, or an
    existing file that is not UTF-8 text (graph IR is text); else None."""
    if not isinstance(source, str | os.PathLike):
        return None
    path = os.fspath(source)
    if not isinstance(path, str) or "\n" in path:
        return None
    if path.endswith(".onnx"):
        return path
    if not os.path.isfile(path):
        return None
    with open(path, "rb") as f:
        data = f.read()
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return path
    return None


def might_be_onnx(source: object) -> bool:
    """A ModelProto, a `.onnx` path, or a path to a file that is not UTF-8 text."""
    return is_model_proto(source) or candidate_path(source) is not None


__all__ = ["candidate_path", "compile", "is_model_proto", "might_be_onnx"]
