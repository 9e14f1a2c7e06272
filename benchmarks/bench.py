"""Lamina vs NumPy on matmul, an MLP and conv2d, measured in the same run.

    python benchmarks/bench.py            # all cases
    python benchmarks/bench.py --quick    # small sizes, few repeats (smoke run)
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench.py
    python benchmarks/bench.py --isa avx2 # an AVX2 build (--target 'cpu{isa=avx2}')
    python benchmarks/bench.py --isa avx2 --peers avx2  # ... against NumPy on AVX2
    python benchmarks/bench.py --cases mlp,attention  # the cases whose name contains one

(unset those two only for benchmarks: set in this environment, they slow
NumPy's OpenBLAS.) Lamina and NumPy run in interleaved rounds at each
thread count (`--threads 1,2`: Lamina through LAMINA_NUM_THREADS' runtime
setter, NumPy's OpenBLAS through threadpoolctl or its own setter); the
ratio is the median of the per-round ratios, with min and max; the CSV
also has the best (minimum) times and their ratios, steadier when other
jobs share the machine. "% peak" is
against a measured single-precision peak: a Lamina kernel of independent
register-only FMA chains (see `measured_peak_gflops`), times the threads,
compiled for the same target as the cases (`--target`, or `--isa NAME` for
`cpu{isa=NAME}`: docs/performance.md).
The peak is read again between rounds, with a machine probe
(episode_probe.RoundWatch: latency chain on one and two threads, memory
gauge, others' CPU time): rounds in the host's slow episodes are left out of
the medians and counted ("slow"), and `% peak` divides by the peak of the
same rounds (`--no-probe` turns this off). `np %pk` and `ort %pk` are the
peers' GFLOP/s against their own instruction set's peak: `--peers avx2` pins
NumPy's OpenBLAS to its AVX2 (Haswell) kernels, the honest peer of an `--isa
avx2` build on an AVX-512 machine; onnxruntime cannot be restricted
(docs/performance.md, "An honest AVX2 comparison on an AVX-512 Intel machine").
Results go to a CSV and, with matplotlib installed, a PNG plot.

For each case prints Lamina's time, NumPy's time, their ratio (>1 means
Lamina is slower), Lamina's GFLOP/s and the compile time. NumPy's matmul uses
its BLAS; NumPy's conv2d is an im2col + matmul, the usual NumPy formulation.
Numbers are printed, never asserted (timings on shared 2-core machines vary).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import lamina

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import episode_probe  # noqa: E402
import peers  # noqa: E402
from peers import _t  # noqa: E402  (one tensor-type helper for every benchmark)


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
    onnx: Callable[[], bytes] | None = None
    """The same computation as an ONNX model (for onnxruntime), if any."""


def _rounds(
    fns: list[Callable[[], object]],
    rounds: int,
    settle: float = 0.0,
    clock: Callable[[], float] = time.perf_counter,
    watch: episode_probe.RoundWatch | None = None,
    threads: int = 0,
) -> list[list[float]]:
    """Seconds per call of each function, measured in interleaved rounds (A, B, A, B, ...),
    so that a noisy neighbour slows every peer alike. `clock` is wall time by default
    (`time.thread_time` for one-thread calls on a loaded machine: bench_models.py's
    `--clock cpu`).

    `settle` seconds of sleep before each call let the previous peer's thread
    pool go idle: OpenBLAS and onnxruntime workers spin for a while after a
    call, and on a 2-core machine a spinning worker takes the core the next
    peer's second thread needs (Lamina's libgomp team waits passively).

    `watch` (episode_probe.RoundWatch) takes its readings before the first round and
    after each: `watch.verdict()` then says which rounds were in slow episodes (of a
    measurement on `threads` threads, 0: all cores). After its readings every function
    is called once more, untimed: the first call after the probes took up to twice as
    long (MLP 64x784-512-512-10: 2.20 against 1.14 ms, NumPy's 1.40 against 0.98;
    measured on the Xeon, same case, probes on and off)."""
    if watch is not None:
        watch.start(threads)
    for fn in fns:
        fn()  # warm up
    times: list[list[float]] = [[] for _ in fns]
    for round_ in range(rounds):
        for fn, out in zip(fns, times, strict=True):
            if settle:
                time.sleep(settle)
            start = clock()
            fn()
            out.append(clock() - start)
        if watch is not None:
            watch.next()
            if round_ + 1 < rounds:
                for fn in fns:
                    fn()  # warm up again: the probes evicted the caches
    return times


def set_numpy_threads(count: int) -> bool:
    """Set the thread count of the OpenBLAS bundled with NumPy (threadpoolctl if present)."""
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(count)
        return True
    except ImportError:
        pass
    import ctypes
    import glob

    libs = glob.glob(os.path.join(os.path.dirname(np.__file__), "..", "numpy.libs", "*openblas*"))
    for path in libs:
        lib = ctypes.CDLL(path)
        for symbol in ("scipy_openblas_set_num_threads64_", "openblas_set_num_threads"):
            if hasattr(lib, symbol):
                getattr(lib, symbol)(ctypes.c_int(count))
                return True
    return False


PEAK_CHAINS = {32: (12, 2), 16: (12, 1)}
"""Rows and vectors per row of the peak kernel (`peak_program`) by the target's vector
register count: independent accumulators (rows x vectors) enough to cover the FMA latency
times its pipes (4 cycles x 2 pipes: 8) with room, and few enough that they and the two
constants stay in registers. The former 8 x 4 zmm (32 accumulators + 2 constants on 32
registers) spilled two accumulators to the stack on every iteration and shuffled the
others with ~58 register moves; 12 x 2 zmm and 12 x 1 ymm compile to FMAs only
(tests/test_bench.py checks the assembly). On the Xeon, quiet, both reach the same rate
(172 GFLOP/s zmm, 8 x 4 171; ymm 82-86 with 8, 12 or 14 chains): the spills hid behind
the FMAs, and a reading of 83 GFLOP/s was a slow episode of the host, which is why
benchmarks now read the peak between their rounds (`PeakProbe`)."""


def peak_program(target: str = "cpu", iterations: int = 1 << 14) -> tuple[str, float]:
    """The peak kernel for `target` as loop-dialect text, and the flops of one call.

    `acc = acc * x + y` on `rows` independent rows of `vectors` vectors of the target
    (`PEAK_CHAINS`), `iterations` times: FMA-throughput-bound, register-only (the
    accumulators are loaded before the loop and stored after it)."""
    from lamina.driver.hooks import split_target_spec
    from lamina.target.registry import Target

    facts = Target("cpu", options=split_target_spec(target)[1]).facts
    rows, vectors = PEAK_CHAINS[32 if facts.vector_registers >= 32 else 16]
    lanes = facts.lanes(32) * vectors
    text = (
        f"""builtin.module attributes {{lamina.phase = #lamina.phase<lowering>}} {{
  loop.func @peak(%out: memref<{rows}x{lanes}xf32>) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %cn = arith.constant {iterations} : index
    %cl = arith.constant {lanes} : index
    %x = arith.constant 0.999 : f32
    %y = arith.constant 0.001 : f32
    loop.for %k = %c0 to %cn step %c1 {{
      loop.for %j = %c0 to %cl step %c1 kind(vectorized) {{
"""
        + "".join(
            f"""        %r{r} = arith.constant {r} : index
        %a{r} = loop.load %out[%r{r}, %j] : memref<{rows}x{lanes}xf32>
        %m{r} = arith.mulf %a{r}, %x : f32
        %s{r} = arith.addf %m{r}, %y : f32
        loop.store %s{r}, %out[%r{r}, %j] : memref<{rows}x{lanes}xf32>
"""
            for r in range(rows)
        )
        + """      }
    }
    loop.return
  }
}
"""
    )
    return text, 2.0 * rows * lanes * iterations


def _peak_module(target: str, iterations: int = 1 << 14):
    """The peak kernel parsed and lowered to the build phase (for `compile_module` or
    `emit_assembly`), and the flops of one call."""
    from lamina.driver.lowering import lower_to_build, parse_source

    text, flops = peak_program(target, iterations)
    module = parse_source(text, "peak")
    lower_to_build(module, [target])
    return module, flops


class PeakProbe:
    """The single-precision FMA peak of one core, measured on demand: a register-only
    kernel of independent FMA chains (`peak_program`) compiled once for `target`.

    `gflops()` is one reading (best of ten calls, about 0.4 ms); benchmarks take one
    between rounds, so the peak they report comes from the same minutes as the times
    (the host has episodes of minutes in which everything runs 1.4-2x slower: one
    reading taken at the start of a run said 83 GFLOP/s where the next minute gave
    172-176). `gflops_threads(n)` runs the kernel on `n` threads at once (their sum:
    two cores give twice one, two hyperthreads of one core about one)."""

    def __init__(self, target: str = "cpu"):
        import ctypes

        from lamina.backends.codegen import compile_module

        module, self.flops = _peak_module(target)
        self._compiled = compile_module(module, use_cache=False)
        address = self._compiled.get_function_address("peak")
        self._fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(address)
        shape = module_shape(module)
        self._buffers = [np.ones(shape, np.float32) for _ in range(8)]

    def gflops(self, calls: int = 10) -> float:
        """One reading: the best of `calls` calls (about 40 µs each; measured on the
        Xeon between NumPy calls, 30 readings each: best of 5 ranged 134-158 GFLOP/s,
        best of 10 149-172: the first AVX-512 instructions after other code run slower
        while the core powers up its 512-bit units)."""
        buf = self._buffers[0].ctypes.data
        best = float("inf")
        for _ in range(calls):
            start = time.perf_counter()
            self._fn(buf)
            best = min(best, time.perf_counter() - start)
        return self.flops / best / 1e9

    def gflops_threads(self, threads: int, calls: int = 200) -> float:
        """The summed rate of `threads` threads each making `calls` calls at once (first
        start to last end; ctypes releases the GIL during a call). 200 calls (8 ms) make a
        helper thread's start (tens of µs) negligible; 40 gave 99-307 GFLOP/s on two
        threads where 200 gave 300-311 (one thread: 153-164)."""
        import threading

        barrier = threading.Barrier(threads)
        spans: list[tuple[float, float]] = []

        def run(index: int) -> None:
            buf = self._buffers[index].ctypes.data
            barrier.wait()
            start = time.perf_counter()
            for _ in range(calls):
                self._fn(buf)
            spans.append((start, time.perf_counter()))

        helpers = [threading.Thread(target=run, args=(i,)) for i in range(1, threads)]
        for helper in helpers:
            helper.start()
        run(0)
        for helper in helpers:
            helper.join()
        wall = max(e for _, e in spans) - min(s for s, _ in spans)
        return threads * calls * self.flops / wall / 1e9


def module_shape(module) -> tuple[int, int]:
    """The accumulator buffer's shape of a peak module (its function's one argument)."""
    text = str(module)
    rows, lanes = re.search(r"memref<(\d+)x(\d+)xf32>", text).groups()  # pyright: ignore
    return int(rows), int(lanes)


class PeakGauge:
    """The FMA peaks a benchmark compares against: the target's, read between rounds
    (`probe.gflops`, a `RoundWatch` gauge), and each peer's instruction set's peak as a
    multiple of it (`scale`, measured once at the start: the ratio of two FMA rates stays
    in a slow episode, the rates do not).

    `peers` maps a peer's name to the target whose instruction set it runs: NumPy's
    OpenBLAS runs AVX2 kernels when pinned to Haswell (`--peers avx2`), onnxruntime's
    MLAS always the host's best (AVX-512 here: docs/performance.md, "Instruction set")."""

    def __init__(self, target: str, peers: dict[str, str]):
        self.target = target
        self.probe = PeakProbe(target)
        probes = {t: PeakProbe(t) for t in set(peers.values())}
        start = {t: max(p.gflops() for _ in range(7)) for t, p in probes.items()}
        self.start = max(self.probe.gflops() for _ in range(7))
        self.scale = {name: start[t] / self.start for name, t in peers.items()}
        self.peers = peers
        self._start_peers = start

    def describe(self) -> str:
        """What was measured at the start, for the benchmark's header."""
        others = ", ".join(
            f"{name} {_isa_bits(t)}-bit {self._start_peers[t]:.0f}"
            for name, t in self.peers.items()
        )
        return (
            f"measured f32 peak per core {self.start:.0f} GFLOP/s at the start "
            f"({_isa_bits(self.target)}-bit; {others}), then between rounds"
        )


def peer_targets(numpy_core: str | None = None) -> dict[str, str]:
    """The target of each peer's instruction set (`PeakGauge`): onnxruntime the host's,
    NumPy AVX2 when its OpenBLAS runs the Haswell kernels (`numpy_core`)."""
    out = {"onnxruntime": "cpu"}
    if numpy_core is not None:
        out["numpy"] = "cpu{isa=avx2}" if numpy_core == "Haswell" else "cpu"
    return out


def measured_peak_gflops(threads: int = 1, target: str = "cpu") -> float:
    """Single-precision peak of one core, measured (`PeakProbe`, best of 7 readings),
    times `threads`. One measurement at one moment: a benchmark that times for minutes
    should take readings between its rounds (`PeakProbe`, as bench.py does)."""
    probe = PeakProbe(target)
    return max(probe.gflops() for _ in range(7)) * threads


def cases(quick: bool) -> list[Case]:
    rng = np.random.default_rng(0)

    def rand(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    out = []
    for n in (64, 128) if quick else (256, 512, 1024):
        out.append(
            Case(
                f"matmul N={n}",
                matmul_program(n),
                [rand(n, n), rand(n, n)],
                np.matmul,
                2.0 * n**3,
                lambda n=n: peers.onnx_matmul(n),
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
            lambda: peers.onnx_mlp(batch, sizes),
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
            lambda: peers.onnx_conv3x3(n, c, hw, f),
        )
    )
    layers = [
        ("3x3", [(64, 3, 1, None)]),
        ("1x1", [(64, 1, 1, None)]),
        ("3x3 s2", [(64, 3, 2, None)]),
    ]
    for label, spec in layers if not quick else layers[1:2]:
        net = peers.ConvNet((1, 8, 14, 14) if quick else (1, 64, 56, 56), spec)
        out.append(
            Case(
                f"conv {label}+bias+relu",
                net.program(),
                net.inputs(rng),
                net.numpy,
                net.flops(),
                net.onnx,
            )
        )
    net = peers.resnet_style(quick)
    out.append(
        Case("resnet-style cnn", net.program(), net.inputs(rng), net.numpy, net.flops(), net.onnx)
    )
    seq, d, heads = (16, 64, 4) if quick else (128, 256, 4)
    out.append(
        Case(
            f"attention s{seq} d{d} h{heads}",
            peers.attention_program(seq, d, heads),
            peers.attention_inputs(rng, seq, d),
            peers.numpy_attention(heads),
            peers.attention_flops(seq, d),
            lambda: peers.onnx_attention(seq, d, heads),
        )
    )
    return out


PEERS_ENV = {"avx2": {"OPENBLAS_CORETYPE": "Haswell"}}
"""`--peers`: the environment the process needs (read by NumPy's OpenBLAS when NumPy is
imported, so bench.py re-executes itself with it). `avx2` pins OpenBLAS to its Haswell
(AVX2 + FMA) kernels: on an AVX-512 machine the honest peer of an AVX2 build.
onnxruntime has no such switch (MLAS picks its kernels from CPUID and XCR0 when the
library loads: docs/performance.md, "Instruction set"), so it stays on AVX-512 and the
table gives each peer's fraction of its own instruction set's measured peak."""


def numpy_blas_core() -> str:
    """The kernel set NumPy's OpenBLAS chose (`Haswell`, `SkylakeX`, ...; '?' unknown)."""
    import ctypes
    import glob

    pattern = os.path.join(os.path.dirname(np.__file__), "..", "numpy.libs", "*openblas*")
    for path in glob.glob(pattern):
        lib = ctypes.CDLL(path)
        for symbol in ("scipy_openblas_get_corename64_", "openblas_get_corename"):
            if hasattr(lib, symbol):
                fn = getattr(lib, symbol)
                fn.restype = ctypes.c_char_p
                return fn().decode()
    return "?"


def ensure_peer_environment(peers_mode: str) -> None:
    """Re-execute this process with `PEERS_ENV[peers_mode]` unless it is set already
    (it must be there before NumPy is imported)."""
    wanted = PEERS_ENV.get(peers_mode, {})
    if all(os.environ.get(k) == v for k, v in wanted.items()):
        return
    env = {**os.environ, **wanted}
    os.execve(sys.executable, [sys.executable, *sys.argv], env)


def _isa_bits(target: str) -> int:
    """The vector width (bits) the FMA peak of `target` is measured at."""
    from lamina.driver.hooks import split_target_spec
    from lamina.target.registry import Target

    return Target("cpu", options=split_target_spec(target)[1]).facts.lanes(32) * 32


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds")
    parser.add_argument("--threads", default="1,2", help="thread counts, e.g. 1,2")
    parser.add_argument("--csv", default="bench.csv", help="CSV output ('' for none)")
    parser.add_argument("--plot", default="bench.png", help="PNG plot ('' for none)")
    parser.add_argument(
        "--settle", type=float, default=0.15, help="pause (s) before each call at >1 thread"
    )
    parser.add_argument(
        "--target", default="cpu", help="compile target, e.g. 'cpu{isa=avx2}' (default: cpu)"
    )
    parser.add_argument(
        "--isa", help="instruction set: --target 'cpu{isa=ISA}' (avx2, avx512, ...)"
    )
    parser.add_argument(
        "--cases",
        default="",
        help="comma-separated words: only the cases whose name contains one (default: all)",
    )
    parser.add_argument(
        "--peers",
        choices=("native", "avx2"),
        default="native",
        help="avx2: NumPy's OpenBLAS on its AVX2 (Haswell) kernels, the peer of an --isa avx2 "
        "build (re-executes with OPENBLAS_CORETYPE=Haswell; onnxruntime cannot be "
        "restricted: compare the %% peak columns)",
    )
    episode_probe.add_probe_options(parser)
    args = parser.parse_args()
    ensure_peer_environment(args.peers)
    target = f"cpu{{isa={args.isa}}}" if args.isa else args.target
    wanted = [w for w in args.cases.split(",") if w]
    rounds = args.rounds or (3 if args.quick else 9)
    thread_counts = [int(t) for t in args.threads.split(",")]
    if args.quick:
        thread_counts = thread_counts[:1]
    core = numpy_blas_core()
    gauge = PeakGauge(target, peer_targets(core))
    peak = gauge.start
    print(
        f"target {target}; numpy {np.__version__} (OpenBLAS {core} kernels); median of "
        f"{rounds} interleaved rounds [min-max]; {gauge.describe()}"
    )
    watch = episode_probe.RoundWatch(
        episode_probe.EpisodeProbe() if args.probe else None,
        gauge=gauge.probe.gflops if args.probe else None,
        slack=args.probe_slack,
        memory=episode_probe.MemoryProbe().gbps if args.probe else None,
    )
    header = (
        f"{'case':28} {'thr':>3} {'lamina ms':>10} {'numpy ms':>10} {'vs numpy [min-max]':>18} "
        f"{'ort ms':>8} {'vs ort [min-max]':>17} {'GFLOP/s':>8} {'% peak':>6} {'np %pk':>6} "
        f"{'ort %pk':>7} {'peak':>5} {'slow':>5} {'compile s':>9}  err"
    )
    print(header)
    print("-" * len(header))
    rows: list[dict] = []
    measured: list[tuple] = []  # what each row was computed from (re-judged at the end)
    compiled: dict[str, tuple[lamina.Executable, float]] = {}
    for threads in thread_counts:
        set_num_threads(threads)
        numpy_set = set_numpy_threads(threads)
        for case in cases(args.quick):
            if wanted and not any(w in case.name for w in wanted):
                continue
            if case.name not in compiled:
                start = time.perf_counter()
                exe = lamina.compile(case.program, targets=[target])
                compiled[case.name] = (exe, time.perf_counter() - start)
            exe, compile_s = compiled[case.name]
            got = exe.run("main", *case.inputs)
            want = case.reference(*case.inputs)
            err = float(np.max(np.abs(got - want)) / (np.max(np.abs(want)) or 1.0))
            fns = [
                lambda c=case, e=exe: e.run("main", *c.inputs),
                lambda c=case: c.reference(*c.inputs),
            ]
            session = peers.ort_session(case.onnx(), threads) if case.onnx else None
            if session is not None:
                feed = {i.name: a for i, a in zip(session.get_inputs(), case.inputs, strict=True)}
                ort_err = float(np.max(np.abs(session.run(None, feed)[0] - want)))
                assert ort_err <= 1e-2 * (np.max(np.abs(want)) or 1.0), f"{case.name}: ORT differs"
                fns.append(lambda s=session, f=feed: s.run(None, f))
            times = _rounds(
                fns,
                rounds,
                args.settle if threads > 1 else 0.0,
                watch=watch if args.probe else None,
                threads=threads,
            )
            verdict = watch.verdict() if args.probe else None
            info = {
                "case": case.name,
                "threads": threads,
                "compile_s": compile_s,
                "numpy_threads_set": numpy_set,
                "max_rel_err": err,
                "numpy_core": core,
            }
            scales = (gauge.scale["numpy"], gauge.scale["onnxruntime"])
            row = _row(case, info, times, verdict, peak, scales)
            measured.append((case, info, times, len(watch.series) - 1 if args.probe else None))
            rows.append(row)
            _print_row(row)
    if args.probe and rows:
        changed = []
        for i, (case, info, times, index) in enumerate(measured):
            verdict = watch.verdict(index, final=True)
            row = _row(case, info, times, verdict, peak, scales)
            if row["kept_rounds"] != rows[i]["kept_rounds"]:
                changed.append(row)
            rows[i] = row
        ones = [r.one for r in watch.all_readings]
        print(
            f"probe: peak {min(watch.all_gauges):.0f}-{max(watch.all_gauges):.0f} GFLOP/s "
            f"over the run, one-thread probe x{max(ones) / episode_probe.typical(watch.all_readings):.2f} "
            f"at worst; {sum(r['slow_rounds'] for r in rows)} of {sum(r['rounds'] for r in rows)} "
            "rounds in slow episodes"
        )
        if changed:
            print("judged against the whole run's readings, these rows change (the CSV has them):")
            for row in changed:
                _print_row(row)
    if args.csv:
        _write_csv(args.csv, rows)
    if args.plot:
        _plot(args.plot, rows)
    return 0


def _row(case: Case, info: dict, times: list[list[float]], verdict, peak: float, scales) -> dict:
    """A table row from one case's interleaved times: medians and ratios over the rounds
    `verdict` keeps (all without one), the FMA peak of those rounds (`verdict.gauge`, else
    the run's start `peak`) and each peer's fraction of its own ISA's peak (`scales`:
    NumPy's and onnxruntime's peak against the target's)."""
    rounds = len(times[0])
    kept = verdict.kept if verdict is not None else list(range(rounds))
    t_lam, t_np, *t_ort = ([t[i] for i in kept] for t in times)
    threads = info["threads"]
    if verdict is not None and verdict.gauge == verdict.gauge:  # not nan
        peak = verdict.gauge
    ratios = [a / b for a, b in zip(t_lam, t_np, strict=True)]
    ort_ratios = [a / b for a, b in zip(t_lam, t_ort[0], strict=True)] if t_ort else [0.0]
    med_l, med_n = statistics.median(t_lam), statistics.median(t_np)
    med_o = statistics.median(t_ort[0]) if t_ort else float("nan")
    gflops = case.flops / med_l / 1e9
    nan = float("nan")
    return {
        "case": info["case"],
        "threads": threads,
        "lamina_ms": med_l * 1e3,
        "numpy_ms": med_n * 1e3,
        "ratio": statistics.median(ratios),
        "ratio_min": min(ratios),
        "ratio_max": max(ratios),
        "lamina_best_ms": min(t_lam) * 1e3,
        "numpy_best_ms": min(t_np) * 1e3,
        "ort_best_ms": min(t_ort[0]) * 1e3 if t_ort else nan,
        "best_gflops": case.flops / min(t_lam) / 1e9,
        "best_ratio": min(t_lam) / min(t_np),
        "ort_best_ratio": min(t_lam) / min(t_ort[0]) if t_ort else nan,
        "ort_ms": med_o * 1e3,
        "ort_ratio": statistics.median(ort_ratios) if t_ort else nan,
        "ort_ratio_min": min(ort_ratios) if t_ort else nan,
        "ort_ratio_max": max(ort_ratios) if t_ort else nan,
        "gflops": gflops,
        "pct_peak": 100 * gflops / (peak * threads),
        "numpy_pct_peak": 100 * case.flops / med_n / 1e9 / (peak * scales[0] * threads),
        "ort_pct_peak": 100 * case.flops / med_o / 1e9 / (peak * scales[1] * threads),
        "peak_gflops": peak,
        "rounds": rounds,
        "kept_rounds": len(kept),
        "slow_rounds": len(verdict.slow) if verdict is not None else 0,
        "probe": verdict.text if verdict is not None else "",
        "compile_s": info["compile_s"],
        "numpy_threads_set": info["numpy_threads_set"],
        "numpy_core": info["numpy_core"],
        "max_rel_err": info["max_rel_err"],
    }


def _print_row(row: dict) -> None:
    slow = f"{row['slow_rounds']}/{row['rounds']}"
    if row["slow_rounds"] and row["kept_rounds"] == row["rounds"]:
        slow += "!"  # too many to leave out: medians over all rounds
    print(
        f"{row['case']:28} {row['threads']:3d} {row['lamina_ms']:10.3f} {row['numpy_ms']:10.3f} "
        f"{row['ratio']:6.2f} [{row['ratio_min']:.2f}-{row['ratio_max']:.2f}] "
        f"{row['ort_ms']:8.3f} {row['ort_ratio']:6.2f} "
        f"[{row['ort_ratio_min']:.2f}-{row['ort_ratio_max']:.2f}] {row['gflops']:8.1f} "
        f"{row['pct_peak']:6.0f} {row['numpy_pct_peak']:6.0f} {row['ort_pct_peak']:7.0f} "
        f"{row['peak_gflops']:5.0f} {slow:>5} {row['compile_s']:9.2f}  {row['max_rel_err']:.1e}",
        flush=True,
    )


def set_num_threads(count: int) -> None:
    from lamina.backends.codegen import set_num_threads as set_lamina_threads

    set_lamina_threads(count)


def _write_csv(path: str, rows: list[dict]) -> None:
    import csv

    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {path}")


def _plot(path: str, rows: list[dict], peer: str = "NumPy") -> None:
    """Bar chart of the ratios (Lamina / `peer`) per case and thread count; skipped without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plot")
        return
    labels = [f"{r['case']} ({r['threads']}t)" for r in rows]
    fig, ax = plt.subplots(figsize=(8, 0.4 * len(rows) + 1))
    ax.barh(labels, [r["ratio"] for r in rows])
    ax.axvline(1.0, color="k", linewidth=0.8)
    ax.set_xlabel(f"time ratio Lamina / {peer} (< 1: Lamina faster)")
    fig.tight_layout()
    fig.savefig(path)
    print(f"wrote {path}")


if __name__ == "__main__":
    sys.exit(main())
