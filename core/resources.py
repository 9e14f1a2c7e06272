"""Large constants outside the text: a side file of bytes, named by `dense_resource` handles.

An imported model's weights printed as hex make a text of hundreds of
megabytes (ONNX's `light_resnet50` test model: 204 MB) that every tool must
lex and parse. MLIR's answer is the `dense_resource<handle>` attribute,
whose bytes live in the file's `{-# dialect_resources: ... #-}` section;
Lamina goes one step further and keeps them in a binary side file beside
the text, so the text stays a few hundred kilobytes:

    %w = graph.constant dense_resource<w3f9c0a1b2d4e5f60> : tensor<64x3x7x7xf32>
    ...
    {-#
      dialect_resources: {
        builtin: {
          w3f9c0a1b2d4e5f60: "blob:model.mlir.bin@0+37632"
        }
      }
    #-}

The value `"blob:FILE@OFFSET+SIZE"` is Lamina's own spelling (MLIR's own
value is an inline hex blob, `"0x<alignment><bytes>"`, which is read too):
FILE is relative to the directory of the text file, OFFSET and SIZE are in
bytes, every OFFSET a multiple of `ALIGNMENT`. The parser turns each handle
back into an ordinary dense attribute, so no pass sees the difference.
docs/onnx.md describes the format.

This module imports no xDSL: the cache key of a compile (driver/compiler.py)
needs the side files' digests without the cost of importing the compiler.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

THRESHOLD_BYTES = 1024
"""Constants of at least this many bytes go to the side file. The same bound as
the code generator's weight blob (docs/compile-speed.md): below it a constant
prints as at most 2 KB of hex, about what a side-file entry costs in text and
alignment padding, and the biases and shapes a reader looks at stay visible."""

ALIGNMENT = 64
"""Every constant starts at a multiple of 64 bytes of the side file (a cache
line, and enough for any vector load), so the file can be memory-mapped and
its constants used in place."""

SIDE_SUFFIX = ".bin"
"""`model.mlir` keeps its constants in `model.mlir.bin`."""

_SECTION = re.compile(
    r"\{-#\s*dialect_resources\s*:\s*\{\s*builtin\s*:\s*\{(?P<body>[^{}]*)\}\s*\}\s*#-\}(?:\s|//[^\n]*)*\Z"
)
_ENTRY = re.compile(r'(?P<key>[A-Za-z_][\w$.]*)\s*:\s*"(?P<value>[^"]*)"')
_BLOB = re.compile(r"blob:(?P<file>.+)@(?P<offset>\d+)\+(?P<size>\d+)\Z")
_HEX = re.compile(r"0x(?P<hex>(?:[0-9A-Fa-f]{2})*)\Z")


class ResourceError(Exception):
    """A resource the text names cannot be read; `offset` is where in the text."""

    def __init__(self, message: str, offset: int):
        super().__init__(message)
        self.offset = offset


@dataclass(frozen=True)
class Resource:
    """One entry of the section: its bytes in a side file, or inline."""

    key: str
    offset: int
    """Where the entry is in the text (for diagnostics)."""
    path: Path | None = None
    start: int = 0
    size: int = 0
    inline: bytes | None = None


@dataclass
class Resources:
    """The entries of a text's resource section, their bytes read on demand."""

    entries: dict[str, Resource] = field(default_factory=dict)
    _maps: dict[Path, mmap.mmap | bytes] = field(default_factory=dict)

    def data(self, key: str) -> bytes:
        """The bytes of `key` (a ResourceError if its side file is missing or short)."""
        entry = self.entries[key]
        if entry.inline is not None:
            return entry.inline
        assert entry.path is not None
        mapped = self._map(entry)
        end = entry.start + entry.size
        if end > len(mapped):
            raise ResourceError(
                f"resource '{key}' needs bytes {entry.start}..{end} of '{entry.path}', "
                f"which holds only {len(mapped)} bytes (truncated?)",
                entry.offset,
            )
        return bytes(mapped[entry.start : end])

    def _map(self, entry: Resource) -> mmap.mmap | bytes:
        assert entry.path is not None
        if entry.path not in self._maps:
            try:
                with open(entry.path, "rb") as f:
                    size = os.fstat(f.fileno()).st_size
                    self._maps[entry.path] = (
                        mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
                    )
            except OSError as err:
                raise ResourceError(
                    f"cannot read the constants of resource '{entry.key}' from "
                    f"'{entry.path}': {err.strerror}",
                    entry.offset,
                ) from None
        return self._maps[entry.path]


def base_directory(filename: str) -> Path:
    """Where side files of the text read from `filename` are (its directory; else `.`)."""
    if not filename or filename.startswith("<") or filename == "-":
        return Path(".")
    return Path(filename).parent


