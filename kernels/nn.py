"""Legalization of the neural-network ops (`dialects/graph/nn.py`): conv2d,
max/avg/global-average pooling, softmax and layer_norm.

The windowed ops read their input through `kernels/window.py` (padded and
phase-split inputs); the channel-blocked conv2d is `kernels/conv_blocked.py`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from math import prod

from xdsl.dialects import arith
from xdsl.dialects.utils.fast_math import FastMathFlag
from xdsl.ir import Operation, SSAValue

from lamina.dialects import graph
from lamina.kernels.conv_blocked import build_blocked_conv2d
from lamina.kernels.kernel import (
    Body,
    Indices,
    KernelBuilder,
    TeEmitter,
    drop_at,
    elt,
    insert_at,
    shape_of,
)
from lamina.kernels.te_emit import is_float, lowest
from lamina.kernels.window import Window, read_in_place, window_input
from lamina.target.registry import op_knobs


def build_conv2d(op: Operation, kb: KernelBuilder, inputs: Indices) -> list[SSAValue]:
    """Direct convolution, any permutation of NCHW / OIHW:

    `out[n, o, oh, ow] = sum_{ci, kh, kw} xp[n, g*Cg + ci, oh*sh + kh*dh, ow*sw + kw*dw]
    * w[o, ci, kh, kw]` with `g = o / (O/groups)` and `xp` the data padded with 0
    (`window_input`; the data itself without padding).
    """
    assert isinstance(op, graph.Conv2dOp)
    if graph.blocked_conv_layout(op.data_layout_value, op.kernel_layout_value) is not None:
        return build_blocked_conv2d(op, kb, inputs)
    data, weight = inputs
    dl = {c: op.data_layout_value.index(c) for c in "NCHW"}
    kl = {c: op.kernel_layout_value.index(c) for c in "OIHW"}
    ws, os_ = shape_of(weight), shape_of(op.results[0])
    (sh, sw), (dh, dw) = op.strides_value, op.dilation_value
    top, left, _, _ = op.padding_value
    groups = op.groups_value
    cg, kh_size, kw_size = ws[kl["I"]], ws[kl["H"]], ws[kl["W"]]
    o_per_group = ws[kl["O"]] // groups
    win_h = Window(dl["H"], sh, dh, top, os_[dl["H"]], kh_size)
    win_w = Window(dl["W"], sw, dw, left, os_[dl["W"]], kw_size)
    source = window_input(kb, data, [win_h, win_w], 0)

    def body(em: TeEmitter, sp: Indices, red: Indices) -> SSAValue:
        n, o, oh, ow = (sp[dl[c]] for c in "NCHW")
        ci, kh, kw = red
        c = ci if groups == 1 else em.affine([(em.idiv(o, o_per_group), cg), (ci, 1)])
        d_idx = _place(dl, {"N": n, "C": c, "H": oh, "W": ow})
        x = source.read(em, d_idx, [(win_h, oh, kh), (win_w, ow, kw)])
        w_idx = _place(kl, {"O": o, "I": ci, "H": kh, "W": kw})
        return em.mul(x, em.read(weight, w_idx))

    extents = [cg, kh_size, kw_size]
    return [kb.compute(os_, elt(data), body, reduce_extents=extents, combiner="sum")]


def _place(layout: dict[str, int], values: dict[str, SSAValue]) -> Indices:
    """Order `values` (keyed by dimension letter) by the positions in `layout`."""
    return [values[letter] for letter in sorted(layout, key=layout.__getitem__)]


def _windows(op: graph.MaxPool2dOp | graph.AvgPool2dOp) -> tuple[Window, Window]:
    """A pool's windows over the rows (dimension 2) and columns (3) of its input."""
    os_ = shape_of(op.results[0])
    kh_size, kw_size = op.kernel_value
    sh, sw = op.strides_value
    top, left, _, _ = op.padding_value
    return (
        Window(2, sh, 1, top, os_[2], kh_size),
        Window(3, sw, 1, left, os_[3], kw_size),
    )


