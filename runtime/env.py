"""Lamina's environment variables (`LAMINA_*`), read in one way everywhere.

Every place that reads a `LAMINA_*` variable goes through `env_flag`, `env_int`
or `env_path` (docs/environment.md lists each variable and its accepted values).
A value that is not one of them is a user's typo: it must be seen, but a tool
must not stop with a traceback over it, so it is a warning (`LaminaEnvWarning`,
once per variable and value, naming the variable, the value and what is
accepted), and the variable then has its default, as if it were unset. Unset
or empty (after stripping blanks) is the default too. (The test suite turns
warnings into errors: a test that sets a bad value expects the warning.)

In the runtime layer (imports nothing but the standard library), so every layer
may use it.
"""

from __future__ import annotations

import os
import threading
import warnings
from typing import overload

TRUE = ("1", "on", "true", "yes")
FALSE = ("0", "off", "false", "no")
"""The spellings of a flag (any case, blanks around ignored)."""


class LaminaEnvWarning(UserWarning):
    """A `LAMINA_*` environment variable has a value Lamina does not accept (it is
    then ignored: the variable has its default)."""


_warned: set[tuple[str, str]] = set()
_lock = threading.Lock()


def _raw(name: str) -> str | None:
    """The variable's value stripped of blanks; None when unset or empty."""
    value = os.environ.get(name)
    if value is None or not value.strip():
        return None
    return value.strip()


def _reject(name: str, value: str, accepted: str, default: object) -> None:
    """Warn (once per variable and value) that `value` is not accepted."""
    key = (name, value)
    with _lock:
        if key in _warned:
            return
    warnings.warn(
        f"{name}={value!r} is not accepted ({accepted}); using the default ({_spelled(default)})",
        LaminaEnvWarning,
        stacklevel=3,
    )
    with _lock:  # after the warning: one turned into an error is raised again next time
        _warned.add(key)


def _spelled(default: object) -> str:
    """A default as the user would write it: `on`/`off` for a flag."""
    if default is None:
        return "as if unset"
    if isinstance(default, bool):
        return "on" if default else "off"
    return str(default)


@overload
def env_flag(name: str, default: bool) -> bool: ...
@overload
def env_flag(name: str, default: None) -> bool | None: ...
def env_flag(name: str, default: bool | None) -> bool | None:
    """A yes/no variable: `1`/`on`/`true`/`yes` or `0`/`off`/`false`/`no` (any case);
    unset, empty or anything else (with a `LaminaEnvWarning`): `default`."""
    value = _raw(name)
    if value is None:
        return default
    lowered = value.lower()
    if lowered in TRUE:
        return True
    if lowered in FALSE:
        return False
    _reject(name, value, f"one of {', '.join(TRUE + FALSE)}", default)
    return default


@overload
def env_int(
    name: str, default: int, *, minimum: int | None = None, maximum: int | None = None
) -> int: ...
@overload
def env_int(
    name: str, default: None, *, minimum: int | None = None, maximum: int | None = None
) -> int | None: ...
def env_int(
    name: str, default: int | None, *, minimum: int | None = None, maximum: int | None = None
) -> int | None:
    """A whole-number variable within [`minimum`, `maximum`] (either may be open);
    unset, empty, not a whole number, or out of range (with a `LaminaEnvWarning`):
    `default`."""
    value = _raw(name)
    if value is None:
        return default
    try:
        number = int(value, 10)
    except ValueError:
        number = None
    if number is not None and (minimum is None or number >= minimum):
        if maximum is None or number <= maximum:
            return number
    if minimum is not None and maximum is not None:
        accepted = f"a whole number from {minimum} to {maximum}"
    elif minimum is not None:
        accepted = f"a whole number >= {minimum}"
    elif maximum is not None:
        accepted = f"a whole number <= {maximum}"
    else:
        accepted = "a whole number"
    _reject(name, value, accepted, default)
    return default


def env_path(name: str) -> str | None:
    """A path (any string is accepted, as it is); None when unset or only blanks."""
    value = os.environ.get(name)
    return value if value is not None and value.strip() else None


__all__ = ["FALSE", "TRUE", "LaminaEnvWarning", "env_flag", "env_int", "env_path"]
