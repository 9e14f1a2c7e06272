"""The disk cache of compiled code (runtime/cache.py, docs/compile-cache.md).

Hits load real object code into MCJIT and run it; misses on every change of
what the code depends on; concurrent writers; corrupt entries; disabled.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

import lamina
from lamina.core.diagnostics import DiagnosticError
from lamina.driver import cache_key
from lamina.runtime import cache

PROGRAM = """\
graph.func @main(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %c = graph.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %r = graph.relu %c : (tensor<2x3xf32>) -> tensor<2x3xf32>
  graph.return %r : tensor<2x3xf32>
}
"""

A = np.array([[-1.0, 2.0, -3.0], [4.0, -5.0, 6.0]], dtype=np.float32)
B = np.array([0.5, 1.0, 1.5], dtype=np.float32)
EXPECTED = np.maximum(A + B, 0)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv(cache.CACHE_DIR_ENV, str(folder))
    monkeypatch.delenv(cache.CACHE_ENV, raising=False)
    return folder


def test_second_compile_is_a_hit_that_runs_the_cached_object(cache_dir):
    cold = lamina.compile(PROGRAM)
    assert cold.cache_hit is False and len(cache.entries()) == 1
    warm = lamina.compile(PROGRAM)
    assert warm.cache_hit is True
    assert warm.llvm_module is None  # nothing was lowered
    assert warm.compiled is not cold.compiled  # a new engine loaded from the object code
    np.testing.assert_array_equal(warm.run("main", A, B), EXPECTED)
    assert warm.functions == cold.functions == ["main"]


def test_a_new_process_hits_and_computes_the_same(cache_dir):
    lamina.compile(PROGRAM)
    script = textwrap.dedent(
        f"""
        import numpy as np, lamina
        exe = lamina.compile({PROGRAM!r})
        a = np.array({A.tolist()!r}, dtype=np.float32)
        b = np.array({B.tolist()!r}, dtype=np.float32)
        print(exe.cache_hit, exe.run("main", a, b).tolist())
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    hit, values = out.stdout.split(" ", 1)
    assert hit == "True"
    np.testing.assert_array_equal(np.array(json.loads(values), np.float32), EXPECTED)


def _key(**changes):
    settings = {"filename": "<input>", "pipeline": "default", "targets": ["cpu"]} | changes
    return cache_key.key(PROGRAM, **settings)


def test_key_changes_with_input_pipeline_targets_options_and_versions(monkeypatch):
    base = _key()
    assert _key() == base
    assert (
        cache_key.key(PROGRAM + "\n", filename="<input>", pipeline="default", targets=["cpu"])
        != base
    )
    assert _key(targets=["host"]) != base
    assert _key(options={"check_bounds": True}) != base
    assert _key(filename="other.mlir") != base
    for field in ("lamina", "lamina_source", "xdsl", "llvmlite", "llvm", "cpu", "cpu_features"):
        changed = {**cache_key.toolchain(), field: "something else"}
        with monkeypatch.context() as patch:
            patch.setattr(cache_key, "toolchain", lambda changed=changed: changed)
            assert _key() != base, field


def test_key_covers_the_pipeline_and_lamina_source(monkeypatch):
    base = _key()
    assert _key(pipeline="other") != base
    changed = {**cache_key.toolchain(), "lamina_source": "0" * 64}
    monkeypatch.setattr(cache_key, "toolchain", lambda: changed)
    assert _key() != base


