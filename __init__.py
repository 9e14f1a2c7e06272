"""Lamina: a TVM-style deep-learning compiler on xDSL.

graph (Relax-like) -> te (tensor expressions) -> loop (TIR-like) -> llvm -> native.

    import lamina, numpy as np
    exe = lamina.compile("examples/mlp.mlir")
    y = exe.run("main", x, w1, b1, ...)
    exe.save("mlp.lamina/")                   # later, elsewhere, without the compiler:
    exe = lamina.load("mlp.lamina/")          # lamina.runtime.load

docs/python-api.md describes the API.

Top-level names are imported lazily so that tools and `import lamina.dialects.*`
start fast.
"""

from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "compile": "lamina.frontends.sources",
    "Executable": "lamina.runtime.executable",
    "LaminaRuntimeError": "lamina.runtime.executable",
    "TensorInfo": "lamina.runtime.executable",
    "load": "lamina.runtime.artifact",
    "ArtifactError": "lamina.runtime.artifact",
    "DiagnosticError": "lamina.core.diagnostics",
    "tune": "lamina.tuning.tune",
}


_LAZY_MODULES = {"cache": "lamina.runtime.cache", "runtime": "lamina.runtime"}
"""`lamina.cache.clear()` etc.: the disk cache of compiled code (docs/compile-cache.md)."""


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    if name in _LAZY_MODULES:
        import importlib

        return importlib.import_module(_LAZY_MODULES[name])
    raise AttributeError(f"module 'lamina' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The public API (`dir(lamina)`), not the import machinery."""
    return sorted(__all__)


__all__ = [
    "compile",
    "load",
    "Executable",
    "TensorInfo",
    "LaminaRuntimeError",
    "ArtifactError",
    "DiagnosticError",
    "cache",
    "runtime",
    "tune",
    "__version__",
]
