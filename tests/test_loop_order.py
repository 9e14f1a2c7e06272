"""Tests of `lower-te`'s innermost-loop choice (`schedule/loop_order.py`).

Each case is a te.compute as `legalize` emits it (or written by hand); the
chosen axis is the block argument of its region whose loop goes innermost:
the one along which most accesses are contiguous.
"""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import ModuleOp

from lamina.core.context import make_context
from lamina.core.diagnostics import parse_module
from lamina.core.pass_manager import PassManager, parse_pass_pipeline
from lamina.dialects import te
from lamina.schedule.loop_order import (
    CONTIGUOUS,
    INVARIANT,
    STRIDED,
    AffineIndex,
    Innermost,
    access_score,
    choose_innermost,
)


def legalized(op_text: str, pipeline: str = "legalize") -> te.ComputeOp:
    """The single te.compute `legalize` makes of a one-op `graph.func @main`
    (or of a chain that `fuse-ops,legalize` fuses into one)."""
    text = (
        "builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {\n"
        f"  graph.func @main{op_text}\n}}\n"
    )
    module = parse_module(make_context(), text, "t.mlir")
    PassManager(parse_pass_pipeline(pipeline)).run(make_context(), module)
    return only_compute(module)


def only_compute(module: ModuleOp) -> te.ComputeOp:
    (compute,) = [op for op in module.walk() if isinstance(op, te.ComputeOp)]
    return compute


def te_compute(signature: str, compute_text: str) -> te.ComputeOp:
    """A te.compute written by hand inside `te.func @f{signature}`."""
    text = (
        "builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {\n"
        f"  te.func @f{signature} {{\n    %r = {compute_text}\n"
        "    te.return %r : tensor<" + signature.rsplit("tensor<", 1)[1] + "\n  }\n}\n"
    )
    return only_compute(parse_module(make_context(), text, "t.mlir"))


MATMUL = """(%a: tensor<64x32xf32>, %b: tensor<32x48xf32>) -> tensor<64x48xf32> {
    %y = graph.matmul %a, %b : (tensor<64x32xf32>, tensor<32x48xf32>) -> tensor<64x48xf32>
    graph.return %y : tensor<64x48xf32>
  }"""


def test_matmul_puts_the_output_column_innermost() -> None:
    """j: C and B contiguous, A invariant (+2); k: A contiguous, B strided (0)."""
    assert choose_innermost(legalized(MATMUL)) == Innermost(1, is_reduction=False)


def test_matrix_vector_puts_the_reduction_innermost() -> None:
    compute = legalized("""(%a: tensor<8x16xf32>, %x: tensor<16xf32>) -> tensor<8xf32> {
    %y = graph.matmul %a, %x : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8xf32>
    graph.return %y : tensor<8xf32>
  }""")
    assert choose_innermost(compute) == Innermost(1, is_reduction=True)


def _transposed_rhs_matmul(rows: int) -> str:
    """`A @ B^T` as attention's `Q @ K^T`: both operands contiguous along k."""
    return f"""(%q: tensor<{rows}x32xf32>, %k: tensor<128x32xf32>) -> tensor<{rows}x128xf32> {{
    %t = graph.transpose %k {{perm = array<i64: 1, 0>}} : (tensor<128x32xf32>) -> tensor<32x128xf32>
    %y = graph.matmul %q, %t : (tensor<{rows}x32xf32>, tensor<32x128xf32>) -> tensor<{rows}x128xf32>
    graph.return %y : tensor<{rows}x128xf32>
  }}"""


def test_contraction_with_a_transposed_operand_puts_the_column_innermost() -> None:
    """k scores +2 (Q and K contiguous), j scores 0 (C contiguous, Q invariant,
    K strided), but along j `schedule` builds a micro-kernel over a packed,
    transposed panel of K: the column goes innermost."""
    compute = legalized(_transposed_rhs_matmul(128), "fuse-ops,legalize")
    assert choose_innermost(compute) == Innermost(1, is_reduction=False)


def test_transposed_contraction_with_few_rows_keeps_dot_products() -> None:
    """Two rows reuse no packed panel: the reduction stays innermost."""
    compute = legalized(_transposed_rhs_matmul(2), "fuse-ops,legalize")
    assert choose_innermost(compute) == Innermost(2, is_reduction=True)