def split_resources(text: str, filename: str) -> tuple[str, Resources]:
    """`text` without its trailing builtin resource section, and that section's entries.

    A text without one (or with one naming other dialects, left to xDSL) is
    returned whole, with no entries. The cut keeps every line before it, so
    locations in the rest of the text do not move.
    """
    start = text.rfind("{-#")
    match = _SECTION.match(text, start) if start >= 0 else None
    if match is None:
        return text, Resources()
    base = base_directory(filename)
    body_at = match.start("body")
    entries: dict[str, Resource] = {}
    for entry in _ENTRY.finditer(match.group("body")):
        key, value, at = entry.group("key"), entry.group("value"), body_at + entry.start()
        entries[key] = _resource(key, value, at, base)
    return text[:start], Resources(entries)


def _resource(key: str, value: str, offset: int, base: Path) -> Resource:
    if blob := _BLOB.match(value):
        return Resource(
            key,
            offset,
            path=base / blob.group("file"),
            start=int(blob.group("offset")),
            size=int(blob.group("size")),
        )
    if hexed := _HEX.match(value):
        raw = bytes.fromhex(hexed.group("hex"))
        if len(raw) < 4:
            raise ResourceError(
                f"resource '{key}': an MLIR blob starts with 4 bytes of alignment", offset
            )
        return Resource(key, offset, inline=raw[4:])  # MLIR's blob: alignment (u32), then bytes
    raise ResourceError(
        f'resource \'{key}\': expected "blob:FILE@OFFSET+SIZE" or an MLIR hex blob "0x..."',
        offset,
    )


def side_file_digests(text: str, filename: str) -> list[str]:
    """SHA-256 of every side file `text` refers to (for the compile cache key: the text
    alone does not say what the constants are). A file that cannot be read has no
    digest; the compile that follows reports it."""
    start = text.rfind("{-#")
    match = _SECTION.match(text, start) if start >= 0 else None
    if match is None:
        return []
    base = base_directory(filename)
    files = sorted(
        {
            blob.group("file")
            for e in _ENTRY.finditer(match.group("body"))
            if (blob := _BLOB.match(e.group("value")))
        }
    )
    digests = []
    for name in files:
        try:
            with open(base / name, "rb") as f:
                digests.append(f"{name}:{hashlib.file_digest(f, 'sha256').hexdigest()}")
        except OSError:
            digests.append(f"{name}:unreadable")
    return digests


class BlobWriter:
    """Collects large constants while a module is printed, then writes the side file.

    Identical constants are stored once (their handle is named by their
    content), each at a 64-byte-aligned offset.
    """

    def __init__(self, path: str | os.PathLike[str], threshold: int = THRESHOLD_BYTES):
        self.path = Path(path)
        self.threshold = threshold
        self._handles: dict[bytes, str] = {}
        self._entries: dict[str, tuple[str, int, int]] = {}
        self._chunks: list[bytes] = []
        self._size = 0
        self._section_entries: list[tuple[str, int, int]] = []

    def wants(self, data: bytes) -> bool:
        return len(data) >= self.threshold

    def add(self, data: bytes) -> str:
        """The handle of `data`, stored once."""
        digest = hashlib.sha256(data).digest()
        handle = self._handles.get(digest)
        if handle is None:
            handle = f"w{digest[:8].hex()}"
            while handle in self._entries:  # another constant's 64-bit prefix: extend the name
                handle += "x"
            padding = -self._size % ALIGNMENT
            if padding:
                self._chunks.append(bytes(padding))
                self._size += padding
            self._entries[handle] = (handle, self._size, len(data))
            self._chunks.append(data)
            self._size += len(data)
            self._handles[digest] = handle
        self._section_entries.append(self._entries[handle])
        return handle

    def section(self) -> str:
        """The resource section for the handles printed since the last call ('' if none)."""
        used = dict.fromkeys(self._section_entries)
        self._section_entries = []
        if not used:
            return ""
        name = self.path.name
        lines = [f'      {h}: "blob:{name}@{off}+{size}"' for h, off, size in used]
        body = ",\n".join(lines)
        return f"\n\n{{-#\n  dialect_resources: {{\n    builtin: {{\n{body}\n    }}\n  }}\n#-}}"

    def write(self) -> None:
        """Write the side file (nothing if no constant went to it)."""
        if not self._entries:
            self.path.unlink(missing_ok=True)  # an older run's file would mislead
            return
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "wb") as f:
            for chunk in self._chunks:
                f.write(chunk)
        os.replace(tmp, self.path)


def side_file_for(output: str | os.PathLike[str]) -> Path:
    """The side file of the text written to `output` (`model.mlir` → `model.mlir.bin`)."""
    path = Path(output)
    return path.with_name(path.name + SIDE_SUFFIX)


__all__ = [
    "ALIGNMENT",
    "THRESHOLD_BYTES",
    "BlobWriter",
    "ResourceError",
    "Resources",
    "side_file_digests",
    "side_file_for",
    "split_resources",
]
