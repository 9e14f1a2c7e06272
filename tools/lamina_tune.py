"""`lamina-tune MODEL --budget SECONDS --records PATH`: measure schedule candidates, keep what wins.

Tunes the kernels of MODEL (graph IR `.mlir` or ONNX `.onnx`), the heaviest
first, for about SECONDS, and writes the best knobs per kernel to PATH
(JSON lines; resumed when PATH exists). `--ray ADDRESS` (or `auto`) builds
and measures on a Ray cluster. docs/tuning.md has a worked example.
"""

from __future__ import annotations

import argparse
import os
import sys

from lamina.tools.cli import UsageError, add_target_argument, guarded_main


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="lamina-tune", description=(__doc__ or "").splitlines()[0])
    p.add_argument("model", help="graph program (.mlir) or ONNX model (.onnx)")
    p.add_argument("--budget", type=float, required=True, metavar="SECONDS", help="time to spend")
    p.add_argument("--records", required=True, metavar="PATH", help="records file (JSON lines)")
    p.add_argument("--ray", metavar="ADDRESS", help="a Ray cluster's address, or 'auto'")
    p.add_argument("--threads", type=int, help="threads the kernels run with while measured")
    p.add_argument("--seed", type=int, default=0, help="seed of the evolutionary search")
    p.add_argument(
        "--alone",
        action="store_true",
        help="time each kernel as a program of its own, not inside the model (docs/tuning.md)",
    )
    p.add_argument(
        "--no-model-time",
        action="store_true",
        help="do not time the whole model with and without the records at the end",
    )
    add_target_argument(p)
    return p


def run(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.budget < 0:
        raise UsageError("--budget must be >= 0 seconds")
    if args.threads is not None and args.threads < 1:
        raise UsageError("--threads must be >= 1")
    if not os.path.isfile(args.model):
        raise UsageError(f"no such model: '{args.model}'")
    if os.path.isdir(args.records):
        raise UsageError(f"--records '{args.records}' is a directory; name the file to write")
    from lamina.tuning.tune import tune

    tune(
        args.model,
        args.records,
        args.budget,
        ray=args.ray,
        threads=args.threads,
        targets=args.targets or None,
        measure_model=not args.no_model_time and args.budget > 0,
        seed=args.seed,
        context=not args.alone,
    )
    return 0


def main(argv: list[str] | None = None) -> None:
    sys.exit(guarded_main("lamina-tune", lambda: run(argv)))


if __name__ == "__main__":
    main()
