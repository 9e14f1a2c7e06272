"""Random well-typed graph programs and an independent NumPy oracle for them.

A `Program` is a straight-line `graph.func @main` over a few parameters.
Hypothesis draws it op by op (`programs()`), so a failing program shrinks to
a minimal one. Every op kind knows three things: how to pick operands and
attributes from what the program has computed so far (drawing fresh
parameters when it needs them), its text, and its meaning in NumPy. The
oracle is written from NumPy's and ONNX's definitions, independently of
Lamina's own reference evaluator (dialects/reference.py): each op is
computed in float64 and rounded to the program's element type, as storage
in that type would.

Values stay bounded so that results compare with tolerances: `exp` only
sees `tanh` of its input, `log`/`sqrt`/`rsqrt` only `exp(tanh(x))`, and a
divisor is always `exp` of something.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

FLOATS = {"f16": np.float16, "f32": np.float32, "f64": np.float64}
INTS = {"i32": np.int32, "i64": np.int64}


def type_text(shape: tuple[int, ...], dtype: str) -> str:
    return f"tensor<{''.join(f'{d}x' for d in shape)}{dtype}>"


@dataclass
class Value:
    name: str
    shape: tuple[int, ...]
    dtype: str

    @property
    def type(self) -> str:
        return type_text(self.shape, self.dtype)


@dataclass
class Step:
    """One op: its text and how to compute its result from the values so far."""

    text: str
    result: Value
    compute: Callable[[dict[str, np.ndarray]], np.ndarray]


@dataclass(repr=False)
class Program:
    dtype: str
    params: list[Value] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    counter: int = 0

    def fresh(self, prefix: str = "v") -> str:
        self.counter += 1
        return f"%{prefix}{self.counter}"

    @property
    def values(self) -> list[Value]:
        return [*self.params, *(s.result for s in self.steps)]

    @property
    def output(self) -> Value:
        return self.values[-1]

    def text(self) -> str:
        params = ", ".join(f"{p.name}: {p.type}" for p in self.params)
        out = self.output
        body = "".join(f"  {s.text}\n" for s in self.steps)
        return (
            f"graph.func @main({params}) -> {out.type} {{\n{body}"
            f"  graph.return {out.name} : {out.type}\n}}\n"
        )

    def __repr__(self) -> str:  # hypothesis prints the program, not the object
        return "\n" + self.text()

    def inputs(self, seed: int) -> list[np.ndarray]:
        rng = np.random.default_rng(seed)
        return [rng.uniform(-2.0, 2.0, size=p.shape).astype(FLOATS[p.dtype]) for p in self.params]

    def oracle(self, inputs: list[np.ndarray]) -> np.ndarray:
        env = {p.name: np.asarray(a) for p, a in zip(self.params, inputs, strict=True)}
        for step in self.steps:
            dtype = FLOATS.get(step.result.dtype) or INTS.get(step.result.dtype) or np.bool_
            env[step.result.name] = np.asarray(step.compute(env)).astype(dtype)
        return env[self.output.name]


# ---------------------------------------------------------------------------
# Building blocks
# ---------------------------------------------------------------------------


def _f64(env: dict[str, np.ndarray], v: Value) -> np.ndarray:
    return env[v.name].astype(np.float64)


def emit(prog: Program, op: str, operands: list[Value], shape, attrs: str = "", dtype=None):
    """Append `%r = graph.<op> operands {attrs} : (types) -> type` and return its step."""
    result = Value(prog.fresh(), tuple(shape), dtype or prog.dtype)
    names = ", ".join(v.name for v in operands)
    types = ", ".join(v.type for v in operands)
    attr_text = f" {{{attrs}}}" if attrs else ""
    text = f"{result.name} = graph.{op} {names}{attr_text} : ({types}) -> {result.type}"
    step = Step(text, result, lambda env: None)
    prog.steps.append(step)
    return step


def unary(prog: Program, op: str, x: Value, fn) -> Value:
    step = emit(prog, op, [x], x.shape)
    step.compute = lambda env: fn(_f64(env, x))
    return step.result


def param(prog: Program, shape: tuple[int, ...]) -> Value:
    value = Value(prog.fresh("p"), tuple(shape), prog.dtype)
    prog.params.append(value)
    return value


def bounded(prog: Program, x: Value) -> Value:
    return unary(prog, "tanh", x, np.tanh)


def positive(prog: Program, x: Value) -> Value:
    return unary(prog, "exp", bounded(prog, x), np.exp)


_ERF = np.vectorize(math.erf, otypes=[np.float64])


def _gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


UNARY = {
    "neg": lambda x: -x,
    "relu": lambda x: np.maximum(x, 0),
    "tanh": np.tanh,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "erf": _ERF,
    "gelu": lambda x: 0.5 * x * (1 + _ERF(x / math.sqrt(2))),
}
POSITIVE_UNARY = {"log": np.log, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x)}
BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "div": np.divide,
}

shapes = st.lists(st.sampled_from([1, 1, 2, 3, 4, 5, 7]), min_size=0, max_size=4).map(tuple)


@st.composite
def broadcast_partner(draw, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts with `shape` (fewer dims, size-1 dims, or extra leading dims)."""
    kept = draw(st.integers(0, len(shape)))
    partner = [d if draw(st.booleans()) else 1 for d in shape[len(shape) - kept :]]
    if kept < len(shape):  # extra leading dims would meet the dropped ones
        return tuple(partner)
    lead = draw(st.lists(st.sampled_from([1, 2, 3]), max_size=max(0, 3 - len(shape))))
    return tuple(lead + partner)