def _pool_windows(
    op: graph.MaxPool2dOp | graph.AvgPool2dOp,
    kb: KernelBuilder,
    x: SSAValue,
    pad_value: float | int,
) -> Body:
    """Body reading `xp[n, c, oh*sh + kh, ow*sw + kw]` over the window, where `xp` is
    `x` padded with `pad_value` (`window_input`). Channel-blocked data is read
    in place instead (`read_in_place`: a pool accumulates each output column
    in memory, blocked or not, so its border columns cost no more than the
    interior, and the copy -- a write and a read of the whole input -- was
    most of a max pool's time)."""
    win_h, win_w = _windows(op)
    if len(shape_of(x)) == 5:  # NCHW{c}c: read in place, the guards are the lanes'
        source = None
    else:
        source = window_input(kb, x, [win_h, win_w], pad_value)

    def body(em: TeEmitter, sp: Indices, red: Indices) -> SSAValue:
        oh, ow = sp[2], sp[3]  # NCHW, or NCHW{c}c with the lanes' block last
        kh, kw = red
        taps = [(win_h, oh, kh), (win_w, ow, kw)]
        if source is None:
            return read_in_place(em, x, sp, taps, pad_value)
        return source.read(em, sp, taps)

    return body


def build_max_pool2d(op: Operation, kb: KernelBuilder, inputs: Indices) -> list[SSAValue]:
    """`out = max over the window`, padding counts as −∞ (the max identity)."""
    assert isinstance(op, graph.MaxPool2dOp)
    t = elt(inputs[0])
    if _unrolled_window(op, inputs[0]):
        return [kb.compute(shape_of(op.results[0]), t, _max_pool_taps(op, inputs[0]))]
    body = _pool_windows(op, kb, inputs[0], lowest(t))
    shape = shape_of(op.results[0])
    return [kb.compute(shape, t, body, op.kernel_value, combiner="max")]


_MAX_UNROLLED_TAPS = 25
"""Largest window (taps) a max pool computes as one expression per output."""


def _unrolled_window(op: graph.MaxPool2dOp, x: SSAValue) -> bool:
    """Whether a max pool reads `NCHW{c}c` or plain `NCHW` with a float window of
    at most `_MAX_UNROLLED_TAPS` taps (`_max_pool_taps`). On `NCHW` the vector runs
    along the output columns (strided taps; the padded border columns peeled off by
    `schedule/border_split.py`): 2-4x faster than the window reduction over a
    padded copy (a 3x3 stride-2 pool of 1x64x112x112: 608 -> 171 us on AVX-512,
    677 -> 291 us on AVX2; docs/performance.md, "Plain NCHW max pools")."""
    kh, kw = op.kernel_value
    return len(shape_of(x)) in (4, 5) and is_float(elt(x)) and kh * kw <= _MAX_UNROLLED_TAPS


def _max_pool_taps(op: graph.MaxPool2dOp, x: SSAValue) -> Body:
    """One output's window max as a balanced tree over its taps, read in place.

    As a reduction the window was an accumulator in memory, folded tap by tap:
    a chain of nine compare, NaN check and blend (`lower-to-llvm`'s select
    form of `maximumf`), ~6 cycles each, per output vector -- 2.7x
    onnxruntime's time on SqueezeNet's pools. The tree's maxima are
    `fastmath<nnan>`, each one `maxps`, and NaN is checked once per window:
    an unordered compare per pair of taps, the result NaN if any tap is
    (docs/performance.md, "Max pools as a tree of taps")."""
    kh_size, kw_size = op.kernel_value
    win_h, win_w = _windows(op)
    t = elt(x)

    def body(em: TeEmitter, sp: Indices, _: Indices) -> SSAValue:
        taps = [
            read_in_place(
                em, x, sp, [(win_h, sp[2], em.index(kh)), (win_w, sp[3], em.index(kw))], lowest(t)
            )
            for kh in range(kh_size)
            for kw in range(kw_size)
        ]
        nan = _any_nan(em, taps)
        best = _tree(taps, lambda a, b: em.emit(arith.MaximumfOp(a, b, _NNAN)))
        return best if nan is None else em.select(nan, em.const(math.nan, t), best)

    return body


_NNAN = arith.FastMathFlagsAttr((FastMathFlag.NO_NANS,))


def _any_nan(em: TeEmitter, taps: list[SSAValue]) -> SSAValue | None:
    """Whether any tap is NaN: one unordered compare per pair, or-ed as a tree."""
    pairs = [em.cmpf("uno", a, b) for a, b in zip(taps[::2], taps[1::2], strict=False)]
    if len(taps) % 2:
        pairs.append(em.cmpf("uno", taps[-1], taps[-1]))
    return _tree(pairs, lambda a, b: em.emit(arith.OrIOp(a, b))) if pairs else None


