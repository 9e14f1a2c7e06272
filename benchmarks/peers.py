"""Peer graphs for the benchmarks: the attention block, and ONNX models for onnxruntime.

Every ONNX model takes the same inputs as the Lamina program (weights are
inputs, not initializers), so both run on the same arrays. Built with
`onnx.helper` (the optional extra `lamina[bench]`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def _t(shape: Sequence[int]) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xf32>"


# ---------------------------------------------------------------------------
# attention block: y = x + Wo·Attention(LayerNorm(x))
# ---------------------------------------------------------------------------


def attention_program(seq: int, d: int, heads: int) -> str:
    """One pre-norm attention block in the graph dialect (pretty syntax)."""
    hd = d // heads
    x, v, w, s4, h4, sc = (
        _t((seq, d)),
        _t((d,)),
        _t((d, d)),
        _t((seq, heads, hd)),
        _t((heads, seq, hd)),
        _t((heads, seq, seq)),
    )
    lines = [
        f"%h = graph.layer_norm %x, %g, %b {{axis = -1 : i64, epsilon = 1.0e-05 : f32}} : ({x}, {v}, {v}) -> {x}"
    ]
    for name in ("q", "k", "v"):
        lines += [
            f"%{name}0 = graph.matmul %h, %w{name} : ({x}, {w}) -> {x}",
            f"%{name}1 = graph.add %{name}0, %b{name} : ({x}, {v}) -> {x}",
            f"%{name}2 = graph.reshape %{name}1 : ({x}) -> {s4}",
        ]
    lines += [
        f"%qh = graph.transpose %q2 {{perm = array<i64: 1, 0, 2>}} : ({s4}) -> {h4}",
        f"%kt = graph.transpose %k2 {{perm = array<i64: 1, 2, 0>}} : ({s4}) -> {_t((heads, hd, seq))}",
        f"%vh = graph.transpose %v2 {{perm = array<i64: 1, 0, 2>}} : ({s4}) -> {h4}",
        f"%s = graph.matmul %qh, %kt : ({h4}, {_t((heads, hd, seq))}) -> {sc}",
        f"%scale = graph.constant dense<{1 / np.sqrt(hd):.8e}> : tensor<f32>",
        f"%ss = graph.mul %s, %scale : ({sc}, tensor<f32>) -> {sc}",
        f"%p = graph.softmax %ss {{axis = -1 : i64}} : ({sc}) -> {sc}",
        f"%c = graph.matmul %p, %vh : ({sc}, {h4}) -> {h4}",
        f"%ct = graph.transpose %c {{perm = array<i64: 1, 0, 2>}} : ({h4}) -> {s4}",
        f"%m = graph.reshape %ct : ({s4}) -> {x}",
        f"%o0 = graph.matmul %m, %wo : ({x}, {w}) -> {x}",
        f"%o1 = graph.add %o0, %bo : ({x}, {v}) -> {x}",
        f"%y = graph.add %x, %o1 : ({x}, {x}) -> {x}",
    ]
    params = f"%x: {x}, %g: {v}, %b: {v}, " + ", ".join(
        f"%w{n}: {w}, %b{n}: {v}" for n in ("q", "k", "v", "o")
    )
    body = "\n  ".join(lines)
    return f"graph.func @main({params}) -> {x} {{\n  {body}\n  graph.return %y : {x}\n}}\n"


def attention_inputs(rng: np.random.Generator, seq: int, d: int) -> list[np.ndarray]:
    def rand(*shape: int, scale: float = 1.0) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    params = [rand(seq, d), rand(d, scale=0.1) + 1, rand(d, scale=0.1)]
    for _ in range(4):
        params += [rand(d, d, scale=d**-0.5), rand(d, scale=0.1)]
    return params


def numpy_attention(heads: int):
    def run(x, g, b, wq, bq, wk, bk, wv, bv, wo, bo):
        seq, d = x.shape
        hd = d // heads
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        h = (x - mu) / np.sqrt(var + 1e-5) * g + b
        q = (h @ wq + bq).reshape(seq, heads, hd).transpose(1, 0, 2)
        k = (h @ wk + bk).reshape(seq, heads, hd).transpose(1, 2, 0)
        v = (h @ wv + bv).reshape(seq, heads, hd).transpose(1, 0, 2)
        s = (q @ k) * np.float32(1 / np.sqrt(hd))
        s = np.exp(s - s.max(-1, keepdims=True))
        p = s / s.sum(-1, keepdims=True)
        c = (p @ v).transpose(1, 0, 2).reshape(seq, d)
        return x + (c @ wo + bo)

    return run


def attention_flops(seq: int, d: int) -> float:
    return 4 * 2.0 * seq * d * d + 2 * 2.0 * seq * seq * d


# ---------------------------------------------------------------------------
# ONNX models
# ---------------------------------------------------------------------------


def _model(
    nodes, inputs: list[tuple[str, Sequence[int]]], output: tuple[str, Sequence[int]], inits=()
):
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        nodes,
        "bench",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s)) for n, s in inputs],
        [helper.make_tensor_value_info(output[0], TensorProto.FLOAT, list(output[1]))],
        initializer=list(inits),
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def onnx_matmul(n: int) -> bytes:
    from onnx import helper

    return _model(
        [helper.make_node("MatMul", ["a", "b"], ["c"])],
        [("a", (n, n)), ("b", (n, n))],
        ("c", (n, n)),
    )


def onnx_mlp(batch: int, sizes: Sequence[int]) -> bytes:
    from onnx import helper

    nodes, inputs, x = [], [("x", (batch, sizes[0]))], "x"
    for layer, (k, m) in enumerate(zip(sizes, sizes[1:], strict=False)):
        w, b = f"w{layer}", f"b{layer}"
        inputs += [(w, (k, m)), (b, (m,))]
        nodes += [
            helper.make_node("MatMul", [x, w], [f"mm{layer}"]),
            helper.make_node("Add", [f"mm{layer}", b], [f"add{layer}"]),
        ]
        x = f"add{layer}"
        if layer < len(sizes) - 2:
            nodes.append(helper.make_node("Relu", [x], [f"relu{layer}"]))
            x = f"relu{layer}"
    nodes.append(helper.make_node("Identity", [x], ["y"]))
    return _model(nodes, inputs, ("y", (batch, sizes[-1])))


def onnx_conv3x3(n: int, c: int, hw: int, f: int) -> bytes:
    from onnx import helper

    node = helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])
    return _model([node], [("x", (n, c, hw, hw)), ("w", (f, c, 3, 3))], ("y", (n, f, hw, hw)))


def onnx_attention(seq: int, d: int, heads: int) -> bytes:
    from onnx import TensorProto, helper

    hd = d // heads
    mk = helper.make_node
    inits = [
        helper.make_tensor("shape4", TensorProto.INT64, [3], [seq, heads, hd]),
        helper.make_tensor("shape2", TensorProto.INT64, [2], [seq, d]),
        helper.make_tensor("scale", TensorProto.FLOAT, [], [float(1 / np.sqrt(hd))]),
    ]
    nodes = [mk("LayerNormalization", ["x", "g", "b"], ["h"], axis=-1, epsilon=1e-5)]
    for n in ("q", "k", "v"):
        nodes += [
            mk("MatMul", ["h", f"w{n}"], [f"{n}0"]),
            mk("Add", [f"{n}0", f"b{n}"], [f"{n}1"]),
            mk("Reshape", [f"{n}1", "shape4"], [f"{n}2"]),
        ]
    nodes += [
        mk("Transpose", ["q2"], ["qh"], perm=[1, 0, 2]),
        mk("Transpose", ["k2"], ["kt"], perm=[1, 2, 0]),
        mk("Transpose", ["v2"], ["vh"], perm=[1, 0, 2]),
        mk("MatMul", ["qh", "kt"], ["s"]),
        mk("Mul", ["s", "scale"], ["ss"]),
        mk("Softmax", ["ss"], ["p"], axis=-1),
        mk("MatMul", ["p", "vh"], ["c"]),
        mk("Transpose", ["c"], ["ct"], perm=[1, 0, 2]),
        mk("Reshape", ["ct", "shape2"], ["m"]),
        mk("MatMul", ["m", "wo"], ["o0"]),
        mk("Add", ["o0", "bo"], ["o1"]),
        mk("Add", ["x", "o1"], ["y"]),
    ]
    inputs = [("x", (seq, d)), ("g", (d,)), ("b", (d,))]
    for n in ("q", "k", "v", "o"):
        inputs += [(f"w{n}", (d, d)), (f"b{n}", (d,))]
    return _model(nodes, inputs, ("y", (seq, d)), inits)


def ort_session(model: bytes, threads: int):
    """An onnxruntime session on `threads` intra-op threads (None without onnxruntime)."""
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    # onnxruntime's worker threads spin after each run by default, taking a
    # core from whatever runs next: in interleaved rounds at two threads they
    # halved Lamina's speed (matmul 1024: 1.05x scaling instead of 1.95x)
    # while not spinning cost onnxruntime nothing measurable (11.8 vs 12.8 ms).
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])


def onnx_flops(model) -> float:
    """Multiply-add flops (2 per multiply-add) of an ONNX model's Conv, ConvTranspose-free
    Gemm and MatMul nodes, from ONNX shape inference (batch as exported): the work an FMA
    peak bounds. Elementwise ops, pools and softmax are left out (a few per cent of a
    CNN's flops)."""
    import onnx

    inferred = onnx.shape_inference.infer_shapes(model)
    graph = inferred.graph
    shapes: dict[str, list[int]] = {}
    for info in [*graph.input, *graph.value_info, *graph.output]:
        dims = info.type.tensor_type.shape.dim
        shapes[info.name] = [d.dim_value for d in dims]
    for init in graph.initializer:
        shapes[init.name] = list(init.dims)
    total = 0.0
    for node in graph.node:
        out = shapes.get(node.output[0]) if node.output else None
        if not out or not all(out):
            continue
        if node.op_type == "Conv":
            w = shapes.get(node.input[1])
            if w and all(w):
                total += 2.0 * float(np.prod(out)) * float(np.prod(w[1:]))
        elif node.op_type in ("Gemm", "MatMul"):
            a = shapes.get(node.input[0])
            if a and all(a):
                transposed = node.op_type == "Gemm" and any(
                    att.name == "transA" and att.i for att in node.attribute
                )
                k = a[-2] if transposed else a[-1]
                total += 2.0 * float(np.prod(out)) * k
    return total


# ---------------------------------------------------------------------------
# convolutions: conv + bias + relu layers, and a small ResNet-style CNN
# ---------------------------------------------------------------------------


class ConvNet:
    """A chain of `conv2d + bias (+ residual) + relu` layers, emitted for Lamina, NumPy and ONNX.

    `layers`: (out channels, kernel, stride, residual-from layer index or None).
    """

    def __init__(
        self, shape: tuple[int, int, int, int], layers: list[tuple[int, int, int, int | None]]
    ):
        self.shape = shape
        self.layers = layers
        self.shapes = [shape]
        for f, k, s, _ in layers:
            n, _, h, _ = self.shapes[-1]
            out = (h + 2 * (k // 2) - k) // s + 1
            self.shapes.append((n, f, out, out))

    def params(self) -> list[tuple[int, ...]]:
        out = []
        for (f, k, _, _), shape in zip(self.layers, self.shapes, strict=False):
            out += [(f, shape[1], k, k), (f, 1, 1)]
        return out

    def flops(self) -> float:
        return sum(
            2.0 * o[0] * o[1] * o[2] * o[3] * i[1] * k * k
            for (_, k, _, _), i, o in zip(self.layers, self.shapes, self.shapes[1:], strict=False)
        )

    def program(self) -> str:
        args = [f"%x: {_t(self.shape)}"]
        lines, x = [], "%x"
        for i, ((_f, k, s, res), shp, out) in enumerate(
            zip(self.layers, self.shapes, self.shapes[1:], strict=False)
        ):
            w, b = self.params()[2 * i], self.params()[2 * i + 1]
            args += [f"%w{i}: {_t(w)}", f"%b{i}: {_t(b)}"]
            p = k // 2
            lines += [
                f"%c{i} = graph.conv2d {x}, %w{i} {{strides = array<i64: {s}, {s}>, padding = "
                f"array<i64: {p}, {p}, {p}, {p}>}} : ({_t(shp)}, {_t(w)}) -> {_t(out)}",
                f"%a{i} = graph.add %c{i}, %b{i} : ({_t(out)}, {_t(b)}) -> {_t(out)}",
            ]
            y = f"%a{i}"
            if res is not None:
                lines.append(
                    f"%s{i} = graph.add {y}, %r{res} : ({_t(out)}, {_t(out)}) -> {_t(out)}"
                )
                y = f"%s{i}"
            lines.append(f"%r{i} = graph.relu {y} : ({_t(out)}) -> {_t(out)}")
            x = f"%r{i}"
        body = "\n  ".join(lines)
        last = _t(self.shapes[-1])
        return f"graph.func @main({', '.join(args)}) -> {last} {{\n  {body}\n  graph.return {x} : {last}\n}}\n"

    def inputs(self, rng: np.random.Generator) -> list[np.ndarray]:
        arrays = [rng.standard_normal(self.shape).astype(np.float32)]
        for shape in self.params():
            fan_in = np.prod(shape[1:]) if len(shape) == 4 else 1
            arrays.append((rng.standard_normal(shape) * (2 / fan_in) ** 0.5).astype(np.float32))
        return arrays

    def numpy(self, x, *params):
        outs = []
        for i, (_, _k, s, res) in enumerate(self.layers):
            y = _numpy_conv(x, params[2 * i], s) + params[2 * i + 1]
            if res is not None:
                y = y + outs[res]
            x = np.maximum(y, 0)
            outs.append(x)
        return x

    def onnx(self) -> bytes:
        from onnx import helper

        nodes, inputs, x = [], [("x", self.shape)], "x"
        for i, (_, k, s, res) in enumerate(self.layers):
            w, b = self.params()[2 * i], self.params()[2 * i + 1]
            inputs += [(f"w{i}", w), (f"b{i}", b)]
            p = k // 2
            nodes += [
                helper.make_node("Conv", [x, f"w{i}"], [f"c{i}"], pads=[p] * 4, strides=[s, s]),
                helper.make_node("Add", [f"c{i}", f"b{i}"], [f"a{i}"]),
            ]
            y = f"a{i}"
            if res is not None:
                nodes.append(helper.make_node("Add", [y, f"r{res}"], [f"s{i}"]))
                y = f"s{i}"
            nodes.append(helper.make_node("Relu", [y], [f"r{i}"]))
            x = f"r{i}"
        nodes.append(helper.make_node("Identity", [x], ["y"]))
        return _model(nodes, inputs, ("y", self.shapes[-1]))


def _numpy_conv(x: np.ndarray, w: np.ndarray, stride: int) -> np.ndarray:
    """im2col + matmul (NumPy's usual conv formulation); padding k // 2."""
    n, c, h, _ = x.shape
    f, _, k, _ = w.shape
    p = k // 2
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    cols = np.lib.stride_tricks.sliding_window_view(xp, (k, k), axis=(2, 3))[
        :, :, ::stride, ::stride
    ]
    oh = cols.shape[2]
    cols = cols.transpose(0, 2, 3, 1, 4, 5).reshape(n * oh * oh, c * k * k)
    out = cols @ w.reshape(f, -1).T
    return out.reshape(n, oh, oh, f).transpose(0, 3, 1, 2)


def resnet_style(quick: bool) -> ConvNet:
    """9 convolutions, 3 residual adds: a stem, 3 residual blocks, 2 downsampling convs."""
    c = (4, 8, 8) if quick else (16, 32, 64)
    hw = 16 if quick else 64
    return ConvNet(
        (1, 3, hw, hw),
        [
            (c[0], 3, 1, None),
            (c[0], 3, 1, None), (c[0], 3, 1, 0),
            (c[1], 3, 2, None),
            (c[1], 3, 1, None), (c[1], 3, 1, 3),
            (c[2], 3, 2, None),
            (c[2], 3, 1, None), (c[2], 3, 1, 6),
        ],
    )  # fmt: skip


NETWORKS = (
    "resnet18",
    "resnet50",
    "mobilenet_v2",
    "mobilenet_v3_large",
    "squeezenet1_1",
    "shufflenet_v2_x1_0",
    "densenet121",
    "googlenet",
    "efficientnet_b0",
)
"""The torchvision classifiers the project's speed and compile-time goals are
stated on (`bench_models.py`'s default set; `bench_compile.py` adds resnet34)."""
