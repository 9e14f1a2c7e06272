"""Per-op tensor-expression builders for `legalize` (graph compute op → te.func body).

Each builder receives the graph op, a `KernelBuilder` and the te values that
stand for the op's operands (the te.func parameters, or, in a fused kernel,
results of earlier builders), adds one or more `te.compute` ops to the
kernel and returns the te values of the op's results. A te.func is a DAG of
`te.compute` (softmax and layer_norm already use several), so a fused kernel
is several builder calls on one `KernelBuilder`.

Index conventions (docs/design.md §3.2 semantics):

* NumPy broadcasting: operand dim j of rank r sits under output dim
  `j + R - r`; a size-1 operand dim is read at index 0.
* Out-of-bounds reads never happen. Where an index may leave the operand
  (padding, concat, layout padding) the index is *clamped* into bounds and
  the value is chosen with `arith.select` on an in-bounds condition:
  branch-free, and every `te.read` is safe to execute unconditionally.
  Guards are emitted only on the sides that can actually go out of bounds
  (no padding, no guard).
* Padded windows (conv2d, max/avg pooling) first materialise the padded
  input as its own elementwise `te.compute` (`window_input`, the only place
  that clamps), so the window reduction reads it at the affine
  `o*stride + k*dilation`: a clamped index inside the reduction is not
  affine in the output column and vectorizes into masked gathers. A strided
  last axis is also split into stride phases there, so the output column
  reads at unit stride.
* Reductions use `reduce_extents` + `combiner` and start from te's default
  `init`, the combiner's identity (0 for sum, −∞ or the smallest integer
  for max). A reduction over an empty domain is the identity everywhere.
* Scalar semantics (`_te_emit.ScalarEmitter`): NumPy's, except that integer
  division truncates toward zero (C, TVM `truncdiv`) and never traps
  (`x / 0` is 0, `MIN / -1` wraps); i1 `+`/`*`/max/min are or/and/or/and;
  `cast` is NumPy `astype` (float → int truncates toward zero, → i1 is
  `!= 0`, i1 → number is 0/1); sigmoid and softmax are overflow-free.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from math import prod

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    AnyFloat,
    IntegerType,
    TensorType,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from lamina.core.diagnostics import op_error
from lamina.dialects import graph, te
from lamina.dialects.lamina import ConstraintAttr
from lamina.passes._blocked_conv import build_blocked_conv2d
from lamina.passes._layout_lowering import build_layout_transform
from lamina.passes._te_emit import INDEX, ScalarEmitter, is_bool, is_float, lowest

Indices = list[SSAValue]
Body = Callable[["TeEmitter", Indices, Indices], SSAValue]


class TeEmitter(ScalarEmitter):
    """A ScalarEmitter that can also read tensors (`te.read`) and make `te.undef`."""

    def read(self, tensor: SSAValue, indices: Sequence[SSAValue]) -> SSAValue:
        return self.emit(te.ReadOp(tensor, list(indices)))

    def undef(self, t: Attribute) -> SSAValue:
        return self.emit(te.UndefOp(t))


class KernelBuilder:
    """Builds one `te.func`: parameters, a DAG of `te.compute`, `te.return`."""

    def __init__(self, input_types: Sequence[Attribute]):
        self.block = Block(arg_types=input_types)
        self.args: list[SSAValue] = list(self.block.args)
        self.operand_constraints: list[ConstraintAttr | None] = [None] * len(self.args)
        """Layout constraints the kernel's inputs are known to satisfy."""
        for n, arg in enumerate(self.args):
            arg.name_hint = f"in{n}"

    def compute(
        self,
        shape: Sequence[int],
        element: Attribute,
        body: Body,
        reduce_extents: Sequence[int] = (),
        combiner: str = "sum",
        constraint: ConstraintAttr | None = None,
    ) -> SSAValue:
        """Append a `te.compute` of `tensor<shape x element>` whose element is `body(...)`.

        Reductions start from the combiner's identity (te's default `init`):
        0 for sum, −∞ (or the smallest integer) for max. A reduction over an
        empty domain (an extent of 0, which te.compute does not allow) is the
        identity everywhere.
        """
        if 0 in reduce_extents:
            identity = te.combiner_identity(combiner, element).value.data
            return self.compute(shape, element, lambda em, _sp, _red: em.const(identity, element))
        region_block = Block(arg_types=[INDEX] * (len(shape) + len(reduce_extents)))
        em = TeEmitter(region_block)
        spatial = list(region_block.args[: len(shape)])
        reduction = list(region_block.args[len(shape) :])
        for n, arg in enumerate(spatial):
            arg.name_hint = f"i{n}"
        for n, arg in enumerate(reduction):
            arg.name_hint = f"k{n}"
        value = body(em, spatial, reduction)
        region_block.add_op(te.YieldOp(value))
        op = te.ComputeOp(
            TensorType(element, list(shape)),
            reduce_extents=list(reduce_extents),
            combiner=combiner if reduce_extents else None,
            constraint=constraint,
            body=region_block,
        )
        self.block.add_op(op)
        return op.results[0]

    def finish(self, name: str, results: Sequence[SSAValue]) -> te.FuncOp:
        """Terminate the body with `te.return results` and wrap it in `te.func @name`."""
        self.block.add_op(te.ReturnOp(*results))
        inputs = [a.type for a in self.block.args]
        # Kernels are private: only host functions are entry points, and internal
        # linkage lets LLVM inline them into their callers.
        signature = (inputs, [r.type for r in results])
        return te.FuncOp(name, signature, Region(self.block), visibility="private")


