"""conv2d (and matmul) with and without `plan-layouts`, against onnxruntime, in one run.

    python benchmarks/bench_layouts.py            # 1x64x56x56 3x3 (+bias+relu), 1x1, stride 2, matmul
    python benchmarks/bench_layouts.py --quick    # small sizes (smoke run)

Every case is compiled twice -- default pipeline (plan-layouts on: conv2d
channel-blocked NCHW{lanes}c with pre-packed weights) and with the module
attribute `lamina.plan_layouts = false` -- and run by onnxruntime on one
thread (`intra_op_num_threads = 1`; Lamina gets `LAMINA_NUM_THREADS=1`).
Rounds are interleaved and the median per variant is printed with the
ratios to onnxruntime (>1: slower than onnxruntime). Needs the `bench`
extra (`pip install -e '.[bench]'`). Numbers are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass

os.environ.setdefault("LAMINA_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from bench import _t  # noqa: E402  (bench.py's tensor-type helper)

import lamina  # noqa: E402


@dataclass
class ConvCase:
    name: str
    c: int
    o: int
    hw: int
    k: int
    stride: int
    bias_relu: bool


def conv_text(case: ConvCase, w: np.ndarray, b: np.ndarray, layouts: bool) -> str:
    pad = case.k // 2
    out = (case.hw + 2 * pad - case.k) // case.stride + 1
    x_t, o_t = _t((1, case.c, case.hw, case.hw)), _t((1, case.o, out, out))
    flag = "" if layouts else " attributes {lamina.plan_layouts = false}"
    body = [
        f"%w = graph.constant dense<{json.dumps(w.tolist())}> : {_t(w.shape)}",
        f"%y = graph.conv2d %x, %w {{strides = array<i64: {case.stride}, {case.stride}>, "
        f"padding = array<i64: {pad}, {pad}, {pad}, {pad}>}} : ({x_t}, {_t(w.shape)}) -> {o_t}",
    ]
    ret = "%y"
    if case.bias_relu:
        body += [
            f"%b = graph.constant dense<{json.dumps(b.tolist())}> : {_t(b.shape)}",
            f"%s = graph.add %y, %b : ({o_t}, {_t(b.shape)}) -> {o_t}",
            f"%r = graph.relu %s : ({o_t}) -> {o_t}",
        ]
        ret = "%r"
    lines = "\n    ".join(body)
    return f"""builtin.module{flag} {{
  graph.func @main(%x: {x_t}) -> {o_t} {{
    {lines}
    graph.return {ret} : {o_t}
  }}
}}"""


def ort_conv(case: ConvCase, w: np.ndarray, b: np.ndarray):
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    pad = case.k // 2
    nodes = [
        helper.make_node(
            "Conv",
            ["x", "w", "b"] if case.bias_relu else ["x", "w"],
            ["y"],
            pads=[pad] * 4,
            strides=[case.stride] * 2,
        )
    ]
    out = "y"
    if case.bias_relu:
        nodes.append(helper.make_node("Relu", ["y"], ["r"]))
        out = "r"
    graph = helper.make_graph(
        nodes,
        "conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, case.c, case.hw, case.hw])],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w, "w")]
        + ([numpy_helper.from_array(b.reshape(-1), "b")] if case.bias_relu else []),
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    return lambda x: session.run(None, {"x": x})[0]


def ort_matmul(n: int):
    import onnxruntime as ort
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("MatMul", ["a", "b"], ["c"])],
        "mm",
        [
            helper.make_tensor_value_info("a", TensorProto.FLOAT, [n, n]),
            helper.make_tensor_value_info("b", TensorProto.FLOAT, [n, n]),
        ],
        [helper.make_tensor_value_info("c", TensorProto.FLOAT, [n, n])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options)
    return lambda a, b: session.run(None, {"a": a, "b": b})[0]


def median_times(fns: dict[str, object], args: tuple, rounds: int, inner: int) -> dict[str, float]:
    """Interleaved rounds (each variant once per round, `inner` calls), median per variant."""
    samples: dict[str, list[float]] = {k: [] for k in fns}
    for fn in fns.values():
        fn(*args)  # warm up
    for _ in range(rounds):
        for key, fn in fns.items():
            start = time.perf_counter()
            for _ in range(inner):
                fn(*args)
            samples[key].append((time.perf_counter() - start) / inner)
    return {k: statistics.median(v) for k, v in samples.items()}


def report(name: str, times: dict[str, float], flops: float) -> None:
    ort_t = times["onnxruntime"]
    parts = [f"{name:<34}"]
    for key, t in times.items():
        ratio = "" if key == "onnxruntime" else f" ({t / ort_t:.2f}x ort)"
        parts.append(f"{key} {t * 1e3:8.3f} ms{ratio} {flops / t / 1e9:6.1f} GF/s")
    print(" | ".join(parts), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, few rounds")
    parser.add_argument("--rounds", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    hw = 14 if args.quick else 56
    rounds = args.rounds or (3 if args.quick else 7)
    convs = [
        ConvCase("conv3x3 64->64 +bias+relu", 64, 64, hw, 3, 1, True),
        ConvCase("conv3x3 64->64", 64, 64, hw, 3, 1, False),
        ConvCase("conv1x1 64->64", 64, 64, hw, 1, 1, False),
        ConvCase("conv3x3 64->128 stride 2", 64, 128, hw, 3, 2, False),
    ]
    print(f"threads: 1; rounds: {rounds} (interleaved, median)")
    for case in convs:
        w = (rng.standard_normal((case.o, case.c, case.k, case.k)) * 0.1).astype(np.float32)
        b = rng.standard_normal((1, case.o, 1, 1)).astype(np.float32)
        x = rng.standard_normal((1, case.c, case.hw, case.hw)).astype(np.float32)
        fns = {"onnxruntime": ort_conv(case, w, b)}
        for label, on in (("plan-layouts", True), ("no-plan-layouts", False)):
            exe = lamina.compile(conv_text(case, w, b, on))
            fns[label] = lambda x, exe=exe: exe.run("main", x)
        ref = fns["onnxruntime"](x)
        for key in ("plan-layouts", "no-plan-layouts"):
            np.testing.assert_allclose(fns[key](x), ref, rtol=2e-3, atol=2e-3)
        out = (case.hw + 2 * (case.k // 2) - case.k) // case.stride + 1
        flops = 2.0 * case.o * case.c * case.k * case.k * out * out
        inner = 1 if not args.quick else 5
        report(case.name, median_times(fns, (x,), rounds, inner), flops)
    n = 128 if args.quick else 512
    a = rng.standard_normal((n, n)).astype(np.float32)
    bm = rng.standard_normal((n, n)).astype(np.float32)
    fns = {"onnxruntime": ort_matmul(n)}
    for label, on in (("plan-layouts", True), ("no-plan-layouts", False)):
        flag = "" if on else " attributes {lamina.plan_layouts = false}"
        text = f"""builtin.module{flag} {{
  graph.func @main(%a: {_t((n, n))}, %b: {_t((n, n))}) -> {_t((n, n))} {{
    %c = graph.matmul %a, %b : ({_t((n, n))}, {_t((n, n))}) -> {_t((n, n))}
    graph.return %c : {_t((n, n))}
  }}
}}"""
        exe = lamina.compile(text)
        fns[label] = lambda a, b, exe=exe: exe.run("main", a, b)
    report(f"matmul {n}x{n}", median_times(fns, (a, bm), rounds, 1), 2.0 * n**3)
    return 0


if __name__ == "__main__":
    sys.exit(main())
