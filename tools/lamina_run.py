"""`lamina-run FILE`: compile a graph program with the default pipeline and run it.

    lamina-run examples/mlp.mlir --random-inputs --seed 0 --repeat 10
    lamina-run model.mlir --inputs in.npz --output out.npz

In the `.npz` files inputs are `arg0, arg1, ...` in parameter order and
results `out0, out1, ...` (docs/design.md §7).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import zipfile

import numpy as np

from lamina.tools.cli import (
    UsageError,
    add_instrument_arguments,
    guarded_main,
    instrument_options,
    print_pipeline,
    records_options,
)
from lamina.tools.program_input import add_input_shape_argument, read_program


class _ArgumentParser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse exits 2; a bad flag is a user error (1)
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(1)


def _parser() -> argparse.ArgumentParser:
    p = _ArgumentParser(prog="lamina-run", description=(__doc__ or "").splitlines()[0])
    p.add_argument("file", help="graph program (.mlir) or ONNX model (.onnx), '-' for stdin")
    p.add_argument("--entry", default="main", help="entry function (default: main)")
    add_input_shape_argument(p)
    src = p.add_mutually_exclusive_group()
    src.add_argument(
        "--inputs", help=".npz with arg0, arg1, ... in parameter order, or keyed by parameter name"
    )
    src.add_argument("--random-inputs", action="store_true", help="random inputs (default)")
    p.add_argument("--seed", type=int, default=0, help="seed for --random-inputs")
    p.add_argument(
        "--batch-size",
        type=int,
        default=None,
        metavar="N",
        help="--random-inputs of an entry over a dynamic batch: N samples "
        "(default: the lower bound of N; docs/dynamic-shapes.md)",
    )
    p.add_argument("--output", help="write results to this .npz as out0, out1, ...")
    p.add_argument("--repeat", type=int, default=0, help="time N further runs")
    p.add_argument(
        "--stats",
        action="store_true",
        help="print time and peak memory per compile phase (LLVM steps included) and "
        "whether the disk cache hit",
    )
    p.add_argument(
        "--device-stats",
        action="store_true",
        help="print peak and allocated bytes per device and bytes copied to it (first run)",
    )
    p.add_argument(
        "--load-plugin", action="append", default=[], metavar="MODULE", help="see lamina-opt"
    )
    add_instrument_arguments(p)
    p.add_argument(
        "--check-bounds",
        action="store_true",
        help="check every buffer access; an out-of-bounds index stops with an error",
    )
    p.add_argument(
        "--profile",
        action="store_true",
        help="time each kernel call and print calls, total ms, share and parallel regions "
        "per kernel over max(--repeat, 10) runs, then the slowest call sites with the source "
        "ops (ONNX nodes) each runs (docs/performance.md, Profiling)",
    )
    return p


SLOWEST_SITES = 10
"""Call sites `--profile` lists after its per-kernel table."""


def random_input_limit() -> int:
    """Bytes `--random-inputs` may allocate: half the available memory, at most 4 GiB."""
    try:
        available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        available = 8 << 30
    return min(available // 2, 4 << 30)


def batch_sizes(signature, batch_size: int | None) -> dict[str, int]:
    """The size of each symbolic dimension for random inputs: `--batch-size`, else the
    lower bound; a size out of bounds is a user error."""
    if batch_size is not None and not signature.bounds:
        raise UsageError(
            f"--batch-size {batch_size}: @{signature.name} has no dynamic batch "
            "(its shapes are static; docs/dynamic-shapes.md)"
        )
    sizes = {}
    for symbol, (lo, hi) in signature.bounds.items():
        size = lo if batch_size is None else batch_size
        if not lo <= size <= hi:
            raise UsageError(
                f"--batch-size {size}: @{signature.name} was compiled for {lo} <= {symbol} <= {hi}"
            )
        sizes[symbol] = size
    return sizes


def _check_input_sizes(signature, symbols: dict[str, int]) -> None:
    """Fail fast (before generating anything) when the inputs cannot sensibly be allocated."""
    limit = random_input_limit()
    sizes = [
        int(np.prod(spec.resolved(symbols), dtype=object)) * spec.dtype.itemsize
        for spec in signature.params
    ]
    if sum(sizes, 0) > limit:
        largest = max(range(len(sizes)), key=sizes.__getitem__)
        raise UsageError(
            f"--random-inputs: the parameters of @{signature.name} need {sum(sizes)} bytes "
            f"(argument {largest}, {signature.params[largest]}, alone {sizes[largest]}), more "
            f"than the {limit} bytes random inputs may use; pass real inputs with --inputs FILE.npz"
        )


def random_inputs(signature, seed: int, batch_size: int | None = None) -> list[np.ndarray]:
    """Reproducible inputs: standard normal floats, small integers, random booleans
    (`batch_size` samples of a dynamic batch, default its lower bound)."""
    sizes = batch_sizes(signature, batch_size)
    _check_input_sizes(signature, sizes)
    rng = np.random.default_rng(seed)
    arrays = []
    for spec in signature.params:
        shape = spec.resolved(sizes)
        if spec.dtype in (np.float32, np.float64):
            arrays.append(rng.standard_normal(shape, dtype=spec.dtype))
        elif spec.dtype.kind == "f":
            arrays.append(rng.standard_normal(shape).astype(spec.dtype))
        elif spec.dtype.kind == "b":
            arrays.append(rng.integers(0, 2, shape).astype(np.bool_))
        else:
            arrays.append(rng.integers(-8, 8, shape).astype(spec.dtype))
    return arrays


def load_inputs(path: str, signature) -> list[np.ndarray]:
    """Inputs from `path`: each parameter as `arg<i>` or by its name (`x` for %x); a bad file is a user error."""
    try:
        data = np.load(path, allow_pickle=False)
    except (ValueError, EOFError, zipfile.BadZipFile) as err:
        raise UsageError(
            f"{path}: not a .npz file of input arrays ({type(err).__name__})"
        ) from None
    if not isinstance(data, np.lib.npyio.NpzFile):
        raise UsageError(f"{path}: a single .npy array, expected a .npz with arg0, arg1, ...")
    with data:
        names = list(signature.param_names) or [None] * len(signature.params)
        keys, missing = [], []
        for i, name in enumerate(names):
            key = f"arg{i}" if f"arg{i}" in data or name not in data else name
            if key in data:
                keys.append(key)
            else:
                missing.append(f"arg{i}" + (f" (or {name})" if name else ""))
        if missing:
            raise UsageError(
                f"{path}: missing {', '.join(missing)} (have: {', '.join(data.files)})"
            )
        try:
            return [data[k] for k in keys]
        except (ValueError, EOFError, zipfile.BadZipFile) as err:
            raise UsageError(f"{path}: cannot read the input arrays ({err})") from None


def _summary(i: int, arr: np.ndarray) -> str:
    stats = ""
    if arr.size and arr.dtype.kind in "fiu":
        stats = f" min={arr.min():.6g} max={arr.max():.6g} mean={arr.mean():.6g}"
    return f"out{i}: {arr.dtype}{list(arr.shape)}{stats}"


def run(argv: list[str] | None = None) -> int:
    import lamina

    args = _parser().parse_args(argv)
    for plugin in args.load_plugin:  # registers dialects, passes, targets (docs/extending.md)
        from lamina.core.plugins import load_plugin

        load_plugin(plugin)
    if args.repeat < 0:
        raise UsageError("--repeat must be >= 0")
    if args.batch_size is not None and args.batch_size < 1:
        raise UsageError(f"--batch-size must be >= 1, got {args.batch_size}")
    if args.batch_size is not None and args.inputs:
        raise UsageError("--batch-size sizes --random-inputs; --inputs FILE gives the batch itself")
    if not 0 <= args.seed < 2**64:
        raise UsageError(f"--seed must be between 0 and 2**64 - 1, got {args.seed}")
    if args.output and os.path.isdir(args.output):
        raise UsageError(f"--output '{args.output}' is a directory; name the .npz file to write")
    if args.print_pipeline:
        return print_pipeline(args)
    exe = lamina.compile(
        read_program(args.file, args.input_shape, args.batch_bounds),
        targets=args.targets,
        filename=args.file,
        stats=args.stats,
        check_bounds=args.check_bounds,
        profile=args.profile,
        **records_options(args),
        **instrument_options(args),
    )
    if exe.stats is not None:
        print(exe.stats.format())
    sig = exe._signature(args.entry)
    inputs = (
        load_inputs(args.inputs, sig)
        if args.inputs
        else random_inputs(sig, args.seed, args.batch_size)
    )
    exe.reset_device_stats()  # --device-stats reports this first run
    results = exe.run(args.entry, *inputs)
    results = results if isinstance(results, tuple) else (results,)
    for i, arr in enumerate(results):
        print(_summary(i, arr))
    if args.device_stats:
        for device, st in exe.device_stats().items():
            print(
                f"device {device}: peak {st.peak} B, allocated {st.allocated} B, "
                f"copied to it {st.copied} B"
            )
    print(f"compile: {exe.timings['total'] * 1e3:.1f} ms")  # the total --stats, -v show
    if args.repeat:
        start = time.perf_counter()
        for _ in range(args.repeat):
            exe.run(args.entry, *inputs)
        per_run = (time.perf_counter() - start) / args.repeat
        print(f"run: {per_run * 1e3:.3f} ms/iter over {args.repeat} iterations")
    if args.profile:
        profile = exe.profile(args.entry, *inputs, runs=max(args.repeat, 10))
        print(profile)
        print(profile.sites_table(top=SLOWEST_SITES))
    if args.output:
        with open(args.output, "wb") as out:  # exactly this file (np.savez would add .npz)
            np.savez(out, **{f"out{i}": a for i, a in enumerate(results)})
    return 0


def main(argv: list[str] | None = None) -> None:
    sys.exit(guarded_main("lamina-run", lambda: run(argv)))


if __name__ == "__main__":
    main()
