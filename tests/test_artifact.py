"""Artifact directories: `Executable.save` / `lamina-compile -o DIR/` and `lamina.runtime.load`.

Every test runs real code: the library is linked by the system C compiler,
loaded with ctypes (often in a fresh process, to prove the compiler is not
needed) and its results are compared with NumPy's.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

import lamina
from lamina.frontends.builder import GraphBuilder
from lamina.runtime import artifact
from lamina.runtime.artifact import ArtifactError

ROOT = Path(__file__).resolve().parent.parent
MLP = ROOT / "examples" / "mlp.mlir"


def _mlp_inputs(exe, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(i.shape) * 0.1).astype(i.dtype) for i in exe.get_inputs()]


def _mlp_reference(x, w1, b1, w2, b2, w3, b3) -> np.ndarray:
    h = np.maximum(x @ w1 + b1, 0)
    return np.maximum(h @ w2 + b2, 0) @ w3 + b3


@pytest.fixture(scope="module")
def mlp_dir(tmp_path_factory) -> Path:
    exe = lamina.compile(MLP, cache=False)
    path = tmp_path_factory.mktemp("artifacts") / "mlp.lamina"
    exe.save(path)
    return path


@pytest.fixture(scope="module")
def weights_dir(tmp_path_factory, weights_model) -> Path:
    module, _, _ = weights_model()
    path = tmp_path_factory.mktemp("artifacts") / "weights.lamina"
    lamina.compile(module, cache=False).save(path)
    return path


def _run_python(script: str, timeout: float = 120) -> str:
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_saved_mlp_runs_in_a_process_without_the_compiler(mlp_dir: Path):
    assert sorted(p.name for p in mlp_dir.iterdir()) == ["manifest.json", "model.so", "weights.bin"]
    out = _run_python(
        f"""
        import sys, json
        import numpy as np
        import lamina.runtime
        exe = lamina.runtime.load({str(mlp_dir)!r})
        rng = np.random.default_rng(0)
        args = [(rng.standard_normal(i.shape) * 0.1).astype(i.dtype) for i in exe.get_inputs()]
        y = exe.run("main", *args)
        np.save({str(mlp_dir / "y.npy")!r}, y)
        loaded = [m for m in sys.modules if m.split(".")[0] in ("xdsl", "llvmlite")
                  or m.startswith(("lamina.passes", "lamina.driver", "lamina.backends",
                                   "lamina.core", "lamina.dialects", "lamina.target"))]
        print(json.dumps(loaded))
        """
    )
    assert json.loads(out) == []
    y = np.load(mlp_dir / "y.npy")
    (mlp_dir / "y.npy").unlink()
    exe = lamina.compile(MLP)
    args = _mlp_inputs(exe)
    np.testing.assert_allclose(y, _mlp_reference(*args), rtol=1e-4, atol=1e-4)


def test_weights_live_in_their_own_file_and_are_mapped(weights_dir: Path, weights_model):
    _, x, expected = weights_model()
    inputs = [x]
    manifest = json.loads((weights_dir / "manifest.json").read_text())
    assert manifest["weights"]["size"] >= (64 * 128 + 128 * 10) * 4
    assert (weights_dir / "model.so").stat().st_size < 64 * 128 * 4  # not in the library
    np.save(weights_dir / "x.npy", inputs[0])
    out = _run_python(
        f"""
        import numpy as np, lamina.runtime
        exe = lamina.runtime.load({str(weights_dir)!r})
        x = np.load({str(weights_dir / "x.npy")!r})
        np.save({str(weights_dir / "y.npy")!r}, exe.run("main", x))
        print(any("weights.bin" in line for line in open("/proc/self/maps")))
        """
    )
    assert out.strip() == "True"
    y = np.load(weights_dir / "y.npy")
    (weights_dir / "y.npy").unlink()
    (weights_dir / "x.npy").unlink()
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-3)


def test_manifest_describes_entries_cpu_and_files(weights_dir: Path):
    manifest = json.loads((weights_dir / "manifest.json").read_text())
    assert manifest["format_version"] == artifact.FORMAT_VERSION
    assert manifest["lamina_version"] == lamina.__version__
    main = manifest["entries"]["main"]
    assert main["symbol"] == "lamina_main"
    assert main["inputs"] == [{"name": "x", "dtype": "float32", "shape": [8, 64]}]
    assert main["outputs"] == [{"name": "logits", "dtype": "float32", "shape": [8, 10]}]
    assert manifest["cpu"]["name"] and "sse2" in manifest["cpu"]["features"]
    assert manifest["threading"] in ("libgomp", "none")
    for record in (manifest["library"], manifest["weights"]):
        assert record["size"] == (weights_dir / record["file"]).stat().st_size
        assert record["sha256"] == artifact.sha256_file(weights_dir / record["file"])


# ---------------------------------------------------------------------------
# The calling API (a compiled and a loaded executable share it)
# ---------------------------------------------------------------------------


def test_run_by_name_returns_the_outputs_by_name(mlp_dir: Path):
    compiled = lamina.compile(MLP)
    loaded = lamina.runtime.load(mlp_dir)
    args = _mlp_inputs(compiled)
    feed = {info.name: a for info, a in zip(compiled.get_inputs(), args, strict=True)}
    assert list(feed) == ["x", "w1", "b1", "w2", "b2", "w3", "b3"]
    for exe in (compiled, loaded):
        result = exe.run(feed)
        assert list(result) == ["logits"]
        np.testing.assert_array_equal(exe.run(*args), result["logits"])  # default entry
        np.testing.assert_allclose(result["logits"], _mlp_reference(*args), rtol=1e-4, atol=1e-4)
        out = {"logits": np.empty((64, 10), np.float32)}
        assert exe.run(feed, out=out)["logits"] is out["logits"]
        with pytest.raises(lamina.LaminaRuntimeError, match="unknown 'y'; missing 'x'"):
            exe.run({**{k: v for k, v in feed.items() if k != "x"}, "y": args[0]})
        with pytest.raises(lamina.LaminaRuntimeError, match="argument 0: expected dtype"):
            exe.run({**feed, "x": args[0].astype(np.float64)})


def test_get_inputs_outputs_and_a_short_repr(mlp_dir: Path):
    exe = lamina.runtime.load(mlp_dir)
    first = exe.get_inputs()[0]
    assert (first.name, first.dtype, first.shape) == ("x", np.dtype(np.float32), (64, 784))
    [logits] = exe.get_outputs()
    assert (logits.name, logits.shape) == ("logits", (64, 10))
    text = repr(lamina.compile(MLP))
    assert len(text) < 400 and "main(x: float32[64, 784]" in text and "logits" in text
    assert repr(exe) == text


def test_dir_lists_the_public_api():
    names = dir(lamina)
    assert {"compile", "load", "Executable", "LaminaRuntimeError", "ArtifactError"} <= set(names)
    assert not [n for n in names if n.startswith("_") and n != "__version__"]
    assert all(getattr(lamina, n) is not None for n in names)


def test_onnx_names_are_kept_verbatim(tmp_path: Path):
    """ONNX names need not be SSA names (`input:0`); users call the model by them."""
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Relu", ["input:0"], ["scores/relu:0"])],
        "g",
        [helper.make_tensor_value_info("input:0", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("scores/relu:0", TensorProto.FLOAT, [2, 3])],
    )
    path = tmp_path / "relu.onnx"
    onnx.save(helper.make_model(graph), path)
    exe = lamina.compile(str(path))
    x = np.array([[-1, 2, -3], [4, -5, 6]], np.float32)
    for each in (
        exe,
        (exe.save(tmp_path / "relu.lamina"), lamina.load(tmp_path / "relu.lamina"))[1],
    ):
        assert [i.name for i in each.get_inputs()] == ["input:0"]
        assert [o.name for o in each.get_outputs()] == ["scores/relu:0"]
        np.testing.assert_array_equal(each.run({"input:0": x})["scores/relu:0"], np.maximum(x, 0))


# ---------------------------------------------------------------------------
# Threads and fork
# ---------------------------------------------------------------------------


def test_eight_threads_get_every_answer_right(weights_dir: Path):
    exe = lamina.runtime.load(weights_dir)
    rng = np.random.default_rng(7)
    inputs = [rng.standard_normal((8, 64)).astype(np.float32) for _ in range(8)]
    expected = [exe.run("main", x) for x in inputs]
    wrong: list[tuple[int, int]] = []

    def work(t: int) -> None:
        for i in range(100):
            if not np.array_equal(exe.run("main", inputs[t]), expected[t]):
                wrong.append((t, i))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not wrong


def test_run_releases_the_gil(tmp_path: Path):
    """While one thread is inside a long native call, another keeps running Python."""
    g = GraphBuilder()
    a, b = g.param((1024, 1024), name="a"), g.param((1024, 1024), name="b")
    g.ret(g.matmul(g.matmul(a, b), b))
    lamina.compile(g.module(), cache=False).save(tmp_path / "mm")
    out = _run_python(
        f"""
        import threading, time
        import numpy as np, lamina.runtime
        exe = lamina.runtime.load({str(tmp_path / "mm")!r})
        a, b = np.ones((1024, 1024), np.float32), np.ones((1024, 1024), np.float32) * 1e-3
        start = time.perf_counter(); exe.run("main", a, b); call = time.perf_counter() - start
        done = threading.Event()
        def calls():
            for _ in range(3):
                exe.run("main", a, b)
            done.set()
        stamps = []
        worker = threading.Thread(target=calls); worker.start()
        while not done.is_set():
            stamps.append(time.perf_counter())
            time.sleep(0.001)
        worker.join()
        gaps = max(b - a for a, b in zip(stamps, stamps[1:]))
        print(call, gaps, len(stamps))
        """
    )
    call, gap, count = map(float, out.split())
    # Holding the GIL would stall the loop for a whole call (tens of milliseconds).
    assert call > 0.02 and gap < call / 2, (call, gap, count)


def test_fork_then_load_in_the_child(weights_dir: Path, weights_model):
    """libgomp's threads do not survive fork: the child loads the artifact itself."""
    _, x, expected = weights_model()
    inputs = [x]
    np.save(weights_dir / "fork_x.npy", inputs[0])
    out = _run_python(
        f"""
        import os
        import numpy as np, lamina.runtime
        x = np.load({str(weights_dir / "fork_x.npy")!r})
        pid = os.fork()
        if pid == 0:
            exe = lamina.runtime.load({str(weights_dir)!r})
            np.save({str(weights_dir / "fork_y.npy")!r}, exe.run("main", x))
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        y = lamina.runtime.load({str(weights_dir)!r}).run("main", x)  # the parent, too
        print(os.waitstatus_to_exitcode(status), float(np.abs(y).sum()) > 0)
        """,
        timeout=120,
    )
    assert out.split() == ["0", "True"]
    y = np.load(weights_dir / "fork_y.npy")
    for name in ("fork_x.npy", "fork_y.npy"):
        (weights_dir / name).unlink()
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-3)


