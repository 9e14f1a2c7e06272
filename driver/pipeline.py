"""Named pass pipelines (docs/design.md §4), shared by `lamina-opt` and `lamina.compile`.

The default pipeline is a list of stages, one per phase. Each stage lists the
passes that run in its phase, the target hook points (docs/design.md §6) where the
compile targets' passes are inserted, and the transition pass that leaves
the phase::

    ingestion     normalize                                   -> lift-lambdas
    optimization  canonicalize, cse, specialize-closures, fold-constants, [hooks: claim],
                  plan-devices, plan-layouts, fuse-ops, [hooks: optimization] -> legalize
    lowering      [hooks: lowering], lower-te, schedule, simplify,
                  plan-memory, lower-graph, concat-in-place, [hooks: build]
                                                              -> lower-to-llvm
    build         (codegen is done by the backend, not by a pass)

Nothing is skipped silently: `format_pipeline` shows the expanded pipeline
and marks passes that are not registered; building the pass list for a
pipeline that names a missing pass raises `PipelineError` naming it.

Targets contribute hook passes through the target registry
(target/registry.py): `get_target(name).hook_passes(point)` lists the
passes of hook point `claim`, `optimization`, `lowering` or `build`: `-p`
specs (`str`) or pass instances (`ModulePass`, which need not be in the
registry; the pipeline spells those `target-hook{target=T point=P index=N}`,
so that `-p` can replay them). `driver/hooks.py` wraps them so that they run
under the phase contracts and are named with their target on failure, and
records the targets a module is compiled for in its `lamina.targets`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from lamina.core.diagnostics import DiagnosticError
from lamina.dialects.lamina import Phase, get_phase
from lamina.target.registry import check_target_available, check_target_options, get_target


class PipelineError(DiagnosticError):
    """An unknown pipeline or target, or a pipeline naming an unregistered pass."""


@dataclass(frozen=True)
class HookPoint:
    """A place where compile targets insert their own passes (docs/design.md §6)."""

    name: str
    shown_when_empty: bool = True
    """`--print-pipeline` lists the point even when no target uses it."""


@dataclass(frozen=True)
class Stage:
    phase: Phase
    """The phase every step of this stage runs in."""
    steps: tuple[str | ModulePass | HookPoint, ...]
    """`-p` specs, pass instances (need not be registered), hook points."""
    exit: str | ModulePass | None
    """The transition pass that moves the module to the next phase."""


DEFAULT_STAGES: tuple[Stage, ...] = (
    Stage(Phase.INGESTION, ("normalize",), "lift-lambdas"),
    Stage(
        Phase.OPTIMIZATION,
        (
            "specialize-batch",  # first: every later pass sees static bodies only
            "canonicalize",
            "cse",
            "specialize-closures",
            "fold-constants",
            HookPoint("claim", shown_when_empty=False),  # before fusion/layouts see claimed ops
            "plan-devices",
            "plan-layouts",
            "fuse-ops",
            HookPoint("optimization"),
        ),
        "legalize",
    ),
    Stage(
        Phase.LOWERING,
        (
            HookPoint("lowering"),
            "lower-te",
            "schedule",
            "simplify",
            "plan-memory",
            "lower-graph",
            "concat-in-place",
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


def resolve_targets(targets: Iterable[str] | None) -> list[str]:
    """`targets` (default: cpu), each checked against the registered targets.

    An unknown name gets a did-you-mean, a target whose library is missing
    says what to install, and `host` means `cpu`. A library target brings
    the target it extends first (`cblas` → `cpu, cblas`).
    """
    from lamina.driver.hooks import split_target_spec

    specs = [split_target_spec(t) for t in targets] if targets else []
    resolved: list[str] = []
    for target, options in specs or [(t, {}) for t in DEFAULT_TARGETS]:
        check_target_available(target)  # raises TargetError (a diagnostic)
        if options:
            check_target_options(target, {**options})
        found = get_target(target)
        for name in ([found.extends] if found.extends else []) + [found.name]:
            if name not in resolved:
                resolved.append(name)
    return resolved


def hook_entries(targets: Iterable[str], point: str, stage: Phase) -> list[PipelineEntry]:
    """The passes `targets` register at hook `point`, in target order."""
    from lamina.target.hooks import replay_spec

    entries = []
    for target_name in targets:
        for index, item in enumerate(get_target(target_name).hook_passes(point)):
            origin = f"hook {point} (target {target_name})"
            if isinstance(item, ModulePass):  # replayable by position, not by its own name
                spec = replay_spec(target_name, point, index)
                entries.append(PipelineEntry(spec, stage, origin, item))
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

                # The same class, seen by pyright as `driver.pipeline` and
                # `lamina.driver.pipeline` (the repository root is the package).
                made = wrap_hook_passes(made, entry)  # pyright: ignore[reportArgumentType]
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
        text += f"   ({entry.origin}"
        text += f": pass '{entry.instance.name}')" if entry.instance is not None else ")"
    return text + ("" if entry.available else "   [not registered]")
