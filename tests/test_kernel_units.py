"""A module compiled in units: one per kernel, keyed and cached, built in parallel
(backends/kernel_split.py, kernel_cache.py, parallel_build.py, runtime/constant_blob.py).

Real compiles and runs against NumPy and against the same module compiled
whole (`LAMINA_SPLIT_KERNELS=0`); kernels found again in memory and on disk;
keys independent of the names a model gives its kernels; deterministic
object code whatever the number of threads.
"""

from __future__ import annotations

import ctypes
import json

import llvmlite.binding as llvm
import numpy as np
import pytest

import lamina
from lamina.backends import codegen, kernel_cache, kernel_split
from lamina.backends.parallel_build import THREADS_ENV
from lamina.runtime import cache, constant_blob

RNG = np.random.default_rng(0)
W = RNG.standard_normal((8, 4, 3, 3)).astype(np.float32)  # 1152 bytes: goes to the blob
B = RNG.standard_normal(8).astype(np.float32)
X = RNG.standard_normal((1, 4, 8, 8)).astype(np.float32)
W2 = RNG.standard_normal((4, 8, 1, 1)).astype(np.float32)


def _t(shape: tuple[int, ...]) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xf32>"


def _dense(a: np.ndarray) -> str:
    return f"dense<{json.dumps(a.tolist())}> : {_t(a.shape)}"


def conv_program(extra_relu: bool = False) -> str:
    """conv2d(+bias, relu) with constant weights; optionally a second, 1x1 conv after it."""
    y = _t((1, 8, 8, 8))
    out = _t((1, 4, 8, 8)) if extra_relu else y
    tail = (
        f"  %w2 = graph.constant {_dense(W2)}\n"
        f"  %s = graph.conv2d %r, %w2 : ({y}, {_t(W2.shape)}) -> {out}\n"
        f"  graph.return %s : {out}"
        if extra_relu
        else f"  graph.return %r : {y}"
    )
    return f"""
graph.func @main(%x: {_t(X.shape)}) -> {out} {{
  %w = graph.constant {_dense(W)}
  %b = graph.constant {_dense(B.reshape(1, 8, 1, 1))}
  %c = graph.conv2d %x, %w {{padding = array<i64: 1, 1, 1, 1>}} : ({_t(X.shape)}, {_t(W.shape)}) -> {y}
  %a = graph.add %c, %b : ({y}, {_t((1, 8, 1, 1))}) -> {y}
  %r = graph.relu %a : ({y}) -> {y}
{tail}
}}
"""


