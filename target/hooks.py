"""Hook passes: a target's pass at a hook point, run under the phase contract.

A target registers passes at hook points (`claim`, `optimization`,
`lowering`, `build`: `HOOK_POINTS`); the pipeline (driver/pipeline.py)
wraps each in a `HookPass` so that it runs under the same contract as a
built-in pass and a failure names the pass, the target and the hook point.
`hook_pass` finds one by position, which is how `target-hook` replays a pass
the target gave as an instance (passes/target_hook.py): this module sits in
the target layer so that the pass can use it.
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from lamina.core.diagnostics import Diagnostic, DiagnosticError
from lamina.core.pass_base import PRE_BUILD, LaminaPass
from lamina.core.pass_manager import module_diagnostic, parse_pass_pipeline
from lamina.target.registry import HOOK_POINTS, get_target


class HookPass(LaminaPass):
    """A target's pass at a hook point: the inner pass, plus who put it there.

    Its name is the inner pass's, so diagnostics and timings name it; its
    `-p` spec is the inner pass's too, except for a pass the target gave as
    an instance (`replay`): that one is spelled `target-hook{...}`, which
    `-p` can run again (`passes/target_hook.py`). Its phases are the inner
    pass's (all phases before build for a plain xDSL pass).
    """

    def __init__(self, inner: ModulePass, target: str, point: str, replay: str | None = None):
        self.inner = inner
        self.target = target
        self.point = point
        self.replay = replay
        # Per instance (ModulePass declares them per class): the inner pass's.
        self.name = inner.name  # pyright: ignore[reportAttributeAccessIssue]
        self.phases = inner.phases if isinstance(inner, LaminaPass) else PRE_BUILD  # pyright: ignore[reportAttributeAccessIssue]

    def __repr__(self) -> str:
        return f"HookPass({self.inner!r}, target={self.target!r}, point={self.point!r})"

    def spec(self, *, include_default: bool = False):
        if self.replay is not None:
            from xdsl.utils.arg_spec import parse_pipeline

            return next(iter(parse_pipeline(self.replay)))
        return self.inner.spec(include_default=include_default)

    @property
    def origin(self) -> str:
        return f"hook pass '{self.name}' of target '{self.target}' (hook point {self.point})"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from lamina.core.diagnostics import verify_module
        from lamina.core.pass_manager import as_diagnostics
        from lamina.core.phase_invariants import check_phase

        try:
            self.inner.apply(ctx, op)
            verify_module(op)
        except DiagnosticException as err:
            diagnostics = as_diagnostics(err, op)
            diagnostics[0].notes.append(f"in {self.origin}")
            raise DiagnosticError(diagnostics) from None
        except Exception as err:
            if type(self.inner).__module__.startswith("lamina."):
                raise  # a bug in Lamina's own pass: keep the traceback
            raise DiagnosticError(  # a plugin's bug: name the plugin, as for a failing import
                Diagnostic(f"{self.origin} failed: {type(err).__name__}: {err}", op)
            ) from None
        broken = check_phase(op)
        if broken:
            for diagnostic in broken:
                diagnostic.message = f"{self.origin} broke an invariant: {diagnostic.message}"
            raise DiagnosticError(broken)


def replay_spec(target: str, point: str, index: int) -> str:
    """The `-p` spec that runs the pass at `index` of `target`'s hook `point` again."""
    return f'target-hook{{target="{target}" point="{point}" index={index}}}'


def hook_pass(target: str, point: str, index: int, module: ModuleOp) -> HookPass:
    """The pass at `index` of `target`'s hook `point`, as the pipeline runs it."""

    if point not in HOOK_POINTS:
        raise DiagnosticError(
            module_diagnostic(
                module, f"unknown hook point '{point}' (hook points: {', '.join(HOOK_POINTS)})"
            )
        )
    items = get_target(target).hook_passes(point)
    if not 0 <= index < len(items):
        raise DiagnosticError(
            module_diagnostic(
                module,
                f"target '{target}' has {len(items)} pass(es) at hook point '{point}', "
                f"no pass #{index}",
            )
        )
    item = items[index]
    if isinstance(item, ModulePass):
        return HookPass(item, target, point, replay_spec(target, point, index))
    (inner,) = parse_pass_pipeline(str(item))
    return HookPass(inner, target, point)


__all__ = ["HookPass", "hook_pass", "replay_spec"]
