"""The disk-cache key of a compile: everything the compiled code depends on.

runtime/cache.py stores and loads entries (without the compiler); this is
the compiler's half, the key an entry is stored under. It covers

* the input exactly as given (the program text, or the printed module),
  and the file name it is reported under;
* the pipeline (its name), the targets, the compile options;
* the versions of Lamina (its version *and* a digest of its source files,
  so an edited checkout never reuses a stale entry), xDSL, llvmlite and
  LLVM, the host CPU and its features, the Python version.
"""

from __future__ import annotations

import hashlib
import json
import platform
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from types import ModuleType

from lamina.runtime.cache import FORMAT


@cache
def source_digest() -> str:
    """SHA-256 over Lamina's own source files: any edit of the compiler changes every key.

    Only the package's own folders are read (never a `.venv` or `tests/`
    that an editable checkout keeps next to them).
    """
    root = Path(__file__).resolve().parent.parent
    files = [root / "__init__.py"]
    for folder in sorted(root.iterdir()):
        if folder.is_dir() and (folder / "__init__.py").is_file() and folder.name != "tests":
            files += sorted(folder.rglob("*.py"))
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def installed_version(package: ModuleType) -> str:
    """The installed version of `package`, read from its `.dist-info` next to it.

    `importlib.metadata` would cost a hit ~25 ms of imports; it is the
    fallback when the directory holds no single dist-info for the package.
    """
    name = package.__name__
    assert package.__file__ is not None, f"{name} is a package with files"
    folder = Path(package.__file__).resolve().parent.parent
    infos = list(folder.glob(f"{name}-*.dist-info"))
    if len(infos) == 1:
        try:
            for line in (infos[0] / "METADATA").read_text(encoding="utf-8").splitlines():
                if line.startswith("Version:"):
                    return line.partition(":")[2].strip()
                if not line:
                    break  # end of the headers
        except OSError:
            pass
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return str(getattr(package, "__version__", "unknown"))


@cache
def toolchain() -> dict[str, str]:
    """Versions of everything that shapes the code, besides the input and options.

    Cheap on purpose (no xDSL import, no package metadata scan): a hit must
    cost milliseconds. Lamina's own settings (O3, the pipeline's passes)
    are covered by `source_digest`.
    """
    import llvmlite
    import llvmlite.binding as llvm
    import xdsl

    import lamina

    return {
        "lamina": lamina.__version__,
        "lamina_source": source_digest(),
        "xdsl": installed_version(xdsl),
        "llvmlite": llvmlite.__version__,
        "llvm": ".".join(map(str, llvm.llvm_version_info)),
        "cpu": llvm.get_host_cpu_name(),
        "cpu_features": llvm.get_host_cpu_features().flatten(),
        "triple": llvm.get_process_triple(),
        "python": platform.python_version(),
    }


def key(
    source: str,
    *,
    filename: str,
    pipeline: str,
    targets: Iterable[str],
    options: Mapping[str, object] | None = None,
    extra: Mapping[str, str] | None = None,
) -> str:
    """The cache key (hex SHA-256) of compiling `source` with these settings.

    The pipeline is named, not expanded: its definition, and every built-in
    pass and target, is Lamina source (in `source_digest`). Code from another
    package (a plugin target's hooks) is not in the key: clear the cache
    after changing such code.
    """
    fields = {
        "format": FORMAT.decode().strip(),
        "filename": filename,
        "pipeline": pipeline,
        "targets": list(targets),
        "options": {k: repr(v) for k, v in sorted((options or {}).items())},
        "toolchain": toolchain(),
        "extra": dict(extra or {}),
    }
    digest = hashlib.sha256(json.dumps(fields, sort_keys=True).encode())
    digest.update(b"\0")
    digest.update(source.encode())
    return digest.hexdigest()


__all__ = ["installed_version", "key", "source_digest", "toolchain"]
