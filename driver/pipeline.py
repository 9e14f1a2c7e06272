"""Named pass pipelines (docs/design.md §4), shared by `lamina-opt` and `lamina.compile`.

The default pipeline is a list of stages, one per phase. Each stage lists the
passes that run in its phase, the target hook points (docs/design.md §6) where the
compile targets' passes are inserted, and the transition pass that leaves
the phase::

    ingestion     normalize                                   -> lift-lambdas
    optimization  canonicalize, cse, specialize-closures, fold-constants, plan-devices,
                  plan-layouts, fuse-ops, [hooks: optimization] -> legalize
    lowering      [hooks: lowering], lower-te, schedule, simplify,
                  plan-memory, lower-graph, [hooks: build]    -> lower-to-llvm
    build         (codegen is done by the backend, not by a pass)

Nothing is skipped silently: `format_pipeline` shows the expanded pipeline
and marks passes that are not registered (yet); building the pass list for a
pipeline that names a missing pass raises `PipelineError` naming it. The one
exception is a `Planned` step: a pass of docs/design.md §4 that a later issue
implements (e.g. `plan-devices`). It runs as soon as its pass is registered;
until then `--print-pipeline` shows it as `[planned: not implemented yet]`
and the pipeline runs without it (the default pipeline is complete without
these optimizations; see docs/passes.md).

Targets contribute hook passes through the module `lamina.target.registry`
(the target registry), which provides `target_names() -> Sequence[str]` and
`get_target(name)` returning a target whose `hook_passes(point)` (or, for a
plain object, `hooks[point]`) lists the passes of hook point `optimization`,
`lowering` or `build`: `-p` specs (`str`) or pass instances (`ModulePass`,
which need not be in the registry). `driver/hooks.py` wraps them so that they
run under the phase contracts and are named with their target on failure,
and records the targets a module is compiled for in its `lamina.targets`.
Without the registry module the known targets are `cpu` and `host`, with
no hooks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from lamina.core.diagnostics import DiagnosticError
from lamina.dialects.lamina import Phase, get_phase


class PipelineError(DiagnosticError):
    """An unknown pipeline or target, or a pipeline naming an unregistered pass."""


@dataclass(frozen=True)
class HookPoint:
    """A place where compile targets insert their own passes (docs/design.md §6)."""

    name: str
    shown_when_empty: bool = True
    """`--print-pipeline` lists the point even when no target uses it."""


@dataclass(frozen=True)
class Planned:
    """A docs/design.md §4 pass implemented by a later issue: runs once registered, else skipped."""

    name: str

    @property
    def registered(self) -> bool:
        from lamina.core.registry import pass_names

        return self.name in pass_names()


@dataclass(frozen=True)
class Stage:
    phase: Phase
    """The phase every step of this stage runs in."""
    steps: tuple[str | ModulePass | HookPoint | Planned, ...]
    """`-p` specs, pass instances (need not be registered), hook points, planned passes."""
    exit: str | ModulePass | None
    """The transition pass that moves the module to the next phase."""


DEFAULT_STAGES: tuple[Stage, ...] = (
    Stage(Phase.INGESTION, ("normalize",), "lift-lambdas"),
    Stage(
        Phase.OPTIMIZATION,
        (
            "canonicalize",
            "cse",
            "specialize-closures",
            Planned("fold-constants"),
            HookPoint("claim", shown_when_empty=False),  # before fusion/layouts see claimed ops
            Planned("plan-devices"),
            Planned("plan-layouts"),
            Planned("fuse-ops"),
            HookPoint("optimization"),
        ),
        "legalize",
    ),
    Stage(
        Phase.LOWERING,
        (
            HookPoint("lowering"),
            "lower-te",
            Planned("schedule"),
            Planned("simplify"),
            "plan-memory",
            "lower-graph",
            HookPoint("build"),
        ),
        "lower-to-llvm",
    ),
    Stage(Phase.BUILD, (), None),
)

PIPELINES: dict[str, tuple[Stage, ...]] = {"default": DEFAULT_STAGES}
"""Registered named pipelines; `register_pipeline` adds more."""

DEFAULT_TARGETS = ("cpu",)


def register_pipeline(name: str, stages: Sequence[Stage]) -> None:
    PIPELINES[name] = tuple(stages)


@dataclass(frozen=True)
class PipelineEntry:
    """One pass of an expanded pipeline."""

    spec: str
    """The `-p` text of the pass (name plus options)."""
    stage: Phase
    origin: str
    """`pipeline`, `transition`, or `hook <point> (target <t>)`."""
    instance: ModulePass | None = None
    """The pass itself, when a target hook supplied an instance rather than a spec."""

    @property
    def name(self) -> str:
        return self.spec.split("{", 1)[0]

    @property
    def available(self) -> bool:
        from lamina.core.registry import pass_names

        return self.instance is not None or self.name in pass_names()


# ---------------------------------------------------------------------------
# Targets and their hooks
# ---------------------------------------------------------------------------


def known_target_names() -> tuple[str, ...]:
    """Targets `--target` accepts: lamina.backends' registry if present, else cpu/host."""
    registry = _target_registry()
    if registry is not None:
        names = registry.get("names")
        if names is not None:
            return tuple(names())
    return ("cpu", "host")


