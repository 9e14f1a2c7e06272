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

import math
from collections.abc import Callable, Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from op_cases import (
    CASE_IDS,
    CASES,
    OpCase,
    np_dtype,
    np_softmax,
    parse_map,
    random_input,
    ref_conv2d,
    tensor,
)
from xdsl.dialects import arith
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import (
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    TensorType,
    f32,
    i32,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from lamina.core.context import make_context
from lamina.core.diagnostics import DiagnosticError, parse_module, verify_module
from lamina.core.phase_invariants import check_phase
from lamina.dialects import graph, te
from lamina.dialects.lamina import (
    ConstraintAttr,
    DeviceAttr,
    Phase,
    UndefAttr,
    get_phase,
    set_phase,
)
from lamina.kernels import build_kernel
from lamina.passes.legalize import LegalizePass

# ---------------------------------------------------------------------------
# A reference evaluator for te.func (NumPy scalars)
# ---------------------------------------------------------------------------


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


CMPI = {0: "eq", 1: "ne", 2: "slt", 3: "sle", 4: "sgt", 5: "sge",
        6: "ult", 7: "ule", 8: "ugt", 9: "uge"}  # fmt: skip
CMPF = {1: "oeq", 2: "ogt", 3: "oge", 4: "olt", 5: "ole", 6: "one", 7: "ord", 13: "une", 14: "uno"}


def _compare(pred: str, a: object, b: object) -> np.bool_:
    a, b = float(a), float(b)  # type: ignore[arg-type]
    if pred in ("ord", "uno"):  # is neither / either operand NaN
        return np.bool_((math.isnan(a) or math.isnan(b)) == (pred == "uno"))
    if pred.startswith("o") and (math.isnan(a) or math.isnan(b)):
        return np.bool_(False)
    if pred == "une":
        return np.bool_(math.isnan(a) or math.isnan(b) or a != b)
    if pred.startswith("u"):  # unsigned: only i1 (0 and 1) compares unsigned here
        assert a in (0, 1) and b in (0, 1), (pred, a, b)
    op = pred.removeprefix("o").removeprefix("s").removeprefix("u")
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
        case arith.FloorDivSIOp():
            return _wrap(int(ops[0]) // int(ops[1]), rt)  # type: ignore[arg-type]
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
        case mathd.PowFOp():
            return np.power(ops[0], ops[1])  # type: ignore[call-overload]
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
    arrays = [np.asarray(a) for a in inputs] if inputs is not None else None
    if arrays is None:
        arrays = [random_input(t, rng) for t in arg_types]
    (result,) = evaluate_te_func(func, *arrays)
    assert result.shape == tuple(call.results[0].type.get_shape())  # type: ignore[attr-defined]
    return result, arrays


# ---------------------------------------------------------------------------
# Numerics of every op (tests/op_cases.py) and edge cases
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_kernel_matches_numpy(case: OpCase) -> None:
    module = legalize(case.module())
    (call,) = [op for op in module.walk() if isinstance(op, graph.CallTeOp)]
    func = te_funcs(module)[call.callee.root_reference.data]
    arrays = case.sample()
    (got,) = evaluate_te_func(func, *arrays)
    case.check(got, arrays)


def test_sigmoid_is_stable_for_large_inputs() -> None:
    x = np.array([-1000.0, -88.0, 0.0, 88.0, 1000.0], dtype=np.float32)
    got, _ = run_legalized([tensor((5,))], lambda args: graph.SigmoidOp(args[0]), [x])
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, [0.0, 6.05e-39, 0.5, 1.0, 1.0], rtol=1e-2, atol=1e-30)


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


def test_max_pool2d_padding_is_minus_infinity() -> None:
    x = np.full((1, 1, 2, 2), -5.0, dtype=np.float32)
    got, _ = run_legalized(
        [tensor(x.shape)], lambda a: graph.MaxPool2dOp(a[0], (2, 2), padding=(1, 1, 1, 1)), [x]
    )
    np.testing.assert_array_equal(got, np.full((1, 1, 3, 3), -5.0, dtype=np.float32))


def test_softmax_is_stable() -> None:
    x = np.array([1000.0, 1001.0, 1002.0], dtype=np.float32)
    got, _ = run_legalized([tensor((3,))], lambda a: graph.SoftmaxOp(a[0]), [x])
    np.testing.assert_allclose(got, np_softmax(x.astype(np.float64), 0), rtol=1e-5)


def test_integer_reduce_max_starts_from_the_smallest_integer() -> None:
    x = np.array([[-7, -3], [-100, -200]], dtype=np.int32)
    got, _ = run_legalized([tensor((2, 2), i32)], lambda a: graph.ReduceMaxOp(a[0], (1,)), [x])
    np.testing.assert_array_equal(got, [-3, -100])


def test_layout_transform_undef_padding_uses_te_undef() -> None:
    amap = parse_map("affine_map<(d0) -> (d0 floordiv 8, d0 mod 8)>")
    module, _ = one_op_module(
        [tensor((20,))],
        lambda a: graph.LayoutTransformOp(a[0], ConstraintAttr(amap, UndefAttr())),
    )
    legalize(module)
    names = {op.name for op in module.walk()}
    assert "te.undef" in names and "arith.select" in names


def test_unsupported_layout_map_is_a_diagnostic_at_the_op() -> None:
    amap = parse_map("affine_map<(d0, d1) -> (d0 + d1, d1)>")
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
    # Kernels are per device: the add on cpu:1 does not share the others' kernel,
    # and its kernel records its device on every parameter and result.
    assert [c.callee.root_reference.data for c in calls] == [
        "te_add_2x3xf32",
        "te_add_2x3xf32_1",
        "te_add_2x3xf32_2",
    ]
    assert set(te_funcs(module)) == {"te_add_2x3xf32", "te_add_2x3xf32_1", "te_add_2x3xf32_2"}
    assert calls[1].device == DeviceAttr("cpu", 1)
    assert calls[0].device is None
    kernel = te_funcs(module)["te_add_2x3xf32_1"]
    assert {d.data["device"] for d in (*kernel.arg_attrs.data, *kernel.res_attrs.data)} == {
        DeviceAttr("cpu", 1)
    }
    assert not any(op.name in ("graph.dataflow", "graph.output") for op in module.walk())
    main, side = (op for op in module.ops if isinstance(op, graph.FuncOp))
    assert main.force_pure is not None and main.impure is None
    assert side.impure is not None and side.force_pure is None
    (ext,) = [op for op in module.walk() if isinstance(op, graph.CallExternOp)]
    assert ext.pure is None


def test_kernel_names_avoid_existing_symbols() -> None:
    text = PROGRAM.replace("@side", "@te_add_2x3xf32")
    module = legalize(parse_module(make_context(), text, "p.mlir"))
    assert set(te_funcs(module)) == {"te_add_2x3xf32_1", "te_add_2x3xf32_2", "te_add_2x3xf32_3"}


def test_every_compute_op_kind_is_covered() -> None:
    """Each GraphCompute op has a builder, and tests/op_cases.py exercises each of them."""
    from lamina.kernels import BUILDERS

    names = {cls.name for cls in graph.COMPUTE_OPS}
    assert names == set(BUILDERS)
    tested = {case.module().body.block.first_op.body.block.first_op.name for case in CASES}
    assert names == tested


def test_claimed_ops_are_left_to_their_target() -> None:
    module, op = one_op_module([tensor((2,)), tensor((2,))], lambda a: graph.AddOp(*a))
    op.attributes["lamina.codegen"] = __import__(
        "xdsl.dialects.builtin"
    ).dialects.builtin.StringAttr("cblas")
    legalize(module)
    assert op.parent is not None and not te_funcs(module)


def test_builders_compose_into_one_kernel() -> None:
    """The fusion interface: `build_kernel` over several ops gives one te.func DAG."""
    types = [tensor((2, 3)), tensor((3, 4)), tensor((4,))]
    block = Block(arg_types=types)
    mm = graph.MatmulOp(block.args[0], block.args[1])
    add = graph.AddOp(mm.results[0], block.args[2])
    relu = graph.ReluOp(add.results[0])
    block.add_ops([mm, add, relu])
    func = build_kernel("fused", [mm, add, relu], list(block.args), [relu.results[0]])
    func.verify()
    assert sum(isinstance(op, te.ComputeOp) for op in func.body.block.ops) == 3
    rng = np.random.default_rng(5)
    a, b, c = (random_input(t, rng) for t in types)
    (got,) = evaluate_te_func(func, a, b, c)
    np.testing.assert_allclose(got, np.maximum(a @ b + c, 0), rtol=1e-5, atol=1e-6)


def test_build_kernel_rejects_an_operand_from_outside_the_group() -> None:
    block = Block(arg_types=[tensor((2,)), tensor((2,))])
    first = graph.ExpOp(block.args[0])
    second = graph.AddOp(first.results[0], block.args[1])
    block.add_ops([first, second])
    with pytest.raises(DiagnosticError, match="neither a kernel input nor computed before"):
        build_kernel("k", [second], [block.args[1]], [second.results[0]])


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
