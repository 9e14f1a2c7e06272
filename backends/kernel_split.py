"""Split a translated module into units LLVM compiles on their own: one per kernel, one host.

A network's code is a host function (the graph function: allocations and
one call per kernel) and kernels (a loop nest each, with its parallel parts
and their OpenMP wrappers). O3 and instruction selection on one module of
all of them run on one core and start from nothing for every model. Split,

* each kernel is a self-contained LLVM module whose text does not depend on
  where it came from: its helpers, error-message constants and loop
  metadata are renamed and renumbered canonically, so the same kernel in
  another model (or twice in one) has the same text, hence the same
  `KernelUnit.key` (backends/kernel_cache.py keys object code by it);
* the units are optimized and compiled to object code in parallel
  (backends/parallel_build.py) and loaded together into one MCJIT engine;
* the host unit keeps the graph functions, the error globals and the device
  runtime (linked there once: kernels see it `available_externally`, so
  LLVM optimizes their calls to the allocator exactly as before). Large
  constants (weights) leave LLVM: the host declares them as external
  symbols named by their content (`__lamina_w_<sha256>`), the bytes go to
  a 64-byte-aligned blob (runtime/constant_blob.py) that the loader maps
  to them. (Ahead of time they go to a library's read-only section or to an
  artifact's weights file: backends/codegen.py, `_weights_assembly`.)

A kernel keeps its instructions: only its linkage (exported, so the host can
call it) and its name change, and it is no longer inlined into the host
function, which is straight-line code of calls anyway.

`split_module` returns None for modules whose call structure is not host →
kernel → helpers (a kernel calling another kernel or a graph function);
the code generator then compiles the module whole, as before.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import llvmlite.ir as llvm_ir

from lamina.backends import kernel_families
from lamina.backends.llvm.device_runtime import RUNTIME_IR

_REF = re.compile(r'@"((?:[^"\\]|\\.)*)"')
"""A reference to a global value in llvmlite's output (names are always quoted)."""

_MD = re.compile(r"!(\d+)\b")
"""A reference to a numbered metadata node."""

KERNEL_PREFIX = "__lamina_k_"
"""Symbol of a kernel unit's entry: this prefix and the first 32 hex digits of its key."""

CONSTANT_PREFIX = "__lamina_w_"
"""Symbol of a constant that lives in the blob: this prefix and 32 hex digits of its SHA-256."""

HOST_HELPER_ATTRIBUTE = "alwaysinline"
"""An internal function with this attribute stays in the host unit (it is no kernel)."""

BLOB_MIN_BYTES = 1024
"""Constants of at least this size go to the blob; smaller ones stay in the host's IR."""

BLOB_ALIGN = 64
"""Alignment of every constant in the blob (the generated code assumes 64)."""

_PLACEHOLDER = "__lamina_kernel_entry"

RUNTIME_PREFIX = "__lamina_device_"
"""Names of the device runtime's functions (backends/llvm/device_runtime.py)."""

MESSAGE_PREFIX = "lamina_error_message_"
"""Names of the error-message constants (backends/llvm/errors.py). A kernel's messages
name the kernel, so they stay out of its unit: the host defines them as
`<kernel symbol>_m<i>`, with this model's names in them, and the kernel's
object code, which only stores their address, is the same in every model."""

_TYPED_MESSAGE = re.compile(r'\[\d+ x i8\]\* (@"' + MESSAGE_PREFIX + r'\d+")')
"""A message's address in llvmlite's typed-pointer syntax (its length is in the type)."""

KERNEL_RUNTIME_IR = (
    RUNTIME_IR.replace("linkonce_odr hidden ", "available_externally ")
    .replace("@llvm.used = appending global [1 x ptr]", "; @llvm.used", 1)
    .replace('[ptr @__lamina_release_blocks], section "llvm.metadata"', "")
)
"""The device runtime as a kernel unit sees it: definitions LLVM may read (and
inline, where it did before) but does not emit; the host unit defines them."""


