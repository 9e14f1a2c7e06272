"""Code generation: xDSL's llvm dialect → llvmlite → optimized native code.

This is the `build` phase's back end (docs/design.md §4). Input: a module in phase
`build` (only `builtin.module` and `llvm.*` ops, as `lower-to-llvm` leaves
it). Steps, each timed in `CompileTimings`:

1. translate: xDSL's `xdsl.backend.llvm.convert.convert_module` (llvm dialect
   → llvmlite `ir.Module`), then a few fix-ups the translator does not do
   (function attributes such as `nounwind`);
2. parse + verify: `llvmlite.binding.parse_assembly` and `ModuleRef.verify`;
3. optimize: LLVM's new pass manager at O3 with loop and SLP vectorization,
   for the CPU of the module's target (`CodeTarget.of`: the `isa` option,
   target/cpu_facts.py; by default the host's CPU name and features, so AVX2,
   AVX-512 and FMA are used where the machine has them);
4. JIT: an MCJIT engine, with a TargetMachine of its own. llvmlite crashes
   (SIGSEGV) when one TargetMachine is shared by two engines,
   so `_target_machine()` makes a new one every time. Code for features the
   host lacks is refused first (`check_runnable`): a clear error, never SIGILL.

Compiled modules are cached by a content hash of the printed llvm-dialect
module: compiling the same program twice in one process returns the same
`CompiledModule` (and keeps its engine alive for the life of the process).

Ahead-of-time: `emit_llvm_ir`, `emit_object` and `build_shared_library`.
The C ABI of every generated function is the one `lower-to-llvm` produces::

    void NAME(const T0* arg0, ..., T* out0, ..., <scalars by value>);

Every buffer is a bare pointer to its first element, row-major and
contiguous (the memref's static shape *is* the physical layout); output
buffers are passed by the caller (destination-passing style), index values
are `int64_t`.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import llvmlite.binding as llvm
import llvmlite.ir as llvm_ir
from xdsl.backend.llvm.convert import convert_module
from xdsl.dialects import llvm as llvm_dialect
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.utils.exceptions import LLVMTranslationException

from lamina.backends import compile_worker, jit_symbols
from lamina.backends.inlining import bound_inlining
from lamina.backends.llvm.binary_constants import attach_bytes, detached_dense_globals
from lamina.backends.llvm.conversion import LOOP_KIND_ATTR
from lamina.backends.llvm.device_runtime import link_device_runtime
from lamina.backends.llvm.fast_math import canonical_fast_math_flags
from lamina.backends.llvm.translate_dispatch import install as install_translate_dispatch
from lamina.core.diagnostics import Diagnostic, DiagnosticError
from lamina.runtime import cpu_features, native_setup
from lamina.runtime.env import env_flag

if TYPE_CHECKING:  # kernel_split imports this module
    from lamina.backends.kernel_split import Split

install_translate_dispatch()  # xDSL's translator finds each op's handler by its class

OPT_LEVEL = compile_worker.OPT_LEVEL
"""LLVM optimization level used for JIT and ahead-of-time code."""

FUNCTION_ATTRIBUTES = ("nounwind",)
"""Attributes added to every defined function (generated code never unwinds)."""


class CodegenError(DiagnosticError):
    """Code generation failed: an op the translator cannot handle, invalid LLVM IR, a linker error."""


@dataclass
class CompileTimings:
    """Seconds spent in each step of `compile_module` (0 for steps that did not run)."""

    translate: float = 0.0
    parse_verify: float = 0.0
    optimize: float = 0.0
    jit: float = 0.0
    build_wall: float = 0.0
    """Wall time of the parallel build of a module compiled in units (parse_verify,
    optimize and jit then share it in proportion to their CPU time); 0 for a module
    compiled whole."""
    build_cpu: float = 0.0
    """CPU time of that build, summed over its threads (÷ build_wall: cores used)."""
    kernels: dict[str, str] = field(default_factory=dict)
    """Kernel symbol → "built", "memory" or "disk" (backends/kernel_cache.py)."""

    @property
    def total(self) -> float:
        return self.translate + self.parse_verify + self.optimize + self.jit

    def as_dict(self) -> dict[str, float]:
        return {
            "translate": self.translate,
            "parse_verify": self.parse_verify,
            "optimize": self.optimize,
            "jit": self.jit,
            "total": self.total,
        }


# ---------------------------------------------------------------------------
# LLVM set-up
# ---------------------------------------------------------------------------

NUM_THREADS_ENV = native_setup.NUM_THREADS_ENV
_libraries = native_setup.libraries  # the same list: abi.py and the disk cache read it
set_num_threads = native_setup.set_num_threads
get_max_threads = native_setup.get_max_threads


def _ensure_llvm() -> None:
    """Initialize the native target once and load the libraries generated code calls.

    The set-up lives in `native_setup` so that a disk-cache hit can do it
    without importing this module.
    """
    native_setup.ensure_native()


def register_library(path: str | os.PathLike[str]) -> None:
    """Make an external library's symbols callable from generated code.

    For targets whose kernels call a library (e.g. a CBLAS): the JIT resolves
    the library's symbols from then on, and `build_shared_library` links it.
    """
    try:
        native_setup.register_library(path)
    except native_setup.LibraryLoadError as err:
        raise CodegenError(f"codegen: {err}") from None


def uses_openmp(module: ModuleOp) -> bool:
    """Does the code call libgomp (its own functions, or a kernel reused from the cache)?"""
    from lamina.backends import kernel_reuse

    if any(r.openmp for r in kernel_reuse.reused_records(module).values()):
        return True
    return any(
        isinstance(op, llvm_dialect.FuncOp) and op.sym_name.data.startswith("GOMP_")
        for op in module.ops
    )


@dataclass(frozen=True)
class CodeTarget:
    """The CPU code is generated for: what LLVM's TargetMachine and the keys need."""

    cpu: str
    """LLVM's CPU name (`znver4`, `haswell`, ...)."""
    features: str
    """LLVM's feature string (the host's flags for the host CPU; "" for a named CPU)."""
    vector_bits: int | None
    """The vector width functions prefer (`vector_width_attributes`); None: the CPU's own."""
    required: tuple[str, ...] = ()
    """The instruction-set features the code may use (`cpu_features.required`)."""

    @staticmethod
    def of(module: ModuleOp | None = None, cpu: str | None = None) -> CodeTarget:
        """The module's target CPU (its `lamina.targets` facts: the `isa` option, default
        the host), or LLVM CPU `cpu` with its default features (portable AOT code)."""
        from lamina.target.cpu_facts import KNOWN_CPUS, llvm_features
        from lamina.target.registry import module_facts

        if cpu is not None:
            return CodeTarget(cpu, "", None, tuple(cpu_features.required(KNOWN_CPUS.get(cpu, ()))))
        facts = module_facts(module if module is not None else ModuleOp([]))
        return CodeTarget(
            facts.cpu_name,
            llvm_features(facts),
            facts.vector_bits,
            tuple(cpu_features.required(facts.features)),
        )

    @property
    def key(self) -> str:
        """What of the target shapes the code, for cache keys."""
        return f"cpu={self.cpu}\nfeatures={self.features}\nvector_bits={self.vector_bits}"


