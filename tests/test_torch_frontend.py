"""The `lamina` backend of `torch.compile` and `from_exported_program`, on real models.

torchvision's ResNet-18 and MobileNetV2 (random weights, eval, batch 1,
64×64 images) and `nn.TransformerEncoder` (both PyTorch paths: the fused
inference kernel and the decomposed layers) through `torch.compile(...,
backend="lamina")`, checked against eager PyTorch within 1e-4 of the
output's magnitude (as the ONNX model tests); a model with an operator
Lamina lacks still runs (the rest of it compiled, a warning naming the
node); a second process loads the compiled partition from the disk cache; a
batch change makes dynamo recompile once. Needs the `torch` extra (installed
by `.ci/run`); skipped without it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import lamina  # noqa: E402
from lamina.core.dense_text import print_module  # noqa: E402
from lamina.frontends import torch as lamina_torch  # noqa: E402
from lamina.frontends.torch import (  # noqa: E402
    LaminaFallbackWarning,
    TorchImportError,
    from_exported_program,
)

nn = torch.nn


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    """Each test compiles from scratch (dynamo keeps compiled frames per code object)."""
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _assert_close(got, want) -> None:
    """Within 1e-4 relative to the output's magnitude (see test_onnx_models.py)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def _compiled_matches_eager(model, *inputs):
    model.eval()
    with torch.no_grad():
        want = model(*inputs)
        with warnings.catch_warnings():
            warnings.simplefilter("error", LaminaFallbackWarning)  # all of it in Lamina
            got = torch.compile(model, backend="lamina")(*inputs)
    _assert_close(got, want)


