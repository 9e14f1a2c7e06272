"""The target registry: what a compile target is and where targets come from.

A target (seed 003, tvm-rfcs PR 10) customises compilation without a code
path of its own through the compiler: it contributes `module → module`
passes at named **hook points** of the one standard pipeline
(`optimization`, `lowering`, `build`, see `driver/pipeline.py`), and may
**claim** graph ops or functions — mark them `lamina.codegen = "<target>"`
— and lower what it claimed itself (to a library call, or straight to
`loop`), bypassing te. Everything a target decides is written into the
module, so the module alone rebuilds the pipeline: `lamina.targets` names
the targets in use and `lamina.codegen` the claims.

Targets come from three places, looked up in this order:

* the built-ins, `cpu` (LLVM for the host CPU) and `cblas` (matmul to the
  OpenBLAS of the `scipy-openblas32` wheel, see `target/cblas.py`);
* `register_target(target)` from Python (a script loaded with
  `lamina-opt --load-plugin`, or any imported module);
* the entry-point group `lamina.targets` of installed packages: the entry's
  name is the target's name, its value a `Target` or a zero-argument
  callable returning one. Entry points are loaded on first use; one that
  fails is reported with the plugin's name and its error.

Every user error here is a `TargetError` (a diagnostic, exit status 1).
"""

from __future__ import annotations

import difflib
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute, Operation
from xdsl.passes import ModulePass

from lamina.core.diagnostics import DiagnosticError
from lamina.dialects.lamina import Phase
from lamina.target.cpu_facts import CpuFacts, host_cpu_facts

ENTRY_POINT_GROUP = "lamina.targets"

HOOK_POINTS: dict[str, Phase] = {
    "claim": Phase.OPTIMIZATION,
    "optimization": Phase.OPTIMIZATION,
    "lowering": Phase.LOWERING,
    "build": Phase.LOWERING,
}
"""Hook point → the phase its passes run in. `claim` comes early in phase
optimization (after `fold-constants`, before device/layout planning and
`fuse-ops`, which must see claimed ops as claimed); `optimization` is after
`fuse-ops`; `build` is the end of phase lowering, just before `lower-to-llvm`."""

ALIASES = {"host": "cpu"}
"""Other names `--target` accepts for a registered target."""


class TargetError(DiagnosticError):
    """An unknown target, a broken plugin, a bad hook, a refused claim."""


HookItem = str | ModulePass
"""A hook pass: a `-p` spec (`"cse"`, `"my-pass{opt=1}"`) or a pass instance."""


@dataclass(frozen=True)
class Target:
    """A compile target: a device kind, its hooks, its claims and its code-generation facts.

    `hooks` maps a hook point (`optimization`, `lowering`, `build`) to the
    passes inserted there. A target that claims ops gives `claim` (a
    predicate on graph ops and `graph.func`s) and `lower` (called once per
    claimed op or function in phase lowering, it must replace it, e.g. by a
    `graph.call_loop` of a kernel it adds to the module); the generic passes
    `claim-ops{target=T}` and `lower-claimed{target=T}` run them at the
    `claim` and `lowering` hook points. `layout_preference` answers
    the layouts work (`plan-layouts`): the `#lamina.constraint` this target
    prefers for an op's result, or None. `options` override the host's
    code-generation facts (`vector_bits=256`, `cores=1`, ...; see
    `target/cpu_facts.py`). `requires`, if given, raises `TargetError`
    when something the target needs (a library) is missing.
    """

    name: str
    device_kind: str = "cpu"
    hooks: Mapping[str, Sequence[HookItem]] = field(default_factory=dict)
    claim: Callable[[Operation], bool] | None = None
    lower: Callable[[Operation], None] | None = None
    layout_preference: Callable[[Operation], Attribute | None] | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    requires: Callable[[], None] | None = None
    extends: str | None = None
    """For a library target: the target generating code for everything it does not claim
    (`cblas` extends `cpu`); using this target uses that one too, first."""
    description: str = ""

    def __post_init__(self) -> None:
        if not self.name or not isinstance(self.name, str):
            raise TargetError(f"a target needs a non-empty name, got {self.name!r}")
        unknown = [point for point in self.hooks if point not in HOOK_POINTS]
        if unknown:
            raise TargetError(
                f"target '{self.name}' registers a hook at unknown hook point "
                f"'{unknown[0]}'{_did_you_mean(unknown[0], HOOK_POINTS)} "
                f"(hook points: {', '.join(HOOK_POINTS)})"
            )
        if (self.claim is None) != (self.lower is None):
            raise TargetError(
                f"target '{self.name}': a target that claims ops must also lower them "
                "(give both `claim` and `lower`, or neither)"
            )
        check_target_options(self.name, dict(self.options))

    @property
    def facts(self) -> CpuFacts:
        """The host CPU's code-generation facts with this target's `options` applied."""
        return host_cpu_facts().replace(**dict(self.options))

    def hook_passes(self, point: str) -> list[HookItem]:
        """The passes at hook `point`: the claim/lower passes first, then `hooks`."""
        generated: list[HookItem] = []
        if self.claim is not None and point == "claim":
            generated.append(f"claim-ops{{target={self.name}}}")
        if self.lower is not None and point == "lowering":
            generated.append(f"lower-claimed{{target={self.name}}}")
        return [*generated, *self.hooks.get(point, ())]

    @property
    def all_hooks(self) -> dict[str, list[HookItem]]:
        return {point: self.hook_passes(point) for point in HOOK_POINTS}


