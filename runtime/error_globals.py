"""The error globals of generated code, read from Python without importing xDSL.

`backends/llvm/errors.py` makes compiled code record a failure (a NULL
allocation, an out-of-bounds access) in `lamina_error` (the address of a
message template) and `lamina_error_values` (up to four values it quotes).
This module holds their names and the reader, so a disk-cache hit, which
never imports xDSL, can still report what the code recorded.

The globals are one per loaded module, not one per call: a failure in one
thread makes a concurrent call of the same module stop early too (it checks
the flag after every call that may fail). `CallErrors` keeps each call's
report honest from Python: every call that ran while an error was recorded
raises it, none returns half-computed results as if they were whole.
"""

from __future__ import annotations

import ctypes
import threading

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
    # Only the flag is cleared. Every record stores its values before its flag, so
    # whoever sees a flag set reads values some record wrote; zeroing them here
    # raced with a record being written in another thread (its values cleared
    # after it stored them, before its flag: "index (0)", an index no call used).
    flag.value = 0
    try:
        return template.format(*args)
    except (IndexError, ValueError, KeyError):
        return template


CONCURRENT = (
    "{message} (recorded while this call ran in another thread: this call may have "
    "stopped early too, its results are undefined)"
)


SHARED = (
    "{message} (recorded while this call ran beside other calls in other threads: "
    "it may be this call's or theirs, this call's results are undefined)"
)


_by_addresses: dict[tuple[int, int], CallErrors] = {}
_registry_lock = threading.Lock()


def call_errors(addresses: tuple[int, int]) -> CallErrors:
    """The one `CallErrors` of the module whose globals are at `addresses` (every
    `Executable` of one loaded module must see every call of it)."""
    with _registry_lock:
        errors = _by_addresses.get(addresses)
        if errors is None:
            errors = _by_addresses[addresses] = CallErrors(addresses)
        return errors


class CallErrors:
    """Which calls an error recorded in a module's globals concerns.

    A call registers when it starts (`begin`) and, when it ends (`end`),
    reads and clears the globals under a lock. An error found there was
    recorded by this call or by one still running (one that ended earlier
    would have found and cleared it), and the flag stops any call that
    checks it: so the ending call raises it (saying it may be another
    call's when others still run, `SHARED`), and every call still running
    is marked to raise it too (`CONCURRENT`). A call that ended just before
    the error was recorded may so report it as well: a spurious error,
    never a silent wrong result.
    """

    def __init__(self, addresses: tuple[int, int]):
        self.addresses = addresses
        self._lock = threading.Lock()
        self._running: dict[int, str | None] = {}
        self._next = 0

    def begin(self) -> int:
        with self._lock:
            token = self._next
            self._next += 1
            self._running[token] = None
            return token

    def end(self, token: int) -> str | None:
        """The error the call `token` must raise, if any."""
        with self._lock:
            marked = self._running.pop(token)
            message = pending_error(self.addresses)
            if message is None:
                return marked
            shared = bool(self._running)  # calls still running: it may be theirs
            for other, earlier in self._running.items():
                if earlier is None:
                    self._running[other] = CONCURRENT.format(message=message)
            return SHARED.format(message=message) if shared else message
