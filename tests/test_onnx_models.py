"""Whole networks through the ONNX importer, compiled and checked against onnxruntime.

ResNet-18 (1×3×224×224), a 2-layer transformer encoder (sequence 128,
d_model 256) and an MLP, built with `onnx.helper` in the structure PyTorch
exports (examples/onnx_models.py), with random weights; and the same three
networks exported from PyTorch itself (torchvision's `resnet18()`,
`nn.TransformerEncoder`, an `nn.Sequential` MLP) by both of its exporters,
checked against onnxruntime and against PyTorch's own output. The PyTorch
tests need the `torch` extra (installed by `.ci/run`) and skip without it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from onnx_util import run_ort

import lamina
from lamina.frontends.onnx import import_file, import_model

sys.path.insert(0, str(Path(__file__).parent.parent / "examples"))
import onnx_models  # noqa: E402


def _check(module, model, x: np.ndarray | None = None) -> np.ndarray:
    """Compile the imported `module`, compare it with onnxruntime running `model` on `x`
    (random when None) and return Lamina's result."""
    info = model.graph.input[0]
    if x is None:
        shape = [d.dim_value for d in info.type.tensor_type.shape.dim]
        x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    got = lamina.compile(module).run("main", x)
    _assert_close(got, run_ort(model, {info.name: x})[0])
    return got


def _assert_close(got: np.ndarray, want: np.ndarray) -> None:
    """Within 1e-4 relative to the output's magnitude (elementwise relative error is
    meaningless for outputs that happen to be near zero)."""
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


@pytest.mark.parametrize("name", ["mlp", "transformer", "resnet18"])
def test_network_matches_onnxruntime(name: str) -> None:
    model = onnx_models.BUILDERS[name]()
    _check(import_model(model).module, model)


def test_imported_resnet_is_clean_after_fold_constants() -> None:
    """BatchNorm folds into the convolutions and the transposed FC weight into a constant."""
    from lamina.core.context import make_context
    from lamina.passes.fold_constants import FoldConstantsPass

    module = import_model(onnx_models.resnet18(size=32, classes=10)).module
    FoldConstantsPass().apply(make_context(), module)
    names = [op.name for op in module.walk()]
    assert names.count("graph.conv2d") == 20
    assert "graph.mul" not in names and "graph.transpose" not in names
    assert names.count("graph.add") == 20 + 8 + 1  # conv biases, residuals, fc bias


@pytest.mark.parametrize("exporter", onnx_models.EXPORTERS)
@pytest.mark.parametrize("name", ["mlp", "transformer", "resnet18", "vit", "swin"])
def test_pytorch_export_matches_onnxruntime(name: str, exporter: str, tmp_path: Path) -> None:
    """The real PyTorch module, exported, imported and compiled, computes what onnxruntime
    computes from the same file and what PyTorch computes itself (vit, swin: torchvision's
    ViT and Swin classes at a small size)."""
    torch = pytest.importorskip("torch")
    if name in ("resnet18", "vit", "swin"):
        pytest.importorskip("torchvision")
    if exporter == "dynamo":
        pytest.importorskip("onnxscript")
    path = tmp_path / f"{name}.onnx"
    module, example = onnx_models.export_torch(name, str(path), exporter)
    got = _check(import_file(str(path)).module, __import__("onnx").load(str(path)), example.numpy())
    with torch.no_grad():
        _assert_close(got, module(example).numpy())
