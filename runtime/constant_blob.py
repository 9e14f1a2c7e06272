"""Large constants outside LLVM: one 64-byte-aligned blob, its symbols mapped for the JIT.

The host unit of a split module (backends/kernel_split.py) declares each
large constant (a weight tensor) as an external symbol named by its
content, `__lamina_w_<sha256>`, instead of carrying its bytes through LLVM
IR text, the IR parser, the optimizer and the object file (for ResNet-18,
46 MB printed as 140 MB of `\\XX` escapes, parsed back, copied into the
object: several seconds). The bytes are laid out here, each at a 64-byte
aligned offset, and every symbol is registered with LLVM's process-wide
symbol table, where MCJIT resolves the host's references.

Symbols name content, so two models (or two compiles of one) that share a
tensor share one copy, and re-registering a symbol is a no-op. The code
only reads these constants; registered blobs live as long as the process
(as the JIT engines that use them do). A blob loaded from the disk cache is
registered where it is (`register_packed`): the cache maps its entry
read-only, so a cached model's weights are neither read nor copied until the
code touches them (as an artifact's weights file is mapped, runtime/artifact.py).

`pack`/`unpack` give the byte layout stored beside the object code in the
disk cache (runtime/cache.py): a JSON table of (symbol, offset, size) and
the blob itself.
"""

from __future__ import annotations

import json
import mmap
import threading
from collections.abc import Callable, Iterable, Mapping

import numpy as np

from lamina.runtime.env import env_flag

ALIGN = 64
HUGE_PAGE_BLOB = 4 << 20
"""Blobs of at least this many bytes are asked for transparent huge pages."""
HUGE_PAGES_ENV = "LAMINA_HUGE_PAGES"
"""`0`, `off`, `false` or `no`: no blob is asked for huge pages (docs/environment.md)."""

_lock = threading.Lock()
_registered: dict[str, int] = {}
"""Symbol → address of every constant registered in this process."""
_blobs: list[np.ndarray] = []
"""Keeps the memory of every registered blob alive (copies, or views of mapped entries)."""


