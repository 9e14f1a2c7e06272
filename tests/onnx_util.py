"""Helpers for the ONNX tests: one-node models, onnxruntime references, Lamina runs."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

import lamina

onnx = __import__("pytest").importorskip("onnx")
ort = __import__("pytest").importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from lamina.frontends.onnx import import_model  # noqa: E402

NP_TO_ONNX = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float64): TensorProto.DOUBLE,
              np.dtype(np.int64): TensorProto.INT64, np.dtype(np.int32): TensorProto.INT32,
              np.dtype(np.bool_): TensorProto.BOOL}  # fmt: skip


def value_info(name: str, array_or_shape, dtype=np.float32):
    if isinstance(array_or_shape, np.ndarray | np.generic):
        return helper.make_tensor_value_info(
            name, NP_TO_ONNX[array_or_shape.dtype], array_or_shape.shape
        )
    return helper.make_tensor_value_info(name, NP_TO_ONNX[np.dtype(dtype)], array_or_shape)


def make_model(nodes, inputs: dict[str, np.ndarray], outputs: Sequence[str],
               initializers: dict[str, np.ndarray] | None = None, opset: int = 17,
               output_types=None):  # fmt: skip
    """A model over `nodes`; graph inputs from `inputs` (their arrays give shapes)."""
    graph = helper.make_graph(
        nodes,
        "test",
        [value_info(k, v) for k, v in inputs.items()],
        [
            helper.make_tensor_value_info(o, (output_types or {}).get(o, TensorProto.FLOAT), None)
            for o in outputs
        ],
        [numpy_helper.from_array(v, k) for k, v in (initializers or {}).items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def run_ort(model, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return sess.run(None, inputs)


def run_lamina(model, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    module = import_model(model).module
    exe = lamina.compile(module)
    got = exe.run("main", *inputs.values())
    return list(got) if isinstance(got, tuple) else [got]


def check_against_ort(model, inputs: dict[str, np.ndarray], rtol: float = 1e-4,
                      atol: float = 1e-5) -> None:  # fmt: skip
    """Import + compile `model` with Lamina and compare every output with onnxruntime."""
    want = run_ort(model, inputs)
    got = run_lamina(model, inputs)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape, (g.shape, w.shape)
        if w.dtype.kind in "fc":
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
        else:
            np.testing.assert_array_equal(g, w)


def lowered_loops(model, tmp_path: Path) -> str:
    """The model's loop-level IR (`lamina-opt --compile-to lowering`), for tests of a schedule's shape."""
    program = tmp_path / "model.mlir"
    program.write_text(str(import_model(model).module))
    return subprocess.run(
        [sys.executable, "-m", "lamina.tools.lamina_opt", str(program), "--compile-to", "lowering"],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
