"""Max pools on channel-blocked inputs computed as a tree of their window's taps
(kernels/nn.py, `_max_pool_taps`: `maximumf fastmath<nnan>`, one `maxps` each,
and one NaN check per window) give NumPy's max exactly: NaN in a window gives
NaN, -inf and +inf and padding (-inf) are ordered as NumPy orders them, on the
AVX2 (8 lanes) and AVX-512 (16 lanes) builds, strided, padded and ceil-mode
windows (a last window past the image).

The pools of one test are compiled together, one `graph.func @poolN` each."""

from __future__ import annotations

import numpy as np
import pytest
from isa_util import BOTH_ISAS, LANES

import lamina

CASES = [  # (kernel, stride, padding top/left/bottom/right, H): SqueezeNet, GoogLeNet, ResNet
    (3, 2, (0, 0, 0, 0), 15),
    (3, 2, (0, 0, 1, 1), 14),  # ceil mode: the last window reaches past the image
    (3, 1, (1, 1, 1, 1), 9),
    (3, 2, (1, 1, 1, 1), 12),
    (2, 2, (0, 0, 0, 0), 8),
]
PLAIN_CASES = [*CASES, (3, 2, (1, 1, 1, 1), 40), (3, 2, (0, 0, 1, 1), 34)]
"""The plain `NCHW` pools add ResNet's and DenseNet's stem pool on wider images."""


def _pool_func(name: str, shape: tuple[int, ...], k: int, s: int, pad: tuple[int, ...]) -> str:
    """`graph.func @name`: a k x k max pool of stride s over axes 2 and 3 of `shape`."""
    top, left, bottom, right = pad
    h, w = shape[2:4]
    out = (*shape[:2], (h + top + bottom - k) // s + 1, (w + left + right - k) // s + 1, *shape[4:])
    tin, tout = (f"tensor<{'x'.join(map(str, dims))}xf32>" for dims in (shape, out))
    attrs = (
        f"kernel = array<i64: {k}, {k}>, strides = array<i64: {s}, {s}>, "
        f"padding = array<i64: {top}, {left}, {bottom}, {right}>"
    )
    return (
        f"graph.func @{name}(%x: {tin}) -> {tout} {{\n"
        f"  %0 = graph.max_pool2d %x {{{attrs}}} : ({tin}) -> {tout}\n"
        f"  graph.return %0 : {tout}\n}}\n"
    )


def _compile_pools(shapes, cases, isa: str) -> lamina.Executable:
    """One module of every case's pool (`@pool0`, `@pool1`, ...) over its input shape."""
    funcs = [
        _pool_func(f"pool{i}", shape, k, s, pad)
        for i, (shape, (k, s, pad, _)) in enumerate(zip(shapes, cases, strict=True))
    ]
    return lamina.compile("".join(funcs), targets=[f"cpu{{isa={isa}}}"])


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


@pytest.mark.parametrize("isa", BOTH_ISAS)
def test_blocked_max_pool_matches_numpy(isa):
    inputs = [_input(2, LANES[isa], h) for *_, h in CASES]
    exe = _compile_pools([x.shape for x in inputs], CASES, isa)
    for i, (x, (k, s, pad, _)) in enumerate(zip(inputs, CASES, strict=True)):
        got = exe.run(f"pool{i}", x)
        np.testing.assert_array_equal(got, _reference(x, k, s, pad), err_msg=f"{k=} {s=} {pad=}")


@pytest.mark.parametrize("isa", BOTH_ISAS)
def test_plain_max_pool_matches_numpy(isa):
    """The same pools on a plain `NCHW` input (ResNet's and DenseNet's stem pool, 3x3
    stride 2 padded, and wider images): the taps' tree along the vectorized output
    columns, the padded border columns peeled off (schedule/border_split.py)."""
    inputs = []
    for *_, h in PLAIN_CASES:
        blocked = _input(2, 8, h)  # NaN, -inf, +inf at a few places
        inputs.append(np.ascontiguousarray(blocked.transpose(0, 1, 4, 2, 3).reshape(1, 16, h, h)))
    exe = _compile_pools([x.shape for x in inputs], PLAIN_CASES, isa)
    for i, (x, (k, s, pad, h)) in enumerate(zip(inputs, PLAIN_CASES, strict=True)):
        want = _reference(x[..., None], k, s, pad)[..., 0]
        np.testing.assert_array_equal(
            exe.run(f"pool{i}", x), want, err_msg=f"{k=} {s=} {pad=} {h=}"
        )