class SmallNet(nn.Module):
    """Convolution, batch norm, pooling, a linear layer: a few seconds to compile."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        y = nn.functional.max_pool2d(torch.relu(self.bn(self.conv(x))), 2)
        return self.fc(nn.functional.adaptive_avg_pool2d(y, 1).flatten(1))


def _small_net():
    torch.manual_seed(0)
    net = SmallNet().eval()
    with torch.no_grad():  # non-trivial batch-norm statistics
        net.bn.running_mean.uniform_(-0.5, 0.5)
        net.bn.running_var.uniform_(0.5, 2.0)
    return net


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2"])
def test_torchvision_model_matches_eager(name: str) -> None:
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None)
    _compiled_matches_eager(model, torch.randn(1, 3, 64, 64))


@pytest.mark.parametrize("batch_first", [True, False], ids=["fused-kernel", "decomposed"])
def test_transformer_encoder_matches_eager(batch_first: bool) -> None:
    """batch_first=True takes PyTorch's fused `_transformer_encoder_layer_fwd` in eval;
    the other layout decomposes (attention with `_safe_softmax`)."""
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(64, 4, 128, batch_first=batch_first)
    model = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    shape = (1, 16, 64) if batch_first else (16, 1, 64)
    _compiled_matches_eager(model, torch.randn(shape))


class WithSort(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        y = torch.relu(self.fc1(x))
        y = torch.sort(y, dim=1).values  # no Lamina equivalent
        return self.fc2(y)


def test_unsupported_operator_runs_in_eager_with_a_warning() -> None:
    torch.manual_seed(0)
    model = WithSort().eval()
    x = torch.randn(2, 16)
    before = lamina_torch.stats()
    with torch.no_grad(), pytest.warns(LaminaFallbackWarning) as record:
        got = torch.compile(model, backend="lamina")(x)
        want = model(x)
    _assert_close(got, want)
    (warning,) = [w for w in record if issubclass(w.category, LaminaFallbackWarning)]
    message = str(warning.message)
    assert "aten.sort.default" in message
    assert "FX node 'sort'" in message
    assert f"{__file__}:" in message and "torch.sort(y, dim=1)" in message  # the source line
    # The linear layers on either side were compiled by Lamina.
    assert lamina_torch.stats()["compiled"] - before["compiled"] == 2


def test_partition_that_fails_to_compile_runs_in_eager(monkeypatch) -> None:
    """A failure inside Lamina (here: an injected one) costs speed, not the answer."""
    from lamina.core.diagnostics import DiagnosticError

    def broken(*args, **kwargs):
        raise DiagnosticError("injected failure")

    monkeypatch.setattr(lamina, "compile", broken)
    model = _small_net()
    x = torch.randn(1, 3, 8, 8)
    with torch.no_grad(), pytest.warns(LaminaFallbackWarning, match="injected failure"):
        got = torch.compile(model, backend="lamina")(x)
        want = model(x)
    _assert_close(got, want)


def test_batch_change_recompiles_once() -> None:
    """Dynamo traces once more on the first new batch size (the dimension becomes
    dynamic); every further size reuses that graph, and Lamina compiles per size."""
    from torch._dynamo.utils import counters

    model = _small_net()
    compiled = torch.compile(model, backend="lamina")
    start = counters["aot_autograd"]["total"]
    with torch.no_grad():
        for batch in (1, 2, 3, 5, 2):
            x = torch.randn(batch, 3, 8, 8)
            _assert_close(compiled(x), model(x))
    assert counters["aot_autograd"]["total"] - start == 2


def test_changed_weight_is_picked_up() -> None:
    """Weights are baked in; changing one in place compiles the partition again."""
    model = _small_net()
    compiled = torch.compile(model, backend="lamina")
    x = torch.randn(1, 3, 8, 8)
    with torch.no_grad():
        compiled(x)
        model.fc.bias.add_(1.0)
        _assert_close(compiled(x), model(x))


_CACHE_SCRIPT = textwrap.dedent(
    """
    import json, torch
    from lamina.frontends import torch as lamina_torch
    from test_torch_frontend import _small_net

    net = _small_net()
    with torch.no_grad():
        x = torch.ones(1, 3, 8, 8)
        got = torch.compile(net, backend="lamina")(x)
        assert torch.allclose(got, net(x), rtol=1e-4, atol=1e-5)
    print(json.dumps(lamina_torch.stats()))
    """
)


def test_second_process_loads_partitions_from_the_disk_cache(tmp_path) -> None:
    import json

    env = dict(os.environ, LAMINA_CACHE_DIR=str(tmp_path / "cache"))
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(__file__), env.get("PYTHONPATH", "")])
    runs = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", _CACHE_SCRIPT], env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    counts = {"eager_partitions": 0, "dynamic": 0, "per_shape": 0}
    assert runs[0] == {"compiled": 1, "cache_hits": 0, **counts}
    assert runs[1] == {"compiled": 1, "cache_hits": 1, **counts}
    assert len(list((tmp_path / "cache").glob("*.lxc"))) == 1


def test_from_exported_program_compiles_and_matches() -> None:
    model = _small_net()
    x = torch.randn(2, 3, 8, 8)
    module = from_exported_program(torch.export.export(model, (x,)))
    assert [op.name for op in module.walk()].count("graph.conv2d") == 1
    got = lamina.compile(module).run("main", x.numpy())
    with torch.no_grad():
        _assert_close(got, model(x))


def test_from_exported_program_names_the_unsupported_node() -> None:
    model = WithSort().eval()
    ep = torch.export.export(model, (torch.randn(2, 16),))
    with pytest.raises(TorchImportError) as info:
        from_exported_program(ep)
    text = str(info.value)
    assert "FX node 'sort'" in text and "aten.sort.default" in text
    assert text.startswith(f"{__file__}:") and "torch.sort(y, dim=1)" in text


def test_backend_is_found_by_name() -> None:
    """The `torch_dynamo_backends` entry point: no import of Lamina needed."""
    from torch._dynamo import list_backends

    assert "lamina" in list_backends()


def test_options_reach_lamina_compile() -> None:
    """`options={"cache": False}` compiles without touching the disk cache; an unknown
    option is refused by name."""
    model = _small_net()
    x = torch.randn(1, 3, 8, 8)
    before = lamina.cache.entries()
    with torch.no_grad():
        got = torch.compile(model, backend="lamina", options={"cache": False})(x)
        _assert_close(got, model(x))
    assert lamina.cache.entries() == before
    torch._dynamo.reset()
    with pytest.raises(Exception, match=r"unknown lamina backend option\(s\) \['fast'\]"):
        with torch.no_grad():
            torch.compile(model, backend="lamina", options={"fast": True})(x)


class MaskedSoftmax(nn.Module):
    """Attention-style masking: row 1 fully masked (-inf), row 2 partly."""

    def __init__(self):
        super().__init__()
        mask = torch.zeros(4, 6)
        mask[1, :] = float("-inf")
        mask[2, :3] = float("-inf")
        self.register_buffer("mask", mask)

    def forward(self, x):
        return torch.ops.aten._safe_softmax.default(x + self.mask, -1)


def test_safe_softmax_zeroes_fully_masked_rows() -> None:
    model = MaskedSoftmax().eval()
    x = torch.randn(4, 6)
    with torch.no_grad():
        want = model(x)
        got = torch.compile(model, backend="lamina")(x)
    assert torch.equal(got[1], torch.zeros(6)) and torch.equal(want[1], torch.zeros(6))
    _assert_close(got, want)


class OperatorZoo(nn.Module):
    """Most translated operators in one small graph (one compile)."""

    def __init__(self):
        super().__init__()
        self.conv1d = nn.Conv1d(4, 6, 3, padding=2, dilation=2)
        self.grouped = nn.Conv2d(4, 8, 3, stride=2, padding=1, groups=2)
        self.embed = nn.Embedding(10, 8)

    def forward(self, x, ids):
        f = nn.functional
        a = f.hardswish(self.grouped(x))  # (1, 8, 4, 4)
        b = f.hardsigmoid(a) + f.silu(a) * f.gelu(a, approximate="tanh") - torch.tanh(a)
        c = f.avg_pool2d(b, 3, stride=1, padding=1)  # count_include_pad
        d = f.max_pool2d(c, 3, stride=2, ceil_mode=True)  # (1, 8, 2, 2)
        e = torch.cat([d, torch.sigmoid(d)], dim=1)[:, 2:14:3]  # (1, 4, 2, 2)
        left, right = torch.split(e, [1, 3], dim=1)
        g = (left * right.sum(dim=1, keepdim=True)).squeeze(1).transpose(1, 2)
        h = self.conv1d(x.flatten(2)[:, :, 1:9])  # (1, 6, 8)
        h = f.log_softmax(h, dim=-1).amax(dim=1) + h.mean(dim=(1, 2)).unsqueeze(-1)
        k = self.embed(ids).pow(2).clamp(0.1, 2.0).rsqrt()  # (1, 5, 8)
        k = k.expand(2, 5, 8).select(0, 1) * f.gelu(h)
        return g.reshape(1, -1), torch.abs(k) / 3.0 - 1.0


def test_operator_zoo_matches_eager() -> None:
    torch.manual_seed(0)
    model = OperatorZoo().eval()
    x, ids = torch.randn(1, 4, 8, 8), torch.tensor([[1, 3, 5, 7, 9]])
    with torch.no_grad():
        want = model(x, ids)
        with warnings.catch_warnings():
            warnings.simplefilter("error", LaminaFallbackWarning)
            got = torch.compile(model, backend="lamina")(x, ids)
    for g, w in zip(got, want, strict=True):
        _assert_close(g, w)


def test_with_gradients_forward_compiles_and_backward_runs_eagerly() -> None:
    """With autograd on, the forward graph keeps the pooling indices for the backward
    pass: the pooling runs in eager PyTorch (named in the warning), the rest in Lamina,
    and the gradients are PyTorch's."""
    model = _small_net()
    x = torch.randn(2, 3, 8, 8)
    with pytest.warns(LaminaFallbackWarning, match=r"max_pool2d_with_indices.*output 1 used"):
        got = torch.compile(model, backend="lamina")(x)
    got.sum().backward()
    compiled_grad = model.conv.weight.grad.clone()
    model.zero_grad()
    want = model(x)
    want.sum().backward()
    _assert_close(got.detach(), want.detach())
    _assert_close(compiled_grad, model.conv.weight.grad)