@pytest.mark.parametrize(
    "axes,expected",
    [
        ("1", Innermost(1, is_reduction=True)),  # row reduction: in a register
        ("0", Innermost(0, is_reduction=False)),  # column reduction: along the row
    ],
)
def test_reductions_follow_the_contiguous_axis(axes: str, expected: Innermost) -> None:
    out = "tensor<8xf32>" if axes == "1" else "tensor<16xf32>"
    compute = legalized(f"""(%a: tensor<8x16xf32>) -> {out} {{
    %y = graph.reduce_max %a {{axes = array<i64: {axes}>}} : (tensor<8x16xf32>) -> {out}
    graph.return %y : {out}
  }}""")
    assert choose_innermost(compute) == expected


def test_padded_conv2d_puts_the_output_column_innermost() -> None:
    """legalize pads the input in its own te.compute (column innermost), then reads it
    at `ow + kw`: contiguous in ow (with the output store) and in kw (with the weight
    read); the tie goes to the result's last dim."""
    text = (
        "builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {\n"
        "  graph.func @main(%x: tensor<1x4x9x9xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<1x6x9x9xf32> {\n"
        "    %y = graph.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x4x9x9xf32>, tensor<6x4x3x3xf32>) -> tensor<1x6x9x9xf32>\n"
        "    graph.return %y : tensor<1x6x9x9xf32>\n  }\n}\n"
    )  # fmt: skip
    module = parse_module(make_context(), text, "t.mlir")
    PassManager(parse_pass_pipeline("legalize")).run(make_context(), module)
    pad, conv = [op for op in module.walk() if isinstance(op, te.ComputeOp)]
    assert choose_innermost(pad) == Innermost(3, is_reduction=False)
    assert choose_innermost(conv) == Innermost(3, is_reduction=False)


def test_strided_conv2d_reads_phase_split_columns_at_unit_stride() -> None:
    """Stride 2: legalize splits the padded columns into 2 phases and reads
    `[.., kw mod 2, ow + kw div 2]`, contiguous in ow; at `2*ow + kw` the 3-wide kw
    loop (contiguous in the input and the weight) would win instead."""
    text = (
        "builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {\n"
        "  graph.func @main(%x: tensor<1x4x9x18xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<1x6x5x9xf32> {\n"
        "    %y = graph.conv2d %x, %w {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x4x9x18xf32>, tensor<6x4x3x3xf32>) -> tensor<1x6x5x9xf32>\n"
        "    graph.return %y : tensor<1x6x5x9xf32>\n  }\n}\n"
    )  # fmt: skip
    module = parse_module(make_context(), text, "t.mlir")
    PassManager(parse_pass_pipeline("legalize")).run(make_context(), module)
    split, conv = [op for op in module.walk() if isinstance(op, te.ComputeOp)]
    assert split.shape_values == (1, 4, 11, 2, 10)
    assert choose_innermost(conv) == Innermost(3, is_reduction=False)


def test_transpose_reading_along_a_column_moves_that_dimension_innermost() -> None:
    """out[i, j] = a[j, i] + b[j, i]: two contiguous reads in i beat one store in j."""
    compute = te_compute(
        "(%a: tensor<4x6xf32>, %b: tensor<4x6xf32>) -> tensor<6x4xf32>",
        """te.compute [6, 4] (%i, %j) {
      %x = te.read %a[%j, %i] : tensor<4x6xf32>
      %y = te.read %b[%j, %i] : tensor<4x6xf32>
      %s = arith.addf %x, %y : f32
      te.yield %s : f32
    } : tensor<6x4xf32>""",
    )
    assert choose_innermost(compute) == Innermost(0, is_reduction=False)


def test_plain_transpose_ties_and_keeps_the_last_dimension() -> None:
    compute = te_compute(
        "(%a: tensor<4x6xf32>) -> tensor<6x4xf32>",
        """te.compute [6, 4] (%i, %j) {
      %x = te.read %a[%j, %i] : tensor<4x6xf32>
      te.yield %x : f32
    } : tensor<6x4xf32>""",
    )
    assert choose_innermost(compute) == Innermost(1, is_reduction=False)