def reference(extra: bool = False) -> np.ndarray:
    pad = np.pad(X, ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((1, 8, 8, 8), np.float64)
    for i in range(3):
        for j in range(3):
            out += np.einsum("nchw,oc->nohw", pad[:, :, i : i + 8, j : j + 8], W[:, :, i, j])
    out = np.maximum(out + B.reshape(1, 8, 1, 1), 0)
    return np.einsum("nchw,oc->nohw", out, W2[:, :, 0, 0]) if extra else out


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """No kernel in memory, an empty disk cache of our own."""
    monkeypatch.setenv(cache.CACHE_DIR_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(cache.CACHE_ENV, raising=False)
    kernel_cache.clear()
    codegen.clear_cache()
    yield tmp_path / "cache"
    kernel_cache.clear()


def test_units_compute_what_the_whole_module_computes(fresh, monkeypatch):
    units = lamina.compile(conv_program(), cache=False)
    assert isinstance(units.compiled, codegen.UnitsModule)
    assert set(units.compiled.timings.kernels.values()) == {"built"}
    assert units.compiled.constants, "the 1152-byte weight went to the blob"
    monkeypatch.setenv(codegen.SPLIT_ENV, "0")
    codegen.clear_cache()
    whole = lamina.compile(conv_program(), cache=False)
    assert not isinstance(whole.compiled, codegen.UnitsModule)
    got = units.run("main", X)
    np.testing.assert_array_equal(got, whole.run("main", X))
    np.testing.assert_allclose(got, reference(), rtol=1e-4, atol=1e-5)


def test_a_second_model_takes_shared_kernels_from_memory_then_from_disk(fresh):
    first = lamina.compile(conv_program(), cache=False).compiled.timings.kernels
    codegen.clear_cache()
    second = lamina.compile(conv_program(extra_relu=True), cache=False)
    kinds = second.compiled.timings.kernels
    assert "memory" in kinds.values() and "built" in kinds.values()
    assert set(first) <= set(kinds)  # the conv kernel has one symbol in both models
    np.testing.assert_allclose(second.run("main", X), reference(True), rtol=1e-4, atol=1e-5)
    assert len(_kernel_objects(fresh)) == len(kinds)

    kernel_cache.clear()  # a new process: only the disk cache is left
    codegen.clear_cache()
    again = lamina.compile(conv_program(extra_relu=True), cache=False)
    assert set(again.compiled.timings.kernels.values()) == {"disk"}
    np.testing.assert_allclose(again.run("main", X), reference(True), rtol=1e-4, atol=1e-5)
    assert cache.clear() == 0 and not list((fresh / cache.KERNEL_FOLDER).glob("*.lxc"))


def _kernel_objects(folder) -> list:
    """The kernel folder's object files (not the records of kernel_reuse beside them)."""
    entries = [cache.read(p.stem, folder=folder / cache.KERNEL_FOLDER) for p in
               (folder / cache.KERNEL_FOLDER).glob("*.lxc")]  # fmt: skip
    return [e for e in entries if e is not None and "kernel" in e.metadata]


def test_the_model_cache_stores_every_unit_and_the_constants(fresh):
    cold = lamina.compile(conv_program())
    assert cold.cache_hit is False and cold.compiled.object_code.startswith(cache.PACKED)
    warm = lamina.compile(conv_program())
    assert warm.cache_hit is True
    np.testing.assert_array_equal(warm.run("main", X), cold.run("main", X))


def test_the_object_code_does_not_depend_on_the_number_of_threads(fresh, monkeypatch):
    monkeypatch.setenv(cache.CACHE_ENV, "0")
    codes = []
    for threads in ("1", "2"):
        monkeypatch.setenv(THREADS_ENV, threads)
        codegen.clear_cache()
        kernel_cache.clear()
        codes.append(lamina.compile(conv_program(extra_relu=True), cache=False).compiled)
    assert codes[0].objects == codes[1].objects and len(codes[0].objects) >= 3


def test_kernels_that_differ_only_in_their_names_are_one_unit():
    """A kernel under another name (another model's naming) has the same key; other
    code-generation facts give another key."""
    from lamina.driver.lowering import lower_to_build
    from lamina.driver.lowering import parse_source as _as_module

    splits = []
    for rename in (False, True):
        module, _ = lower_to_build(_as_module(conv_program(), "a.mlir"))
        ir_module, blobs = codegen._translate(
            module, None, attach_limit=kernel_split.BLOB_MIN_BYTES
        )
        if rename:
            for fn in ir_module.functions:
                if not fn.is_declaration and fn.linkage == "internal":
                    fn.name = f"renamed_{fn.name}"  # references print the new name
        splits.append(kernel_split.split_module(ir_module, blobs, "facts"))
    one, other = splits
    assert one is not None and other is not None and one.kernels
    assert [u.key for u in one.kernels] == [u.key for u in other.kernels]
    # the same text but for the helpers' names (parallel bodies keep the module's names
    # for profilers, `_helpers_named`; this kernel is parallel since `parallel_team_min_work`)
    assert [u.text for u in one.kernels] == [
        u.text.replace('@"renamed_', '@"') for u in other.kernels
    ]
    assert all(name.startswith("renamed_") for u in other.kernels for name in u.names)
    assert one.host == other.host  # the host calls kernels by their symbols
    module, _ = lower_to_build(_as_module(conv_program(), "a.mlir"))
    ir_module, blobs = codegen._translate(module, None, attach_limit=kernel_split.BLOB_MIN_BYTES)
    changed = kernel_split.split_module(ir_module, blobs, "other facts")
    assert changed is not None and changed.kernels[0].key != one.kernels[0].key


def test_the_constant_blob_is_aligned_and_packs_losslessly():
    constants = {"__lamina_w_a": b"x" * 100, "__lamina_w_b": bytes(range(7))}
    offsets, size = constant_blob.layout({s: len(d) for s, d in constants.items()})
    assert all(o % constant_blob.ALIGN == 0 for o in offsets.values()) and size >= 107
    table, blob = constant_blob.unpack(constant_blob.pack(constants))
    assert {s: bytes(blob[o : o + n]) for s, (o, n) in table.items()} == constants
    constant_blob.register(constants)
    for symbol, data in constants.items():
        address = llvm.address_of_symbol(symbol)
        assert address % constant_blob.ALIGN == 0
        assert ctypes.string_at(address, len(data)) == data


def test_a_shared_library_links_the_units_deterministically(tmp_path, monkeypatch):
    """The units' objects are linked in a fixed order: the same bytes with one thread or
    two; the library exports the graph function, not the kernels or the runtime."""
    import shutil
    import subprocess

    from lamina.driver.lowering import lower_to_build
    from lamina.driver.lowering import parse_source as _as_module

    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler to link a shared library")
    module, _ = lower_to_build(_as_module(conv_program(extra_relu=True), "a.mlir"))
    libraries = []
    for threads in ("1", "2"):
        monkeypatch.setenv(THREADS_ENV, threads)
        libraries.append(codegen.build_shared_library(module, tmp_path / f"t{threads}.so"))
    assert libraries[0].read_bytes() == libraries[1].read_bytes()
    if shutil.which("nm"):
        exported = subprocess.run(
            ["nm", "-D", "--defined-only", str(libraries[0])], capture_output=True, text=True
        ).stdout
        assert " main" in exported and "__lamina_" not in exported
    library = ctypes.CDLL(str(libraries[0]))
    out = np.zeros((1, 4, 8, 8), np.float32)
    library.main(X.ctypes.data_as(ctypes.c_void_p), out.ctypes.data_as(ctypes.c_void_p))
    np.testing.assert_allclose(out, reference(True), rtol=1e-4, atol=1e-5)
