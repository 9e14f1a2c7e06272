"""Tests of `lower-te`, `lower-graph` and `plan-memory`: graph/te → loop.

Structure: what each pass leaves behind (no te/graph ops, destination-passing
signatures, loop nest order, temporaries freed once after their last use,
storage shared only between identical buffers of one device).

Semantics: graph programs are compiled through legalize → lower-te →
[plan-memory] → lower-graph → lower-to-llvm, JIT-compiled, run on NumPy
arrays (outputs passed in, destination-passing style) and compared with NumPy.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from op_cases import CASES, OpCase, np_dtype, ref_conv2d
from xdsl.dialects.builtin import MemRefType, ModuleOp, TensorType
from xdsl.ir import Operation

import lamina
from lamina.backends.codegen import emit_llvm_ir
from lamina.backends.jit import Kernel
from lamina.core.context import make_context
from lamina.core.diagnostics import DiagnosticError, parse_module
from lamina.core.pass_manager import PassManager, parse_pass_pipeline
from lamina.dialects import graph, loop
from lamina.dialects.reference import evaluate
from lamina.driver.lowering import lower_to_build
from lamina.passes.lower_graph import STORAGE_ATTR

HEADER = "builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {\n"
FULL = "legalize,lower-te,plan-memory,lower-graph,lower-to-llvm"
RNG = np.random.default_rng(0)


def parse(body: str) -> ModuleOp:
    return parse_module(make_context(), HEADER + body + "\n}\n", "test.mlir")


def run_passes(module: ModuleOp, spec: str) -> ModuleOp:
    PassManager(parse_pass_pipeline(spec)).run(make_context(), module)
    return module


def compile_graph(body: str, spec: str = FULL) -> Kernel:
    return Kernel(run_passes(parse(body), spec))


def call(kernel: Kernel, inputs: Sequence[np.ndarray], outputs: Sequence[tuple]) -> list:
    """Call `main` with `inputs` and freshly allocated outputs of (shape, dtype)."""
    outs = [np.full(shape, 7, dtype=dtype) for shape, dtype in outputs]
    kernel.call("main", *inputs, *outs)
    return outs


def ops_named(module: ModuleOp, prefix: str) -> list[Operation]:
    return [op for op in module.walk() if op.name.startswith(prefix)]


def loop_funcs(module: ModuleOp) -> dict[str, loop.FuncOp]:
    return {op.sym_name.data: op for op in module.ops if isinstance(op, loop.FuncOp)}


def matmul_softmax(m: int, k: int, n: int) -> str:
    """`main(a: m×k, b: k×n) = softmax(a @ b, axis=-1)`."""
    a, b, y = f"tensor<{m}x{k}xf32>", f"tensor<{k}x{n}xf32>", f"tensor<{m}x{n}xf32>"
    return f"""
  graph.func @main(%a: {a}, %b: {b}) -> {y} {{
    %y = graph.matmul %a, %b : ({a}, {b}) -> {y}
    %s = graph.softmax %y {{axis = -1 : i64}} : ({y}) -> {y}
    graph.return %s : {y}
  }}
