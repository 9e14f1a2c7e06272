"""Pointwise (1x1) convolutions whose micro-kernel computes several output-channel
blocks per input broadcast (`schedule/register_block.py`, `channel_jam`), against
onnxruntime, on the host's ISA (AVX-512 here) and on the AVX2 build.

The input comes from a depthwise convolution, so that the 1x1 convolution reads a
channel-blocked input as inside MobileNet/EfficientNet. Cases: output rows of 28
and 56 columns (the heuristic jams 2 or 3 blocks there), channel counts that do
not fill the last block (24, 40, 144: padded channels), block counts that only 3
divides, stride 2, and the epilogues fused into the kernel (bias, relu, a
residual add, none); `conv_channel_jam` forces the jam where the heuristic
would not (14x14, 7x7, stride 2, 4 blocks per step).
"""

from __future__ import annotations

import numpy as np
import pytest
from isa_util import knobs_as

import lamina
from lamina.frontends.onnx import import_model
from lamina.target.cpu_facts import host_cpu_facts

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402
from onnx_util import make_model, run_ort  # noqa: E402

HOST = "cpu"
AVX2 = "cpu{isa=avx2}"
needs_avx2 = pytest.mark.skipif(
    not {"avx2", "fma"} <= host_cpu_facts().features, reason="the host has no AVX2"
)
RNG = np.random.default_rng(11)