@dataclass(frozen=True)
class KernelUnit:
    """One kernel (entry, helpers, constants, metadata) as a self-contained LLVM module."""

    key: str
    """SHA-256 of the normalized text and of everything that shapes its object code."""
    symbol: str
    text: str
    names: tuple[str, ...]
    """The kernel's names in the module this unit was split from (inspection, messages)."""
    messages: tuple[str, ...] = ()
    """The module's message globals the kernel refers to, as `<symbol>_m0`, `_m1`, ..."""
    message_definitions: tuple[str, ...] = ()
    """A reused kernel's messages (it has no text, backends/kernel_reuse.py): the host
    defines `<symbol>_m<i>` as these."""
    reused_runtime: tuple[str, ...] = ()
    """A reused kernel's declarations of the device runtime."""
    needs: tuple[tuple[str, str], ...] = ()
    """A family member's generic unit (key, symbol), whose object must be loaded with
    this unit's (backends/kernel_families.py)."""

    @property
    def runtime_declarations(self) -> tuple[str, ...]:
        """The unit's `declare` lines of the device runtime (the host must define it)."""
        if not self.text:
            return self.reused_runtime
        return tuple(
            line
            for line in self.text.splitlines()
            if line.startswith("declare ") and f'@"{RUNTIME_PREFIX}' in line
        )

    @property
    def uses_runtime(self) -> bool:
        return '@"__lamina_device_' in self.text


@dataclass
class Split:
    host: str
    kernels: list[KernelUnit]
    constants: dict[str, bytes] = field(default_factory=dict)
    """Blob symbol → bytes, for every large constant the host declares."""
    declarations: dict[str, str] = field(default_factory=dict)
    """Kernel (its name in the module) → the host's declaration of its entry."""
    message_definitions: dict[str, str] = field(default_factory=dict)
    """Message global → its definition (after `= internal constant `)."""


@dataclass
class _Parts:
    """The printed pieces of a translated module, by name."""

    header: str
    globals: dict[str, llvm_ir.GlobalVariable]
    declarations: dict[str, str]
    functions: dict[str, str]
    """Defined functions' text, in module order."""
    exported: list[str]
    metadata: dict[str, str]
    refs: dict[str, list[str]]
    host: list[str] = field(default_factory=list)
    """The host's functions, in module order: the exported ones and the internal ones
    marked `alwaysinline` (helpers of the host's own code, e.g. a profiling build's
    clock reads: they belong inlined in their callers, not in a unit of their own)."""


def _parts(ir_module: llvm_ir.Module) -> _Parts | None:
    if ir_module.namedmetadata or ir_module.get_identified_types():
        return None  # not produced by Lamina's translation: compile whole
    header = (
        f'target triple = "{ir_module.triple}"\ntarget datalayout = "{ir_module.data_layout}"\n'
    )
    parts = _Parts(header, {}, {}, {}, [], {}, {})
    for value in ir_module.globals.values():
        if isinstance(value, llvm_ir.Function):
            text = str(value)
            if value.is_declaration:
                parts.declarations[value.name] = text
                continue
            parts.functions[value.name] = text
            parts.refs[value.name] = [n for n in _REF.findall(text) if n != value.name]
            if value.linkage in ("", "external"):
                parts.exported.append(value.name)
                parts.host.append(value.name)
            elif HOST_HELPER_ATTRIBUTE in value.attributes:
                parts.host.append(value.name)
        elif isinstance(value, llvm_ir.GlobalVariable):
            parts.globals[value.name] = value
        else:
            return None
    for md in ir_module.metadata:
        parts.metadata[md.name] = str(md)
    return parts


