"""Real network architectures as ONNX models, built with `onnx.helper` (random weights).

The graphs follow what `torch.onnx.export` writes for the same PyTorch
modules (BatchNormalization after convolutions, `Gemm` with `transB`,
attention as MatMul/Reshape/Transpose/Softmax with `Shape` arithmetic for
the reshapes, LayerNormalization or its ReduceMean/Pow/Sqrt decomposition),
so the importer sees real networks without needing PyTorch:

* `resnet18()` — torchvision's ResNet-18 at 1×3×224×224 (11.7 M parameters);
* `transformer_encoder()` — 2 × `nn.TransformerEncoderLayer(d_model=256,
  nhead=8)` (dim_feedforward 2048, ReLU, post-norm), sequence 128, batch first;
* `mlp()` — 784 → 512 → 256 → 10 with ReLU, batch 32.

When PyTorch (and torchvision, for ResNet-18) is installed — the `torch` extra —
`export_torch(name, path)` exports the real modules with `torch.onnx.export`.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper


class _Graph:
    """Accumulates nodes and initializers with unique names."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes: list = []
        self.inits: list = []
        self.count = 0

    def name(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}_{self.count}"

    def weight(self, shape, scale: float | None = None, prefix: str = "w") -> str:
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else int(shape[0])
        std = scale if scale is not None else (2.0 / fan_in) ** 0.5
        return self.const(self.rng.normal(0.0, std, size=shape).astype(np.float32), prefix)

    def const(self, array: np.ndarray, prefix: str = "c") -> str:
        name = self.name(prefix)
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def op(self, op_type: str, inputs, n_out: int = 1, **attrs):
        outs = [self.name(op_type.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op_type, list(inputs), outs, name=outs[0], **attrs))
        return outs[0] if n_out == 1 else outs

    def model(self, inputs, outputs, opset: int):
        graph = helper.make_graph(self.nodes, "net", inputs, outputs, self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        model.ir_version = 8
        return model


# ---------------------------------------------------------------------------
# ResNet-18
# ---------------------------------------------------------------------------


def _conv_bn(g: _Graph, x: str, cin: int, cout: int, k: int, stride: int, relu: bool) -> str:
    w = g.weight((cout, cin, k, k))
    y = g.op("Conv", [x, w], kernel_shape=[k, k], strides=[stride, stride],
             pads=[k // 2] * 4)  # fmt: skip
    stats = [
        g.const(g.rng.uniform(0.5, 1.5, cout).astype(np.float32), "bn_scale"),
        g.const(g.rng.normal(0, 0.1, cout).astype(np.float32), "bn_bias"),
        g.const(g.rng.normal(0, 0.1, cout).astype(np.float32), "bn_mean"),
        g.const(g.rng.uniform(0.5, 1.5, cout).astype(np.float32), "bn_var"),
    ]
    y = g.op("BatchNormalization", [y, *stats], epsilon=1e-5)
    return g.op("Relu", [y]) if relu else y


def _basic_block(g: _Graph, x: str, cin: int, cout: int, stride: int) -> str:
    y = _conv_bn(g, x, cin, cout, 3, stride, relu=True)
    y = _conv_bn(g, y, cout, cout, 3, 1, relu=False)
    shortcut = x if stride == 1 and cin == cout else _conv_bn(g, x, cin, cout, 1, stride, False)
    return g.op("Relu", [g.op("Add", [y, shortcut])])


def resnet18(batch: int = 1, size: int = 224, classes: int = 1000, seed: int = 0):
    g = _Graph(seed)
    y = _conv_bn(g, "input", 3, 64, 7, 2, relu=True)
    y = g.op("MaxPool", [y], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        y = _basic_block(g, y, cin, cout, stride)
        y = _basic_block(g, y, cout, cout, 1)
        cin = cout
    y = g.op("Flatten", [g.op("GlobalAveragePool", [y])], axis=1)
    fc_w = g.weight((classes, 512), scale=0.05)
    fc_b = g.const(np.zeros(classes, np.float32), "fc_bias")
    g.op("Gemm", [y, fc_w, fc_b], alpha=1.0, beta=1.0, transB=1)
    g.nodes[-1].output[0] = "output"
    inputs = [helper.make_tensor_value_info("input", TensorProto.FLOAT, [batch, 3, size, size])]
    outputs = [helper.make_tensor_value_info("output", TensorProto.FLOAT, [batch, classes])]
    return g.model(inputs, outputs, opset=17)


# ---------------------------------------------------------------------------
# Transformer encoder
# ---------------------------------------------------------------------------


def _dynamic_reshape(g: _Graph, x: str, like: str, tail: list[int]) -> str:
    """`x.reshape(like.shape[0], like.shape[1], *tail)` the way PyTorch exports it:
    Shape → Gather → Unsqueeze → Concat → Reshape."""
    shape = g.op("Shape", [like])
    dims = []
    for axis in (0, 1):
        d = g.op("Gather", [shape, g.const(np.array(axis, np.int64), "idx")], axis=0)
        dims.append(g.op("Unsqueeze", [d, g.const(np.array([0], np.int64), "axes")]))
    target = g.op("Concat", [*dims, g.const(np.array(tail, np.int64), "tail")], axis=0)
    return g.op("Reshape", [x, target])


def _linear(g: _Graph, x: str, din: int, dout: int) -> str:
    """PyTorch's nn.Linear on a 3-D input: MatMul with the transposed weight, Add bias."""
    w = g.weight((din, dout), scale=din**-0.5)
    b = g.const(g.rng.normal(0, 0.02, dout).astype(np.float32), "bias")
    return g.op("Add", [g.op("MatMul", [x, w]), b])


def _layer_norm(g: _Graph, x: str, d: int, decomposed: bool) -> str:
    gamma = g.const(g.rng.uniform(0.8, 1.2, d).astype(np.float32), "ln_gamma")
    beta = g.const(g.rng.normal(0, 0.1, d).astype(np.float32), "ln_beta")
    if not decomposed:
        return g.op("LayerNormalization", [x, gamma, beta], axis=-1, epsilon=1e-5)
    # What opsets < 17 export: (x - mean) / sqrt(var + eps) * gamma + beta.
    centered = g.op("Sub", [x, g.op("ReduceMean", [x], axes=[-1], keepdims=1)])
    two = g.const(np.array(2.0, np.float32), "two")
    var = g.op("ReduceMean", [g.op("Pow", [centered, two])], axes=[-1], keepdims=1)
    eps = g.const(np.array(1e-5, np.float32), "eps")
    normed = g.op("Div", [centered, g.op("Sqrt", [g.op("Add", [var, eps])])])
    return g.op("Add", [g.op("Mul", [normed, gamma]), beta])


def _encoder_layer(g: _Graph, x: str, d: int, heads: int, ff: int, decomposed: bool) -> str:
    hd = d // heads
    qkv = _linear(g, x, d, 3 * d)
    q, k, v = g.op("Split", [qkv, g.const(np.array([d, d, d], np.int64), "split")], 3, axis=-1)

    def heads_first(t: str) -> str:
        return g.op("Transpose", [_dynamic_reshape(g, t, x, [heads, hd])], perm=[0, 2, 1, 3])

    q, k, v = heads_first(q), heads_first(k), heads_first(v)
    q = g.op("Mul", [q, g.const(np.array(hd**-0.5, np.float32), "scale")])
    scores = g.op("MatMul", [q, g.op("Transpose", [k], perm=[0, 1, 3, 2])])
    attn = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
    attn = g.op("Transpose", [attn], perm=[0, 2, 1, 3])
    attn = _dynamic_reshape(g, attn, x, [d])
    y = _layer_norm(g, g.op("Add", [x, _linear(g, attn, d, d)]), d, decomposed)
    hidden = g.op("Relu", [_linear(g, y, d, ff)])
    return _layer_norm(g, g.op("Add", [y, _linear(g, hidden, ff, d)]), d, decomposed)


def transformer_encoder(seq: int = 128, d: int = 256, heads: int = 8, ff: int = 2048,
                        layers: int = 2, seed: int = 0):  # fmt: skip
    """Layer 1 uses LayerNormalization, layer 2 the decomposed form of older exports."""
    g = _Graph(seed)
    y = "src"
    for n in range(layers):
        y = _encoder_layer(g, y, d, heads, ff, decomposed=n % 2 == 1)
    g.nodes.append(helper.make_node("Identity", [y], ["output"], name="output"))
    inputs = [helper.make_tensor_value_info("src", TensorProto.FLOAT, [1, seq, d])]
    outputs = [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, seq, d])]
    return g.model(inputs, outputs, opset=17)


# ---------------------------------------------------------------------------
# MLP
# ---------------------------------------------------------------------------


def mlp(batch: int = 32, sizes=(784, 512, 256, 10), seed: int = 0):
    g = _Graph(seed)
    y = g.op("Flatten", ["input"], axis=1)
    for n, (din, dout) in enumerate(zip(sizes, sizes[1:], strict=False)):
        w = g.weight((dout, din))
        b = g.const(g.rng.normal(0, 0.02, dout).astype(np.float32), "bias")
        y = g.op("Gemm", [y, w, b], transB=1)
        if n < len(sizes) - 2:
            y = g.op("Relu", [y])
    g.nodes[-1].output[0] = "output"
    inputs = [helper.make_tensor_value_info("input", TensorProto.FLOAT, [batch, 1, 28, 28])]
    outputs = [helper.make_tensor_value_info("output", TensorProto.FLOAT, [batch, sizes[-1]])]
    return g.model(inputs, outputs, opset=17)


BUILDERS = {"resnet18": resnet18, "transformer": transformer_encoder, "mlp": mlp}


def torch_resnet18():
    """torchvision's `resnet18()` with random weights (the real network, as users export it)."""
    import torchvision

    return torchvision.models.resnet18()


def _randomize_batch_norm(module) -> None:
    """Random BatchNorm statistics and affine parameters: freshly built modules have
    mean 0, variance 1, scale 1 and bias 0, which would leave the folding of BatchNorm
    into the convolutions untested."""
    import torch

    for m in module.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            with torch.no_grad():
                m.weight.uniform_(0.5, 1.5)
                m.bias.normal_(0.0, 0.1)
                m.running_mean.normal_(0.0, 0.1)
                m.running_var.uniform_(0.5, 1.5)


def torch_module(name: str):
    """The PyTorch module (eval mode, random weights, seed 0) and an example input."""
    import torch

    torch.manual_seed(0)
    if name == "resnet18":
        module, example = torch_resnet18(), torch.randn(1, 3, 224, 224)
        _randomize_batch_norm(module)
    elif name == "transformer":
        layer = torch.nn.TransformerEncoderLayer(256, 8, batch_first=True)
        module = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        example = torch.randn(1, 128, 256)
    elif name == "mlp":
        module = torch.nn.Sequential(
            torch.nn.Flatten(), torch.nn.Linear(784, 512), torch.nn.ReLU(),
            torch.nn.Linear(512, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10),
        )  # fmt: skip
        example = torch.randn(32, 1, 28, 28)
    elif name in ("vit", "swin"):
        module, example = _small_vision_transformer(name), torch.randn(1, 3, 64, 64)
    else:
        raise ValueError(f"unknown network {name!r} (known: {', '.join(BUILDERS)})")
    return module.eval(), example


def _small_vision_transformer(name: str):
    """torchvision's ViT and Swin classes at a small size (64x64 images, two layers):
    the code paths of `vit_b_16` and `swin_t` -- 17 tokens (a row count no register
    block divides), exact gelu through `Erf`, LayerNorm, attention, and for Swin the
    `Pad` of its windows and the shifted-window masks -- in a second's compile."""
    from torchvision.models.swin_transformer import SwinTransformer
    from torchvision.models.vision_transformer import VisionTransformer

    if name == "vit":
        return VisionTransformer(image_size=64, patch_size=16, num_layers=2, num_heads=4,
                                 hidden_dim=64, mlp_dim=128, num_classes=10)  # fmt: skip
    return SwinTransformer(patch_size=[4, 4], embed_dim=32, depths=[2, 2], num_heads=[2, 4],
                           window_size=[4, 4], num_classes=10)  # fmt: skip


EXPORTERS = ("torchscript", "dynamo")


def export_torch(name: str, path: str, exporter: str = "torchscript"):
    """Export the real PyTorch module (random weights) to `path` and return the exported
    `(module, example input)`, so callers can compare with PyTorch itself; None without
    torch.

    `exporter` picks PyTorch's exporter: "torchscript" (`dynamo=False`, opset 17; keeps
    BatchNormalization and the `Shape` arithmetic of reshapes) or "dynamo" (the
    torch.export-based default of PyTorch 2.9+, opset 18; needs `onnxscript`; folds
    BatchNorm itself and writes static shapes). Both print progress and warn about
    PyTorch's own internals (deprecated APIs, torchvision operators it skips), which say
    nothing about the model, so that output is silenced here.
    """
    try:
        import torch
    except ImportError:
        return None
    if exporter not in EXPORTERS:
        raise ValueError(f"unknown exporter {exporter!r} (known: {', '.join(EXPORTERS)})")
    import contextlib
    import io
    import logging
    import warnings

    module, example = torch_module(name)
    dynamo = exporter == "dynamo"
    logger = logging.getLogger("torch.onnx")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            torch.onnx.export(module, (example,), path, opset_version=18 if dynamo else 17,
                              input_names=["input"], output_names=["output"], dynamo=dynamo,
                              external_data=False)  # fmt: skip
    finally:
        logger.setLevel(level)
    return module, example