def _target_registry() -> dict[str, Callable] | None:
    """The functions of `lamina.target.registry`, if the backend provides that module."""
    import importlib

    try:
        module = importlib.import_module("lamina.target.registry")
    except ModuleNotFoundError as err:
        if err.name in ("lamina.target.registry",):
            return None
        raise
    found = {}
    for key, candidates in (
        ("names", ("target_names", "available_targets", "list_targets")),
        ("get", ("get_target",)),
        ("check", ("check_target_available",)),
        ("check_options", ("check_target_options",)),
    ):
        for candidate in candidates:
            if callable(getattr(module, candidate, None)):
                found[key] = getattr(module, candidate)
                break
    return found


def resolve_targets(targets: Iterable[str] | None) -> list[str]:
    """`targets` (default: cpu), each checked against the registered targets.

    With the target registry, an unknown name gets a did-you-mean, a target
    whose library is missing says what to install, and `host` means `cpu`.
    """
    from lamina.driver.hooks import split_target_spec

    specs = [split_target_spec(t) for t in targets] if targets else []
    targets = [name for name, _ in specs] if specs else list(DEFAULT_TARGETS)
    registry = _target_registry()
    if registry is not None and "get" in registry:
        resolved: list[str] = []
        for target, options in specs or [(t, {}) for t in targets]:
            if "check" in registry:
                registry["check"](target)  # raises TargetError (a diagnostic)
            if options and "check_options" in registry:
                registry["check_options"](target, options)
            found = registry["get"](target)
            base = getattr(found, "extends", None)
            for name in ([base] if base else []) + [getattr(found, "name", target)]:
                if name not in resolved:
                    resolved.append(name)
        return resolved
    known = known_target_names()
    for target in targets:
        if target not in known:
            raise PipelineError(f"unknown target '{target}' (known targets: {', '.join(known)})")
    return targets


def hook_entries(targets: Iterable[str], point: str, stage: Phase) -> list[PipelineEntry]:
    """The passes `targets` register at hook `point`, in target order."""
    from lamina.core.pass_manager import pass_spec_string

    registry = _target_registry()
    if not registry or "get" not in registry:
        return []
    entries = []
    for target_name in targets:
        target = registry["get"](target_name)
        if hasattr(target, "hook_passes"):  # lamina.target.registry.Target: claim passes too
            items = target.hook_passes(point)
        else:
            items = (getattr(target, "hooks", None) or {}).get(point, ())
        for item in items:
            origin = f"hook {point} (target {target_name})"
            if isinstance(item, ModulePass):
                entries.append(PipelineEntry(pass_spec_string(item), stage, origin, item))
            else:
                entries.append(PipelineEntry(str(item), stage, origin))
    return entries


# ---------------------------------------------------------------------------
# Expansion
# ---------------------------------------------------------------------------


def pipeline_entries(
    name: str,
    targets: Sequence[str] | None = None,
    *,
    start: Phase | None = None,
    stop: Phase | None = None,
) -> list[PipelineEntry]:
    """The expanded pipeline `name`: from phase `start` to the end of phase `stop`."""
    if name not in PIPELINES:
        raise PipelineError(f"unknown pipeline '{name}' (known pipelines: {', '.join(PIPELINES)})")
    targets = resolve_targets(targets)
    entries: list[PipelineEntry] = []
    for stage in PIPELINES[name]:
        if start is not None and stage.phase < start:
            continue
        if stop is not None and stage.phase > stop:
            break
        for step in stage.steps:
            if isinstance(step, HookPoint):
                entries += hook_entries(targets, step.name, stage.phase)
            elif isinstance(step, Planned):
                if step.registered:
                    entries.append(PipelineEntry(step.name, stage.phase, "pipeline"))
            else:
                entries.append(_entry(step, stage.phase, "pipeline"))
        if stage.exit is not None and (stop is None or stage.phase < stop):
            entries.append(_entry(stage.exit, stage.phase, "transition"))
    return entries


