"""`lamina-import-onnx MODEL.onnx -o MODEL.mlir`: ONNX model → graph-dialect module.

    lamina-import-onnx resnet18.onnx -o resnet18.mlir
    lamina-import-onnx bert.onnx --input-shape input_ids=1,128 -o bert.mlir

The module has one entry `@main`: parameters are the graph's inputs
(initializers excluded) in order, results its outputs in order. Weights
stay binary in memory; with `-o MODEL.mlir` those of 1 KiB or more are written to
the side file `MODEL.mlir.bin` and named by `dense_resource<...>` handles
(core/resources.py), the others print as hex `dense<"0x...">` attributes, as all
of them do on stdout or with `--inline-constants` (or, with
`--mlir-elide-elementsattrs-if-larger N`, as MLIR's elided marker). Each op
is located at its ONNX node (`loc("node name")`), printed with
`--print-debuginfo`; the other tools keep those locations when they parse the
text, so a profiling build names the nodes each kernel runs. A model
the importer cannot represent exactly is an error naming the node (name,
op type, opset) and what is missing; exit status 1, and no output file.
See docs/onnx.md.
"""

from __future__ import annotations

import argparse
import sys

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
    p.add_argument(
        "--inline-constants",
        action="store_true",
        help="keep every constant in the text as hex, without a side file "
        "(the default with -o: constants of 1 KiB or more go to OUTPUT.bin; docs/onnx.md)",
    )
    p.add_argument(
        "--print-debuginfo",
        "--mlir-print-debuginfo",
        action="store_true",
        help='print each op\'s location: the ONNX node it came from (loc("name"))',
    )
    return p


def run(argv: list[str] | None = None) -> int:
    from lamina.core.dense_text import print_module, write_module

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
    if args.output == "-":
        text = print_module(
            result.module, args.elide_larger_than, print_debuginfo=args.print_debuginfo
        )
        sys.stdout.write(text + "\n")
    else:
        write_module(
            result.module,
            args.output,
            inline_constants=args.inline_constants,
            elide_larger_than=args.elide_larger_than,
            print_debuginfo=args.print_debuginfo,
        )
    return 0


def main(argv: list[str] | None = None) -> None:
    sys.exit(guarded_main("lamina-import-onnx", lambda: run(argv)))


if __name__ == "__main__":
    main()
