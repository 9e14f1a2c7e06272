"""The runtime: calling compiled code on NumPy arrays, loading it from the disk cache.

Importable without xDSL, llvmlite or any compiler package (tests/test_code_layout.py
checks it): a process that only runs compiled models needs nothing else.
LLVM's object loader is imported only by the function that loads cached code.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lamina.runtime.artifact import ArtifactError, load

_LAZY = {"load": "lamina.runtime.artifact", "ArtifactError": "lamina.runtime.artifact"}
"""`lamina.runtime.load(DIR)`: an artifact directory (runtime/artifact.py), loaded on use."""


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'lamina.runtime' has no attribute {name!r}")


__all__ = ["ArtifactError", "load"]
