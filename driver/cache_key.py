"""The disk-cache key of a compile: everything the compiled code depends on.

runtime/cache.py stores and loads entries (without the compiler); this is
the compiler's half, the key an entry is stored under. It covers

* the input exactly as given (the program text, or the printed module),
  and the file name it is reported under;
* the pipeline (its name), the targets with their options (so the
  instruction set, `cpu{isa=avx2}`), the compile options;
* the versions of Lamina (its version *and* a digest of its source files,
  so an edited checkout never reuses a stale entry), xDSL, llvmlite and
  LLVM, the host CPU and its features, the Python version;
* the plugins (`plugin_identity`): every installed package with a
  `lamina.targets` or `xdsl.universe` entry point, by name, version and a
  digest of its code, and every module registered from Python in this
  process (`--load-plugin` scripts, `register_target`, `register_pass`), by
  a digest of its file, so that a changed plugin `lower` recompiles.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
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


PLUGIN_GROUPS = ("lamina.targets", "xdsl.universe")
"""Entry-point groups whose packages change what a compile produces."""


def _file_digest(paths: Iterable[Path]) -> str:
    digest = hashlib.sha256()
    for path in sorted(paths):
        try:
            data = path.read_bytes()
        except OSError:
            data = b"<unreadable>"
        digest.update(path.as_posix().encode() + b"\0" + data + b"\0")
    return digest.hexdigest()


def _module_files(module: str) -> list[Path]:
    """The source files of top-level module or package `module` (not imported)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return []
    if spec is None:
        return []
    if spec.submodule_search_locations:
        return [f for folder in spec.submodule_search_locations for f in Path(folder).rglob("*.py")]
    return [Path(spec.origin)] if spec.origin and Path(spec.origin).is_file() else []


def _plugin_distributions() -> dict[str, tuple[str, set[str]]]:
    """Installed distributions with a plugin entry point: name -> (version, top-level modules).

    Reads the `entry_points.txt` of each `.dist-info` on `sys.path` directly:
    `importlib.metadata` would cost every hit its import. The first
    distribution of a name on `sys.path` wins, as for importlib.metadata.
    """
    found: dict[str, tuple[str, set[str]]] = {}
    for folder in sys.path:
        try:
            infos = [
                e for e in os.scandir(folder or ".") if e.name.endswith((".dist-info", ".egg-info"))
            ]
        except OSError:
            continue
        for info in sorted(infos, key=lambda e: e.name):
            modules = _plugin_modules(Path(info.path) / "entry_points.txt")
            if not modules:
                continue
            name, version = _name_version(Path(info.path), info.name)
            found.setdefault(name, (version, modules))
    return found


def _plugin_modules(entry_points_file: Path) -> set[str]:
    """Top-level modules of the plugin entry points (`PLUGIN_GROUPS`) a file declares."""
    try:
        text = entry_points_file.read_text(encoding="utf-8")
    except OSError:
        return set()
    modules, group = set(), None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            group = line.strip("[]").strip()
        elif group in PLUGIN_GROUPS and "=" in line:
            entry, _, value = line.partition("=")
            if group == "xdsl.universe" and entry.strip() == "xdsl":
                continue  # xDSL's own universe: its version is in the toolchain
            modules.add(value.strip().split(":")[0].split(".")[0])
    return modules


def _name_version(info: Path, folder: str) -> tuple[str, str]:
    """A distribution's name and version, from its METADATA (or the folder's name)."""
    name, _, version = folder.rsplit(".", 1)[0].partition("-")
    for metadata in ("METADATA", "PKG-INFO"):
        try:
            lines = (info / metadata).read_text(encoding="utf-8").splitlines()
        except OSError:
            continue
        for line in lines:
            if line.startswith("Name:"):
                name = line.partition(":")[2].strip()
            elif line.startswith("Version:"):
                version = line.partition(":")[2].strip()
            elif not line:
                break
        break
    return name.lower().replace("_", "-"), version


@cache
def installed_plugins() -> dict[str, str]:
    """Each installed plugin distribution -> `version:digest of its modules' source`."""
    return {
        name: f"{version}:{_file_digest(f for m in sorted(modules) for f in _module_files(m))}"
        for name, (version, modules) in sorted(_plugin_distributions().items())
    }


def plugin_identity() -> dict[str, str]:
    """What identifies the plugins a compile in this process may run (see the module doc).

    Installed packages are read once per process; code registered from
    Python is looked up each time (only when Lamina's registries are
    loaded, which a cache hit never needs otherwise).
    """
    found = {f"package {k}": v for k, v in installed_plugins().items()}
    plugins = sys.modules.get("lamina.core.plugins")
    modules: dict[str, list[str]] = {}
    if plugins is not None:
        for spec, path in plugins.loaded_plugin_files().items():
            found[f"load-plugin {spec}"] = _file_digest([Path(path)] if path else [])
        for name, module in plugins.python_pass_modules().items():
            modules[f"pass {name}"] = [module]
    targets = sys.modules.get("lamina.target.registry")
    if targets is not None:
        for name, names in targets.python_target_modules().items():
            modules[f"target {name}"] = names
    for label, names in modules.items():
        files = [Path(f) for m in names if (f := getattr(sys.modules.get(m), "__file__", None))]
        found[label] = _file_digest(files)
    return found


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
    pass and target, is Lamina source (in `source_digest`); code from another
    package or script is in `plugin_identity`.
    """
    fields = {
        "format": FORMAT.decode().strip(),
        "filename": filename,
        "pipeline": pipeline,
        "targets": list(targets),
        "options": {k: repr(v) for k, v in sorted((options or {}).items())},
        "toolchain": toolchain(),
        "plugins": plugin_identity(),
        "extra": dict(extra or {}),
    }
    digest = hashlib.sha256(json.dumps(fields, sort_keys=True).encode())
    digest.update(b"\0")
    digest.update(source.encode())
    return digest.hexdigest()


__all__ = [
    "installed_plugins",
    "installed_version",
    "key",
    "plugin_identity",
    "source_digest",
    "toolchain",
]