"""


MATMUL_SOFTMAX = matmul_softmax(3, 5, 4)


def np_softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


# ---------------------------------------------------------------------------
# lower-te: structure
# ---------------------------------------------------------------------------


def test_lower_te_leaves_dps_loop_funcs_and_call_loops() -> None:
    module = run_passes(parse(MATMUL_SOFTMAX), "legalize,lower-te")
    assert not ops_named(module, "te.") and not ops_named(module, "graph.call_te")
    funcs = loop_funcs(module)
    calls = ops_named(module, "graph.call_loop")
    assert len(calls) == 2
    for c in calls:
        assert isinstance(c, graph.CallLoopOp)
        callee = funcs[c.callee.root_reference.data]
        assert callee.sym_name.data.endswith("_loop")
        params = callee.function_type.inputs.data
        expected = [*c.arguments.types, *c.res.types]
        assert [(p.get_shape(), p.element_type) for p in params] == [
            (t.get_shape(), t.element_type) for t in expected
        ]
        assert all(isinstance(p, MemRefType) for p in params)
        assert not callee.function_type.outputs.data


def test_innermost_loop_walks_the_last_dimension() -> None:
    """Every store's last index is the induction variable of the loop right around
    it, so consecutive iterations store consecutive elements (the matmul's
    accumulation as well as softmax's elementwise and row-reduction nests)."""
    module = run_passes(parse(MATMUL_SOFTMAX), "legalize,lower-te")
    stores = [op for op in module.walk() if isinstance(op, loop.StoreOp)]
    assert len(stores) == 6  # matmul: init + accumulate; softmax: max, exp, sum, div
    for store in stores:
        parent = store.parent_op()
        assert isinstance(parent, loop.ForOp)
        assert store.indices[-1] is parent.induction_var


def test_matmul_accumulates_in_memory_with_the_column_loop_innermost() -> None:
    """`for i: (for j: C[i,j] = 0); for k: for j (vectorized): C[i,j] += A[i,k]*B[k,j]`."""
    module = run_passes(parse(MATMUL_SOFTMAX), "legalize,lower-te")
    (matmul,) = [f for name, f in loop_funcs(module).items() if "matmul" in name]
    a, b, c = matmul.args
    (i_loop,) = [op for op in matmul.body.block.ops if isinstance(op, loop.ForOp)]
    fill, k_loop = [op for op in i_loop.body.block.ops if isinstance(op, loop.ForOp)]
    (j_loop,) = [op for op in k_loop.body.block.ops if isinstance(op, loop.ForOp)]
    assert not k_loop.iter_args and k_loop.kind_name == "serial"
    assert fill.kind_name == j_loop.kind_name == "vectorized"
    i, j = i_loop.induction_var, j_loop.induction_var
    (init,) = [op for op in fill.body.block.ops if isinstance(op, loop.StoreOp)]
    assert init.buffer is c and list(init.indices) == [i, fill.induction_var]
    loads = {op.buffer: list(op.indices) for op in j_loop.walk() if isinstance(op, loop.LoadOp)}
    assert loads == {a: [i, k_loop.induction_var], b: [k_loop.induction_var, j], c: [i, j]}


def test_softmax_temporaries_are_local_and_freed_once_after_their_last_use() -> None:
    module = run_passes(parse(MATMUL_SOFTMAX), "legalize,lower-te")
    (softmax,) = [f for name, f in loop_funcs(module).items() if "softmax" in name]
    allocs = [op for op in softmax.body.block.ops if isinstance(op, loop.AllocOp)]
    assert len(allocs) == 3  # max, exp, sum; the division writes the output
    block = softmax.body.block
    for alloc in allocs:
        assert alloc.scope.data == "local"
        frees = [u.operation for u in alloc.result.uses if isinstance(u.operation, loop.FreeOp)]
        assert len(frees) == 1
        free_at = block.get_operation_index(frees[0])
        for use in alloc.result.uses:
            top = block.find_ancestor_op_in_block(use.operation)
            assert top is not None and block.get_operation_index(top) <= free_at


def test_only_big_nests_get_a_parallel_outermost_loop() -> None:
    small = run_passes(parse(MATMUL_SOFTMAX), "legalize,lower-te")
    assert not [op for op in small.walk() if getattr(op, "kind_name", "") == "parallel"]
    big = run_passes(parse(matmul_softmax(512, 64, 512)), "legalize,lower-te")
    parallel = [op for op in big.walk() if getattr(op, "kind_name", "") == "parallel"]
    assert len(parallel) == 5  # matmul, and softmax's max, exp, sum, div
    for op in parallel:
        assert not isinstance(op.parent_op(), loop.ForOp)
        assert not op.iter_args


# ---------------------------------------------------------------------------
# lower-graph and plan-memory: structure
# ---------------------------------------------------------------------------


def test_lower_graph_removes_graph_ops_and_tensors() -> None:
    module = run_passes(parse(MATMUL_SOFTMAX), "legalize,lower-te,lower-graph")
    assert not ops_named(module, "graph.") and not ops_named(module, "te.")
    for op in module.walk():
        for value in (*op.results, *(a for r in op.regions for b in r.blocks for a in b.args)):
            assert not isinstance(value.type, TensorType), op
    main = loop_funcs(module)["main"]
    assert [str(t) for t in main.function_type.inputs.data] == [
        "memref<3x5xf32>",
        "memref<5x4xf32>",
        "memref<3x4xf32>",
    ]


CHAIN = """
  graph.func @main(%x: tensor<16xf32>) -> tensor<16xf32> {
    %a = graph.exp %x : (tensor<16xf32>) -> tensor<16xf32>
    %b = graph.neg %a : (tensor<16xf32>) -> tensor<16xf32>
    %c = graph.exp %b {device = #lamina.device<"cpu", 1>} : (tensor<16xf32>) -> tensor<16xf32>
    %d = graph.add %c, %b : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    %e = graph.tanh %d : (tensor<16xf32>) -> tensor<16xf32>
    %f = graph.sigmoid %e : (tensor<16xf32>) -> tensor<16xf32>
    graph.return %f : tensor<16xf32>
  }
"""


def host_allocs(module: ModuleOp) -> list[loop.AllocOp]:
    main = loop_funcs(module)["main"]
    return [op for op in main.body.block.ops if isinstance(op, loop.AllocOp)]


def test_plan_memory_shares_only_dead_buffers_of_one_device() -> None:
    unplanned = host_allocs(run_passes(parse(CHAIN), "legalize,lower-te,lower-graph"))
    planned = host_allocs(run_passes(parse(CHAIN), "legalize,lower-te,plan-memory,lower-graph"))
    assert len(unplanned) == 5  # a..e; f is the output
    assert len(planned) < len(unplanned)
    devices = {str(a.device) for a in planned}
    assert devices == {"None", str(unplanned[2].device)}  # cpu:1 keeps its own buffer


def test_plan_memory_in_both_positions_gives_the_same_host_code() -> None:
    before = run_passes(parse(CHAIN), "legalize,lower-te,plan-memory,lower-graph")
    after = run_passes(parse(CHAIN), "legalize,lower-te,lower-graph,plan-memory")
    assert str(loop_funcs(before)["main"]) == str(loop_funcs(after)["main"])


def test_plan_memory_is_idempotent() -> None:
    once = run_passes(parse(CHAIN), "legalize,lower-te,plan-memory")
    twice = run_passes(parse(CHAIN), "legalize,lower-te,plan-memory,plan-memory")
    assert str(once) == str(twice)


def test_unresolvable_invoke_is_a_diagnostic_at_the_op() -> None:
    module = parse_module(
        make_context(),
        """builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  graph.func @apply(%f: !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, %x: tensor<4xf32>) -> tensor<4xf32> attributes {force_pure} {
    %y = graph.invoke %f(%x) : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, tensor<4xf32>) -> tensor<4xf32>
    graph.return %y : tensor<4xf32>
  }
}""",
        "invoke.mlir",
    )
    with pytest.raises(DiagnosticError) as info:
        run_passes(module, "lower-graph")
    text = info.value.format()
    assert "invoke.mlir:3:5: error: 'graph.invoke' op cannot resolve the callee statically" in text


# ---------------------------------------------------------------------------
# Numerics through lower-to-llvm and the JIT
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("spec", [FULL, FULL.replace("plan-memory,", "")])
def test_matmul_softmax_dag_matches_numpy(spec: str) -> None:
    kernel = compile_graph(MATMUL_SOFTMAX, spec)
    a = RNG.standard_normal((3, 5)).astype(np.float32)
    b = RNG.standard_normal((5, 4)).astype(np.float32)
    (got,) = call(kernel, [a, b], [((3, 4), np.float32)])
    np.testing.assert_allclose(got, np_softmax(a @ b), rtol=1e-5, atol=1e-6)


def test_big_matmul_softmax_on_a_thread_team_matches_numpy() -> None:
    kernel = compile_graph(matmul_softmax(128, 64, 256))
    a = RNG.standard_normal((128, 64)).astype(np.float32)
    b = RNG.standard_normal((64, 256)).astype(np.float32) / 8
    (got,) = call(kernel, [a, b], [((128, 256), np.float32)])
    np.testing.assert_allclose(got, np_softmax(a @ b), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (7, 3, 5), (16, 32, 8)])
