"""Pass contracts (docs/design.md §2/§4).

Every Lamina pass is an xDSL `ModulePass` that also declares:

* `phases`   — the phases it may run in (the pass manager refuses others);
* `produces` — for a transition pass, the phase it leaves the module in;
* `requires` — flags of passes that must have run before (documentation, and
  the hint the pass manager prints when a pass is refused);
* `illegal_ops` — for a transition pass, op names (or `dialect.*` patterns)
  that must be gone when it finishes; survivors are reported at the op
  (xDSL's greedy rewriter does not check legality).

The docstring states the pass's contract: a one-line summary, then
`Input invariant:`, `Output IR:` and `Invariants:` (docs/internals.md).
`docs/passes.md` is generated from these declarations.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from lamina.core.diagnostics import Diagnostic, DiagnosticError
from lamina.core.walk import preorder
from lamina.dialects.lamina import Phase

ALL_PHASES: frozenset[Phase] = frozenset(Phase)
PRE_BUILD: frozenset[Phase] = frozenset({Phase.INGESTION, Phase.OPTIMIZATION, Phase.LOWERING})


class LaminaPass(ModulePass):
    """Base class of Lamina passes: an xDSL ModulePass with a phase contract."""

    phases: ClassVar[frozenset[Phase]] = ALL_PHASES
    produces: ClassVar[Phase | None] = None
    requires: ClassVar[tuple[str, ...]] = ()
    illegal_ops: ClassVar[tuple[str, ...]] = ()
    verify_after: ClassVar[bool] = False
    """Verify the module after this pass even when a compile verifies only at phase
    boundaries (core/pass_manager.py): for a pass whose output the next passes trust
    without checking, where a malformed op would otherwise surface far away."""

    @classmethod
    def is_transition(cls) -> bool:
        return cls.produces is not None

    @classmethod
    def summary(cls) -> str:
        doc = (cls.__doc__ or "").strip()
        return doc.splitlines()[0].strip() if doc else ""

    @classmethod
    def check_legality(cls, module: ModuleOp) -> None:
        """Fail, at each offending op, if an op listed in `illegal_ops` survived."""
        if not cls.illegal_ops:
            return
        verdicts: dict[str, bool] = {}  # per op name: a lowered module has few, many times
        leftovers = []
        for op in preorder(module):
            illegal = verdicts.get(op.name)
            if illegal is None:
                illegal = verdicts[op.name] = _matches(op, cls.illegal_ops)
            if illegal and op is not module:
                leftovers.append(op)
        if leftovers:
            raise DiagnosticError(
                Diagnostic(
                    f"{cls.name}: failed to legalize operation '{op.name}' "
                    f"(it must not survive {cls.name})",
                    op,
                )
                for op in leftovers
            )


def _matches(op: Operation, patterns: Iterable[str]) -> bool:
    for pattern in patterns:
        if pattern.endswith(".*"):
            if op.name.startswith(pattern[:-1]):
                return True
        elif op.name == pattern:
            return True
    return False


def phase_list(phases: Iterable[Phase]) -> str:
    return ", ".join(p.label for p in sorted(phases))