# ---------------------------------------------------------------------------
# Shared index helpers
# ---------------------------------------------------------------------------


def shape_of(v: SSAValue | Attribute) -> tuple[int, ...]:
    return graph.tensor_shape(v)


def elt(v: SSAValue | Attribute) -> Attribute:
    return graph.element_type(v)


def broadcast_indices(em: TeEmitter, out: Indices, in_shape: Sequence[int]) -> Indices:
    """Indices into an operand of `in_shape` broadcast (NumPy) to the output `out`."""
    lead = len(out) - len(in_shape)
    return [em.index(0) if d == 1 else out[lead + j] for j, d in enumerate(in_shape)]


def insert_at(indices: Sequence[SSAValue], axis: int, value: SSAValue) -> Indices:
    return [*indices[:axis], value, *indices[axis:]]


def drop_at(indices: Sequence[SSAValue], axis: int) -> Indices:
    return [*indices[:axis], *indices[axis + 1 :]]


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


def shifted_index(
    em: TeEmitter, i: SSAValue, lo: int, size: int, extent: int
) -> tuple[SSAValue, list[SSAValue]]:
    """Input index `i - lo` for a padded index `i` in `[0, extent)`, clamped into
    `[0, size)`, plus the in-bounds conditions (only for sides that can overflow)."""
    raw = em.iadd(i, -lo)
    conds: list[SSAValue] = []
    index = raw
    if lo > 0:
        conds.append(em.cmpi("sge", raw, 0))
        index = em.select(conds[-1], index, em.index(0))
    if extent - 1 - lo > size - 1:
        conds.append(em.cmpi("slt", raw, size))
        index = em.select(conds[-1], index, em.index(size - 1))
    return index, conds


def guarded(em: TeEmitter, conds: Sequence[SSAValue], value: SSAValue, other: SSAValue) -> SSAValue:
    """`value` where every condition holds, else `other`."""
    ok = em.and_(conds)
    return value if ok is None else em.select(ok, value, other)


# ---------------------------------------------------------------------------
# Elementwise
# ---------------------------------------------------------------------------

BINARY: dict[str, Callable[[TeEmitter, SSAValue, SSAValue], SSAValue]] = {
    "graph.add": TeEmitter.add,
    "graph.sub": TeEmitter.sub,
    "graph.mul": TeEmitter.mul,
    "graph.div": TeEmitter.div,
    "graph.maximum": TeEmitter.max,
    "graph.minimum": TeEmitter.min,
}


def build_binary(op: Operation, kb: KernelBuilder, inputs: Indices) -> list[SSAValue]:
    """`out[i] = f(a[bcast(i)], b[bcast(i)])`."""
    a, b = inputs
    fn = BINARY[op.name]
    out = op.results[0].type

    def body(em: TeEmitter, sp: Indices, _: Indices) -> SSAValue:
        x = em.read(a, broadcast_indices(em, sp, shape_of(a)))
        y = em.read(b, broadcast_indices(em, sp, shape_of(b)))
        return fn(em, x, y)

    return [kb.compute(shape_of(out), elt(out), body)]


