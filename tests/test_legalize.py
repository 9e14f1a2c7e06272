"""Tests of `legalize`: every graph compute op becomes a te.func + graph.call_te.

Structure: each op kind legalizes without leftovers, the module verifies and
meets the lowering-phase invariants, kernels are deduplicated, `device` is kept.

Semantics: until the rest of the lowering chain runs end to end, each
generated te.func is executed by a small reference evaluator of the te
dialect (`evaluate_te_func`, NumPy scalars, one region evaluation per
element) and compared with NumPy. The evaluator also asserts that no
`te.read` is ever out of bounds, which is legalize's contract for padded
windows, concat and layout padding.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects import arith
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import (
    AffineMapAttr,
    AnyFloat,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    TensorType,
    f32,
    f64,
    i1,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineMap

from lamina.core.context import make_context
from lamina.core.diagnostics import DiagnosticError, parse_module, verify_module
from lamina.dialects import graph, te
from lamina.dialects.lamina import (
    ConstraintAttr,
    DeviceAttr,
    Phase,
    UndefAttr,
    get_phase,
    set_phase,
)
from lamina.passes.legalize import LegalizePass
from lamina.passes.verify_phase import check_phase

# ---------------------------------------------------------------------------
# A reference evaluator for te.func (NumPy scalars)
# ---------------------------------------------------------------------------

DTYPES = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "i1": np.bool_,
          "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64}  # fmt: skip


def np_dtype(t: Attribute) -> type:
    return DTYPES[str(t)]


def _wrap(value: int, t: Attribute) -> object:
    """An integer wrapped into the two's complement range of `t` (index: plain int)."""
    if isinstance(t, IndexType):
        return int(value)
    assert isinstance(t, IntegerType)
    width = t.width.data
    if width == 1:
        return np.bool_(value & 1)
    value &= (1 << width) - 1
    if value >= 1 << (width - 1):
        value -= 1 << width
    return np_dtype(t)(value)


CMPI = {0: "eq", 1: "ne", 2: "slt", 3: "sle", 4: "sgt", 5: "sge"}
CMPF = {1: "oeq", 2: "ogt", 3: "oge", 4: "olt", 5: "ole", 6: "one", 13: "une"}