def check_runnable(target: CodeTarget) -> None:
    """Refuse to load code for CPU features this host lacks (it would die of SIGILL):
    `cpu_features.HostFeatureError`, a user error in every tool."""
    cpu_features.check_host(target.required, f"code built for CPU '{target.cpu}'")


def _target_machine(*, jit: bool, target: CodeTarget) -> llvm.TargetMachine:
    """A fresh TargetMachine for `target`. Never share one across MCJIT engines."""
    _ensure_llvm()
    return compile_worker.target_machine(target.cpu, target.features, jit=jit)


# ---------------------------------------------------------------------------
# Steps
# ---------------------------------------------------------------------------


def _check_build_phase_ops(module: ModuleOp) -> None:
    """Only llvm.func / llvm.mlir.global may sit at the top level (what the translator accepts)."""
    bad = [
        op for op in module.ops if not isinstance(op, llvm_dialect.FuncOp | llvm_dialect.GlobalOp)
    ]
    if bad:
        raise CodegenError(
            Diagnostic(
                f"codegen: top-level '{op.name}' cannot be translated to LLVM IR "
                "(expected only llvm.func and llvm.mlir.global; run lower-to-llvm first)",
                op,
            )
            for op in bad
        )


def translate(
    module: ModuleOp, tm: llvm.TargetMachine | None = None, *, bits: int | None = 0
) -> llvm_ir.Module:
    """llvm dialect → llvmlite IR module, with host triple and data layout.

    Functions prefer vectors of `bits` (`vector_width_attributes`; 0: the
    module's target's width; None: the CPU's own, for a portable `cpu`).
    """
    return _translate(module, tm, bits=bits)[0]


def _translate(
    module: ModuleOp,
    tm: llvm.TargetMachine | None,
    *,
    bits: int | None = 0,
    attach_limit: int | None = None,
) -> tuple[llvm_ir.Module, dict[str, bytes]]:
    """`translate`, and the detached constants' bytes. With `attach_limit`, constants of
    that many bytes or more are not attached (they go to a blob, runtime/constant_blob.py)."""
    _check_build_phase_ops(module)
    if tm is None or bits == 0:
        target = CodeTarget.of(module)
        tm = tm or _target_machine(jit=False, target=target)
        bits = target.vector_bits if bits == 0 else bits
    try:
        with detached_dense_globals(module) as blobs:
            ir_module = convert_module(
                module, fallback_target_triple=tm.triple, data_layout=str(tm.target_data)
            )
    except (NotImplementedError, LLVMTranslationException, KeyError) as err:
        raise CodegenError(_translation_diagnostic(module, err)) from None
    canonical_fast_math_flags(ir_module)
    if attach_limit is None:
        attach_bytes(ir_module, blobs)
    else:
        attach_bytes(ir_module, {n: d for n, d in blobs.items() if len(d) < attach_limit})
    for fn in ir_module.functions:
        if not fn.is_declaration:
            for attr in FUNCTION_ATTRIBUTES:
                fn.attributes.add(attr)
            if bits is not None:
                # llvmlite only accepts enum attributes; string ones go in verbatim.
                set.update(fn.attributes, vector_width_attributes(bits))
    for func in _internal_functions(module):
        ir_module.get_global(func.sym_name.data).linkage = "internal"
    _pass_through_attributes(module, ir_module)
    _attach_loop_metadata(module, ir_module, bits)
    bound_inlining(ir_module)  # no function grows with the graph (backends/inlining.py)
    return ir_module, blobs


def vector_width_attributes(bits: int) -> tuple[str, ...]:
    """Function attributes that make LLVM use the target's full vector width (`bits`).

    Without them LLVM follows the CPU's tuning, which on several AVX-512
    CPUs (Intel's `prefer-256-bit`) keeps loops at 256 bits although the
    peers run 512-bit kernels there; the width comes from `cpu_facts`.
    """
    return (f'"prefer-vector-width"="{bits}"', f'"min-legal-vector-width"="{bits}"')


def _pass_through_attributes(module: ModuleOp, ir_module: llvm_ir.Module) -> None:
    """Copy the `passthrough` function attributes (`["alwaysinline"]`), which xDSL's
    translator ignores, onto the defined functions. Only attributes without a value."""
    for op in module.ops:
        if isinstance(op, llvm_dialect.FuncOp) and op.body.blocks and op.passthrough:
            fn = ir_module.get_global(op.sym_name.data)
            for attr in op.passthrough.data:
                if isinstance(attr, StringAttr):
                    fn.attributes.add(attr.data)


def _internal_functions(module: ModuleOp) -> list[llvm_dialect.FuncOp]:
    """Defined functions with internal/private linkage (the translator ignores linkage)."""
    return [
        op
        for op in module.ops
        if isinstance(op, llvm_dialect.FuncOp)
        and op.body.blocks
        and op.linkage.linkage.data in ("internal", "private")
    ]


def exported_functions(module: ModuleOp) -> dict[str, llvm_dialect.FuncOp]:
    """The functions a compiled module exports (defined, not internal), by name."""
    internal = set(_internal_functions(module))
    return {
        op.sym_name.data: op
        for op in module.ops
        if isinstance(op, llvm_dialect.FuncOp) and op.body.blocks and op not in internal
    }