def _relu(em: TeEmitter, x: SSAValue) -> SSAValue:
    return em.max(x, em.const(0, x.type))


UNARY: dict[str, Callable[[TeEmitter, SSAValue], SSAValue]] = {
    "graph.neg": TeEmitter.neg,
    "graph.exp": TeEmitter.exp,
    "graph.log": TeEmitter.log,
    "graph.sqrt": TeEmitter.sqrt,
    "graph.rsqrt": TeEmitter.rsqrt,
    "graph.tanh": TeEmitter.tanh,
    "graph.sigmoid": TeEmitter.sigmoid,
    "graph.erf": TeEmitter.erf,
    "graph.relu": _relu,
}


def build_unary(op: Operation, kb: KernelBuilder, inputs: Indices) -> list[SSAValue]:
    """`out[i] = f(x[i])`; gelu picks its erf or tanh form from `approximate`."""
    (x,) = inputs
    if isinstance(op, graph.GeluOp):
        approx = op.approximation

        def fn(em: TeEmitter, v: SSAValue) -> SSAValue:
            return em.gelu(v, approx)
    else:
        fn = UNARY[op.name]

    def body(em: TeEmitter, sp: Indices, _: Indices) -> SSAValue:
        return fn(em, em.read(x, sp))

    return [kb.compute(shape_of(x), elt(op.results[0]), body)]


# ---------------------------------------------------------------------------
# Contractions and windows
# ---------------------------------------------------------------------------


def build_matmul(op: Operation, kb: KernelBuilder, inputs: Indices) -> list[SSAValue]:
    """`out[b.., m, n] = sum_k a[bcast(b..), m, k] * b[bcast(b..), k, n]` (NumPy matmul:
    a 1-D lhs drops `m`, a 1-D rhs drops `n`, batch dims broadcast)."""
    a, b = inputs
    sa, sb = shape_of(a), shape_of(b)
    out = shape_of(op.results[0])
    a_vec, b_vec = len(sa) == 1, len(sb) == 1
    n_batch = len(out) - (0 if a_vec else 1) - (0 if b_vec else 1)

    def body(em: TeEmitter, sp: Indices, red: Indices) -> SSAValue:
        (k,) = red
        batch = sp[:n_batch]
        if a_vec:
            a_idx = [k]
        else:
            a_idx = [*broadcast_indices(em, batch, sa[:-2]), sp[n_batch], k]
        if b_vec:
            b_idx = [k]
        else:
            b_idx = [*broadcast_indices(em, batch, sb[:-2]), k, sp[-1]]
        return em.mul(em.read(a, a_idx), em.read(b, b_idx))

    return [kb.compute(out, elt(a), body, reduce_extents=[sa[-1]], combiner="sum")]


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


def _pool_windows(
    op: graph._Pool2dOp, kb: KernelBuilder, x: SSAValue, pad_value: float | int
) -> Body:
    """Body reading `xp[n, c, oh*sh + kh, ow*sw + kw]` over the window, where `xp` is
    `x` padded with `pad_value` (`window_input`)."""
    os_ = shape_of(op.results[0])
    kh_size, kw_size = op.kernel_value
    sh, sw = op.strides_value
    top, left, _, _ = op.padding_value
    win_h = Window(2, sh, 1, top, os_[2], kh_size)
    win_w = Window(3, sw, 1, left, os_[3], kw_size)
    source = window_input(kb, x, [win_h, win_w], pad_value)

    def body(em: TeEmitter, sp: Indices, red: Indices) -> SSAValue:
        n, c, oh, ow = sp
        kh, kw = red
        return source.read(em, sp, [(win_h, oh, kh), (win_w, ow, kw)])

    return body


