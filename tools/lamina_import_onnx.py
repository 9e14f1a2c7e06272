"""`lamina-import-onnx MODEL.onnx -o MODEL.mlir`: ONNX model → graph-dialect module.

    lamina-import-onnx resnet18.onnx -o resnet18.mlir
    lamina-import-onnx bert.onnx --input-shape input_ids=1,128 -o bert.mlir

The module has one entry `@main`: parameters are the graph's inputs
(initializers excluded) in order, results its outputs in order. Weights
stay binary in memory and print as hex `dense<"0x...">` attributes (or, with
`--mlir-elide-elementsattrs-if-larger N`, as MLIR's elided marker). A model
the importer cannot represent exactly is an error naming the node (name,
op type, opset) and what is missing; exit status 1, and no output file.
See docs/onnx.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lamina.tools.cli import UsageError, guarded_main
from lamina.tools.lamina_run import _ArgumentParser
from lamina.tools.program_input import (
    add_input_shape_argument,
    parse_batch_bounds,
    parse_input_shapes,
)


def _parser() -> argparse.ArgumentParser:
    p = _ArgumentParser(prog="lamina-import-onnx", description=(__doc__ or "").splitlines()[0])
    p.add_argument("model", help="ONNX model file (.onnx)")
    p.add_argument("-o", "--output", default="-", help="output .mlir file (default: stdout)")
    add_input_shape_argument(p)
    p.add_argument(
        "--mlir-elide-elementsattrs-if-larger",
        "--elide-constants-larger-than",
        dest="elide_larger_than",
        type=int,
        default=0,
        metavar="N",
        help="print weights of more than N elements as dense_resource<__elided__> "
        "(a readable summary; the output cannot be compiled)",
    )
    return p


def run(argv: list[str] | None = None) -> int:
    from lamina.core.dense_text import print_module

    try:
        from lamina.frontends.onnx import import_file
    except ImportError as err:
        raise UsageError(
            f"the ONNX importer needs the 'onnx' package ({err}); "
            "install it with: pip install 'lamina[onnx]'"
        ) from None
    args = _parser().parse_args(argv)
    if args.elide_larger_than < 0:
        raise UsageError("--mlir-elide-elementsattrs-if-larger expects N >= 0")
    result = import_file(
        args.model,
        parse_input_shapes(args.input_shape),
        cli=True,
        batch_bounds=parse_batch_bounds(args.batch_bounds),
    )
    for note in result.notes:
        print(f"{args.model}: note: {note}", file=sys.stderr)
    text = print_module(result.module, args.elide_larger_than) + "\n"
    if args.output == "-":
        sys.stdout.write(text)
    else:
        Path(args.output).write_text(text)
    return 0


def main(argv: list[str] | None = None) -> None:
    sys.exit(guarded_main("lamina-import-onnx", lambda: run(argv)))


if __name__ == "__main__":
    main()