def test_matmul_matches_numpy(m: int, k: int, n: int) -> None:
    kernel = compile_graph(f"""
  graph.func @main(%a: tensor<{m}x{k}xf64>, %b: tensor<{k}x{n}xf64>) -> tensor<{m}x{n}xf64> {{
    %y = graph.matmul %a, %b : (tensor<{m}x{k}xf64>, tensor<{k}x{n}xf64>) -> tensor<{m}x{n}xf64>
    graph.return %y : tensor<{m}x{n}xf64>
  }}""")
    a, b = RNG.standard_normal((m, k)), RNG.standard_normal((k, n))
    (got,) = call(kernel, [a, b], [((m, n), np.float64)])
    np.testing.assert_allclose(got, a @ b, rtol=1e-12)


def test_two_call_graph_function_with_constant_matches_numpy() -> None:
    """Two kernel calls through an intermediate, a constant operand, and outputs that
    are a parameter and a value returned twice (copies)."""
    kernel = compile_graph("""
  graph.func @main(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
    %c = graph.constant dense<[[1.0, -2.0, 3.0], [0.5, 0.0, -1.5]]> : tensor<2x3xf32>
    %t = graph.mul %x, %c : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %y = graph.relu %t : (tensor<2x3xf32>) -> tensor<2x3xf32>
    graph.return %y, %x, %y : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
  }""")
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    c = np.array([[1.0, -2.0, 3.0], [0.5, 0.0, -1.5]], np.float32)
    y, x_out, y2 = call(kernel, [x], [((2, 3), np.float32)] * 3)
    np.testing.assert_allclose(y, np.maximum(x * c, 0), rtol=1e-6)
    np.testing.assert_array_equal(x_out, x)
    np.testing.assert_array_equal(y2, y)


