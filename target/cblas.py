"""The `cblas` target: `graph.matmul` (+ a following bias `add`) as a call of OpenBLAS.

A library adaptation (docs/extending.md): the target claims the ops it
can do better than generated loops and lowers them itself, straight from
graph to `loop`, bypassing te. What it claims:

* `graph.matmul` over f32 or f64 on a CPU device, 2-D or batched, whose
  batch dimensions are either those of the result or all 1 (numpy's
  broadcasting of a shared matrix); 1-D operands as numpy promotes them;
* a `graph.add` of such a matmul's only use with a bias that broadcasts to
  the result (fused: the kernel fills C with the bias, then calls GEMM with
  beta = 1).

Each claimed op becomes a `graph.call_loop` of a private kernel
`loop.func @__cblas_<s|d>gemm_...` whose body calls the library::

    loop.call @scipy_cblas_sgemm(%RowMajor, %NoTrans, %NoTrans, %M, %N, %K,
        %alpha, %A, %lda, %B, %ldb, %beta, %C, %ldc)

(`..._sgemm_batch_strided` for a batch, with a zero stride for a shared
operand; a batch over a shared B is folded into one GEMM with M·batch rows).

The library is the OpenBLAS of the PyPI wheel `scipy-openblas32` (the
`lamina[blas]` extra): its directory comes from the package, so the user
sets no paths, and its symbols carry the prefix `scipy_`. It is loaded into
the process and registered with the runtime (JIT symbol resolution, and linking
of `lamina-compile`d shared libraries) when the target is used.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from math import prod
from pathlib import Path

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    FloatAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    TensorType,
    f32,
    f64,
    i32,
)
from xdsl.ir import Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import SymbolTable

from lamina.dialects import graph, loop
from lamina.dialects.lamina import DeviceAttr, codegen_target
from lamina.runtime.native_setup import LibraryLoadError, get_max_threads, register_library

NAME = "cblas"
PACKAGE = "scipy-openblas32"
INSTALL_HINT = f"pip install 'lamina[blas]' (or: pip install {PACKAGE})"

ROW_MAJOR, NO_TRANS = 101, 111
"""CBLAS enum values (cblas.h: CblasRowMajor, CblasNoTrans)."""


# ---------------------------------------------------------------------------
# The library
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Library:
    path: Path
    prefix: str
    """Prefix of every exported symbol (`scipy_` for scipy-openblas32)."""

    def symbol(self, routine: str) -> str:
        return f"{self.prefix}{routine}"


@functools.cache
def openblas() -> Library:
    """The OpenBLAS wheel's library, loaded and registered with codegen (once)."""
    from lamina.target.registry import TargetError

    try:
        import scipy_openblas32
    except ImportError:
        raise TargetError(
            f"target '{NAME}' needs the OpenBLAS library of the '{PACKAGE}' package, "
            f"which is not installed: {INSTALL_HINT}"
        ) from None
    name = scipy_openblas32.get_library()
    path = Path(scipy_openblas32.get_lib_dir()) / f"lib{name}.so"
    try:
        register_library(path)
    except LibraryLoadError as err:
        raise TargetError(f"target '{NAME}': codegen: {err}") from None
    library = Library(path, "scipy_" if name.startswith("scipy_") else "")
    _match_thread_count(library)
    return library


def _match_thread_count(library: Library) -> None:
    """OpenBLAS uses as many threads as Lamina's parallel loops (LAMINA_NUM_THREADS).

    Without this, OpenBLAS starts one thread per core whatever Lamina was told.
    """
    import ctypes
    import os

    if "OPENBLAS_NUM_THREADS" in os.environ:  # the user told OpenBLAS directly
        return
    setter = getattr(ctypes.CDLL(str(library.path)), f"{library.prefix}openblas_set_num_threads")
    setter(ctypes.c_int(max(1, get_max_threads())))


def require_openblas() -> None:
    openblas()


# ---------------------------------------------------------------------------
# What a matmul becomes: one GEMM call (possibly batched)
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Gemm:
    """The GEMM computing a matmul: C[b] = A[b]·B[b] over `batch` row-major matrices."""

    routine: str  # sgemm / dgemm
    m: int
    n: int
    k: int
    batch: int
    stride_a: int
    stride_b: int

    @property
    def key(self) -> str:
        """`sgemm_4x8x16`, `dgemm_batch2_3x4x5`, `..._shared_a` (one A for the whole batch)."""
        key = f"{self.routine}_"
        if self.batch > 1:
            key += f"batch{self.batch}_"
        key += f"{self.m}x{self.k}x{self.n}"
        if self.batch > 1 and self.stride_a == 0:
            key += "_shared_a"
        return key


_ROUTINES = {f32: "sgemm", f64: "dgemm"}