def _tree(values: list[SSAValue], combine: Callable[[SSAValue, SSAValue], SSAValue]) -> SSAValue:
    """`combine` over `values` as a balanced tree (independent operations first)."""
    while len(values) > 1:
        paired = [combine(a, b) for a, b in zip(values[::2], values[1::2], strict=False)]
        values = paired + values[len(paired) * 2 :]
    return values[0]


def build_avg_pool2d(op: Operation, kb: KernelBuilder, inputs: Indices) -> list[SSAValue]:
    """Window sum (padding 0), then divide by the number of non-padding elements:
    `count = (min(s+K, H) - max(s, 0))` per spatial dim with `s = o*stride - pad`."""
    assert isinstance(op, graph.AvgPool2dOp)
    (x,) = inputs
    t, xs = elt(x), shape_of(x)
    shape = shape_of(op.results[0])
    window_sum = _pool_windows(op, kb, x, 0)
    total = kb.compute(shape, t, window_sum, op.kernel_value, combiner="sum")
    kernel, strides = op.kernel_value, op.strides_value
    pads = op.padding_value

    def count(em: TeEmitter, o: SSAValue, dim: int) -> SSAValue:
        k, s, lo, hi = kernel[dim], strides[dim], pads[dim], pads[dim + 2]
        if lo == 0 and hi == 0:
            return em.index(k)
        start = em.affine([(o, s)], -lo)
        first = em.clamp(start, xs[2 + dim], upper=False) if lo else start
        end = em.iadd(start, k)
        last = em.clamp(end, xs[2 + dim], lower=False) if hi else end
        return em.emit(arith.SubiOp(last, first))

    def body(em: TeEmitter, sp: Indices, _: Indices) -> SSAValue:
        ch, cw = count(em, sp[2], 0), count(em, sp[3], 1)
        cnt_h, cnt_w = em.const_value(ch), em.const_value(cw)
        if cnt_h is not None and cnt_w is not None:
            n = em.const(cnt_h * cnt_w, t)
        else:
            n = em.index_to(em.emit(arith.MuliOp(ch, cw)), t)
        return em.div(em.read(total, sp), n)

    return [kb.compute(shape, t, body)]


def build_global_avg_pool2d(op: Operation, kb: KernelBuilder, inputs: Indices) -> list[SSAValue]:
    """`s[n, c] = sum_{h, w} x[n, c, h, w]`, then `out[n, c, 0, 0] = s[n, c] / (H*W)`
    (channel-blocked `NCHW{c}c`: `s[n, cb, ci]` over `x[n, cb, h, w, ci]`, the
    lanes' block innermost so the sum is vectorized along it; there in
    `_partial_sums` independent sums, `_blocked_global_sum`)."""
    (x,) = inputs
    n, c, h, w, *block = shape_of(x)
    t = elt(x)
    parts = _partial_sums(w, op) if block else 1
    if parts > 1:
        total = _blocked_global_sum(kb, x, parts)
    else:

        def window_sum(em: TeEmitter, sp: Indices, red: Indices) -> SSAValue:
            return em.read(x, [*sp[:2], *red, *sp[2:]])

        total = kb.compute((n, c, *block), t, window_sum, [h, w], combiner="sum")

    def body(em: TeEmitter, sp: Indices, _: Indices) -> SSAValue:
        return em.div(em.read(total, [*sp[:2], *sp[4:]]), em.const(h * w, t))

    return [kb.compute(shape_of(op.results[0]), t, body)]


def _partial_sums(width: int, op: Operation) -> int:
    """How many independent sums a blocked global pool keeps per channel block:
    the largest divisor of the image width up to `global_pool_partial_sums`."""
    most = op_knobs(op).global_pool_partial_sums
    return max(p for p in range(1, min(most, width) + 1) if width % p == 0)


