"""Lamina vs NumPy on matmul, an MLP and conv2d, measured in the same run.

    python benchmarks/bench.py            # all cases
    python benchmarks/bench.py --quick    # small sizes, few repeats (smoke run)

For each case prints Lamina's time, NumPy's time, their ratio (>1 means
Lamina is slower), Lamina's GFLOP/s and the compile time. NumPy's matmul uses
its BLAS; NumPy's conv2d is an im2col + matmul, the usual NumPy formulation.
Numbers are printed, never asserted (timings on shared 2-core machines vary).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import lamina


def _t(shape: tuple[int, ...]) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xf32>"


def _func(params: list[tuple[int, ...]], result: tuple[int, ...], body: list[str], ret: str) -> str:
    """A generic-form `graph.func @main` (independent of the pretty syntax)."""
    args = ", ".join(f"%a{i}: {_t(s)}" for i, s in enumerate(params))
    ftype = f"({', '.join(_t(s) for s in params)}) -> {_t(result)}"
    lines = "\n    ".join(body)
    return f"""builtin.module {{
  "graph.func"() <{{sym_name = "main", function_type = {ftype}}}> ({{
  ^bb0({args}):
    {lines}
    "graph.return"({ret}) : ({_t(result)}) -> ()
  }}) : () -> ()
}}
"""


def matmul_program(n: int) -> str:
    body = [f'%r = "graph.matmul"(%a0, %a1) : ({_t((n, n))}, {_t((n, n))}) -> {_t((n, n))}']
    return _func([(n, n), (n, n)], (n, n), body, "%r")


def mlp_program(batch: int, sizes: list[int]) -> str:
    params: list[tuple[int, ...]] = [(batch, sizes[0])]
    body: list[str] = []
    x = "%a0"
    for layer, (k, m) in enumerate(zip(sizes, sizes[1:], strict=False)):
        w, b = f"%a{len(params)}", f"%a{len(params) + 1}"
        params += [(k, m), (m,)]
        mm, add, relu = f"%mm{layer}", f"%add{layer}", f"%relu{layer}"
        body.append(
            f'{mm} = "graph.matmul"({x}, {w}) : ({_t((batch, k))}, {_t((k, m))}) -> {_t((batch, m))}'
        )
        body.append(
            f'{add} = "graph.add"({mm}, {b}) : ({_t((batch, m))}, {_t((m,))}) -> {_t((batch, m))}'
        )
        last = layer == len(sizes) - 2
        if not last:
            body.append(f'{relu} = "graph.relu"({add}) : ({_t((batch, m))}) -> {_t((batch, m))}')
        x = add if last else relu
    return _func(params, (batch, sizes[-1]), body, x)


def conv_program(n: int, c: int, hw: int, f: int) -> str:
    data, weight, out = (n, c, hw, hw), (f, c, 3, 3), (n, f, hw, hw)
    body = [
        f'%r = "graph.conv2d"(%a0, %a1) {{padding = array<i64: 1, 1, 1, 1>}} '
        f": ({_t(data)}, {_t(weight)}) -> {_t(out)}"
    ]
    return _func([data, weight], out, body, "%r")


def numpy_mlp(x, *params):
    for i in range(0, len(params), 2):
        x = x @ params[i] + params[i + 1]
        if i + 2 < len(params):
            x = np.maximum(x, 0)
    return x


def numpy_conv3x3(x, w):
    n, c, h, wd = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    cols = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))  # n c h w 3 3
    cols = cols.transpose(0, 2, 3, 1, 4, 5).reshape(n * h * wd, c * 9)
    out = cols @ w.reshape(w.shape[0], -1).T
    return out.reshape(n, h, wd, -1).transpose(0, 3, 1, 2)


@dataclass
class Case:
    name: str
    program: str
    inputs: list[np.ndarray]
    reference: Callable[..., np.ndarray]
    flops: float


def _best_of(fn: Callable[[], object], repeat: int) -> float:
    fn()  # warm up
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def cases(quick: bool) -> list[Case]:
    rng = np.random.default_rng(0)

    def rand(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    out = []
    for n in (64, 128) if quick else (256, 512, 1024):
        out.append(
            Case(
                f"matmul N={n}", matmul_program(n), [rand(n, n), rand(n, n)], np.matmul, 2.0 * n**3
            )
        )
    batch, sizes = (8, [64, 32, 32, 10]) if quick else (64, [784, 512, 512, 10])
    params = [rand(batch, sizes[0])]
    for k, m in zip(sizes, sizes[1:], strict=False):
        params += [rand(k, m) * 0.05, rand(m)]
    flops = sum(2.0 * batch * k * m for k, m in zip(sizes, sizes[1:], strict=False))
    out.append(
        Case(
            f"mlp {batch}x{'-'.join(map(str, sizes))}",
            mlp_program(batch, sizes),
            params,
            numpy_mlp,
            flops,
        )
    )
    n, c, hw, f = (1, 8, 14, 8) if quick else (1, 64, 56, 64)
    out.append(
        Case(
            f"conv2d {n}x{c}x{hw}x{hw} k3 f{f}",
            conv_program(n, c, hw, f),
            [rand(n, c, hw, hw), rand(f, c, 3, 3)],
            numpy_conv3x3,
            2.0 * n * f * hw * hw * c * 9,
        )
    )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    parser.add_argument("--repeat", type=int, default=None)
    args = parser.parse_args()
    repeat = args.repeat or (3 if args.quick else 10)
    threads = os.environ.get("LAMINA_NUM_THREADS", "all")
    print(f"numpy {np.__version__}; LAMINA_NUM_THREADS={threads}; best of {repeat}")
    header = f"{'case':28} {'lamina ms':>10} {'numpy ms':>10} {'ratio':>7} {'GFLOP/s':>8} {'compile s':>9}  max rel err"
    print(header)
    print("-" * len(header))
    for case in cases(args.quick):
        start = time.perf_counter()
        exe = lamina.compile(case.program)
        compile_s = time.perf_counter() - start
        got = exe.run("main", *case.inputs)
        want = case.reference(*case.inputs)
        err = float(np.max(np.abs(got - want)) / (np.max(np.abs(want)) or 1.0))
        t_lamina = _best_of(lambda c=case, e=exe: e.run("main", *c.inputs), repeat)
        t_numpy = _best_of(lambda c=case: c.reference(*c.inputs), repeat)
        print(
            f"{case.name:28} {t_lamina * 1e3:10.3f} {t_numpy * 1e3:10.3f} {t_lamina / t_numpy:7.2f} "
            f"{case.flops / t_lamina / 1e9:8.2f} {compile_s:9.2f}  {err:.1e}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