def split_module(
    ir_module: llvm_ir.Module,
    blobs: dict[str, bytes],
    facts: str,
    reused: dict | None = None,
    roots: Sequence[str] | None = None,
    scopes: dict[str, str] | None = None,
) -> Split | None:
    """The host and kernel units of a translated module, or None to compile it whole.

    `blobs`: the detached data of the module's dense constants (global name →
    bytes; those of at least `BLOB_MIN_BYTES` are not attached to `ir_module`).
    `facts`: everything besides the text that shapes a kernel's object code
    (CPU, features, optimization level, versions); it goes into every key.
    `reused`: declared kernels compiled before (name → `kernel_reuse.Record`),
    put where their definitions would be.
    `scopes`: kernel → its family scope (`kernel_reuse.family_scopes`): units make
    families (backends/kernel_families.py) within their scope only.
    `roots`: the kernels, for a module without a host (a lowering process's,
    backends/parallel_lowering.py); by default the functions the exported ones call.
    """
    reused = reused or {}
    parts = _parts(ir_module)
    if parts is None or not (parts.exported or roots):
        return None
    exported = set(parts.host)
    if roots is None:
        roots = _roots(parts, exported, reused)
    elif any(root not in parts.functions for root in roots):
        return None
    roots = list(roots)
    constants = {
        name: f"{CONSTANT_PREFIX}{hashlib.sha256(data).hexdigest()[:32]}"
        for name, data in blobs.items()
        if len(data) >= BLOB_MIN_BYTES and name in parts.globals
    }
    units: dict[str, KernelUnit] = {}
    symbol_of: dict[str, str] = {}
    for root in roots:
        if root in reused:
            unit = _reused_unit(root, reused[root])
        else:
            unit = _kernel_unit(parts, root, set(roots) | exported, facts, constants)
        if unit is None:
            return None
        symbol_of[root] = unit.symbol
        known = units.get(unit.key)
        if known is None:
            units[unit.key] = unit
        else:
            names = (*known.names, root)
            units[unit.key] = KernelUnit(
                known.key, known.symbol, known.text, names, known.messages,
                known.message_definitions, known.reused_runtime, known.needs,
            )  # fmt: skip
    declarations = {
        root: reused[root].declaration
        if root in reused
        else _renamed(_declaration(parts.functions[root]), symbol_of)
        for root in roots
    }
    parts.declarations = {n: t for n, t in parts.declarations.items() if n not in reused}
    host = _host_unit(parts, roots, symbol_of, constants, list(units.values()), declarations)
    blob = {symbol: blobs[name] for name, symbol in constants.items()}
    definitions = {
        name: _message_definition(parts.globals[name])
        for unit in units.values()
        for name in unit.messages
    }
    kernels = list(units.values())
    if kernel_families.enabled():
        kernels = kernel_families.form(kernels, facts, KERNEL_RUNTIME_IR, scopes)
    return Split(host, kernel_families.with_needed(kernels), blob, declarations, definitions)


def _roots(parts: _Parts, exported: set[str], reused: dict) -> list[str]:
    """The kernels: the functions (defined or reused) the host's call, in order."""
    roots: list[str] = []
    for name in parts.host:
        for callee in parts.refs[name]:
            if callee in roots or callee in exported:
                continue
            if callee in parts.functions or callee in reused:
                roots.append(callee)
    return roots


def _reused_unit(root: str, record) -> KernelUnit:
    """A kernel compiled before (a `kernel_reuse.Record`): no text, its object is cached."""
    return KernelUnit(
        record.unit_key, record.symbol, "", (root,), (), record.messages_for(root),
        tuple(record.runtime), tuple(tuple(n) for n in getattr(record, "family", ())),
    )  # fmt: skip


def _message_definition(gv: llvm_ir.GlobalVariable) -> str:
    return str(gv).partition(" = internal constant ")[2]


def _closure(parts: _Parts, root: str, stop: set[str]) -> list[str] | None:
    """`root` and the defined functions it reaches, in module order; None if it reaches `stop`."""
    seen = {root}
    stack = [root]
    while stack:
        for callee in parts.refs[stack.pop()]:
            if callee in seen or callee not in parts.functions:
                continue
            if callee in stop:
                return None
            seen.add(callee)
            stack.append(callee)
    return [name for name in parts.functions if name in seen]