def _blocked_global_sum(kb: KernelBuilder, x: SSAValue, parts: int) -> SSAValue:
    """`s[n, cb, ci] = sum_p sum_{h, q} x[n, cb, h, q*P + p, ci]`, P = `parts`.

    One sum per channel block is one chain of H*W dependent vector adds, each
    waiting for the last (3-4 cycles), so the pool ran at a quarter of an add
    pipe: 47 us for 144 channels at 56x56 on the AVX2 build (18 blocks of 3136
    adds), longer than onnxruntime's 27 us. Here the first stage sums P
    interleaved columns apart, `part[n, cb, p*c + ci]`: its vectorized row is
    P whole vectors read contiguously (`x[h, q*P .. q*P+P-1]`), which LLVM keeps
    in P registers, P independent chains (20 us); the second adds the P
    partial sums. Deterministic (a fixed order), within an ulp per add of the
    single chain's sum."""
    n, c, h, w, lanes = shape_of(x)
    t = elt(x)

    def partial(em: TeEmitter, sp: Indices, red: Indices) -> SSAValue:
        p, ci = em.idiv(sp[2], lanes), em.irem(sp[2], lanes)
        return em.read(x, [sp[0], sp[1], red[0], em.affine([(red[1], parts), (p, 1)]), ci])

    part = kb.compute((n, c, parts * lanes), t, partial, [h, w // parts], combiner="sum")

    def combine(em: TeEmitter, sp: Indices, red: Indices) -> SSAValue:
        return em.read(part, [sp[0], sp[1], em.affine([(red[0], lanes), (sp[2], 1)])])

    return kb.compute((n, c, lanes), t, combine, [parts], combiner="sum")


def build_softmax(op: Operation, kb: KernelBuilder, inputs: Indices) -> list[SSAValue]:
    """Stable softmax along `axis`: m = max, e = exp(x - m), s = sum(e), out = e / s."""
    assert isinstance(op, graph.SoftmaxOp)
    (x,) = inputs
    shape, t, axis = shape_of(x), elt(x), op.axis_value
    rest = shape[:axis] + shape[axis + 1 :]
    n = shape[axis]

    def along(src: SSAValue) -> Body:
        return lambda em, sp, red: em.read(src, insert_at(sp, axis, red[0]))

    m = kb.compute(rest, t, along(x), [n], combiner="max")

    def exp_body(em: TeEmitter, sp: Indices, _: Indices) -> SSAValue:
        return em.exp(em.sub(em.read(x, sp), em.read(m, drop_at(sp, axis))))

    e = kb.compute(shape, t, exp_body)
    s = kb.compute(rest, t, along(e), [n], combiner="sum")

    def div_body(em: TeEmitter, sp: Indices, _: Indices) -> SSAValue:
        return em.div(em.read(e, sp), em.read(s, drop_at(sp, axis)))

    return [kb.compute(shape, t, div_body)]


def build_layer_norm(op: Operation, kb: KernelBuilder, inputs: Indices) -> list[SSAValue]:
    """Normalize over dims `[axis, rank)` (two-pass variance):
    mean = sum(x)/n; rstd = 1/sqrt(sum((x-mean)^2)/n + eps);
    out = (x - mean) * rstd * gamma + beta."""
    assert isinstance(op, graph.LayerNormOp)
    x, gamma, beta = inputs
    shape, t, axis = shape_of(x), elt(x), op.axis_value
    outer, inner = shape[:axis], shape[axis:]
    n = prod(inner)

    total = kb.compute(outer, t, lambda em, sp, red: em.read(x, [*sp, *red]), inner, combiner="sum")
    mean = kb.compute(outer, t, lambda em, sp, _: em.div(em.read(total, sp), em.const(n, t)))

    def sq_body(em: TeEmitter, sp: Indices, red: Indices) -> SSAValue:
        d = em.sub(em.read(x, [*sp, *red]), em.read(mean, sp))
        return em.mul(d, d)

    sq = kb.compute(outer, t, sq_body, inner, combiner="sum")

    def rstd_body(em: TeEmitter, sp: Indices, _: Indices) -> SSAValue:
        var = em.div(em.read(sq, sp), em.const(n, t))
        return em.rsqrt(em.add(var, em.const(op.epsilon_value, t)))

    rstd = kb.compute(outer, t, rstd_body)

    def out_body(em: TeEmitter, sp: Indices, _: Indices) -> SSAValue:
        o, i = sp[:axis], sp[axis:]
        centered = em.sub(em.read(x, sp), em.read(mean, o))
        scaled = em.mul(em.mul(centered, em.read(rstd, o)), em.read(gamma, i))
        return em.add(scaled, em.read(beta, i))

    return [kb.compute(shape, t, out_body)]
