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
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