def test_graph_call_and_closure_invoke_match_numpy() -> None:
    kernel = compile_graph("""
  graph.func @scale(%w: tensor<8xf32>, %x: tensor<8xf32>) -> tensor<8xf32> {
    %y = graph.mul %w, %x : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    graph.return %y : tensor<8xf32>
  }
  graph.func @main(%w: tensor<8xf32>, %x: tensor<8xf32>) -> tensor<8xf32> {
    %a = graph.call @scale(%w, %x) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    %f = graph.closure @scale(%w) : (tensor<8xf32>) -> !graph.fn<(tensor<8xf32>) -> tensor<8xf32>>
    %b = graph.invoke %f(%a) {pure} : (!graph.fn<(tensor<8xf32>) -> tensor<8xf32>>, tensor<8xf32>) -> tensor<8xf32>
    graph.return %b : tensor<8xf32>
  }""")
    w, x = RNG.standard_normal(8).astype(np.float32), RNG.standard_normal(8).astype(np.float32)
    (got,) = call(kernel, [w, x], [((8,), np.float32)])
    np.testing.assert_allclose(got, w * w * x, rtol=1e-6)


def test_chain_with_buffer_reuse_matches_numpy() -> None:
    kernel = compile_graph(CHAIN)
    x = RNG.uniform(0.1, 2.0, 16).astype(np.float32)
    (got,) = call(kernel, [x], [((16,), np.float32)])
    b = -np.exp(x)
    np.testing.assert_allclose(got, 1 / (1 + np.exp(-np.tanh(np.exp(b) + b))), rtol=1e-5)


def test_kernel_shared_by_a_call_with_a_repeated_operand_matches_numpy() -> None:
    """`x + x` and `x + y` share one kernel, which must read both of its parameters
    (regression: the kernel built for `x + x` read its second parameter twice)."""
    kernel = compile_graph("""
  graph.func @main(%x: tensor<8xf32>) -> tensor<8xf32> {
    %d = graph.add %x, %x : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    %t = graph.add %x, %d : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    graph.return %t : tensor<8xf32>
  }""")
    x = RNG.standard_normal(8).astype(np.float32)
    (got,) = call(kernel, [x], [((8,), np.float32)])
    np.testing.assert_allclose(got, 3 * x, rtol=1e-6)


def dense(array: np.ndarray) -> str:
    """`dense<[[...], ...]> : tensor<AxBxf32>` for a float32 array."""
    values = np.array2string(array, separator=", ", threshold=1 << 30, floatmode="unique")
    shape = "x".join(str(d) for d in array.shape)
    return f"dense<{values}> : tensor<{shape}xf32>"


