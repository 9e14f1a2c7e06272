"""Plugins: dialects, passes and targets from outside the repository (docs/extending.md).

Three ways in, none of which needs an edit to Lamina:

* **xDSL's own entry points** (`xdsl.universe`, see `xdsl/universe.py`): an
  installed package whose `Universe` lists dialects and passes is picked up
  by `lamina-opt` and `lamina.compile` as by `xdsl-opt`. (xDSL's own
  universe, entry `xdsl`, is not imported: Lamina registers the upstream
  dialects it uses itself, `core/context.py`.)
* **Lamina's entry points** `lamina.targets` for targets
  (`target/registry.py`).
* **`--load-plugin MODULE`** (repeatable; a module name or a `.py` file),
  like MLIR's `--load-pass-plugin`: the module registers things when
  imported, with `register_pass`, `register_dialect` and
  `lamina.target.registry.register_target`.

A plugin pass that is a `LaminaPass` keeps its phase contract; a plain
xDSL `ModulePass` may run in every phase before build. A plugin dialect's
ops are legal in phase ingestion only (phase invariant 3) unless the plugin
declares more phases (`register_dialect(..., phases=...)` or
`declare_dialect_phases`), or a target lowers them in a hook.

Every failure of a plugin (an entry point that does not import, a name that
clashes) is a `PluginError`: a diagnostic naming the plugin, exit status 1.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

from xdsl.ir import Dialect
from xdsl.passes import ModulePass

from lamina.core.diagnostics import DiagnosticError
from lamina.dialects.lamina import Phase

XDSL_UNIVERSE_GROUP = "xdsl.universe"
XDSL_OWN_UNIVERSE = "xdsl"

PassFactory = Callable[[], type[ModulePass]]
DialectFactory = Callable[[], Dialect]


class PluginError(DiagnosticError):
    """A plugin that fails to load or registers a name that is taken."""


_passes: dict[str, PassFactory] = {}
_dialects: dict[str, DialectFactory] = {}
_dialect_phases: dict[str, frozenset[Phase]] = {}
_universes_loaded = False
_python_passes: dict[str, str] = {}
"""Pass name -> the module of a pass registered from Python (`register_pass`)."""
_loaded_files: dict[str, str] = {}
"""`--load-plugin` spec -> the file it loaded (for the disk cache's key, runtime/cache.py)."""


# ---------------------------------------------------------------------------
# Registration from Python
# ---------------------------------------------------------------------------


def register_pass(pass_class: type[ModulePass], name: str | None = None) -> None:
    """Make `pass_class` available to `-p`, `--pipeline`, `--list-passes` and hooks."""
    name = name or getattr(pass_class, "name", None)
    if not isinstance(name, str) or not name:
        raise PluginError(f"plugin pass {pass_class!r} has no `name`")
    _add_pass(name, lambda cls=pass_class: cls, f"pass class {pass_class.__qualname__}")
    _python_passes[name] = pass_class.__module__


def register_dialect(
    name: str, factory: DialectFactory | Dialect, phases: Iterable[Phase | str] = ()
) -> None:
    """Make dialect `name` parseable; its ops are also legal in `phases` (see module doc)."""
    made = factory if callable(factory) and not isinstance(factory, Dialect) else (lambda: factory)
    _add_dialect(name, made, f"dialect {name}")
    if phases:
        declare_dialect_phases(name, phases)


def declare_dialect_phases(name: str, phases: Iterable[Phase | str]) -> None:
    """Allow the ops of dialect `name` in `phases` after ingestion (not build: llvm only)."""
    parsed = frozenset(p if isinstance(p, Phase) else Phase.from_label(p) for p in phases)
    if Phase.BUILD in parsed:
        raise PluginError(
            f"dialect '{name}' cannot be legal in phase build (only llvm ops reach codegen)"
        )
    _dialect_phases[name] = parsed


def dialect_phases(name: str) -> frozenset[Phase]:
    """Phases after ingestion in which a plugin dialect's ops are declared legal."""
    _load_universes()
    return _dialect_phases.get(name, frozenset())


def _builtin_pass_names() -> tuple[str, ...]:
    from lamina.core.registry import builtin_pass_names

    return builtin_pass_names()


def _add_pass(name: str, factory: PassFactory, where: str) -> None:
    if name in _builtin_pass_names():
        raise PluginError(f"plugin {where} is named '{name}', like a built-in Lamina pass")
    if name in _passes and _passes[name]() is not factory():
        raise PluginError(f"plugin {where}: a pass named '{name}' is already registered")
    _passes[name] = factory


def _add_dialect(name: str, factory: DialectFactory, where: str) -> None:
    from lamina.core.context import builtin_dialect_names

    if name in builtin_dialect_names():
        raise PluginError(f"plugin {where} clashes with the dialect '{name}' Lamina registers")
    _dialects[name] = factory


# ---------------------------------------------------------------------------
# Discovery
# ---------------------------------------------------------------------------


def _load_universes() -> None:
    """Register the dialects and passes of every installed xDSL universe but xDSL's own."""
    global _universes_loaded
    if _universes_loaded:
        return
    _universes_loaded = True
    from importlib.metadata import entry_points

    from xdsl.universe import Universe

    for entry in sorted(entry_points(group=XDSL_UNIVERSE_GROUP), key=lambda e: e.name):
        if entry.name == XDSL_OWN_UNIVERSE:
            continue
        where = f"xDSL plugin '{entry.name}' ({entry.value})"
        try:
            universe = entry.load()
        except Exception as err:  # a plugin's bug: name it, no traceback
            raise PluginError(f"{where} failed to load: {type(err).__name__}: {err}") from None
        if not isinstance(universe, Universe):
            raise PluginError(f"{where} is a {type(universe).__name__}, not an xdsl Universe")
        for name, factory in universe.all_dialects.items():
            _add_dialect(name, factory, f"{where}: dialect {name}")
        for name, factory in universe.all_passes.items():
            _add_pass(name, factory, f"{where}: pass {name}")


def loaded_plugin_files() -> dict[str, str]:
    """Each `--load-plugin` spec loaded in this process -> the file it imported."""
    return dict(_loaded_files)


def load_plugin_flags() -> list[str]:
    """`--load-plugin` flags that load this process's plugins again, from any directory
    (a script by its absolute path): what a reproducer's command needs."""
    return [
        f"--load-plugin={path if spec.endswith('.py') else spec}"
        for spec, path in _loaded_files.items()
    ]


def python_pass_modules() -> dict[str, str]:
    """Each pass registered from Python (`register_pass`) -> the module defining it."""
    return dict(_python_passes)


def plugin_pass_factories() -> dict[str, PassFactory]:
    _load_universes()
    return dict(_passes)


def plugin_dialect_factories() -> dict[str, DialectFactory]:
    _load_universes()
    return dict(_dialects)


def load_plugin(spec: str) -> None:
    """Import a plugin module by name, or a Python file by path (`--load-plugin`)."""
    try:
        if spec.endswith(".py"):
            path = Path(spec)
            if not path.is_file():
                raise FileNotFoundError(f"no such file: '{spec}'")
            name = f"lamina_plugin_{path.stem}"
            module_spec = importlib.util.spec_from_file_location(name, path.resolve())
            assert module_spec is not None and module_spec.loader is not None
            module = importlib.util.module_from_spec(module_spec)
            sys.modules[name] = module
            module_spec.loader.exec_module(module)
        else:
            module = importlib.import_module(spec)
        _loaded_files[spec] = str(getattr(module, "__file__", None) or "")
    except PluginError:
        raise
    except Exception as err:  # the plugin's error, reported as a diagnostic
        raise PluginError(f"cannot load plugin '{spec}': {type(err).__name__}: {err}") from None


__all__ = [
    "PluginError",
    "declare_dialect_phases",
    "dialect_phases",
    "load_plugin",
    "load_plugin_flags",
    "loaded_plugin_files",
    "python_pass_modules",
    "plugin_dialect_factories",
    "plugin_pass_factories",
    "register_dialect",
    "register_pass",
]
