"""Epilogue sinking (schedule/epilogue_sinking.py): numerics of matmuls whose
bias, activation or residual runs inside each register block, against NumPy,
and where it applies (one parallel region per kernel) or stays out."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

import lamina

RNG = np.random.default_rng(7)


def _dense(m: int, k: int, n: int, epilogue: str, constant: bool) -> str:
    """`y = epilogue(x @ w + b)` in the graph dialect (w constant or a parameter)."""
    weight = f"tensor<{k}x{n}xf32>"
    params = [f"%x: tensor<{m}x{k}xf32>", f"%b: tensor<{n}xf32>", f"%r: tensor<{m}x{n}xf32>"]
    lines = []
    if constant:
        lines.append(f"%w = graph.constant dense<0.03125> : {weight}")
    else:
        params.append(f"%w: {weight}")
    out = f"tensor<{m}x{n}xf32>"
    lines.append(f"%mm = graph.matmul %x, %w : (tensor<{m}x{k}xf32>, {weight}) -> {out}")
    lines.append(f"%y0 = graph.add %mm, %b : ({out}, tensor<{n}xf32>) -> {out}")
    if epilogue == "relu":
        lines.append(f"%y = graph.relu %y0 : ({out}) -> {out}")
    elif epilogue == "residual":
        lines.append(f"%y = graph.add %y0, %r : ({out}, {out}) -> {out}")
    else:
        lines.append(f"%y = graph.sigmoid %y0 : ({out}) -> {out}")
    body = "\n  ".join(lines)
    return f"graph.func @main({', '.join(params)}) -> {out} {{\n  {body}\n  graph.return %y : {out}\n}}\n"


def _expected(x, w, b, r, epilogue: str):
    y = x.astype(np.float64) @ w + b
    if epilogue == "relu":
        return np.maximum(y, 0)
    if epilogue == "residual":
        return y + r
    return 1 / (1 + np.exp(-y))


@pytest.mark.parametrize("target", ["cpu", "cpu{isa=avx2}"])
@pytest.mark.parametrize(
    "m,k,n,epilogue,constant",
    [
        (64, 96, 256, "relu", True),  # rows and columns divide the block: sunk
        (64, 96, 256, "residual", False),  # a parameter weight, packed per call
        (128, 32, 96, "sigmoid", True),
        (71, 48, 128, "relu", True),  # a tail of rows (71 is prime): sunk into its block too
        (64, 784, 512, "relu", False),  # AVX2: 6-row blocks + a tail of 4 on a packed panel
        (64, 40, 200, "residual", True),  # a tail of columns
    ],
)
def test_sunk_epilogues_match_numpy(m, k, n, epilogue, constant, target):
    exe = lamina.compile(_dense(m, k, n, epilogue, constant), targets=[target])
    x = RNG.standard_normal((m, k), dtype=np.float32)
    b = RNG.standard_normal(n, dtype=np.float32)
    r = RNG.standard_normal((m, n), dtype=np.float32)
    w = RNG.standard_normal((k, n), dtype=np.float32)
    args = [x, b, r] if constant else [x, b, r, w]
    if constant:
        w = np.full((k, n), 0.03125, np.float32)
    got = exe.run("main", *args)
    atol = 2e-5 if k <= 256 else 1e-4  # f32 sums of 784 products of size ~1
    np.testing.assert_allclose(got, _expected(x, w, b, r, epilogue), rtol=2e-5, atol=atol)


def _kernel_loops(text: str, tmp_path) -> str:
    """The loop code of the dense layer's kernel (`--compile-to lowering`), its B
    panels read in place whatever the host (`pack_min_row_blocks` derives 4 on
    Intel AVX-512, which adds the panels' copy loops)."""
    program = tmp_path / "dense.mlir"
    program.write_text(text)
    lowered = subprocess.run(
        [sys.executable, "-m", "lamina.tools.lamina_opt", str(program), "--compile-to", "lowering",
         "--target", "cpu{pack_min_row_blocks=32}"],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    kernel = lowered[lowered.index("loop.func private @te_fused_matmul") :]
    return kernel[: kernel.index("loop.return")]


def test_a_sunk_epilogue_runs_in_each_register_block(tmp_path):
    """The column-blocked matmul and its bias+relu: one loop nest (the
    epilogue was a second one over the rows, a parallel region of its own);
    with a tail of rows (131 is prime) the tail block, inside the column
    block too, gets its own copy of the epilogue."""
    sunk = _kernel_loops(_dense(128, 256, 512, "relu", True), tmp_path)
    assert len(re.findall(r"^    loop\.for", sunk, re.MULTILINE)) == 1
    assert "arith.maximumf" in sunk
    tail = _kernel_loops(_dense(131, 256, 512, "relu", True), tmp_path)
    assert len(re.findall(r"^    loop\.for", tail, re.MULTILINE)) == 1
    row_blocks = re.findall(r"^      loop\.for %\S+ = %c\d+ to %c\d+ step", tail, re.MULTILINE)
    assert len(row_blocks) == 2  # the blocks of MR rows, then the tail block
    assert tail.count("arith.maximumf") >= 2


def test_a_batched_matmul_gets_its_epilogue_sunk_per_batch(tmp_path):
    """Inside the batch loop (stage fusion fuses the matmul's and the
    epilogue's), the epilogue indexes the batch by the same loop variable."""
    b, m, k, n = 3, 64, 96, 128
    x, y = f"tensor<{b}x{m}x{k}xf32>", f"tensor<{b}x{k}x{n}xf32>"
    out = f"tensor<{b}x{m}x{n}xf32>"
    text = f"""graph.func @main(%x: {x}, %w: {y}, %s: {out}) -> {out} {{
  %mm = graph.matmul %x, %w : ({x}, {y}) -> {out}
  %t = graph.mul %mm, %s : ({out}, {out}) -> {out}
  graph.return %t : {out}
}}
"""
    kernel = _kernel_loops(text, tmp_path)
    assert len(re.findall(r"^    loop\.for", kernel, re.MULTILINE)) == 1  # the batch loop
    assert len(re.findall(r"^      loop\.for", kernel, re.MULTILINE)) == 1  # its column blocks
    xs = RNG.standard_normal((b, m, k), dtype=np.float32)
    ws = RNG.standard_normal((b, k, n), dtype=np.float32)
    ss = RNG.standard_normal((b, m, n), dtype=np.float32)
    got = lamina.compile(text).run("main", xs, ws, ss)
    np.testing.assert_allclose(got, (xs.astype(np.float64) @ ws) * ss, rtol=2e-5, atol=2e-4)


def _conv_model(cin: int, cout: int, size: int, k: int, stride: int, epilogue: str):
    """`depthwise 3x3 -> k x k conv (stride) + bias -> epilogue` as ONNX (weights
    initializers): the conv reads a channel-blocked input, as inside MobileNet."""
    from onnx import helper
    from onnx_util import make_model

    inits = {
        "wd": (RNG.standard_normal((cin, 1, 3, 3)) * 0.3).astype(np.float32),
        "w": (RNG.standard_normal((cout, cin, k, k)) / np.sqrt(cin * k * k)).astype(np.float32),
        "b": RNG.standard_normal(cout).astype(np.float32),
        "lo": np.array(0.0, np.float32),
        "hi": np.array(6.0, np.float32),
    }
    nodes = [
        helper.make_node("Conv", ["x", "wd"], ["d"], group=cin, pads=[1] * 4, kernel_shape=[3, 3]),
        helper.make_node(
            "Conv", ["d", "w", "b"], ["c"], kernel_shape=[k, k], strides=[stride] * 2,
            pads=[k // 2] * 4,
        ),
    ]  # fmt: skip
    if epilogue == "relu6":
        nodes.append(helper.make_node("Clip", ["c", "lo", "hi"], ["y"]))
    elif epilogue == "hardswish":
        nodes.append(helper.make_node("HardSwish", ["c"], ["y"]))
    elif epilogue == "swish":
        nodes.append(helper.make_node("Sigmoid", ["c"], ["s"]))
        nodes.append(helper.make_node("Mul", ["c", "s"], ["y"]))
    else:
        nodes.append(helper.make_node("Add", ["c", "x"], ["y"]))
    x = RNG.standard_normal((1, cin, size, size)).astype(np.float32)
    return make_model(nodes, {"x": x}, ["y"], inits), x


@pytest.mark.parametrize("target", ["cpu", "cpu{isa=avx2}"])
@pytest.mark.parametrize(
    "cin,cout,size,k,stride,epilogue",
    [
        (16, 96, 56, 1, 1, "relu6"),  # one input block, 3 output blocks per step
        (16, 64, 56, 1, 1, "hardswish"),  # MobileNetV3's expansion epilogue
        (24, 72, 28, 1, 1, "relu6"),  # padded channels on both sides, no jam
        (32, 32, 28, 1, 1, "residual"),  # the residual add sunk with the bias
        (16, 32, 30, 3, 2, "relu6"),  # a 3x3 stride-2 convolution's epilogue
        (64, 64, 14, 1, 1, "relu6"),  # one block of 14 rows per output row
        (16, 96, 56, 1, 1, "swish"),  # EfficientNet's: a long epilogue, rows in a loop
        (80, 160, 14, 1, 1, "swish"),  # 14 one-vector rows: jammed 7 per step
        (16, 96, 55, 1, 1, "swish"),  # an odd row: blocks and a tail block
        (24, 40, 27, 1, 1, "hardswish"),  # short, jammed, odd row
        (96, 96, 14, 1, 1, "residual"),  # AVX2: blocks of 4 columns and a tail of 2
        (96, 96, 7, 1, 1, "relu6"),  # AVX2: a tail block of one column
    ],
)
def test_sunk_conv_epilogues_match_onnxruntime(cin, cout, size, k, stride, epilogue, target):
    """Channel-blocked convolutions whose register blocks span the output row
    get their bias and activation inside each block; same result as
    onnxruntime's."""
    pytest.importorskip("onnx")
    from onnx_util import run_ort

    from lamina.frontends.onnx import import_model

    model, x = _conv_model(cin, cout, size, k, stride, epilogue)
    (want,) = run_ort(model, {"x": x})
    got = lamina.compile(import_model(model).module, targets=[target]).run("main", x)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


def _lowered_conv_kernel(tmp_path, cin: int, cout: int, size: int, target: str, name: str) -> str:
    """The loop code (`--compile-to lowering`) of the relu6 model's kernel `name`."""
    pytest.importorskip("onnx")
    from lamina.frontends.onnx import import_model

    model, _ = _conv_model(cin, cout, size, 1, 1, "relu6")
    path = tmp_path / "conv.mlir"
    path.write_text(str(import_model(model).module))
    lowered = subprocess.run(
        [sys.executable, "-m", "lamina.tools.lamina_opt", str(path), "--compile-to", "lowering",
         "-t", target],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    start = lowered.index(f"loop.func private @{name}")
    return lowered[start : lowered.index("loop.return", start)]


def test_a_conv_epilogue_runs_in_each_register_block(tmp_path):
    """The 16->96 pointwise convolution at 56x56 with bias + relu6: its
    epilogue is in the row-block loop, after each block's reduction (no
    second loop over the 56 output columns)."""
    kernel = _lowered_conv_kernel(
        tmp_path, 16, 96, 56, "cpu{vector_bits=512 vector_registers=32}",
        "te_fused_conv2d_add_maximum_minimum_1x6x56x56",
    )  # fmt: skip
    assert not re.search(r"loop\.for %\S+ = %c0 to %c56 step %c1 \{", kernel)
    blocks = kernel[kernel.index("step %c7 {") :]
    assert "arith.minimumf" in blocks


def test_a_conv_epilogue_joins_the_blocks_of_a_row_with_a_tail(tmp_path):
    """MobileNetV2's 576->96 projection at 14x14 on AVX2: its 14-column rows
    are blocks of 4 columns and a tail block of 2; the bias + relu6 is split
    where the tail starts and runs in both blocks, not in a second loop over
    the 14 columns (where LLVM forwarded all the blocks' accumulators to it,
    and they spilled)."""
    kernel = _lowered_conv_kernel(
        tmp_path, 576, 96, 14, "cpu{isa=avx2}", "te_fused_conv2d_add_maximum_minimum_1x12x14x14"
    )
    assert not re.search(r"loop\.for %\S+ = %c0 to %c14 step %c1 \{", kernel)
    main, tail = kernel.split("to %c14 step %c2 {")
    assert "step %c4 {" in main and "arith.minimumf" in main.split("step %c4 {")[1]
    assert "arith.minimumf" in tail


def _pointwise_model(cin: int, cout: int, height: int, width: int, epilogue: str):
    """`1x1 conv + bias -> swish | hardswish` on a small image (channel-blocked
    even with its input a parameter), weights as initializers."""
    from onnx import helper
    from onnx_util import make_model

    w = (RNG.standard_normal((cout, cin, 1, 1)) / np.sqrt(cin)).astype(np.float32)
    b = RNG.standard_normal(cout).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[1, 1])]
    if epilogue == "swish":
        nodes += [
            helper.make_node("Sigmoid", ["c"], ["s"]),
            helper.make_node("Mul", ["c", "s"], ["y"]),
        ]
    else:
        nodes.append(helper.make_node("HardSwish", ["c"], ["y"]))
    x = (RNG.standard_normal((1, cin, height, width)) * 2).astype(np.float32)
    return make_model(nodes, {"x": x}, ["y"], {"w": w, "b": b}), x, w, b


@pytest.mark.parametrize("target", ["cpu", "cpu{isa=avx2}"])
@pytest.mark.parametrize(
    "cin,cout,height,width,epilogue",
    [
        (24, 144, 5, 27, "swish"),  # odd rows: register blocks and a tail
        (40, 80, 3, 14, "swish"),  # blocks of 14 one-vector rows (AVX-512)
        (32, 96, 7, 7, "swish"),
        (16, 64, 5, 13, "hardswish"),  # short: every row jammed
        (24, 72, 4, 11, "hardswish"),
    ],
)
def test_long_conv_epilogues_match_numpy(cin, cout, height, width, epilogue, target):
    """A pointwise convolution with its swish (long: the rows of a register
    block in a loop) or hardswish (short: jammed) epilogue, on odd row
    lengths that leave tail blocks, against NumPy in f64."""
    pytest.importorskip("onnx")
    from lamina.frontends.onnx import import_model

    model, x, w, b = _pointwise_model(cin, cout, height, width, epilogue)
    got = lamina.compile(import_model(model).module, targets=[target]).run("main", x)
    c = np.einsum("oc,nchw->nohw", w[:, :, 0, 0].astype(np.float64), x) + b[:, None, None]
    if epilogue == "swish":
        want = c / (1 + np.exp(-c))
    else:
        want = c * np.clip(c + 3, 0, 6) / 6
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
