"""The target registry: what a compile target is and where targets come from.

A target (docs/extending.md; after TVM's target-hooks design) customises compilation without a code
path of its own through the compiler: it contributes `module → module`
passes at named **hook points** of the one standard pipeline
(`claim`, `optimization`, `lowering`, `build`: `HOOK_POINTS`, see
`driver/pipeline.py`), and may
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
  callable returning one. An entry point is loaded when its target is
  first named, so a broken plugin fails only the compiles that name it
  (reported with the plugin's name, its package and its error) and is
  listed as broken by `lamina-opt --list-targets`.

Every user error here is a `TargetError` (a diagnostic, exit status 1).
"""

from __future__ import annotations

import difflib
import functools
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute, Operation
from xdsl.passes import ModulePass

from lamina.core.diagnostics import DiagnosticError
from lamina.dialects.lamina import Phase
from lamina.target.cpu_facts import CpuFacts, check_isa, host_cpu_facts, isa_cpu_facts
from lamina.target.function_knobs import function_knobs
from lamina.target.schedule_knobs import KNOB_NAMES, LIST_KNOBS, ScheduleKnobs, check_knob

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

ISA_OPTION = "isa"
"""The one target option whose value is a name, not an integer: the instruction set
(`cpu{isa=avx2}`; the values: `cpu_facts.ISA_NAMES`)."""

ALIASES = {"host": "cpu"}
"""Other names `--target` accepts for a registered target."""


class TargetError(DiagnosticError):
    """An unknown target, a broken plugin, a bad hook, a refused claim."""


HookItem = str | ModulePass
"""A hook pass: a `-p` spec (`"cse"`, `"my-pass{opt=1}"`) or a pass instance."""


@dataclass(frozen=True)
class Target:
    """A compile target: a device kind, its hooks, its claims and its code-generation facts.

    `hooks` maps a hook point (`claim`, `optimization`, `lowering`,
    `build`; `HOOK_POINTS`) to the passes inserted there. A target that
    claims ops gives `claim` (a
    predicate on graph ops and `graph.func`s) and `lower` (called once per
    claimed op or function in phase lowering, it must replace it, e.g. by a
    `graph.call_loop` of a kernel it adds to the module); the generic passes
    `claim-ops{target=T}` and `lower-claimed{target=T}` run them at the
    `claim` and `lowering` hook points. `layout_preference` answers
    the layouts work (`plan-layouts`): the `#lamina.constraint` this target
    prefers for an op's result, or None. `options` override the host's
    code-generation facts (`vector_bits=256`, `cores=1`, ...; see
    `target/cpu_facts.py`; `module_facts` applies them after those of the
    target this one extends). `requires`, if given, raises `TargetError`
    when something the target needs (a library) is missing. A `claim`,
    `lower`, `layout_preference` or `requires` of a plugin that raises is
    a diagnostic naming the target and its package (`call_target_hook`).
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
        """The code-generation facts of the target's `isa` (default: the host CPU's)
        with this target's other `options` applied."""
        isa = str(self.options.get(ISA_OPTION, "host"))
        overrides = tuple(
            sorted(
                (k, v) for k, v in self.options.items() if k not in KNOB_NAMES and k != ISA_OPTION
            )
        )
        try:
            return _facts_for(host_cpu_facts(), isa, overrides)
        except TypeError:  # an unhashable option value: computed each time
            return isa_cpu_facts(isa).replace(**dict(overrides))

    @property
    def knobs(self) -> ScheduleKnobs:
        """The tuning knobs for `facts`, with this target's knob `options` applied."""
        overrides = tuple(sorted((k, v) for k, v in self.options.items() if k in KNOB_NAMES))
        try:
            return _knobs_for(self.facts, overrides)
        except TypeError:  # an unhashable option value: computed each time
            return ScheduleKnobs.for_cpu(self.facts).replace(**dict(overrides))

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
_PENDING: dict[str, Any] | None = None
"""Entry points of `lamina.targets` not loaded yet (None: not discovered yet)."""
_BROKEN: dict[str, str] = {}
"""Target name -> why its entry point failed to load (reported when the target is named)."""
_PACKAGES: dict[str, str] = {}
"""Target name -> the distribution whose entry point gave it."""
_REGISTERED_BY: dict[str, str] = {}
"""Target name -> the module that called `register_target` (diagnostics, cache keys)."""
_BUILTIN = ("cpu", "cblas")
_LOCK = threading.RLock()  # re-entrant: a plugin's import may register targets itself


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
    pending = _discover()
    with _LOCK:
        taken = target.name in _REGISTERED and _REGISTERED[target.name] is not target
        if (taken or target.name in pending) and not replace:
            raise TargetError(f"a target named '{target.name}' is already registered")
        pending.pop(target.name, None)
        _BROKEN.pop(target.name, None)
        _REGISTERED[target.name] = target
        _REGISTERED_BY[target.name] = sys._getframe(1).f_globals.get("__name__", "")
    return target


