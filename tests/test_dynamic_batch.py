"""One compile for every batch size (docs/dynamic-shapes.md): a `?` leading dimension
with `lamina.bounds` compiles into static bodies and a loop over them, and runs at any
N within the bounds with the results of the static build of that N."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import lamina
from lamina.core.diagnostics import DiagnosticError
from lamina.frontends.builder import BuilderError, GraphBuilder
from lamina.runtime.executable import LaminaRuntimeError

SIZES = (1, 3, 8, 17, 64)


def _mlp(batch: int | None, seed: int = 0):
    """x[batch, 32] -> 64 -> relu -> 10 -> softmax; weights are constants."""
    rng = np.random.default_rng(seed)
    b = GraphBuilder()
    x = b.param((batch, 32), name="x")
    w1 = b.constant(rng.standard_normal((32, 64)).astype(np.float32) * 0.2)
    b1 = b.constant(rng.standard_normal(64).astype(np.float32))
    w2 = b.constant(rng.standard_normal((64, 10)).astype(np.float32) * 0.2)
    h = b.relu(b.add(b.matmul(x, w1), b1))
    b.ret(b.softmax(b.matmul(h, w2)))
    return b.module()


def _cnn(batch: int | None, seed: int = 0):
    """conv 3x3 + relu, 2x2 max pool, strided conv, global pool, flatten, linear."""
    rng = np.random.default_rng(seed)
    b = GraphBuilder()
    x = b.param((batch, 3, 12, 12), name="x")
    w1 = b.constant(rng.standard_normal((8, 3, 3, 3)).astype(np.float32) * 0.3)
    w2 = b.constant(rng.standard_normal((16, 8, 3, 3)).astype(np.float32) * 0.3)
    fc = b.constant(rng.standard_normal((16, 10)).astype(np.float32))
    h = b.max_pool2d(b.relu(b.conv2d(x, w1, padding=1)), 2)
    h = b.relu(b.conv2d(h, w2, strides=2, padding=1))
    flat = b.reshape(b.global_avg_pool2d(h), (batch, 16))
    b.ret(b.matmul(flat, fc))
    return b.module()


def _same(got: np.ndarray, want: np.ndarray, n: int) -> None:
    """At N = 1 and N = 8 the dynamic build runs the very code of the static one
    (bit-identical); at other N its bodies' schedules differ from the static build's
    (other block sizes), so only rounding may differ."""
    if n in (1, 8):
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def _inputs(n: int, shape: tuple[int, ...]) -> np.ndarray:
    return np.random.default_rng(n).standard_normal((n, *shape)).astype(np.float32)


@pytest.mark.parametrize("build, sample", [(_mlp, (32,)), (_cnn, (3, 12, 12))], ids=["mlp", "cnn"])
def test_one_compile_equals_the_static_builds(build, sample) -> None:
    dynamic = lamina.compile(build(None), cache=False)
    sig = dynamic.signatures["main"]
    assert sig.params[0].shape == ("N", *sample) and sig.bounds == {"N": (1, 64)}
    for n in SIZES:
        x = _inputs(n, sample)
        static = lamina.compile(build(n), cache=False)
        got, want = dynamic.run("main", x), static.run("main", x)
        assert got.shape[0] == n
        _same(got, want, n)


@pytest.fixture(scope="module")
def two_inputs():
    """y = relu(a + b) over a dynamic batch in [2, 20]: two batched parameters."""
    b = GraphBuilder(batch_bounds=(2, 20))
    x = b.param(("N", 5), name="a")
    y = b.param((None, 5), name="b")
    b.ret(b.relu(b.add(x, y)))
    return lamina.compile(b.module(), cache=False)


def test_two_batched_inputs_and_out(two_inputs) -> None:
    a, b = _inputs(11, (5,)), _inputs(11, (5,))[::-1].copy()
    np.testing.assert_array_equal(two_inputs.run("main", a, b), np.maximum(a + b, 0))
    out = np.empty((11, 5), np.float32)
    assert two_inputs.run("main", a, b, out=out) is out
    np.testing.assert_array_equal(out, np.maximum(a + b, 0))


@pytest.mark.parametrize(
    "shapes, message",
    [
        (((1, 5), (1, 5)), "@main argument 0 (a): dimension 0 is N = 1, out of bounds [2, 20]"),
        (((21, 5), (21, 5)), "@main argument 0 (a): dimension 0 is N = 21, out of bounds [2, 20]"),
        (
            ((4, 5), (3, 5)),
            "@main argument 1 (b): dimension 0 is N = 3, but argument 0 (a) has N = 4 "
            "(every argument must agree on N)",
        ),
        (((4,), (4, 5)), "@main argument 0 (a): expected rank 2 (shape (N, 5)), got shape (4,)"),
        (((4, 6), (4, 6)), "@main argument 0: expected shape (4, 5) = (N, 5), got (4, 6)"),
    ],
)
def test_bad_sizes_are_refused_and_nothing_is_written(two_inputs, shapes, message) -> None:
    arrays = [np.ones(s, np.float32) for s in shapes]
    out = np.full((max(shapes[0][0], 1), 5), 7.0, np.float32)
    with pytest.raises(LaminaRuntimeError) as err:
        two_inputs.run("main", *arrays, out=out)
    assert message in str(err.value)
    assert (out == 7.0).all()


def test_out_of_the_wrong_batch_is_refused(two_inputs) -> None:
    a = np.ones((4, 5), np.float32)
    with pytest.raises(LaminaRuntimeError, match=r"out\[0\]: expected float32\[4, 5\]"):
        two_inputs.run("main", a, a, out=np.empty((5, 5), np.float32))


def test_the_disk_cache_keeps_the_dynamic_signature(tmp_path, monkeypatch) -> None:
    from lamina.runtime import cache

    monkeypatch.setenv(cache.CACHE_DIR_ENV, str(tmp_path))
    monkeypatch.delenv(cache.CACHE_ENV, raising=False)
    cold = lamina.compile(_mlp(None))
    hit = lamina.compile(_mlp(None))
    assert (cold.cache_hit, hit.cache_hit) == (False, True)
    assert hit.signatures["main"] == cold.signatures["main"]
    x = _inputs(13, (32,))
    np.testing.assert_array_equal(hit.run("main", x), cold.run("main", x))
    with pytest.raises(LaminaRuntimeError, match=r"N = 65, out of bounds \[1, 64\]"):
        hit.run("main", _inputs(65, (32,)))


def test_builder_takes_only_a_leading_dynamic_dimension() -> None:
    b = GraphBuilder()
    with pytest.raises(BuilderError, match="only the leading .batch. dimension can be dynamic"):
        b.param((4, None))
    b.param(("N", 2))
    with pytest.raises(BuilderError, match="one batch symbol per function: N and M"):
        b.param(("M", 2))


def test_an_op_mixing_samples_is_a_located_error() -> None:
    text = """graph.func @main(%x: tensor<?x4xf32>) -> tensor<4xf32> attributes {lamina.bounds = {N = array<i64: 1, 8>}} {
  %0 = graph.reduce_max %x {axes = array<i64: 0>} : (tensor<?x4xf32>) -> tensor<4xf32>
  graph.return %0 : tensor<4xf32>
}
"""
    with pytest.raises(DiagnosticError) as err:
        lamina.compile(text, filename="mix.mlir", cache=False)
    message = str(err.value)
    assert message.startswith("mix.mlir:2:3: error: 'graph.reduce_max' reduces over the batch")
    assert "pin the batch with --input-shape" in message


# -- ONNX ----------------------------------------------------------------------


def _onnx_cnn():
    """Conv + BatchNorm-free ReLU, Flatten and Gemm over x: [batch, 3, 8, 8]."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    fc = rng.standard_normal((10, 4 * 8 * 8)).astype(np.float32) * 0.1
    bias = rng.standard_normal(10).astype(np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
            helper.make_node("Relu", ["c"], ["r"], name="relu"),
            helper.make_node("Flatten", ["r"], ["f"], axis=1, name="flatten"),
            helper.make_node("Gemm", ["f", "fc", "bias"], ["y"], transB=1, name="fc"),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 10])],
        [
            numpy_helper.from_array(w, "w"),
            numpy_helper.from_array(fc, "fc"),
            numpy_helper.from_array(bias, "bias"),
        ],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_onnx_dim_param_batch_equals_onnxruntime_and_the_static_build() -> None:
    from onnx_util import run_ort

    model = _onnx_cnn()
    dynamic = lamina.compile(model, cache=False)
    assert dynamic.signatures["main"].params[0].shape == ("N", 3, 8, 8)
    for n in SIZES:
        x = _inputs(n, (3, 8, 8))
        static = lamina.compile(model, input_shapes={"x": (n, 3, 8, 8)}, cache=False)
        assert static.signatures["main"].params[0].shape == (n, 3, 8, 8)
        got = dynamic.run("main", x)
        _same(got, static.run("main", x), n)
        np.testing.assert_allclose(got, run_ort(model, {"x": x})[0], rtol=1e-4, atol=1e-4)