def build_max_pool2d(op: Operation, kb: KernelBuilder, inputs: Indices) -> list[SSAValue]:
    """`out = max over the window`, padding counts as −∞ (the max identity)."""
    assert isinstance(op, graph.MaxPool2dOp)
    t = elt(inputs[0])
    body = _pool_windows(op, kb, inputs[0], lowest(t))
    shape = shape_of(op.results[0])
    return [kb.compute(shape, t, body, op.kernel_value, combiner="max")]


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
    """`s[n, c] = sum_{h, w} x[n, c, h, w]`, then `out[n, c, 0, 0] = s[n, c] / (H*W)`."""
    (x,) = inputs
    n, c, h, w = shape_of(x)
    t = elt(x)
    total = kb.compute(
        (n, c), t, lambda em, sp, red: em.read(x, [*sp, *red]), [h, w], combiner="sum"
    )

    def body(em: TeEmitter, sp: Indices, _: Indices) -> SSAValue:
        return em.div(em.read(total, sp[:2]), em.const(h * w, t))

    return [kb.compute(shape_of(op.results[0]), t, body)]


# ---------------------------------------------------------------------------
# Normalizations and reductions
# ---------------------------------------------------------------------------


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


def build_reduce(op: Operation, kb: KernelBuilder, inputs: Indices) -> list[SSAValue]:
    """`out[kept] = combine_{reduced} x[...]`; reduce_mean divides the sum by the count.

    Input dim d reads the next reduction index if d is reduced, else the next
    spatial index (with keepdims the reduced output dims are 1 and skipped).
    """
    assert isinstance(op, graph._ReduceOp)
    (x,) = inputs
    shape, t = shape_of(x), elt(x)
    axes = sorted(op.axes_value)
    keepdims = op.keepdims is not None
    out = shape_of(op.results[0])
    extents = [shape[a] for a in axes]

    def body(em: TeEmitter, sp: Indices, red: Indices) -> SSAValue:
        idx: Indices = []
        spatial, reduction = iter(sp), iter(red)
        for d in range(len(shape)):
            if d in axes:
                idx.append(next(reduction))
                if keepdims:
                    next(spatial)
            else:
                idx.append(next(spatial))
        return em.read(x, idx)

    if op.name == "graph.reduce_max":
        return [kb.compute(out, t, body, extents, combiner="max")]
    total = kb.compute(out, t, body, extents, combiner="sum")
    if op.name == "graph.reduce_sum":
        return [total]
    count = prod(extents)
    return [kb.compute(out, t, lambda em, sp, _: em.div(em.read(total, sp), em.const(count, t)))]


# ---------------------------------------------------------------------------
# Data movement
# ---------------------------------------------------------------------------


def build_reshape(op: Operation, kb: KernelBuilder, inputs: Indices) -> list[SSAValue]:
    """Row-major: `lin = sum out[i]*stride_out[i]`, `in[j] = (lin / stride_in[j]) % S[j]`."""
    (x,) = inputs
    src, dst = shape_of(x), shape_of(op.results[0])
    src_strides = _strides(src)
    dst_strides = _strides(dst)

    def body(em: TeEmitter, sp: Indices, _: Indices) -> SSAValue:
        lin = em.affine([(i, s) for i, s, d in zip(sp, dst_strides, dst, strict=True) if d != 1])
        idx: Indices = []
        for j, (size, stride) in enumerate(zip(src, src_strides, strict=True)):
            if size == 1:
                idx.append(em.index(0))
                continue
            v = em.idiv(lin, stride)
            idx.append(v if j == 0 else em.irem(v, size))
        return em.read(x, idx)

    return [kb.compute(dst, elt(x), body)]


def _strides(shape: Sequence[int]) -> list[int]:
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= d
    return strides[::-1]


def build_transpose(op: Operation, kb: KernelBuilder, inputs: Indices) -> list[SSAValue]:
    """`out[i0..] = x[j..]` with `j[perm[k]] = i[k]`."""
    assert isinstance(op, graph.TransposeOp)
    (x,) = inputs
    perm = op.perm_value

    def body(em: TeEmitter, sp: Indices, _: Indices) -> SSAValue:
        idx = list(sp)
        for k, p in enumerate(perm):
            idx[p] = sp[k]
        return em.read(x, idx)

    return [kb.compute(shape_of(op.results[0]), elt(x), body)]