def unregister_target(name: str) -> None:
    """Forget a target registered from Python (tests, scripts)."""
    _REGISTERED.pop(name, None)
    _REGISTERED_BY.pop(name, None)


def _discover() -> dict[str, Any]:
    """Register the built-ins and list the `lamina.targets` entry points, once.

    Entry points are only listed here: each is loaded when its target is
    first named (`get_target`), so a broken plugin fails the compiles that
    use it and no other.
    """
    global _PENDING
    if _PENDING is not None:
        return _PENDING
    from importlib.metadata import entry_points

    with _LOCK:
        if _PENDING is None:
            for target in _builtin_targets():
                _REGISTERED.setdefault(target.name, target)
            pending: dict[str, Any] = {}
            for entry in entry_points(group=ENTRY_POINT_GROUP):
                if entry.name not in _REGISTERED:
                    pending.setdefault(entry.name, entry)  # the first on sys.path wins
            _PENDING = pending
    return _PENDING


def _load_entry_point(name: str) -> None:
    """Load the entry point of target `name` (if any); a broken one raises TargetError."""
    pending = _discover()
    with _LOCK:
        if name in _BROKEN:
            raise TargetError(_BROKEN[name])
        entry = pending.pop(name, None)
        if entry is None:
            return
        dist = getattr(entry, "dist", None)
        where = f"target plugin '{name}' ({entry.value}"
        where += f", from package '{dist.name}')" if dist is not None else ")"
        try:
            value = entry.load()
            target = value if isinstance(value, Target) else value()
        except Exception as err:  # a plugin's bug: report it, never a traceback
            _BROKEN[name] = f"{where} failed to load: {type(err).__name__}: {err}"
        else:
            if not isinstance(target, Target):
                _BROKEN[name] = f"{where} gave {type(target).__name__}, not a lamina Target"
            elif target.name != name:
                _BROKEN[name] = f"{where} gave a target named '{target.name}', not '{name}'"
            else:
                _REGISTERED.setdefault(name, target)
                if dist is not None:
                    _PACKAGES[name] = dist.name
        if name in _BROKEN:
            raise TargetError(_BROKEN[name])


def target_names() -> tuple[str, ...]:
    """Every known target name: built-ins, Python registrations and entry points
    (loaded or not, broken or not)."""
    pending = _discover()
    return tuple(dict.fromkeys([*_REGISTERED, *pending, *_BROKEN]))


def get_target(name: str) -> Target:
    """The target called `name` (or an alias); unknown names get a did-you-mean.

    A target from an entry point is loaded here, the first time it is named.
    """
    name = ALIASES.get(name, name)
    if name not in _REGISTERED:
        _load_entry_point(name)
    if name not in _REGISTERED:
        known = sorted(target_names())
        raise TargetError(
            f"unknown target '{name}'{_did_you_mean(name, known)} "
            f"(known targets: {', '.join(known)})"
        )
    return _REGISTERED[name]


def target_origin(name: str) -> str:
    """Where target `name` comes from, for diagnostics: its package, or the module
    that registered it from Python."""
    if name in _PACKAGES:
        return f"from package '{_PACKAGES[name]}'"
    if name in _BUILTIN and _REGISTERED.get(name) is not None:
        return "built into Lamina"
    if _REGISTERED_BY.get(name):
        return f"registered by module '{_REGISTERED_BY[name]}'"
    return "registered from Python"


def python_target_modules() -> dict[str, list[str]]:
    """Target name -> the modules defining its code, for every target registered from
    Python (not built in, not from an installed package: the disk cache keys those
    by their package, `runtime/cache.py`)."""
    found = {}
    for name, target in list(_REGISTERED.items()):
        if name in _BUILTIN or name in _PACKAGES:
            continue
        code: list[Any] = [target.claim, target.lower, target.layout_preference, target.requires]
        code += [item for items in target.hooks.values() for item in items]
        modules = {
            type(item).__module__ if isinstance(item, ModulePass) else item.__module__
            for item in code
            if item is not None and not isinstance(item, str)
        }
        modules.add(_REGISTERED_BY.get(name))
        found[name] = sorted(m for m in modules if isinstance(m, str) and m)
    return found


