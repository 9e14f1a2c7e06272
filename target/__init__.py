"""The target model: what a compile target is, the host CPU's code-generation facts,
and the built-in targets (`cpu`, `cblas`).

It sits below `passes/` (which read a module's targets and facts) and above
`core/` and `dialects/`. This package's names are the Target API plugin
authors use (docs/extending.md); `lamina.backends.targets` re-exports them
under the path earlier plugins import.
"""

from lamina.target.registry import (
    ENTRY_POINT_GROUP,
    HOOK_POINTS,
    Target,
    TargetError,
    check_target_available,
    check_target_options,
    claimed_targets,
    get_target,
    module_facts,
    preferred_layout,
    register_target,
    target_names,
    unregister_target,
)

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
