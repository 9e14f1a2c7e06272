"""The pass registry: one pass per file in `passes/`, flag = file name with `-`.

Passes are discovered from the file names and imported lazily, so adding a
pass is adding a file, and `lamina-opt` start-up does not
import every pass.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from functools import cache
from pathlib import Path

from lamina.core.pass_base import LaminaPass


def _passes_dir() -> Path:
    import lamina.passes

    return Path(lamina.passes.__file__).parent


@cache
def builtin_pass_names() -> tuple[str, ...]:
    """The flags of Lamina's own passes (files in `passes/`), sorted."""
    files = _passes_dir().glob("*.py")
    return tuple(sorted(f.stem.replace("_", "-") for f in files if not f.stem.startswith("_")))


def pass_names() -> tuple[str, ...]:
    """Every registered pass flag, sorted: Lamina's and plugins' (`core/plugins.py`)."""
    from lamina.core.plugins import plugin_pass_factories

    plugins = plugin_pass_factories()
    if not plugins:
        return builtin_pass_names()
    return tuple(sorted({*builtin_pass_names(), *plugins}))


def module_name(flag: str) -> str:
    return f"lamina.passes.{flag.replace('-', '_')}"


def get_pass_class(flag: str) -> type[LaminaPass]:
    """The pass class of `flag`: Lamina's (`passes/<flag>.py`) or a plugin's (which may
    be a plain xDSL `ModulePass`, without Lamina's phase contract)."""
    if flag in builtin_pass_names():
        return _builtin_pass_class(flag)
    from lamina.core.plugins import plugin_pass_factories

    plugins = plugin_pass_factories()
    if flag not in plugins:
        raise KeyError(flag)
    # Typed as Lamina's: callers read its class attributes with getattr defaults.
    return plugins[flag]()  # pyright: ignore[reportReturnType]


@cache
def _builtin_pass_class(flag: str) -> type[LaminaPass]:
    """Import `passes/<flag>.py` and return the LaminaPass whose `name` is `flag`."""
    module = importlib.import_module(module_name(flag))
    for value in vars(module).values():
        if (
            isinstance(value, type)
            and issubclass(value, LaminaPass)
            and value is not LaminaPass
            and getattr(value, "name", None) == flag
        ):
            return value
    raise LookupError(f"passes/{flag.replace('-', '_')}.py defines no LaminaPass named '{flag}'")


def pass_factories() -> dict[str, Callable[[], type[LaminaPass]]]:
    """name -> factory, the shape xDSL's opt main and PassPipeline expect."""
    return {flag: (lambda f=flag: get_pass_class(f)) for flag in pass_names()}
