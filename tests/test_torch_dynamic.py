"""A symbolic batch from PyTorch becomes Lamina's dynamic batch (docs/dynamic-shapes.md).

`torch.compile(..., backend="lamina", dynamic=True)` and the automatic dynamic
shapes dynamo switches to on a second batch size compile a partition once for
every batch size in [1, 64]; a partition that mixes the samples, or a batch out
of bounds, compiles per batch size with a warning and still gives PyTorch's
results. `torch.export` with a `Dim` on the batch maps to `?` with the Dim's bounds.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import lamina  # noqa: E402
from lamina.core.dense_text import print_module  # noqa: E402
from lamina.frontends import torch as lamina_torch  # noqa: E402
from lamina.frontends.torch import LaminaFallbackWarning, from_exported_program  # noqa: E402
from lamina.frontends.torch_import import TorchImportError  # noqa: E402


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    lamina_torch._DYNAMIC_BUILDS.clear()  # each test counts its own dynamic builds
    yield
    torch._dynamo.reset()


def _mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)
    ).eval()


def _cnn():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.Flatten(),
        torch.nn.Linear(4 * 8 * 8, 10),
    ).eval()


def _run(model, sample_shape, sizes, **compile_options) -> dict[str, int]:
    """Call the compiled model at each batch size against eager; the compile counters."""
    fast = torch.compile(model, backend="lamina", **compile_options)
    before = lamina_torch.stats()
    with torch.no_grad():
        for n in sizes:
            x = torch.randn(n, *sample_shape)
            np.testing.assert_allclose(fast(x).numpy(), model(x).numpy(), rtol=1e-4, atol=1e-5)
    return {k: v - before[k] for k, v in lamina_torch.stats().items()}


@pytest.mark.parametrize(("make", "sample_shape"), [(_mlp, (16,)), (_cnn, (3, 8, 8))])
def test_dynamic_true_compiles_once(make, sample_shape) -> None:
    """N = 1 is specialised by dynamo itself (its 0/1 rule); 3, 8, 17 share one build."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", LaminaFallbackWarning)  # no fallback, no noise
        counts = _run(make(), sample_shape, (1, 3, 8, 17), dynamic=True)
    assert counts["dynamic"] == 1
    assert counts["compiled"] == 2  # the static N = 1 graph and the dynamic one
    assert counts["per_shape"] == counts["eager_partitions"] == 0


def test_automatic_dynamic_after_second_batch_size() -> None:
    counts = _run(_mlp(), (16,), (3, 5, 8, 17, 64))
    assert counts["dynamic"] == 1
    assert counts["compiled"] == 2  # N = 3 static, then one dynamic build for the rest


class _Centered(torch.nn.Module):
    """Subtracts the batch mean: mixes the samples, so no dynamic batch."""

    def forward(self, x):
        return torch.relu(x - x.mean(0))


def test_mixing_samples_compiles_per_batch_size() -> None:
    with pytest.warns(
        LaminaFallbackWarning,
        match="compiles per batch size, not for a dynamic batch: .*reduces over the batch",
    ):
        counts = _run(_Centered(), (4,), (3, 5), dynamic=True)
    assert counts["dynamic"] == 0
    assert counts["per_shape"] == 1


class _Doubled(torch.nn.Module):
    """Reshapes to twice the batch: a size computed from the batch reaches Lamina."""

    def forward(self, x):
        return torch.relu(x.reshape(x.size(0) * 2, -1)) + 1.0


def test_size_computed_from_batch_compiles_per_batch_size() -> None:
    with pytest.warns(LaminaFallbackWarning, match=r"not for a dynamic batch: it takes the size"):
        counts = _run(_Doubled(), (8,), (3, 5), dynamic=True)
    assert counts["dynamic"] == 0
    assert counts["per_shape"] >= 1


def test_batch_out_of_bounds_compiles_for_its_size() -> None:
    with pytest.warns(
        LaminaFallbackWarning, match=r"batch size 65 alone: it is outside .* bounds \[1, 64\]"
    ):
        counts = _run(_mlp(), (16,), (3, 65), dynamic=True)
    assert counts["dynamic"] == 1
    assert counts["compiled"] == 2


def test_exported_dim_maps_to_dynamic_batch() -> None:
    from torch.export import Dim, export

    model = _cnn()
    ep = export(
        model,
        (torch.randn(4, 3, 8, 8),),
        dynamic_shapes={"input": {0: Dim("batch", min=1, max=32)}},
    )
    module = from_exported_program(ep)
    text = print_module(module)
    assert "tensor<?x3x8x8xf32>" in text
    assert "lamina.bounds = {N = array<i64: 1, 32>}" in text
    exe = lamina.compile(module)
    with torch.no_grad():
        for n in (1, 5, 32):
            x = torch.randn(n, 3, 8, 8)
            got = exe.run("main", x.numpy())
            np.testing.assert_allclose(got, model(x).numpy(), rtol=1e-4, atol=1e-5)


def test_exported_inner_dynamic_dimension_is_refused() -> None:
    from torch.export import Dim, export

    ep = export(
        torch.nn.ReLU(),
        (torch.randn(2, 6),),
        dynamic_shapes={"input": {1: Dim("width", min=2, max=16)}},
    )
    with pytest.raises(TorchImportError, match="only dynamic dimension is the leading"):
        from_exported_program(ep)
