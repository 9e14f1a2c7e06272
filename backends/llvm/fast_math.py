"""Fast-math flags printed in one order, so that the same program gives the same text.

xDSL keeps an op's fast-math flags in a frozenset and translates them to
llvmlite in its iteration order, which follows the strings' hashes: different
in every process (`PYTHONHASHSEED`). A float op with two flags (a reduction's
`reassoc` with `contract`) was printed either way round, so its kernel's text,
its key (backends/kernel_split.py) and its object code changed from one
compile to the next, and the disk cache of kernels missed half the time (the
transformer encoder's softmax and layer norms). LLVM reads the flags in any
order; this prints them in the order LLVM itself prints them.

Outside the modules whose source is part of every kernel key
(`kernel_cache.facts`): a kernel's text is in its key already, so only the
kernels whose text this changes get new keys.
"""

from __future__ import annotations

from llvmlite import ir as llvm_ir

LLVM_ORDER = ("fast", "reassoc", "nnan", "ninf", "nsz", "arcp", "contract", "afn")
_RANK = {flag: i for i, flag in enumerate(LLVM_ORDER)}


def canonical_fast_math_flags(ir_module: llvm_ir.Module) -> None:
    """Sort the flags of every instruction with more than one into `LLVM_ORDER`."""
    for fn in ir_module.functions:
        for block in fn.blocks:
            for instr in block.instructions:
                flags = getattr(instr, "flags", None)
                if flags and len(flags) > 1:
                    instr.flags = sorted(flags, key=lambda f: _RANK.get(f, len(LLVM_ORDER)))


__all__ = ["LLVM_ORDER", "canonical_fast_math_flags"]
