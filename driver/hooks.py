"""Target hooks in the pipeline: which targets a module uses, and hook passes under contract.

Two things the pipeline (`driver/pipeline.py`) needs from the targets, kept
here so that the pipeline itself only expands hook points:

* `module_targets(module, targets)`: the targets in use. Given explicitly
  (`--target`, `lamina.compile(targets=...)`), they are recorded in the
  module's `lamina.targets`; otherwise the module's own `lamina.targets` is
  read (default: cpu). A target that claimed ops in the module
  (`lamina.codegen`) is in use too; an unknown one is an error at the op.
  So the module alone says how to rebuild its pipeline (docs/extending.md).
  A target given as `NAME{option=N ...}` (`--target 'cpu{vector_bits=256}'`)
  is recorded with those options (`#lamina.target<"cpu", {vector_bits =
  256 : i64}>`), which override the host's code-generation facts.

  `lamina.targets` is a dictionary from device kind to the targets that
  compile it: one `#lamina.target<"cpu">`, or an array when a library
  target adds to the code generator of its kind
  (`{cpu = [#lamina.target<"cpu">, #lamina.target<"cblas">]}`).

* `wrap_hook_passes`: a hook pass runs under the same phase contract as a
  built-in pass, and more visibly: one registered at a hook point whose
  phase it cannot run in is refused when the pipeline is built, and one
  that leaves the IR invalid or breaks a phase invariant is reported right
  after it runs, naming the pass, the target, the hook point and the
  invariant. A plain xDSL `ModulePass` (no Lamina phase contract) is
  accepted in every phase before build.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    i64,
)
from xdsl.ir import Attribute
from xdsl.passes import ModulePass

from lamina.core.diagnostics import Diagnostic, DiagnosticError
from lamina.core.pass_base import phase_list
from lamina.dialects.lamina import TARGETS_ATTR_NAME, Phase, TargetAttr
from lamina.target.hooks import HookPass

if TYPE_CHECKING:
    from lamina.driver.pipeline import PipelineEntry


# ---------------------------------------------------------------------------
# The targets of a module
# ---------------------------------------------------------------------------


def read_module_targets(module: ModuleOp) -> list[str] | None:
    """Target names in the module's `lamina.targets`, or None if it has none."""
    attr = module.attributes.get(TARGETS_ATTR_NAME)
    if attr is None:
        return None
    names: list[str] = []
    if isinstance(attr, DictionaryAttr):
        for value in attr.data.values():
            items = value.data if isinstance(value, ArrayAttr) else (value,)
            for item in items:
                if not isinstance(item, TargetAttr):
                    break
                names.append(item.target_name.data)
            else:
                continue
            break
        else:
            return names
    raise DiagnosticError(
        Diagnostic(
            f"'{TARGETS_ATTR_NAME}' must be a dictionary from device kind to "
            "#lamina.target (or an array of them), got " + str(attr),
            module,
        )
    )


def split_target_spec(spec: str) -> tuple[str, dict[str, int | str]]:
    """`"cpu{vector_bits=256 cores=1}"` → `("cpu", {"vector_bits": 256, "cores": 1})`.

    The options are spelled like a pass's (`-p 'schedule{vector_bits=256}'`),
    separated by spaces or commas; each is an integer code-generation fact,
    except `isa`, a name (`cpu{isa=avx2}`, checked by `check_target_options`).
    """
    from lamina.target.registry import ISA_OPTION

    name, brace, rest = spec.partition("{")
    options: dict[str, int | str] = {}
    if not brace:
        return spec.strip(), options
    if not rest.endswith("}"):
        raise _bad_spec(spec, "the options do not end with '}'")
    for item in rest[:-1].replace(",", " ").split():
        key, eq, value = item.partition("=")
        if key == ISA_OPTION and eq and value:
            options[key] = value
            continue
        try:
            options[key] = int(value)
        except ValueError:
            raise _bad_spec(spec, f"option '{item}' is not KEY=INTEGER") from None
        if not eq or not key:
            raise _bad_spec(spec, f"option '{item}' is not KEY=INTEGER")
    return name.strip(), options


def _option_attr(value: int | str) -> Attribute:
    """A target option as recorded in `#lamina.target` (`isa = "avx2"`, `cores = 1 : i64`)."""
    return StringAttr(value) if isinstance(value, str) else IntegerAttr(value, i64)