def gemm_for(op: graph.MatmulOp) -> Gemm | None:
    """The GEMM of `op`, or None if cblas does not handle it (type, batch broadcast)."""
    lhs, rhs, out = op.lhs.type, op.rhs.type, op.result.type
    if not (
        isinstance(lhs, TensorType) and isinstance(rhs, TensorType) and isinstance(out, TensorType)
    ):
        return None
    routine = _ROUTINES.get(out.element_type)
    if routine is None or lhs.element_type != out.element_type:
        return None
    a, b = tuple(lhs.get_shape()), tuple(rhs.get_shape())
    m, k = (1, a[0]) if len(a) == 1 else a[-2:]
    n = 1 if len(b) == 1 else b[-1]
    out_batch = tuple(graph.broadcast_shapes(a[:-2], b[:-2]))
    stride_a = _batch_stride(a[:-2], out_batch, m * k)
    stride_b = _batch_stride(b[:-2], out_batch, k * n)
    if stride_a is None or stride_b is None or 0 in (m, n, k):
        return None
    batch = prod(out_batch)
    if batch > 1 and stride_b == 0 and stride_a != 0:
        m, batch, stride_a = m * batch, 1, 0  # one GEMM over the stacked rows of A
    return Gemm(routine, m, n, k, batch, stride_a if batch > 1 else 0, stride_b)


def _batch_stride(dims: tuple[int, ...], out_batch: tuple[int, ...], size: int) -> int | None:
    """Elements between consecutive matrices of an operand: its own batch or a shared one."""
    if prod(dims) == 1:
        return 0
    padded = (1,) * (len(out_batch) - len(dims)) + dims
    return size if padded == out_batch else None


# ---------------------------------------------------------------------------
# Claiming
# ---------------------------------------------------------------------------


def _on_cpu(op: Operation) -> bool:
    device = op.properties.get("device") or op.attributes.get("device")
    return not isinstance(device, DeviceAttr) or device.kind.data == "cpu"


def claim(op: Operation) -> bool:
    """cblas takes f32/f64 matmuls it can call GEMM for, and the bias add after one."""
    if isinstance(op, graph.MatmulOp):
        return _on_cpu(op) and gemm_for(op) is not None
    if isinstance(op, graph.AddOp):
        return bias_of(op) is not None
    return False


def bias_of(add: graph.AddOp) -> tuple[graph.MatmulOp, SSAValue] | None:
    """(matmul, bias) if `add` adds a bias to the result of a matmul cblas claimed."""
    for mine, other in ((add.lhs, add.rhs), (add.rhs, add.lhs)):
        producer = mine.owner
        if (
            isinstance(producer, graph.MatmulOp)
            and codegen_target(producer) == NAME
            and len(list(mine.uses)) == 1
            and mine is not other
            and mine.type == add.result.type
            and isinstance(other.type, TensorType)
            and other.type.element_type == add.result.type.element_type
            and _broadcasts(tuple(other.type.get_shape()), tuple(add.result.type.get_shape()))
        ):
            return producer, other
    return None


