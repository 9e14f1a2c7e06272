"""Compile time grows linearly with the program (docs/compile-speed.md).

Two chains from benchmarks/bench_compile.py (N chained `graph.call`
functions; N chained element-wise ops), each compiled at N and 10·N after a
warm-up. Quadratic steps (symbol lookups scanning the module, LLVM
inlining every kernel into one giant host function) made 10× the program
cost 25-50× the time; linear compilation costs about 10×. The bound here
is generous (shared CI machines are noisy); the benchmark prints the
exact curve.
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import pytest

import lamina

BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_compile.py"
RATIO_BOUND = 20.0
"""10× the program may take at most this many times as long (linear ≈ 10, the goal ≤ 12)."""


def _bench():
    spec = importlib.util.spec_from_file_location("bench_compile", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _seconds(text: str) -> float:
    """Best of two full compiles (disk cache off, in-process JIT cache emptied first)."""
    from lamina.backends.codegen import clear_cache

    best = float("inf")
    for _ in range(2):
        clear_cache()  # executables keep their own engines alive
        start = time.perf_counter()
        lamina.compile(text, cache=False)
        best = min(best, time.perf_counter() - start)
    return best


@pytest.mark.parametrize("chain, small", [("call_chain", 12), ("op_chain", 30)])
def test_ten_times_the_program_takes_about_ten_times_as_long(chain, small):
    generate = getattr(_bench(), chain)
    _seconds(generate(4))  # warm-up: imports, LLVM start-up
    short, long = _seconds(generate(small)), _seconds(generate(10 * small))
    assert long / short <= RATIO_BOUND, (
        f"{chain}: {short:.2f} s -> {long:.2f} s for 10x the program"
    )


def test_big_host_functions_do_not_inline_their_kernels():
    """The LLVM half of linearity: a host function with many calls keeps them as calls."""
    from lamina.backends.codegen import translate
    from lamina.backends.inlining import INLINE_CALL_LIMIT, bound_inlining
    from lamina.driver.lowering import lower_to_build, parse_source

    bench = _bench()
    big, _ = lower_to_build(parse_source(bench.op_chain(2 * INLINE_CALL_LIMIT), "big.mlir"))
    marked = bound_inlining(translate(big))
    assert marked and all(name.startswith("te_") for name in marked)
    small, _ = lower_to_build(parse_source(bench.op_chain(2), "small.mlir"))
    assert bound_inlining(translate(small)) == []


@pytest.mark.parametrize("as_bytes", [False, True])
def test_parser_locations_match_xdsl_at_every_position(as_bytes):
    """LocatedParser bisects precomputed newlines (xDSL recounts them per op: quadratic)."""
    from xdsl.utils.lexer import Span

    from lamina.core.context import make_context
    from lamina.core.diagnostics import LocatedParser

    text = "\n\nfirst line\n  second\n\n\tthird é line\nlast"
    source = text.encode() if as_bytes else text
    parser = LocatedParser(make_context(), source, "x.mlir")
    data = parser.lexer.input  # spans index this input (the lexer may decode bytes)
    for pos in range(len(data.content) + 1):
        expected = Span(pos, pos, data).get_location()
        assert parser._line_col(pos) == (expected.line, expected.col), pos


def test_located_ops_carry_their_line_and_column():
    from lamina.core.context import make_context
    from lamina.core.diagnostics import parse_module

    text = _bench().call_chain(3)
    module = parse_module(make_context(), text, "chain.mlir", line_offset=10)
    lines = text.splitlines()
    for op in module.walk():
        if op is module:
            continue
        loc = op.location
        line, col = loc.line.data - 10, loc.column.data
        assert lines[line - 1][col - 1 :].startswith((op.name, "%")), (op.name, line, col)
