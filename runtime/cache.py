"""The disk cache of compiled code: a model compiled once loads in milliseconds.

`lamina.compile` spends its time in the pipeline (Python) and in LLVM. Both
are pure functions of the input and the compiler, so the result, the
object code MCJIT produced plus the entry signatures `Executable.run`
needs, is stored on disk under a key that covers everything it depends on:

* the input exactly as given (the program text, or the printed module),
  and the file name it is reported under;
* the pipeline (its name and its expansion for the targets, hooks
  included), the targets, the compile options;
* the versions of Lamina (its version *and* a digest of its source files,
  so an edited checkout never reuses a stale entry), xDSL, llvmlite and
  LLVM, the host CPU and its features, the Python version.

A hit skips parsing, every pass and LLVM: it reads one file, checks it and
hands the object code to a fresh MCJIT engine (`load`). The key is the
compiler's business (driver/cache_key.py); this module, part of the
runtime, stores and loads entries under it.

Where: `$LAMINA_CACHE_DIR` if set, else the platform's per-user cache
directory (`$XDG_CACHE_HOME/lamina` or `~/.cache/lamina` on Linux,
`~/Library/Caches/lamina` on macOS, `%LOCALAPPDATA%\\lamina\\cache` on
Windows). `LAMINA_CACHE=0` (or `off`, `false`, `no`) disables it; so does
`lamina.compile(..., cache=False)`; `lamina.cache.clear()` empties it.

Safety: an entry is written to a temporary file in the cache directory and
renamed into place with `os.replace` (atomic on POSIX and Windows), so two
processes compiling the same model at once each write a whole entry and
readers never see a torn one. Every entry ends with a SHA-256 of its
contents; an entry that does not check out (truncated, corrupt, from
another format version) is ignored, deleted and rebuilt, never loaded. A
failed compile writes nothing. A cache that cannot be written (read-only
directory, full disk) only costs the next compile its speed.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CACHE_ENV = "LAMINA_CACHE"
"""Environment variable: `0`/`off`/`false`/`no` disables the disk cache."""

CACHE_DIR_ENV = "LAMINA_CACHE_DIR"
"""Environment variable: the cache directory (default: the platform's per-user cache)."""

FORMAT = b"LAMINA-CACHE-1\n"
"""First bytes of every entry; a new layout gets a new number (old entries are then misses)."""

SUFFIX = ".lxc"
_DIGEST = 32  # bytes of SHA-256 at the end of an entry


def enabled() -> bool:
    """Is the disk cache on (the default), per `LAMINA_CACHE`?"""
    return os.environ.get(CACHE_ENV, "1").strip().lower() not in ("0", "off", "false", "no")


def directory() -> Path:
    """The cache directory: `$LAMINA_CACHE_DIR`, else the platform's per-user cache dir."""
    explicit = os.environ.get(CACHE_DIR_ENV)
    if explicit:
        return Path(explicit).expanduser()
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "lamina"
    if os.name == "nt":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "lamina" / "cache"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "lamina"


def entries() -> list[Path]:
    """The entry files in the cache directory."""
    folder = directory()
    return sorted(folder.glob(f"*{SUFFIX}")) if folder.is_dir() else []


def clear() -> int:
    """Delete every cache entry (and stray temporary files); return how many entries."""
    removed = 0
    for path in entries():
        removed += _unlink(path)
    folder = directory()
    if folder.is_dir():
        for stray in folder.glob(f".*{SUFFIX}.tmp"):
            _unlink(stray)
    return removed


def _unlink(path: Path) -> bool:
    try:
        path.unlink()
        return True
    except OSError:
        return False


# ---------------------------------------------------------------------------
# Entries
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """What a hit needs: the object code and the description of its entry points."""

    object_code: bytes
    metadata: dict
    """JSON-able: entry signatures, functions that are not entries, compile timings."""


def _path(cache_key: str) -> Path:
    return directory() / f"{cache_key}{SUFFIX}"


def encode(entry: Entry) -> bytes:
    """FORMAT, metadata length, metadata (JSON), object code, SHA-256 of all of it."""
    meta = json.dumps(entry.metadata, sort_keys=True).encode()
    body = FORMAT + len(meta).to_bytes(8, "little") + meta + entry.object_code
    return body + hashlib.sha256(body).digest()


def decode(data: bytes) -> Entry | None:
    """The entry in `data`, or None if it is not a whole, intact entry of this format."""
    if len(data) < len(FORMAT) + 8 + _DIGEST or not data.startswith(FORMAT):
        return None
    body, digest = data[:-_DIGEST], data[-_DIGEST:]
    if hashlib.sha256(body).digest() != digest:
        return None
    start = len(FORMAT) + 8
    size = int.from_bytes(body[len(FORMAT) : start], "little")
    if start + size > len(body):
        return None
    try:
        metadata = json.loads(body[start : start + size])
    except ValueError:
        return None
    if not isinstance(metadata, dict):
        return None
    return Entry(body[start + size :], metadata)


def read(cache_key: str) -> Entry | None:
    """The intact entry stored under `cache_key`, or None (a bad entry is deleted)."""
    path = _path(cache_key)
    try:
        data = path.read_bytes()
    except OSError:
        return None
    entry = decode(data)
    if entry is None:
        _unlink(path)  # corrupt or foreign: rebuilt by this compile
    return entry


def write(cache_key: str, entry: Entry) -> Path | None:
    """Store `entry` atomically (temporary file + os.replace); None if the cache is not writable."""
    folder = directory()
    tmp_name = None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(
            prefix=f".{cache_key[:16]}-", suffix=f"{SUFFIX}.tmp", dir=folder
        )
        with os.fdopen(fd, "wb") as out:
            out.write(encode(entry))
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp_name, _path(cache_key))
        return _path(cache_key)
    except OSError:
        if tmp_name is not None:
            _unlink(Path(tmp_name))
        return None