def test_mlp_with_constant_weights_matches_numpy() -> None:
    """Two dense layers whose weights and biases are graph constants (globals)."""
    w1, b1 = RNG.standard_normal((16, 8)).astype(np.float32), RNG.standard_normal(8)
    w2, b2 = RNG.standard_normal((8, 4)).astype(np.float32), RNG.standard_normal(4)
    b1, b2 = b1.astype(np.float32), b2.astype(np.float32)
    kernel = compile_graph(f"""
  graph.func @main(%x: tensor<5x16xf32>) -> tensor<5x4xf32> {{
    %w1 = graph.constant {dense(w1)}
    %b1 = graph.constant {dense(b1)}
    %w2 = graph.constant {dense(w2)}
    %b2 = graph.constant {dense(b2)}
    %h = graph.matmul %x, %w1 : (tensor<5x16xf32>, tensor<16x8xf32>) -> tensor<5x8xf32>
    %hb = graph.add %h, %b1 : (tensor<5x8xf32>, tensor<8xf32>) -> tensor<5x8xf32>
    %r = graph.relu %hb : (tensor<5x8xf32>) -> tensor<5x8xf32>
    %o = graph.matmul %r, %w2 : (tensor<5x8xf32>, tensor<8x4xf32>) -> tensor<5x4xf32>
    %ob = graph.add %o, %b2 : (tensor<5x4xf32>, tensor<4xf32>) -> tensor<5x4xf32>
    %s = graph.softmax %ob {{axis = -1 : i64}} : (tensor<5x4xf32>) -> tensor<5x4xf32>
    graph.return %s : tensor<5x4xf32>
  }}""")
    x = RNG.standard_normal((5, 16)).astype(np.float32)
    (got,) = call(kernel, [x], [((5, 4), np.float32)])
    want = np_softmax(np.maximum(x @ w1 + b1, 0) @ w2 + b2)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_integer_and_zero_d_reductions_match_numpy() -> None:
    kernel = compile_graph("""
  graph.func @main(%x: tensor<4x6xi32>) -> (tensor<4xi32>, tensor<i32>) {
    %m = graph.reduce_max %x {axes = array<i64: 1>} : (tensor<4x6xi32>) -> tensor<4xi32>
    %s = graph.reduce_sum %x : (tensor<4x6xi32>) -> tensor<i32>
    graph.return %m, %s : tensor<4xi32>, tensor<i32>
  }""")
    x = RNG.integers(-50, 50, (4, 6)).astype(np.int32)
    m, s = call(kernel, [x], [((4,), np.int32), ((), np.int32)])
    np.testing.assert_array_equal(m, x.max(axis=1))
    assert int(s) == int(x.sum())


def _first_case_per_op() -> list[OpCase]:
    seen: dict[str, OpCase] = {}
    for case in CASES:
        seen.setdefault(case.op_name, case)
    return list(seen.values())


@pytest.mark.parametrize("case", _first_case_per_op(), ids=lambda c: c.id)
def test_every_op_kind_compiles_and_matches_numpy(case: OpCase) -> None:
    module = run_passes(case.module(), FULL)
    arrays = case.sample()
    (rtype,) = case.func().function_type.outputs.data
    assert isinstance(rtype, TensorType)
    out = np.zeros(tuple(rtype.get_shape()), dtype=np_dtype(rtype.element_type))
    Kernel(module).call("main", *[np.ascontiguousarray(a) for a in arrays], out)
    case.check(out, arrays)


# ---------------------------------------------------------------------------
# Property: random DAGs of elementwise ops on two devices
# ---------------------------------------------------------------------------

UNARY = ("exp", "neg", "tanh", "sigmoid")
BINARY = ("add", "mul", "sub", "maximum")
DEVICES = ("", ' {device = #lamina.device<"cpu", 1>}')


@st.composite
def random_dags(draw: st.DrawFn) -> tuple[str, int]:
    """`graph.func @main(%v0, %v1) -> (...)`: elementwise ops over two shapes, random
    operands and devices, returning the last value and a random subset of the others."""
    shapes = {"a": "tensor<8xf32>", "b": "tensor<2x3xf32>"}
    values = [("v0", "a"), ("v1", "b")]
    lines = []
    for n in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(("a", "b")))
        candidates = [name for name, k in values if k == kind] or ["v0" if kind == "a" else "v1"]
        device = draw(st.sampled_from(DEVICES))
        t = shapes[kind]
        if draw(st.booleans()):
            op, x = draw(st.sampled_from(UNARY)), draw(st.sampled_from(candidates))
            lines.append(f"%r{n} = graph.{op} %{x}{device} : ({t}) -> {t}")
        else:
            op = draw(st.sampled_from(BINARY))
            x, y = draw(st.sampled_from(candidates)), draw(st.sampled_from(candidates))
            lines.append(f"%r{n} = graph.{op} %{x}, %{y}{device} : ({t}, {t}) -> {t}")
        values.append((f"r{n}", kind))
    computed = values[2:]
    returned = [computed[-1]] + draw(st.lists(st.sampled_from(values), max_size=2))
    body = "\n    ".join(lines)
    ret_values = ", ".join(f"%{name}" for name, _ in returned)
    ret_types = ", ".join(shapes[k] for _, k in returned)
    text = f"""
  graph.func @main(%v0: tensor<8xf32>, %v1: tensor<2x3xf32>) -> ({ret_types}) {{
    {body}
    graph.return {ret_values} : {ret_types}
  }}"""
    return text, len(returned)