def test_from_exported_program_transformer_encoder() -> None:
    """torch.export keeps `scaled_dot_product_attention` and `layer_norm` whole; the
    decompositions take them apart before the import."""
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(32, 4, 64, batch_first=True)
    model = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False).eval()
    x = torch.randn(2, 8, 32)
    module = from_exported_program(torch.export.export(model, (x,)))
    with torch.no_grad():
        _assert_close(lamina.compile(module).run("main", x.numpy()), model(x))


def test_from_exported_program_unbounded_batch_takes_default_bounds() -> None:
    """A `Dim` without bounds: the batch is `?` with [1, 64] (tests/test_torch_dynamic.py
    has bounded ones and the refused inner dimension)."""
    model = _small_net()
    batch = torch.export.Dim("batch")
    ep = torch.export.export(model, (torch.randn(2, 3, 8, 8),), dynamic_shapes=({0: batch},))
    text = print_module(from_exported_program(ep))
    assert "tensor<?x3x8x8xf32>" in text and "N = array<i64: 1, 64>" in text


class RefusedArguments(nn.Module):
    """Operators Lamina has, with argument values it refuses."""

    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose2d(4, 4, 2, stride=2)
        self.conv = nn.Conv2d(4, 4, 3)

    def forward(self, x):
        y = torch.relu(self.up(x))  # transposed
        return nn.functional.adaptive_avg_pool2d(self.conv(y), 4)  # 6x6 -> 4x4


def test_refused_argument_values_run_in_eager_alone() -> None:
    torch.manual_seed(0)
    model = RefusedArguments().eval()
    x = torch.randn(1, 4, 4, 4)
    before = lamina_torch.stats()
    with torch.no_grad(), pytest.warns(LaminaFallbackWarning) as record:
        got = torch.compile(model, backend="lamina")(x)
        want = model(x)
    _assert_close(got, want)
    message = "\n".join(str(w.message) for w in record)
    assert "transposed convolution not supported" in message
    assert "output size [4, 4] does not divide the input size [6, 6]" in message
    after = lamina_torch.stats()
    assert after["compiled"] - before["compiled"] == 1  # relu + conv between them
    assert after["eager_partitions"] == before["eager_partitions"]