def _pick(draw, prog: Program, rank: int | None = None, min_rank: int = 0) -> Value:
    candidates = [
        v
        for v in prog.values
        if v.dtype == prog.dtype
        and (rank is None or len(v.shape) == rank)
        and len(v.shape) >= min_rank
    ]
    if not candidates:
        return param(prog, draw(_shape_of_rank(rank if rank is not None else max(min_rank, 2))))
    # Prefer recent values, so programs are chains rather than bags of ops.
    return candidates[-1 - draw(st.integers(0, min(2, len(candidates) - 1)))]


def _shape_of_rank(rank: int):
    return st.lists(st.sampled_from([1, 2, 3, 4, 5]), min_size=rank, max_size=rank).map(tuple)


# ---------------------------------------------------------------------------
# Op kinds: each draws operands/attributes and appends its step(s)
# ---------------------------------------------------------------------------


def op_unary(draw, prog):
    x = _pick(draw, prog)
    name = draw(st.sampled_from(sorted(UNARY) + ["exp", "gelu_tanh", *sorted(POSITIVE_UNARY)]))
    if name == "exp":
        return unary(prog, "exp", bounded(prog, x), np.exp)
    if name == "gelu_tanh":
        step = emit(prog, "gelu", [x], x.shape, 'approximate = "tanh"')
        step.compute = lambda env: _gelu_tanh(_f64(env, x))
        return step.result
    if name in POSITIVE_UNARY:
        return unary(prog, name, positive(prog, x), POSITIVE_UNARY[name])
    return unary(prog, name, x, UNARY[name])


def op_binary(draw, prog):
    a = _pick(draw, prog)
    name = draw(st.sampled_from(sorted(BINARY)))
    others = [
        v
        for v in prog.values
        if v.dtype == prog.dtype and v is not a and _broadcasts(a.shape, v.shape)
    ]
    if others and draw(st.booleans()):
        b = draw(st.sampled_from(others))
    else:
        b = param(prog, draw(broadcast_partner(a.shape)))
    if draw(st.booleans()):
        a, b = b, a
    if name == "div":
        b = positive(prog, b)
    shape = np.broadcast_shapes(a.shape, b.shape)
    step = emit(prog, name, [a, b], shape)
    step.compute = lambda env: BINARY[name](_f64(env, a), _f64(env, b))
    return step.result


def _broadcasts(s1, s2) -> bool:
    try:
        np.broadcast_shapes(s1, s2)
        return True
    except ValueError:
        return False


def op_matmul(draw, prog):
    a = _pick(draw, prog, min_rank=2)
    k = a.shape[-1]
    n = draw(st.sampled_from([1, 2, 3, 5]))
    batch = draw(broadcast_partner(a.shape[:-2])) if draw(st.booleans()) else ()
    b = param(prog, (*batch, k, n))
    if draw(st.booleans()):
        b = bounded(prog, b)
    shape = (*np.broadcast_shapes(a.shape[:-2], batch), a.shape[-2], n)
    step = emit(prog, "matmul", [a, b], shape)
    step.compute = lambda env: np.matmul(_f64(env, a), _f64(env, b))
    return step.result