@dataclass(frozen=True)
class TargetListing:
    """One line of `lamina-opt --list-targets`."""

    name: str
    origin: str
    description: str = ""
    extends: str | None = None
    error: str | None = None
    """Why the target cannot be used (a broken entry point), or None."""


def list_targets() -> list[TargetListing]:
    """Every known target, loading each entry point; a broken one is listed with its error."""
    listing = []
    for name in sorted(target_names()):
        try:
            target = get_target(name)
        except TargetError as err:
            listing.append(TargetListing(name, "entry point", error=err.diagnostics[0].message))
            continue
        listing.append(TargetListing(name, target_origin(name), target.description, target.extends))
    return listing


def call_target_hook(target: Target, hook: str, *args: Any) -> Any:
    """Call `target`'s `hook` (`claim`, `lower`, ...) on `args`.

    A plugin's hook that raises is the plugin's bug: it becomes a
    diagnostic naming the target and its package (exit status 1), at the
    op it was called on, like a failing hook pass. A diagnostic the hook
    raises itself passes through; a built-in target's failure keeps its
    traceback (a bug in Lamina).
    """
    from xdsl.utils.exceptions import DiagnosticException

    from lamina.core.diagnostics import Diagnostic

    function = getattr(target, hook)
    try:
        return function(*args)
    except DiagnosticException:
        raise
    except Exception as err:
        if target.name in _BUILTIN and _REGISTERED.get(target.name) is target:
            raise
        op = next((a for a in args if isinstance(a, Operation)), None)
        on = f" on '{op.name}'" if op is not None else ""
        raise TargetError(
            Diagnostic(
                f"target '{target.name}' ({target_origin(target.name)}) failed in its "
                f"`{hook}`{on}: {type(err).__name__}: {err}",
                op,
            )
        ) from None


def check_target_available(name: str) -> None:
    """Raise TargetError if target `name` cannot be used here (e.g. a missing library)."""
    target = get_target(name)
    if target.requires is not None:
        call_target_hook(target, "requires")


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
        target = get_target(name)
        hook = target.layout_preference
        choice = call_target_hook(target, "layout_preference", op) if hook is not None else None
        if choice is not None:
            return choice
    return None


def check_target_options(name: str, options: dict[str, object]) -> None:
    """Refuse an option that is neither a code-generation fact (a `CpuFacts`
    field) nor a tuning knob (a `ScheduleKnobs` field), or a value no CPU has."""
    facts = {f.name for f in fields(CpuFacts)} - {"cpu_name", "features"}
    for key, value in options.items():
        if key == ISA_OPTION:
            why = check_isa(value)
            if why is not None:
                raise TargetError(f"target '{name}': unknown isa '{value}' (isa {why})")
            continue
        if isinstance(value, str):
            raise TargetError(f"target '{name}': option '{key}' must be an integer, not '{value}'")
        if key in KNOB_NAMES and key in LIST_KNOBS:
            raise TargetError(
                f"target '{name}': option '{key}' is a list of integers, which a target "
                "option cannot spell; set it per kernel in a tuning-records file "
                "(`--records`, docs/tuning.md)"
            )
        if key in KNOB_NAMES:
            why = check_knob(key, value)
            if why is not None:
                raise TargetError(f"target '{name}': option '{key}' {why}, not {value}")
            continue
        if key not in facts:
            raise TargetError(
                f"target '{name}': unknown option '{key}' "
                f"(code-generation options: {', '.join(sorted({*facts, ISA_OPTION}))}; "
                f"tuning knobs: {', '.join(sorted(KNOB_NAMES))})"
            )
        if key == "vector_bits" and value not in (128, 256, 512):
            raise TargetError(f"target '{name}': vector_bits must be 128, 256 or 512, not {value}")
        if isinstance(value, int) and value <= 0:
            raise TargetError(f"target '{name}': option '{key}' must be positive, not {value}")
    isa, bits = options.get(ISA_OPTION), options.get("vector_bits")
    if isinstance(isa, str) and isinstance(bits, int):
        widest = isa_cpu_facts(isa).vector_bits
        if bits > widest:
            raise TargetError(
                f"target '{name}': vector_bits={bits} is wider than isa={isa}'s {widest}-bit vectors"
            )


