"""Artifact directories: compiled code that runs without the compiler.

`lamina-compile MODEL -o DIR/` and `Executable.save(DIR)` write three files:

* `model.so` — the shared library (docs/abi.md: one C function per entry);
* `weights.bin` — the large constants, each 64-byte aligned, outside the
  library: the library reserves a page-aligned, zero-filled region
  (`lamina_weights`, in .bss: no bytes on disk) with one symbol per constant
  inside it, and the loader maps this file over the region before the first
  call (copy-on-write, read on demand; copied where it cannot be mapped);
* `manifest.json` — what the loader checks and `run` needs: the format and
  Lamina version, the entry points with their inputs' and outputs' names,
  dtypes and shapes (a string for a dynamic dimension, with its bounds), the
  CPU and features the code was built for, the threading runtime it needs,
  and the size and SHA-256 of both files.

`load(DIR)` imports only the runtime (no xDSL, no llvmlite, no compiler),
loads the library with `ctypes`, and returns an `Executable`: the calling
API is the one of `lamina.compile`'s result. It refuses, with a clear
`ArtifactError`, a directory that is not an artifact, another format or
Lamina version, a file whose size or checksum differs from the manifest's,
and code built for CPU features the host lacks (`cpu_features.check_host`).

Fork: libgomp's thread pool does not survive `fork()`; a child forked after
the parent ran parallel code hangs in its first parallel loop. Load (and
run) artifacts in the child, in a parent that has not run compiled code
yet, or use the `spawn`/`forkserver` start methods (docs/python-api.md).
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import json
import mmap
import os
import shutil
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from lamina.runtime import cpu_features
from lamina.runtime.executable import Executable, LaminaRuntimeError, Signature, TensorSpec
from lamina.runtime.native_setup import load_openmp

FORMAT = "lamina-artifact"
FORMAT_VERSION = 1
"""Version of the directory layout and manifest; a loader refuses any other."""

MANIFEST = "manifest.json"
LIBRARY = "model.so"
WEIGHTS = "weights.bin"
FILES = (LIBRARY, WEIGHTS, MANIFEST)

SYMBOL_PREFIX = "lamina_"
"""Prefix of the entry points' C symbols in an artifact's library (`@main` → `lamina_main`)."""
WEIGHTS_SYMBOL = "lamina_weights"
"""The library's weights region (backends/codegen.py `build_artifact_library`)."""

_MAP_FIXED = 0x10  # Linux's MAP_FIXED (Python's mmap module does not export it)


class ArtifactError(LaminaRuntimeError):
    """A directory that cannot be loaded (or written) as an artifact, and why."""


def lamina_version() -> str:
    import lamina

    return lamina.__version__


def is_directory_path(path: str | os.PathLike[str]) -> bool:
    """Does an output path name an artifact directory? (It ends in `/`, is an existing
    directory, has no suffix, or the suffix `.lamina`; `out.txt` names no known kind.)"""
    text = os.fspath(path)
    if text.endswith(("/", os.sep)) or os.path.isdir(text):
        return True
    return Path(text).suffix in ("", DIRECTORY_SUFFIX)


DIRECTORY_SUFFIX = ".lamina"
"""The conventional suffix of an artifact directory (`mlp.lamina/`)."""


# ---------------------------------------------------------------------------
# The manifest's entries
# ---------------------------------------------------------------------------


def _infos(names: list[str], specs: tuple[TensorSpec, ...]) -> list[tuple[str, TensorSpec]]:
    return list(zip(names, specs, strict=True))


def _tensor_json(info: tuple[str, TensorSpec]) -> dict[str, Any]:
    name, spec = info
    return {"name": name, "dtype": np.dtype(spec.dtype).name, "shape": list(spec.shape)}


def entries_json(signatures: dict[str, Signature], symbols: dict[str, str]) -> dict[str, Any]:
    """The manifest's `entries`: per entry function its C symbol, inputs and outputs."""
    return {
        name: {
            "symbol": symbols[name],
            "inputs": [_tensor_json(i) for i in _infos(sig.input_names(), sig.params)],
            "outputs": [_tensor_json(o) for o in _infos(sig.output_names(), sig.results)],
            "bounds": {k: list(v) for k, v in getattr(sig, "bounds", {}).items()},
        }
        for name, sig in sorted(signatures.items())
        if name in symbols
    }