def test_generated_code_has_no_writable_globals_but_the_known_ones(weights_dir: Path):
    """Temporaries are per call (heap or stack); the writable globals are the error
    slots, the weights region and the allocator's atomic counters and block cache."""
    nm = subprocess.run(["nm", weights_dir / "model.so"], capture_output=True, text=True)
    if nm.returncode != 0:
        pytest.skip("nm is not available")
    writable = {
        line.split()[-1]
        for line in nm.stdout.splitlines()
        if len(line.split()) == 3 and line.split()[1] in "BbDdVv"
    }
    known = {
        "lamina_error", "lamina_error_values", "lamina_weights", "__lamina_device_stats",
        "__lamina_block_cache", "__lamina_block_caps",
    }  # fmt: skip
    system = {n for n in writable if n.startswith(("_", "completed.", "__dso_handle"))}
    assert writable - known - system == set()


# ---------------------------------------------------------------------------
# Artifacts that must be refused, paths that cannot be written
# ---------------------------------------------------------------------------


def _copy(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst)
    return dst


def _edit_manifest(path: Path, edit) -> None:
    manifest = json.loads((path / "manifest.json").read_text())
    edit(manifest)
    (path / "manifest.json").write_text(json.dumps(manifest))


def test_truncated_or_modified_files_are_refused(weights_dir: Path, tmp_path: Path):
    short = _copy(weights_dir, tmp_path / "short")
    data = (short / "weights.bin").read_bytes()
    (short / "weights.bin").write_bytes(data[:-100])
    with pytest.raises(ArtifactError, match="weights.bin has .* bytes, the manifest says"):
        lamina.runtime.load(short)
    changed = _copy(weights_dir, tmp_path / "changed")
    (changed / "weights.bin").write_bytes(data[:10] + bytes([data[10] ^ 1]) + data[11:])
    with pytest.raises(ArtifactError, match="weights.bin does not match the manifest's SHA-256"):
        lamina.runtime.load(changed)
    library = _copy(weights_dir, tmp_path / "library")
    (library / "model.so").write_bytes((library / "model.so").read_bytes()[:-1] + b"x")
    with pytest.raises(ArtifactError, match="model.so does not match"):
        lamina.runtime.load(library)