def op_facts(op: Operation) -> CpuFacts:
    """The CPU facts of the module `op` is in (`module_facts`; the host's
    when `op` is not in a module)."""
    top = op.get_toplevel_object()
    return module_facts(top if isinstance(top, ModuleOp) else ModuleOp([]))


def op_knobs(op: Operation) -> ScheduleKnobs:
    """The tuning knobs of the module `op` is in (`module_knobs`), with the
    `lamina.knobs` of its function applied (target/function_knobs.py)."""
    top = op.get_toplevel_object()
    return function_knobs(op, module_knobs(top if isinstance(top, ModuleOp) else ModuleOp([])))


def module_knobs(module: ModuleOp, device_kind: str = "cpu") -> ScheduleKnobs:
    """The tuning knobs for `device_kind` as the module records them: the
    defaults for its facts, with its target's knob options applied."""
    return _module_target(module, device_kind).knobs


def module_facts(module: ModuleOp, device_kind: str = "cpu") -> CpuFacts:
    """Code-generation facts for `device_kind` as the module records them.

    Every target of that kind in `lamina.targets` (default: cpu) applies,
    in order, its own `options` and then those its
    `#lamina.target<"name", {vector_bits = 256 : i64}>` records, over the
    host's facts. The targets are recorded base first (`cpu`, then a
    target that extends it), so the target the user named has the last
    word: `--target 'mine{cores=3}'` reaches schedules and layouts even
    though a target `mine` that extends `cpu` compiles through it. A module
    carries the facts it was compiled for.
    """
    return _module_target(module, device_kind).facts


@functools.lru_cache(maxsize=64)
def _facts_for(host: CpuFacts, isa: str, overrides: tuple[tuple[str, Any], ...]) -> CpuFacts:
    """`isa_cpu_facts(isa)` with `overrides`, once per distinct triple (`host`, the
    detected facts `isa_cpu_facts` starts from, is part of the key)."""
    return isa_cpu_facts(isa).replace(**dict(overrides))


@functools.lru_cache(maxsize=64)
def _knobs_for(facts: CpuFacts, overrides: tuple[tuple[str, Any], ...]) -> ScheduleKnobs:
    """`ScheduleKnobs.for_cpu(facts)` with `overrides`, computed once per distinct pair.

    A pure function of its (frozen, hashable) arguments; `op_knobs` asks for it
    hundreds of times per compile (every loop `lower-to-llvm` hints, every kernel
    `schedule` plans), and evaluating the derived defaults' formulas took about
    0.3 ms each time (0.3 s of a serial MobileNet-V3 compile)."""
    return ScheduleKnobs.for_cpu(facts).replace(**dict(overrides))


def _module_target(module: ModuleOp, device_kind: str) -> Target:
    """The module's target of `device_kind` with the options it records."""
    from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, IntegerAttr, StringAttr

    from lamina.dialects.lamina import TARGETS_ATTR_NAME, TargetAttr

    targets = module.attributes.get(TARGETS_ATTR_NAME)
    chosen: tuple[Attribute, ...] = (TargetAttr("cpu"),)
    if isinstance(targets, DictionaryAttr) and device_kind in targets.data:
        value = targets.data[device_kind]
        chosen = tuple(value.data) if isinstance(value, ArrayAttr) else (value,)
    options: dict[str, Any] = {}
    for attr in chosen:
        if not isinstance(attr, TargetAttr):
            raise TargetError(
                f"'{TARGETS_ATTR_NAME}' entry for '{device_kind}' is not a #lamina.target"
            )
        target = get_target(attr.target_name.data)
        options.update(target.options)
        for key, option in attr.options.data.items():
            if key == ISA_OPTION and isinstance(option, StringAttr):
                options[key] = option.data
                continue
            if not isinstance(option, IntegerAttr):
                raise TargetError(f"target option '{key}' must be an integer, got {option}")
            options[key] = option.value.data
    named = get_target(chosen[-1].target_name.data)  # type: ignore[union-attr]
    check_target_options(named.name, options)
    return Target(named.name, named.device_kind, options=options)


__all__ = [
    "ENTRY_POINT_GROUP",
    "HOOK_POINTS",
    "ISA_OPTION",
    "Target",
    "TargetError",
    "check_target_available",
    "call_target_hook",
    "check_target_options",
    "claimed_targets",
    "get_target",
    "list_targets",
    "module_facts",
    "module_knobs",
    "op_knobs",
    "preferred_layout",
    "python_target_modules",
    "register_target",
    "target_names",
    "target_origin",
    "unregister_target",
]
