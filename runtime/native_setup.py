"""The process-wide native set-up that compiled code needs, without the code generator.

Generated code calls libm/libc, libgomp (parallel loops), compiler-runtime
helpers (libgcc_s: f16 conversions) and libraries a target registered (a
CBLAS). MCJIT resolves those symbols from libraries loaded into the process,
so they must be loaded before an object is linked: by the code generator
before a cold compile, and by the disk cache before a hit. A hit must cost
milliseconds, so this module imports only `ctypes`, and `llvmlite.binding`
(MCJIT's symbol resolution) when it first loads a library, never xDSL nor
`backends/codegen.py` (whose imports alone take ~0.3 s); `codegen`
re-exports its functions.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import threading
from types import ModuleType

from lamina.runtime.env import env_int

NUM_THREADS_ENV = "LAMINA_NUM_THREADS"
"""Environment variable: how many threads parallel loops use (default: all cores)."""


class LibraryLoadError(OSError):
    """A library could not be loaded (codegen turns this into a diagnostic)."""


_init_lock = threading.Lock()
_initialized = False
_gomp: ctypes.CDLL | None = None

libraries: list[str] = []
"""Libraries registered with `register_library`, in order (a cache entry lists them)."""


def _llvm() -> ModuleType:
    """`llvmlite.binding`, imported on first use: importing the runtime does not load LLVM."""
    import llvmlite.binding

    return llvmlite.binding


_SONAMES = {"m": "libm.so.6", "c": "libc.so.6", "gomp": "libgomp.so.1", "gcc_s": "libgcc_s.so.1"}
"""glibc's names of the libraries generated code calls: `find_library` runs `ldconfig -p`
in a new process per call (about 10 ms each, on every cache hit); the loader finds these."""


def find_library(name: str) -> str | None:
    """`ctypes.util.find_library(name)`, without a process when the glibc soname loads."""
    soname = _SONAMES.get(name) if sys.platform.startswith("linux") else None
    if soname is not None:
        try:
            ctypes.CDLL(soname)
            return soname
        except OSError:
            pass
    return ctypes.util.find_library(name)


def ensure_native() -> None:
    """Initialize LLVM's native target once, and load the libraries generated code calls."""
    global _initialized
    with _init_lock:
        if _initialized:
            return
        llvm = _llvm()
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        llvm.initialize_native_asmparser()
        for lib in ("m", "c"):
            path = find_library(lib)
            if path:
                llvm.load_library_permanently(path)
        _load_openmp()
        load_runtime_libraries()
        _install_call_team(llvm)
        _initialized = True


def _install_call_team(llvm: ModuleType) -> None:
    """Route generated code's parallel regions through one team per call when
    `LAMINA_CALL_TEAM` asks for it (runtime/call_team.py); before any code is linked."""
    from lamina.runtime import call_team

    if _gomp is not None and call_team.requested():
        call_team.install(_gomp, llvm, _call_team_object_cache(llvm, call_team.RUNTIME_IR))


def _call_team_object_cache(llvm: ModuleType, ir: str) -> tuple | None:
    """MCJIT's object cache for the call team's runtime: its object code from the disk
    cache's `kernels/` folder, stored there after the first compile (LLVM took 0.06-0.1 s
    of CPU for it in every process, a cache hit's included). None when the cache is off.

    The key covers what the code depends on: the IR text, the LLVM and llvmlite
    versions, the process triple and the host CPU (the runtime is built for the default
    CPU at O2, call_team.install).
    """
    from lamina.runtime import cache

    if not cache.enabled():
        return None
    import hashlib

    import llvmlite

    facts = [
        "lamina-call-team-1",
        ir,
        ".".join(map(str, llvm.llvm_version_info)),
        llvmlite.__version__,
        llvm.get_process_triple(),
        llvm.get_host_cpu_name(),
        llvm.get_host_cpu_features().flatten(),
    ]
    key = hashlib.sha256("\0".join(facts).encode()).hexdigest()

    folder = cache.kernel_directory()

    def getbuffer(_module) -> bytes | None:
        try:
            entry = cache.read(key, folder=folder)
        except OSError:
            return None
        return None if entry is None else bytes(entry.object_code)

    def notify(_module, buffer: bytes) -> None:
        # Not a kernel's object (`write_kernel`): metadata of its own.
        try:
            cache.write(key, cache.Entry(bytes(buffer), {"runtime": "call team"}), folder=folder)
        except OSError:
            pass  # an unwritable cache only costs speed

    return notify, getbuffer


def load_runtime_libraries() -> None:
    """Make compiler-runtime helpers (f16 conversions, ...) resolvable by the JIT.

    A symbol still missing afterwards is reported by `jit_symbols` as a
    diagnostic (never a call to address 0).
    """
    path = find_library("gcc_s")
    if path:
        try:
            _llvm().load_library_permanently(path)
        except RuntimeError:
            pass  # then a program needing a helper fails with jit_symbols' diagnostic


def _load_openmp() -> None:
    """Load libgomp for parallel loops (`GOMP_parallel`), honouring LAMINA_NUM_THREADS,
    and make it resolvable by the JIT."""
    path = load_openmp()
    if path is not None:  # else parallel loops fail to link with a clear LLVM error
        _llvm().load_library_permanently(path)


def load_openmp() -> str | None:
    """Load libgomp into the process (its path; None if it is not installed).

    libgomp reads OMP_NUM_THREADS (and OMP_WAIT_POLICY, default here
    `passive`) once, when it is loaded, so the values are exported first; if
    libgomp was already loaded by someone else, the calling thread's thread
    count is still changed with `omp_set_num_threads`. An artifact's library
    (runtime/artifact.py) calls this before it is loaded: it links libgomp,
    which would otherwise start with its defaults.
    """
    global _gomp
    threads = env_int(NUM_THREADS_ENV, None, minimum=1)
    if threads:
        os.environ["OMP_NUM_THREADS"] = str(threads)
    # Idle workers sleep instead of spinning: on a shared or oversubscribed
    # machine spinning made a 256^3 matmul 30x slower (measured, 2 cores).
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    path = find_library("gomp")  # may load it: the variables are set first
    if path is None:
        return None
    _gomp = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    if threads:
        _gomp.omp_set_num_threads(ctypes.c_int(threads))
    return path


def register_library(path: str | os.PathLike[str]) -> None:
    """Make an external library's symbols callable from generated code.

    Raises LibraryLoadError if it does not load.
    """
    ensure_native()
    path = os.fspath(path)
    if path in libraries:
        return
    try:
        ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        _llvm().load_library_permanently(path)
    except (OSError, RuntimeError) as err:
        raise LibraryLoadError(f"cannot load library '{path}': {err}") from None
    libraries.append(path)


def set_num_threads(count: int) -> None:
    """Threads used by parallel loops started from the calling thread."""
    ensure_native()
    if _gomp is not None:
        _gomp.omp_set_num_threads(ctypes.c_int(count))


def get_max_threads() -> int:
    """Threads a parallel loop started from the calling thread would use."""
    ensure_native()
    return int(_gomp.omp_get_max_threads()) if _gomp is not None else 1