def test_other_versions_and_missing_cpu_features_are_refused(weights_dir: Path, tmp_path: Path):
    from lamina.runtime import cpu_features

    old = _copy(weights_dir, tmp_path / "old")
    _edit_manifest(old, lambda m: m.update(lamina_version="0.0.1"))
    with pytest.raises(ArtifactError, match="built by Lamina 0.0.1, this is Lamina"):
        lamina.runtime.load(old)
    future = _copy(weights_dir, tmp_path / "future")
    _edit_manifest(future, lambda m: m.update(format_version=99))
    with pytest.raises(ArtifactError, match="format version 99"):
        lamina.runtime.load(future)
    lacking = sorted(f for f in cpu_features.INSTRUCTION_SET_FEATURES if cpu_features.missing([f]))
    if not lacking:
        pytest.skip("this host has every instruction set Lamina knows")
    alien = _copy(weights_dir, tmp_path / "alien")
    _edit_manifest(alien, lambda m: m["cpu"]["features"].append(lacking[0]))
    with pytest.raises(cpu_features.HostFeatureError, match=lacking[0]):
        lamina.runtime.load(alien)


def test_paths_that_are_not_artifacts(tmp_path: Path):
    with pytest.raises(ArtifactError, match="does not exist"):
        lamina.runtime.load(tmp_path / "nothing")
    with pytest.raises(ArtifactError, match="no manifest.json"):
        lamina.runtime.load(tmp_path)