def _compare(pred: str, a: object, b: object) -> np.bool_:
    a, b = float(a), float(b)  # type: ignore[arg-type]
    if pred.startswith("o") and (math.isnan(a) or math.isnan(b)):
        return np.bool_(False)
    if pred == "une":
        return np.bool_(math.isnan(a) or math.isnan(b) or a != b)
    op = pred.removeprefix("o").removeprefix("s")
    table = {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}
    return np.bool_(table[op])


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def eval_scalar_op(op: Operation, v: Callable[[SSAValue], object]) -> object:
    """The value of one arith/math op, given the values `v` of its operands."""
    rt = op.results[0].type if op.results else None
    ops = [v(o) for o in op.operands]
    match op:
        case arith.ConstantOp():
            attr = op.value
            if isinstance(attr, FloatAttr):
                return np_dtype(rt)(attr.value.data)  # type: ignore[arg-type]
            assert isinstance(attr, IntegerAttr)
            return _wrap(attr.value.data, rt)  # type: ignore[arg-type]
        case arith.AddfOp() | arith.SubfOp() | arith.MulfOp() | arith.DivfOp():
            a, b = ops
            fn = {"arith.addf": np.add, "arith.subf": np.subtract,
                  "arith.mulf": np.multiply, "arith.divf": np.divide}[op.name]  # fmt: skip
            return fn(a, b)
        case arith.MaximumfOp():
            return np.maximum(*ops)
        case arith.MinimumfOp():
            return np.minimum(*ops)
        case arith.NegfOp():
            return -ops[0]  # type: ignore[operator]
        case arith.AddiOp() | arith.SubiOp() | arith.MuliOp():
            a, b = (int(x) for x in ops)  # type: ignore[call-overload]
            r = {"arith.addi": a + b, "arith.subi": a - b, "arith.muli": a * b}[op.name]
            return _wrap(r, rt)  # type: ignore[arg-type]
        case arith.DivSIOp():
            return _wrap(_trunc_div(int(ops[0]), int(ops[1])), rt)  # type: ignore[arg-type]
        case arith.DivUIOp() | arith.RemUIOp():
            a, b = int(ops[0]), int(ops[1])  # type: ignore[call-overload]
            assert a >= 0 and b > 0, f"unsigned index op on a negative value: {op}"
            return _wrap(a // b if op.name == "arith.divui" else a % b, rt)  # type: ignore[arg-type]
        case arith.MaxSIOp() | arith.MinSIOp():
            fn = max if op.name == "arith.maxsi" else min
            return _wrap(fn(int(ops[0]), int(ops[1])), rt)  # type: ignore[call-overload, arg-type]
        case arith.AndIOp() | arith.OrIOp() | arith.XOrIOp():
            a, b = int(ops[0]), int(ops[1])  # type: ignore[call-overload]
            r = {"arith.andi": a & b, "arith.ori": a | b, "arith.xori": a ^ b}[op.name]
            return _wrap(r, rt)  # type: ignore[arg-type]
        case arith.CmpiOp():
            return _compare(CMPI[op.predicate.value.data], *ops)
        case arith.CmpfOp():
            return _compare(CMPF[op.predicate.value.data], *ops)
        case arith.SelectOp():
            return ops[1] if ops[0] else ops[2]
        case arith.IndexCastOp():
            return _wrap(int(ops[0]), rt)  # type: ignore[call-overload, arg-type]
        case arith.SIToFPOp():
            return np_dtype(rt)(int(ops[0]))  # type: ignore[call-overload]
        case arith.FPToSIOp():
            return _wrap(int(ops[0]), rt)  # type: ignore[call-overload, arg-type]
        case arith.ExtFOp() | arith.TruncFOp():
            return np_dtype(rt)(ops[0])
        case arith.ExtSIOp() | arith.TruncIOp():
            return _wrap(int(ops[0]), rt)  # type: ignore[call-overload, arg-type]
        case mathd.ExpOp() | mathd.LogOp() | mathd.SqrtOp() | mathd.TanhOp():
            fn = {"math.exp": np.exp, "math.log": np.log,
                  "math.sqrt": np.sqrt, "math.tanh": np.tanh}[op.name]  # fmt: skip
            return fn(ops[0])
        case mathd.ErfOp():
            return np_dtype(rt)(math.erf(float(ops[0])))  # type: ignore[arg-type]
        case te.UndefOp():
            return np_dtype(rt)(0)
    raise NotImplementedError(f"reference evaluator has no rule for {op.name}")


def _eval_region(block: Block, indices: Sequence[int], env: dict[SSAValue, object]) -> object:
    local: dict[SSAValue, object] = dict(zip(block.args, indices, strict=True))

    def value(v: SSAValue) -> object:
        return local[v] if v in local else env[v]

    for op in block.ops:
        if isinstance(op, te.YieldOp):
            return value(op.value)
        if isinstance(op, te.ReadOp):
            array = value(op.tensor)
            assert isinstance(array, np.ndarray)
            idx = tuple(int(value(i)) for i in op.indices)  # type: ignore[call-overload]
            assert all(0 <= i < d for i, d in zip(idx, array.shape, strict=True)), (
                f"out-of-bounds te.read {idx} of a {array.shape} tensor"
            )
            local[op.result] = array[idx]
            continue
        local[op.results[0]] = eval_scalar_op(op, value)
    raise AssertionError("te.compute region without te.yield")


COMBINE = {"sum": lambda a, b: a + b, "prod": lambda a, b: a * b, "max": np.maximum,
           "min": np.minimum}  # fmt: skip


def _eval_compute(op: te.ComputeOp, env: dict[SSAValue, object]) -> np.ndarray:
    dtype = np_dtype(op.element_type)
    out = np.empty(op.shape_values, dtype=dtype)
    block = op.body.block
    for idx in np.ndindex(*op.shape_values):
        if not op.is_reduction:
            out[idx] = _eval_region(block, idx, env)
            continue
        init = op.init_value()
        assert init is not None and op.combiner is not None
        acc = dtype(init.value.data)
        for red in np.ndindex(*op.reduce_values):
            acc = COMBINE[op.combiner.data](acc, _eval_region(block, idx + red, env))
        out[idx] = acc
    return out


def evaluate_te_func(func: te.FuncOp, *args: np.ndarray) -> list[np.ndarray]:
    """Run `func` on NumPy arrays (its argument types must match)."""
    env: dict[SSAValue, object] = {}
    for arg, array in zip(func.body.block.args, args, strict=True):
        assert isinstance(arg.type, TensorType)
        assert array.shape == tuple(arg.type.get_shape()), (array.shape, arg.type)
        env[arg] = array
    with np.errstate(all="ignore"):
        for op in func.body.block.ops:
            if isinstance(op, te.ComputeOp):
                env[op.result] = _eval_compute(op, env)
            elif isinstance(op, te.ReturnOp):
                return [env[v] for v in op.arguments]  # type: ignore[misc]
            else:
                env[op.results[0]] = eval_scalar_op(op, lambda v: env[v])
    raise AssertionError("te.func without te.return")


# ---------------------------------------------------------------------------
# Building and legalizing one-op modules
# ---------------------------------------------------------------------------


def tensor(shape: Sequence[int], element: Attribute = f32) -> TensorType:
    return TensorType(element, list(shape))


def one_op_module(
    arg_types: Sequence[Attribute], make: Callable[[list[SSAValue]], Operation]
) -> tuple[ModuleOp, Operation]:
    """`graph.func @main(args) { %r = make(args); graph.return %r }` in phase optimization."""
    block = Block(arg_types=arg_types)
    op = make(list(block.args))
    block.add_ops([op, graph.ReturnOp(op.results[0])])
    func = graph.FuncOp("main", (arg_types, [op.results[0].type]), Region(block))
    module = ModuleOp([func])
    set_phase(module, Phase.OPTIMIZATION)
    verify_module(module)
    return module, op


def legalize(module: ModuleOp) -> ModuleOp:
    LegalizePass().apply(make_context(), module)
    LegalizePass.check_legality(module)
    verify_module(module)
    assert get_phase(module) == Phase.LOWERING
    assert check_phase(module, Phase.LOWERING) == []
    return module


def te_funcs(module: ModuleOp) -> dict[str, te.FuncOp]:
    return {op.sym_name.data: op for op in module.ops if isinstance(op, te.FuncOp)}


def random_input(t: Attribute, rng: np.random.Generator) -> np.ndarray:
    assert isinstance(t, TensorType)
    shape, e = tuple(t.get_shape()), t.get_element_type()
    if isinstance(e, AnyFloat):
        return rng.uniform(-2.0, 2.0, size=shape).astype(np_dtype(e))
    if e == i1:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    return rng.integers(-9, 10, size=shape).astype(np_dtype(e))


def run_legalized(
    arg_types: Sequence[Attribute],
    make: Callable[[list[SSAValue]], Operation],
    inputs: Sequence[np.ndarray] | None = None,
    seed: int = 0,
) -> tuple[np.ndarray, list[np.ndarray]]:
    """Legalize a one-op module and evaluate its kernel; returns (result, inputs)."""
    module, _ = one_op_module(arg_types, make)
    legalize(module)
    (call,) = [op for op in module.walk() if isinstance(op, graph.CallTeOp)]
    func = te_funcs(module)[call.callee.root_reference.data]
    rng = np.random.default_rng(seed)
    arrays = (
        [np.asarray(a) for a in inputs]
        if inputs is not None
        else [random_input(t, rng) for t in arg_types]
    )
    (result,) = evaluate_te_func(func, *arrays)
    assert result.shape == tuple(call.results[0].type.get_shape())  # type: ignore[attr-defined]
    return result, arrays


def tol(dtype: type) -> dict[str, float]:
    return {"rtol": 1e-5, "atol": 1e-5} if dtype == np.float32 else {"rtol": 1e-10, "atol": 1e-12}


# ---------------------------------------------------------------------------
# Elementwise
# ---------------------------------------------------------------------------

BINARY = {
    graph.AddOp: np.add,
    graph.SubOp: np.subtract,
    graph.MulOp: np.multiply,
    graph.DivOp: np.divide,
    graph.MaximumOp: np.maximum,
    graph.MinimumOp: np.minimum,
}
BROADCAST_CASES = [((2, 3), (3,)), ((4, 1, 3), (2, 1)), ((), (2, 2)), ((1,), (5,)),
                   ((3, 1), (1, 4)), ((7,), (7,)), ((2, 1, 1), ())]  # fmt: skip


@pytest.mark.parametrize("cls", list(BINARY), ids=lambda c: c.name)
@pytest.mark.parametrize("shapes", BROADCAST_CASES, ids=str)
@pytest.mark.parametrize("element", [f32, f64], ids=str)
def test_binary_broadcasting(cls: type, shapes: tuple, element: Attribute) -> None:
    types = [tensor(s, element) for s in shapes]
    got, (a, b) = run_legalized(types, lambda args: cls(*args))
    want = BINARY[cls](a, b)
    np.testing.assert_allclose(got, want, **tol(np_dtype(element)))


def test_integer_binary_ops_wrap_and_truncate() -> None:
    types = [tensor((2, 3), i32), tensor((3,), i32)]
    a = np.array([[7, -7, 5], [-9, 8, 0]], dtype=np.int32)
    b = np.array([2, 2, -3], dtype=np.int32)
    for cls, want in [
        (graph.AddOp, a + b),
        (graph.SubOp, a - b),
        (graph.MulOp, a * b),
        (graph.DivOp, np.trunc(a / b).astype(np.int32)),  # C / TVM truncdiv
        (graph.MaximumOp, np.maximum(a, b)),
        (graph.MinimumOp, np.minimum(a, b)),
    ]:
        got, _ = run_legalized(types, lambda args, c=cls: c(*args), [a, b])
        np.testing.assert_array_equal(got, want, err_msg=cls.name)


def _np_gelu_tanh(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


UNARY: dict[str, tuple[Callable[[SSAValue], Operation], Callable[[np.ndarray], np.ndarray]]] = {
    "neg": (graph.NegOp, np.negative),
    "exp": (graph.ExpOp, np.exp),
    "log": (graph.LogOp, lambda x: np.log(np.abs(x))),
    "sqrt": (graph.SqrtOp, lambda x: np.sqrt(np.abs(x))),
    "rsqrt": (graph.RsqrtOp, lambda x: 1 / np.sqrt(np.abs(x))),
    "tanh": (graph.TanhOp, np.tanh),
    "sigmoid": (graph.SigmoidOp, lambda x: 1 / (1 + np.exp(-x))),
    "erf": (graph.ErfOp, np.vectorize(math.erf)),
    "relu": (graph.ReluOp, lambda x: np.maximum(x, 0)),
    "gelu": (graph.GeluOp, lambda x: 0.5 * x * (1 + np.vectorize(math.erf)(x / np.sqrt(2)))),
    "gelu_tanh": (lambda v: graph.GeluOp(v, approximate="tanh"), _np_gelu_tanh),
}
POSITIVE_ONLY = {"log", "sqrt", "rsqrt"}


@pytest.mark.parametrize("name", list(UNARY))
@pytest.mark.parametrize("shape", [(), (1,), (3, 5)], ids=str)
@pytest.mark.parametrize("element", [f32, f64], ids=str)
def test_unary(name: str, shape: tuple, element: Attribute) -> None:
    make, ref = UNARY[name]
    x = np.random.default_rng(1).uniform(-3, 3, size=shape).astype(np_dtype(element))
    if name in POSITIVE_ONLY:
        x = np.abs(x) + np_dtype(element)(0.1)
    got, _ = run_legalized([tensor(shape, element)], lambda args: make(args[0]), [x])
    np.testing.assert_allclose(got, ref(x), **tol(np_dtype(element)))


def test_sigmoid_is_stable_for_large_inputs() -> None:
    x = np.array([-1000.0, -88.0, 0.0, 88.0, 1000.0], dtype=np.float32)
    got, _ = run_legalized([tensor((5,))], lambda args: graph.SigmoidOp(args[0]), [x])
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, [0.0, 6.05e-39, 0.5, 1.0, 1.0], rtol=1e-2, atol=1e-30)


def test_integer_neg_and_relu() -> None:
    x = np.array([-3, 0, 4], dtype=np.int32)
    got, _ = run_legalized([tensor((3,), i32)], lambda a: graph.NegOp(a[0]), [x])
    np.testing.assert_array_equal(got, -x)
    got, _ = run_legalized([tensor((3,), i32)], lambda a: graph.ReluOp(a[0]), [x])
    np.testing.assert_array_equal(got, np.maximum(x, 0))


# ---------------------------------------------------------------------------
# Matmul, convolution, pooling
# ---------------------------------------------------------------------------

MATMUL_CASES = [((2, 3), (3, 4)), ((3,), (3, 4)), ((2, 3), (3,)), ((5,), (5,)),
                ((2, 1, 3, 4), (5, 4, 2)), ((1, 1), (1, 1)), ((3, 2, 5), (5, 1))]  # fmt: skip


@pytest.mark.parametrize("shapes", MATMUL_CASES, ids=str)
@pytest.mark.parametrize("element", [f32, f64], ids=str)
def test_matmul(shapes: tuple, element: Attribute) -> None:
    types = [tensor(s, element) for s in shapes]
    got, (a, b) = run_legalized(types, lambda args: graph.MatmulOp(*args))
    np.testing.assert_allclose(got, np.matmul(a, b), **tol(np_dtype(element)))


def ref_conv2d(
    x: np.ndarray, w: np.ndarray, strides=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1
) -> np.ndarray:
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    top, left, bottom, right = padding
    xp = np.zeros((n, c, h + top + bottom, wd + left + right), dtype=x.dtype)
    xp[:, :, top : top + h, left : left + wd] = x
    oh = (h + top + bottom - dilation[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (wd + left + right - dilation[1] * (kw - 1) - 1) // strides[1] + 1
    out = np.zeros((n, o, oh, ow), dtype=np.float64)
    og = o // groups
    for oc, i, j in itertools.product(range(o), range(oh), range(ow)):
        g = oc // og
        for ci, p, q in itertools.product(range(cg), range(kh), range(kw)):
            out[:, oc, i, j] += (
                xp[
                    :,
                    g * cg + ci,
                    i * strides[0] + p * dilation[0],
                    j * strides[1] + q * dilation[1],
                ]
                * w[oc, ci, p, q]
            )
    return out.astype(x.dtype)


CONV_CASES = [
    # data, weight, strides, padding, dilation, groups
    ((1, 2, 5, 5), (3, 2, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
    ((2, 1, 4, 6), (2, 1, 2, 3), (2, 1), (0, 0, 0, 0), (1, 1), 1),
    ((1, 4, 5, 4), (4, 2, 3, 2), (2, 2), (2, 1, 0, 1), (1, 2), 2),
    ((1, 3, 6, 6), (3, 1, 3, 3), (1, 1), (1, 0, 1, 2), (2, 1), 3),
    ((1, 1, 1, 1), (1, 1, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
]


@pytest.mark.parametrize("case", CONV_CASES, ids=str)
def test_conv2d(case: tuple) -> None:
    ds, ws, strides, padding, dilation, groups = case
    got, (x, w) = run_legalized(
        [tensor(ds), tensor(ws)],
        lambda a: graph.Conv2dOp(
            a[0], a[1], strides=strides, padding=padding, dilation=dilation, groups=groups
        ),
    )
    want = ref_conv2d(x, w, strides, padding, dilation, groups)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_conv2d_nhwc_hwio_layouts() -> None:
    x = np.random.default_rng(3).normal(size=(1, 5, 4, 2)).astype(np.float32)  # NHWC
    w = np.random.default_rng(4).normal(size=(3, 3, 2, 4)).astype(np.float32)  # HWIO
    got, _ = run_legalized(
        [tensor(x.shape), tensor(w.shape)],
        lambda a: graph.Conv2dOp(
            a[0], a[1], padding=(1, 1, 1, 1), data_layout="NHWC", kernel_layout="HWIO"
        ),
        [x, w],
    )
    want = ref_conv2d(x.transpose(0, 3, 1, 2), w.transpose(3, 2, 0, 1), padding=(1, 1, 1, 1))
    np.testing.assert_allclose(got, want.transpose(0, 2, 3, 1), rtol=1e-5, atol=1e-5)


def ref_pool(x: np.ndarray, kernel, strides, padding, kind: str) -> np.ndarray:
    n, c, h, w = x.shape
    top, left, bottom, right = padding
    oh = (h + top + bottom - kernel[0]) // strides[0] + 1
    ow = (w + left + right - kernel[1]) // strides[1] + 1
    out = np.zeros((n, c, oh, ow), dtype=x.dtype)
    for i, j in itertools.product(range(oh), range(ow)):
        h0, w0 = i * strides[0] - top, j * strides[1] - left
        win = x[:, :, max(h0, 0) : min(h0 + kernel[0], h), max(w0, 0) : min(w0 + kernel[1], w)]
        out[:, :, i, j] = win.max(axis=(2, 3)) if kind == "max" else win.mean(axis=(2, 3))
    return out


POOL_CASES = [
    ((1, 2, 5, 5), (3, 3), (1, 1), (1, 1, 1, 1)),
    ((2, 1, 6, 7), (2, 2), (2, 2), (0, 0, 0, 0)),
    ((1, 1, 5, 4), (3, 2), (2, 1), (1, 0, 2, 1)),
    ((1, 3, 1, 1), (1, 1), (1, 1), (0, 0, 0, 0)),
]


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("case", POOL_CASES, ids=str)
def test_pool2d(kind: str, case: tuple) -> None:
    shape, kernel, strides, padding = case
    cls = graph.MaxPool2dOp if kind == "max" else graph.AvgPool2dOp
    got, (x,) = run_legalized(
        [tensor(shape)], lambda a: cls(a[0], kernel, strides=strides, padding=padding)
    )
    np.testing.assert_allclose(
        got, ref_pool(x, kernel, strides, padding, kind), rtol=1e-5, atol=1e-6
    )


def test_max_pool2d_padding_is_minus_infinity() -> None:
    x = np.full((1, 1, 2, 2), -5.0, dtype=np.float32)
    got, _ = run_legalized(
        [tensor(x.shape)], lambda a: graph.MaxPool2dOp(a[0], (2, 2), padding=(1, 1, 1, 1)), [x]
    )
    np.testing.assert_array_equal(got, np.full((1, 1, 3, 3), -5.0, dtype=np.float32))


@pytest.mark.parametrize("shape", [(1, 1, 1, 1), (2, 3, 4, 5)], ids=str)
@pytest.mark.parametrize("element", [f32, f64], ids=str)
def test_global_avg_pool2d(shape: tuple, element: Attribute) -> None:
    got, (x,) = run_legalized([tensor(shape, element)], lambda a: graph.GlobalAvgPool2dOp(a[0]))
    np.testing.assert_allclose(got, x.mean(axis=(2, 3), keepdims=True), **tol(np_dtype(element)))


# ---------------------------------------------------------------------------
# Normalizations and reductions
# ---------------------------------------------------------------------------


def np_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize(("shape", "axis"), [((4,), -1), ((2, 3), 0), ((2, 3, 4), 1), ((1, 5), -1)])
@pytest.mark.parametrize("element", [f32, f64], ids=str)
def test_softmax(shape: tuple, axis: int, element: Attribute) -> None:
    got, (x,) = run_legalized([tensor(shape, element)], lambda a: graph.SoftmaxOp(a[0], axis))
    np.testing.assert_allclose(got, np_softmax(x, axis), **tol(np_dtype(element)))


def test_softmax_is_stable() -> None:
    x = np.array([1000.0, 1001.0, 1002.0], dtype=np.float32)
    got, _ = run_legalized([tensor((3,))], lambda a: graph.SoftmaxOp(a[0]), [x])
    np.testing.assert_allclose(got, np_softmax(x.astype(np.float64), 0), rtol=1e-5)


@pytest.mark.parametrize(("shape", "axis"), [((2, 6), -1), ((2, 3, 4), 1), ((3,), 0), ((2, 3), 0)])
@pytest.mark.parametrize("element", [f32, f64], ids=str)
def test_layer_norm(shape: tuple, axis: int, element: Attribute) -> None:
    norm = shape[axis % len(shape) :]
    types = [tensor(shape, element), tensor(norm, element), tensor(norm, element)]
    got, (x, g, b) = run_legalized(types, lambda a: graph.LayerNormOp(*a, axis=axis, epsilon=1e-3))
    axes = tuple(range(axis % len(shape), len(shape)))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    want = (x - mean) / np.sqrt(var + 1e-3) * g + b
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


REDUCE_CASES = [((2, 3, 4), None, False), ((2, 3, 4), (1,), True), ((2, 3, 4), (-1, 0), False),
                ((5,), (0,), True), ((3, 1), None, True), ((2, 3), (), False)]  # fmt: skip
REDUCE = {graph.ReduceSumOp: np.sum, graph.ReduceMeanOp: np.mean, graph.ReduceMaxOp: np.max}


@pytest.mark.parametrize("cls", list(REDUCE), ids=lambda c: c.name)
@pytest.mark.parametrize("case", REDUCE_CASES, ids=str)
@pytest.mark.parametrize("element", [f32, f64], ids=str)
def test_reductions(cls: type, case: tuple, element: Attribute) -> None:
    shape, axes, keepdims = case
    got, (x,) = run_legalized([tensor(shape, element)], lambda a: cls(a[0], axes, keepdims))
    want = REDUCE[cls](x, axis=None if axes is None else tuple(axes), keepdims=keepdims)
    np.testing.assert_allclose(got, want, **tol(np_dtype(element)))


def test_integer_reduce_max_starts_from_the_smallest_integer() -> None:
    x = np.array([[-7, -3], [-100, -200]], dtype=np.int32)
    got, _ = run_legalized([tensor((2, 2), i32)], lambda a: graph.ReduceMaxOp(a[0], (1,)), [x])
    np.testing.assert_array_equal(got, [-3, -100])


# ---------------------------------------------------------------------------
# Data movement and casts
# ---------------------------------------------------------------------------

RESHAPE_CASES = [((2, 3), (3, 2)), ((2, 3, 4), (4, 6)), ((6,), (1, 2, 1, 3)), ((1,), ()),
                 ((), (1, 1)), ((4, 1, 5), (20,)), ((3, 4), (2, 2, 3))]  # fmt: skip


@pytest.mark.parametrize(("src", "dst"), RESHAPE_CASES, ids=str)
def test_reshape(src: tuple, dst: tuple) -> None:
    got, (x,) = run_legalized([tensor(src)], lambda a: graph.ReshapeOp(a[0], tensor(dst)))
    np.testing.assert_array_equal(got, x.reshape(dst))


@pytest.mark.parametrize(
    ("shape", "perm"), [((2, 3), (1, 0)), ((2, 3, 4), (2, 0, 1)), ((5,), (0,))]
)
def test_transpose(shape: tuple, perm: tuple) -> None:
    got, (x,) = run_legalized([tensor(shape)], lambda a: graph.TransposeOp(a[0], perm))
    np.testing.assert_array_equal(got, x.transpose(perm))


@pytest.mark.parametrize(
    ("shapes", "axis"),
    [([(2, 3), (4, 3)], 0), ([(2, 1), (2, 3), (2, 2)], 1), ([(3,)], 0), ([(1, 2), (1, 2)], -1)],
    ids=str,
)
def test_concat(shapes: list, axis: int) -> None:
    got, xs = run_legalized([tensor(s) for s in shapes], lambda a: graph.ConcatOp(a, axis))
    np.testing.assert_array_equal(got, np.concatenate(xs, axis=axis))


@pytest.mark.parametrize(
    ("src", "dst"), [((3,), (2, 3)), ((), (2, 2)), ((2, 1), (2, 4)), ((1, 1), (3, 1, 2))]
)
def test_broadcast_to(src: tuple, dst: tuple) -> None:
    got, (x,) = run_legalized([tensor(src)], lambda a: graph.BroadcastToOp(a[0], tensor(dst)))
    np.testing.assert_array_equal(got, np.broadcast_to(x, dst))


CAST_CASES = [(f32, i32), (f32, f64), (f64, f32), (i32, f32), (i32, i64), (i64, i32), (i1, f32),
              (f32, i1), (i1, i32), (i32, i1), (f64, i64), (f32, f32)]  # fmt: skip


@pytest.mark.parametrize(("src", "dst"), CAST_CASES, ids=str)
def test_cast(src: Attribute, dst: Attribute) -> None:
    if src == i1:
        x = np.array([True, False, True, True, False, False])
    elif isinstance(src, AnyFloat):
        x = np.array([-2.7, -0.5, 0.0, 0.4, 1.9, 3.0], dtype=np_dtype(src))
    else:
        x = np.array([-300, -1, 0, 1, 7, 2**20], dtype=np_dtype(src))
    if src == i64 and dst == i32:
        x[-1] = 2**40 + 5  # wraps like NumPy astype
    got, _ = run_legalized(
        [tensor((6,), src)], lambda a: graph.CastOp(a[0], tensor((6,), dst)), [x]
    )
    want = x.astype(np_dtype(dst))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def ref_layout_transform(x: np.ndarray, amap: AffineMap, physical: tuple, pad: float) -> np.ndarray:
    out = np.full(physical, pad, dtype=x.dtype)
    for idx in np.ndindex(*x.shape):
        out[amap.eval(idx, ())] = x[idx]
    return out


LAYOUT_CASES = [
    ("affine_map<(d0, d1) -> (d0 floordiv 8, d1, d0 mod 8)>", (20, 3)),
    ("affine_map<(d0) -> (d0 floordiv 4, d0 mod 4)>", (8,)),
    ("affine_map<(d0, d1) -> (d1, d0)>", (2, 3)),
    ("affine_map<(d0, d1, d2, d3) -> (d0, d1 floordiv 4, d2, d3, d1 mod 4)>", (1, 6, 2, 2)),
    ("affine_map<(d0) -> (d0 floordiv 8, d0 mod 8)>", (5,)),
]


def _parse_map(text: str) -> AffineMapAttr:
    attr = parse_module(
        make_context(), f"builtin.module attributes {{m = {text}}} {{}}"
    ).attributes["m"]
    assert isinstance(attr, AffineMapAttr)
    return attr


@pytest.mark.parametrize(("map_text", "shape"), LAYOUT_CASES, ids=str)
def test_layout_transform(map_text: str, shape: tuple) -> None:
    amap = _parse_map(map_text)
    constraint = ConstraintAttr(amap, FloatAttr(-1.5, f32))
    got, (x,) = run_legalized([tensor(shape)], lambda a: graph.LayoutTransformOp(a[0], constraint))
    np.testing.assert_array_equal(got, ref_layout_transform(x, amap.data, got.shape, -1.5))


def test_layout_transform_undef_padding_uses_te_undef() -> None:
    amap = _parse_map("affine_map<(d0) -> (d0 floordiv 8, d0 mod 8)>")
    module, _ = one_op_module(
        [tensor((20,))],
        lambda a: graph.LayoutTransformOp(a[0], ConstraintAttr(amap, UndefAttr())),
    )
    legalize(module)
    names = {op.name for op in module.walk()}
    assert "te.undef" in names and "arith.select" in names


def test_unsupported_layout_map_is_a_diagnostic_at_the_op() -> None:
    amap = _parse_map("affine_map<(d0, d1) -> (d0 + d1, d1)>")
    module, op = one_op_module(
        [tensor((2, 3))],
        lambda a: graph.LayoutTransformOp(a[0], ConstraintAttr(amap, FloatAttr(0.0, f32))),
    )
    with pytest.raises(DiagnosticError) as info:
        LegalizePass().apply(make_context(), module)
    (diag,) = info.value.diagnostics
    assert diag.op is op
    assert "cannot legalize layout map" in diag.message and "not invertible" in diag.message


# ---------------------------------------------------------------------------
# Structure: dedup, names, device, dataflow, purity
# ---------------------------------------------------------------------------

PROGRAM = """
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @main(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
    %r = graph.dataflow -> tensor<2x3xf32> {
      %s = graph.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
      graph.output %s : tensor<2x3xf32>
    }
    %t = graph.add %r, %b {device = #lamina.device<"cpu", 1>} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %u = graph.add %t, %t : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %e = graph.call_extern "ext"(%u) {pure} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    graph.return %e : tensor<2x3xf32>
  }
  graph.func @side(%a: tensor<2xf32>) -> tensor<2xf32> attributes {impure} {
    graph.return %a : tensor<2xf32>
  }
}
"""


def test_structure_dedup_names_device_dataflow_purity() -> None:
    module = legalize(parse_module(make_context(), PROGRAM, "p.mlir"))
    calls = [op for op in module.walk() if isinstance(op, graph.CallTeOp)]
    assert [c.callee.root_reference.data for c in calls] == [
        "te_add_2x3xf32",
        "te_add_2x3xf32",
        "te_add_2x3xf32_1",
    ]
    assert set(te_funcs(module)) == {"te_add_2x3xf32", "te_add_2x3xf32_1"}
    assert calls[1].device == DeviceAttr("cpu", 1)
    assert calls[0].device is None
    assert not any(op.name in ("graph.dataflow", "graph.output") for op in module.walk())
    main, side = (op for op in module.ops if isinstance(op, graph.FuncOp))
    assert main.force_pure is not None and main.impure is None
    assert side.impure is not None and side.force_pure is None
    (ext,) = [op for op in module.walk() if isinstance(op, graph.CallExternOp)]
    assert ext.pure is None


def test_kernel_names_avoid_existing_symbols() -> None:
    text = PROGRAM.replace("@side", "@te_add_2x3xf32")
    module = legalize(parse_module(make_context(), text, "p.mlir"))
    assert set(te_funcs(module)) == {"te_add_2x3xf32_1", "te_add_2x3xf32_2"}


def test_every_compute_op_kind_is_covered() -> None:
    """Each GraphCompute op has a builder, and this file exercises each of them."""
    from lamina.passes._legalize_ops import BUILDERS

    names = {cls.name for cls in graph.COMPUTE_OPS}
    assert names == set(BUILDERS)
    tested = {c.name for c in BINARY} | {c.name for c in REDUCE} | {
        "graph.neg", "graph.exp", "graph.log", "graph.sqrt", "graph.rsqrt", "graph.tanh",
        "graph.sigmoid", "graph.erf", "graph.relu", "graph.gelu", "graph.matmul",
        "graph.conv2d", "graph.max_pool2d", "graph.avg_pool2d", "graph.global_avg_pool2d",
        "graph.softmax", "graph.layer_norm", "graph.reshape", "graph.transpose",
        "graph.concat", "graph.broadcast_to", "graph.cast", "graph.layout_transform",
    }  # fmt: skip
    assert names == tested


def test_claimed_ops_are_left_to_their_target() -> None:
    module, op = one_op_module([tensor((2,)), tensor((2,))], lambda a: graph.AddOp(*a))
    op.attributes["lamina.codegen"] = __import__(
        "xdsl.dialects.builtin"
    ).dialects.builtin.StringAttr("cblas")
    legalize(module)
    assert op.parent is not None and not te_funcs(module)


def test_builders_compose_into_one_kernel() -> None:
    """The fusion interface: builders chained on one KernelBuilder form one te.func DAG."""
    from lamina.passes._legalize_ops import BUILDERS, KernelBuilder

    types = [tensor((2, 3)), tensor((3, 4)), tensor((4,))]
    block = Block(arg_types=types)
    mm = graph.MatmulOp(block.args[0], block.args[1])
    add = graph.AddOp(mm.results[0], block.args[2])
    relu = graph.ReluOp(add.results[0])
    block.add_ops([mm, add, relu])
    kb = KernelBuilder(types)
    (y,) = BUILDERS[mm.name](mm, kb, kb.args[:2])
    (z,) = BUILDERS[add.name](add, kb, [y, kb.args[2]])
    (r,) = BUILDERS[relu.name](relu, kb, [z])
    func = kb.finish("fused", [r])
    func.verify()
    assert sum(isinstance(op, te.ComputeOp) for op in func.body.block.ops) == 3
    rng = np.random.default_rng(5)
    a, b, c = (random_input(t, rng) for t in types)
    (got,) = evaluate_te_func(func, a, b, c)
    np.testing.assert_allclose(got, np.maximum(a @ b + c, 0), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    ("types", "make", "ref"),
    [
        ([(0, 3)], lambda a: graph.ReduceSumOp(a[0], (0,)), lambda x: x.sum(axis=0)),
        ([(2, 0), (0, 3)], lambda a: graph.MatmulOp(*a), np.matmul),
        ([(0, 2), (0, 2)], lambda a: graph.ConcatOp(a, 0), lambda *xs: np.concatenate(xs)),
        ([(0, 3), (3,)], lambda a: graph.AddOp(*a), np.add),
        ([(2, 0, 3)], lambda a: graph.ReduceMaxOp(a[0], (0,)), lambda x: x.max(axis=0)),
    ],
    ids=["reduce_sum", "matmul", "concat", "add", "reduce_max"],
)
def test_zero_size_tensors(types: list, make: Callable, ref: Callable) -> None:
    got, xs = run_legalized([tensor(s) for s in types], make)
    np.testing.assert_array_equal(got, ref(*xs))


# ---------------------------------------------------------------------------
# Property tests: random shapes
# ---------------------------------------------------------------------------

small_shapes = st.lists(st.integers(1, 3), min_size=0, max_size=3).map(tuple)


@st.composite
def broadcastable_pairs(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Two shapes NumPy can broadcast: the second drops leading dims and ones out."""
    a = draw(small_shapes)
    keep = draw(st.integers(0, len(a)))
    b = tuple(d if draw(st.booleans()) else 1 for d in a[len(a) - keep :])
    return (a, b) if draw(st.booleans()) else (b, a)


@settings(max_examples=25, deadline=None)
@given(broadcastable_pairs())
def test_random_broadcasting_matches_numpy(shapes: tuple) -> None:
    got, (a, b) = run_legalized([tensor(s) for s in shapes], lambda args: graph.SubOp(*args))
    np.testing.assert_allclose(got, a - b, rtol=1e-6)


@st.composite
def reshapes(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """A shape and a random refactoring of its element count."""
    src = draw(st.lists(st.integers(1, 4), min_size=0, max_size=3).map(tuple))
    n, dst = int(np.prod(src)), []
    while n > 1:
        d = draw(st.sampled_from([f for f in range(2, n + 1) if n % f == 0]))
        dst.append(d)
        n //= d
    dst += [1] * draw(st.integers(0, 1))
    return src, tuple(draw(st.permutations(dst)))


@settings(max_examples=25, deadline=None)
@given(reshapes())
def test_random_reshape_matches_numpy(shapes: tuple) -> None:
    src, dst = shapes
    got, (x,) = run_legalized([tensor(src)], lambda a: graph.ReshapeOp(a[0], tensor(dst)))
    np.testing.assert_array_equal(got, x.reshape(dst))
