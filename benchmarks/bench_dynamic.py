"""A dynamic batch against static builds: per-sample time at N = 1 and N = 8.

    python benchmarks/bench_dynamic.py [--models resnet18,mobilenet_v2,transformer]
                                       [--sizes 1,8] [--rounds 7] [--csv out.csv]

Each model is compiled once with a dynamic batch (an ONNX `dim_param` leading
dimension, N in [1, 64]) and once per N as a static model (`input_shapes`
pinning N); both run the same inputs in interleaved rounds and the table shows
the median time per sample of each and their ratio (dynamic / static; the
goal is within 10 %, docs/dynamic-shapes.md). Outputs are checked equal
(bit-identical at N = 1 and N = 8: the dynamic build runs the static bodies).

Models: torchvision's ResNet-18 and MobileNet-V2 (random weights, 224×224,
exported by PyTorch's TorchScript exporter with a dynamic batch; needs the
`torch` extra) and the transformer encoder of the tests (examples/onnx_models.py,
2 layers, d_model 256, sequence 128, its batch made a `dim_param`).
"""

from __future__ import annotations

import argparse
import csv
import functools
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx

import lamina

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))
import onnx_models  # noqa: E402


def _with_dynamic_batch(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model with the leading dimension of every input and output a `dim_param`."""
    for info in (*model.graph.input, *model.graph.output):
        dim = info.type.tensor_type.shape.dim[0]
        dim.Clear()
        dim.dim_param = "batch"
    return model


def torchvision_model(name: str, directory: Path) -> onnx.ModelProto:
    """torchvision's `name` exported to ONNX with a dynamic batch."""
    import contextlib
    import io
    import warnings

    import torch
    import torchvision

    path = directory / f"{name}_dynamic.onnx"
    model = getattr(torchvision.models, name)(weights=None).eval()
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model, (torch.randn(1, 3, 224, 224),), str(path), opset_version=17, dynamo=False,
            input_names=["input"], output_names=["output"],
            dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
        )  # fmt: skip
    return onnx.load(str(path))


def load(name: str, directory: Path) -> onnx.ModelProto:
    if name == "transformer":
        return _with_dynamic_batch(onnx_models.transformer_encoder())
    return torchvision_model(name, directory)


def _median_times(fns, rounds: int) -> list[float]:
    """Median seconds of each function over interleaved rounds (after a warm-up call)."""
    for fn in fns:
        fn()
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(rounds):
        for k, fn in enumerate(fns):
            start = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]


def bench_model(name: str, model: onnx.ModelProto, sizes: list[int], rounds: int) -> list[dict]:
    input_info = model.graph.input[0]
    sample = tuple(d.dim_value for d in input_info.type.tensor_type.shape.dim[1:])
    start = time.perf_counter()
    dynamic = lamina.compile(model, cache=False)
    dynamic_compile = time.perf_counter() - start
    rows = []
    for n in sizes:
        start = time.perf_counter()
        static = lamina.compile(model, input_shapes={input_info.name: (n, *sample)}, cache=False)
        static_compile = time.perf_counter() - start
        x = np.random.default_rng(n).standard_normal((n, *sample)).astype(np.float32)
        same = np.array_equal(dynamic.run("main", x), static.run("main", x))
        t_dyn, t_static = _median_times(
            [functools.partial(dynamic.run, "main", x), functools.partial(static.run, "main", x)],
            rounds,
        )
        rows.append(
            {
                "model": name,
                "N": n,
                "dynamic_ms_per_sample": t_dyn * 1e3 / n,
                "static_ms_per_sample": t_static * 1e3 / n,
                "ratio": t_dyn / t_static,
                "identical": same,
                "dynamic_compile_s": dynamic_compile,
                "static_compile_s": static_compile,
            }
        )
        print(_format(rows[-1]), flush=True)
    return rows


def _format(row: dict) -> str:
    return (
        f"{row['model']:<13} N={row['N']:<3} dynamic {row['dynamic_ms_per_sample']:8.2f} ms/sample"
        f"  static {row['static_ms_per_sample']:8.2f} ms/sample  ratio {row['ratio']:.3f}"
        f"  identical {row['identical']}  compile {row['dynamic_compile_s']:.1f} s dynamic"
        f" / {row['static_compile_s']:.1f} s static"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--models", default="resnet18,mobilenet_v2,transformer")
    parser.add_argument("--sizes", default="1,8")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--csv", help="write the rows to this CSV file")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            rows += bench_model(name, load(name, Path(tmp)), sizes, args.rounds)
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