def test_save_errors_leave_nothing_behind(tmp_path: Path, monkeypatch, weights_model):
    module, _, _ = weights_model()
    exe = lamina.compile(module, cache=False)
    blocker = tmp_path / "a-file"
    blocker.write_text("keep")
    with pytest.raises(ArtifactError, match="exists and is not a directory"):
        exe.save(blocker)
    assert blocker.read_text() == "keep"
    monkeypatch.setenv("CC", "false")  # the link fails
    with pytest.raises(lamina.DiagnosticError, match="linking"):
        exe.save(tmp_path / "new" / "deeper" / "model.lamina")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


def test_a_cache_hit_and_a_loaded_artifact_save_too(
    weights_dir: Path, tmp_path: Path, weights_model
):
    module, x, expected = weights_model()
    inputs = [x]
    lamina.compile(module)
    hit = lamina.compile(module)
    assert hit.cache_hit and hit.llvm_module is None
    hit.save(tmp_path / "from-hit")
    lamina.runtime.load(weights_dir).save(tmp_path / "copy")
    for name in ("from-hit", "copy"):
        loaded = lamina.runtime.load(tmp_path / name)
        np.testing.assert_allclose(loaded.run("main", *inputs), expected, rtol=1e-4, atol=1e-3)


def test_lamina_compile_writes_an_artifact_directory(tmp_path: Path):
    def tool(*args):
        cmd = [sys.executable, "-m", "lamina.tools.lamina_compile", *map(str, args)]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=300)

    proc = tool(MLP, "-o", f"{tmp_path / 'mlp'}/")
    assert proc.returncode == 0, proc.stderr
    exe = lamina.runtime.load(tmp_path / "mlp")
    args = _mlp_inputs(exe)
    np.testing.assert_allclose(exe.run("main", *args), _mlp_reference(*args), rtol=1e-4, atol=1e-4)
    (tmp_path / "file").write_text("")
    proc = tool(MLP, "-o", tmp_path / "file")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "exists and is not a directory" in proc.stderr
    proc = tool(tmp_path / "missing.mlir", "-o", tmp_path / "out" / "x.lamina")
    assert proc.returncode == 1 and not (tmp_path / "out").exists()
    busy = tmp_path / "busy"  # `-o DIR` of a directory with other files: not an artifact
    busy.mkdir()
    (busy / "notes.txt").write_text("keep")
    proc = tool(MLP, "-o", busy)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "a directory with other files and no artifact" in proc.stderr
    assert [p.name for p in busy.iterdir()] == ["notes.txt"]
    proc = tool(MLP, "-o", tmp_path / "mlp")  # an artifact's directory is replaced
    assert proc.returncode == 0, proc.stderr
    proc = tool(MLP, "-o", tmp_path / "nowhere" / "mlp.so")
    assert proc.returncode == 1 and "directory" in proc.stderr and "does not exist" in proc.stderr
    assert not (tmp_path / "nowhere").exists()


