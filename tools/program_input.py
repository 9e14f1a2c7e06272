"""What lamina-run, lamina-compile and lamina-import-onnx read: graph IR text,
or an ONNX model imported on the way with the `--input-shape` flag's shapes.
(In tools/, since core/ never depends on the frontends.)"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from lamina.tools.cli import UsageError, read_source


def read_program(path: str, input_shape_specs: Sequence[str] = (), batch_bounds: str | None = None):
    """The program in `path`: graph IR text, or the module of an ONNX model
    (a `.onnx` file, or any file that is not UTF-8 text and loads as one)
    imported with the `--input-shape` specs and `--batch-bounds`; the importer's
    notes go to stderr."""
    shapes = parse_input_shapes(input_shape_specs)
    bounds = parse_batch_bounds(batch_bounds) if batch_bounds is not None else None
    if path == "-":
        if shapes or bounds is not None:
            option = "--input-shape" if shapes else "--batch-bounds"
            raise UsageError(f"{option} applies to ONNX models only")
        return sys.stdin.read()
    from lamina.frontends.sources import might_be_onnx

    if not shapes and bounds is None and not might_be_onnx(path):
        return read_source(path)
    from lamina.frontends.onnx import import_source

    result = import_source(path, shapes, cli=True, filename=path, batch_bounds=bounds)
    if result is None:
        return read_source(path)
    for note in result.notes:
        print(f"{path}: note: {note}", file=sys.stderr)
    return result.module


def add_input_shape_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--input-shape",
        action="append",
        default=[],
        metavar="NAME=D0,D1,...",
        help="ONNX models: the static shape of an input with dynamic dimensions (repeatable); "
        "pins a dynamic batch",
    )
    parser.add_argument(
        "--batch-bounds",
        default=None,
        metavar="LO:HI",
        help="ONNX models: bounds of a dynamic batch (a dim_param leading dimension "
        "not pinned by --input-shape); default 1:64 (docs/dynamic-shapes.md)",
    )


def parse_input_shapes(specs: Sequence[str]) -> dict[str, tuple[int, ...]]:
    """`NAME=D0,D1,...` specs as {name: shape}; a malformed one is a user error."""
    shapes: dict[str, tuple[int, ...]] = {}
    for spec in specs:
        name, sep, dims = spec.rpartition("=")
        try:
            shape = tuple(int(d) for d in dims.split(",") if d.strip())
        except ValueError:
            shape = ()
        if not sep or not name or not shape or any(d < 0 for d in shape):
            raise UsageError(f"--input-shape expects NAME=D0,D1,... with sizes >= 0, got '{spec}'")
        if name in shapes:
            raise UsageError(f"--input-shape gives '{name}' twice")
        shapes[name] = shape
    return shapes


def parse_batch_bounds(spec: str | None) -> tuple[int, int]:
    """`LO:HI` (`--batch-bounds`) as (lo, hi); None → the default; malformed → a user error."""
    from lamina.frontends.sources import DEFAULT_BATCH_BOUNDS

    if spec is None:
        return DEFAULT_BATCH_BOUNDS
    lo, sep, hi = spec.partition(":")
    try:
        bounds = (int(lo), int(hi))
    except ValueError:
        bounds = (0, 0)
    if not sep or not 1 <= bounds[0] <= bounds[1]:
        raise UsageError(f"--batch-bounds expects LO:HI with 1 <= LO <= HI, got '{spec}'")
    return bounds