def _bad_spec(spec: str, why: str) -> DiagnosticError:
    return DiagnosticError(
        Diagnostic(f"bad target '{spec}': {why} (expected NAME or NAME{{option=N ...}})")
    )


def _module_target_options(module: ModuleOp) -> dict[str, dict[str, Attribute]]:
    """The options each target of the module's `lamina.targets` carries."""
    attr = module.attributes.get(TARGETS_ATTR_NAME)
    found: dict[str, dict[str, Attribute]] = {}
    if isinstance(attr, DictionaryAttr):
        for value in attr.data.values():
            for item in value.data if isinstance(value, ArrayAttr) else (value,):
                if isinstance(item, TargetAttr) and item.options.data:
                    found[item.target_name.data] = dict(item.options.data)
    return found


def write_module_targets(
    module: ModuleOp, names: Sequence[str], options: dict[str, dict[str, Attribute]] | None = None
) -> None:
    """Record `names` in `lamina.targets`, grouped by the targets' device kinds,
    each with its `options` (none for a target `options` does not name)."""
    from lamina.target.registry import get_target

    by_kind: dict[str, list[TargetAttr]] = {}
    for name in names:
        target = get_target(name)
        attr = TargetAttr(target.name, (options or {}).get(target.name))
        by_kind.setdefault(target.device_kind, []).append(attr)
    module.attributes[TARGETS_ATTR_NAME] = DictionaryAttr(
        {kind: attrs[0] if len(attrs) == 1 else ArrayAttr(attrs) for kind, attrs in by_kind.items()}
    )


def module_targets(module: ModuleOp, targets: Sequence[str] | None = None) -> list[str]:
    """The targets compiling `module` (see the module docstring); records explicit ones."""
    from lamina.driver.pipeline import resolve_targets
    from lamina.target.registry import claimed_targets, get_target

    given = bool(targets)
    # Given targets carry their own options (checked by resolve_targets);
    # otherwise the module's stay.
    names = resolve_targets(targets if given else read_module_targets(module))
    options: dict[str, dict[str, Attribute]] = _module_target_options(module)
    if given:
        specs = [split_target_spec(t) for t in targets or ()]
        options = {
            get_target(name).name: {k: _option_attr(v) for k, v in opts.items()}
            for name, opts in specs
        }
    for claimer, op in claimed_targets(module).items():
        try:
            target = get_target(claimer)
        except DiagnosticError as err:
            raise DiagnosticError(
                Diagnostic(f"'{op.name}' op is claimed by {err.diagnostics[0].message}", op)
            ) from None
        if getattr(target, "lower", None) is None:
            raise DiagnosticError(
                Diagnostic(
                    f"'{op.name}' op is claimed by target '{target.name}', which does not "
                    "lower claimed ops (it has no claim hook)",
                    op,
                )
            )
        if target.name not in names:
            names += resolve_targets([target.name])
    if given or names != resolve_targets(None):
        write_module_targets(module, names, options)
    return names


# ---------------------------------------------------------------------------
# Hook passes
# ---------------------------------------------------------------------------


def wrap_hook_passes(passes: Sequence[ModulePass], entry: PipelineEntry) -> list[ModulePass]:
    """`passes` of a hook entry as HookPasses; one that cannot run at that point is refused."""
    from lamina.driver.pipeline import PipelineError

    point, target = _hook_of(entry.origin)
    wrapped = []
    replay = entry.spec if entry.instance is not None else None
    for pass_ in passes:
        hook = HookPass(pass_, target, point, replay)
        if getattr(pass_, "produces", None) is not None:
            raise PipelineError(
                f"{hook.origin} is a transition pass; hooks may not change the phase"
            )
        if entry.stage not in hook.phases:
            raise PipelineError(
                f"{hook.origin} cannot run there: the hook point is in phase "
                f"'{Phase(entry.stage).label}', the pass runs in: {phase_list(hook.phases)}"
            )
        wrapped.append(hook)
    return wrapped


def _hook_of(origin: str) -> tuple[str, str]:
    """(point, target) from a PipelineEntry origin `hook <point> (target <t>)`."""
    point, _, rest = origin.removeprefix("hook ").partition(" (target ")
    return point, rest.rstrip(")")


__all__ = [
    "module_targets",
    "read_module_targets",
    "wrap_hook_passes",
]