def test_an_error_reaches_every_call_that_ran_while_it_was_recorded():
    """The error globals are the module's, not the call's: `CallErrors` makes every
    overlapping call raise, none returns as if it had completed. A call that ends
    alone with an error raises it plainly (it is its own)."""
    import ctypes

    from lamina.runtime.error_globals import CallErrors

    flag, values = ctypes.c_int64(0), (ctypes.c_int64 * 4)()
    message = ctypes.create_string_buffer(b"kernel @k: out of memory ({0} bytes)")
    errors = CallErrors((ctypes.addressof(flag), ctypes.addressof(values)))
    a, b, c = errors.begin(), errors.begin(), errors.begin()
    assert errors.end(c) is None  # ended before anything failed
    flag.value, values[0] = ctypes.addressof(message), 64  # b fails while a runs
    first = errors.end(a)  # b still runs: the error may be b's, and a says so
    assert first is not None and first.startswith("kernel @k: out of memory (64 bytes)")
    assert "recorded while this call ran beside other calls" in first
    assert flag.value == 0
    late = errors.end(b)
    assert late is not None and late.startswith("kernel @k: out of memory (64 bytes) (recorded")
    assert errors.end(errors.begin()) is None
    alone = errors.begin()
    flag.value, values[0] = ctypes.addressof(message), 32
    assert errors.end(alone) == "kernel @k: out of memory (32 bytes)"


def test_a_new_artifact_in_the_same_directory_is_the_new_one(tmp_path: Path):
    """The dynamic loader would hand back the library it loaded from that path before."""
    folder = tmp_path / "model"
    x = np.linspace(-1, 1, 16, dtype=np.float32).reshape(2, 8)
    for scale in (1.0, 3.0):
        g = GraphBuilder()
        w = np.full((8, 300), scale, np.float32)
        g.ret(g.matmul(g.param((2, 8), name="x"), g.constant(w)))
        lamina.compile(g.module(), cache=False).save(folder)
        got = lamina.runtime.load(folder).run("main", x)
        np.testing.assert_allclose(got, x @ w, rtol=1e-5, atol=1e-5)


def test_an_avx2_artifact_records_the_isa_it_was_built_for(tmp_path: Path):
    """The manifest names the target's CPU and features (`cpu{isa=avx2}`), not the host's:
    a loader on an AVX2-only machine must accept it, and it must not need AVX-512."""
    cmd = [sys.executable, "-m", "lamina.tools.lamina_compile", str(MLP)]
    cmd += ["--target", "cpu{isa=avx2}", "-o", f"{tmp_path / 'mlp'}/"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads((tmp_path / "mlp" / "manifest.json").read_text())
    features = manifest["cpu"]["features"]
    assert manifest["cpu"]["name"] == "haswell"
    assert {"avx2", "fma"} <= set(features) and not any(f.startswith("avx512") for f in features)
    exe = lamina.runtime.load(tmp_path / "mlp")
    args = _mlp_inputs(exe)
    np.testing.assert_allclose(exe.run("main", *args), _mlp_reference(*args), rtol=1e-4, atol=1e-4)


DYNAMIC = """
graph.func @main(%x: tensor<?x16xf32>, %w: tensor<16x8xf32>) -> tensor<?x8xf32>
    attributes {lamina.bounds = {N = array<i64: 1, 32>}} {
  %y = graph.matmul %x, %w : (tensor<?x16xf32>, tensor<16x8xf32>) -> tensor<?x8xf32>
  %r = graph.relu %y : (tensor<?x8xf32>) -> tensor<?x8xf32>
  graph.return %r : tensor<?x8xf32>
}
"""


def test_a_dynamic_batch_artifact_runs_at_every_size(tmp_path: Path):
    """The manifest keeps the symbol and its bounds; the loaded entry infers N."""
    lamina.compile(DYNAMIC).save(tmp_path / "dyn")
    entry = json.loads((tmp_path / "dyn" / "manifest.json").read_text())["entries"]["main"]
    assert entry["bounds"] == {"N": [1, 32]}
    exe = lamina.runtime.load(tmp_path / "dyn")
    assert exe.get_inputs()[0].shape == ("N", 16) and exe.get_outputs()[0].shape == ("N", 8)
    rng = np.random.default_rng(0)
    w = rng.random((16, 8), dtype=np.float32)
    for n in (1, 3, 8, 17, 32):
        x = rng.random((n, 16), dtype=np.float32)
        np.testing.assert_allclose(exe.run("main", x, w), np.maximum(x @ w, 0), rtol=1e-5)
    with pytest.raises(lamina.LaminaRuntimeError, match=r"N = 33, out of bounds \[1, 32\]"):
        exe.run("main", np.zeros((33, 16), np.float32), w)