def _window(size: int, kernel: int, stride: int, pad: int, dilation: int = 1) -> int:
    return (size + pad - dilation * (kernel - 1) - 1) // stride + 1


def _pad_nchw(x: np.ndarray, pads, value: float) -> np.ndarray:
    top, left, bottom, right = pads
    return np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=value)


def conv2d_oracle(x, w, strides, pads, dilation, groups):
    x = _pad_nchw(x, pads, 0.0)
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    oh = (h - dilation[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (wd - dilation[1] * (kw - 1) - 1) // strides[1] + 1
    out = np.zeros((n, o, oh, ow))
    per_group = o // groups
    for g in range(groups):
        xs = x[:, g * cg : (g + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                hi, wj = i * dilation[0], j * dilation[1]
                patch = xs[
                    :,
                    :,
                    hi : hi + strides[0] * oh : strides[0],
                    wj : wj + strides[1] * ow : strides[1],
                ]
                ws = w[g * per_group : (g + 1) * per_group, :, i, j]
                out[:, g * per_group : (g + 1) * per_group] += np.einsum("nchw,oc->nohw", patch, ws)
    return out


def op_conv2d(draw, prog):
    x = _pick(draw, prog, rank=4)
    n, c, h, w = x.shape
    groups = draw(st.sampled_from([g for g in (1, 2, 3) if c % g == 0]))
    per_group_out = draw(st.integers(1, 3))
    o = groups * per_group_out
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    strides = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    dilation = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    pads = tuple(draw(st.integers(0, 2)) for _ in range(4))
    oh = _window(h, kh, strides[0], pads[0] + pads[2], dilation[0])
    ow = _window(w, kw, strides[1], pads[1] + pads[3], dilation[1])
    if oh < 1 or ow < 1:
        pads = (kh, kw, kh, kw)
        oh = _window(h, kh, strides[0], 2 * kh, dilation[0])
        ow = _window(w, kw, strides[1], 2 * kw, dilation[1])
    weight = bounded(prog, param(prog, (o, c // groups, kh, kw)))
    attrs = (
        f"strides = array<i64: {strides[0]}, {strides[1]}>, "
        f"padding = array<i64: {', '.join(map(str, pads))}>, "
        f"dilation = array<i64: {dilation[0]}, {dilation[1]}>, groups = {groups} : i64"
    )
    step = emit(prog, "conv2d", [x, weight], (n, o, oh, ow), attrs)
    step.compute = lambda env: conv2d_oracle(
        _f64(env, x), _f64(env, weight), strides, pads, dilation, groups
    )
    return step.result


def pool_oracle(x, kernel, strides, pads, kind):
    n, c, h, w = x.shape
    oh = (h + pads[0] + pads[2] - kernel[0]) // strides[0] + 1
    ow = (w + pads[1] + pads[3] - kernel[1]) // strides[1] + 1
    xp = _pad_nchw(x, pads, -np.inf if kind == "max" else 0.0)
    ones = _pad_nchw(np.ones_like(x), pads, 0.0)
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            hs, ws = i * strides[0], j * strides[1]
            window = xp[:, :, hs : hs + kernel[0], ws : ws + kernel[1]]
            if kind == "max":
                out[:, :, i, j] = window.max(axis=(2, 3))
            else:  # ONNX default: divide by the number of non-padding elements
                count = ones[:, :, hs : hs + kernel[0], ws : ws + kernel[1]].sum(axis=(2, 3))
                out[:, :, i, j] = window.sum(axis=(2, 3)) / count
    return out


def op_pool(draw, prog):
    x = _pick(draw, prog, rank=4)
    kind = draw(st.sampled_from(["max", "avg", "global"]))
    if kind == "global":
        step = emit(prog, "global_avg_pool2d", [x], (*x.shape[:2], 1, 1))
        step.compute = lambda env: _f64(env, x).mean(axis=(2, 3), keepdims=True)
        return step.result
    h, w = x.shape[2:]
    kernel = (draw(st.integers(1, min(3, h))), draw(st.integers(1, min(3, w))))
    strides = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    pads = tuple(draw(st.integers(0, kernel[i % 2] - 1)) for i in range(4))
    oh = (h + pads[0] + pads[2] - kernel[0]) // strides[0] + 1
    ow = (w + pads[1] + pads[3] - kernel[1]) // strides[1] + 1
    attrs = (
        f"kernel = array<i64: {kernel[0]}, {kernel[1]}>, "
        f"strides = array<i64: {strides[0]}, {strides[1]}>, "
        f"padding = array<i64: {', '.join(map(str, pads))}>"
    )
    step = emit(prog, f"{kind}_pool2d", [x], (*x.shape[:2], oh, ow), attrs)
    step.compute = lambda env: pool_oracle(_f64(env, x), kernel, strides, pads, kind)
    return step.result


def op_softmax(draw, prog):
    x = _pick(draw, prog, min_rank=1)
    axis = draw(st.integers(-len(x.shape), len(x.shape) - 1))

    def compute(env):
        v = _f64(env, x)
        e = np.exp(v - v.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)

    step = emit(prog, "softmax", [x], x.shape, f"axis = {axis} : i64")
    step.compute = compute
    return step.result


def op_layer_norm(draw, prog):
    x = _pick(draw, prog, min_rank=1)
    axis = draw(st.integers(-len(x.shape), len(x.shape) - 1))
    norm_shape = x.shape[axis % len(x.shape) :]
    gamma, beta = param(prog, norm_shape), param(prog, norm_shape)
    eps = draw(st.sampled_from([1e-5, 1e-3, 0.1]))

    def compute(env):
        v = _f64(env, x)
        axes = tuple(range(axis % v.ndim, v.ndim))
        mean = v.mean(axis=axes, keepdims=True)
        var = ((v - mean) ** 2).mean(axis=axes, keepdims=True)
        return (v - mean) / np.sqrt(var + eps) * _f64(env, gamma) + _f64(env, beta)

    ftype = "f16" if prog.dtype == "f16" else "f32" if prog.dtype == "f32" else "f64"
    attrs = f"axis = {axis} : i64, epsilon = {eps:.6e} : {ftype}"
    step = emit(prog, "layer_norm", [x, gamma, beta], x.shape, attrs)
    step.compute = compute
    return step.result


def op_reduce(draw, prog):
    x = _pick(draw, prog, min_rank=1)
    kind = draw(st.sampled_from(["sum", "mean", "max"]))
    rank = len(x.shape)
    axes = sorted(draw(st.sets(st.integers(0, rank - 1), min_size=1, max_size=rank)))
    keepdims = draw(st.booleans())
    everything = draw(st.booleans()) and not keepdims
    if everything:
        axes = list(range(rank))
    shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape) if keepdims or i not in axes)
    attrs = [] if everything else [f"axes = array<i64: {', '.join(map(str, axes))}>"]
    if keepdims:
        attrs.append("keepdims")
    fn = {"sum": np.sum, "mean": np.mean, "max": np.max}[kind]
    step = emit(prog, f"reduce_{kind}", [x], shape, ", ".join(attrs))
    step.compute = lambda env: fn(_f64(env, x), axis=tuple(axes), keepdims=keepdims)
    return step.result


def op_reshape(draw, prog):
    x = _pick(draw, prog)
    size = math.prod(x.shape)
    factors = [f for f in range(1, size + 1) if size % f == 0]
    shape: list[int] = []
    rest = size
    for _ in range(draw(st.integers(0, 3))):
        f = draw(st.sampled_from([f for f in factors if rest % f == 0]))
        shape.append(f)
        rest //= f
    if rest != 1 or not shape:
        shape.append(rest)
    step = emit(prog, "reshape", [x], tuple(shape))
    step.compute = lambda env: _f64(env, x).reshape(shape)
    return step.result


def op_transpose(draw, prog):
    x = _pick(draw, prog, min_rank=1)
    perm = draw(st.permutations(range(len(x.shape))))
    shape = tuple(x.shape[p] for p in perm)
    step = emit(prog, "transpose", [x], shape, f"perm = array<i64: {', '.join(map(str, perm))}>")
    step.compute = lambda env: np.transpose(_f64(env, x), perm)
    return step.result


def op_concat(draw, prog):
    x = _pick(draw, prog, min_rank=1)
    axis = draw(st.integers(0, len(x.shape) - 1))
    other_shape = list(x.shape)
    other_shape[axis] = draw(st.integers(1, 3))
    y = param(prog, tuple(other_shape))
    first, second = (x, y) if draw(st.booleans()) else (y, x)
    shape = list(x.shape)
    shape[axis] += other_shape[axis]
    step = emit(prog, "concat", [first, second], tuple(shape), f"axis = {axis} : i64")
    step.compute = lambda env: np.concatenate([_f64(env, first), _f64(env, second)], axis=axis)
    return step.result


def op_broadcast_to(draw, prog):
    x = _pick(draw, prog)
    lead = draw(st.lists(st.sampled_from([1, 2, 3]), max_size=2))
    shape = tuple(lead) + tuple(d if d != 1 else draw(st.sampled_from([1, 2, 3])) for d in x.shape)
    step = emit(prog, "broadcast_to", [x], shape)
    step.compute = lambda env: np.broadcast_to(_f64(env, x), shape)
    return step.result


def op_cast(draw, prog):
    x = _pick(draw, prog)
    if draw(st.booleans()):
        # Through an integer type and back: float → int truncates toward zero (NumPy astype).
        scaled = bounded(prog, x)
        factor = positive(prog, param(prog, ()))
        big = emit(prog, "mul", [scaled, factor], scaled.shape)
        big.compute = lambda env: _f64(env, scaled) * _f64(env, factor)
        big_value = big.result
        itype = draw(st.sampled_from(sorted(INTS)))
        to_int = emit(prog, "cast", [big_value], x.shape, dtype=itype)
        to_int.compute = lambda env: np.trunc(_f64(env, big_value))
        back = emit(prog, "cast", [to_int.result], x.shape)
        back.compute = lambda env: env[to_int.result.name].astype(np.float64)
        return back.result
    other = draw(st.sampled_from(sorted(FLOATS)))
    there = emit(prog, "cast", [x], x.shape, dtype=other)
    there.compute = lambda env: env[x.name].astype(FLOATS[other]).astype(np.float64)
    back = emit(prog, "cast", [there.result], x.shape)
    back.compute = lambda env: env[there.result.name].astype(np.float64)
    return back.result


def op_layout_transform(draw, prog):
    """Block one axis: x[..., i, ...] → r[..., i floordiv B, ..., i mod B] with padding PAD."""
    x = _pick(draw, prog, min_rank=1)
    rank = len(x.shape)
    axes = [i for i, d in enumerate(x.shape) if d >= 2]
    if not axes:  # (an extent-1 axis gives `d mod B` the extent 1, not B: see docs)
        return op_transpose(draw, prog)
    axis = draw(st.sampled_from(axes))
    block = draw(st.sampled_from([b for b in (2, 3, 4) if b <= x.shape[axis]]))
    pad = draw(st.sampled_from([0.0, -1.5, 2.0]))
    dims = [f"d{i}" for i in range(rank)]
    outs = [f"(d{i} floordiv {block})" if i == axis else f"d{i}" for i in range(rank)]
    outs.append(f"(d{axis} mod {block})")
    blocks = -(-x.shape[axis] // block)
    shape = tuple(blocks if i == axis else d for i, d in enumerate(x.shape)) + (block,)
    amap = f"affine_map<({', '.join(dims)}) -> ({', '.join(outs)})>"
    attrs = f"constraint = #lamina.constraint<{amap}, {pad:.6e} : {prog.dtype}>"

    def compute(env):
        v = _f64(env, x)
        widths = [(0, blocks * block - v.shape[axis]) if i == axis else (0, 0) for i in range(rank)]
        v = np.pad(v, widths, constant_values=pad)
        v = v.reshape(v.shape[:axis] + (blocks, block) + v.shape[axis + 1 :])
        return np.moveaxis(v, axis + 1, -1)

    step = emit(prog, "layout_transform", [x], shape, attrs)
    step.compute = compute
    return step.result


def constant(prog: Program, array: np.ndarray, dtype: str) -> Value:
    """A `graph.constant` step holding `array` (indices, conditions)."""

    def text(a):
        if a.ndim == 0:
            return str(a.item()).lower()
        return "[" + ", ".join(text(x) for x in a) + "]"

    result = Value(prog.fresh("c"), tuple(array.shape), dtype)
    literal = f"{result.name} = graph.constant dense<{text(array)}> : {result.type}"
    prog.steps.append(Step(literal, result, lambda env: array))
    return result


def op_gather(draw, prog):
    """`np.take` with constant indices, negative ones included."""
    x = _pick(draw, prog, min_rank=1)
    axis = draw(st.integers(0, len(x.shape) - 1))
    extent = x.shape[axis]
    idx_shape = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    flat = draw(
        st.lists(
            st.integers(-extent, extent - 1),
            min_size=math.prod(idx_shape),
            max_size=math.prod(idx_shape),
        )
    )
    indices = constant(prog, np.array(flat, dtype=np.int64).reshape(idx_shape), "i64")
    shape = x.shape[:axis] + idx_shape + x.shape[axis + 1 :]
    step = emit(prog, "gather", [x, indices], shape, f"axis = {axis} : i64")
    step.compute = lambda env: np.take(_f64(env, x), env[indices.name], axis=axis)
    return step.result


def op_slice(draw, prog):
    """Strided slices, backwards ones included: `x[start::step][:size]` per axis."""
    x = _pick(draw, prog, min_rank=1)
    starts, sizes, steps = [], [], []
    for d in x.shape:
        step = draw(st.sampled_from([1, 1, 2, -1, -2]))
        start = draw(st.integers(0, d - 1))
        room = (d - start + step - 1) // step if step > 0 else start // -step + 1
        starts.append(start)
        sizes.append(draw(st.integers(1, room)))
        steps.append(step)
    attrs = ", ".join(
        f"{k} = array<i64: {', '.join(map(str, v))}>"
        for k, v in (("starts", starts), ("sizes", sizes), ("steps", steps))
    )
    step_ = emit(prog, "slice", [x], tuple(sizes), attrs)
    index = tuple(slice(a, None, s) for a, s in zip(starts, steps, strict=True))
    step_.compute = lambda env: _f64(env, x)[index][tuple(slice(0, n) for n in sizes)]
    return step_.result


def op_where(draw, prog):
    """`np.where` with a constant condition broadcast over the trailing axes."""
    x = _pick(draw, prog)
    y = param(prog, x.shape)
    rank = draw(st.integers(0, len(x.shape)))
    cond_shape = x.shape[len(x.shape) - rank :]
    flags = draw(
        st.lists(st.booleans(), min_size=math.prod(cond_shape), max_size=math.prod(cond_shape))
    )
    cond = constant(prog, np.array(flags, dtype=np.bool_).reshape(cond_shape), "i1")
    step = emit(prog, "where", [cond, x, y], x.shape)
    step.compute = lambda env: np.where(env[cond.name], _f64(env, x), _f64(env, y))
    return step.result


OP_KINDS: dict[str, Callable] = {
    "gather": op_gather,
    "slice": op_slice,
    "where": op_where,
    "unary": op_unary,
    "binary": op_binary,
    "matmul": op_matmul,
    "conv2d": op_conv2d,
    "pool": op_pool,
    "softmax": op_softmax,
    "layer_norm": op_layer_norm,
    "reduce": op_reduce,
    "reshape": op_reshape,
    "transpose": op_transpose,
    "concat": op_concat,
    "broadcast_to": op_broadcast_to,
    "cast": op_cast,
    "layout_transform": op_layout_transform,
}


@st.composite
def programs(draw, max_ops: int = 4, dtypes=("f32", "f32", "f64", "f16")) -> Program:
    """A random straight-line graph program over every kind of graph op."""
    prog = Program(draw(st.sampled_from(dtypes)))
    first = draw(shapes)
    if draw(st.integers(0, 3)) == 0:
        first = tuple(draw(st.lists(st.integers(1, 4), min_size=4, max_size=4)))  # NCHW
    param(prog, first)
    for _ in range(draw(st.integers(1, max_ops))):
        OP_KINDS[draw(st.sampled_from(sorted(OP_KINDS)))](draw, prog)
    return prog


TOLERANCE = {"f16": (2e-2, 2e-2), "f32": (2e-4, 2e-4), "f64": (1e-9, 1e-9)}


def assert_matches(got: np.ndarray, expected: np.ndarray, dtype: str) -> None:
    """Equal within the element type's tolerance, scaled by the magnitude of the result."""
    rtol, atol = TOLERANCE[dtype]
    scale = float(np.max(np.abs(expected[np.isfinite(expected)]), initial=1.0))
    assert got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_allclose(
        got.astype(np.float64),
        expected.astype(np.float64),
        rtol=rtol,
        atol=atol * max(1.0, scale),
        equal_nan=True,
    )
