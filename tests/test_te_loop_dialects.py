"""The te and loop dialects from Python: builders, queries and verifier messages.

The lit tests (tests/filecheck/dialects/{te,loop}) cover the textual forms;
these tests cover what passes use: building ops (ForOp with a body, element
access, a te.compute with its region) and the errors verify() reports.
"""

from __future__ import annotations

import io

import pytest
from xdsl.builder import Builder, ImplicitBuilder
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    AffineMapAttr,
    ArrayAttr,
    DictionaryAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
    f32,
    f64,
    i1,
    i32,
)
from xdsl.ir import Block, Operation, Region
from xdsl.ir.affine import AffineMap
from xdsl.printer import Printer
from xdsl.rewriter import InsertPoint

from lamina.core.context import make_context
from lamina.core.diagnostics import DiagnosticError, parse_module, verify_module
from lamina.dialects import loop, te
from lamina.dialects.lamina import ConstraintAttr, DeviceAttr, UndefAttr

INDEX = IndexType()


def messages(module: ModuleOp) -> list[str]:
    """Every verifier diagnostic of `module` (empty when it verifies)."""
    try:
        verify_module(module)
    except DiagnosticError as err:
        return [d.message for d in err.diagnostics]
    return []


def render(module: ModuleOp, generic: bool = False) -> str:
    out = io.StringIO()
    Printer(stream=out, print_generic_format=generic).print_op(module)
    return out.getvalue()


def index_const(value: int) -> arith.ConstantOp:
    return arith.ConstantOp(IntegerAttr(value, INDEX))


def before(op: Operation) -> Builder:
    """A builder inserting right before `op` (e.g. before a loop body's yield)."""
    return Builder(InsertPoint.before(op))


# ---------------------------------------------------------------------------
# loop: building kernels
# ---------------------------------------------------------------------------


def build_matmul(m: int = 4, k: int = 8, n: int = 16) -> ModuleOp:
    """C[i, j] = sum_k A[i, k] * B[k, j] as a parallel loop nest with an iter_args reduction."""
    a_t, b_t, c_t = MemRefType(f32, [m, k]), MemRefType(f32, [k, n]), MemRefType(f32, [m, n])
    func = loop.FuncOp("matmul", ([a_t, b_t, c_t], []))
    a, b, c = func.args
    with ImplicitBuilder(func.body.block):
        c0, c1 = index_const(0), index_const(1)
        cm, ck, cn = index_const(m), index_const(k), index_const(n)
        zero = arith.ConstantOp(FloatAttr(0.0, f32))
        outer = loop.ForOp(c0, cm, c1, kind="parallel")
        loop.ReturnOp()
    with ImplicitBuilder(before(outer.yield_op)):
        middle = loop.ForOp(c0, cn, c1)
    with ImplicitBuilder(before(middle.yield_op)):
        inner = loop.ForOp(c0, ck, c1, iter_args=[zero])
        loop.StoreOp(inner.res[0], c, [outer.induction_var, middle.induction_var])
    with ImplicitBuilder(inner.body.block):
        x = loop.LoadOp(a, [outer.induction_var, inner.induction_var])
        y = loop.LoadOp(b, [inner.induction_var, middle.induction_var])
        p = arith.MulfOp(x, y)
        s = arith.AddfOp(inner.region_iter_args[0], p)
        loop.YieldOp(s)
    return ModuleOp([func])


def test_built_matmul_verifies_and_round_trips():
    module = build_matmul()
    assert messages(module) == []
    text = render(module)
    assert "kind(parallel)" in text
    assert "iter_args(" in text and "-> (f32)" in text
    ctx = make_context()
    for form in (text, render(module, generic=True)):
        reparsed = parse_module(ctx, form)
        assert messages(reparsed) == []
        assert render(reparsed) == text


def test_for_builder_defaults():
    c0, c4, c1 = index_const(0), index_const(4), index_const(1)
    op = loop.ForOp(c0, c4, c1)
    assert op.kind_name == "serial"
    assert "kind" not in op.properties  # serial is the default, not stored
    assert op.induction_var.type == INDEX
    assert op.region_iter_args == ()
    assert isinstance(op.yield_op, loop.YieldOp) and not op.yield_op.arguments
    assert len(op.res) == 0


