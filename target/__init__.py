"""The target model: what a compile target is, the host CPU's code-generation facts,
and the built-in targets (`cpu`, `cblas`).

It sits below `passes/` (which read a module's targets and facts) and above
`core/` and `dialects/`. This package's names are the Target API plugin
authors use (docs/extending.md); `lamina.backends.targets` re-exports them
under the path earlier plugins import.
"""

from lamina.target.registry import *  # noqa: F403 - the package's API is the registry's
from lamina.target.registry import __all__  # noqa: F401