def _broadcasts(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    if len(shape) > len(target):
        return False
    tail = target[len(target) - len(shape) :]
    return all(s in (1, t) for s, t in zip(shape, tail, strict=True))


# ---------------------------------------------------------------------------
# Lowering
# ---------------------------------------------------------------------------


def lower(op: Operation) -> None:
    """Replace a claimed matmul (or matmul + bias add) by a call of a GEMM kernel."""
    if isinstance(op, graph.MatmulOp):
        user = _single_user(op)
        if isinstance(user, graph.AddOp) and codegen_target(user) == NAME:
            return  # lowered together with its bias add
        _replace(op, op, None)
    elif isinstance(op, graph.AddOp):
        found = bias_of(op)
        if found is not None:
            matmul, bias = found
            _replace(op, matmul, bias)


def _single_user(op: Operation) -> Operation | None:
    uses = list(op.results[0].uses)
    return uses[0].operation if len(uses) == 1 else None


def _replace(root: Operation, matmul: graph.MatmulOp, bias: SSAValue | None) -> None:
    gemm = gemm_for(matmul)
    assert gemm is not None, "claim() only takes matmuls with a GEMM"
    module = _module_of(root)
    out_type = root.results[0].type
    assert isinstance(out_type, TensorType), "graph ops compute tensors"
    args = [matmul.lhs, matmul.rhs, *([bias] if bias is not None else [])]
    name = _kernel(module, gemm, [a.type for a in args], out_type)
    device = matmul.properties.get("device")
    assert device is None or isinstance(device, DeviceAttr)
    call = graph.CallLoopOp(name, args, [out_type], device=device)
    rewriter = Rewriter()
    rewriter.insert_op(call, InsertPoint.before(root))
    rewriter.replace_op(root, [], call.results)
    if matmul is not root:
        rewriter.erase_op(matmul)


def _module_of(op: Operation) -> ModuleOp:
    module = op.get_toplevel_object()
    assert isinstance(module, ModuleOp), "a claimed op lives in a module"
    return module


def _kernel(module: ModuleOp, gemm: Gemm, in_types: list, out_type: TensorType) -> str:
    """The name of a kernel computing `gemm` (+ bias) for these types; added if missing."""
    params = loop.to_buffer_types([*in_types, out_type])
    bias = f"_bias{'x'.join(map(str, in_types[2].get_shape()))}" if len(in_types) == 3 else ""
    base = f"__cblas_{gemm.key}{bias}"
    name, suffix = base, 0
    while (existing := SymbolTable.lookup_symbol(module, name)) is not None:
        if isinstance(existing, loop.FuncOp) and list(existing.function_type.inputs) == params:
            return name
        suffix += 1
        name = f"{base}_{suffix}"
    func = loop.FuncOp(name, (params, []), visibility="private")
    _emit_body(func.body.block, gemm, len(in_types) == 3)
    module.body.block.add_op(func)
    return name


def _emit_body(block: Block, gemm: Gemm, has_bias: bool) -> None:
    """Fill C with the bias (if any), then one GEMM library call."""
    a, b, *rest = block.args
    c = block.args[-1]
    for arg, hint in zip(block.args, ("a", "b", "bias" if has_bias else "c", "c"), strict=False):
        arg.name_hint = hint
    ops: list[Operation] = []
    if has_bias:
        ops += _broadcast_fill(rest[0], c)
    library = openblas()
    assert isinstance(c.type, MemRefType)
    ftype = c.type.element_type

    made: dict[tuple[object, object], SSAValue] = {}

    def const(value: float, ty) -> SSAValue:
        attr = IntegerAttr(int(value), ty) if ty == i32 else FloatAttr(value, ty)
        if (value, ty) not in made:
            ops.append(op := arith.ConstantOp(attr))
            made[(value, ty)] = op.result
        return made[(value, ty)]

    def i32c(value: int) -> SSAValue:
        return const(value, i32)

    def fc(value: float) -> SSAValue:
        return const(value, ftype)

    head = [i32c(ROW_MAJOR), i32c(NO_TRANS), i32c(NO_TRANS)]
    head += [i32c(gemm.m), i32c(gemm.n), i32c(gemm.k), fc(1.0)]
    beta = fc(1.0 if has_bias else 0.0)
    if gemm.batch == 1:
        routine = gemm.routine
        args = [*head, a, i32c(gemm.k), b, i32c(gemm.n), beta, c, i32c(gemm.n)]
    else:
        routine = f"{gemm.routine}_batch_strided"
        args = [
            *head,
            a,
            i32c(gemm.k),
            i32c(gemm.stride_a),
            b,
            i32c(gemm.n),
            i32c(gemm.stride_b),
            beta,
            c,
            i32c(gemm.n),
            i32c(gemm.m * gemm.n),
            i32c(gemm.batch),
        ]
    ops.append(loop.CallOp(library.symbol(f"cblas_{routine}"), args))
    block.add_ops([*ops, loop.ReturnOp()])


def _broadcast_fill(source: SSAValue, dest: SSAValue) -> list[Operation]:
    """Loops storing `source` broadcast (numpy rules) into every element of `dest`."""
    assert isinstance(source.type, MemRefType) and isinstance(dest.type, MemRefType)
    shape = dest.type.get_shape()
    src = source.type.get_shape()
    offset = len(shape) - len(src)
    zero = arith.ConstantOp(IntegerAttr(0, IndexType()))
    one = arith.ConstantOp(IntegerAttr(1, IndexType()))
    ops: list[Operation] = [zero, one]

    def nest(add: Callable[[Operation], None], ivs: list[SSAValue]) -> None:
        if len(ivs) == len(shape):  # innermost: dest[ivs] = source[broadcast ivs]
            index = [zero.result if d == 1 else ivs[offset + i] for i, d in enumerate(src)]
            add(load := loop.LoadOp(source, index))
            add(loop.StoreOp(load, dest, ivs))
            return
        add(ub := arith.ConstantOp(IntegerAttr(shape[len(ivs)], IndexType())))
        add(for_op := loop.ForOp(zero, ub, one))
        body = for_op.body.block
        terminator = body.last_op
        assert terminator is not None, "a new loop.for has its yield"
        nest(lambda op: body.insert_op_before(op, terminator), [*ivs, body.args[0]])

    nest(ops.append, [])
    return ops


def cblas_target():
    """The built-in `cblas` target (device kind cpu; code generation by the cpu target)."""
    from lamina.target.registry import Target

    return Target(
        NAME,
        "cpu",
        extends="cpu",
        claim=claim,
        lower=lower,
        requires=require_openblas,
        description=f"matmul (+ bias add) as GEMM calls of OpenBLAS ({PACKAGE})",
    )


__all__ = ["Gemm", "claim", "cblas_target", "gemm_for", "lower", "openblas"]