# ---------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------


@dataclass(eq=False)
class LoadedCode:
    """Object code from the cache, linked into this process by MCJIT (keep it alive while called).

    The part of `codegen.CompiledModule`'s interface that `Executable` uses.
    """

    key: str
    engine: Any
    """llvmlite's MCJIT engine (llvmlite is imported by `load` only)."""
    target_machine: Any
    signatures: Mapping[str, object]
    object_code: bytes

    def get_function_address(self, name: str) -> int:
        if name not in self.signatures:
            raise KeyError(f"no function '{name}' in the cached code")
        address = self.engine.get_function_address(name)
        if not address:
            raise KeyError(f"function '{name}' has no address in the cached code")
        return address


def load(cache_key: str, object_code: bytes, names: Iterable[str], *, runtime: bool) -> LoadedCode:
    """Link `object_code` into this process; raises RuntimeError if LLVM cannot.

    `runtime`: the code calls libgomp or registered libraries, so they are
    loaded first by `native_setup.ensure_native` (the caller registers
    libraries); it imports neither xDSL nor the code generator. Otherwise,
    the common case, only LLVM's native target is initialized: libc and libm
    are already in the process. The target machine only serves the engine's
    (empty) module; the object was compiled for this CPU (it is in the key).
    """
    import llvmlite.binding as llvm

    if runtime:
        from lamina.runtime.native_setup import ensure_native

        ensure_native()
    else:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
    tm = llvm.Target.from_default_triple().create_target_machine(jit=True)
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), tm)
    engine.add_object_file(llvm.ObjectFileRef.from_data(object_code))
    engine.finalize_object()
    engine.run_static_constructors()
    return LoadedCode(cache_key, engine, tm, dict.fromkeys(names), object_code)


__all__ = [
    "CACHE_DIR_ENV",
    "LoadedCode",
    "load",
    "CACHE_ENV",
    "Entry",
    "clear",
    "directory",
    "enabled",
    "entries",
    "read",
    "write",
]