# ---------------------------------------------------------------------------
# The registry
# ---------------------------------------------------------------------------

_REGISTERED: dict[str, Target] = {}
_ENTRY_POINTS_LOADED = False
_LOCK = threading.Lock()


def _builtin_targets() -> list[Target]:
    from lamina.target.cblas import cblas_target

    cpu = Target(
        "cpu",
        "cpu",
        description="LLVM code for the host CPU (llvmlite JIT or object code)",
    )
    # The same class, seen by pyright as `target.registry` and `lamina.target.registry`
    # (the repository root is the package, see pyproject.toml).
    return [cpu, cblas_target()]  # pyright: ignore[reportReturnType]


def register_target(target: Target, *, replace: bool = False) -> Target:
    """Register `target` under its name; a second target of the same name is an error."""
    if not isinstance(target, Target):
        raise TargetError(f"register_target expects a Target, got {type(target).__name__}")
    _ensure_loaded()
    with _LOCK:
        if target.name in _REGISTERED and not replace and _REGISTERED[target.name] is not target:
            raise TargetError(f"a target named '{target.name}' is already registered")
        _REGISTERED[target.name] = target
    return target


def unregister_target(name: str) -> None:
    """Forget a target registered from Python (tests, scripts)."""
    _REGISTERED.pop(name, None)


def _ensure_loaded() -> None:
    """Register the built-ins, then every `lamina.targets` entry point, once."""
    global _ENTRY_POINTS_LOADED
    if _ENTRY_POINTS_LOADED:
        return
    with _LOCK:
        if _ENTRY_POINTS_LOADED:
            return
        for target in _builtin_targets():
            _REGISTERED.setdefault(target.name, target)
        errors = []
        for name, target in _entry_point_targets(errors):
            _REGISTERED.setdefault(name, target)
        _ENTRY_POINTS_LOADED = True
    if errors:
        raise TargetError(errors[0])


def _entry_point_targets(errors: list[str]) -> list[tuple[str, Target]]:
    """(name, Target) for every entry point of the group; failures go to `errors`."""
    from importlib.metadata import entry_points

    found = []
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        where = f"target plugin '{entry.name}' ({entry.value}"
        dist = getattr(entry, "dist", None)
        where += f", from package '{dist.name}')" if dist is not None else ")"
        try:
            value = entry.load()
            target = value if isinstance(value, Target) else value()
        except Exception as err:  # a plugin's bug: report it, never a traceback
            errors.append(f"{where} failed to load: {type(err).__name__}: {err}")
            continue
        if not isinstance(target, Target):
            errors.append(f"{where} gave {type(target).__name__}, not a lamina Target")
            continue
        if target.name != entry.name:
            errors.append(f"{where} gave a target named '{target.name}', not '{entry.name}'")
            continue
        found.append((entry.name, target))
    return found


def target_names() -> tuple[str, ...]:
    """Every registered target name (built-ins, Python registrations, entry points)."""
    _ensure_loaded()
    return tuple(_REGISTERED)