def check_slots_never_overlap(module: ModuleOp) -> None:
    """Values sharing a `lamina.storage` slot have one buffer type and device and
    disjoint lifetimes [definition, last use]."""
    (main,) = [op for op in module.ops if isinstance(op, graph.FuncOp)]
    block = main.body.block
    by_slot: dict[int, list[tuple[int, int, object]]] = {}
    for index, op in enumerate(block.ops):
        attr = op.attributes.get(STORAGE_ATTR)
        if attr is None:
            continue
        for result, slot in zip(op.results, attr.get_values(), strict=True):
            if slot < 0:
                continue
            uses = [block.get_operation_index(u.operation) for u in result.uses]
            key = (str(result.type), str(op.properties.get("device")))
            by_slot.setdefault(slot, []).append((index, max(uses, default=index), key))
    for lives in by_slot.values():
        assert len({key for _, _, key in lives}) == 1
        lives.sort()
        for (_, end, _), (start, _, _) in itertools.pairwise(lives):
            assert end < start


@settings(max_examples=15, deadline=None)
@given(random_dags())
def test_planned_buffers_never_overlap_and_numerics_are_unchanged(dag: tuple[str, int]) -> None:
    text, n_results = dag
    planned = run_passes(parse(text), "legalize,lower-te,plan-memory")
    check_slots_never_overlap(planned)
    x = RNG.uniform(-1, 1, 8).astype(np.float32)
    y = RNG.uniform(-1, 1, (2, 3)).astype(np.float32)
    want = evaluate(parse(text), "main", x, y)
    shapes = [(w.shape, np.float32) for w in want]
    got_planned = call(Kernel(run_passes(planned, "lower-graph,lower-to-llvm")), [x, y], shapes)
    got_plain = call(compile_graph(text, FULL.replace("plan-memory,", "")), [x, y], shapes)
    assert len(got_planned) == n_results
    for g, p, w in zip(got_planned, got_plain, want, strict=True):
        np.testing.assert_array_equal(g, p)
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------
# Numerics of the loop orders (in-register and in-memory reductions) through
# `lamina.compile`
# ---------------------------------------------------------------------------


def run_program(text: str, *inputs: np.ndarray):
    """Compile a module (graph and te functions) with `lamina.compile`, run `main`."""
    return lamina.compile(f"builtin.module {{\n{text}\n}}\n").run("main", *inputs)


def one_op_program(op_text: str, ins: Sequence[tuple], out: tuple, dtype: str = "f32") -> str:
    """`main(%x0, %x1, ...) = <op_text>` (with `$operands` for `%x0, %x1, ...`) over
    tensors of shapes `ins`, result shape `out`."""

    def t(shape: tuple) -> str:
        return f"tensor<{''.join(f'{d}x' for d in shape)}{dtype}>"

    params = ", ".join(f"%x{n}: {t(s)}" for n, s in enumerate(ins))
    operands = ", ".join(f"%x{n}" for n in range(len(ins)))
    types = ", ".join(t(s) for s in ins)
    return f"""
  graph.func @main({params}) -> {t(out)} {{
    %y = {op_text.replace("$operands", operands)} : ({types}) -> {t(out)}
    graph.return %y : {t(out)}
  }}"""


