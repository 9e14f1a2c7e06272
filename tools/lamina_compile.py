"""`lamina-compile FILE -o out.{so,o,ll}`: ahead-of-time build of a graph program.

The output kind follows the extension: `.ll` LLVM IR text, `.o` an object
file, `.so` a shared library. Entry functions follow the C ABI in docs/abi.md:
`void main(const T* arg0, ..., T* out0, ...)`, row-major contiguous buffers.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lamina.core.cli import UsageError, guarded_main, read_source
from lamina.tools.lamina_run import _ArgumentParser

KINDS = (".so", ".o", ".ll")


def _parser() -> argparse.ArgumentParser:
    p = _ArgumentParser(prog="lamina-compile", description=__doc__.splitlines()[0])
    p.add_argument("file", help="graph program (.mlir), '-' for stdin")
    p.add_argument("-o", "--output", required=True, help="out.so | out.o | out.ll")
    p.add_argument("--target", action="append", default=None, help="compile target (repeatable)")
    p.add_argument(
        "--check-bounds",
        action="store_true",
        help="check every buffer access; an out-of-bounds index stops with an error "
        "(read it from the exported lamina_error, see docs/abi.md)",
    )
    return p


def run(argv: list[str] | None = None) -> int:
    from lamina.backends import codegen
    from lamina.backends.executable import _as_module, lower_to_build

    args = _parser().parse_args(argv)
    out = Path(args.output)
    if out.suffix not in KINDS:
        raise UsageError(f"cannot infer the output kind of '{out}': use one of {', '.join(KINDS)}")
    module = _as_module(read_source(args.file), args.file)
    lowered, _ = lower_to_build(module, args.target, check_bounds=args.check_bounds)
    if out.suffix == ".ll":
        out.write_text(codegen.emit_llvm_ir(lowered))
    elif out.suffix == ".o":
        out.write_bytes(codegen.emit_object(lowered))
    else:
        codegen.build_shared_library(lowered, out)
    return 0


def main(argv: list[str] | None = None) -> None:
    sys.exit(guarded_main("lamina-compile", lambda: run(argv)))


if __name__ == "__main__":
    main()