def get_target(name: str) -> Target:
    """The target called `name` (or an alias); unknown names get a did-you-mean."""
    _ensure_loaded()
    name = ALIASES.get(name, name)
    if name not in _REGISTERED:
        known = sorted(_REGISTERED)
        raise TargetError(
            f"unknown target '{name}'{_did_you_mean(name, known)} "
            f"(known targets: {', '.join(known)})"
        )
    return _REGISTERED[name]


def check_target_available(name: str) -> None:
    """Raise TargetError if target `name` cannot be used here (e.g. a missing library)."""
    target = get_target(name)
    if target.requires is not None:
        target.requires()


def _did_you_mean(name: str, known: Sequence[str] | Mapping[str, object]) -> str:
    close = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def claimed_targets(module: ModuleOp) -> dict[str, Operation]:
    """Target name → the first op the module says it claimed (`lamina.codegen`)."""
    from lamina.dialects.lamina import codegen_target

    claims: dict[str, Operation] = {}
    for op in module.walk():
        target = codegen_target(op)
        if target is not None:
            claims.setdefault(target, op)
    return claims


def preferred_layout(op: Operation, targets: Sequence[str]) -> Attribute | None:
    """The layout (`#lamina.constraint`) the first of `targets` with an opinion prefers for `op`.

    For the layouts work (`plan-layouts`): targets are asked in order.
    """
    for name in targets:
        hook = get_target(name).layout_preference
        choice = hook(op) if hook is not None else None
        if choice is not None:
            return choice
    return None


def check_target_options(name: str, options: dict[str, object]) -> None:
    """Refuse an option that is not a code-generation fact (a `CpuFacts` field),
    or a value no CPU has."""
    facts = {f.name for f in fields(CpuFacts)}
    for key, value in options.items():
        if key not in facts:
            raise TargetError(
                f"target '{name}': unknown option '{key}' "
                f"(code-generation options: {', '.join(sorted(facts))})"
            )
        if key == "vector_bits" and value not in (128, 256, 512):
            raise TargetError(f"target '{name}': vector_bits must be 128, 256 or 512, not {value}")
        if isinstance(value, int) and value <= 0:
            raise TargetError(f"target '{name}': option '{key}' must be positive, not {value}")


def op_facts(op: Operation) -> CpuFacts:
    """The CPU facts of the module `op` is in (`module_facts`; the host's
    when `op` is not in a module)."""
    top = op.get_toplevel_object()
    return module_facts(top if isinstance(top, ModuleOp) else ModuleOp([]))


def module_facts(module: ModuleOp, device_kind: str = "cpu") -> CpuFacts:
    """Code-generation facts for `device_kind` as the module records them.

    The first target of that kind in `lamina.targets` (default: cpu), with
    the options of its `#lamina.target<"name", {vector_bits = 256 : i64}>`
    applied over the target's own: schedules and layouts read these, so a
    module carries the facts it was compiled for.
    """
    from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, IntegerAttr

    from lamina.dialects.lamina import TARGETS_ATTR_NAME, TargetAttr

    targets = module.attributes.get(TARGETS_ATTR_NAME)
    chosen = TargetAttr("cpu")
    if isinstance(targets, DictionaryAttr) and device_kind in targets.data:
        value = targets.data[device_kind]
        chosen = value.data[0] if isinstance(value, ArrayAttr) else value
    if not isinstance(chosen, TargetAttr):
        raise TargetError(
            f"'{TARGETS_ATTR_NAME}' entry for '{device_kind}' is not a #lamina.target"
        )
    target = get_target(chosen.target_name.data)
    options = {}
    for key, attr in chosen.options.data.items():
        if not isinstance(attr, IntegerAttr):
            raise TargetError(f"target option '{key}' must be an integer, got {attr}")
        options[key] = attr.value.data
    merged = Target(target.name, target.device_kind, options={**target.options, **options})
    return merged.facts


__all__ = [
    "ENTRY_POINT_GROUP",
    "HOOK_POINTS",
    "Target",
    "TargetError",
    "check_target_available",
    "check_target_options",
    "claimed_targets",
    "get_target",
    "module_facts",
    "preferred_layout",
    "register_target",
    "target_names",
    "unregister_target",
]
