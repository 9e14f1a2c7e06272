"""Imported networks: import and compile time, and run time against onnxruntime.

    python benchmarks/onnx_bench.py [--models mlp,transformer,resnet18] [--rounds 5]
                                    [--source onnx.helper|torchscript|dynamo] [--threads 1]
                                    [--isa avx2|avx512]

For each network of examples/onnx_models.py (random weights; built with
`onnx.helper`, or exported from the real PyTorch module by one of PyTorch's
two exporters, which needs the `torch` extra): import time,
`lamina.compile` time (cold: the disk cache is off), and the median time per
run of Lamina and onnxruntime (both on `--threads` threads, default all
cores; onnxruntime configured as in bench.py), measured in interleaved rounds so that
machine load affects both alike; the ratio is Lamina / onnxruntime. Between rounds
it reads the FMA peak and the machine probe (bench.py's `PeakProbe`,
`episode_probe.RoundWatch`; `--no-probe` turns them off): rounds in the host's slow
episodes are left out of the medians and counted ("slow"), and "%peak" is each
peer's GFLOP/s (Conv/Gemm/MatMul flops) against the FMA peak of its own
instruction set (onnxruntime's is always the host's best: AVX-512 here). `--isa NAME`
(or `--target 'cpu{isa=NAME}'`) builds Lamina's code for that instruction set
(docs/performance.md, "Instruction set").
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx

import lamina
from lamina.backends.codegen import set_num_threads
from lamina.frontends.onnx import import_model
from lamina.runtime.host import usable_cores

sys.path.insert(0, str(Path(__file__).parent))
import bench as bench_kernels  # noqa: E402
import episode_probe  # noqa: E402
import peers  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent.parent / "examples"))
import onnx_models  # noqa: E402

SOURCES = ("onnx.helper", *onnx_models.EXPORTERS)


def load(name: str, source: str) -> onnx.ModelProto:
    """The network built with onnx.helper, or exported from PyTorch by `source`."""
    if source == "onnx.helper":
        return onnx_models.BUILDERS[name]()
    with tempfile.TemporaryDirectory() as tmp:
        path = f"{tmp}/{name}.onnx"
        if onnx_models.export_torch(name, path, source) is None:
            raise SystemExit(f"error: --source {source} needs PyTorch (pip install -e '.[torch]')")
        return onnx.load(path)


def bench(
    name: str,
    rounds: int,
    source: str = "onnx.helper",
    threads: int = 0,
    target: str = "cpu",
    watch: episode_probe.RoundWatch | None = None,
    gauge: bench_kernels.PeakGauge | None = None,
) -> dict:
    """One network's import and compile times and its interleaved rounds against
    onnxruntime; with `watch`, medians over the rounds outside slow episodes, and with
    `gauge`, both peers' % of their own instruction set's FMA peak (read between rounds)."""
    model = load(name, source)
    info = model.graph.input[0]
    shape = [d.dim_value for d in info.type.tensor_type.shape.dim]
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    start = time.perf_counter()
    module = import_model(model).module
    t_import = time.perf_counter() - start
    start = time.perf_counter()
    exe = lamina.compile(module, targets=[target])
    t_compile = time.perf_counter() - start
    session = peers.ort_session(model.SerializeToString(), threads)
    want = session.run(None, {info.name: x})[0]
    got = exe.run("main", x)
    error = float(np.abs(got - want).max() / np.abs(want).max())
    lamina_times, ort_times = bench_kernels._rounds(
        [lambda: exe.run("main", x), lambda: session.run(None, {info.name: x})],
        rounds,
        watch=watch,
        threads=threads,
    )
    verdict = watch.verdict() if watch is not None else None
    kept = verdict.kept if verdict is not None else list(range(rounds))
    t_lamina = float(np.median([lamina_times[i] for i in kept]))
    t_ort = float(np.median([ort_times[i] for i in kept]))
    out = {"import": t_import, "compile": t_compile, "lamina": t_lamina, "ort": t_ort,
           "ratio": t_lamina / t_ort, "error": error}  # fmt: skip
    if verdict is not None:
        out["slow"] = f"{len(verdict.slow)}/{rounds}" + (
            "!" if verdict.slow and len(kept) == rounds else ""
        )
    if gauge is not None:
        peak = (
            verdict.gauge if verdict is not None and verdict.gauge == verdict.gauge else gauge.start
        )
        cores = threads or usable_cores()
        gflop = peers.onnx_flops(model) / 1e9
        out["pct_peak"] = 100 * gflop / t_lamina / (peak * cores)
        out["ort_pct_peak"] = 100 * gflop / t_ort / (peak * gauge.scale["onnxruntime"] * cores)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="mlp,transformer,resnet18")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--source", choices=SOURCES, default="onnx.helper")
    parser.add_argument("--threads", type=int, default=0, help="threads of both (0: all cores)")
    parser.add_argument(
        "--target", default="cpu", help="compile target, e.g. 'cpu{isa=avx2}' (default: cpu)"
    )
    parser.add_argument(
        "--isa", help="instruction set: --target 'cpu{isa=ISA}' (avx2, avx512, ...)"
    )
    episode_probe.add_probe_options(parser, slack=False)
    args = parser.parse_args(argv)
    target = f"cpu{{isa={args.isa}}}" if args.isa else args.target
    os.environ["LAMINA_CACHE"] = "0"  # compile times are cold ones
    if args.threads:
        set_num_threads(args.threads)
    watch = gauge = None
    if args.probe:
        gauge = bench_kernels.PeakGauge(target, bench_kernels.peer_targets())
        watch = episode_probe.RoundWatch(
            episode_probe.EpisodeProbe(),
            gauge.probe.gflops,
            memory=episode_probe.MemoryProbe().gbps,
        )
        print(f"{gauge.describe()}; % peak: of each one's own instruction set's")
    print(f"{'model':<12} {'import s':>9} {'compile s':>10} {'lamina ms':>10} {'ort ms':>8} "
          f"{'ratio':>7} {'rel err':>9}" + ("  %peak ort%pk  slow" if args.probe else ""))  # fmt: skip
    for name in args.models.split(","):
        r = bench(name, args.rounds, args.source, args.threads, target, watch, gauge)
        extra = (
            f"  {r['pct_peak']:5.0f} {r['ort_pct_peak']:5.0f} {r['slow']:>5}" if args.probe else ""
        )
        print(f"{name:<12} {r['import']:>9.2f} {r['compile']:>10.2f} {r['lamina'] * 1e3:>10.2f} "
              f"{r['ort'] * 1e3:>8.2f} {r['ratio']:>7.2f} {r['error']:>9.1e}{extra}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
