"""Every symbol JIT-compiled code calls must exist: a missing one is a diagnostic, not SIGSEGV.

MCJIT resolves a symbol that no loaded library defines to address 0, so
the first call jumps there and the interpreter dies (the `.so` route fails
cleanly at load time instead). Two kinds of symbols can be missing:

* functions the module declares itself (`graph.call_extern` of a library
  that was never registered): checked before code generation;
* helpers LLVM's code generator calls on its own, e.g. `__truncdfhf2` for an
  f64 → f16 conversion on a CPU without native f16 conversions: only the
  object code knows them, so its ELF symbol table is read after JIT
  compilation (the engine's object cache hands us the object) and every
  undefined, non-weak symbol is looked up.

`native_setup.load_runtime_libraries` makes the usual helpers available in
the first place: libgcc_s carries the f16 conversions (GCC ≥ 12).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

import llvmlite.binding as llvm
from xdsl.dialects import llvm as llvm_dialect
from xdsl.dialects.builtin import ModuleOp

from lamina.core.diagnostics import Diagnostic

HOW_TO_PROVIDE = (
    "load the library that defines it with lamina.backends.codegen.register_library(PATH) "
    "(or use a target that does) before compiling"
)


RUNTIME_PREFIX = "__lamina_"
"""Functions of Lamina's own runtimes (backends/llvm/device_runtime.py), linked into
the module before it is compiled: declared here, defined there."""


def missing_declared_functions(
    module: ModuleOp, exempt: set[str] | frozenset[str] = frozenset()
) -> list[Diagnostic]:
    """Functions the module declares (no body) that no loaded library defines
    (besides `exempt`: kernels whose object code is at hand)."""
    return [
        Diagnostic(
            f"codegen: external function '@{op.sym_name.data}' is not defined by any loaded "
            f"library; {HOW_TO_PROVIDE}",
            op,
        )
        for op in module.ops
        if isinstance(op, llvm_dialect.FuncOp)
        and not op.body.blocks
        and not op.sym_name.data.startswith(("llvm.", RUNTIME_PREFIX))
        and op.sym_name.data not in exempt
        and not llvm.address_of_symbol(op.sym_name.data)
    ]


def undefined_symbols(obj: bytes) -> list[str]:
    """Undefined global (non-weak) symbols of an ELF64 little-endian object file."""
    if obj[:4] != b"\x7fELF" or obj[4] != 2 or obj[5] != 1:
        return []  # not ELF64 LE (another platform): nothing we can check
    (shoff,) = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + i * shentsize) for i in range(shnum)]
    names: list[str] = []
    for _, sh_type, _, _, offset, size, link, _, _, entsize in sections:
        if sh_type != 2 or not entsize:  # SHT_SYMTAB
            continue
        strtab_offset = sections[link][4]
        for pos in range(offset + entsize, offset + size, entsize):  # entry 0 is null
            st_name, st_info, _, st_shndx = struct.unpack_from("<IBBH", obj, pos)
            if st_shndx == 0 and st_name and (st_info >> 4) == 1:  # SHN_UNDEF, STB_GLOBAL
                end = obj.index(b"\0", strtab_offset + st_name)
                names.append(obj[strtab_offset + st_name : end].decode())
    return names


def unresolved(objects: Iterable[bytes]) -> list[str]:
    """Undefined symbols of the JIT's object code that nothing in the process defines."""
    needed = {name for obj in objects for name in undefined_symbols(obj)}
    return sorted(name for name in needed if not llvm.address_of_symbol(name))


def unresolved_diagnostic(names: list[str]) -> Diagnostic:
    listed = ", ".join(f"'{n}'" for n in names)
    return Diagnostic(
        f"codegen: the generated code needs {listed}, which no loaded library defines "
        f"(a compiler-runtime helper, e.g. from libgcc_s); {HOW_TO_PROVIDE}"
    )