def build_concat(op: Operation, kb: KernelBuilder, inputs: Indices) -> list[SSAValue]:
    """`out[.., i, ..]` reads input k where `off_k <= i < off_k + n_k`: a select chain
    from the last input back to the first, each read at a clamped axis index."""
    assert isinstance(op, graph.ConcatOp)
    axis = op.axis_value
    sizes = [shape_of(a)[axis] for a in inputs]
    offsets = [sum(sizes[:k]) for k in range(len(sizes))]

    def body(em: TeEmitter, sp: Indices, _: Indices) -> SSAValue:
        i = sp[axis]
        value: SSAValue | None = None
        for k in reversed(range(len(inputs))):
            if sizes[k] == 0:
                continue
            local = em.iadd(i, -offsets[k])
            local = em.clamp(local, sizes[k] - 1, lower=k > 0, upper=value is not None)
            read = em.read(inputs[k], [*sp[:axis], local, *sp[axis + 1 :]])
            if value is None:
                value = read
            else:
                value = em.select(em.cmpi("slt", i, offsets[k] + sizes[k]), read, value)
        # Every input is empty along the axis: so is the result, the body never runs.
        return value if value is not None else em.const(0, elt(op.results[0]))

    return [kb.compute(shape_of(op.results[0]), elt(op.results[0]), body)]


def build_broadcast_to(op: Operation, kb: KernelBuilder, inputs: Indices) -> list[SSAValue]:
    """`out[i] = x[bcast(i)]`."""
    (x,) = inputs

    def body(em: TeEmitter, sp: Indices, _: Indices) -> SSAValue:
        return em.read(x, broadcast_indices(em, sp, shape_of(x)))

    return [kb.compute(shape_of(op.results[0]), elt(x), body)]


def build_cast(op: Operation, kb: KernelBuilder, inputs: Indices) -> list[SSAValue]:
    """Element conversion with NumPy `astype` semantics (see `convert_scalar`)."""
    (x,) = inputs
    dst = elt(op.results[0])

    def body(em: TeEmitter, sp: Indices, _: Indices) -> SSAValue:
        return convert_scalar(em, em.read(x, sp), dst)

    return [kb.compute(shape_of(x), dst, body)]


def convert_scalar(em: ScalarEmitter, v: SSAValue, dst: Attribute) -> SSAValue:
    """NumPy `astype` for one scalar: float→int truncates toward zero (`fptosi`),
    anything→bool is `!= 0`, bool→number is 0/1 (never sign-extended)."""
    src = v.type
    if src == dst:
        return v
    if is_bool(dst):
        zero = em.const(0, src)
        if is_float(src):
            return em.cmpf("une", v, zero)
        return em.emit(arith.CmpiOp(v, zero, "ne"))
    if is_bool(src):
        return em.select(v, em.const(1, dst), em.const(0, dst))
    if is_float(src) and is_float(dst):
        wider = _bitwidth(dst) > _bitwidth(src)
        return em.emit(arith.ExtFOp(v, dst) if wider else arith.TruncFOp(v, dst))
    if is_float(src):
        return em.emit(arith.FPToSIOp(v, dst))
    if is_float(dst):
        return em.emit(arith.SIToFPOp(v, dst))
    wider = _bitwidth(dst) > _bitwidth(src)
    return em.emit(arith.ExtSIOp(v, dst) if wider else arith.TruncIOp(v, dst))


def _bitwidth(t: Attribute) -> int:
    if isinstance(t, IntegerType):
        return t.width.data
    assert isinstance(t, AnyFloat)
    return t.bitwidth


# ---------------------------------------------------------------------------
# Data movement for imported models: gather, slice, where
# ---------------------------------------------------------------------------


def build_gather(op: Operation, kb: KernelBuilder, inputs: Indices) -> list[SSAValue]:
    """`out[a.., j.., b..] = data[a.., wrap(indices[j..]), b..]`: a negative index
    counts from the end, and the index is clamped into range so the read
    never leaves the buffer."""
    assert isinstance(op, graph.GatherOp)
    data, indices = inputs
    axis = op.axis_value
    extent = shape_of(data)[axis]
    rank_i = len(shape_of(indices))

    def body(em: TeEmitter, sp: Indices, _: Indices) -> SSAValue:
        raw = em.read(indices, sp[axis : axis + rank_i])
        i = em.emit(arith.IndexCastOp(raw, INDEX))
        i = em.select(em.cmpi("slt", i, 0), em.iadd(i, extent), i)
        i = em.clamp(i, max(extent - 1, 0))
        return em.read(data, [*sp[:axis], i, *sp[axis + rank_i :]])

    return [kb.compute(shape_of(op.results[0]), elt(data), body)]


