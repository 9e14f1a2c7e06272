"""Max pools on channel-blocked inputs computed as a tree of their window's taps
(kernels/nn.py, `_max_pool_taps`: `maximumf fastmath<nnan>`, one `maxps` each,
and one NaN check per window) give NumPy's max exactly: NaN in a window gives
NaN, -inf and +inf and padding (-inf) are ordered as NumPy orders them, on the
AVX2 (8 lanes) and AVX-512 (16 lanes) builds, strided, padded and ceil-mode
windows (a last window past the image)."""

from __future__ import annotations

import numpy as np
import pytest

import lamina
from lamina.target.cpu_facts import host_cpu_facts

CASES = [  # (kernel, stride, padding top/left/bottom/right, H): SqueezeNet, GoogLeNet, ResNet
    (3, 2, (0, 0, 0, 0), 15),
    (3, 2, (0, 0, 1, 1), 14),  # ceil mode: the last window reaches past the image
    (3, 1, (1, 1, 1, 1), 9),
    (3, 2, (1, 1, 1, 1), 12),
    (2, 2, (0, 0, 0, 0), 8),
]


def _program(blocks: int, lanes: int, h: int, k: int, s: int, pad: tuple[int, ...]) -> str:
    top, left, bottom, right = pad
    oh = (h + top + bottom - k) // s + 1
    ow = (h + left + right - k) // s + 1
    tin = f"tensor<1x{blocks}x{h}x{h}x{lanes}xf32>"
    tout = f"tensor<1x{blocks}x{oh}x{ow}x{lanes}xf32>"
    attrs = (
        f"kernel = array<i64: {k}, {k}>, strides = array<i64: {s}, {s}>, "
        f"padding = array<i64: {top}, {left}, {bottom}, {right}>"
    )
    return (
        f"graph.func @main(%x: {tin}) -> {tout} {{\n"
        f"  %0 = graph.max_pool2d %x {{{attrs}}} : ({tin}) -> {tout}\n"
        f"  graph.return %0 : {tout}\n}}\n"
    )


def _reference(x: np.ndarray, k: int, s: int, pad: tuple[int, ...]) -> np.ndarray:
    top, left, bottom, right = pad
    xp = np.pad(x, [(0, 0), (0, 0), (top, bottom), (left, right), (0, 0)], constant_values=-np.inf)
    oh = (xp.shape[2] - k) // s + 1
    ow = (xp.shape[3] - k) // s + 1
    taps = [xp[:, :, i : i + s * oh : s, j : j + s * ow : s] for i in range(k) for j in range(k)]
    return np.max(np.stack(taps), axis=0)  # NaN-propagating, as `maximumf`


def _input(blocks: int, lanes: int, h: int) -> np.ndarray:
    """Random data with NaN, +inf and -inf at a few places, one window all -inf."""
    x = np.random.default_rng(h).standard_normal((1, blocks, h, h, lanes)).astype(np.float32)
    x[0, 0, 1, 2, 3] = np.nan
    x[0, 1, h - 1, h - 1, lanes - 1] = np.nan  # the ceil-mode window's only real tap
    x[0, 0, 4, 4, 0] = np.inf
    x[0, 1, 2, 3, 1] = -np.inf
    x[0, 0, :3, :3, 5] = -np.inf
    return x


@pytest.mark.parametrize(
    "isa,lanes",
    [
        ("avx2", 8),
        pytest.param(
            "avx512",
            16,
            marks=pytest.mark.skipif(
                "avx512f" not in host_cpu_facts().features, reason="the host has no AVX-512"
            ),
        ),
    ],
)
def test_blocked_max_pool_matches_numpy(isa, lanes):
    for k, s, pad, h in CASES:
        x = _input(2, lanes, h)
        exe = lamina.compile(_program(2, lanes, h, k, s, pad), targets=[f"cpu{{isa={isa}}}"])
        got = exe.run("main", x)
        np.testing.assert_array_equal(got, _reference(x, k, s, pad), err_msg=f"{k=} {s=} {pad=}")


def _plain_program(c: int, h: int, k: int, s: int, pad: tuple[int, ...]) -> str:
    top, left, bottom, right = pad
    oh = (h + top + bottom - k) // s + 1
    ow = (h + left + right - k) // s + 1
    tin, tout = f"tensor<1x{c}x{h}x{h}xf32>", f"tensor<1x{c}x{oh}x{ow}xf32>"
    attrs = (
        f"kernel = array<i64: {k}, {k}>, strides = array<i64: {s}, {s}>, "
        f"padding = array<i64: {top}, {left}, {bottom}, {right}>"
    )
    return (
        f"graph.func @main(%x: {tin}) -> {tout} {{\n"
        f"  %0 = graph.max_pool2d %x {{{attrs}}} : ({tin}) -> {tout}\n"
        f"  graph.return %0 : {tout}\n}}\n"
    )


@pytest.mark.parametrize(
    "isa",
    [
        "avx2",
        pytest.param(
            "avx512",
            marks=pytest.mark.skipif(
                "avx512f" not in host_cpu_facts().features, reason="the host has no AVX-512"
            ),
        ),
    ],
)
def test_plain_max_pool_matches_numpy(isa):
    """The same pools on a plain `NCHW` input (ResNet's and DenseNet's stem pool, 3x3
    stride 2 padded, and wider images): the taps' tree along the vectorized output
    columns, the padded border columns peeled off (schedule/border_split.py)."""
    for k, s, pad, h in [*CASES, (3, 2, (1, 1, 1, 1), 40), (3, 2, (0, 0, 1, 1), 34)]:
        blocked = _input(2, 8, h)  # NaN, -inf, +inf at a few places
        x = np.ascontiguousarray(blocked.transpose(0, 1, 4, 2, 3).reshape(1, 16, h, h))
        exe = lamina.compile(_plain_program(16, h, k, s, pad), targets=[f"cpu{{isa={isa}}}"])
        want = _reference(x[..., None], k, s, pad)[..., 0]
        np.testing.assert_array_equal(exe.run("main", x), want, err_msg=f"{k=} {s=} {pad=} {h=}")
