"""ONNX models accepted directly: `lamina-run model.onnx`, `lamina-compile
model.onnx -o ...`, `lamina.compile("model.onnx")` and `lamina.compile(ModelProto)`
import on the way; `--input-shape` / `input_shapes=` are checked against the model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from onnx_util import run_ort

import lamina
from lamina.core.diagnostics import DiagnosticError
from lamina.tools import lamina_compile, lamina_run

from onnx import TensorProto, helper, numpy_helper, save  # isort: skip


def _dynamic_model():
    """Conv + Relu on x: [N, 3, H, 6] (a dynamic batch and height: the height must be
    given), written with the default opset."""
    w = np.random.default_rng(0).standard_normal((4, 3, 3, 3)).astype(np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
            helper.make_node("Relu", ["c"], ["y"], name="relu"),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4, 6, 6])],
        [numpy_helper.from_array(w, "w")],
    )
    return helper.make_model(graph)


@pytest.fixture
def model_path(tmp_path: Path) -> str:
    path = tmp_path / "dyn.onnx"
    save(_dynamic_model(), str(path))
    return str(path)


def _tool(module, capsys, *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        module.main(list(argv))
    out, err = capsys.readouterr()
    return int(exc.value.code or 0), out, err


def test_compile_takes_a_path_and_a_model_proto(model_path) -> None:
    x = np.random.default_rng(1).standard_normal((2, 3, 6, 6)).astype(np.float32)
    want = run_ort(_dynamic_model(), {"x": x})[0]
    for source in (model_path, Path(model_path), _dynamic_model()):
        exe = lamina.compile(source, input_shapes={"x": (2, 3, 6, 6)}, cache=False)
        np.testing.assert_allclose(exe.run("main", x), want, rtol=1e-4, atol=1e-5)


def test_compile_names_the_python_argument(model_path) -> None:
    with pytest.raises(DiagnosticError) as err:
        lamina.compile(model_path)
    message = str(err.value)
    assert "input 'x' has a dynamic dimension 2 ('H')" in message
    assert "input_shapes={'x': (N, 3, H, 6)}" in message and "--input-shape" not in message


def test_backend_prepare_names_the_python_argument() -> None:
    from lamina.frontends.onnx_backend import LaminaBackend

    with pytest.raises(DiagnosticError, match=r"input_shapes=\{'x'"):
        LaminaBackend.prepare(_dynamic_model())
    rep = LaminaBackend.prepare(_dynamic_model(), input_shapes={"x": (1, 3, 6, 6)})
    x = np.ones((1, 3, 6, 6), np.float32)
    np.testing.assert_allclose(rep.run([x])[0], run_ort(_dynamic_model(), {"x": x})[0],
                               rtol=1e-4, atol=1e-5)  # fmt: skip


@pytest.mark.parametrize(
    ("shape", "message"),
    [
        ({"X": (1, 3, 6, 6)}, "names 'X', which is not an input of the model (inputs: 'x'); "
                              "did you mean 'x'?"),
        ({"x": (1, 3, 6)}, "input 'x' has rank 4 (shape [N, 3, H, 6]), but input_shapes gives "
                           "3 dimensions"),
        ({"x": (1, 5, 6, 6)}, "input 'x' has the static dimension 1 = 3 (shape [N, 3, H, 6]); "
                              "input_shapes cannot change it to 5"),
    ],
)  # fmt: skip
def test_input_shapes_are_checked(model_path, shape, message) -> None:
    """A misspelt name, a wrong rank (blamed on the input, not on the Conv) and a
    changed static dimension are errors."""
    with pytest.raises(DiagnosticError) as err:
        lamina.compile(model_path, input_shapes=shape)
    assert message in str(err.value)
    assert "conv" not in str(err.value)


def test_input_shapes_apply_to_onnx_only() -> None:
    with pytest.raises(DiagnosticError, match="input_shapes applies to ONNX models only"):
        lamina.compile("examples/mlp.mlir", input_shapes={"x": (1,)})


def test_batch_bounds_apply_to_onnx_only(capsys) -> None:
    """Given for a graph program they would be ignored: an error, as for input shapes."""
    with pytest.raises(DiagnosticError, match="batch_bounds applies to ONNX models only"):
        lamina.compile("examples/mlp.mlir", batch_bounds=(1, 4))
    code, _, err = _tool(lamina_run, capsys, "examples/mlp.mlir", "--batch-bounds", "1:4")
    assert code == 1 and "--batch-bounds applies to ONNX models only" in err


def test_lamina_run_takes_an_onnx_file(model_path, tmp_path, capsys) -> None:
    out = tmp_path / "out.npz"
    code, stdout, err = _tool(lamina_run, capsys, model_path, "--input-shape", "x=2,3,6,6",
                              "--output", str(out))  # fmt: skip
    assert code == 0, err
    assert "out0: float32[2, 4, 6, 6]" in stdout
    assert np.load(out)["out0"].shape == (2, 4, 6, 6)


def test_lamina_run_names_the_flag(model_path, capsys) -> None:
    code, _, err = _tool(lamina_run, capsys, model_path)
    assert code == 1 and "Traceback" not in err
    assert "dyn.onnx: error: input 'x' has a dynamic dimension 2 ('H')" in err
    assert "--input-shape x=N,3,H,6" in err
    code, _, err = _tool(lamina_run, capsys, model_path, "--input-shape", "xx=1,3,6,6")
    assert code == 1 and "did you mean 'x'?" in err


def test_lamina_compile_takes_an_onnx_file(model_path, tmp_path, capsys) -> None:
    out = tmp_path / "dyn.o"
    code, _, err = _tool(lamina_compile, capsys, model_path, "--input-shape", "x=1,3,6,6",
                         "-o", str(out))  # fmt: skip
    assert code == 0, err
    assert out.stat().st_size > 0
    assert "lamina_main" in (tmp_path / "dyn.h").read_text()


def test_binary_files_are_user_errors(tmp_path, capsys) -> None:
    """A binary file that is no ONNX model: a diagnostic everywhere, never a UnicodeDecodeError."""
    junk = tmp_path / "junk.mlir"
    junk.write_bytes(bytes(range(256)) * 4)
    runs = [(lamina_run, [str(junk)]), (lamina_compile, [str(junk), "-o", str(tmp_path / "j.o")])]
    for tool, argv in runs:
        code, _, err = _tool(tool, capsys, *argv)
        assert code == 1 and "Traceback" not in err
        assert "junk.mlir: error: neither UTF-8 text (graph IR) nor an ONNX model" in err
    with pytest.raises(DiagnosticError, match="neither UTF-8 text"):
        lamina.compile(str(junk))
    bad_onnx = tmp_path / "bad.onnx"
    bad_onnx.write_bytes(b"\xff\xfe not a model")
    with pytest.raises(DiagnosticError, match="not a valid ONNX model"):
        lamina.compile(bad_onnx)
    assert not (tmp_path / "j.o").exists()


def test_a_cached_model_file_is_not_imported_again(model_path, tmp_path) -> None:
    """The cache key of a `.onnx` path is the file's digest (and the input shapes):
    a new process finds the code without importing the model (no ONNX, no xDSL)."""
    import json
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(
        f"""
        import json, sys, numpy as np, lamina
        exe = lamina.compile({model_path!r}, input_shapes={{"x": (2, 3, 6, 6)}})
        y = exe.run("main", np.ones((2, 3, 6, 6), np.float32))
        heavy = [m for m in ("onnx", "xdsl.ir", "lamina.frontends.onnx") if m in sys.modules]
        print(json.dumps([exe.cache_hit, heavy, float(y.sum())]))
        """
    )
    env = {**__import__("os").environ, "LAMINA_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("LAMINA_CACHE", None)
    runs = [
        subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
        for _ in range(2)
    ]
    assert all(r.returncode == 0 for r in runs), runs[0].stderr + runs[1].stderr
    (cold_hit, _, cold_sum), (hit, heavy, hit_sum) = (json.loads(r.stdout) for r in runs)
    assert (cold_hit, hit, heavy, hit_sum) == (False, True, [], cold_sum)


def _large_model(path: Path, *, external: bool = False):
    """y = x @ w @ v with a 2 MiB w and a 3 MiB v (above the size hashed on a thread
    while the compiler is imported, whose bytes are then imported without reading
    the file again), saved at `path`; `external`: v in a file of its own."""
    rng = np.random.default_rng(3)
    w = rng.standard_normal((512, 1024)).astype(np.float32)
    v = rng.standard_normal((1024, 768)).astype(np.float32) / 32
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w"], ["h"]),
            helper.make_node("MatMul", ["h", "v"], ["y"]),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 512])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 768])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(v, "v")],
    )
    model = helper.make_model(graph)
    if external:  # v (3 MiB) in v.bin, w (2 MiB) in the model file
        save(model, str(path), save_as_external_data=True, location="v.bin",
             size_threshold=(5 << 20) // 2)  # fmt: skip
    else:
        save(model, str(path))
    return w @ v


@pytest.mark.parametrize("external", [False, True])
def test_a_large_model_file_read_while_hashed_compiles_the_same(tmp_path, external) -> None:
    """A model file of a megabyte or more is read and hashed on a thread while the
    compiler is imported (runtime/cache.py `file_digest`), and those bytes are
    imported (frontends/sources.py `_parsed`): external data is still loaded from
    the file's folder, and the result is the model's."""
    from lamina.runtime import cache

    path = tmp_path / "large.onnx"
    weights = _large_model(path, external=external)
    assert path.stat().st_size >= cache.HASH_ON_A_THREAD_BYTES
    assert external == (tmp_path / "v.bin").exists()
    x = np.random.default_rng(4).standard_normal((2, 512)).astype(np.float32)
    exe = lamina.compile(str(path), cache=False)
    np.testing.assert_allclose(exe.run("main", x), x @ weights, rtol=1e-3, atol=1e-3)
