"""Where a network's time goes, per op kind: Lamina's per-kernel profile against
onnxruntime's own profile, one thread (docs/performance.md, "Time by op kind").

    python benchmarks/op_kinds.py ~/.cache/lamina-bench/mobilenet_v2.onnx
    python benchmarks/op_kinds.py --isa avx2 --rounds 9 MODEL.onnx [MODEL.onnx ...]
    python benchmarks/op_kinds.py --per-conv MODEL.onnx   # one row per convolution

The ONNX exports are the ones `benchmarks/bench_models.py` writes. Each
convolution is classified from the ONNX graph (`stem`: the first; `dw3x3`,
`dw5x5`: depthwise; `pw@>=28`, `pw@<=14`: 1x1 on images of at least 28x28
or at most 14x14 pixels; `pw@1x1`: 1x1 on one pixel, a squeeze-and-excitation
block's; `convKxK`: the rest). Both sides are matched to the convolutions by
ONNX node name: a Lamina call site names the nodes it runs (its profile's
`ops`, the importer's node locations), an onnxruntime node its own name, or
(its blocked-layout `..._nchwc` nodes) the tensor it writes, whose producer
is traced back to its convolution. onnxruntime's elementwise nodes it did not
fuse (its `QuickGelu` for SiLU, `HardSigmoid`, `Mul`, `Add`, ...) count for
the kind of the convolution before them, so both columns hold convolution +
epilogue. With `--per-conv`, one row per convolution, in graph order.
Kernel times are thread CPU time (the profile's clock switched to
`CLOCK_THREAD_CPUTIME_ID`), medians of `--rounds` rounds of 10 runs. Both
sides' shares are scaled to their own thread CPU time per run, measured
without profiling in rounds that alternate Lamina's and onnxruntime's runs
(onnxruntime's profiling build is slower, and the profile rounds of one side
may fall in a slow stretch of the machine that the other's miss); the first
line also prints Lamina's unscaled kernel sum. A batch norm that no
convolution absorbs (DenseNet's, after each concatenation) is its own kind,
`norm`. Other jobs on the machine still move both.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import sys
import tempfile
import time

import numpy as np

_FUSED_BY_LAMINA = {
    "Add",
    "Clip",
    "HardSigmoid",
    "HardSwish",
    "Mul",
    "QuickGelu",
    "Relu",
    "Sigmoid",
    "Sum",
}
NORM = "norm"
"""The kind of a batch norm no convolution absorbs (DenseNet's after each concatenation):
onnxruntime runs it as a 1x1 depthwise convolution (`<tensor>_bn_nchwc`), Lamina fuses
it into the concatenation's kernel (the site then counts as `norm`)."""
_OTHER_KINDS = {
    "layout_transform": "layout",
    "global_avg_pool": "pool",
    "max_pool": "pool",
    "avg_pool": "pool",
    "matmul": "fc",
    "concat": "concat",
}
_ORT_KINDS = {
    "ReorderInput": "layout",
    "ReorderOutput": "layout",
    "GlobalAveragePool": "pool",
    "MaxPool": "pool",
    "AveragePool": "pool",
    "Gemm": "fc",
    "MatMul": "fc",
    "Concat": "concat",
}


def conv_kinds(path: str, per_conv: bool = False) -> tuple[dict[str, str], dict[str, str]]:
    """The kind of each Conv node of the ONNX model at `path` by node name, in graph
    order (with `per_conv`, each convolution its own: `#index kind cin->cout@HxW`, to
    find which layers of a kind lose); and the convolution each tensor comes from (a
    Conv's output, or an elementwise node's traced back through its first input)."""
    import onnx
    from onnx import shape_inference

    model = shape_inference.infer_shapes(onnx.load(path))
    graph = model.graph
    values = list(graph.value_info) + list(graph.output) + list(graph.input)
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in values}
    weights = {i.name: list(i.dims) for i in graph.initializer}
    kinds: dict[str, str] = {}
    from_conv: dict[str, str] = {}
    conv_outputs = {n.output[0] for n in graph.node if n.op_type == "Conv"}
    for node in graph.node:
        if node.op_type == "BatchNormalization" and node.input[0] not in conv_outputs:
            kinds[node.name] = NORM  # a batch norm no convolution absorbs (DenseNet's)
            from_conv[node.output[0]] = node.name
            continue
        if node.op_type != "Conv":
            if node.input and node.input[0] in from_conv:
                for out in node.output:
                    from_conv[out] = from_conv[node.input[0]]
            continue
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        _, _, kh, kw = weights[node.input[1]]
        out = shapes[node.output[0]]
        groups = attrs.get("group", 1)
        if not any(k != NORM for k in kinds.values()):
            kind = "stem"
        elif groups > 1 and groups == out[1]:
            kind = f"dw{kh}x{kw}"
        elif (kh, kw) == (1, 1):
            kind = "pw@1x1" if out[2] == 1 else ("pw@>=28" if out[2] >= 28 else "pw@<=14")
        else:
            kind = f"conv{kh}x{kw}"
        if per_conv:
            cin = shapes[node.input[0]][1]
            number = sum(k != NORM for k in kinds.values())
            kind = f"#{number:02d} {kind} {cin}->{out[1]}@{out[2]}x{out[3]}"
        kinds[node.name] = kind
        from_conv[node.output[0]] = node.name
    return kinds, from_conv


