"""The stable import path of the Target API for plugins: `lamina.backends.targets`.

Third-party targets import `Target`, `register_target`, ... from here (the
path docs/extending.md has always shown); the model itself lives in
`lamina.target` (target/registry.py), below the passes. Everything here is
that package's API, re-exported unchanged.
"""

from lamina.target import *  # noqa: F403 - the re-export is this module's purpose
from lamina.target import __all__  # noqa: F401
