"""Sliding windows: what conv2d and pooling read, padded and phase-split so the index is affine.

Padded windows first materialise the padded (and, for a strided last axis,
phase-split) input so that the window reduction reads it at an affine
index. The direct, blocked and Winograd conv2d and the pooling ops share it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.ir import SSAValue

from lamina.kernels.kernel import (
    Indices,
    KernelBuilder,
    TeEmitter,
    elt,
    guarded,
    shape_of,
    shifted_index,
)


@dataclass(frozen=True)
class Window:
    """One sliding-window dimension: output index `o` and window index `k` read input
    dimension `axis` at `o*stride + k*dilation - lo` (docs/design.md §3.2 padding)."""

    axis: int
    stride: int
    dilation: int
    lo: int
    out_size: int
    kernel: int

    @property
    def span(self) -> int:
        """Padded extent the windows cover: the last window's last element, plus one."""
        return max((self.out_size - 1) * self.stride + (self.kernel - 1) * self.dilation + 1, 0)

    def needs_padding(self, size: int) -> bool:
        return self.lo > 0 or self.span > size

    def index(self, em: TeEmitter, out: SSAValue, k: SSAValue) -> SSAValue:
        """The index into the padded input (`window_input`): affine, never clamped."""
        return em.affine([(out, self.stride), (k, self.dilation)])


@dataclass(frozen=True)
class WindowInput:
    """What a window reduction reads: the input itself, or the input padded so that
    every window lies inside it, with the last axis possibly split into `split.stride`
    phases (`[.., i]` becomes `[.., i mod stride, i div stride]`)."""

    tensor: SSAValue
    split: Window | None = None

    def read(
        self, em: TeEmitter, idx: Indices, windows: Sequence[tuple[Window, SSAValue, SSAValue]]
    ) -> SSAValue:
        """`tensor` at `idx` with each window axis replaced by its (output, window)
        index pair's position `o*stride + k*dilation`."""
        idx = list(idx)
        tail: Indices = []
        for w, o, k in windows:
            if w is self.split:
                # o*s + k*d = s*(o + (k*d) div s) + (k*d) mod s: unit stride in `o`.
                kd = em.imul(k, w.dilation)
                col = em.iadd(o, em.idiv(kd, w.stride))
                tail = [em.irem(kd, w.stride), col]
            else:
                idx[w.axis] = w.index(em, o, k)
        return em.read(self.tensor, idx[: len(idx) - 1] + tail if tail else idx)


def window_input(
    kb: KernelBuilder, x: SSAValue, windows: Sequence[Window], pad_value: float | int
) -> WindowInput:
    """`x` itself if no window leaves it and the last axis is not strided, else a
    `te.compute` of `x` padded with `pad_value` so that every window lies inside it.

    The padded input is materialised once (a local temporary after `lower-te`)
    so that the window reduction reads it at the affine `o*stride + k*dilation`:
    unit-stride in the output column for stride 1, which the loop vectorizer
    turns into plain vector loads. Clamping the index and selecting the pad
    value inside the reduction instead made it non-affine (a masked gather per
    element, ~3x slower for a 3x3 convolution). A strided last axis (stride
    `s > 1`, more than one output column) is also split into `s` phases,
    `xp[.., p, q] = x[.., q*s + p]`, so that output column `o` reads column
    `o + (k*d) div s` of phase `(k*d) mod s`: unit stride again (otherwise the
    window's own dimension, often of extent 3, would be the contiguous loop).
    Along a padded or split axis the extent is the windows' `span`, which may
    drop unread rows of the input's tail.
    """
    shape = shape_of(x)
    last = len(shape) - 1
    split = next((w for w in windows if w.axis == last and w.stride > 1 and w.out_size > 1), None)
    padded = {w.axis: w for w in windows if w.needs_padding(shape[w.axis]) or w is split}
    if not padded:
        return WindowInput(x)
    extents = [padded[a].span if a in padded else size for a, size in enumerate(shape)]
    out_shape = list(extents)
    if split is not None:
        columns = -(-extents[last] // split.stride)
        out_shape[last:] = [split.stride, columns]
        extents[last] = split.stride * columns
    t = elt(x)
    if 0 in shape:  # nothing to read: all padding
        pad_only = kb.compute(out_shape, t, lambda em, _sp, _red: em.const(pad_value, t))
        return WindowInput(pad_only, split)

    def body(em: TeEmitter, sp: Indices, _: Indices) -> SSAValue:
        idx = list(sp[: len(shape)])
        if split is not None:
            idx[last] = em.affine([(sp[last + 1], split.stride), (sp[last], 1)])
        conds: list[SSAValue] = []
        for axis, w in padded.items():
            idx[axis], axis_conds = shifted_index(em, idx[axis], w.lo, shape[axis], extents[axis])
            conds += axis_conds
        return guarded(em, conds, em.read(x, idx), em.const(pad_value, t))

    return WindowInput(kb.compute(out_shape, t, body), split)


def read_in_place(
    em: TeEmitter,
    x: SSAValue,
    idx: Indices,
    windows: Sequence[tuple[Window, SSAValue, SSAValue]],
    pad_value: float | int,
) -> SSAValue:
    """`x` at `idx` with each window axis at `o*stride + k*dilation - lo`, read in
    place: a position outside `x` is `pad_value` (`select(inside, x[clamped],
    pad)`). Cheap only where the guards do not vary along the vectorized
    (last) axis -- channel-blocked data, whose lanes are channels -- and where
    `schedule` splits off the interior that needs none
    (`schedule/border_split.py`)."""
    shape = shape_of(x)
    idx, conds = list(idx), []
    for w, o, k in windows:
        position = em.affine([(o, w.stride), (k, w.dilation)])
        idx[w.axis], found = shifted_index(em, position, w.lo, shape[w.axis], w.span)
        conds += found
    return guarded(em, conds, em.read(x, idx), em.const(pad_value, elt(x)))


__all__ = ["Window", "WindowInput", "read_in_place", "window_input"]