def lamina_kinds(
    exe, args: list[np.ndarray], convs: dict[str, str], rounds: int
) -> dict[str, float]:
    """Microseconds per run of each kind, from the kernels' call sites: a site that runs
    a convolution node counts for its kind."""
    from lamina.runtime.profile import (
        profile_addresses,
        read_counters,
        reset_counters,
        slot_kernels,
    )

    addresses = profile_addresses(exe.compiled.engine)
    assert addresses is not None
    slots = slot_kernels(addresses)
    for _ in range(3):
        exe.run("main", *args)
    samples: list[list[float]] = [[] for _ in slots]
    for _ in range(rounds):
        reset_counters(addresses, len(slots))
        for _ in range(10):
            exe.run("main", *args)
        for i, (nanos, _calls) in enumerate(read_counters(addresses, len(slots))):
            samples[i].append(nanos / 10 / 1e3)
    kinds: dict[str, float] = collections.defaultdict(float)
    for slot, times in zip(slots, samples, strict=True):
        found = [convs[op] for op in slot.ops if op in convs]
        conv = next((k for k in found if k != NORM), found[0] if found else None)
        other = next((k for s, k in _OTHER_KINDS.items() if s in slot.symbol), "other")
        kinds[conv or other] += statistics.median(times)
    return kinds


def ort_kinds(
    path: str, feed: dict, convs: dict[str, str], from_conv: dict[str, str], cpu_us: float
) -> dict[str, float]:
    """onnxruntime's profile per kind, scaled to `cpu_us` per run."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    options.enable_profiling = True
    options.profile_file_prefix = os.path.join(tempfile.gettempdir(), "lamina_op_kinds")
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    for _ in range(20):
        session.run(None, feed)
    profile_path = session.end_profiling()
    with open(profile_path) as f:
        events = json.load(f)
    os.unlink(profile_path)
    runs = sum(e.get("cat") == "Session" and e["name"] == "model_run" for e in events)
    nodes = [e for e in events if e.get("cat") == "Node" and e["name"].endswith("_kernel_time")]
    per_run = len(nodes) // runs
    labels, conv = [], "other"
    for event in nodes[:per_run]:
        op = event["args"]["op_name"]
        if op in ("Conv", "FusedConv"):
            name = event["name"].removesuffix("_kernel_time")
            tensor = name.removesuffix("_nchwc")
            source = name if name in convs else from_conv.get(tensor)
            source = source or from_conv.get(tensor.removesuffix("_bn"))
            if source is None:
                sys.exit(f"{path}: onnxruntime's node {name} is no convolution of the model")
            conv = convs[source]
            labels.append(conv)
        elif op in _FUSED_BY_LAMINA:
            labels.append(conv)
        else:
            labels.append(_ORT_KINDS.get(op, op))
    kinds: dict[str, float] = collections.defaultdict(float)
    for i, event in enumerate(nodes):
        kinds[labels[i % per_run]] += event["dur"]
    total = sum(kinds.values())
    return {k: v / total * cpu_us for k, v in kinds.items()}


def thread_cpu_us(run, rounds: int, calls: int = 10) -> list[float]:
    """Per-call thread CPU microseconds of `rounds` rounds of `calls` calls."""
    times = []
    for _ in range(rounds):
        start = time.thread_time()
        for _ in range(calls):
            run()
        times.append((time.thread_time() - start) / calls * 1e6)
    return times


def report(path: str, target: str, rounds: int, per_conv: bool = False) -> None:
    import onnxruntime as ort

    import lamina
    from lamina.passes import profile_kernels
    from lamina.tuning.worker import _inputs_for

    profile_kernels.CLOCK_MONOTONIC = 3  # CLOCK_THREAD_CPUTIME_ID: other jobs' time left out
    convs, from_conv = conv_kinds(path, per_conv)
    exe = lamina.compile(path, targets=[target], cache=False, profile=True)
    args = _inputs_for(exe)
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    feed = {i.name: a for i, a in zip(session.get_inputs(), args, strict=True)}
    ours, theirs = [], []
    for _ in range(rounds):
        ours += thread_cpu_us(lambda: exe.run("main", *args), 1)
        theirs += thread_cpu_us(lambda: session.run(None, feed), 1)
    lam_us, ort_us = statistics.median(ours), statistics.median(theirs)
    raw = lamina_kinds(exe, args, convs, rounds)
    kernels_us = sum(raw.values())
    lam = {k: v / kernels_us * lam_us for k, v in raw.items()}
    peer = ort_kinds(path, feed, convs, from_conv, ort_us)
    name = os.path.basename(path).removesuffix(".onnx")
    print(
        f"{name} {target}: Lamina {lam_us:.0f} us, onnxruntime {ort_us:.0f} us per run "
        f"(thread CPU, median of {rounds}), ratio {lam_us / ort_us:.3f}; Lamina's kernels "
        f"profiled {kernels_us:.0f} us per run (both sides' kinds scaled to their run)"
    )
    width = 34 if per_conv else 10
    print(f"  {'kind':{width}s} {'Lamina us':>10s} {'ORT us':>10s}  ratio")

    def order(kind: str) -> tuple[float, str]:
        return (0.0, kind) if per_conv else (-max(lam.get(kind, 0), peer.get(kind, 0)), kind)

    for kind in sorted(set(lam) | set(peer), key=order):
        ours_k, theirs_k = lam.get(kind, 0.0), peer.get(kind, 0.0)
        ratio = f"{ours_k / theirs_k:.2f}" if theirs_k else "-"
        print(f"  {kind:{width}s} {ours_k:10.0f} {theirs_k:10.0f}  {ratio}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("models", nargs="+", help="ONNX files (benchmarks/bench_models.py)")
    parser.add_argument("--isa", help="build for cpu{isa=ISA} (e.g. avx2)")
    parser.add_argument("--target", default="cpu", help="compile target (default: cpu)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument(
        "--per-conv", action="store_true", help="one row per convolution instead of per kind"
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("LAMINA_NUM_THREADS", "1")
    target = f"cpu{{isa={args.isa}}}" if args.isa else args.target
    for path in args.models:
        report(path, target, args.rounds, args.per_conv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
