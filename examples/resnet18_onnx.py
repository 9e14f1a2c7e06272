"""ResNet-18 end to end: export (or build) → import → compile → run, against onnxruntime.

    python examples/resnet18_onnx.py [--size 224] [--repeat 5]

With PyTorch and torchvision installed, the model is torchvision's
`resnet18()` (random weights) exported with `torch.onnx.export`; otherwise
the same architecture is built with `onnx.helper` (examples/onnx_models.py).
The script imports it with `lamina.frontends.onnx`, compiles it with
`lamina.compile`, checks the output against onnxruntime and prints the
import and compile times and the time per image of both.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

import lamina
from lamina.frontends.onnx import import_model

sys.path.insert(0, str(Path(__file__).parent))
import onnx_models  # noqa: E402


def load_resnet18(size: int):
    """torchvision's ResNet-18 exported by PyTorch when available, else built with onnx.helper."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "resnet18.onnx"
        if size == 224 and onnx_models.export_torch("resnet18", str(path)):
            return onnx.load(str(path)), "torchvision (torch.onnx.export)"
    return onnx_models.resnet18(size=size), "onnx.helper (torchvision's architecture)"


def median_time(fn, repeat: int) -> float:
    fn()  # warm up
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=224, help="input height and width")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs (median)")
    args = parser.parse_args(argv)

    model, source = load_resnet18(args.size)
    x = np.random.default_rng(0).standard_normal((1, 3, args.size, args.size)).astype(np.float32)
    print(f"ResNet-18 from {source}, input 1x3x{args.size}x{args.size}")

    start = time.perf_counter()
    module = import_model(model).module
    imported = time.perf_counter() - start
    start = time.perf_counter()
    exe = lamina.compile(module)
    compiled = time.perf_counter() - start
    print(f"import {imported:.2f} s, compile {compiled:.2f} s")

    options = ort.SessionOptions()
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])  # fmt: skip
    name = session.get_inputs()[0].name
    want = session.run(None, {name: x})[0]
    got = exe.run("main", x)
    error = float(np.abs(got - want).max() / np.abs(want).max())
    print(f"max |lamina - onnxruntime| / max |onnxruntime| = {error:.2e}")
    if error > 1e-4:
        print("error: Lamina and onnxruntime disagree", file=sys.stderr)
        return 1

    t_lamina = median_time(lambda: exe.run("main", x), args.repeat)
    t_ort = median_time(lambda: session.run(None, {name: x}), args.repeat)
    print(f"time per image: lamina {t_lamina * 1e3:.1f} ms, onnxruntime {t_ort * 1e3:.1f} ms "
          f"(lamina / onnxruntime = {t_lamina / t_ort:.2f})")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