def pipeline_passes(
    name: str,
    targets: Sequence[str] | None = None,
    *,
    start: Phase | None = None,
    stop: Phase | None = None,
) -> list[ModulePass]:
    """Instantiated passes of pipeline `name`; a missing pass raises PipelineError."""
    from lamina.core.pass_manager import PipelineSpecError, parse_pass_pipeline

    entries = pipeline_entries(name, targets, start=start, stop=stop)
    missing = [e.name for e in entries if not e.available]
    if missing:
        raise PipelineError(
            f"pipeline '{name}' needs pass(es) that are not registered: {', '.join(missing)} "
            "(see `lamina-opt --print-pipeline`)"
        )
    passes: list[ModulePass] = []
    try:
        for entry in entries:
            made = [entry.instance] if entry.instance else parse_pass_pipeline(entry.spec)
            if entry.origin.startswith("hook"):
                from lamina.driver.hooks import wrap_hook_passes

                made = wrap_hook_passes(made, entry)
            passes += made
    except PipelineSpecError as err:
        raise PipelineError(f"pipeline '{name}': {err}") from None
    return passes


def passes_for_module(
    name: str, module: ModuleOp, targets: Sequence[str] | None = None, stop: Phase | None = None
) -> list[ModulePass]:
    """The pipeline's passes from the module's current phase on (earlier stages are done).

    The targets are recorded in (or read from) the module's `lamina.targets`
    (see `driver/hooks.py`), so the module carries what rebuilds its pipeline.
    """
    from lamina.driver.hooks import module_targets

    targets = module_targets(module, targets)
    return pipeline_passes(name, targets, start=get_phase(module), stop=stop)


def format_pipeline(name: str, targets: Sequence[str] | None = None) -> str:
    """The expanded pipeline by phase, hook points in place, unregistered passes marked."""
    entries = pipeline_entries(name, targets)
    targets = resolve_targets(targets)
    lines = [f"// pipeline '{name}' (targets: {', '.join(targets)})"]
    for stage in PIPELINES[name]:
        lines.append(f"{stage.phase.label}:")
        for step in stage.steps:
            if isinstance(step, HookPoint):
                hooked = hook_entries(targets, step.name, stage.phase)
                if not hooked and not step.shown_when_empty:
                    continue
                lines.append(f"  [hooks: {step.name}]{'' if hooked else '   (none)'}")
                lines += [_format_entry(e, indent=4) for e in hooked]
            elif isinstance(step, Planned) and not step.registered:
                lines.append(f"  {step.name}   [planned: not implemented yet, skipped]")
            elif isinstance(step, Planned):
                lines.append(_format_entry(PipelineEntry(step.name, stage.phase, "pipeline")))
            else:
                lines.append(_format_entry(_entry(step, stage.phase, "pipeline")))
        if stage.exit is not None:
            lines.append(_format_entry(_entry(stage.exit, stage.phase, "transition")))
        if not stage.steps and stage.exit is None:
            lines.append("  (codegen by the backend)")
    missing = sum(not e.available for e in entries)
    lines += ["", f"-p '{','.join(e.spec for e in entries)}'"]
    if missing:
        lines.append(f"// {missing} pass(es) not registered yet")
    return "\n".join(lines) + "\n"


def _entry(step: str | ModulePass, stage: Phase, origin: str) -> PipelineEntry:
    """A stage step as an entry: a `-p` spec, or a pass instance used as it is."""
    if isinstance(step, ModulePass):
        from lamina.core.pass_manager import pass_spec_string

        return PipelineEntry(pass_spec_string(step), stage, origin, step)
    return PipelineEntry(step, stage, origin)


def _format_entry(entry: PipelineEntry, indent: int = 2) -> str:
    text = " " * indent + entry.spec
    if entry.origin == "transition":
        text += f"   (transition to {Phase(entry.stage + 1).label})"
    elif entry.origin != "pipeline":
        text += f"   ({entry.origin})"
    return text + ("" if entry.available else "   [not registered]")
