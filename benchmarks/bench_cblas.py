"""The cblas target vs the cpu target vs NumPy's BLAS, on matmul and the MLP, in one run.

    python benchmarks/bench_cblas.py            # matmul 1024 + the MNIST-sized MLP
    python benchmarks/bench_cblas.py --quick    # small sizes (smoke run)

Shared machines are noisy, so the three are measured in interleaved rounds
(cpu, cblas, numpy, cpu, cblas, numpy, ...) and each column is the median
over the rounds; the ratios compare columns of the same run (>1: slower than
NumPy). Needs the `blas` extra (`pip install -e '.[blas]'`). The programs are
those of benchmarks/bench.py.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

import lamina

sys.path.insert(0, str(Path(__file__).parent))
from bench import matmul_program, mlp_program, numpy_mlp  # noqa: E402


def _timed(fn: Callable[[], object], inner: int) -> float:
    start = time.perf_counter()
    for _ in range(inner):
        fn()
    return (time.perf_counter() - start) / inner


def _cases(quick: bool, rng: np.random.Generator):
    def rand(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    n = 128 if quick else 1024
    yield f"matmul N={n}", matmul_program(n), [rand(n, n), rand(n, n)], np.matmul
    batch, sizes = (8, [64, 32, 32, 10]) if quick else (64, [784, 512, 512, 10])
    params = [rand(batch, sizes[0])]
    for k, m in zip(sizes, sizes[1:], strict=False):
        params += [rand(k, m) * 0.05, rand(m)]
    yield f"mlp {batch}x{'-'.join(map(str, sizes))}", mlp_program(batch, sizes), params, numpy_mlp


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds")
    args = parser.parse_args(argv)
    rounds = args.rounds or (3 if args.quick else 15)
    print(f"numpy {np.__version__}; median of {rounds} interleaved rounds")
    header = (
        f"{'case':24} {'cpu ms':>9} {'cblas ms':>9} {'numpy ms':>9} "
        f"{'cpu/np':>7} {'cblas/np':>8} {'max |cblas-cpu|':>16}"
    )
    print(header)
    print("-" * len(header))
    for name, program, inputs, reference in _cases(args.quick, np.random.default_rng(0)):
        cpu = lamina.compile(program, targets=["cpu"])
        blas = lamina.compile(program, targets=["cblas"])
        diff = float(np.max(np.abs(cpu.run("main", *inputs) - blas.run("main", *inputs))))
        runs = {
            "cpu": lambda e=cpu, x=inputs: e.run("main", *x),
            "cblas": lambda e=blas, x=inputs: e.run("main", *x),
            "numpy": lambda r=reference, x=inputs: r(*x),
        }
        for fn in runs.values():
            fn()  # warm up
        inner = max(1, int(0.05 / max(_timed(runs["numpy"], 1), 1e-6)))
        times: dict[str, list[float]] = {key: [] for key in runs}
        for _ in range(rounds):
            for key, fn in runs.items():
                times[key].append(_timed(fn, inner))
        med = {key: statistics.median(values) for key, values in times.items()}
        print(
            f"{name:24} {med['cpu'] * 1e3:9.3f} {med['cblas'] * 1e3:9.3f} "
            f"{med['numpy'] * 1e3:9.3f} {med['cpu'] / med['numpy']:7.2f} "
            f"{med['cblas'] / med['numpy']:8.2f} {diff:16.2e}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