def test_for_builder_with_iter_args_has_typed_block_args_and_results():
    c0, c4, c1 = index_const(0), index_const(4), index_const(1)
    init_f, init_i = arith.ConstantOp(FloatAttr(0.0, f64)), arith.ConstantOp(IntegerAttr(0, i32))
    op = loop.ForOp(c0, c4, c1, iter_args=[init_f, init_i], kind="unrolled")
    assert [a.type for a in op.region_iter_args] == [f64, i32]
    assert list(op.res.types) == [f64, i32]
    assert op.kind == loop.LoopKindAttr(loop.LoopKind.UNROLLED) and op.kind_name == "unrolled"
    assert op.body.block.last_op is None  # with iter_args the caller adds the yield


def test_for_kind_can_be_rescheduled_in_place():
    module = build_matmul()
    outer = next(o for o in module.walk() if isinstance(o, loop.ForOp))
    outer.set_kind(loop.LoopKind.VECTORIZED)
    assert messages(module) == []
    assert "kind(vectorized)" in render(module)
    outer.set_kind("serial")
    assert "kind" not in outer.properties and "kind(" not in render(module)
    with pytest.raises(ValueError):
        outer.set_kind("fast")  # only the enum's values: no unverifiable kind can be set


def test_for_yield_type_mismatch_is_reported_at_the_loop():
    module = build_matmul()
    inner = [o for o in module.walk() if isinstance(o, loop.ForOp)][-1]
    wrong = arith.ConstantOp(FloatAttr(1.0, f64))
    inner.body.block.insert_op_before(wrong, inner.yield_op)
    inner.yield_op.operands = [wrong.result]
    assert messages(module) == [
        "'loop.for' op 0-th yielded value and 0-th loop result have different type: 'f64' != 'f32'"
    ]


def test_load_and_store_check_rank_and_element_type():
    buf_t = MemRefType(f32, [4, 8])
    func = loop.FuncOp("f", ([buf_t, INDEX, f64], []))
    buf, i, v = func.args
    with ImplicitBuilder(func.body.block):
        loop.LoadOp(buf, [i])
        loop.StoreOp(v, buf, [i, i])
        loop.ReturnOp()
    assert messages(ModuleOp([func])) == [
        "'loop.load' op expected 2 indices (one per dimension of memref<4x8xf32>), got 1",
        "'loop.store' op value type must be the buffer's element type: expected f32, got f64",
    ]