def test_transformer_encoder_equals_the_static_builds() -> None:
    """The encoder of examples/onnx_models.py (small) with its batch a dim_param:
    attention reshapes through Shape/Gather/Concat, Split slices the whole batch."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
    import onnx_models
    from onnx_util import run_ort

    model = onnx_models.transformer_encoder(seq=8, d=32, heads=4, ff=64)
    for info in (*model.graph.input, *model.graph.output):
        dim = info.type.tensor_type.shape.dim[0]
        dim.Clear()
        dim.dim_param = "batch"
    dynamic = lamina.compile(model, cache=False)
    for n in SIZES:
        x = _inputs(n, (8, 32))
        static = lamina.compile(model, input_shapes={"src": (n, 8, 32)}, cache=False)
        got = dynamic.run("main", x)
        _same(got, static.run("main", x), n)
        np.testing.assert_allclose(got, run_ort(model, {"src": x})[0], rtol=1e-3, atol=1e-4)


def test_onnx_batch_bounds() -> None:
    exe = lamina.compile(_onnx_cnn(), batch_bounds=(4, 6), cache=False)
    assert exe.signatures["main"].bounds == {"N": (4, 6)}
    with pytest.raises(LaminaRuntimeError, match=r"N = 3, out of bounds \[4, 6\]"):
        exe.run("main", _inputs(3, (3, 8, 8)))
    with pytest.raises(DiagnosticError, match=r"batch bounds must satisfy 1 <= LO <= HI"):
        lamina.compile(_onnx_cnn(), batch_bounds=(6, 4), cache=False)


# -- tools -----------------------------------------------------------------------


def _tool(name: str, *args: str | Path) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-c", f"from lamina.tools.{name} import main; main()", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


DYNAMIC_IR = """graph.func @main(%x: tensor<?x3xf32>, %w: tensor<3x2xf32>) -> tensor<?x2xf32> attributes {lamina.bounds = {N = array<i64: 2, 40>}} {
  %0 = graph.matmul %x, %w : (tensor<?x3xf32>, tensor<3x2xf32>) -> tensor<?x2xf32>
  graph.return %0 : tensor<?x2xf32>
}
"""


def test_lamina_run_picks_the_lower_bound_or_batch_size(tmp_path) -> None:
    path = tmp_path / "dyn.mlir"
    path.write_text(DYNAMIC_IR)
    run = _tool("lamina_run", path)
    assert run.returncode == 0 and "out0: float32[2, 2]" in run.stdout, run.stderr
    run = _tool("lamina_run", path, "--batch-size", "19")
    assert run.returncode == 0 and "out0: float32[19, 2]" in run.stdout, run.stderr
    run = _tool("lamina_run", path, "--batch-size", "41")
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert "--batch-size 41: @main was compiled for 2 <= N <= 40" in run.stderr


STATIC_IR = DYNAMIC_IR.replace("?", "4").replace(
    " attributes {lamina.bounds = {N = array<i64: 2, 40>}}", ""
)


@pytest.mark.parametrize(
    ("ir", "args", "message"),
    [
        (DYNAMIC_IR, ["--batch-size", "0"], "--batch-size must be >= 1, got 0"),
        (DYNAMIC_IR, ["--batch-size", "-3"], "--batch-size must be >= 1, got -3"),
        (STATIC_IR, ["--batch-size", "4"], "--batch-size 4: @main has no dynamic batch"),
        (DYNAMIC_IR, ["--batch-size", "4", "--inputs", "x.npz"], "--inputs FILE gives the batch"),
    ],
)
def test_lamina_run_refuses_a_batch_size_it_cannot_use(tmp_path, ir, args, message) -> None:
    """A --batch-size that would be ignored (static shapes, real inputs) or cannot be a
    batch is an error, not silently dropped."""
    path = tmp_path / "prog.mlir"
    path.write_text(ir)
    run = _tool("lamina_run", path, *args)
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
    assert message in run.stderr


@pytest.mark.skipif(
    not any(shutil.which(c) for c in ("cc", "gcc", "clang")), reason="needs a C compiler"
)
def test_lamina_compile_header_and_shared_library(tmp_path) -> None:
    path = tmp_path / "dyn.mlir"
    path.write_text(DYNAMIC_IR)
    result = _tool("lamina_compile", path, "-o", tmp_path / "dyn.so")
    assert result.returncode == 0, result.stderr
    header = (tmp_path / "dyn.h").read_text()
    assert " *   N: the batch size, 2 <= N <= 40\n *   arg0: float[N][3]  (input)" in header
    assert (
        "void lamina_main(int64_t N, const float *arg0, const float *arg1, float *out0);" in header
    )
    lib = ctypes.CDLL(str(tmp_path / "dyn.so"))
    lib.lamina_main.argtypes = [ctypes.c_int64] + [ctypes.c_void_p] * 3
    x, w = _inputs(23, (3,)), _inputs(3, (2,))
    out = np.empty((23, 2), np.float32)
    lib.lamina_main(23, *(a.ctypes.data_as(ctypes.c_void_p) for a in (x, w, out)))
    np.testing.assert_allclose(out, x @ w, rtol=1e-5, atol=1e-6)
