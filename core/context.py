"""The xDSL context Lamina works in: its four dialects plus the upstream ones it uses."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.context import Context
from xdsl.ir import Dialect


def _lamina_dialects() -> dict[str, Callable[[], Dialect]]:
    """Lamina's own dialects, imported lazily so tools start fast."""

    def lamina() -> Dialect:
        from lamina.dialects.lamina import Lamina

        return Lamina

    def graph() -> Dialect:
        from lamina.dialects.graph import Graph

        return Graph

    def te() -> Dialect:
        from lamina.dialects.te import TE

        return TE

    def loop() -> Dialect:
        from lamina.dialects.loop import Loop

        return Loop

    return {"lamina": lamina, "graph": graph, "te": te, "loop": loop}


UPSTREAM_DIALECTS = ("builtin", "arith", "math", "llvm", "func", "scf", "cf", "memref", "vector")
"""Upstream xDSL dialects registered in every Lamina context (docs/design.md §3)."""


def all_dialect_factories() -> dict[str, Callable[[], Dialect]]:
    from xdsl.dialects import get_all_dialects

    upstream = get_all_dialects()
    factories = {name: upstream[name] for name in UPSTREAM_DIALECTS}
    factories.update(_lamina_dialects())
    from lamina.core.plugins import plugin_dialect_factories

    for name, factory in plugin_dialect_factories().items():  # xdsl.universe, --load-plugin
        factories.setdefault(name, factory)
    return factories


def builtin_dialect_names() -> tuple[str, ...]:
    """Dialects Lamina registers itself (plugins may not take these names)."""
    return (*UPSTREAM_DIALECTS, *_lamina_dialects())


def make_context(allow_unregistered: bool = False) -> Context:
    """A fresh context with every dialect Lamina parses or produces."""
    ctx = Context(allow_unregistered=allow_unregistered)
    for name, factory in all_dialect_factories().items():
        ctx.register_dialect(name, factory)
    return ctx