def test_a_tie_goes_to_the_loop_without_gathers() -> None:
    """layer_norm's variance: along i the mean and the result are contiguous but x
    is read down a column (+1 +1 -1); along k x is contiguous (+1) and the sum
    stays in a register. Equal totals: k, which gathers nothing, goes innermost."""
    compute = te_compute(
        "(%x: tensor<8x16xf32>, %mean: tensor<8xf32>) -> tensor<8xf32>",
        """te.compute [8] reduce [16] combiner(sum) (%i, %k) {
      %a = te.read %x[%i, %k] : tensor<8x16xf32>
      %m = te.read %mean[%i] : tensor<8xf32>
      %d = arith.subf %a, %m : f32
      %s = arith.mulf %d, %d : f32
      te.yield %s : f32
    } : tensor<8xf32>""",
    )
    assert choose_innermost(compute) == Innermost(1, is_reduction=True)


@pytest.mark.parametrize(("hw", "axis"), [(64, 3), (56, 4)], ids=["64x64", "56x56"])
def test_a_tie_avoids_a_gather_whose_lanes_share_one_cache_set(hw: int, axis: int) -> None:
    """NCHW -> NCHW16c of 16 channels of hw x hw f32: along the channel block
    the store is contiguous and the read gathers across planes; along w the
    read is contiguous and the store moves by 64 bytes. Equal totals. At 64x64
    the planes are 16 KiB apart (all 16 lines of a gather in one L1 set): w
    goes innermost; at 56x56 (12.25 KiB, the lines spread over the sets) the
    contiguous store keeps the channel block innermost."""
    x, y = f"tensor<1x16x{hw}x{hw}xf32>", f"tensor<1x1x{hw}x{hw}x16xf32>"
    compute = te_compute(
        f"(%x: {x}) -> {y}",
        f"""te.compute [1, 1, {hw}, {hw}, 16] (%n, %cb, %h, %w, %ci) {{
      %x0 = te.read %x[%n, %ci, %h, %w] : {x}
      te.yield %x0 : f32
    }} : {y}""",
    )
    assert choose_innermost(compute) == Innermost(axis, is_reduction=False)


def test_extent_one_dimensions_are_not_chosen() -> None:
    """In [8, 1] the last dimension has one iteration: the other one goes innermost."""
    compute = te_compute(
        "(%a: tensor<8x1xf32>) -> tensor<8x1xf32>",
        """te.compute [8, 1] (%i, %j) {
      %x = te.read %a[%i, %j] : tensor<8x1xf32>
      te.yield %x : f32
    } : tensor<8x1xf32>""",
    )
    assert choose_innermost(compute) == Innermost(0, is_reduction=False)


def test_zero_d_elementwise_has_no_loop() -> None:
    compute = te_compute(
        "(%a: tensor<f32>) -> tensor<f32>",
        """te.compute [] () {
      %x = te.read %a[] : tensor<f32>
      te.yield %x : f32
    } : tensor<f32>""",
    )
    assert choose_innermost(compute) is None


def test_access_scores_follow_affine_index_arithmetic() -> None:
    """`2*i + 1` is strided, `i + k - 1` contiguous, `i / 2` not affine, `k` invariant."""
    compute = te_compute(
        "(%a: tensor<20x20xf32>) -> tensor<4xf32>",
        """te.compute [4] reduce [3] combiner(sum) (%i, %k) {
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %two_i = arith.muli %c2, %i : index
      %odd = arith.addi %two_i, %c1 : index
      %ik = arith.addi %i, %k : index
      %shift = arith.subi %ik, %c1 : index
      %half = arith.divui %i, %c2 : index
      %x = te.read %a[%k, %odd] : tensor<20x20xf32>
      %y = te.read %a[%k, %shift] : tensor<20x20xf32>
      %z = te.read %a[%half, %k] : tensor<20x20xf32>
      %s = arith.addf %x, %y : f32
      %t = arith.addf %s, %z : f32
      te.yield %t : f32
    } : tensor<4xf32>""",
    )
    i, k = compute.body.block.args
    reads = [op for op in compute.body.walk() if isinstance(op, te.ReadOp)]
    by_i, by_k = AffineIndex(compute.body.block, i), AffineIndex(compute.body.block, k)
    shape = (20, 20)
    assert [access_score(shape, r.indices, by_i) for r in reads] == [STRIDED, CONTIGUOUS, STRIDED]
    assert [access_score(shape, r.indices, by_k) for r in reads] == [STRIDED, STRIDED, CONTIGUOUS]
    (x_read,) = [r for r in reads if r.result.name_hint == "x"]
    assert by_i.coefficient(x_read.indices[1]) == 2
    assert access_score(shape, [k, k], by_i) == INVARIANT