@pytest.mark.parametrize(
    "a_shape,b_shape",
    [
        ((1, 1), (1, 1)),
        ((3, 7), (7, 5)),
        ((17, 33), (33, 9)),
        ((1, 13), (13, 1)),
        ((13, 1), (1, 7)),
        ((2, 3, 5), (2, 5, 4)),  # batched
        ((4, 3, 5), (5, 7)),  # batched lhs, shared rhs
        ((3, 1, 4, 6), (2, 6, 3)),  # broadcast batch dims
        ((5,), (5, 4)),  # vector @ matrix
        ((3, 5), (5,)),  # matrix @ vector
        ((130, 70), (70, 150)),  # big enough for a thread team
    ],
)
def test_matmul_of_any_shape_matches_numpy(a_shape: tuple, b_shape: tuple) -> None:
    a = RNG.standard_normal(a_shape).astype(np.float32)
    b = RNG.standard_normal(b_shape).astype(np.float32)
    want = a @ b
    text = one_op_program("graph.matmul $operands", [a_shape, b_shape], want.shape)
    np.testing.assert_allclose(run_program(text, a, b), want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "x_shape,w_shape,strides,padding,dilation,groups",
    [
        ((1, 3, 9, 9), (4, 3, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
        ((2, 3, 9, 8), (4, 3, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1),  # strided
        ((1, 2, 11, 10), (3, 2, 3, 3), (1, 1), (2, 2, 2, 2), (2, 2), 1),  # dilated
        ((1, 4, 7, 7), (6, 2, 3, 3), (1, 2), (0, 1, 2, 1), (1, 1), 2),  # grouped
        ((1, 3, 6, 6), (3, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 3),  # depthwise
        ((1, 2, 5, 5), (3, 2, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),  # 1x1
    ],
)
def test_conv2d_matches_numpy(
    x_shape: tuple, w_shape: tuple, strides: tuple, padding: tuple, dilation: tuple, groups: int
) -> None:
    x = RNG.standard_normal(x_shape).astype(np.float32)
    w = RNG.standard_normal(w_shape).astype(np.float32)
    want = ref_conv2d(x, w, strides, padding, dilation, groups)
    attrs = (
        f"{{strides = array<i64: {', '.join(map(str, strides))}>, "
        f"padding = array<i64: {', '.join(map(str, padding))}>, "
        f"dilation = array<i64: {', '.join(map(str, dilation))}>, groups = {groups} : i64}}"
    )
    text = one_op_program(f"graph.conv2d $operands {attrs}", [x_shape, w_shape], want.shape)
    np.testing.assert_allclose(run_program(text, x, w), want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "op,shape,axes,keepdims",
    [
        ("sum", (4, 5, 6), (1,), False),  # middle axis: accumulated in memory
        ("max", (4, 5, 6), (1,), True),
        ("mean", (4, 5, 6), (0, 2), False),
        ("max", (7, 9), (0,), True),  # column reduction, rank-1 rows
        ("sum", (3, 1, 4), (1,), False),  # a reduction of extent 1
        ("max", (5, 1), (0,), False),
        ("sum", (6, 8), None, True),  # every axis, keepdims: all-1 result
        ("mean", (2, 3, 4), (2,), True),  # last axis: accumulated in a register
    ],
)
def test_graph_reductions_match_numpy(
    op: str, shape: tuple, axes: tuple | None, keepdims: bool
) -> None:
    x = RNG.standard_normal(shape).astype(np.float32)
    want = getattr(np, op)(x, axis=axes, keepdims=keepdims)
    attrs = [] if axes is None else [f"axes = array<i64: {', '.join(map(str, axes))}>"]
    attrs += ["keepdims"] if keepdims else []
    text = one_op_program(
        f"graph.reduce_{op} $operands {{{', '.join(attrs)}}}", [shape], want.shape
    )
    np.testing.assert_allclose(run_program(text, x), np.asarray(want), rtol=1e-5, atol=1e-6)


def te_reduction(shape: tuple, axes: tuple, combiner: str, dtype: str, init: str = "") -> str:
    """`main(x) = combiner over axes of x`, written as a te.func (any combiner)."""
    kept = [d for d in range(len(shape)) if d not in axes]
    out = [shape[d] for d in kept]

    def t(dims: Sequence[int]) -> str:
        return f"tensor<{''.join(f'{d}x' for d in dims)}{dtype}>"

    ivs = ", ".join([*(f"%i{d}" for d in kept), *(f"%k{d}" for d in axes)])
    index = ", ".join(f"%i{d}" if d in kept else f"%k{d}" for d in range(len(shape)))
    extents = ", ".join(str(shape[d]) for d in axes)
    spatial = ", ".join(map(str, out))
    init_text = f" init({init} : {dtype})" if init else ""
    return f"""
  graph.func @main(%x: {t(shape)}) -> {t(out)} {{
    %y = graph.call_te @red(%x) : ({t(shape)}) -> {t(out)}
    graph.return %y : {t(out)}
  }}
  te.func @red(%x: {t(shape)}) -> {t(out)} {{
    %r = te.compute [{spatial}] reduce [{extents}] combiner({combiner}){init_text} ({ivs}) {{
      %v = te.read %x[{index}] : {t(shape)}
      te.yield %v : {dtype}
    }} : {t(out)}
    te.return %r : {t(out)}
  }}"""


NP_COMBINERS = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}


@pytest.mark.parametrize("combiner", ["sum", "prod", "max", "min"])
@pytest.mark.parametrize("dtype", ["f32", "f64", "i32"])
@pytest.mark.parametrize(
    "shape,axes",
    [
        ((3, 4, 5), (1,)),  # middle axis: in memory, rows along the last axis
        ((6, 5), (0,)),  # first axis: in memory, no outer loop
        ((4, 6), (1,)),  # last axis: in a register
        ((2, 3, 4), (0, 2)),  # two axes around a kept one
        ((3, 4), (0, 1)),  # every axis: a 0-d result
        ((1, 4, 1), (0, 2)),  # extent-1 reductions
    ],
)
def test_every_combiner_in_both_reduction_forms_matches_numpy(
    combiner: str, dtype: str, shape: tuple, axes: tuple
) -> None:
    np_type = {"f32": np.float32, "f64": np.float64, "i32": np.int32}[dtype]
    if dtype == "i32":
        x = RNG.integers(-3, 4, shape).astype(np_type)
    else:  # around ±1, so that products stay well scaled
        x = (RNG.uniform(0.5, 1.5, shape) * RNG.choice([-1, 1], shape)).astype(np_type)
    got = run_program(te_reduction(shape, axes, combiner, dtype), x)
    want = NP_COMBINERS[combiner](x, axis=axes)
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_explicit_init_starts_both_reduction_forms() -> None:
    x = RNG.standard_normal((5, 6)).astype(np.float32)
    for axes in [(0,), (1,)]:
        got = run_program(te_reduction((5, 6), axes, "max", "f32", init="2.5"), x)
        np.testing.assert_allclose(got, np.maximum(x.max(axis=axes), 2.5))


def test_max_reduction_in_memory_propagates_nan() -> None:
    x = RNG.standard_normal((4, 3)).astype(np.float32)
    x[2, 1] = np.nan
    got = run_program(te_reduction((4, 3), (0,), "max", "f32"), x)
    np.testing.assert_array_equal(np.isnan(got), [False, True, False])
    np.testing.assert_allclose(got[[0, 2]], x.max(axis=0)[[0, 2]])


# ---------------------------------------------------------------------------
# The chosen innermost loops vectorize (LLVM O3 on the host)
# ---------------------------------------------------------------------------

VECTOR_FADD = re.compile(r"= fadd [a-z ]*<\d+ x float>")


def optimized_ir(text: str) -> str:
    module, _ = lower_to_build(parse_module(make_context(), text, "v.mlir"), None, "default")
    return emit_llvm_ir(module)


def test_matmul_column_loop_vectorizes() -> None:
    """`C[i, j] += A[i, k] * B[k, j]` along j: vector loads of B and C, vector fadd,
    no gather (sizes too large for LLVM to unroll everything and SLP-vectorize)."""
    text = one_op_program("graph.matmul $operands", [(16, 200), (200, 520)], (16, 520))
    ir = optimized_ir(f"builtin.module {{\n{text}\n}}\n")
    assert VECTOR_FADD.search(ir) and re.search(r"= load <\d+ x float>", ir)
    assert "gather" not in ir


@pytest.mark.parametrize(
    "op_text, ins, out",
    [
        ("graph.conv2d $operands {padding = array<i64: 1, 1, 1, 1>}",
         [(1, 8, 20, 40), (8, 8, 3, 3)], (1, 8, 20, 40)),
        ("graph.max_pool2d $operands {kernel = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>}",
         [(1, 8, 20, 40)], (1, 8, 20, 40)),
    ],
    ids=["conv2d", "max_pool2d"],
)  # fmt: skip
def test_padded_window_column_loop_vectorizes(op_text: str, ins: list, out: tuple) -> None:
    """legalize pads the input in a separate te.compute, so the window reduction reads
    `x_pad[.., oh + kh, ow + kw]`: vector loads along `ow`, no masked gather (which a
    clamped, selected index inside the reduction produced). The NCHW kernel is
    the subject, so plan-layouts (which would block the conv2d, its data
    transform being a transposing gather) is off."""
    program = one_op_program(op_text, ins, out)
    ir = optimized_ir(
        f"builtin.module attributes {{lamina.plan_layouts = false}} {{\n{program}\n}}\n"
    )
    assert re.search(r"= load <\d+ x float>", ir)
    assert "gather" not in ir


def test_float_row_sum_vectorizes_into_partial_sums() -> None:
    """A last-axis sum stays in a register; `fastmath<reassoc>` lets LLVM split it
    into partial sums over wide loads. Rows of 256: a row of 64 is unrolled
    whole before the loop vectorizer runs, and its chain of 64 scalar adds was
    then vectorized across the 4 rows with gathers, which `+prefer-no-gather`
    (Zen hosts) now refuses (docs/performance.md, "Gathers on Zen 4")."""
    text = one_op_program("graph.reduce_sum $operands {axes = array<i64: 1>}", [(4, 256)], (4,))
    ir = optimized_ir(f"builtin.module {{\n{text}\n}}\n")
    assert re.search(r"= fadd reassoc [a-z ]*<\d+ x float>", ir)
