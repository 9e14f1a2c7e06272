"""Legalization of the elementwise ops (`dialects/graph/elementwise.py`):
binary arithmetic with broadcasting, comparisons, unary math, `cast` and `where`.

`convert_scalar` is the one definition of NumPy `astype` for a scalar;
other builders and passes that convert element types reuse it.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import AnyFloat, IntegerType
from xdsl.ir import Attribute, Operation, SSAValue

from lamina.dialects import graph
from lamina.kernels.kernel import (
    Indices,
    KernelBuilder,
    TeEmitter,
    broadcast_indices,
    elt,
    shape_of,
)
from lamina.kernels.te_emit import ScalarEmitter, is_bool, is_float

BINARY: dict[str, Callable[[TeEmitter, SSAValue, SSAValue], SSAValue]] = {
    "graph.add": TeEmitter.add,
    "graph.sub": TeEmitter.sub,
    "graph.mul": TeEmitter.mul,
    "graph.div": TeEmitter.div,
    "graph.maximum": TeEmitter.max,
    "graph.minimum": TeEmitter.min,
    "graph.pow": lambda em, x, y: em.emit(mathd.PowFOp(x, y)),
}


def build_binary(op: Operation, kb: KernelBuilder, inputs: Indices) -> list[SSAValue]:
    """`out[i] = f(a[bcast(i)], b[bcast(i)])`."""
    a, b = inputs
    fn = BINARY[op.name]
    out = op.results[0].type

    def body(em: TeEmitter, sp: Indices, _: Indices) -> SSAValue:
        x = em.read(a, broadcast_indices(em, sp, shape_of(a)))
        y = em.read(b, broadcast_indices(em, sp, shape_of(b)))
        return fn(em, x, y)

    return [kb.compute(shape_of(out), elt(out), body)]


_FLOAT_PREDICATES = {"eq": "oeq", "ne": "une", "lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge"}
_INT_PREDICATES = {"eq": "eq", "ne": "ne", "lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge"}
_BOOL_PREDICATES = {**_INT_PREDICATES, "lt": "ult", "le": "ule", "gt": "ugt", "ge": "uge"}


def build_compare(op: Operation, kb: KernelBuilder, inputs: Indices) -> list[SSAValue]:
    """`out[i] = a[bcast(i)] <pred> b[bcast(i)]`: ordered float predicates but
    unordered `ne` (NumPy's NaN rules), signed integers, i1 unsigned (false < true)."""
    assert isinstance(op, graph.CompareOp)
    a, b = inputs
    pred = op.predicate.data
    out = op.results[0].type

    def body(em: TeEmitter, sp: Indices, _: Indices) -> SSAValue:
        x = em.read(a, broadcast_indices(em, sp, shape_of(a)))
        y = em.read(b, broadcast_indices(em, sp, shape_of(b)))
        if is_float(x.type):
            return em.cmpf(_FLOAT_PREDICATES[pred], x, y)
        table = _BOOL_PREDICATES if is_bool(x.type) else _INT_PREDICATES
        return em.emit(arith.CmpiOp(x, y, table[pred]))

    return [kb.compute(shape_of(out), elt(out), body)]


def _relu(em: TeEmitter, x: SSAValue) -> SSAValue:
    return em.max(x, em.const(0, x.type))


UNARY: dict[str, Callable[[TeEmitter, SSAValue], SSAValue]] = {
    "graph.neg": TeEmitter.neg,
    "graph.exp": TeEmitter.exp,
    "graph.log": TeEmitter.log,
    "graph.sqrt": TeEmitter.sqrt,
    "graph.rsqrt": TeEmitter.rsqrt,
    "graph.tanh": TeEmitter.tanh,
    "graph.sigmoid": TeEmitter.sigmoid,
    "graph.erf": TeEmitter.erf,
    "graph.relu": _relu,
}


def build_unary(op: Operation, kb: KernelBuilder, inputs: Indices) -> list[SSAValue]:
    """`out[i] = f(x[i])`; gelu picks its erf or tanh form from `approximate`."""
    (x,) = inputs
    if isinstance(op, graph.GeluOp):
        approx = op.approximation

        def fn(em: TeEmitter, v: SSAValue) -> SSAValue:
            return em.gelu(v, approx)
    else:
        fn = UNARY[op.name]

    def body(em: TeEmitter, sp: Indices, _: Indices) -> SSAValue:
        return fn(em, em.read(x, sp))

    return [kb.compute(shape_of(x), elt(op.results[0]), body)]


def build_cast(op: Operation, kb: KernelBuilder, inputs: Indices) -> list[SSAValue]:
    """Element conversion with NumPy `astype` semantics (see `convert_scalar`)."""
    (x,) = inputs
    dst = elt(op.results[0])

    def body(em: TeEmitter, sp: Indices, _: Indices) -> SSAValue:
        return convert_scalar(em, em.read(x, sp), dst)

    return [kb.compute(shape_of(x), dst, body)]


def convert_scalar(em: ScalarEmitter, v: SSAValue, dst: Attribute) -> SSAValue:
    """NumPy `astype` for one scalar: float→int truncates toward zero (`fptosi`),
    anything→bool is `!= 0`, bool→number is 0/1 (never sign-extended)."""
    src = v.type
    if src == dst:
        return v
    if is_bool(dst):
        zero = em.const(0, src)
        if is_float(src):
            return em.cmpf("une", v, zero)
        return em.emit(arith.CmpiOp(v, zero, "ne"))
    if is_bool(src):
        return em.select(v, em.const(1, dst), em.const(0, dst))
    if is_float(src) and is_float(dst):
        wider = _bitwidth(dst) > _bitwidth(src)
        return em.emit(arith.ExtFOp(v, dst) if wider else arith.TruncFOp(v, dst))
    if is_float(src):
        return em.emit(arith.FPToSIOp(v, dst))
    if is_float(dst):
        return em.emit(arith.SIToFPOp(v, dst))
    wider = _bitwidth(dst) > _bitwidth(src)
    return em.emit(arith.ExtSIOp(v, dst) if wider else arith.TruncIOp(v, dst))


def _bitwidth(t: Attribute) -> int:
    if isinstance(t, IntegerType):
        return t.width.data
    assert isinstance(t, AnyFloat)
    return t.bitwidth


def build_where(op: Operation, kb: KernelBuilder, inputs: Indices) -> list[SSAValue]:
    """`out[i] = cond[bcast(i)] ? a[bcast(i)] : b[bcast(i)]`."""
    cond, a, b = inputs
    out = op.results[0].type

    def body(em: TeEmitter, sp: Indices, _: Indices) -> SSAValue:
        c, x, y = (em.read(v, broadcast_indices(em, sp, shape_of(v))) for v in (cond, a, b))
        return em.select(c, x, y)

    return [kb.compute(shape_of(out), elt(out), body)]
