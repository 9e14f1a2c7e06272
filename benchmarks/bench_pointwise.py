"""Pointwise (1x1) convolutions of real networks: Lamina vs onnxruntime, per shape.

Each case is `depthwise 3x3 -> 1x1 conv + bias + relu` on a batch-1 NCHW
input, weights constant (ONNX initializers), so that the 1x1 convolution
reads a channel-blocked input as it does inside MobileNet/EfficientNet/ResNet
(the depthwise convolution, about 9/C_out of the FLOPs, and the layout
transforms at both ends run on both sides). Times are medians of
interleaved rounds (`bench._rounds`), one thread; GFLOP/s counts the 1x1
convolution's FLOPs only, against the measured FMA peak
(`bench.measured_peak_gflops`). `--target` takes several targets (e.g.
`cpu cpu{isa=avx2}`); `--variant` adds target options compared in the same
run (e.g. `conv_channel_jam=1`, the one-block micro-kernel).

    python benchmarks/bench_pointwise.py --rounds 40 --target cpu 'cpu{isa=avx2}'
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench  # noqa: E402
import peers  # noqa: E402

SHAPES: list[tuple[str, int, int, int, int]] = [
    # (network, C_in, C_out, input size, stride)
    ("mobilenet_v2", 16, 96, 112, 1),
    ("mobilenet_v3_large", 16, 64, 112, 1),
    ("mobilenet_v3_large", 16, 16, 112, 1),
    ("mobilenet_v2", 24, 144, 56, 1),
    ("mobilenet_v3_large", 24, 72, 56, 1),
    ("mobilenet_v2", 144, 24, 56, 1),
    ("mobilenet_v2", 192, 32, 28, 1),
    ("mobilenet_v2", 64, 384, 14, 1),
    ("mobilenet_v2", 384, 64, 14, 1),
    ("mobilenet_v2", 96, 576, 14, 1),
    ("mobilenet_v2", 576, 96, 14, 1),
    ("mobilenet_v2", 160, 960, 7, 1),
    ("mobilenet_v2", 960, 160, 7, 1),
    ("mobilenet_v2", 960, 320, 7, 1),
    ("mobilenet_v2", 320, 1280, 7, 1),
    ("efficientnet_b0", 40, 240, 28, 1),
    ("efficientnet_b0", 80, 480, 14, 1),
    ("efficientnet_b0", 672, 112, 14, 1),
    ("efficientnet_b0", 1152, 192, 7, 1),
    ("efficientnet_b0", 1152, 320, 7, 1),
    ("resnet50", 64, 256, 56, 1),
    ("resnet50", 256, 64, 56, 1),
    ("resnet50", 512, 128, 28, 1),
    ("resnet50", 1024, 256, 14, 1),
    ("resnet50", 256, 1024, 14, 1),
    ("resnet50", 2048, 512, 7, 1),
    ("resnet50", 512, 2048, 7, 1),
    ("resnet50", 256, 512, 56, 2),
    ("resnet50", 512, 1024, 28, 2),
    ("resnet50", 1024, 2048, 14, 2),
    ("squeezenet1_1", 512, 1000, 13, 1),
    ("densenet121", 768, 128, 14, 1),
    ("densenet121", 1024, 128, 7, 1),
    ("densenet121", 512, 256, 28, 1),
    ("squeezenet1_1", 16, 64, 55, 1),
]


def onnx_model(cin: int, cout: int, hw: int, stride: int):
    """`x -> depthwise 3x3 -> 1x1 conv(stride) + bias -> relu` with constant weights."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    weights = [
        ("wd", rng.standard_normal((cin, 1, 3, 3)) * 0.3),
        ("w", rng.standard_normal((cout, cin, 1, 1)) / np.sqrt(cin)),
        ("b", rng.standard_normal(cout)),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "wd"], ["d"], group=cin, pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["d", "w", "b"], ["c"], strides=[stride, stride]),
        helper.make_node("Relu", ["c"], ["y"]),
    ]
    out = (hw - 1) // stride + 1
    graph = helper.make_graph(
        nodes,
        "pointwise",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, cin, hw, hw])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, cout, out, out])],
        [numpy_helper.from_array(a.astype(np.float32), n) for n, a in weights],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def kernel_times(model, x: np.ndarray, exes: list, rounds: int, flush_mb: int = 0) -> list[float]:
    """Seconds in the 1x1 convolution's kernel, onnxruntime's then each Lamina
    build's (`profile=True`), medians of interleaved rounds: onnxruntime's own
    profiler times its node, `Executable.profile` (one run per round) the
    kernel. `flush_mb`: write a buffer of that many MB before every call, so
    that the weights come from L3 or memory as inside a network (whose
    weights are read once per call)."""
    import json
    import tempfile

    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.enable_profiling = True
    times: list[list[float]] = [[] for _ in range(len(exes) + 1)]
    junk = np.zeros(flush_mb * (1 << 18), np.float32)

    def flush() -> None:
        if flush_mb:
            np.add(junk, 1.0, out=junk)

    with tempfile.TemporaryDirectory() as tmp:
        options.profile_file_prefix = os.path.join(tmp, "ort")
        session = ort.InferenceSession(
            model.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
        for round_ in range(rounds + 1):
            flush()
            session.run(None, {"x": x})
            for exe, out in zip(exes, times[1:], strict=True):
                flush()
                profile = exe.profile("main", x, runs=1)
                kernel = next(k for k in profile.kernels if _is_pointwise(k.symbol))
                if round_:
                    out.append(kernel.total_ms / 1e3)
        events = json.loads(Path(session.end_profiling()).read_text())
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            shapes = [next(iter(v.values())) for v in e["args"].get("input_type_shape", [])]
            if len(shapes) > 1 and list(shapes[1][2:4]) == [1, 1]:
                times[0].append(e["dur"] / 1e6)
    times[0] = times[0][1:]
    return [float(np.median(t)) for t in times]


def _is_pointwise(symbol: str) -> bool:
    """The 1x1 convolution's kernel: the fused conv2d (bias, relu), not the depthwise one."""
    return symbol.startswith("te_fused_conv2d")


def _with_options(target: str, options: str) -> str:
    if not options:
        return target
    if target.endswith("}"):
        return target[:-1] + " " + options + "}"
    return f"{target}{{{options}}}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--target", nargs="+", default=["cpu"])
    parser.add_argument("--variant", nargs="*", default=[], help="extra target options to compare")
    parser.add_argument("--only", default="", help="only shapes whose label contains this")
    parser.add_argument(
        "--kernels", action="store_true", help="time the 1x1 kernel alone (both profilers)"
    )
    parser.add_argument(
        "--flush",
        type=int,
        default=0,
        metavar="MB",
        help="with --kernels: write MB megabytes before every call (weights cold, as in a network)",
    )
    args = parser.parse_args(argv)

    import lamina
    from lamina.frontends.onnx import import_model

    os.environ["LAMINA_CACHE"] = "0"
    bench.set_num_threads(1)
    peaks = {t: bench.measured_peak_gflops(1, t) for t in args.target}
    print("peak GFLOP/s: " + ", ".join(f"{t} {p:.0f}" for t, p in peaks.items()), flush=True)
    x_rng = np.random.default_rng(1)
    for net, cin, cout, hw, stride in SHAPES:
        label = f"{net} {cin}->{cout} @{hw}" + (f" s{stride}" if stride > 1 else "")
        if args.only not in label:
            continue
        model = onnx_model(cin, cout, hw, stride)
        out = (hw - 1) // stride + 1
        flops = 2.0 * cin * cout * out * out
        x = x_rng.standard_normal((1, cin, hw, hw)).astype(np.float32)
        session = peers.ort_session(model.SerializeToString(), 1)
        assert session is not None
        want = np.asarray(session.run(None, {"x": x})[0])
        fns: list[Callable[[], object]] = [functools.partial(session.run, None, {"x": x})]
        names = ["ort"]
        for target in args.target:
            for variant in ["", *args.variant]:
                spec = _with_options(target, variant)
                exe = lamina.compile(import_model(model).module, targets=[spec])
                got = np.asarray(exe.run("main", x))
                error = float(np.abs(got - want).max() / np.abs(want).max())
                assert error < 1e-4, (label, spec, error)
                fns.append(functools.partial(exe.run, "main", x))
                names.append(spec)
        if args.kernels:
            exes = [
                lamina.compile(import_model(model).module, targets=[name], profile=True)
                for name in names[1:]
            ]
            times = kernel_times(model, x, exes, args.rounds, args.flush)
        else:
            times = [float(np.median(t)) for t in bench._rounds(fns, args.rounds)]
        parts = []
        for name, t in zip(names[1:], times[1:], strict=True):
            base = name.split("{")[0] if "isa" not in name else "cpu{isa=avx2}"
            peak = peaks.get(base) or peaks.get(name) or next(iter(peaks.values()))
            gflops = flops / t / 1e9
            parts.append(
                f"{name}: {t * 1e3:.3f} ms {gflops:.0f} GF/s {gflops / peak:.0%} x{t / times[0]:.2f}"
            )
        print(f"{label:32s} ort {times[0] * 1e3:.3f} ms | " + " | ".join(parts), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
