"""Bound inlining so that no LLVM function grows with the graph.

Host code is straight-line: one call per kernel (or per called graph
function). Kernels are internal, and `legalize` shares one kernel between
identical ops, so LLVM's O3 inliner copied every kernel body into the host
function at every call site: on a chain of 1000 ops `@main` became one
function with 1000 loop nests, and O3 (loop passes, SLP, GVN, instruction
selection, register allocation) is superlinear in the size of a function.
Measured (2 cores): 200 → 1000 chained ops took 0.9 → 9.0 s of O3; with the
rule below, 0.09 → 0.15 s.

Two rules, both about host code (the functions `lower-graph` made, which
the module exports):

* a *big* caller, one making more than `INLINE_CALL_LIMIT` calls of defined
  functions, gets none of them inlined: its size is then linear in its own
  ops, and each callee is optimized once, on its own;
* a function called from several exported functions (a kernel shared by
  many graph functions) is not inlined either: O3 then optimizes its body
  once, not once per caller (on 1000 chained graph functions sharing two
  kernels this was most of the O3 time).

A call costs a few nanoseconds, nothing next to a kernel's loops. Calls
inside kernels (helpers, micro-kernels) are left to LLVM, and small
programs (a few kernels, each called once) are inlined exactly as before.
"""

from __future__ import annotations

from collections import Counter

import llvmlite.ir as llvm_ir

INLINE_CALL_LIMIT = 32
"""A function making more calls than this (of defined functions) gets none of them inlined."""


def _defined_callees(fn: llvm_ir.Function) -> Counter[str]:
    """How often `fn` calls each function defined in its module."""
    counts: Counter[str] = Counter()
    for block in fn.blocks:
        for instr in block.instructions:
            callee = getattr(instr, "callee", None)
            if isinstance(callee, llvm_ir.Function) and not callee.is_declaration:
                counts[callee.name] += 1
    return counts


def _exported(fn: llvm_ir.Function) -> bool:
    return fn.linkage in ("", "external")


def bound_inlining(ir_module: llvm_ir.Module, limit: int = INLINE_CALL_LIMIT) -> list[str]:
    """Mark the callees of big callers and shared kernels `noinline`; return their names."""
    marked: set[str] = set()
    host_sites: Counter[str] = Counter()
    for fn in ir_module.functions:
        if fn.is_declaration:
            continue
        callees = _defined_callees(fn)
        if sum(callees.values()) > limit:
            marked.update(callees)
        if _exported(fn):
            host_sites.update(callees)
    marked.update(name for name, sites in host_sites.items() if sites > 1)
    for name in marked:
        fn = ir_module.get_global(name)
        if "alwaysinline" not in fn.attributes:
            fn.attributes.add("noinline")
    return sorted(marked)


__all__ = ["INLINE_CALL_LIMIT", "bound_inlining"]
