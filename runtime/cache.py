"""The disk cache of compiled code: a model compiled once loads in milliseconds.

`lamina.compile` spends its time in the pipeline (Python) and in LLVM. Both
are pure functions of the input and the compiler, so the result, the
object code MCJIT produced plus the entry signatures `Executable.run`
needs, is stored on disk under a key that covers everything it depends on
(the input, the pipeline, targets and options, the toolchain, the plugins:
driver/cache_key.py).

A hit skips parsing, every pass and LLVM: it reads one file, checks it and
hands the object code to a fresh MCJIT engine (`load`). The key is the
compiler's business (driver/cache_key.py); this module, part of the
runtime, stores and loads entries under it.
A module compiled in units (backends/kernel_split.py) stores all
their objects and its constant blob in one entry (`pack_objects`).

Kernels have entries of their own in `kernels/`, keyed by the kernel
(`read_kernel`/`write_kernel`, backends/kernel_cache.py): a model that shares
layers with one compiled before builds only its new kernels.

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

Trust: loading an entry runs its machine code, and its SHA-256 catches
corruption, not tampering. So the cache directory is created owner-only
(0700), and a directory or entry that another user owns, or that group or
others can write, is ignored with a one-line warning on stderr (the
compile goes on without it), as ssh and pip treat their files.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import stat
import sys
import tempfile
import threading
import time
from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import Any

from lamina.runtime.env import env_flag, env_path
from lamina.runtime.host import usable_cores

CACHE_ENV = "LAMINA_CACHE"
"""Environment variable: `0`/`off`/`false`/`no` disables the disk cache."""

CACHE_DIR_ENV = "LAMINA_CACHE_DIR"
"""Environment variable: the cache directory (default: the platform's per-user cache)."""

FORMAT = b"LAMINA-CACHE-2\n"
"""First bytes of every entry; a new layout gets a new number (old entries are then misses)."""

SUFFIX = ".lxc"
_DIGEST = 32  # bytes of SHA-256 at the end of an entry
ALIGN = 64
"""An entry's object code starts at a multiple of this offset, and so does the constant
blob inside it (`pack_objects`): a mapped entry's weights are used in place."""
_CHUNK = 8 << 20
"""Bytes per chunk of `checksum` (chunks are hashed on every core)."""
_MAP_AT_LEAST = 1 << 20
"""Entries this large are memory-mapped by `read`, not copied."""


def enabled() -> bool:
    """Is the disk cache on (the default), per `LAMINA_CACHE`?"""
    return env_flag(CACHE_ENV, True)


def directory() -> Path:
    """The cache directory: `$LAMINA_CACHE_DIR`, else the platform's per-user cache dir."""
    explicit = env_path(CACHE_DIR_ENV)
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
    flush()
    folder = directory()
    return sorted(folder.glob(f"*{SUFFIX}")) if folder.is_dir() else []


def clear() -> int:
    """Delete every cache entry (and stray temporary files); return how many entries."""
    flush()
    removed = 0
    for path in entries():
        removed += _unlink(path)
    kernels = kernel_directory()
    if kernels.is_dir():
        for path in [*kernels.glob(f"*{SUFFIX}"), *kernels.glob(f".*{SUFFIX}.tmp")]:
            _unlink(path)
    digests = directory() / DIGEST_FOLDER
    if digests.is_dir():
        for path in digests.iterdir():
            _unlink(path)
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

    object_code: bytes | memoryview
    """A memoryview into the mapped file for a large entry `read` (see `read`)."""
    metadata: dict
    """JSON-able: entry signatures, functions that are not entries, compile timings."""


@dataclass(frozen=True)
class PiecewiseEntry:
    """An `Entry` to `write` whose object code is the concatenation of `pieces`: a
    model's weights are then copied once, into the file, not into a packed copy first."""

    pieces: Sequence[bytes | memoryview]
    metadata: dict


def _path(cache_key: str, folder: Path | None = None) -> Path:
    return (folder or directory()) / f"{cache_key}{SUFFIX}"


def checksum(body: bytes | memoryview | Sequence[bytes | memoryview]) -> bytes:
    """SHA-256 of the SHA-256s of `body`'s 8 MiB chunks (`body`: bytes, or the list of
    pieces whose concatenation they are).

    A tree rather than one SHA-256 so that the chunks are hashed on every
    usable core (hashlib releases the GIL): ResNet-50's 100 MB entry is checked
    on every hit, and one core hashes it in about 0.15 s.
    """
    parts = [body] if isinstance(body, bytes | memoryview) else body
    pieces = [memoryview(p).cast("B") for p in parts]
    starts = list(accumulate((len(p) for p in pieces), initial=0))
    count = max(1, -(-starts[-1] // _CHUNK))
    digests = [b""] * count
    workers = min(count, usable_cores())

    def hash_chunks(first: int) -> None:
        for i in range(first, count, workers):
            digest = hashlib.sha256()
            begin, end = i * _CHUNK, min((i + 1) * _CHUNK, starts[-1])
            k = bisect_right(starts, begin) - 1
            while k < len(pieces) and starts[k] < end:
                digest.update(pieces[k][max(begin - starts[k], 0) : end - starts[k]])
                k += 1
            digests[i] = digest.digest()

    threads = [threading.Thread(target=hash_chunks, args=(i,)) for i in range(1, workers)]
    for thread in threads:
        thread.start()
    hash_chunks(0)
    for thread in threads:
        thread.join()
    return hashlib.sha256(b"".join(digests)).digest()


def encode(entry: Entry | PiecewiseEntry) -> bytes:
    """FORMAT, metadata length, metadata (JSON, padded with spaces so that the object
    code starts at a multiple of `ALIGN`), object code, `checksum` of all of it."""
    pieces = _pieces(entry)
    return b"".join([*pieces, checksum(pieces)])


def _pieces(entry: Entry | PiecewiseEntry) -> list[bytes | memoryview]:
    """`encode`'s bytes but the checksum, in pieces: `write` hashes and writes them as
    they are, so a model's weights (100 MB for ResNet-50) are not copied into an
    entry first (packing, then joining, copied them four times: 0.3-0.4 s of CPU
    and 250 MiB of peak memory at the end of a cold compile)."""
    meta = json.dumps(entry.metadata, sort_keys=True).encode()
    meta += b" " * (-(len(FORMAT) + 8 + len(meta)) % ALIGN)
    code = entry.pieces if isinstance(entry, PiecewiseEntry) else [entry.object_code]
    return [FORMAT + len(meta).to_bytes(8, "little") + meta, *code]


def decode(data: bytes | memoryview | mmap.mmap) -> Entry | None:
    """The entry in `data`, or None if it is not a whole, intact entry of this format.

    The object code is a slice of `data` (bytes for bytes, else a memoryview of it)."""
    view = memoryview(data)
    if len(view) < len(FORMAT) + 8 + _DIGEST or view[: len(FORMAT)] != FORMAT:
        return None
    body, digest = view[:-_DIGEST], view[-_DIGEST:]
    if checksum(body) != digest:
        return None
    start = len(FORMAT) + 8
    size = int.from_bytes(body[len(FORMAT) : start], "little")
    if start + size > len(body):
        return None
    try:
        metadata = json.loads(bytes(body[start : start + size]))
    except ValueError:
        return None
    if not isinstance(metadata, dict):
        return None
    code = body[start + size :]
    return Entry(bytes(code) if isinstance(data, bytes) else code, metadata)


def read(cache_key: str, *, folder: Path | None = None) -> Entry | None:
    """The intact entry stored under `cache_key`, or None (a bad entry is deleted).

    A large entry is memory-mapped read-only, not read: its object code is a
    view of the mapping, which lives as long as a reference to it (a loaded
    model's constants are used where they are, runtime/constant_blob.py).
    Entries are replaced by renaming, never rewritten, so a mapping never
    sees a change. An entry of an untrusted directory, or one another user
    owns or that group or others can write (`untrusted`), is ignored with a
    warning.
    """
    if not _usable_directory():
        return None
    flush()
    path = _path(cache_key, folder)
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            why = untrusted(st)
            if why is not None:
                _warn(f"ignoring the compile cache entry '{path}': {why}")
                return None
            if st.st_size >= _MAP_AT_LEAST:
                data: bytes | mmap.mmap = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            else:
                data = f.read()
    except (OSError, ValueError):
        return None
    entry = decode(data)
    if entry is None:
        _unlink(path)  # corrupt or foreign: rebuilt by this compile
    return entry


BACKGROUND_BYTES = 16 << 20
"""`write(..., background=True)` writes an entry at least this large on a thread."""

_writers: list[threading.Thread] = []
"""Entries being written in the background (`write`); `flush` waits for them."""


def flush() -> None:
    """Wait until every entry written in the background is in place (or failed).
    `read`, `entries` and `clear` call it, so this process never misses its own entry."""
    while _writers:
        _writers.pop().join()


def write(
    cache_key: str,
    entry: Entry | PiecewiseEntry,
    *,
    folder: Path | None = None,
    background: bool = False,
) -> Path | None:
    """Store `entry` atomically (temporary file + os.replace); None if the cache is not writable.

    A new cache directory is created owner-only (0700); entries are 0600
    (`mkstemp`), and replace an untrusted entry of the same key.

    `background`: an entry of at least `BACKGROUND_BYTES` (a model's weights) is
    checksummed and written on a thread, and its path returned at once: the
    last step of a cold compile (ResNet-50's 100 MB: 0.15-0.3 s, hashing on both
    cores and copying into the page cache) no longer delays the compiled code.
    The metadata is encoded here, so the caller may change it afterwards. The
    thread is not a daemon: the interpreter waits for it at exit; `flush` waits
    for it before this process reads the cache again. An entry half-written
    when the process is killed is a temporary file, never an entry.
    """
    folder = folder or directory()
    pieces = _pieces(entry)
    if background and sum(len(memoryview(p)) for p in pieces) >= BACKGROUND_BYTES:
        writer = threading.Thread(
            target=_write_pieces, args=(cache_key, pieces, folder), name="lamina-cache-write"
        )
        _writers.append(writer)
        writer.start()
        return _path(cache_key, folder)
    return _write_pieces(cache_key, pieces, folder)


def _write_pieces(cache_key: str, pieces: list[bytes | memoryview], folder: Path) -> Path | None:
    """`write`'s work: checksum `pieces` (`_pieces` of an entry), write them and rename."""
    tmp_name = None
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not _usable_directory():
            return None
        fd, tmp_name = tempfile.mkstemp(
            prefix=f".{cache_key[:16]}-", suffix=f"{SUFFIX}.tmp", dir=folder
        )
        digest = checksum(pieces)
        with os.fdopen(fd, "wb") as out:
            for piece in pieces:
                out.write(piece)
            out.write(digest)
        os.replace(tmp_name, _path(cache_key, folder))
        return _path(cache_key, folder)
    except OSError:
        if tmp_name is not None:
            _unlink(Path(tmp_name))
        return None


# ---------------------------------------------------------------------------
# Digests of input files, remembered by their status
# ---------------------------------------------------------------------------

DIGEST_FOLDER = "digests"
"""Subdirectory of the cache directory: the SHA-256 of input files (`file_digest`)."""
_RACY_NS = 2_000_000_000
"""A file changed this recently (before its hashing began) is hashed again next time."""


def file_digest(
    path: str | os.PathLike[str],
    *,
    remember: bool = True,
    meanwhile: Callable[[], bool] | None = None,
    contents: list[bytes] | None = None,
) -> str:
    """The hex SHA-256 of the file at `path`, remembered across processes by its status.

    A `.onnx` model's key is the digest of the file (frontends/sources.py):
    ResNet-50's 100 MB cost a cached compile 0.1-0.2 s to hash. As Bazel and
    git's index do, the digest is stored with the file's device, inode, size,
    modification and status-change times (`remember`, in `digests/` of the
    cache directory) and reused while all five are the same. The status-change
    time is set by the kernel on every write, rename or `utime`, so a
    rewritten file never matches; a file changed within two seconds before
    its hashing began is not remembered (a write later in the same clock tick
    would leave the times equal: git's "racily clean" files).

    `meanwhile`, if given, is called on this thread, step after step, while
    another thread hashes a large file whose digest is not remembered
    (`_hash_while`); never after the digest is known. That thread reads the
    file whole, and appends its bytes to `contents` if given (a miss parses
    them: the model is not read again).
    """
    path = os.path.realpath(path)
    memo = directory() / DIGEST_FOLDER / (hashlib.sha256(path.encode()).hexdigest() + ".json")
    st = os.stat(path)
    status = [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]
    if remember and _usable_directory():
        try:
            with open(memo, "rb") as f:
                if untrusted(os.fstat(f.fileno())) is None:
                    known = json.loads(f.read())
                    if known.get("status") == status and isinstance(known.get("sha256"), str):
                        return known["sha256"]
        except (OSError, ValueError, AttributeError):
            pass
    began = time.time_ns()
    with open(path, "rb") as f:
        digest = _hash_while(f, meanwhile, contents)
        after = os.fstat(f.fileno())
    same = status == [
        after.st_dev,
        after.st_ino,
        after.st_size,
        after.st_mtime_ns,
        after.st_ctime_ns,
    ]
    if remember and same and max(st.st_mtime_ns, st.st_ctime_ns) < began - _RACY_NS:
        _write_atomic(memo, json.dumps({"path": path, "status": status, "sha256": digest}).encode())
    return digest


HASH_ON_A_THREAD_BYTES = 1 << 20
"""`file_digest` hashes a file at least this large on a thread while `meanwhile` runs."""


def _hash_while(f, meanwhile: Callable[[], bool] | None, contents: list[bytes] | None) -> str:
    """The hex SHA-256 of the open file `f`; while another thread hashes it, this one
    calls `meanwhile()` until it returns False (it has nothing left to do) or the
    digest is known, whichever comes first.

    A model's file is hashed when its digest is not remembered: mostly a file
    this cache has not compiled yet, so a cold compile, which imports the
    compiler (0.3-0.4 s of Python holding the GIL) and hashed ResNet-50's
    100 MB first (0.07-0.15 s) while the other core idled. The steps are
    imports a miss needs (frontends/sources.py): a hit of a file whose digest
    was forgotten stops importing once the digest is known, at most one step
    later. The thread reads the file whole and hashes it in one `update`,
    each releasing the GIL once: chunked reads (`hashlib.file_digest`) take it
    back per chunk and, next to a thread that holds it, hashed at half speed.
    Its bytes go to `contents`: reading ResNet-50's file took the ONNX import
    0.06-0.13 s more (copying 100 MB out of the page cache into new pages)."""
    size = os.fstat(f.fileno()).st_size
    if meanwhile is None or size < HASH_ON_A_THREAD_BYTES:
        return hashlib.file_digest(f, "sha256").hexdigest()
    result: list[str] = []

    def read_and_hash() -> None:
        data = f.read()
        result.append(hashlib.sha256(data).hexdigest())
        if contents is not None:
            contents.append(data)

    worker = threading.Thread(target=read_and_hash, name="lamina-file-digest")
    worker.start()
    try:
        while worker.is_alive() and meanwhile():
            pass
    finally:
        worker.join()
    if not result:
        raise OSError(f"could not hash '{f.name}'")
    return result[0]


def _write_atomic(path: Path, data: bytes) -> bool:
    """Write `path` as `write` writes entries (owner-only, renamed into place)."""
    tmp_name = None
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not _usable_directory():
            return False
        fd, tmp_name = tempfile.mkstemp(
            prefix=f".{path.stem[:16]}-", suffix=".tmp", dir=path.parent
        )
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp_name, path)
        return True
    except OSError:
        if tmp_name is not None:
            _unlink(Path(tmp_name))
        return False


# ---------------------------------------------------------------------------
# Who may write the cache
# ---------------------------------------------------------------------------


def untrusted(st: os.stat_result) -> str | None:
    """Why a cache directory or entry with status `st` must not be used, or None.

    Loading an entry runs its machine code, so, as ssh and pip do with their
    files, only what this user owns and only this user can write is used:
    anyone else who can write there could choose the code the next compile
    runs. (Not checked on Windows, where ownership and modes mean otherwise.)
    """
    if os.name == "nt":
        return None
    if st.st_uid != os.geteuid():
        return f"it belongs to another user (uid {st.st_uid})"
    if st.st_mode & 0o022:
        return f"group or others can write to it (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def _usable_directory() -> bool:
    """Is the cache directory trusted (`untrusted`)? A missing one is: write creates it 0700."""
    folder = directory()
    try:
        st = os.stat(folder)
    except OSError:
        return True
    why = untrusted(st)
    if why is not None:
        _warn(f"not using the compile cache directory '{folder}': {why}")
    return why is None


_warned: set[str] = set()


def _warn(message: str) -> None:
    """A one-line warning on stderr, once per process; the compile goes on without the cache."""
    if message not in _warned:
        _warned.add(message)
        print(f"lamina: warning: {message}; compiling without it", file=sys.stderr)


# ---------------------------------------------------------------------------
# Kernels (backends/kernel_cache.py): one object file per kernel key
# ---------------------------------------------------------------------------

KERNEL_FOLDER = "kernels"
"""Subdirectory of the cache directory that holds one entry per compiled kernel."""


def kernel_directory() -> Path:
    return directory() / KERNEL_FOLDER


def read_kernel(kernel_key: str) -> bytes | None:
    """The object code of the kernel keyed `kernel_key` (backends/kernel_split.py), or None."""
    entry = read(kernel_key, folder=kernel_directory())
    return None if entry is None else bytes(entry.object_code)


def write_kernel(kernel_key: str, object_code: bytes) -> Path | None:
    """Store a kernel's object code (atomically, like a model's entry)."""
    return write(kernel_key, Entry(object_code, {"kernel": kernel_key}), folder=kernel_directory())


PACKED = b"LAMINA-OBJECTS-2\n"
"""First bytes of `object_code` that holds several object files and a constant blob."""


def pack_objects(objects: list[bytes], constants: bytes = b"") -> bytes:
    """Several object files (host first, then kernels) and a packed constant blob
    (runtime/constant_blob.py) as one `object_code`: a model split into units. The
    blob starts at a multiple of `ALIGN` (zero padding before it), so that in an
    entry (whose object code is aligned too) its constants can be used in place."""
    return b"".join(pack_object_pieces(objects, [constants]))


def pack_object_pieces(
    objects: list[bytes], constants: Sequence[bytes | memoryview]
) -> list[bytes | memoryview]:
    """`pack_objects(objects, b"".join(constants))` in pieces, none of them copied (an
    `Entry` to `write` takes them as they are)."""
    sizes = b"".join(len(o).to_bytes(8, "little") for o in objects)
    head = PACKED + len(objects).to_bytes(8, "little") + sizes
    size = len(head) + sum(len(o) for o in objects)
    return [head, *objects, b"\0" * (-size % ALIGN), *constants]


def unpack_objects(object_code: bytes | memoryview) -> tuple[list[bytes], memoryview]:
    """`pack_objects`'s object files and constant blob; ValueError if truncated."""
    view = memoryview(object_code)
    at = len(PACKED)
    count = int.from_bytes(view[at : at + 8], "little")
    sizes = [int.from_bytes(view[at + 8 + 8 * i : at + 16 + 8 * i], "little") for i in range(count)]
    at += 8 + 8 * count
    objects = []
    for size in sizes:
        if at + size > len(view):
            raise ValueError("packed object code is truncated")
        objects.append(bytes(view[at : at + size]))
        at += size
    at += -at % ALIGN
    return objects, view[at:]


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
    object_code: bytes | memoryview

    def get_function_address(self, name: str) -> int:
        if name not in self.signatures:
            raise KeyError(f"no function '{name}' in the cached code")
        address = self.engine.get_function_address(name)
        if not address:
            raise KeyError(f"function '{name}' has no address in the cached code")
        return address


def load(
    cache_key: str, object_code: bytes | memoryview, names: Iterable[str], *, runtime: bool
) -> LoadedCode:
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
    if object_code[: len(PACKED)] == PACKED:  # a split module: its units and its constants
        from lamina.runtime import constant_blob

        objects, constants = unpack_objects(object_code)
        if len(constants):
            constant_blob.register_packed(constants)
    else:
        objects = [bytes(object_code)]
    for obj in objects:
        engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
    engine.finalize_object()
    engine.run_static_constructors()
    return LoadedCode(cache_key, engine, tm, dict.fromkeys(names), object_code)


__all__ = [
    "ALIGN",
    "DIGEST_FOLDER",
    "checksum",
    "decode",
    "encode",
    "file_digest",
    "flush",
    "KERNEL_FOLDER",
    "PACKED",
    "PiecewiseEntry",
    "kernel_directory",
    "pack_objects",
    "read_kernel",
    "unpack_objects",
    "write_kernel",
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
    "untrusted",
    "write",
]