def _spec(data: dict[str, Any]) -> tuple[str, TensorSpec]:
    shape = tuple(d if isinstance(d, str) else int(d) for d in data["shape"])
    return str(data["name"]), TensorSpec(shape, np.dtype(str(data["dtype"])))  # type: ignore[arg-type]


def _signature(name: str, entry: dict[str, Any]) -> Signature:
    inputs = [_spec(d) for d in entry["inputs"]]
    outputs = [_spec(d) for d in entry["outputs"]]
    sig = Signature(
        name,
        tuple(s for _, s in inputs),
        tuple(s for _, s in outputs),
        tuple(n for n, _ in inputs),
        tuple(n for n, _ in outputs),
    )
    bounds = entry.get("bounds") or {}
    if bounds and "bounds" in Signature.__dataclass_fields__:  # dynamic dimensions
        sig = Signature(**{**sig.__dict__, "bounds": {k: tuple(v) for k, v in bounds.items()}})
    return sig


# ---------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------


def sha256_file(path: Path) -> str:
    """The file's SHA-256, hashed from a mapping (no copy through Python buffers)."""
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return hashlib.sha256().hexdigest()
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return hashlib.sha256(data).hexdigest()


def read_manifest(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The manifest of the artifact directory `path`, its format and version checked."""
    folder = Path(path)
    if not folder.is_dir():
        what = "does not exist" if not folder.exists() else "is not a directory"
        raise ArtifactError(f"cannot load artifact '{folder}': it {what}")
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except FileNotFoundError:
        raise ArtifactError(
            f"cannot load artifact '{folder}': no {MANIFEST} (write one with "
            "`lamina-compile MODEL -o DIR/` or `Executable.save(DIR)`)"
        ) from None
    except (OSError, ValueError) as err:
        raise ArtifactError(f"cannot load artifact '{folder}': bad {MANIFEST}: {err}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ArtifactError(f"cannot load artifact '{folder}': {MANIFEST} is not a Lamina one")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise ArtifactError(
            f"cannot load artifact '{folder}': format version {manifest.get('format_version')}, "
            f"this runtime reads version {FORMAT_VERSION}; rebuild it with this Lamina"
        )
    if manifest.get("lamina_version") != lamina_version():
        raise ArtifactError(
            f"cannot load artifact '{folder}': built by Lamina {manifest.get('lamina_version')}, "
            f"this is Lamina {lamina_version()}; rebuild it with this Lamina"
        )
    return manifest


def _checked_file(folder: Path, record: dict[str, Any]) -> Path:
    """The file `record` names, its size and SHA-256 checked against the manifest's."""
    path = folder / str(record["file"])
    try:
        size = path.stat().st_size
    except OSError as err:
        raise ArtifactError(f"cannot load artifact '{folder}': {err.strerror}: {path}") from None
    if size != record["size"]:
        raise ArtifactError(
            f"cannot load artifact '{folder}': {path.name} has {size} bytes, the manifest "
            f"says {record['size']} (truncated or replaced; copy the directory again)"
        )
    if sha256_file(path) != record["sha256"]:
        raise ArtifactError(
            f"cannot load artifact '{folder}': {path.name} does not match the manifest's "
            "SHA-256 (modified or corrupt; copy the directory again)"
        )
    return path


@dataclass(eq=False)
class SharedLibraryCode:
    """An artifact's library loaded into this process, its weights in place.

    The part of a JIT engine's interface that `Executable` uses (function and
    global addresses); keep it alive while its functions are called.
    """

    library: ctypes.CDLL
    symbols: dict[str, str]
    """Entry function → C symbol."""
    weights: Any = field(default=None, repr=False)
    """What keeps the weights' memory alive (a mapping or a copy), if any."""
    call_team = False
    """The library links libgomp's `GOMP_parallel` itself, so one thread team per call
    (runtime/call_team.py, which reroutes only JIT-linked code) must not run it: its
    regions would nest in the team's and run on one thread."""

    @property
    def engine(self) -> SharedLibraryCode:
        return self  # the error globals and device counters are read through it

    def get_function_address(self, name: str) -> int:
        symbol = self.symbols.get(name)
        if symbol is None:
            raise KeyError(f"no function '{name}' in the artifact")
        return self._address(symbol)

    def get_global_value_address(self, symbol: str) -> int:
        return self._address(symbol)

    def _address(self, symbol: str) -> int:
        try:
            return ctypes.addressof(ctypes.c_char.in_dll(self.library, symbol))
        except ValueError:
            return 0


_lock = threading.Lock()
_paths: list[Path] = []
"""Library paths this process has loaded."""
_loaded: dict[str, SharedLibraryCode] = {}
"""Library SHA-256 → the code loaded from it (a library is loaded once per process)."""


def load(path: str | os.PathLike[str]) -> Executable:
    """The artifact directory at `path`, checked and loaded: an `Executable` whose `run`,
    `get_inputs`, `get_outputs` are those of a compiled one. Raises `ArtifactError`
    (or `cpu_features.HostFeatureError`) if it cannot be used here."""
    folder = Path(path)
    manifest = read_manifest(folder)
    try:
        cpu = manifest["cpu"]
        cpu_features.check_host(cpu["features"], f"artifact '{folder}'")
        signatures = {name: _signature(name, e) for name, e in manifest["entries"].items()}
        symbols = {name: str(e["symbol"]) for name, e in manifest["entries"].items()}
        library_record, weights_record = manifest["library"], manifest["weights"]
        not_entries = {str(k): str(v) for k, v in manifest.get("not_entries", {}).items()}
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise ArtifactError(f"cannot load artifact '{folder}': bad {MANIFEST}: {err!r}") from None
    library = _checked_file(folder, library_record)
    weights = _checked_file(folder, weights_record)
    with _lock:
        code = _loaded.get(library_record["sha256"])
        if code is None:
            if manifest.get("threading") == "libgomp":
                load_openmp()  # with LAMINA_NUM_THREADS and a passive wait policy
            code = _load_library(library, weights, int(weights_record.get("region", 0)), symbols)
            _loaded[library_record["sha256"]] = code
    exe = Executable(
        signatures, code, None, {}, not_entries, saver=functools.partial(_copy_artifact, folder)
    )
    exe.target_cpu = str(cpu.get("name", ""))
    exe.target_features = tuple(cpu["features"])
    return exe


def _load_library(
    library: Path, weights: Path, region: int, symbols: dict[str, str]
) -> SharedLibraryCode:
    """dlopen `library` (under a name of its own if another library was loaded from this
    path: the dynamic loader would hand back the old one) and put `weights` in place."""
    copy = None
    if any(loaded.exists() and os.path.samefile(library, loaded) for loaded in _paths):
        copy = Path(tempfile.mkdtemp(prefix="lamina-artifact-"))
        shutil.copyfile(library, copy / LIBRARY)
    _paths.append(library)
    try:
        handle = ctypes.CDLL(str(copy / LIBRARY if copy else library), os.RTLD_NOW | os.RTLD_LOCAL)
    except OSError as err:
        raise ArtifactError(f"cannot load artifact library '{library}': {err}") from None
    finally:
        if copy is not None:  # the loaded library stays mapped
            shutil.rmtree(copy, ignore_errors=True)
    code = SharedLibraryCode(handle, symbols)
    if region:
        code.weights = _place_weights(code, weights, region)
    return code


def _place_weights(code: SharedLibraryCode, weights: Path, region: int) -> object:
    """Map `weights` over the library's weights region (read-only, page by page), or
    copy it there where it cannot be mapped. Returns what must stay alive."""
    address = code.get_global_value_address(WEIGHTS_SYMBOL)
    if not address:
        raise ArtifactError(f"the artifact library has no {WEIGHTS_SYMBOL} region")
    size = weights.stat().st_size
    if size > region:
        raise ArtifactError(f"{weights.name} ({size} bytes) exceeds the library's region")
    if size == 0:
        return None
    if sys.platform.startswith("linux") and address % mmap.PAGESIZE == 0:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [
            ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
            ctypes.c_long,
        ]  # fmt: skip
        with open(weights, "rb") as f:
            length = -(-size // mmap.PAGESIZE) * mmap.PAGESIZE
            flags = mmap.MAP_PRIVATE | _MAP_FIXED
            got = libc.mmap(address, length, mmap.PROT_READ, flags, f.fileno(), 0)
        if got == address:
            return weights  # the mapping lives as long as the process (as the library)
    data = np.fromfile(weights, dtype=np.uint8)
    ctypes.memmove(address, data.ctypes.data, size)
    return None


def _copy_artifact(source: Path, exe: Executable, path: str | os.PathLike[str]) -> None:
    """`save` of a loaded artifact: a copy of its directory's files."""
    with artifact_output(path) as tmp:
        for name in FILES:
            shutil.copyfile(source / name, tmp / name)


# ---------------------------------------------------------------------------
# Writing (the files themselves are made by the compiler: driver/artifact.py)
# ---------------------------------------------------------------------------


class artifact_output:  # noqa: N801 - used as a context manager, like open()
    """`with artifact_output(DIR) as tmp:` write the files into `tmp`; on success they
    replace DIR's (the manifest last), on failure nothing is left behind.

    DIR may be missing (created, with its parents), an empty directory or an
    artifact (its files are replaced); anything else is an `ArtifactError`
    before any work is done: `-o /tmp` meant for `-o /tmp/model.so` would
    otherwise scatter an artifact's files among others.
    """

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        if self.path.exists() and not self.path.is_dir():
            raise ArtifactError(
                f"cannot write artifact '{self.path}': it exists and is not a directory"
            )
        if self.path.is_dir() and any(self.path.iterdir()) and not (self.path / MANIFEST).exists():
            raise ArtifactError(
                f"cannot write artifact '{self.path}': it is a directory with other files "
                "and no artifact; name a new or empty directory (docs/abi.md)"
            )
        self.created: list[Path] = []
        self.tmp: Path | None = None

    def __enter__(self) -> Path:
        missing = []
        parent = self.path.absolute().parent
        while not parent.exists():
            missing.append(parent)
            parent = parent.parent
        try:
            for folder in reversed(missing):
                folder.mkdir()
                self.created.append(folder)
            self.tmp = Path(
                tempfile.mkdtemp(prefix=f".{self.path.name}-", dir=self.path.absolute().parent)
            )
            self.tmp.chmod(0o755)
        except OSError as err:
            self._clean()
            raise ArtifactError(f"cannot write artifact '{self.path}': {err}") from None
        return self.tmp

    def __exit__(self, kind, value, traceback) -> None:
        assert self.tmp is not None
        if kind is not None:
            self._clean()
            return
        try:
            if not self.path.exists():
                os.rename(self.tmp, self.path)
                self.tmp = None
                return
            for name in FILES:  # the manifest last: it names the files' checksums
                os.replace(self.tmp / name, self.path / name)
        except OSError as err:
            self._clean()
            raise ArtifactError(f"cannot write artifact '{self.path}': {err}") from None
        self._clean(keep_created=True)

    def _clean(self, keep_created: bool = False) -> None:
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None
        if not keep_created:
            for folder in self.created:
                shutil.rmtree(folder, ignore_errors=True)
                break  # the outermost one created holds the others


def file_record(path: Path) -> dict[str, Any]:
    return {"file": path.name, "size": path.stat().st_size, "sha256": sha256_file(path)}


__all__ = [
    "ArtifactError",
    "FORMAT_VERSION",
    "LIBRARY",
    "MANIFEST",
    "SharedLibraryCode",
    "WEIGHTS",
    "artifact_output",
    "entries_json",
    "file_record",
    "is_directory_path",
    "load",
    "read_manifest",
]
