"""The error globals of generated code, read from Python without importing xDSL.

`backends/llvm/errors.py` makes compiled code record a failure (a NULL
allocation, an out-of-bounds access) in `lamina_error` (the address of a
message template) and `lamina_error_values` (up to four values it quotes).
This module holds their names and the reader, so a disk-cache hit, which
never imports xDSL, can still report what the code recorded.
"""

from __future__ import annotations

import ctypes

ERROR_SYMBOL = "lamina_error"
VALUES_SYMBOL = "lamina_error_values"
MAX_VALUES = 4


def engine_error_addresses(engine) -> tuple[int, int] | None:
    """Addresses of the error globals in a JIT `engine`, or None if it has none."""
    flag = engine.get_global_value_address(ERROR_SYMBOL)
    if not flag:
        return None
    return flag, engine.get_global_value_address(VALUES_SYMBOL)


def pending_error(addresses: tuple[int, int] | None) -> str | None:
    """The message of the error the last call recorded (clearing it), or None."""
    if addresses is None:
        return None
    flag = ctypes.c_int64.from_address(addresses[0])
    if not flag.value:
        return None
    template = ctypes.string_at(flag.value).decode(errors="replace")
    values = (ctypes.c_int64 * MAX_VALUES).from_address(addresses[1])
    args = list(values)
    flag.value = 0
    for i in range(MAX_VALUES):
        values[i] = 0
    try:
        return template.format(*args)
    except (IndexError, ValueError, KeyError):
        return template
