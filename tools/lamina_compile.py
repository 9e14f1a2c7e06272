"""`lamina-compile FILE -o out.{so,o,ll,s,bc}` or `-o DIR/`: ahead-of-time build of a graph program.

The output kind follows the extension: `.o` an object file, `.so` a shared
library (linked by the system C compiler), `.ll` LLVM IR text, `.s`
assembly, `.bc` LLVM bitcode. A path ending in `/`, an existing directory
or a path without one of these suffixes is an artifact directory (library,
weights file, `manifest.json`) that `lamina.runtime.load` runs without the
compiler (runtime/artifact.py, docs/python-api.md). Every entry function is exported under a
prefix (`@main` → `lamina_main`; `--symbol-prefix`) so that it never
collides with a C program's own symbols, and a C header declaring every
entry point (shapes in comments, what to link) is written beside the output
(`out.h`; `--header`). The ABI is described in docs/abi.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lamina.runtime.artifact import is_directory_path
from lamina.tools.cli import (
    UsageError,
    add_instrument_arguments,
    guarded_main,
    print_pipeline,
)
from lamina.tools.lamina_run import _ArgumentParser
from lamina.tools.program_input import add_input_shape_argument, read_program

KINDS = (".so", ".o", ".ll", ".s", ".bc")


def _parser() -> argparse.ArgumentParser:
    from lamina.backends.abi import DEFAULT_SYMBOL_PREFIX

    p = _ArgumentParser(prog="lamina-compile", description=(__doc__ or "").splitlines()[0])
    p.add_argument("file", help="graph program (.mlir) or ONNX model (.onnx), '-' for stdin")
    p.add_argument(
        "-o", "--output", help=" | ".join(f"out{k}" for k in KINDS) + " | DIR/ (an artifact)"
    )
    add_input_shape_argument(p)
    p.add_argument(
        "--symbol-prefix",
        default=DEFAULT_SYMBOL_PREFIX,
        help=f"prefix of every exported C symbol (default: {DEFAULT_SYMBOL_PREFIX}, "
        f"so @main is {DEFAULT_SYMBOL_PREFIX}main)",
    )
    p.add_argument("--header", help="where to write the C header (default: the output's .h)")
    add_instrument_arguments(p)
    p.add_argument(
        "--load-plugin", action="append", default=[], metavar="MODULE", help="see lamina-opt"
    )
    p.add_argument(
        "--check-bounds",
        action="store_true",
        help="check every buffer access; an out-of-bounds index stops with an error "
        "(read it from the exported lamina_error, see docs/abi.md)",
    )
    return p


def run(argv: list[str] | None = None) -> int:
    from lamina.backends import abi

    args = _parser().parse_args(argv)
    for plugin in args.load_plugin:  # registers dialects, passes, targets (docs/extending.md)
        from lamina.core.plugins import load_plugin

        load_plugin(plugin)
    if args.print_pipeline:
        return print_pipeline(args)
    if not args.output:
        raise UsageError("the following arguments are required: -o/--output")
    out = Path(args.output)
    if is_directory_path(args.output):
        return _write_artifact(args, out)
    if out.suffix not in KINDS:
        raise UsageError(
            f"cannot infer the output kind of '{out}': use one of {', '.join(KINDS)}, "
            "or DIR/ for an artifact directory"
        )
    header = Path(args.header) if args.header else out.with_suffix(".h")
    for path in (out, header):  # before the compile, not from the linker afterwards
        if not path.parent.is_dir():
            raise UsageError(f"cannot write '{path}': directory '{path.parent}' does not exist")
        if path.is_dir():
            raise UsageError(f"cannot write '{path}': it is a directory")
    abi.check_symbol_prefix(args.symbol_prefix)
    instruments = _instruments(args)
    try:
        _with_lowering_process(
            lambda parallel: _compile(args, out, header, instruments, parallel=parallel)
        )
    finally:
        instruments.close_line()  # a diagnostic starts on a clean line
    return 0


def _instruments(args):
    """The instruments the shared flags ask for (`--pass-timing`, `-v`, `--progress`, ...)."""
    from lamina.driver.instruments import Instruments
    from lamina.tools.cli import instrument_options

    options = instrument_options(args)
    show_progress = options.pop("progress")
    return Instruments(**options, show_progress=show_progress)


def _records(args, instruments) -> dict:
    """`--records`: the keyword arguments of `lower_to_build` (`-v`: the records that do
    not apply here, and why)."""
    from lamina.tools.cli import records_options

    return records_options(args, instruments.progress)


def _compile(args, out: Path, header: Path, instruments, *, parallel: bool) -> None:
    """Parse, lower and write the outputs, each a row on the instruments' clock."""
    from lamina.backends import abi
    from lamina.backends.codegen import CompileTimings, partial_link_tools
    from lamina.driver.lowering import parse_source
    from lamina.driver.signatures import entry_signatures

    records = _records(args, instruments)
    with instruments.recorder.phase("parse + verify"):
        module = parse_source(
            read_program(args.file, args.input_shape, args.batch_bounds), args.file
        )
        signatures = entry_signatures(module)
    already_lowered = not any(op.name == "graph.func" for op in module.ops)
    in_units = out.suffix == ".so" or (out.suffix == ".o" and partial_link_tools() is not None)
    lowered = _lower(args, instruments, module, records, in_units=in_units, parallel=parallel)
    # The static bodies of a dynamic-batch entry exist only after lowering.
    signatures = {**entry_signatures(lowered), **signatures}
    symbols = abi.export_symbols(lowered, args.symbol_prefix)
    text = abi.c_header(
        signatures,
        symbols,
        source="<stdin>" if args.file == "-" else args.file,
        guard=f"LAMINA_{out.stem}_H",
        link=abi.link_libraries(lowered),
        opaque=abi.opaque_entries(lowered, symbols) if already_lowered else None,
    )
    instruments.progress(f"codegen: LLVM optimization and {out.suffix} output")
    timings = CompileTimings()
    with instruments.recorder.phase("codegen"), instruments.watching_build():
        _write_outputs(lowered, out, header, text, timings)
    instruments.finish(timings)