def _block(cin: int, cout: int, size: int, stride: int, epilogue: str, k: int = 1):
    """depthwise 3x3 -> k x k conv (stride) -> epilogue, weights as initializers."""
    inits = {
        "wd": (RNG.standard_normal((cin, 1, 3, 3)) * 0.3).astype(np.float32),
        "w": (RNG.standard_normal((cout, cin, k, k)) / np.sqrt(cin * k * k)).astype(np.float32),
        "b": RNG.standard_normal(cout).astype(np.float32),
    }
    inputs = ["d", "w", "b"] if epilogue != "none" else ["d", "w"]
    nodes = [
        helper.make_node("Conv", ["x", "wd"], ["d"], group=cin, pads=[1] * 4, kernel_shape=[3, 3]),
        helper.make_node(
            "Conv", inputs, ["c"], kernel_shape=[k, k], strides=[stride] * 2, pads=[k // 2] * 4
        ),
    ]
    out = "c"
    if epilogue == "relu":
        nodes.append(helper.make_node("Relu", ["c"], ["y"]))
        out = "y"
    elif epilogue == "residual":
        assert cin == cout and stride == 1
        nodes.append(helper.make_node("Add", ["c", "x"], ["s"]))
        nodes.append(helper.make_node("Relu", ["s"], ["y"]))
        out = "y"
    x = RNG.standard_normal((1, cin, size, size)).astype(np.float32)
    return make_model(nodes, {"x": x}, [out], inits), x


def _check(model, x: np.ndarray, target: str) -> None:
    (want,) = run_ort(model, {"x": x})
    got = lamina.compile(import_model(model).module, targets=[target]).run("main", x)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


CASES = [
    # cin, cout, size, stride, epilogue
    (24, 144, 56, 1, "relu"),  # 9 blocks of 16: 3 per step on AVX-512; 18 of 8 on AVX2
    (144, 24, 56, 1, "relu"),  # 24 = 1.5 blocks of 16: the padded channels are masked
    (40, 240, 28, 1, "bias"),  # 40 input channels: 2.5 blocks of 16, 5 of 8
    (64, 64, 28, 1, "residual"),  # the residual add fused into the jammed epilogue
    (32, 96, 28, 1, "none"),  # no epilogue at all
    (16, 96, 56, 1, "relu"),  # ONE input block on AVX-512 (no channel-block loop): 3 per step
    (16, 64, 112, 1, "bias"),  # MobileNetV3's expansion at 112x112: 2 blocks per step
]


@pytest.mark.parametrize("target", [HOST, pytest.param(AVX2, marks=needs_avx2)])
@pytest.mark.parametrize(("cin", "cout", "size", "stride", "epilogue"), CASES)
def test_jammed_pointwise_matches_onnxruntime(cin, cout, size, stride, epilogue, target) -> None:
    model, x = _block(cin, cout, size, stride, epilogue)
    _check(model, x, target)


FORCED = [
    # cin, cout, size, stride, k, blocks per step
    (96, 192, 14, 1, 1, 2),  # 14x14: not jammed by default
    (160, 320, 7, 1, 1, 4),  # 7x7, 4 blocks per step
    (64, 128, 56, 2, 1, 2),  # stride 2 (ResNet's downsampling 1x1)
    (48, 96, 28, 2, 1, 3),  # stride 2, 3 blocks per step
]


@pytest.mark.parametrize("isa", [HOST, pytest.param(AVX2, marks=needs_avx2)])
@pytest.mark.parametrize(("cin", "cout", "size", "stride", "k", "jam"), FORCED)
def test_forced_channel_jam_matches_onnxruntime(cin, cout, size, stride, k, jam, isa) -> None:
    model, x = _block(cin, cout, size, stride, "relu", k)
    options = f"conv_channel_jam={jam}"
    target = f"{isa[:-1]} {options}}}" if isa.endswith("}") else f"{isa}{{{options}}}"
    _check(model, x, target)


@pytest.mark.parametrize(
    ("cin", "cout", "size", "stride", "k", "target"),
    [
        (144, 24, 56, 1, 1, HOST),
        (672, 112, 14, 1, 1, "cpu{conv_pointwise_jam_max=4}"),  # 3 + 3 + a one-block tail
        pytest.param(64, 16, 7, 1, 1, AVX2, marks=needs_avx2),
        pytest.param(32, 16, 28, 2, 3, AVX2, marks=needs_avx2),
    ],
)
def test_jammed_pointwise_same_at_one_and_two_threads(cin, cout, size, stride, k, target) -> None:
    """The jammed kernel's rows are the parallel loop when F blocks leave one
    block iteration (144->24: 2 blocks of 16, jammed into one step; on AVX2
    also a 7-column row and a direct 3x3 stride 2, `conv_channel_jam_everywhere`);
    the two threads compute the same bytes."""
    from lamina.backends.codegen import get_max_threads, set_num_threads

    model, x = _block(cin, cout, size, stride, "relu", k)
    exe = lamina.compile(import_model(model).module, targets=[target])
    before = get_max_threads()
    try:
        results = []
        for threads in (1, 2):
            set_num_threads(threads)
            results.append(exe.run("main", x))
    finally:
        set_num_threads(before)
    np.testing.assert_array_equal(results[0], results[1])
    (want,) = run_ort(model, {"x": x})
    np.testing.assert_allclose(results[1], want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


WIDE = [
    # cin, cout, size, stride: `conv_pointwise_jam_max=4` (two 512-bit FMA pipes)
    (64, 384, 14, 1),  # 24 blocks: 4 per step, 5 + 5 + 4 rows
    (1024, 256, 14, 1),  # ResNet-50's projection: 16 blocks, 4 per step
    (160, 960, 7, 1),  # 60 blocks at 7x7: 4 would leave 5 + 2 rows, so 3 x 7
    (960, 160, 7, 1),  # 10 blocks at 7x7: 2 x 7 rows
    (672, 112, 14, 1),  # 7 blocks: 3 + 3 and a one-block tail step
    (80, 80, 14, 1),  # 5 blocks: 4 and a one-block tail step
    (2048, 512, 7, 1),  # the 2048-channel reduction, 2 per step
    (512, 1024, 28, 2),  # stride 2, 4 per step
    (256, 64, 56, 1),  # jammed although the weights and input overflow L1
]


@pytest.mark.parametrize("isa", [HOST, pytest.param(AVX2, marks=needs_avx2)])
@pytest.mark.parametrize(("cin", "cout", "size", "stride"), WIDE)
def test_wide_pointwise_jam_matches_onnxruntime(cin, cout, size, stride, isa) -> None:
    """`conv_pointwise_jam_max` forced on (the default on Intel Xeon AVX-512,
    `wide_fma_pipes` 2) and, on the AVX2 build, ignored (its rule jams anyway)."""
    model, x = _block(cin, cout, size, stride, "relu")
    options = "conv_pointwise_jam_max=4"
    target = f"{isa[:-1]} {options}}}" if isa.endswith("}") else f"{isa}{{{options}}}"
    _check(model, x, target)


@pytest.mark.parametrize("isa", [HOST, pytest.param(AVX2, marks=needs_avx2)])
def test_wide_pointwise_jam_too_large_for_the_registers(isa) -> None:
    """A user's `conv_pointwise_jam_max=16` on 16 blocks at 14x14: 16 blocks
    have no register block, so 8 blocks x 2 rows (it left the kernel unblocked;
    tests/filecheck/passes/schedule-channel-jam-wide-cap.mlir)."""
    model, x = _block(256, 256, 14, 1, "relu")
    options = "conv_pointwise_jam_max=16"
    target = f"{isa[:-1]} {options}}}" if isa.endswith("}") else f"{isa}{{{options}}}"
    _check(model, x, target)


def test_wide_fma_pipes_decides_the_default() -> None:
    """Two 512-bit FMA pipes (Intel Xeon) -> 4; Zen 4, generic AVX-512, AVX2 -> 0."""
    from lamina.target.cpu_facts import isa_cpu_facts, wide_fma_pipes
    from lamina.target.schedule_knobs import ScheduleKnobs

    host = host_cpu_facts()
    cases = {"sapphirerapids": 4, "znver4": 0, "x86-64-v4": 0, "haswell": 0}
    for name, want in cases.items():
        features = isa_cpu_facts(name).features if name != host.cpu_name else host.features
        bits = 512 if "avx512f" in features else 256
        facts = host.replace(cpu_name=name, features=features, vector_bits=bits)
        assert ScheduleKnobs.for_cpu(facts).conv_pointwise_jam_max == want, name
        assert wide_fma_pipes(facts) == {4: 2, 0: 1 if bits == 512 else 0}[want], name


NCHW = [
    # cin, cout, size, epilogue: a pointwise conv on the network's NCHW input, kept
    # NCHW (a matrix product) from 56x56 on; `conv_nchw_flat_pixels` runs its
    # pixels as one row (`schedule/pixel_rows.py`)
    (64, 64, 56, "relu"),  # bench.py's "conv 1x1+bias+relu"
    (64, 256, 56, "bias"),
    (256, 64, 56, "none"),
    (3, 32, 64, "relu"),  # 3 input channels, 4096 pixels
    (64, 64, 56, "residual"),
]


@pytest.mark.parametrize("isa", [HOST, pytest.param(AVX2, marks=needs_avx2)])
@pytest.mark.parametrize(("cin", "cout", "size", "epilogue"), NCHW)
def test_nchw_pointwise_flat_pixels_matches_onnxruntime(cin, cout, size, epilogue, isa) -> None:
    inits = {
        "w": (RNG.standard_normal((cout, cin, 1, 1)) / np.sqrt(cin)).astype(np.float32),
        "b": RNG.standard_normal(cout).astype(np.float32),
    }
    inputs = ["x", "w", "b"] if epilogue != "none" else ["x", "w"]
    nodes = [helper.make_node("Conv", inputs, ["c"], kernel_shape=[1, 1])]
    out = "c"
    if epilogue in ("relu", "residual"):
        if epilogue == "residual":
            nodes.append(helper.make_node("Add", ["c", "x"], ["s"]))
        nodes.append(helper.make_node("Relu", ["s" if epilogue == "residual" else "c"], ["y"]))
        out = "y"
    x = RNG.standard_normal((1, cin, size, size)).astype(np.float32)
    model = make_model(nodes, {"x": x}, [out], inits)
    for value in (3136, 0):
        options = f"conv_nchw_flat_pixels={value}"
        target = f"{isa[:-1]} {options}}}" if isa.endswith("}") else f"{isa}{{{options}}}"
        _check(model, x, target)


CHUNKED = [
    # cin, cout, size, epilogue, cores: pointwise convolutions whose reduction
    # `conv_chunk_min_channels` chunks (128 channels) over an image run as one
    # flat row, or as the rows two cores share
    (1024, 256, 14, "relu", 1),  # ResNet-50's projection: 8 chunks, 196 pixels
    (1024, 256, 14, "relu", 2),  # 4 rows of 49 pixels: 9 blocks of 5 and a tail of 4
    (512, 128, 28, "bias", 2),  # 784 pixels in 8 rows of 98
    (2048, 512, 7, "none", 1),  # 16 chunks over 49 pixels
    (576, 96, 14, "relu", 1),  # 36 blocks: chunks of 6 blocks (96 channels)
    (512, 512, 7, "residual", 2),  # the residual add after the chunks
]


@pytest.mark.parametrize("isa", [HOST, pytest.param(AVX2, marks=needs_avx2)])
@pytest.mark.parametrize(("cin", "cout", "size", "epilogue", "cores"), CHUNKED)
def test_chunked_flat_pointwise_matches_onnxruntime(cin, cout, size, epilogue, cores, isa) -> None:
    """`conv_chunk_min_channels` forced on (the default with two 512-bit FMA
    pipes, Intel Xeon AVX-512): flat pixel rows, the reduction in chunks;
    tests/filecheck/passes/schedule-reduction-chunks-wide.mlir."""
    model, x = _block(cin, cout, size, 1, epilogue)
    options = f"conv_chunk_min_channels=512 conv_reduction_chunk=128 cores={cores}"
    target = f"{isa[:-1]} {options}}}" if isa.endswith("}") else f"{isa}{{{options}}}"
    _check(model, x, target)
    (want,) = run_ort(model, {"x": x})
    off = lamina.compile(
        import_model(model).module,
        targets=[f"{target[:-1]} conv_chunk_min_channels=0}}"],
    ).run("main", x)
    np.testing.assert_allclose(off, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


CHUNK_PREFETCH = [
    # cin, cout, size, epilogue, cores: chunked pointwise convolutions on rows of
    # at most 16 register blocks, which `conv_chunk_prefetch` prefetches
    (512, 128, 7, "relu", 1),  # 4 chunks, 2 steps of 4 blocks: the last chunk wraps
    (2048, 512, 7, "none", 1),  # 16 chunks, 8 steps
    (512, 512, 7, "residual", 2),  # two cores share the steps; the residual add after
    (1024, 256, 14, "relu", 2),  # 4 rows of 49 pixels (9 blocks each) on two cores
]


@pytest.mark.parametrize("spread", [0, 1])
@pytest.mark.parametrize("isa", [HOST, pytest.param(AVX2, marks=needs_avx2)])
@pytest.mark.parametrize(("cin", "cout", "size", "epilogue", "cores"), CHUNK_PREFETCH)
def test_chunk_prefetch_matches_onnxruntime(cin, cout, size, epilogue, cores, isa, spread) -> None:
    """`conv_chunk_prefetch=2` on the chunked pointwise convolutions, at each
    register block's head or spread over its input-channel steps
    (`conv_chunk_prefetch_spread`; a prefetch changes no value);
    tests/filecheck/passes/schedule-chunk-prefetch.mlir and
    schedule-chunk-prefetch-spread.mlir."""
    model, x = _block(cin, cout, size, 1, epilogue)
    options = (
        f"conv_chunk_min_channels=512 conv_reduction_chunk=128 conv_chunk_prefetch=2 "
        f"conv_chunk_prefetch_spread={spread} cores={cores}"
    )
    target = f"{isa[:-1]} {options}}}" if isa.endswith("}") else f"{isa}{{{options}}}"
    _check(model, x, target)


def test_chunk_prefetch_by_cpu() -> None:
    """`conv_chunk_prefetch` is 2 and spread (`conv_chunk_prefetch_spread` 1) on two
    512-bit FMA pipes (Intel Xeon), 0 on Zen 4, generic AVX-512 and AVX2."""
    cases = {"sapphirerapids": (2, 1), "znver4": (0, 0), "x86-64-v4": (0, 0), "haswell": (0, 0)}
    for name, want in cases.items():
        knobs = knobs_as(name)
        assert (knobs.conv_chunk_prefetch, knobs.conv_chunk_prefetch_spread) == want, name


def test_wide_fma_pipes_decides_the_reduction_chunks() -> None:
    """Two 512-bit FMA pipes (Intel Xeon) -> chunks of 128 channels from 512 input
    channels; Zen 4 and generic AVX-512 -> none; AVX2 -> its own rule (64, any
    pointwise convolution whose input is over half of L2)."""
    cases = {
        "sapphirerapids": (512, 128),
        "znver4": (0, 0),
        "x86-64-v4": (0, 0),
        "haswell": (0, 64),
    }
    for name, want in cases.items():
        knobs = knobs_as(name)
        assert (knobs.conv_chunk_min_channels, knobs.conv_reduction_chunk) == want, name
        assert knobs.conv_direct_jam_max == (4 if name == "sapphirerapids" else 0), name
        assert knobs.conv_direct_row_jam == (2 if name == "sapphirerapids" else 0), name
        assert knobs.winograd_direct_below == (64 if name == "sapphirerapids" else 0), name


DIRECT = [
    # cin, cout, size, stride, epilogue: dense 3x3 direct convolutions that
    # `conv_direct_jam_max` jams (Winograd takes the stride-1 ones from 14x14)
    (64, 128, 28, 2, "relu"),  # 14-column rows: 4 blocks x (5 + 5 + 4)
    (128, 128, 56, 2, "bias"),  # ResNet-50's: 28 columns, 4 blocks x 4 rows
    (96, 192, 14, 2, "none"),  # 12 blocks at 7 columns: 2 x 7 rows
    (64, 64, 7, 1, "residual"),  # a 7x7 image (direct), the residual add jammed
]


ROW_JAM = [
    # cin, cout, size, stride, epilogue: `conv_direct_row_jam`'s register blocks
    (64, 64, 14, 2, "relu"),  # 7 columns: 2 blocks x 7 x 2 rows, the seventh row alone
    (32, 96, 14, 2, "bias"),  # 6 blocks at 7 columns: 3 x 7, no room for a second row
    (48, 64, 28, 2, "none"),  # 14 columns (3 input blocks): 2 blocks x 14 rows
    (32, 64, 56, 2, "relu"),  # 28 columns: 4 blocks x (6 + 6 + 6 + 6 + 4)
]


@pytest.mark.parametrize("isa", [HOST, pytest.param(AVX2, marks=needs_avx2)])
@pytest.mark.parametrize(("cin", "cout", "size", "stride", "epilogue"), ROW_JAM)
def test_direct_row_jam_matches_onnxruntime(cin, cout, size, stride, epilogue, isa) -> None:
    """`conv_direct_row_jam` forced on with the direct jam (the default with two
    512-bit FMA pipes; tests/filecheck/passes/schedule-direct-row-jam.mlir) and
    off; the AVX2 build ignores both."""
    model, x = _block(cin, cout, size, stride, epilogue, k=3)
    for options in ("conv_direct_jam_max=4 conv_direct_row_jam=2", "conv_direct_row_jam=0"):
        target = f"{isa[:-1]} {options}}}" if isa.endswith("}") else f"{isa}{{{options}}}"
        _check(model, x, target)


@pytest.mark.parametrize("isa", [HOST, pytest.param(AVX2, marks=needs_avx2)])
@pytest.mark.parametrize(("cin", "cout", "size", "stride", "epilogue"), DIRECT)
def test_wide_direct_jam_matches_onnxruntime(cin, cout, size, stride, epilogue, isa) -> None:
    """`conv_direct_jam_max` forced on (the default with two 512-bit FMA pipes;
    tests/filecheck/passes/schedule-direct-jam-wide.mlir) and off; the AVX2
    build jams its own way (`conv_channel_jam_everywhere`) and ignores it."""
    model, x = _block(cin, cout, size, stride, epilogue, k=3)
    for options in ("conv_direct_jam_max=4", "conv_direct_jam_max=0"):
        target = f"{isa[:-1]} {options}}}" if isa.endswith("}") else f"{isa}{{{options}}}"
        _check(model, x, target)


@pytest.mark.parametrize("isa", [HOST, pytest.param(AVX2, marks=needs_avx2)])
@pytest.mark.parametrize(("cin", "cout", "epilogue"), [(64, 64, "relu"), (48, 96, "bias")])
def test_winograd_direct_below_matches_onnxruntime(cin, cout, epilogue, isa) -> None:
    """`winograd_direct_below` (tests/filecheck/passes/plan-layouts-winograd-small.mlir):
    a 3x3 at 7x7 with constant weights direct (the limit on transformed weights
    lowered so that these small ones count as large) and Winograd."""
    model, x = _block(cin, cout, 7, 1, epilogue, k=3)
    small = "winograd_direct_below=64 winograd_max_weight_bytes=65536"
    for options in (small, "winograd_direct_below=0"):
        target = f"{isa[:-1]} {options}}}" if isa.endswith("}") else f"{isa}{{{options}}}"
        _check(model, x, target)