def test_alloc_with_constraint_and_scope():
    blocked = ConstraintAttr(
        AffineMapAttr(AffineMap.from_callable(lambda d0: (d0 // 8, d0 % 8))), UndefAttr()
    )
    good = loop.AllocOp(MemRefType(f32, [2, 8]), DeviceAttr("cpu"), blocked, scope="local")
    assert good.scope == StringAttr("local") and good.constraint == blocked
    wrong_rank = loop.AllocOp(MemRefType(f32, [16]), constraint=blocked)
    wrong_scope = loop.AllocOp(MemRefType(f32, [16]), scope="shared")
    func = loop.FuncOp("f", ([], []))
    func.body.block.add_ops([good, wrong_rank, wrong_scope, loop.ReturnOp()])
    assert messages(ModuleOp([func])) == [
        "'loop.alloc' op constraint maps to 2 physical dimensions but the buffer "
        "memref<16xf32> has rank 1",
        "'loop.alloc' op scope must be one of global, local, got 'shared'",
    ]


def test_copy_checks_shapes():
    func = loop.FuncOp("f", ([MemRefType(f32, [4]), MemRefType(f32, [5])], []))
    a, b = func.args
    with ImplicitBuilder(func.body.block):
        loop.CopyOp(a, b, src=DeviceAttr("cpu"), dst=DeviceAttr("gpu"))
        loop.ReturnOp()
    assert messages(ModuleOp([func])) == [
        "'loop.copy' op source and target shapes must match: [4] != [5]"
    ]


def test_call_checks_loop_func_signature_and_allows_external_symbols():
    buf = MemRefType(f32, [4])
    callee = loop.FuncOp("callee", ([buf], []))
    with ImplicitBuilder(callee.body.block):
        loop.ReturnOp()
    caller = loop.FuncOp("caller", ([buf, MemRefType(f32, [8])], []))
    ok, bad = caller.args
    with ImplicitBuilder(caller.body.block):
        loop.CallOp("callee", [ok])
        loop.CallOp("somewhere_else", [bad], [i32])
        loop.CallOp("callee", [bad])
        loop.ReturnOp()
    assert messages(ModuleOp([callee, caller])) == [
        "'loop.call' op argument types do not match the callee @callee: expected "
        "(memref<4xf32>), got (memref<8xf32>)"
    ]


def test_undef_only_as_stored_value():
    buf_t = MemRefType(f32, [4])
    func = loop.FuncOp("f", ([buf_t, INDEX], []))
    buf, i = func.args
    with ImplicitBuilder(func.body.block):
        stored = loop.UndefOp(f32)
        loop.StoreOp(stored, buf, [i])
        misused = loop.UndefOp(f32)
        arith.AddfOp(misused, misused)
        loop.ReturnOp()
    assert messages(ModuleOp([func])) == [
        "'loop.undef' op result may only be stored (the value of a loop.store, directly "
        "or through arith.select), but is used by arith.addf"
    ]


def test_if_builder_and_result_rules():
    func = loop.FuncOp("f", ([i1, f32], [f32]))
    cond, x = func.args
    then_block = Block()
    with ImplicitBuilder(then_block):
        loop.YieldOp(x)
    with ImplicitBuilder(func.body.block):
        loop.AssumeOp(cond)
        guard = loop.IfOp(cond)  # no results: then block ends in an empty yield
        with_results = loop.IfOp(cond, [f32], Region(then_block))
        loop.ReturnOp(with_results)
    assert isinstance(guard.then_region.block.last_op, loop.YieldOp)
    assert not guard.else_region.blocks
    assert messages(ModuleOp([func])) == [
        "'loop.if' op an if with results (f32) needs an else region"
    ]


def test_func_queries_and_declarations():
    constraint = ConstraintAttr(AffineMapAttr(AffineMap.identity(1)), FloatAttr(0.0, f32))
    attrs = ArrayAttr([DictionaryAttr({"lamina.constraint": constraint})])
    decl = loop.FuncOp("ext", ([MemRefType(f32, [4])], []), None, "private", arg_attrs=attrs)
    assert decl.is_declaration and decl.args == ()
    assert decl.arg_attr(0, "lamina.constraint") == constraint
    assert decl.arg_attr(0, "device") is None
    assert decl.get_return_op() is None
    assert messages(ModuleOp([decl])) == []


def test_loop_func_rejects_tensor_arguments():
    func = loop.FuncOp("f", ([TensorType(f32, [4])], []))
    with ImplicitBuilder(func.body.block):
        loop.ReturnOp()
    assert messages(ModuleOp([func])) == [
        "'loop.func' op argument #0 must be a memref or a scalar (integer, index, float), "
        "got tensor<4xf32>"
    ]


def test_bad_kind_in_text_is_a_located_parse_diagnostic():
    text = """loop.func @f(%n: index) {
  loop.for %i = %n to %n step %n kind(fast) {
  }
  loop.return
}"""
    with pytest.raises(DiagnosticError) as err:
        parse_module(make_context(), text, "k.mlir")
    assert "k.mlir:2:" in err.value.format()
    assert "loop kind must be one of serial, parallel, vectorized, unrolled" in str(err.value)


# ---------------------------------------------------------------------------
# te: building compute DAGs
# ---------------------------------------------------------------------------


def build_matmul_te(m: int = 4, k: int = 8, n: int = 16) -> tuple[ModuleOp, te.ComputeOp]:
    a_t, b_t, c_t = TensorType(f32, [m, k]), TensorType(f32, [k, n]), TensorType(f32, [m, n])
    func = te.FuncOp("matmul", ([a_t, b_t], [c_t]))
    a, b = func.args
    compute = te.ComputeOp(c_t, reduce_extents=[k])
    i, j, kk = compute.body.block.args
    with ImplicitBuilder(compute.body.block):
        x = te.ReadOp(a, [i, kk])
        y = te.ReadOp(b, [kk, j])
        te.YieldOp(arith.MulfOp(x, y))
    func.body.block.add_ops([compute, te.ReturnOp(compute)])
    return ModuleOp([func]), compute


def test_compute_builder_and_queries():
    module, compute = build_matmul_te()
    assert messages(module) == []
    assert compute.shape_values == (4, 16)
    assert compute.reduce_values == (8,)
    assert compute.combiner == StringAttr("sum")  # a reduction defaults to sum
    assert compute.init_value() == FloatAttr(0.0, f32)
    assert len(compute.spatial_indices) == 2 and len(compute.reduce_indices) == 1
    assert compute.yielded.type == f32
    text = render(module)
    assert "te.compute [4, 16] reduce [8] combiner(sum)" in text
    reparsed = parse_module(make_context(), render(module, generic=True))
    assert render(reparsed) == text


def test_elementwise_compute_is_not_a_reduction():
    t = TensorType(f32, [3])
    func = te.FuncOp("neg", ([t], [t]))
    compute = te.ComputeOp(t)
    with ImplicitBuilder(compute.body.block):
        te.YieldOp(arith.NegfOp(te.ReadOp(func.args[0], compute.spatial_indices)))
    func.body.block.add_ops([compute, te.ReturnOp(compute)])
    assert messages(ModuleOp([func])) == []
    assert not compute.is_reduction and compute.init_value() is None
    assert compute.reduce_indices == ()


@pytest.mark.parametrize(
    ("combiner", "type", "expected"),
    [
        ("sum", f32, FloatAttr(0.0, f32)),
        ("prod", f64, FloatAttr(1.0, f64)),
        ("max", f32, FloatAttr(float("-inf"), f32)),
        ("min", f32, FloatAttr(float("inf"), f32)),
        ("max", i32, IntegerAttr(-(2**31), i32)),
        ("min", i32, IntegerAttr(2**31 - 1, i32)),
        ("max", i1, IntegerAttr(0, i1)),
        ("min", i1, IntegerAttr(1, i1)),
    ],
)
def test_combiner_identity(combiner, type, expected):
    assert te.combiner_identity(combiner, type) == expected


def test_compute_reports_shape_and_yield_mismatches():
    module, compute = build_matmul_te()
    compute.shape = te._array([4, 15])
    assert messages(module) == ["'te.compute' op shape [4, 15] must equal the result shape [4, 16]"]
    compute.shape = te._array([4, 16])
    compute.init = IntegerAttr(0, i32)
    assert messages(module) == [
        "'te.compute' op init type must be the result element type: expected f32, got i32"
    ]


def test_read_checks_rank():
    module, compute = build_matmul_te()
    read = next(o for o in compute.body.walk() if isinstance(o, te.ReadOp))
    read.operands = [read.tensor, read.indices[0]]
    assert messages(module) == [
        "'te.read' op expected 2 indices (one per dimension of tensor<4x8xf32>), got 1"
    ]


def test_undef_may_only_be_yielded_through_select():
    t = TensorType(f32, [4])
    func = te.FuncOp("pad", ([t], [t]))
    compute = te.ComputeOp(t)
    (i,) = compute.spatial_indices
    with ImplicitBuilder(compute.body.block):
        in_bounds = arith.CmpiOp(i, arith.ConstantOp(IntegerAttr(3, INDEX)), "ult")
        value = te.ReadOp(func.args[0], [i])
        undef = te.UndefOp(f32)
        te.YieldOp(arith.SelectOp(in_bounds, value, undef))
    func.body.block.add_ops([compute, te.ReturnOp(compute)])
    module = ModuleOp([func])
    assert messages(module) == []
    compute.body.block.insert_op_before(neg := arith.NegfOp(undef), compute.yield_op)
    assert messages(module) == [
        "'te.undef' op result may only be yielded (used by te.yield, directly or through "
        "arith.select)"
    ]
    neg.detach()
    neg.erase()
    assert messages(module) == []


def test_te_func_top_level_is_computes_constants_and_return():
    t = TensorType(f32, [4])
    func = te.FuncOp("f", ([t], [t]))
    with ImplicitBuilder(func.body.block):
        c = arith.ConstantOp(FloatAttr(1.0, f32))
        arith.AddfOp(c, c)
        te.ReturnOp(func.args[0])
    assert messages(ModuleOp([func])) == [
        "'te.func' op body may only contain te.compute, constants and te.return at the "
        "top level, got arith.addf"
    ]