def _kernel_unit(
    parts: _Parts, root: str, stop: set[str], facts: str, constants: dict[str, str]
) -> KernelUnit | None:
    functions = _closure(parts, root, stop - {root})
    if functions is None:
        return None
    rename = {root: _PLACEHOLDER}
    for i, name in enumerate(n for n in functions if n != root):
        rename[name] = f"__lamina_kf{i}"
    # Lists in first-reference order; dicts as ordered sets (a kernel refers to its
    # globals again and again: list membership made this quadratic).
    used_globals: dict[str, None] = {}
    declared: dict[str, None] = {}
    for name in functions:
        for ref in parts.refs[name]:
            if ref in parts.globals:
                used_globals.setdefault(ref, None)
            elif ref in parts.declarations:
                declared.setdefault(ref, None)
    lines = []
    constant = 0
    messages: list[str] = []
    blob_symbols: set[str] = set()  # the blob symbols `rename` maps to so far
    for name in used_globals:
        gv = parts.globals[name]
        if name.startswith(MESSAGE_PREFIX):
            rename[name] = f"{_PLACEHOLDER}_m{len(messages)}"
            messages.append(name)
            lines.append(f'@"{name}" = external constant i8')
        elif name in constants:
            if constants[name] not in blob_symbols:
                lines.append(_blob_declaration(constants[name], gv))
            rename[name] = constants[name]
            blob_symbols.add(constants[name])
        elif gv.linkage in ("internal", "private") and gv.initializer is not None:
            rename[name] = f"__lamina_kc{constant}"
            constant += 1
            lines.append(str(gv))
        else:
            lines.append(_external_global(gv))
    lines += [parts.declarations[name] for name in declared]
    bodies = [parts.functions[name] for name in functions]
    bodies[functions.index(root)] = _exported_definition(parts.functions[root])
    if messages:
        bodies = [_TYPED_MESSAGE.sub(r"ptr \1", body) for body in bodies]
    body, metadata = _renumbered_metadata(bodies, parts.metadata)
    text = _renamed("\n".join([parts.header, *lines, "", *body, *metadata, ""]), rename)
    key = hashlib.sha256(f"{facts}\n{KERNEL_RUNTIME_IR}\n{text}".encode()).hexdigest()
    symbol = f"{KERNEL_PREFIX}{key[:32]}"
    text = text.replace(f'@"{_PLACEHOLDER}', f'@"{symbol}')  # the entry and its messages
    return KernelUnit(key, symbol, _helpers_named(text, rename), (root,), tuple(messages))


def _helpers_named(text: str, rename: dict[str, str]) -> str:
    """The unit's text with its helpers (parallel bodies, OpenMP wrappers) named
    as in the module again, once the key is computed from the canonical text:
    they are internal to the unit's object, so their names only show in a
    profiler (`perf report`: `te_fused_matmul_add_relu_..._loop_par0_omp`
    rather than `__lamina_kf1` in every kernel). A kernel reused from the
    cache keeps the names of the model that compiled it first, which name the
    same fused ops and shape."""
    for name, canonical in rename.items():
        if canonical.startswith("__lamina_kf"):
            text = text.replace(f'@"{canonical}"', f'@"{name}"')
    return text


def _external_global(gv: llvm_ir.GlobalVariable) -> str:
    kind = "constant" if gv.global_constant else "global"
    align = f", align {gv.align}" if gv.align else ""
    return f'@"{gv.name}" = external {kind} {gv.value_type}{align}'


def _blob_declaration(symbol: str, gv: llvm_ir.GlobalVariable) -> str:
    """A constant that lives in the blob: an external symbol (globals are reached through
    opaque pointers, so its declared type does not matter to its users)."""
    return f'@"{symbol}" = external constant {gv.value_type}, align {BLOB_ALIGN}'


def _exported_definition(text: str) -> str:
    """A kernel entry's definition with external linkage (the host calls it from another
    object), without `noinline`: whether the host may inline it (backends/inlining.py)
    depends on the host, and nothing in its unit calls it."""
    first, _, rest = text.partition("\n")
    for linkage in ("define internal ", "define private "):
        if first.startswith(linkage):
            first = "define " + first[len(linkage) :]
    return first.replace(" noinline ", " ") + "\n" + rest


def _declaration(text: str) -> str:
    """`declare ...` for a defined function (its definition's first line, without linkage)."""
    first = _exported_definition(text).split("\n", 1)[0]
    return "declare " + first[len("define ") :]


