"""Whole networks through the ONNX importer, compiled and checked against onnxruntime.

ResNet-18 (1×3×224×224), a 2-layer transformer encoder (sequence 128,
d_model 256) and an MLP, built with `onnx.helper` in the structure PyTorch
exports (examples/onnx_models.py), with random weights. PyTorch itself is
not installable in CI from PyPI within its time budget (its Linux wheels
pull in several GB of CUDA libraries), so the `torch.onnx.export` variants
run only where torch is already installed, and skip otherwise.
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


def _check(model, seed: int = 1) -> None:
    info = model.graph.input[0]
    shape = [d.dim_value for d in info.type.tensor_type.shape.dim]
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    module = import_model(model).module
    got = lamina.compile(module).run("main", x)
    want = run_ort(model, {info.name: x})[0]
    assert got.shape == want.shape
    # 1e-4 relative to the output's magnitude (elementwise relative error is
    # meaningless for outputs that happen to be near zero).
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


@pytest.mark.parametrize("name", ["mlp", "transformer", "resnet18"])
def test_network_matches_onnxruntime(name: str) -> None:
    _check(onnx_models.BUILDERS[name]())


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


@pytest.mark.parametrize("name", ["mlp", "transformer", "resnet18"])
def test_pytorch_export_matches_onnxruntime(name: str, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    if name == "resnet18":
        pytest.importorskip("torchvision")
    path = tmp_path / f"{name}.onnx"
    assert onnx_models.export_torch(name, str(path))
    _check(__import__("onnx").load(str(path)))
    assert import_file(str(path)).module is not None
