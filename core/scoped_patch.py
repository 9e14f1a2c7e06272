"""A class attribute of xDSL replaced while at least one `with` block asks for it.

The verifier swaps two of xDSL's methods for faster ones that give the same
answers (`core/symbols.py`: the symbol lookup; `core/isolation.py`: the
`IsolatedFromAbove` check) and only while it runs, so nothing outside a
verification sees them. Verifications nest (a pass verifying a function inside
a module being verified) and may run on several threads at once, so the uses
are counted under a lock: the original is back once the last block ends.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

_INHERITED = object()
"""The original of an attribute the owner inherits (`ScopedPatch.original`)."""


class ScopedPatch:
    """`owner.name` becomes `replacement` inside `with patch.active():` blocks."""

    def __init__(self, owner: type, name: str, replacement: object) -> None:
        self.owner, self.name, self.replacement = owner, name, replacement
        # as stored: a staticmethod stays one; _INHERITED: the owner has none of its
        # own (a base class's is used), and is given none back at the end
        self.original = owner.__dict__.get(name, _INHERITED)
        self._lock = threading.Lock()
        self._depth = 0

    @contextmanager
    def active(self) -> Iterator[None]:
        with self._lock:
            if self._depth == 0:
                setattr(self.owner, self.name, self.replacement)
            self._depth += 1
        try:
            yield
        finally:
            with self._lock:
                self._depth -= 1
                if self._depth == 0:
                    if self.original is _INHERITED:
                        delattr(self.owner, self.name)
                    else:
                        setattr(self.owner, self.name, self.original)


__all__ = ["ScopedPatch"]
