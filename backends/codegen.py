"""Code generation: xDSL's llvm dialect → llvmlite → optimized native code.

This is the `build` phase's back end (docs/design.md §4). Input: a module in phase
`build` (only `builtin.module` and `llvm.*` ops, as `lower-to-llvm` leaves
it). Steps, each timed in `CompileTimings`:

1. translate: xDSL's `xdsl.backend.llvm.convert.convert_module` (llvm dialect
   → llvmlite `ir.Module`), then a few fix-ups the translator does not do
   (function attributes such as `nounwind`);
2. parse + verify: `llvmlite.binding.parse_assembly` and `ModuleRef.verify`;
3. optimize: LLVM's new pass manager at O3 with loop and SLP vectorization,
   for the *host* CPU (`get_host_cpu_name`/`get_host_cpu_features`, so AVX2,
   AVX-512 and FMA are used where the machine has them);
4. JIT: an MCJIT engine, with a TargetMachine of its own. llvmlite crashes
   (SIGSEGV) when one TargetMachine is shared by two engines (XDSL_NOTES §4),
   so `_host_target_machine()` makes a new one every time.

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
from dataclasses import dataclass, field
from pathlib import Path

import llvmlite.binding as llvm
import llvmlite.ir as llvm_ir
from xdsl.backend.llvm.convert import convert_module
from xdsl.dialects import llvm as llvm_dialect
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.utils.exceptions import LLVMTranslationException

from lamina.backends import jit_symbols
from lamina.backends.inlining import bound_inlining
from lamina.backends.llvm.binary_constants import attach_bytes, detached_dense_globals
from lamina.backends.llvm.conversion import LOOP_KIND_ATTR
from lamina.backends.llvm.device_runtime import link_device_runtime
from lamina.core.diagnostics import Diagnostic, DiagnosticError
from lamina.runtime import native_setup

OPT_LEVEL = 3
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
    return any(
        isinstance(op, llvm_dialect.FuncOp) and op.sym_name.data.startswith("GOMP_")
        for op in module.ops
    )


def _host_target_machine(*, jit: bool, cpu: str | None = None) -> llvm.TargetMachine:
    """A fresh TargetMachine for the host CPU (or `cpu`, e.g. `x86-64-v3`, for portable AOT code).

    Never share one across MCJIT engines.
    """
    _ensure_llvm()
    target = llvm.Target.from_triple(llvm.get_process_triple())
    return target.create_target_machine(
        cpu=cpu or llvm.get_host_cpu_name(),
        features="" if cpu else llvm.get_host_cpu_features().flatten(),
        opt=OPT_LEVEL,
        reloc="default" if jit else "pic",
        codemodel="jitdefault" if jit else "default",
        jit=jit,
    )


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
    module: ModuleOp, tm: llvm.TargetMachine | None = None, *, host: bool = True
) -> llvm_ir.Module:
    """llvm dialect → llvmlite IR module, with host triple and data layout.

    With `host` (code for this machine, not a portable `cpu`), functions also
    get the host's vector width (`vector_width_attributes`).
    """
    _check_build_phase_ops(module)
    tm = tm or _host_target_machine(jit=False)
    try:
        with detached_dense_globals(module) as blobs:
            ir_module = convert_module(
                module, fallback_target_triple=tm.triple, data_layout=str(tm.target_data)
            )
    except (NotImplementedError, LLVMTranslationException, KeyError) as err:
        raise CodegenError(_translation_diagnostic(module, err)) from None
    attach_bytes(ir_module, blobs)
    for fn in ir_module.functions:
        if not fn.is_declaration:
            for attr in FUNCTION_ATTRIBUTES:
                fn.attributes.add(attr)
            if host:
                # llvmlite only accepts enum attributes; string ones go in verbatim.
                set.update(fn.attributes, vector_width_attributes())
    for func in _internal_functions(module):
        ir_module.get_global(func.sym_name.data).linkage = "internal"
    _attach_loop_metadata(module, ir_module)
    bound_inlining(ir_module)  # no function grows with the graph (backends/inlining.py)
    return ir_module


def vector_width_attributes() -> tuple[str, ...]:
    """Function attributes that make LLVM use the host's full vector width.

    Without them LLVM follows the CPU's tuning, which on several AVX-512
    CPUs (Intel's `prefer-256-bit`) keeps loops at 256 bits although the
    peers run 512-bit kernels there; the width comes from `cpu_facts`.
    """
    from lamina.target.cpu_facts import host_cpu_facts

    bits = host_cpu_facts().vector_bits
    return (f'"prefer-vector-width"="{bits}"', f'"min-legal-vector-width"="{bits}"')


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
of two vectors must become straight-line code to stay in registers)."""


def _attach_loop_metadata(module: ModuleOp, ir_module: llvm_ir.Module) -> None:
    """Put `!llvm.loop` metadata on back edges that carry `lamina.loop_kind`.

    The translator creates one llvmlite block per xDSL block, in order, so a
    block's terminator is found by position. Only innermost loops without
    calls get the hint: LLVM can act on nothing else, and a forced hint it
    cannot honour prints a warning on stderr.
    """
    for func in module.ops:
        if not isinstance(func, llvm_dialect.FuncOp) or not func.body.blocks:
            continue
        ll_func = ir_module.get_global(func.sym_name.data)
        blocks = list(func.body.blocks)
        for position, block in enumerate(blocks):
            kind = block.last_op.attributes.get(LOOP_KIND_ATTR) if block.last_op else None
            if not isinstance(kind, StringAttr) or kind.data not in LOOP_METADATA:
                continue
            if not _is_simple_innermost_loop(blocks, position):
                continue
            ll_block = ll_func.blocks[position]
            ll_block.instructions[-1].set_metadata("llvm.loop", _loop_id(ir_module, kind.data))


def _is_simple_innermost_loop(blocks: list, latch: int) -> bool:
    """Does the loop closed by `blocks[latch]` contain no other loop and no call?

    Lowered loops are laid out contiguously (header, body..., latch), so the
    loop is `blocks[header..latch]`; a nested loop shows up as another back
    edge (a branch to an earlier block) inside that range.
    """
    index = {block: i for i, block in enumerate(blocks)}
    header = index[blocks[latch].last_op.successors[0]]
    for i in range(header, latch + 1):
        block = blocks[i]
        if any(isinstance(op, llvm_dialect.CallOp) for op in block.ops):
            return False
        if i != latch and block.last_op is not None:
            if any(index.get(succ, i + 1) <= i for succ in block.last_op.successors):
                return False
    return True


def _loop_id(ir_module: llvm_ir.Module, kind: str) -> llvm_ir.MDValue:
    """A fresh self-referential loop ID `!N = !{!N, !{!"<property>", ...}}`."""
    props = []
    for name, value in LOOP_METADATA[kind]:
        operands: list[object] = [llvm_ir.MetaDataString(ir_module, name)]
        if value is not None:
            operands.append(llvm_ir.Constant(llvm_ir.IntType(1), value))
        props.append(ir_module.add_metadata(operands))
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


def optimize(ref: llvm.ModuleRef, tm: llvm.TargetMachine) -> None:
    """Run LLVM's O3 pipeline (with loop and SLP vectorization) for `tm`'s CPU, in place."""
    ref.triple = tm.triple
    ref.data_layout = str(tm.target_data)
    options = llvm.PipelineTuningOptions(speed_level=OPT_LEVEL)
    options.loop_vectorization = True
    options.slp_vectorization = True
    options.loop_interleaving = True
    options.loop_unrolling = True
    with (
        llvm.create_pass_builder(tm, options) as builder,
        builder.getModulePassManager() as mpm,
    ):
        mpm.run(ref, builder)


def _optimized_ref(
    module: ModuleOp, tm: llvm.TargetMachine, timings: CompileTimings, *, host: bool = True
):
    start = time.perf_counter()
    ir_module = translate(module, tm, host=host)
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
    """The object file MCJIT loaded (what the disk cache stores, runtime/cache.py)."""

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
        """The LLVM IR after O3, for inspection."""
        return str(self.llvm_module)


_cache: dict[str, CompiledModule] = {}
_cache_lock = threading.Lock()
_stats = {"hits": 0, "misses": 0}


def module_key(module: ModuleOp) -> str:
    """Content hash of the printed llvm-dialect module (plus the host CPU it is compiled for)."""
    digest = hashlib.sha256(f"{llvm.get_host_cpu_name()}\n{OPT_LEVEL}\n".encode())
    # Constant data is hashed as bytes: xDSL prints a dense value via a Python list.
    with detached_dense_globals(module) as blobs:
        digest.update(str(module).encode())
    for name, data in sorted(blobs.items()):
        digest.update(f"\n{name}:{len(data)}\n".encode())
        digest.update(data)
    return digest.hexdigest()


def compile_module(module: ModuleOp, *, use_cache: bool = True) -> CompiledModule:
    """JIT-compile a build-phase module for the host CPU (cached by content)."""
    key = module_key(module)
    with _cache_lock:
        if use_cache and key in _cache:
            _stats["hits"] += 1
            return _cache[key]
        _stats["misses"] += 1
        compiled = _jit(module, key)
        if use_cache:
            _cache[key] = compiled
        return compiled


def _jit(module: ModuleOp, key: str) -> CompiledModule:
    _ensure_llvm()
    missing = jit_symbols.missing_declared_functions(module)
    if missing:
        raise CodegenError(missing)
    timings = CompileTimings()
    tm = _host_target_machine(jit=True)
    ref = _optimized_ref(module, tm, timings)
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
    return CompiledModule(key, engine, tm, ref, signatures, timings, code)


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
    tm = _host_target_machine(jit=False, cpu=cpu)
    if not optimized:
        return str(translate(module, tm, host=cpu is None))
    return _timed_emit(str, module, tm, timings, host=cpu is None)


def emit_object(
    module: ModuleOp, *, cpu: str | None = None, timings: CompileTimings | None = None
) -> bytes:
    """A relocatable (PIC) object file, as bytes.

    By default the code uses every feature of *this* machine's CPU (AVX2,
    AVX-512, FMA...); pass `cpu` (an LLVM CPU name such as `x86-64-v2`) for
    an object that also runs on older machines. `timings` receives the
    steps' times (machine-code generation in `jit`).
    """
    tm = _host_target_machine(jit=False, cpu=cpu)
    return _timed_emit(tm.emit_object, module, tm, timings, host=cpu is None)


def emit_assembly(
    module: ModuleOp, *, cpu: str | None = None, timings: CompileTimings | None = None
) -> str:
    """Assembly text of the optimized module for the host (or `cpu`)."""
    tm = _host_target_machine(jit=False, cpu=cpu)
    return _timed_emit(tm.emit_assembly, module, tm, timings, host=cpu is None)


def emit_bitcode(
    module: ModuleOp, *, cpu: str | None = None, timings: CompileTimings | None = None
) -> bytes:
    """LLVM bitcode of the optimized module for the host (or `cpu`), for `llc`/`clang`."""
    tm = _host_target_machine(jit=False, cpu=cpu)
    return _timed_emit(lambda ref: ref.as_bitcode(), module, tm, timings, host=cpu is None)


def _timed_emit(
    emit, module: ModuleOp, tm: llvm.TargetMachine, timings: CompileTimings | None, host: bool
):
    """Optimize `module` for `tm`, then `emit(ref)`, recording every step in `timings`."""
    timings = timings if timings is not None else CompileTimings()
    ref = _optimized_ref(module, tm, timings, host=host)
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


def build_shared_library(
    module: ModuleOp,
    path: str | os.PathLike[str],
    *,
    cpu: str | None = None,
    timings: CompileTimings | None = None,
) -> Path:
    """Compile `module` to a shared library at `path` (object file → `cc -shared`, libm linked).

    The library exports every function defined in the module with the C ABI
    described in this module's docstring; `cpu` as for `emit_object`.
    """
    path = Path(path)
    compiler = system_compiler()  # before the (slow) compile: a missing cc fails fast
    with tempfile.TemporaryDirectory(prefix="lamina-") as tmp:
        obj = Path(tmp) / "module.o"
        obj.write_bytes(emit_object(module, cpu=cpu, timings=timings))
        cmd = [*compiler.split(), "-shared", "-fPIC", "-o", str(path), str(obj), "-lm"]
        if uses_openmp(module):
            cmd.append("-fopenmp")  # links libgomp for GOMP_parallel
        for library in _libraries:
            cmd += [library, f"-Wl,-rpath,{Path(library).parent}"]
        result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise CodegenError(
            f"codegen: linking {path} failed ({' '.join(cmd)}): {result.stderr.strip()}"
        )
    return path