def test_a_hit_imports_neither_xdsl_nor_the_code_generator(cache_dir):
    lamina.compile(PROGRAM)
    script = textwrap.dedent(
        f"""
        import sys, lamina
        exe = lamina.compile({PROGRAM!r})
        heavy = [m for m in ("xdsl.dialects.builtin", "lamina.backends.codegen") if m in sys.modules]
        print(exe.cache_hit, heavy)
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True []"


PARALLEL = """\
graph.func @main(%a: tensor<64x128xf32>, %b: tensor<128x96xf32>) -> tensor<64x96xf32> {
  %c = graph.matmul %a, %b : (tensor<64x128xf32>, tensor<128x96xf32>) -> tensor<64x96xf32>
  %r = graph.relu %c : (tensor<64x96xf32>) -> tensor<64x96xf32>
  graph.return %r : tensor<64x96xf32>
}
"""


def test_a_hit_of_parallel_code_loads_libgomp_without_the_code_generator(cache_dir):
    """Parallel loops call libgomp: a hit loads it (native_setup), not codegen or xDSL."""
    lamina.compile(PARALLEL)
    (entry,) = [cache.read(path.stem) for path in cache.entries()]
    assert entry.metadata["openmp"] is True  # the case this test is about
    script = textwrap.dedent(
        f"""
        import sys, numpy as np, lamina
        from lamina.runtime import native_setup
        exe = lamina.compile({PARALLEL!r})
        heavy = [m for m in ("xdsl.dialects.builtin", "xdsl.ir", "lamina.backends.codegen")
                 if m in sys.modules]
        rng = np.random.default_rng(0)
        a = rng.standard_normal((64, 128), dtype=np.float32)
        b = rng.standard_normal((128, 96), dtype=np.float32)
        err = float(np.abs(exe.run("main", a, b) - np.maximum(a @ b, 0)).max())
        print(exe.cache_hit, heavy, err < 1e-3, native_setup.get_max_threads())
        """
    )
    env = {**os.environ, "LAMINA_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "[]", "True", "1"]


def test_changed_target_and_version_miss(cache_dir, monkeypatch):
    lamina.compile(PROGRAM)
    assert lamina.compile(PROGRAM, targets=["host"]).cache_hit is False
    changed = {**cache_key.toolchain(), "llvm": "0.0.0"}
    monkeypatch.setattr(cache_key, "toolchain", lambda: changed)
    exe = lamina.compile(PROGRAM)
    assert exe.cache_hit is False
    np.testing.assert_array_equal(exe.run("main", A, B), EXPECTED)
    assert len(cache.entries()) == 3


def test_concurrent_writers_in_processes_leave_one_whole_entry(cache_dir):
    script = textwrap.dedent(
        f"""
        import numpy as np, lamina
        exe = lamina.compile({PROGRAM!r})
        a = np.array({A.tolist()!r}, dtype=np.float32)
        b = np.array({B.tolist()!r}, dtype=np.float32)
        print(exe.run("main", a, b).tolist())
        """
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    for proc in procs:
        stdout, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0
        np.testing.assert_array_equal(np.array(json.loads(stdout), np.float32), EXPECTED)
    assert len(cache.entries()) == 1
    assert cache.decode(cache.entries()[0].read_bytes()) is not None
    assert not list(cache_dir.glob(".*.tmp"))


def test_concurrent_writers_in_threads_never_expose_a_torn_entry(cache_dir):
    entry = cache.Entry(b"\x7fELF" + bytes(range(256)) * 64, {"n": 1})
    key = "0" * 64
    seen: list[object] = []

    def writer():
        for _ in range(20):
            cache.write(key, entry)

    def reader():
        for _ in range(60):
            found = cache.read(key)
            if found is not None:
                seen.append(found)

    threads = [threading.Thread(target=f) for f in (writer, writer, reader)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(found == entry for found in seen)
    assert cache.read(key) == entry


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "empty"])
def test_a_corrupt_entry_is_ignored_and_rebuilt(cache_dir, damage):
    lamina.compile(PROGRAM)
    (path,) = cache.entries()
    data = path.read_bytes()
    if damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "flip":
        middle = len(data) // 2
        data = data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1 :]
    elif damage == "garbage":
        data = b"not a cache entry" * 10
    else:
        data = b""
    path.write_bytes(data)
    assert cache.decode(data) is None
    exe = lamina.compile(PROGRAM)
    assert exe.cache_hit is False  # never loaded
    np.testing.assert_array_equal(exe.run("main", A, B), EXPECTED)
    assert cache.decode(path.read_bytes()) is not None  # rebuilt
    assert lamina.compile(PROGRAM).cache_hit is True


def test_an_intact_entry_with_unusable_metadata_is_a_miss(cache_dir):
    lamina.compile(PROGRAM)
    (path,) = cache.entries()
    entry = cache.decode(path.read_bytes())
    path.write_bytes(cache.encode(cache.Entry(entry.object_code, {"signatures": 3})))
    exe = lamina.compile(PROGRAM)
    assert exe.cache_hit is False
    np.testing.assert_array_equal(exe.run("main", A, B), EXPECTED)


@pytest.mark.parametrize("value", ["0", "off", "false", "no"])
def test_disabled_by_environment(cache_dir, monkeypatch, value):
    monkeypatch.setenv(cache.CACHE_ENV, value)
    assert not cache.enabled()
    exe = lamina.compile(PROGRAM)
    assert exe.cache_hit is None
    assert not cache_dir.exists()
    np.testing.assert_array_equal(exe.run("main", A, B), EXPECTED)


def test_disabled_per_call_and_clear(cache_dir):
    assert lamina.compile(PROGRAM, cache=False).cache_hit is None
    assert not cache_dir.exists()
    lamina.compile(PROGRAM)
    assert len(cache.entries()) == 1
    assert lamina.cache.clear() == 1
    assert cache.entries() == []
    assert lamina.compile(PROGRAM).cache_hit is False


def test_a_user_error_leaves_no_entry(cache_dir):
    with pytest.raises(DiagnosticError):
        lamina.compile("graph.func @main(%a: tensor<2xf32>) -> tensor<3xf32> {\n}\n")
    with pytest.raises(DiagnosticError):
        lamina.compile(PROGRAM, targets=["no-such-target"])
    with pytest.raises(DiagnosticError):
        lamina.compile(PROGRAM, pipeline="no-such-pipeline")
    assert cache.entries() == []


def test_an_unwritable_cache_directory_only_costs_speed(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv(cache.CACHE_DIR_ENV, str(blocker / "cache"))
    exe = lamina.compile(PROGRAM)
    np.testing.assert_array_equal(exe.run("main", A, B), EXPECTED)


def test_default_directory_follows_the_platform(monkeypatch, tmp_path):
    monkeypatch.delenv(cache.CACHE_DIR_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    if sys.platform.startswith("linux"):
        assert cache.directory() == tmp_path / "xdg" / "lamina"
    monkeypatch.setenv(cache.CACHE_DIR_ENV, str(tmp_path / "mine"))
    assert cache.directory() == tmp_path / "mine"


def test_the_suite_never_uses_the_real_cache_directory():
    from pathlib import Path

    assert Path.home() / ".cache" not in cache.directory().parents


MATMUL = """\
graph.func @main(%a: tensor<64x256xf32>, %b: tensor<256x128xf32>) -> tensor<64x128xf32> {
  %c = graph.matmul %a, %b : (tensor<64x256xf32>, tensor<256x128xf32>) -> tensor<64x128xf32>
  graph.return %c : tensor<64x128xf32>
}
"""


def test_a_hit_of_code_with_parallel_loops_sets_up_openmp(cache_dir):
    cold = lamina.compile(MATMUL)
    (path,) = cache.entries()
    assert cache.decode(path.read_bytes()).metadata["openmp"] is True
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 256)).astype(np.float32)
    b = rng.standard_normal((256, 128)).astype(np.float32)
    warm = lamina.compile(MATMUL)
    assert warm.cache_hit is True
    np.testing.assert_allclose(warm.run("main", a, b), a @ b, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(warm.run("main", a, b), cold.run("main", a, b))


# ---------------------------------------------------------------------------
# Plugins are in the key
# ---------------------------------------------------------------------------

SATX = os.path.join(os.path.dirname(__file__), "plugin_satx")

SIGMOID = """\
import sys, numpy as np, lamina
exe = lamina.compile(open(sys.argv[1]).read(), targets=["satx"])
x = np.linspace(-4, 4, 32, dtype=np.float32).reshape(4, 8)
print(exe.cache_hit, float(np.abs(exe.run("main", x) - 1 / (1 + np.exp(-x))).max()))
"""


def test_a_changed_plugin_lower_recompiles(tmp_path):
    """The installed plugin's code is in the key: editing its kernel (same version)
    misses, and the new code runs."""
    from plugin_util import pip_install

    site = pip_install(Path(SATX), tmp_path)
    env = {**os.environ, "PYTHONPATH": str(site), cache.CACHE_DIR_ENV: str(tmp_path / "cache")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"

    def compile_sigmoid() -> tuple[str, float]:
        args = [sys.executable, "-c", SIGMOID, os.path.join(SATX, "sigmoid.mlir")]
        out = subprocess.run(args, env=env, capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        hit, error = out.stdout.split()
        return hit, float(error)

    assert compile_sigmoid()[0] == "False"
    hit, error = compile_sigmoid()
    assert hit == "True" and error < 1e-6
    kernel = site / "lamina_satx" / "target.py"
    kernel.write_text(
        kernel.read_text().replace("%r = arith.divf %one, %d", "%r = arith.divf %d, %d")
    )
    hit, error = compile_sigmoid()  # the kernel now computes 1 everywhere
    assert hit == "False" and error > 0.4


def test_plugin_identity_covers_installed_packages_and_load_plugin_scripts(tmp_path, monkeypatch):
    info = tmp_path / "demo_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: demo-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[lamina.targets]\ndemo = demo_mod:target\n")
    module = tmp_path / "demo_mod.py"
    module.write_text("target = None\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    cache_key.installed_plugins.cache_clear()
    first = cache_key.plugin_identity()["package demo-plugin"]
    assert first.startswith("1.0:")
    module.write_text("target = 1\n")
    cache_key.installed_plugins.cache_clear()
    assert cache_key.plugin_identity()["package demo-plugin"] != first

    from lamina.core import plugins

    script = tmp_path / "script_plugin.py"
    script.write_text("VALUE = 1\n")
    monkeypatch.setattr(plugins, "_loaded_files", {})
    base = _key()
    plugins.load_plugin(str(script))
    with_script = _key()
    assert with_script != base
    script.write_text("VALUE = 2\n")
    assert _key() != with_script
    cache_key.installed_plugins.cache_clear()


# ---------------------------------------------------------------------------
# Only this user's files are trusted
# ---------------------------------------------------------------------------

posix_only = pytest.mark.skipif(os.name == "nt", reason="POSIX ownership and modes")
OTHER_UID = 4242


@posix_only
def test_a_new_cache_directory_is_owner_only(cache_dir):
    lamina.compile(PROGRAM)
    assert cache_dir.stat().st_mode & 0o777 == 0o700
    (path,) = cache.entries()
    assert path.stat().st_mode & 0o077 == 0


@posix_only
def test_a_group_writable_cache_directory_is_ignored_with_a_warning(cache_dir, capfd):
    lamina.compile(PROGRAM)  # a good entry, that must not be loaded from now on
    cache_dir.chmod(0o775)
    capfd.readouterr()
    for _ in range(2):
        exe = lamina.compile(PROGRAM)
        assert not exe.cache_hit
        np.testing.assert_array_equal(exe.run("main", A, B), EXPECTED)
    (line,) = capfd.readouterr().err.splitlines()  # one line, once
    assert line == (
        f"lamina: warning: not using the compile cache directory '{cache_dir}': group or "
        "others can write to it (mode 0775); compiling without it"
    )
    assert len(cache.entries()) == 1  # nothing written there either


@posix_only
@pytest.mark.skipif(os.name != "nt" and os.geteuid() != 0, reason="chown needs root")
def test_a_foreign_owned_directory_is_ignored_with_a_warning(cache_dir, capfd):
    lamina.compile(PROGRAM)
    os.chown(cache_dir, OTHER_UID, -1)
    exe = lamina.compile(PROGRAM)
    assert not exe.cache_hit
    np.testing.assert_array_equal(exe.run("main", A, B), EXPECTED)
    assert f"belongs to another user (uid {OTHER_UID}); compiling without it" in (
        capfd.readouterr().err
    )


@posix_only
@pytest.mark.skipif(os.name != "nt" and os.geteuid() != 0, reason="chown needs root")
def test_a_foreign_owned_entry_is_ignored_then_replaced_by_this_users(cache_dir, capfd):
    """An entry someone else planted (here: the right code, under another owner) is not
    loaded; this compile's own entry replaces it and is loaded next time."""
    lamina.compile(PROGRAM)
    (path,) = cache.entries()
    os.chown(path, OTHER_UID, -1)
    capfd.readouterr()
    exe = lamina.compile(PROGRAM)
    assert not exe.cache_hit
    np.testing.assert_array_equal(exe.run("main", A, B), EXPECTED)
    (line,) = capfd.readouterr().err.splitlines()
    assert line == (
        f"lamina: warning: ignoring the compile cache entry '{path}': it belongs to another "
        f"user (uid {OTHER_UID}); compiling without it"
    )
    assert path.stat().st_uid == os.geteuid()
    warm = lamina.compile(PROGRAM)
    assert warm.cache_hit
    np.testing.assert_array_equal(warm.run("main", A, B), EXPECTED)


@posix_only
def test_a_group_writable_entry_is_ignored(cache_dir, capfd):
    lamina.compile(PROGRAM)
    (path,) = cache.entries()
    path.chmod(0o664)
    assert cache.read(path.stem) is None
    assert "group or others can write to it (mode 0664)" in capfd.readouterr().err
    exe = lamina.compile(PROGRAM)
    assert not exe.cache_hit
    np.testing.assert_array_equal(exe.run("main", A, B), EXPECTED)


BIG = np.random.default_rng(1).standard_normal((512, 600)).astype(np.float32)  # 1.2 MB
BIG_PROGRAM = f"""\
graph.func @main(%x: tensor<2x512xf32>) -> tensor<2x600xf32> {{
  %w = graph.constant dense<"0x{BIG.tobytes().hex().upper()}"> : tensor<512x600xf32>
  %y = graph.matmul %x, %w : (tensor<2x512xf32>, tensor<512x600xf32>) -> tensor<2x600xf32>
  graph.return %y : tensor<2x600xf32>
}}
"""


def test_a_hit_uses_the_weights_in_the_mapped_entry_without_copying(cache_dir, tmp_path):
    """A large entry is mapped read-only and its constant blob registered where it is:
    the weight's symbol points into the mapping (a new process: nothing registered yet)."""
    path = tmp_path / "big.mlir"
    path.write_text(BIG_PROGRAM)
    x = np.random.default_rng(2).standard_normal((2, 512)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    assert lamina.compile(str(path)).cache_hit is False
    script = textwrap.dedent(
        f"""
        import numpy as np, lamina, llvmlite.binding as llvm
        from lamina.runtime import cache, constant_blob
        exe = lamina.compile({str(path)!r})
        code = exe.compiled.object_code
        assert exe.cache_hit is True and isinstance(code, memoryview), type(code)
        start = np.frombuffer(code, np.uint8).ctypes.data
        table, _ = constant_blob.unpack(cache.unpack_objects(code)[1])
        assert table
        for symbol in table:
            assert start <= llvm.address_of_symbol(symbol) < start + len(code), symbol
        np.save({str(tmp_path / "y.npy")!r}, exe.run("main", np.load({str(tmp_path / "x.npy")!r})))
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=300)
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), x @ BIG, rtol=1e-4, atol=1e-4)


def test_the_checksum_covers_every_chunk(monkeypatch):
    """The entry's checksum hashes chunks on several threads; a flip in any chunk fails it."""
    monkeypatch.setattr(cache, "_CHUNK", 1000)
    entry = cache.Entry(bytes(range(256)) * 40, {"n": 1})
    data = cache.encode(entry)
    assert cache.decode(data) == entry
    for at in (100, len(data) // 2, len(data) - 40):
        damaged = data[:at] + bytes([data[at] ^ 1]) + data[at + 1 :]
        assert cache.decode(damaged) is None


def test_a_model_files_digest_is_remembered_until_the_file_changes(cache_dir, tmp_path):
    model = tmp_path / "m.bin"
    model.write_bytes(b"a" * 1000)
    old = (model.stat().st_mtime_ns - 10**10) / 1e9
    os.utime(model, (old, old))  # the status-change time is now: too recent to remember
    expected = cache.hashlib.sha256(b"a" * 1000).hexdigest()
    assert cache.file_digest(model) == expected
    assert not (cache_dir / cache.DIGEST_FOLDER).exists()
    status = model.stat()
    fake = cache_dir / cache.DIGEST_FOLDER / "x"
    memo = {"status": [status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns,
                       status.st_ctime_ns], "sha256": "remembered"}  # fmt: skip
    fake.parent.mkdir(parents=True, mode=0o700)
    name = cache.hashlib.sha256(os.path.realpath(model).encode()).hexdigest() + ".json"
    (fake.parent / name).write_text(json.dumps(memo))
    assert cache.file_digest(model) == "remembered"  # same status: not read again
    assert cache.file_digest(model, remember=False) == expected
    model.write_bytes(b"b" * 1000)  # same size, new times
    assert cache.file_digest(model) == cache.hashlib.sha256(b"b" * 1000).hexdigest()


def test_entry_written_in_pieces_is_the_entry_of_the_joined_object_code(tmp_path):
    """A model's object code is stored in pieces (objects, table, each weight) without
    packing it first: the entry is byte for byte the one of the packed bytes, and
    reads back as the packed object code with the constants where `unpack` finds them."""
    from lamina.runtime import constant_blob

    rng = np.random.default_rng(3)
    constants = {f"__lamina_w_{i:02d}": rng.bytes(n) for i, n in enumerate([1024, 1100, 4097, 1])}
    objects = [b"\x7fELF" + rng.bytes(100), rng.bytes(77)]
    pieces = cache.pack_object_pieces(objects, constant_blob.pack_pieces(constants))
    packed = cache.pack_objects(objects, constant_blob.pack(constants))
    assert b"".join(pieces) == packed
    assert cache.encode(cache.PiecewiseEntry(pieces, {"n": 1})) == cache.encode(
        cache.Entry(packed, {"n": 1})
    )
    cache.write("k" * 64, cache.PiecewiseEntry(pieces, {"n": 1}), folder=tmp_path)
    entry = cache.read("k" * 64, folder=tmp_path)
    assert entry is not None and bytes(entry.object_code) == packed
    got, blob = cache.unpack_objects(entry.object_code)
    table, data = constant_blob.unpack(blob)
    assert got == objects
    assert {s: bytes(data[o : o + n]) for s, (o, n) in table.items()} == constants


def test_a_large_files_digest_is_hashed_on_a_thread_while_the_steps_run(
    cache_dir, tmp_path, monkeypatch
):
    """`file_digest(meanwhile=...)`: the digest of a large file is the file's SHA-256,
    and the steps stop when they say so; a small file, or a remembered digest, runs none.

    The hashing thread waits for the third step (a gate), so the steps run while
    it hashes whatever the machine's timing: unhindered, a 3 MiB file can be
    hashed before the first step."""
    data = np.random.default_rng(5).bytes(3 * cache.HASH_ON_A_THREAD_BYTES)
    model = tmp_path / "big.bin"
    model.write_bytes(data)
    expected = cache.hashlib.sha256(data).hexdigest()
    steps: list[int] = []
    gate = threading.Event()
    sha256 = cache.hashlib.sha256

    def gated_sha256(*args, **kwargs):
        if threading.current_thread().name == "lamina-file-digest":  # not the memo's name
            assert gate.wait(60), "the steps did not run while the file was hashed"
        return sha256(*args, **kwargs)

    def step() -> bool:
        steps.append(len(steps))
        if len(steps) == 3:
            gate.set()
        return len(steps) < 3

    with monkeypatch.context() as patched:
        patched.setattr(cache.hashlib, "sha256", gated_sha256)
        assert cache.file_digest(model, remember=False, meanwhile=step) == expected
    assert steps == [0, 1, 2]
    small = tmp_path / "small.bin"
    small.write_bytes(b"x" * 100)
    steps.clear()
    digest = cache.file_digest(small, remember=False, meanwhile=step)
    assert digest == cache.hashlib.sha256(b"x" * 100).hexdigest() and steps == []


def test_a_large_entry_is_written_in_the_background_and_read_back(tmp_path):
    """`write(..., background=True)` of an entry of `BACKGROUND_BYTES` or more returns
    before it is written; this process's `read`/`entries` wait for it (`flush`), and
    the metadata is the one given, whatever the caller changes afterwards."""
    code = np.random.default_rng(7).bytes(cache.BACKGROUND_BYTES + 5)
    metadata = {"timings": {"codegen": 1.0}}
    path = cache.write("b" * 64, cache.Entry(code, metadata), folder=tmp_path, background=True)
    metadata["timings"]["total"] = 2.0  # set by the driver after the store
    assert path == tmp_path / f"{'b' * 64}{cache.SUFFIX}"
    entry = cache.read("b" * 64, folder=tmp_path)
    assert entry is not None and bytes(entry.object_code) == code
    assert entry.metadata == {"timings": {"codegen": 1.0}}
    small = cache.write("s" * 64, cache.Entry(b"tiny", {}), folder=tmp_path, background=True)
    assert small is not None and small.exists() and not cache._writers  # written at once


def test_prefilled_weights_are_registered_by_the_next_register():
    """`constant_blob.prefill` lays the weights out on a thread; the next `register` of
    them waits for it and registers them (their symbols resolve to their bytes)."""
    import ctypes

    import llvmlite.binding as llvm

    from lamina.runtime import constant_blob

    rng = np.random.default_rng(11)
    constants = {f"__lamina_w_prefill_test_{i}": rng.bytes(5000 + i) for i in range(3)}
    constant_blob.prefill(constants)
    _, size = constant_blob.layout({s: len(d) for s, d in constants.items()})
    assert constant_blob.register(constants) == size  # the prefilled blob, nothing else
    for symbol, data in constants.items():
        address = llvm.address_of_symbol(symbol)
        assert address and ctypes.string_at(address, len(data)) == data
    assert constant_blob.register(constants) == 0  # registered already