def build_slice(op: Operation, kb: KernelBuilder, inputs: Indices) -> list[SSAValue]:
    """`out[i] = x[starts + i * steps]` (the verifier keeps every read in bounds)."""
    assert isinstance(op, graph.SliceOp)
    (x,) = inputs
    starts, steps = op.starts_value, op.steps_value

    def body(em: TeEmitter, sp: Indices, _: Indices) -> SSAValue:
        idx = [
            em.affine([(i, step)], start) for i, start, step in zip(sp, starts, steps, strict=True)
        ]
        return em.read(x, idx)

    return [kb.compute(shape_of(op.results[0]), elt(x), body)]


def build_where(op: Operation, kb: KernelBuilder, inputs: Indices) -> list[SSAValue]:
    """`out[i] = cond[bcast(i)] ? a[bcast(i)] : b[bcast(i)]`."""
    cond, a, b = inputs
    out = op.results[0].type

    def body(em: TeEmitter, sp: Indices, _: Indices) -> SSAValue:
        c, x, y = (em.read(v, broadcast_indices(em, sp, shape_of(v))) for v in (cond, a, b))
        return em.select(c, x, y)

    return [kb.compute(shape_of(out), elt(out), body)]


# ---------------------------------------------------------------------------
# Dispatch
# ---------------------------------------------------------------------------

Builder = Callable[[Operation, KernelBuilder, Indices], list[SSAValue]]

BUILDERS: dict[str, Builder] = {
    **{name: build_binary for name in BINARY},
    **{name: build_unary for name in (*UNARY, "graph.gelu")},
    "graph.matmul": build_matmul,
    "graph.conv2d": build_conv2d,
    "graph.max_pool2d": build_max_pool2d,
    "graph.avg_pool2d": build_avg_pool2d,
    "graph.global_avg_pool2d": build_global_avg_pool2d,
    "graph.softmax": build_softmax,
    "graph.layer_norm": build_layer_norm,
    "graph.reduce_sum": build_reduce,
    "graph.reduce_mean": build_reduce,
    "graph.reduce_max": build_reduce,
    "graph.reshape": build_reshape,
    "graph.transpose": build_transpose,
    "graph.concat": build_concat,
    "graph.broadcast_to": build_broadcast_to,
    "graph.cast": build_cast,
    "graph.layout_transform": build_layout_transform,
    "graph.gather": build_gather,
    "graph.slice": build_slice,
    "graph.where": build_where,
}
"""Graph compute op name → te builder."""


def build_kernel(
    name: str,
    ops: Sequence[Operation],
    inputs: Sequence[SSAValue],
    outputs: Sequence[SSAValue],
    constraints: Sequence[ConstraintAttr | None] = (),
) -> te.FuncOp:
    """One `te.func @name(inputs) -> outputs` computing the graph compute `ops`
    (in order; each op's operands are `inputs` or results of earlier `ops`).

    `legalize` calls it with a single op; a fusion pass can pass a whole
    group, which becomes one DAG of `te.compute`.
    """
    kb = KernelBuilder([v.type for v in inputs])
    if constraints:
        kb.operand_constraints = list(constraints)
    values: dict[SSAValue, SSAValue] = dict(zip(inputs, kb.args, strict=True))
    for index, op in enumerate(ops):
        missing = [i for i, v in enumerate(op.operands) if v not in values]
        if missing:
            raise op_error(
                op, f"operand #{missing[0]} is neither a kernel input nor computed before"
            )
        operands = [values[v] for v in op.operands]
        if index == 0 and list(op.operands) == list(inputs):
            # By position: `graph.add %x, %x` must still read two parameters, since
            # the kernel is shared with calls passing two different tensors.
            operands = list(kb.args)
        results = BUILDERS[op.name](op, kb, operands)
        values.update(zip(op.results, results, strict=True))
    return kb.finish(name, [values[v] for v in outputs])