def _lower(args, instruments, module, records: dict, *, in_units: bool, parallel: bool):
    """`lower_to_build` of `module`. For an output built in units (`in_units`), as
    `lamina.compile` lowers: kernels an earlier build compiled for a library are
    reused, and (`parallel`) a forked process lowers and compiles part of the others
    (backends/parallel_lowering.py). The library is the same either way."""
    from lamina.driver.lowering import lower_to_build, may_reuse_kernels

    options = dict(instruments=instruments, check_bounds=args.check_bounds, **records)
    if in_units and may_reuse_kernels(args.print_ir_after_all, args.dump_phases_to):
        options.update(reuse_kernels=True, parallel=parallel, jit=False)
    return lower_to_build(module, args.targets, **options)[0]


def _with_lowering_process(build) -> None:
    """`build(parallel=True)`; if the lowering process failed, `build(parallel=False)`
    (everything in this process, as `lamina.compile` does). No lowering process
    outlives it."""
    from lamina.backends.parallel_lowering import ParallelLoweringFailed, abandon_all

    try:
        build(parallel=True)
    except ParallelLoweringFailed:
        abandon_all()
        build(parallel=False)
    finally:
        abandon_all()


def _write_artifact(args, out: Path) -> int:
    """`-o DIR/`: the program lowered and written as an artifact directory."""
    from lamina.backends.abi import DEFAULT_SYMBOL_PREFIX
    from lamina.backends.codegen import CompileTimings
    from lamina.driver.artifact import write_artifact
    from lamina.driver.lowering import parse_source
    from lamina.driver.signatures import entry_signatures
    from lamina.runtime.artifact import artifact_output

    if args.header:
        raise UsageError("--header applies to .so/.o outputs; an artifact has its manifest")
    if args.symbol_prefix != DEFAULT_SYMBOL_PREFIX:
        raise UsageError(
            f"--symbol-prefix applies to .so/.o outputs; an artifact's entry points are "
            f"always {DEFAULT_SYMBOL_PREFIX}<name> (its manifest names them)"
        )
    artifact_output(out)  # a path that cannot be an artifact fails before the compile
    instruments = _instruments(args)

    def build(parallel: bool) -> None:
        with instruments.recorder.phase("parse + verify"):
            module = parse_source(
                read_program(args.file, args.input_shape, args.batch_bounds), args.file
            )
            not_entries: dict[str, str] = {}
            signatures = entry_signatures(module, not_entries)
        records = _records(args, instruments)
        lowered = _lower(args, instruments, module, records, in_units=True, parallel=parallel)
        instruments.progress("codegen: LLVM optimization and the artifact's library")
        timings = CompileTimings()
        with instruments.recorder.phase("codegen"), instruments.watching_build():
            write_artifact(
                lowered, signatures, out, not_entries=not_entries, timings=timings, private=True
            )  # the lowered module is used no more: not cloned
        instruments.finish(timings)

    try:
        _with_lowering_process(build)
    finally:
        instruments.close_line()
    return 0


def _write_outputs(module, out: Path, header: Path, text: str, timings) -> None:
    """Write `module` as the kind `out`'s extension names, then the header.

    A failure (a missing C compiler, an unwritable path) leaves behind
    neither file that this run created.
    """
    from lamina.backends import codegen

    new_files = [path for path in (out, header) if not path.exists()]
    try:
        if out.suffix == ".so":
            codegen.build_shared_library(module, out, timings=timings)
        elif out.suffix == ".o":
            codegen.build_object_file(module, out, timings=timings)
        elif out.suffix == ".s":
            out.write_text(codegen.emit_assembly(module, timings=timings))
        elif out.suffix == ".bc":
            out.write_bytes(codegen.emit_bitcode(module, timings=timings))
        else:
            out.write_text(codegen.emit_llvm_ir(module, timings=timings))
        header.write_text(text)
    except BaseException:
        for path in new_files:
            path.unlink(missing_ok=True)
        raise


def main(argv: list[str] | None = None) -> None:
    sys.exit(guarded_main("lamina-compile", lambda: run(argv)))


if __name__ == "__main__":
    main()