def layout(sizes: dict[str, int]) -> tuple[dict[str, int], int]:
    """Offsets of the constants (in symbol order, each 64-byte aligned) and the total size."""
    offsets: dict[str, int] = {}
    end = 0
    for symbol in sorted(sizes):
        end = -(-end // ALIGN) * ALIGN
        offsets[symbol] = end
        end += sizes[symbol]
    return offsets, end


def _aligned_buffer(size: int) -> np.ndarray:
    """`size` bytes at a 64-byte-aligned address, ready to be written.

    On Linux an anonymous mapping populated by the kernel in one call (page
    aligned): NumPy asks large allocations for transparent huge pages, and
    where the kernel compacts memory for them on the first write (`defrag`
    set to `madvise`), filling ResNet-50's 100 MB of weights took 0.2-0.45 s
    instead of 0.08-0.1 s (docs/compile-speed.md).

    A blob of a network's weights (at least `HUGE_PAGE_BLOB` bytes) is
    asked for huge pages all the same: every run streams through all of
    them, and in 4 KiB pages each run walks the page tables once per page
    (EfficientNet-B0's 21 MB: 5000 pages, more than the TLB holds); on huge
    pages the AVX2 build ran EfficientNet-B0 in 0.97x and MobileNetV3-Large
    in 0.93x the time (docs/performance.md, "Weights on huge pages, clamp
    bounds as literals"). Its cost is the kernel's compaction on the first
    writes when memory is fragmented (once: 0.5 s for 100 MB, then 30 ms; a
    cold ResNet-50 compile took 0.2-1.3 s longer, docs/compile-speed.md),
    which `LAMINA_HUGE_PAGES=0` avoids."""
    populate = getattr(mmap, "MAP_POPULATE", 0)
    huge = getattr(mmap, "MADV_HUGEPAGE", None)
    if populate and huge is not None and size >= HUGE_PAGE_BLOB and _huge_pages_on():
        data = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        data.madvise(huge)
        return np.frombuffer(data, np.uint8)
    if populate and size:
        flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | populate
        return np.frombuffer(mmap.mmap(-1, size, flags=flags), np.uint8)
    raw = np.empty(size + ALIGN, dtype=np.uint8)
    start = -raw.ctypes.data % ALIGN
    return raw[start : start + size]


def _huge_pages_on() -> bool:
    """Whether `LAMINA_HUGE_PAGES` leaves large blobs on huge pages (the default)."""
    return env_flag(HUGE_PAGES_ENV, True)


class _Fill:
    """New constants laid out in a blob, on a thread (`thread`) or at once."""

    def __init__(self, constants: Mapping[str, bytes | memoryview], *, thread: bool) -> None:
        self.symbols = frozenset(constants)
        self._filled: tuple[np.ndarray, dict[str, int]] | None = None
        self._failed: BaseException | None = None
        self._worker = None
        if thread:
            self._worker = threading.Thread(
                target=self._fill, args=(constants,), name="lamina-weights"
            )
            self._worker.start()
        else:
            self._fill(constants)

    def _fill(self, constants: Mapping[str, bytes | memoryview]) -> None:
        try:
            self._filled = _filled(constants)
        except BaseException as err:  # noqa: BLE001 - raised where the caller waits
            self._failed = err

    def wait(self) -> None:
        """Until the blob is laid out (or failed)."""
        if self._worker is not None:
            self._worker.join()

    def finish(self) -> int:
        """Wait, register the blob's symbols, return its bytes (the fill's error: raised)."""
        self.wait()
        if self._failed is not None:
            raise self._failed
        assert self._filled is not None
        blob, offsets = self._filled
        _publish(blob, offsets)
        return blob.nbytes


_pending: list[_Fill] = []
"""Blobs being filled on a thread (`prefill`). Each is taken out (under `_lock`) by
exactly one caller: the `register` of any of its symbols, or the `discard` of the
compile that started it. Compiles on several threads each take their own."""


def register(constants: dict[str, bytes] | dict[str, memoryview]) -> int:
    """Make every constant's symbol resolvable by the JIT; return how many bytes were new.

    A `prefill`ed blob holding any of these symbols is waited for and registered first
    (its bytes count); if its filling failed, the constants are laid out here, where a
    failure is this call's own error. Prefills of other symbols are left alone."""
    with _lock:
        mine = [f for f in _pending if not f.symbols.isdisjoint(constants)]
        _pending[:] = [f for f in _pending if f.symbols.isdisjoint(constants)]
    done = 0
    for fill in mine:
        try:
            done += fill.finish()
        except Exception:  # noqa: BLE001, S112 - laid out again below, where it raises
            continue
    return done + register_soon(constants, thread=False)()


def prefill(constants: dict[str, bytes] | dict[str, memoryview]) -> _Fill | None:
    """Start laying out `constants` on a thread; the next `register` of any of them
    waits for it and registers them (None: nothing new; constants registered or being
    laid out already are left out). The compile driver calls it
    when code generation has split a module, before LLVM builds its units, and
    `discard`s what a build that failed before linking left (driver/lowering.py)."""
    with _lock:
        pending = set().union(*(f.symbols for f in _pending))
        new = {s: d for s, d in constants.items() if s not in _registered and s not in pending}
    if not new:
        return None
    fill = _Fill(new, thread=True)
    with _lock:
        _pending.append(fill)
    return fill


def discard(fills: Iterable[_Fill | None]) -> None:
    """Give up the `fills` no `register` took: their threads are waited for, their blobs
    dropped unregistered, and a failed fill's error with them (never raised: the
    caller's own error, if any, is the one to report)."""
    ours = [f for f in fills if f is not None]
    with _lock:
        _pending[:] = [f for f in _pending if all(f is not o for o in ours)]
    for fill in ours:
        fill.wait()


def register_soon(
    constants: dict[str, bytes] | dict[str, memoryview], *, thread: bool = True
) -> Callable[[], int]:
    """`register(constants)` in two halves: the new constants are laid out in a blob
    now, on a thread (`thread`), and the returned function waits for it, registers
    their symbols and returns how many bytes were new.

    The compile starts it before LLVM builds the kernels (`prefill`) and code
    generation's `register` finishes it before linking (backends/codegen.py): filling
    ResNet-50's 100 MB blob, and the kernel's compaction of memory for its huge pages
    (0.02-0.25 s, more where memory is fragmented), was the serial tail of a cold
    compile; NumPy copies without the GIL. Symbols another compile registered meanwhile
    keep their first address (a symbol names its content)."""
    with _lock:
        new = {s: data for s, data in constants.items() if s not in _registered}
    if not new:
        return lambda: 0
    return _Fill(new, thread=thread).finish


def _filled(constants: Mapping[str, bytes | memoryview]) -> tuple[np.ndarray, dict[str, int]]:
    """A blob holding `constants` at `layout`'s offsets, and those offsets."""
    offsets, size = layout({s: len(data) for s, data in constants.items()})
    blob = _aligned_buffer(size)
    for symbol, data in constants.items():
        blob[offsets[symbol] : offsets[symbol] + len(data)] = np.frombuffer(data, np.uint8)
    return blob, offsets


def _publish(blob: np.ndarray, offsets: dict[str, int]) -> None:
    """Register the symbols of `blob` (laid out at `offsets`) not registered yet."""
    import llvmlite.binding as llvm

    with _lock:
        _blobs.append(blob)
        base = blob.ctypes.data
        for symbol, offset in offsets.items():
            if symbol not in _registered:
                _registered[symbol] = base + offset
                llvm.add_symbol(symbol, base + offset)


def register_packed(data: bytes | memoryview) -> None:
    """`register` the constants of a `pack`ed blob, in place if it is 64-byte aligned
    (a mapped cache entry, runtime/cache.py): no byte is copied; else copied once."""
    table, blob = unpack(data)
    array = np.frombuffer(blob, np.uint8)
    base = array.ctypes.data
    if base % ALIGN:
        register({symbol: blob[offset : offset + size] for symbol, (offset, size) in table.items()})
        return
    import llvmlite.binding as llvm

    with _lock:
        new = {s: base + offset for s, (offset, _) in table.items() if s not in _registered}
        if not new:
            return
        _blobs.append(array)
        for symbol, address in new.items():
            _registered[symbol] = address
            llvm.add_symbol(symbol, address)


def pack(constants: dict[str, bytes]) -> bytes:
    """Table length, JSON table {symbol: [offset, size]}, then the 64-byte-aligned blob."""
    return b"".join(pack_pieces(constants))


def pack_pieces(constants: dict[str, bytes]) -> list[bytes]:
    """`pack(constants)` in pieces: the table, then each constant and the zeros that
    align the next, the constants' bytes not copied (runtime/cache.py writes them
    into an entry as they are)."""
    offsets, _ = layout({s: len(d) for s, d in constants.items()})
    table = json.dumps({s: [offsets[s], len(constants[s])] for s in sorted(constants)}).encode()
    head = len(table).to_bytes(8, "little") + table
    pieces = [head + b"\0" * (-len(head) % ALIGN)]
    end = 0
    for symbol in sorted(constants):
        if offsets[symbol] > end:
            pieces.append(b"\0" * (offsets[symbol] - end))
        pieces.append(constants[symbol])
        end = offsets[symbol] + len(constants[symbol])
    return pieces


def unpack(data: bytes | memoryview) -> tuple[dict[str, tuple[int, int]], memoryview]:
    """The table and the blob of `pack`'s output; ValueError if it is not one."""
    view = memoryview(data)
    size = int.from_bytes(view[:8], "little")
    raw = json.loads(bytes(view[8 : 8 + size]))
    if not isinstance(raw, dict):
        raise ValueError("constant table is not a mapping")
    start = 8 + size
    start += -start % ALIGN
    blob = view[start:]
    table = {str(s): (int(o), int(n)) for s, (o, n) in raw.items()}
    if any(o + n > len(blob) for o, n in table.values()):
        raise ValueError("constant table points past the blob")
    return table, blob


__all__ = [
    "ALIGN",
    "layout",
    "pack",
    "pack_pieces",
    "register",
    "prefill",
    "register_packed",
    "register_soon",
    "unpack",
]