LOOP_METADATA: dict[str, tuple[tuple[str, int | None], ...]] = {
    "vectorized": (
        ("llvm.loop.vectorize.enable", 1),
        ("llvm.loop.unroll.disable", None),
        ("llvm.loop.vectorize.followup_vectorized", None),
    ),
    "vectorized-tail": (("llvm.loop.vectorize.enable", 1),),
    "vectorized-short": (("llvm.loop.vectorize.enable", 1), ("llvm.loop.unroll.disable", None)),
    "unrolled": (("llvm.loop.unroll.full", None),),
}
"""`lamina.loop_kind` on a back edge → the `!llvm.loop` properties it requests.

A `vectorized` loop (a constant trip count in whole vectors; one with a
remainder is `vectorized-tail`, see `lower-to-llvm`) is kept from being
unrolled until it is vectorized:
LLVM fully unrolls loops of short constant trip count (a 16-lane channel
block) before the loop vectorizer runs, which then vectorizes the
enclosing loop instead, with gathers (measured: Winograd's input transform
8x slower). The empty `followup_vectorized` gives the vectorized loop none
of these properties, so LLVM unrolls it as usual (a register-blocked row
of two vectors must become straight-line code to stay in registers).
A `vectorized-short` loop (fewer iterations than one whole vector: the 7
columns of a 7x7 layout transform) is never unrolled: LLVM unrolled it and the
constant loops around it (7 rows, 16 channels) into one block of 784 scalar
loads and stores per channel block, where the SLP vectorizer and both
instruction schedulers are quadratic: 4-6 s of CPU for ShuffleNetV2's
1x1024x7x7 transform, 0.2 s with the loop kept (docs/compile-speed.md)."""


def _attach_loop_metadata(
    module: ModuleOp, ir_module: llvm_ir.Module, bits: int | None = None
) -> None:
    """Put `!llvm.loop` metadata on back edges that carry `lamina.loop_kind`.

    The translator creates one llvmlite block per xDSL block, in order, so a
    block's terminator is found by position. Only innermost loops without
    calls (innermost once their `unrolled` loops are unrolled) get the hint:
    LLVM can act on nothing else, and a forced hint it cannot honour prints a
    warning on stderr. A `vectorized` loop of exactly
    one vector of `bits` (`_one_vector_lanes`) also gets its width and
    interleave count (`ONE_VECTOR_METADATA`).
    """
    for func in module.ops:
        if not isinstance(func, llvm_dialect.FuncOp) or not func.body.blocks:
            continue
        ll_func = ir_module.get_global(func.sym_name.data)
        blocks = list(func.body.blocks)
        index: dict | None = None  # block -> position, built once per function
        for position, block in enumerate(blocks):
            kind = block.last_op.attributes.get(LOOP_KIND_ATTR) if block.last_op else None
            if not isinstance(kind, StringAttr) or kind.data not in LOOP_METADATA:
                continue
            if index is None:
                index = {block: i for i, block in enumerate(blocks)}
            if not _is_simple_innermost_loop(blocks, position, index):
                continue
            lanes = None
            if kind.data == "vectorized" and bits is not None:
                lanes = _one_vector_lanes(blocks, position, bits, index)
            ll_block = ll_func.blocks[position]
            loop_id = _loop_id(ir_module, kind.data, lanes)
            ll_block.instructions[-1].set_metadata("llvm.loop", loop_id)


ONE_VECTOR_METADATA: tuple[str, ...] = ("llvm.loop.vectorize.width", "llvm.loop.interleave.count")
"""What a `vectorized` loop of exactly one vector also carries: its lanes as the
width, and 1 as the interleave count -- what LLVM's cost model chose anyway
(the object code is the same), so the loop vectorizer plans one width instead of
costing every one. A depthwise conv2d read in place (kernels/conv_blocked.py) has
70-100 such loops after LLVM fully unrolls the window's taps around them, and
the vectorizer was a third of its O3 time (docs/compile-speed.md)."""


def _one_vector_lanes(blocks: list, latch: int, bits: int, index: dict) -> int | None:
    """The lanes of the loop closed by `blocks[latch]` when it runs exactly one vector
    of `bits`: a constant trip count (`for iv = lb; iv < ub; iv += step`, the shape
    `lower-to-llvm` builds) equal to `bits` over the bit width of the one scalar
    type its loads and stores access. None otherwise. `index`: block -> position."""
    first = index[blocks[latch].last_op.successors[0]]
    trips = _constant_trips(blocks, first, latch)
    if trips is None:
        return None
    types = set()
    load, store = llvm_dialect.LoadOp, llvm_dialect.StoreOp
    for block in blocks[first : latch + 1]:
        for op in block.ops:
            kind = type(op)  # class comparisons: isinstance is most of this walk
            if kind is load:
                types.add(op.results[0].type)
            elif kind is store:
                types.add(op.operands[0].type)
    if len(types) != 1:
        return None
    width = _scalar_bits(types.pop())
    return trips if width and bits % width == 0 and bits // width == trips else None


def _scalar_bits(type_) -> int | None:
    """The bit width of a float or integer type, None for anything else."""
    from xdsl.dialects.builtin import Float32Type, Float64Type, IntegerType

    if isinstance(type_, Float32Type):
        return 32
    if isinstance(type_, Float64Type):
        return 64
    if isinstance(type_, IntegerType) and type_.width.data >= 8:
        return type_.width.data
    return None