def _renamed(text: str, rename: dict[str, str]) -> str:
    def replace(match: re.Match[str]) -> str:
        new = rename.get(match.group(1))
        return match.group(0) if new is None else f'@"{new}"'

    return _REF.sub(replace, text)


def _renumbered_metadata(
    bodies: list[str], metadata: dict[str, str]
) -> tuple[list[str], list[str]]:
    """The bodies with their metadata renumbered 0, 1, ... in order of use, and the nodes."""
    order: dict[str, str] = {}
    queue: list[str] = []

    def number(match: re.Match[str]) -> str:
        old = match.group(1)
        if old not in order:
            order[old] = str(len(order))
            queue.append(old)
        return f"!{order[old]}"

    bodies = [_MD.sub(number, body) if "!" in body else body for body in bodies]
    nodes = []
    while queue:
        old = queue.pop(0)
        line = metadata[old]
        head, _, rest = line.partition("=")
        nodes.append(f"!{order[old]} ={_MD.sub(number, rest)}")
    return bodies, nodes


def _host_unit(
    parts: _Parts,
    roots: list[str],
    symbol_of: dict[str, str],
    constants: dict[str, str],
    kernels: list[KernelUnit],
    declarations: dict[str, str],
) -> str:
    """The host functions, every global (large constants as external blob symbols), the
    kernels' messages, the declarations, and a declaration of every kernel entry."""
    rename = {**symbol_of, **constants}
    used = {ref for name in parts.host for ref in parts.refs[name]}
    lines = [parts.header]
    declared = set()
    for name, gv in parts.globals.items():
        if name in constants:
            if constants[name] not in declared:  # two constants of the same bytes: one symbol
                declared.add(constants[name])
                lines.append(_blob_declaration(name, gv))
        elif gv.linkage not in ("internal", "private"):
            # One definition, in the host's object; the kernels' objects refer to it.
            lines.append(str(gv).replace(" = weak global ", " = global ", 1))
        elif name in used:
            lines.append(str(gv))
    for unit in kernels:
        definitions = unit.message_definitions or [
            _message_definition(parts.globals[name]) for name in unit.messages
        ]
        for i, definition in enumerate(definitions):
            lines.append(f'@"{unit.symbol}_m{i}" = constant {definition}')
    lines += _host_declarations(parts, kernels)
    lines += sorted(set(declarations.values()))
    bodies = [parts.functions[name] for name in parts.host]
    needed = _metadata_closure(bodies, parts.metadata)
    text = "\n".join([*lines, "", *bodies, *(parts.metadata[n] for n in needed), ""])
    return _renamed(text, rename)


def _host_declarations(parts: _Parts, kernels: list[KernelUnit]) -> list[str]:
    """What the host declares: the functions its own code calls, and the device
    runtime (it defines it for the kernels) if it or a kernel uses it. Not the
    kernels' other callees, so the host's text is the same whether a kernel was
    lowered here or reused (backends/kernel_reuse.py)."""
    used = {ref for name in parts.host for ref in parts.refs[name]}
    runtime = {
        line.split('@"', 1)[1].split('"', 1)[0]: line
        for unit in kernels
        for line in unit.runtime_declarations
    }
    lines = [
        text
        for name, text in parts.declarations.items()
        if name in used or name.startswith(RUNTIME_PREFIX)
    ]
    lines += [text for name, text in runtime.items() if name not in parts.declarations]
    return lines


def _metadata_closure(bodies: Iterable[str], metadata: dict[str, str]) -> list[str]:
    needed: list[str] = []
    queue = [m for body in bodies for m in _MD.findall(body)]
    while queue:
        name = queue.pop()
        if name in needed or name not in metadata:
            continue
        needed.append(name)
        queue += _MD.findall(metadata[name].partition("=")[2])
    return sorted(needed, key=int)


__all__ = [
    "BLOB_ALIGN",
    "BLOB_MIN_BYTES",
    "CONSTANT_PREFIX",
    "KERNEL_PREFIX",
    "KERNEL_RUNTIME_IR",
    "KernelUnit",
    "Split",
    "split_module",
]