def _constant_trips(blocks: list, first: int, last: int) -> int | None:
    """The trip count of the lowered loop `blocks[first..last]` (`ForLowering`: the
    header compares its first argument `slt` a constant; the latch adds a constant to
    it; the block placed before the header enters it with a constant), or None."""
    header, latch = blocks[first], blocks[last]
    if first == 0 or not header.args or header.first_op is None:
        return None
    iv = header.args[0]
    compare = header.first_op
    if not isinstance(compare, llvm_dialect.ICmpOp) or compare.lhs is not iv:
        return None
    if compare.predicate.value.data != 2:  # slt
        return None
    back = latch.last_op
    if not isinstance(back, llvm_dialect.BrOp) or not back.arguments:
        return None
    step_op = back.arguments[0].owner
    if not isinstance(step_op, llvm_dialect.AddOp) or step_op.lhs is not iv:
        return None
    entry = blocks[first - 1].last_op
    if not isinstance(entry, llvm_dialect.BrOp) or entry.successor is not header:
        return None
    if not entry.arguments:
        return None
    lb, ub, step = (_constant(v) for v in (entry.arguments[0], compare.rhs, step_op.rhs))
    if lb is None or ub is None or step is None or step <= 0:
        return None
    return max(0, -(-(ub - lb) // step))


def _constant(value) -> int | None:
    """The value of an `llvm.mlir.constant` integer, else None."""
    from xdsl.dialects.builtin import IntegerAttr

    owner = value.owner
    if isinstance(owner, llvm_dialect.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def _is_simple_innermost_loop(blocks: list, latch: int, index: dict | None = None) -> bool:
    """Does the loop closed by `blocks[latch]` contain no other loop (but `unrolled`
    ones, `_unrolled_latch`) and no call?

    Lowered loops are laid out contiguously (header, body..., latch), so the
    loop is `blocks[header..latch]`; a nested loop shows up as another back
    edge (a branch to an earlier block) inside that range. `index`: block ->
    position (built here when not given).
    """
    if index is None:
        index = {block: i for i, block in enumerate(blocks)}
    header = index[blocks[latch].last_op.successors[0]]
    call = llvm_dialect.CallOp
    for i in range(header, latch + 1):
        block = blocks[i]
        if any(type(op) is call for op in block.ops):  # llvm.call has no subclass
            return False
        if i != latch and block.last_op is not None:
            if any(index.get(succ, i + 1) <= i for succ in block.last_op.successors):
                if not _unrolled_latch(block):
                    return False
    return True


def _unrolled_latch(block) -> bool:
    """Is `block` the latch of an `unrolled` loop? LLVM's full unroller removes such
    a loop (`llvm.loop.unroll.full`) before the loop vectorizer runs, so the loop
    around it is innermost by then: a depthwise convolution's lane loop holding
    its window's taps (schedule/border_split.py, `lanes_outside_taps`)."""
    kind = block.last_op.attributes.get(LOOP_KIND_ATTR)
    return isinstance(kind, StringAttr) and kind.data == "unrolled"


def _loop_id(ir_module: llvm_ir.Module, kind: str, lanes: int | None = None) -> llvm_ir.MDValue:
    """A fresh self-referential loop ID `!N = !{!N, !{!"<property>", ...}}`; with `lanes`,
    also `ONE_VECTOR_METADATA` (width `lanes`, interleave count 1)."""
    props = []
    for name, value in LOOP_METADATA[kind]:
        operands: list[object] = [llvm_ir.MetaDataString(ir_module, name)]
        if value is not None:
            operands.append(llvm_ir.Constant(llvm_ir.IntType(1), value))
        props.append(ir_module.add_metadata(operands))
    if lanes is not None:
        for name, count in zip(ONE_VECTOR_METADATA, (lanes, 1), strict=True):
            string = llvm_ir.MetaDataString(ir_module, name)
            props.append(
                ir_module.add_metadata([string, llvm_ir.Constant(llvm_ir.IntType(32), count)])
            )
    loop_id = ir_module.add_metadata([*props, _fresh_token(ir_module)])
    loop_id.operands = (loop_id, *loop_id.operands[: len(props)])
    return loop_id


def _fresh_token(ir_module: llvm_ir.Module) -> llvm_ir.MetaDataString:
    """A unique string, so llvmlite does not merge two loops' IDs into one node."""
    return llvm_ir.MetaDataString(ir_module, f"lamina.loop.{len(ir_module.metadata)}")


def _translation_diagnostic(module: ModuleOp, err: Exception) -> Diagnostic:
    """Point a translator failure ('Conversion not implemented for op: X') at the first such op."""
    if isinstance(err, KeyError):
        return Diagnostic(
            "codegen: a value is used in a block placed before its definition "
            "(xDSL's translator needs blocks in dominance order)",
            module,
        )
    message = str(err)
    for op in module.walk():
        if message.endswith(f": {op.name}"):
            return Diagnostic(f"codegen: cannot translate '{op.name}' to LLVM IR", op)
    return Diagnostic(f"codegen: {message}", module)


def parse_and_verify(ir_module: llvm_ir.Module) -> llvm.ModuleRef:
    """Parse the textual IR into LLVM and run LLVM's verifier."""
    try:
        ref = llvm.parse_assembly(str(ir_module))
        ref.verify()
    except RuntimeError as err:
        raise CodegenError(f"codegen: LLVM rejected the generated IR: {err}") from None
    return ref


optimize = compile_worker.optimize
"""LLVM's O3 pipeline and the cleanup after it (backends/compile_worker.py, where units
are built; a module compiled whole, `emit_assembly` etc. are optimized here)."""
_cleanup = compile_worker.cleanup


def _optimized_ref(
    module: ModuleOp,
    tm: llvm.TargetMachine,
    timings: CompileTimings,
    *,
    bits: int | None = 0,
    ir_module: llvm_ir.Module | None = None,
):
    """Translate (unless given `ir_module`), parse, link the runtime and optimize, timed."""
    if ir_module is None:
        start = time.perf_counter()
        ir_module = translate(module, tm, bits=bits)
        timings.translate = time.perf_counter() - start
    start = time.perf_counter()
    ref = parse_and_verify(ir_module)
    link_device_runtime(ref)  # per-device allocators and counters, if the code uses them
    timings.parse_verify = time.perf_counter() - start
    start = time.perf_counter()
    optimize(ref, tm)
    timings.optimize = time.perf_counter() - start
    return ref


# ---------------------------------------------------------------------------
# JIT
# ---------------------------------------------------------------------------


@dataclass(eq=False)
class CompiledModule:
    """A module JIT-compiled into this process. Keep it alive while its functions are called."""

    key: str
    engine: llvm.ExecutionEngine
    target_machine: llvm.TargetMachine
    llvm_module: llvm.ModuleRef
    signatures: dict[str, llvm_dialect.LLVMFunctionType]
    """Type of every function the module exports (defined, not internal), by name."""
    timings: CompileTimings = field(default_factory=CompileTimings)
    object_code: bytes | None = None
    """The object file MCJIT loaded (what the disk cache stores, runtime/cache.py); for a
    module compiled in units, all their objects and the constant blob, packed."""
    unit_modules: list[llvm.ModuleRef | None] = field(default_factory=list)
    """The optimized host and kernel modules of a module compiled in units (None: a kernel
    whose object came from the disk cache)."""
    target: CodeTarget | None = None
    """The CPU the code was compiled for (None: the host's)."""

    def get_function_address(self, name: str) -> int:
        """Address of the jitted function `name`; KeyError if the module defines no such function."""
        if name not in self.signatures:
            known = ", ".join(sorted(self.signatures)) or "none"
            raise KeyError(f"no function '{name}' in the compiled module (defined: {known})")
        address = self.engine.get_function_address(name)
        if not address:
            raise KeyError(f"function '{name}' has no address after JIT compilation")
        return address

    @property
    def optimized_ir(self) -> str:
        """The LLVM IR after O3, for inspection (every unit's, for a module compiled in units)."""
        if not self.unit_modules:
            return str(self.llvm_module)
        return "\n".join(
            str(ref) if ref is not None else "; a kernel loaded from the disk cache (object code)"
            for ref in self.unit_modules
        )


@dataclass(eq=False)
class UnitsModule(CompiledModule):
    """A module compiled in units (backends/kernel_split.py). Its `object_code`, every
    unit's object and the constant blob packed for the disk cache, is assembled on
    first use: most compiles never store it."""

    objects: list[bytes] = field(default_factory=list)
    constants: dict[str, bytes] = field(default_factory=dict)

    @property  # type: ignore[override]
    def object_code(self) -> bytes:
        packed = self.__dict__.get("_packed")
        if packed is None:
            packed = b"".join(self.object_code_pieces())
            self.__dict__["_packed"] = packed
        return packed

    def object_code_pieces(self) -> list[bytes | memoryview]:
        """`object_code` in pieces (the objects, the constants), none of them copied:
        what the disk cache writes (runtime/cache.py)."""
        from lamina.runtime import cache as disk
        from lamina.runtime import constant_blob

        packed = self.__dict__.get("_packed")
        if packed is not None:
            return [packed]
        return disk.pack_object_pieces(self.objects, constant_blob.pack_pieces(self.constants))

    @object_code.setter
    def object_code(self, value: bytes | None) -> None:
        self.__dict__["_packed"] = value


_cache: dict[str, CompiledModule] = {}
_cache_lock = threading.Lock()
_stats = {"hits": 0, "misses": 0}


def module_key(module: ModuleOp, target: CodeTarget | None = None) -> str:
    """Content hash of the printed llvm-dialect module (plus the CPU it is compiled for)."""
    target = target or CodeTarget.of(module)
    digest = hashlib.sha256(f"{target.key}\n{OPT_LEVEL}\n".encode())
    # Constant data is hashed as bytes: xDSL prints a dense value via a Python list.
    with detached_dense_globals(module) as blobs:
        digest.update(str(module).encode())
    for name, data in sorted(blobs.items()):
        digest.update(f"\n{name}:{len(data)}\n".encode())
        digest.update(data)
    return digest.hexdigest()


def compile_module(module: ModuleOp, *, use_cache: bool = True) -> CompiledModule:
    """JIT-compile a build-phase module for the host CPU (cached by content).

    A module compiled in units is keyed by its units (the host's text and the
    kernels' keys), which translation produces anyway: printing the whole
    llvm-dialect module only to hash it cost as much as translating it. Code
    for CPU features this host lacks (`cpu{isa=avx512}` on an AVX2 machine)
    is refused before anything is built (`check_runnable`).
    """
    target = CodeTarget.of(module)
    check_runnable(target)
    if split_enabled():
        compile_worker.prestart()  # its start-up overlaps the translation
    prepared = _prepare_units(module, target) if split_enabled() else None
    if prepared is not None and prepared.split is not None:
        key = prepared.key
    else:
        key = module_key(module, target)
    with _cache_lock:
        if use_cache and key in _cache:
            _stats["hits"] += 1
            return _cache[key]
        _stats["misses"] += 1
        compiled = _jit(module, key, target, use_cache, prepared)
        if use_cache:
            _cache[key] = compiled
        return compiled


SPLIT_ENV = "LAMINA_SPLIT_KERNELS"
"""Environment variable: `0` compiles every module as one LLVM module (no kernel units)."""


def split_enabled() -> bool:
    """Compile modules in units (one per kernel, backends/kernel_split.py)? On by default."""
    return env_flag(SPLIT_ENV, True)


@dataclass
class _Prepared:
    """A module translated and split into units (`split` None: it compiles whole)."""

    tm: llvm.TargetMachine
    target: CodeTarget
    ir_module: llvm_ir.Module
    blobs: dict[str, bytes]
    split: Split | None
    seconds: float

    @property
    def key(self) -> str:
        assert self.split is not None, "only a module compiled in units has a units key"
        digest = hashlib.sha256(f"units\n{self.target.key}\n{self.split.host}".encode())
        for unit in self.split.kernels:
            digest.update(f"\n{unit.key}".encode())
        return digest.hexdigest()


def _prepare_units(module: ModuleOp, target: CodeTarget) -> _Prepared:
    from lamina.backends import kernel_cache, kernel_reuse
    from lamina.backends.kernel_split import BLOB_MIN_BYTES, split_module

    _ensure_llvm()
    reused = kernel_reuse.reused_records(module)
    missing = jit_symbols.missing_declared_functions(module, exempt=set(reused))
    if missing:
        raise CodegenError(missing)
    start = time.perf_counter()
    tm = _target_machine(jit=True, target=target)
    ir_module, blobs = _translate(module, tm, bits=target.vector_bits, attach_limit=BLOB_MIN_BYTES)
    scopes = kernel_reuse.module_keys(module, kernel_reuse.SCOPES_ATTR)
    split = split_module(ir_module, blobs, kernel_cache.facts(target), reused, scopes=scopes)  # pyright: ignore[reportArgumentType]
    if split is None and reused:
        raise RuntimeError("a module with kernels reused before lowering did not split")
    return _Prepared(tm, target, ir_module, blobs, split, time.perf_counter() - start)


def _jit(
    module: ModuleOp,
    key: str,
    target: CodeTarget,
    use_cache: bool = True,
    prepared: _Prepared | None = None,
) -> CompiledModule:
    from lamina.backends import kernel_reuse

    _ensure_llvm()
    exempt = set(kernel_reuse.reused_records(module))
    missing = jit_symbols.missing_declared_functions(module, exempt=exempt)
    if missing:
        raise CodegenError(missing)
    timings = CompileTimings()
    tm = _target_machine(jit=True, target=target)
    ir_module = None
    if prepared is not None:
        from lamina.backends.kernel_split import BLOB_MIN_BYTES

        tm, ir_module, timings.translate = prepared.tm, prepared.ir_module, prepared.seconds
        if prepared.split is not None:
            return _jit_units(module, key, prepared.split, tm, target, timings, use_cache)
        large = {n: d for n, d in prepared.blobs.items() if len(d) >= BLOB_MIN_BYTES}
        attach_bytes(ir_module, large)
    ref = _optimized_ref(module, tm, timings, bits=target.vector_bits, ir_module=ir_module)
    start = time.perf_counter()
    engine = llvm.create_mcjit_compiler(ref, tm)
    objects: list[bytes] = []  # the object code, to check its undefined symbols
    engine.set_object_cache(lambda _, obj: objects.append(bytes(obj)), lambda _: None)
    engine.finalize_object()
    names = jit_symbols.unresolved(objects)
    if names:  # calling the code would jump to address 0
        raise CodegenError(jit_symbols.unresolved_diagnostic(names))
    engine.run_static_constructors()
    timings.jit = time.perf_counter() - start
    signatures = {name: op.function_type for name, op in exported_functions(module).items()}
    code = objects[0] if len(objects) == 1 else None
    return CompiledModule(key, engine, tm, ref, signatures, timings, code, target=target)


def _jit_units(
    module: ModuleOp, key: str, split, tm, target: CodeTarget, timings, use_cache: bool
) -> CompiledModule:
    """Compile a split module (backends/kernel_split.py): kernels from the kernel cache or
    built in parallel with the host unit, all loaded into one engine with the constants."""
    from lamina.backends import kernel_cache, kernel_reuse
    from lamina.runtime import constant_blob

    built = kernel_cache.build_split(split, timings, target, use_memory=use_cache)  # pyright: ignore[reportArgumentType]
    kernel_reuse.record_split(module, split)
    timings.kernels = built.kernels
    start = time.perf_counter()
    constant_blob.register(split.constants)
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), tm)
    for obj in built.objects:
        engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
    engine.finalize_object()
    needed = {name for obj in built.objects for name in jit_symbols.undefined_symbols(obj)}
    names = sorted(
        n
        for n in needed
        if not llvm.address_of_symbol(n) and not engine.get_global_value_address(n)
    )
    if names:  # calling the code would jump to address 0
        raise CodegenError(jit_symbols.unresolved_diagnostic(names))
    engine.run_static_constructors()
    timings.jit += time.perf_counter() - start
    signatures = {name: op.function_type for name, op in exported_functions(module).items()}
    host = built.modules[0]
    assert host is not None, "the host unit is always compiled, never read from the cache"
    # (a `compile_worker.Deferred` when the worker built it: printed, it is the IR)
    return UnitsModule(
        key, engine, tm, host, signatures, timings, None, built.modules,
        objects=built.objects, constants=split.constants, target=target,
    )  # fmt: skip


def cache_stats() -> dict[str, int]:
    """Cache hits/misses of `compile_module` in this process, and the number of cached modules."""
    with _cache_lock:
        return {**_stats, "size": len(_cache)}


def clear_cache() -> None:
    """Forget cached modules (functions obtained from them must no longer be called)."""
    with _cache_lock:
        _cache.clear()
        _stats.update(hits=0, misses=0)


# ---------------------------------------------------------------------------
# Ahead-of-time
# ---------------------------------------------------------------------------


def emit_llvm_ir(
    module: ModuleOp,
    *,
    optimized: bool = True,
    cpu: str | None = None,
    timings: CompileTimings | None = None,
) -> str:
    """Textual LLVM IR for the host (or `cpu`); after O3 unless `optimized=False`."""
    target = CodeTarget.of(module, cpu)
    tm = _target_machine(jit=False, target=target)
    if not optimized:
        return str(translate(module, tm, bits=target.vector_bits))
    return _timed_emit(str, module, tm, timings, target)


def emit_object(
    module: ModuleOp, *, cpu: str | None = None, timings: CompileTimings | None = None
) -> bytes:
    """A relocatable (PIC) object file, as bytes.

    By default the code uses every feature of *this* machine's CPU (AVX2,
    AVX-512, FMA...); pass `cpu` (an LLVM CPU name such as `x86-64-v2`) for
    an object that also runs on older machines. `timings` receives the
    steps' times (machine-code generation in `jit`).
    """
    target = CodeTarget.of(module, cpu)
    tm = _target_machine(jit=False, target=target)
    return _timed_emit(tm.emit_object, module, tm, timings, target)


def emit_assembly(
    module: ModuleOp, *, cpu: str | None = None, timings: CompileTimings | None = None
) -> str:
    """Assembly text of the optimized module for the host (or `cpu`)."""
    target = CodeTarget.of(module, cpu)
    tm = _target_machine(jit=False, target=target)
    return _timed_emit(tm.emit_assembly, module, tm, timings, target)


def emit_bitcode(
    module: ModuleOp, *, cpu: str | None = None, timings: CompileTimings | None = None
) -> bytes:
    """LLVM bitcode of the optimized module for the host (or `cpu`), for `llc`/`clang`."""
    target = CodeTarget.of(module, cpu)
    tm = _target_machine(jit=False, target=target)
    return _timed_emit(lambda ref: ref.as_bitcode(), module, tm, timings, target)


def _timed_emit(
    emit,
    module: ModuleOp,
    tm: llvm.TargetMachine,
    timings: CompileTimings | None,
    target: CodeTarget,
):
    """Optimize `module` for `tm`, then `emit(ref)`, recording every step in `timings`."""
    timings = timings if timings is not None else CompileTimings()
    ref = _optimized_ref(module, tm, timings, bits=target.vector_bits)
    start = time.perf_counter()
    result = emit(ref)
    timings.jit = time.perf_counter() - start
    return result


def system_compiler() -> str:
    """The C compiler used to link shared libraries: $CC, else cc/gcc/clang on PATH."""
    for candidate in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if candidate and shutil.which(candidate.split()[0]):
            return candidate
    raise CodegenError(
        "codegen: building a shared library (.so) needs a system C compiler to link it, and "
        f"none was found (tried {'$CC, ' if os.environ.get('CC') else ''}cc, gcc, clang); "
        "install one (e.g. gcc) or set $CC, or build an object file (-o out.o) instead"
    )


def _aot_unit_objects(
    module: ModuleOp,
    cpu: str | None,
    timings: CompileTimings | None,
    on_split: Callable[[dict[str, bytes]], None] | None = None,
) -> tuple[list[bytes], dict[str, bytes]] | None:
    """The objects of `module`'s units (backends/kernel_split.py) for a library or an
    object file, built in parallel, and the detached constants (symbol → bytes), which
    are in none of the objects (`_weights_object`, `_weights_assembly` define them);
    None if the module does not split. `on_split(constants)` is called before the
    build (`_EmbeddedWeights.start`).

    Like a JIT compile's units (`_jit_units`), the kernels come from the kernel cache
    where it has them, under keys of their own (`kernel_cache.facts(jit=False)`:
    position-independent code), and a lowering process may have built some of them
    (`lamina-compile` lowers as `lamina.compile` does, backends/parallel_lowering.py)."""
    from lamina.backends import kernel_cache, kernel_reuse
    from lamina.backends.kernel_split import BLOB_MIN_BYTES, split_module

    timings = timings if timings is not None else CompileTimings()
    target = CodeTarget.of(module, cpu)
    tm = _target_machine(jit=False, target=target)
    start = time.perf_counter()
    reused = kernel_reuse.reused_records(module)
    ir_module, blobs = _translate(module, tm, bits=target.vector_bits, attach_limit=BLOB_MIN_BYTES)
    facts = kernel_cache.facts(target, jit=False)  # pyright: ignore[reportArgumentType]
    scopes = kernel_reuse.module_keys(module, kernel_reuse.SCOPES_ATTR)
    split = split_module(ir_module, blobs, facts, reused, scopes=scopes)  # pyright: ignore[reportArgumentType]
    del ir_module, blobs  # the split holds what the build needs (the constants by symbol)
    if split is None and reused:
        raise RuntimeError("a module with kernels reused before lowering did not split")
    if split is None:
        return None
    timings.translate = time.perf_counter() - start
    if on_split is not None:
        on_split(split.constants)
    built = kernel_cache.build_split(split, timings, target, jit=False)  # pyright: ignore[reportArgumentType]
    kernel_reuse.record_split(module, split)
    return built.objects, split.constants


WEIGHTS_SYMBOL = "lamina_weights"
"""A shared library's region for its detached constants (`build_artifact_library`):
page-aligned, zero-filled, one symbol per constant inside it. The loader maps the
weights file over it (or copies the file into it) before the first call."""

WEIGHTS_PAGE = 4096
"""Alignment and size granule of the weights region, so that a file can be mapped over
it page by page without touching anything else of the library."""


def weights_region(constants: dict[str, bytes]) -> tuple[dict[str, int], int, int]:
    """The constants' offsets in the weights file, its size and the region's (whole pages)."""
    from lamina.runtime import constant_blob

    offsets, size = constant_blob.layout({s: len(d) for s, d in constants.items()})
    return offsets, size, -(-size // WEIGHTS_PAGE) * WEIGHTS_PAGE


def write_weights(constants: dict[str, bytes], path: str | os.PathLike[str]) -> None:
    """Write the weights file: every constant at its offset (`weights_region`), the gaps
    zero. Each constant is written from its own buffer: no copy of the whole blob."""
    offsets, size, _ = weights_region(constants)
    with open(path, "wb") as f:
        for symbol, offset in sorted(offsets.items(), key=lambda item: item[1]):
            f.seek(offset)
            f.write(constants[symbol])
        f.truncate(size)


def _weights_object(constants: dict[str, bytes], tm: llvm.TargetMachine) -> bytes:
    """An object defining the weights region (in .bss: no bytes in the library) and each
    constant's symbol as an alias into it, at its offset in the weights file."""
    offsets, _, region = weights_region(constants)
    lines = [
        f'target triple = "{tm.triple}"',
        f'target datalayout = "{tm.target_data}"',
        f"@{WEIGHTS_SYMBOL} = global [{region} x i8] zeroinitializer, "
        f'section ".bss.{WEIGHTS_SYMBOL}", align {WEIGHTS_PAGE}',
    ]
    for symbol, offset in sorted(offsets.items()):
        lines.append(
            f'@"{symbol}" = hidden alias i8, getelementptr (i8, ptr @{WEIGHTS_SYMBOL}, '
            f"i64 {offset})"
        )
    ref = llvm.parse_assembly("\n".join(lines) + "\n")
    ref.verify()
    return tm.emit_object(ref)


EMBEDDED_WEIGHTS_SECTION = ".rodata.lamina_weights"
"""The read-only section of a self-contained library's (or object file's) weights."""


def _weights_assembly(constants: dict[str, bytes], weights: Path) -> str:
    """Assembly defining the constants' bytes, read by the assembler from the file
    `weights` (`write_weights`, `.incbin`): a page-aligned read-only section, each
    constant's symbol hidden, at its offset. The bytes never pass through LLVM IR."""
    offsets, size, _ = weights_region(constants)
    quoted = str(weights).replace("\\", "\\\\").replace('"', '\\"')
    region = f".L{WEIGHTS_SYMBOL}"
    lines = [
        f'\t.section {EMBEDDED_WEIGHTS_SECTION},"a",%progbits',
        f"\t.balign {WEIGHTS_PAGE}",
        f"{region}:",
        f'\t.incbin "{quoted}"',
    ]
    for symbol, offset in sorted(offsets.items()):
        lines += [
            f"\t.globl {symbol}",
            f"\t.hidden {symbol}",
            f"\t.type {symbol}, %object",
            f"\t.set {symbol}, {region} + {offset}",
            f"\t.size {symbol}, {len(constants[symbol])}",
        ]
    lines.append('\t.section .note.GNU-stack,"",%progbits')  # no executable stack
    return "\n".join(lines) + "\n"


def build_shared_library(
    module: ModuleOp,
    path: str | os.PathLike[str],
    *,
    cpu: str | None = None,
    timings: CompileTimings | None = None,
) -> Path:
    """Compile `module` to a shared library at `path` (object file → `cc -shared`, libm linked).

    The library exports every function defined in the module with the C ABI
    described in this module's docstring; `cpu` as for `emit_object`. The
    module's units (one per kernel, backends/kernel_split.py) are compiled in
    parallel and linked together, in a fixed order: the library is the same
    whatever the number of threads. The large constants (weights) never enter
    LLVM: written to a temporary file, the C compiler's assembler puts them in a
    read-only section of the library (`_weights_assembly`), which needs no
    other file at run time.
    """
    path = Path(path)
    compiler = system_compiler()  # before the (slow) compile: a missing cc fails fast
    with _temporary_directory() as tmp:
        objects, weights = _units_and_weights(module, cpu, timings, compiler, tmp)
        _link_shared(compiler, objects, path, module, directory=tmp, extra=weights)
    return path


def _units_and_weights(
    module: ModuleOp,
    cpu: str | None,
    timings: CompileTimings | None,
    compiler: str,
    directory: Path,
) -> tuple[list[bytes], list[Path]]:
    """The units' objects (one whole-module object if it does not split) and the weights'
    object file in `directory` (none if there are no detached constants), assembled by
    `compiler` on a thread while LLVM builds the units."""
    weights = _EmbeddedWeights(compiler, directory)
    try:
        built = _aot_unit_objects(module, cpu, timings, weights.start) if split_enabled() else None
        objects = built[0] if built is not None else [emit_object(module, cpu=cpu, timings=timings)]
        return objects, weights.result()
    finally:
        weights.join()  # before the directory goes, whatever failed


class _EmbeddedWeights:
    """The detached constants as an object file of their own (`_weights_assembly`): the
    weights file written and assembled (`cc -c`) on a thread, which waits for the
    assembler with the GIL released, while LLVM builds the units."""

    def __init__(self, compiler: str, directory: Path):
        self.compiler, self.directory = compiler, directory
        self.thread: threading.Thread | None = None
        self.error: BaseException | None = None
        self.path = directory / "weights.o"

    def start(self, constants: dict[str, bytes]) -> None:
        if constants:
            self.thread = threading.Thread(target=self._assemble, args=(constants,), daemon=True)
            self.thread.start()

    def _assemble(self, constants: dict[str, bytes]) -> None:
        try:
            weights = self.directory / "weights.bin"
            try:
                write_weights(constants, weights)
            except OSError as err:
                raise CodegenError(
                    f"codegen: cannot write the temporary weights file {weights}: "
                    f"{err.strerror or err}"
                ) from None
            source = self.directory / "weights.s"
            source.write_text(_weights_assembly(constants, weights))
            _run_tool(
                [*self.compiler.split(), "-c", "-o", str(self.path), str(source)],
                "assembling the weights",
            )
        except BaseException as err:  # noqa: BLE001 - raised in the building thread
            self.error = err

    def join(self) -> None:
        if self.thread is not None:
            self.thread.join()

    def result(self) -> list[Path]:
        """The weights' object file (none without constants), once assembled."""
        if self.thread is None:
            return []
        self.join()
        if self.error is not None:
            raise self.error
        return [self.path]


def build_object_file(
    module: ModuleOp,
    path: str | os.PathLike[str],
    *,
    cpu: str | None = None,
    timings: CompileTimings | None = None,
) -> Path:
    """Compile `module` to a relocatable object file at `path` (what `emit_object` returns).

    With a system C compiler at hand (`system_compiler`), built like a shared library:
    the units in parallel, the weights assembled from a temporary file
    (`_weights_assembly`), all merged into one object by a partial link (`cc -r`).
    Without one (or for a module that does not split): `emit_object`, one LLVM module
    optimized whole, weights and all.
    """
    path = Path(path)
    tools = partial_link_tools()
    if tools is None or not split_enabled():
        path.write_bytes(emit_object(module, cpu=cpu, timings=timings))
        return path
    compiler, objcopy = tools
    with _temporary_directory() as tmp:
        objects, weights = _units_and_weights(module, cpu, timings, compiler, tmp)
        files = [*_write_objects(tmp, objects), *weights]
        merged = tmp / "merged.o"
        steps = [
            [*compiler.split(), "-r", "-nostdlib", "-o", str(merged), *map(str, files)],
            # What a whole module keeps to itself stays so: the units' hidden symbols
            # (kernels, weights, runtime) local, the error globals weak, as `emit_object`
            # has them, so two models' objects link into one program.
            [objcopy, "--localize-hidden", *_weak_error_symbols(), str(merged), str(path)],
        ]
        for cmd in steps:
            _run_tool(cmd, f"linking {path}")
    return path


def partial_link_tools() -> tuple[str, str] | None:
    """The C compiler and `objcopy` (`$OBJCOPY`) `build_object_file` merges units with,
    or None if either is missing."""
    try:
        compiler = system_compiler()
    except CodegenError:
        return None
    objcopy = shutil.which(os.environ.get("OBJCOPY") or "objcopy")
    return (compiler, objcopy) if objcopy else None


def _weak_error_symbols() -> list[str]:
    from lamina.backends.llvm.errors import ERROR_SYMBOL, VALUES_SYMBOL

    return [f"--weaken-symbol={name}" for name in (ERROR_SYMBOL, VALUES_SYMBOL)]


def build_artifact_library(
    module: ModuleOp,
    path: str | os.PathLike[str],
    weights: str | os.PathLike[str],
    *,
    cpu: str | None = None,
    timings: CompileTimings | None = None,
) -> int:
    """`build_shared_library`, with the large constants in the file `weights` instead of the
    library (laid out as `weights_region` says; empty if there are none); returns the
    size of the weights region the library reserves (0: none, the file is empty).

    The library binds its own symbols (`-Bsymbolic`): two artifacts loaded into one
    process each call their own entries and read their own error globals.
    """
    compiler = system_compiler()
    built = _aot_unit_objects(module, cpu, timings) if split_enabled() else None
    if built is None:
        objects, constants = [emit_object(module, cpu=cpu, timings=timings)], {}
    else:
        objects, constants = built
    if constants:
        tm = _target_machine(jit=False, target=CodeTarget.of(module, cpu))
        objects.append(_weights_object(constants, tm))
    write_weights(constants, weights)
    _link_shared(compiler, objects, Path(path), module, ("-Wl,-Bsymbolic",))
    return weights_region(constants)[2] if constants else 0


def _write_objects(directory: Path, objects: list[bytes]) -> list[Path]:
    """`objects` as files in `directory`, in order."""
    files = []
    for i, code in enumerate(objects):
        files.append(directory / f"unit{i}.o")
        files[-1].write_bytes(code)
    return files


def _link_shared(
    compiler: str,
    objects: list[bytes],
    path: Path,
    module: ModuleOp,
    flags: tuple[str, ...] = (),
    *,
    directory: Path | None = None,
    extra: list[Path] | None = None,
) -> None:
    """Link `objects` (host first, then the kernels, in a fixed order) and the object files
    `extra` into `path`; the objects are written to `directory` (default: a temporary one)."""
    if directory is None:
        with _temporary_directory() as tmp:
            return _link_shared(compiler, objects, path, module, flags, directory=tmp, extra=extra)
    files = [*_write_objects(directory, objects), *(extra or ())]
    cmd = [*compiler.split(), "-shared", "-fPIC", "-o", str(path), *map(str, files), "-lm"]
    cmd += list(flags)
    if uses_openmp(module):
        cmd.append("-fopenmp")  # links libgomp for GOMP_parallel
    for library in _libraries:
        cmd += [library, f"-Wl,-rpath,{Path(library).parent}"]
    _run_tool(cmd, f"linking {path}")
    return None


def _run_tool(cmd: list[str], what: str) -> None:
    """Run the system tool `cmd`; its failure is a `CodegenError` saying `what` failed,
    with the command and the tool's own message."""
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise CodegenError(f"codegen: {what} failed ({' '.join(cmd)}): {result.stderr.strip()}")


@contextmanager
def _temporary_directory() -> Iterator[Path]:
    """A temporary directory for the linker's inputs, removed afterwards; one that cannot
    be made (`$TMPDIR` unwritable or missing) is a `CodegenError`."""
    try:
        tmp = tempfile.TemporaryDirectory(prefix="lamina-")
    except OSError as err:
        raise CodegenError(
            f"codegen: cannot make a temporary directory for the linker's inputs "
            f"(in {tempfile.gettempdir()}; set $TMPDIR): {err.strerror or err}"
        ) from None
    with tmp as name:
        yield Path(name)
