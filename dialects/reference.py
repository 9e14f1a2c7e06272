"""A NumPy evaluator for graph IR: the executable specification of docs/design.md §3.2.

It interprets graph programs op by op with NumPy (no compilation), so it is
the oracle the compiled code is checked against: per-op numerics tests,
whole models, and property tests of graph-to-graph passes (a pass preserves
meaning when the reference gives the same results before and after it).

    results = evaluate(module, "main", x, w)      # tuple of arrays

It covers every graph op that has value semantics: functions, calls, lambdas,
closures, invoke, dataflow blocks, constants, every `GraphCompute` op, and
device annotations/copies (identity). Ops that only exist after legalization
(`graph.call_te`/`call_loop`/`call_extern`) are rejected with a clear error.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, ModuleOp, TensorType, UnitAttr
from xdsl.ir import Block, Operation, SSAValue

from lamina.core.dense import dense_value, numpy_dtype
from lamina.dialects import graph
from lamina.dialects.lamina import UndefAttr

Array = np.ndarray


class ReferenceError(ValueError):
    """The program cannot be evaluated (an op without reference semantics)."""


@dataclass(frozen=True)
class Closure:
    """A function value: a lambda body with its environment, or a func + captures."""

    block: Block
    env: dict[SSAValue, object]
    captured: tuple[object, ...] = ()


def _ints(attr: DenseArrayBase | None, default: Sequence[int]) -> tuple[int, ...]:
    return tuple(attr.get_values()) if attr is not None else tuple(default)


def _int(attr: IntegerAttr | None, default: int) -> int:
    return attr.value.data if attr is not None else default


def _result_dtype(op: Operation) -> np.dtype:
    ty = op.results[0].type
    assert isinstance(ty, TensorType)
    return numpy_dtype(ty.element_type)


def _result_shape(op: Operation) -> tuple[int, ...]:
    ty = op.results[0].type
    assert isinstance(ty, TensorType)
    return tuple(ty.get_shape())


# --------------------------------------------------------------------------- ops

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _unary(fn: Callable[[Array], Array]) -> Callable[[Operation, list[Array]], Array]:
    def apply(op: Operation, args: list[Array]) -> Array:
        x = args[0]
        return np.asarray(fn(x.astype(np.float64))).astype(x.dtype)

    return apply


def _binary(fn: Callable[[Array, Array], Array]) -> Callable[[Operation, list[Array]], Array]:
    def apply(op: Operation, args: list[Array]) -> Array:
        return np.asarray(fn(args[0], args[1])).astype(_result_dtype(op))

    return apply


def _div(a: Array, b: Array) -> Array:
    if np.issubdtype(a.dtype, np.integer):
        a64, b64 = np.broadcast_arrays(a.astype(np.int64), b.astype(np.int64))
        safe = np.where(b64 == 0, 1, b64)  # C/ONNX: truncate toward zero; x / 0 == 0
        q = np.where(b64 == 0, 0, np.abs(a64) // np.abs(safe) * np.sign(a64) * np.sign(safe))
        return q.astype(a.dtype)  # MIN / -1 wraps to MIN
    return a / b


def _gelu(op: Operation, args: list[Array]) -> Array:
    x = args[0].astype(np.float64)
    if op.approximation == "tanh":
        y = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    else:
        y = 0.5 * x * (1 + _erf(x / math.sqrt(2)))
    return y.astype(args[0].dtype)


def _conv2d(op: Operation, args: list[Array]) -> Array:
    data, weight = args
    if _layouts(op) != ("NCHW", "OIHW"):
        data = _to_layout(data, op.data_layout.data, "NCHW")
        weight = _to_layout(weight, op.kernel_layout.data, "OIHW")
    sh, sw = _ints(op.strides, (1, 1))
    dh, dw = _ints(op.dilation, (1, 1))
    top, left, bottom, right = graph.normalize_padding2d(_ints(op.padding, (0, 0, 0, 0)))
    groups = _int(op.groups, 1)
    x = np.pad(data.astype(np.float64), ((0, 0), (0, 0), (top, bottom), (left, right)))
    n, _, hp, wp = x.shape
    o, cg, kh, kw = weight.shape
    oh = (hp - dh * (kh - 1) - 1) // sh + 1
    ow = (wp - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for g in range(groups):
        xs = x[:, g * cg : (g + 1) * cg]
        ws = weight[g * og : (g + 1) * og].astype(np.float64)
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i * dh : i * dh + sh * oh : sh, j * dw : j * dw + sw * ow : sw]
                out[:, g * og : (g + 1) * og] += np.einsum("nchw,oc->nohw", patch, ws[:, :, i, j])
    out = out.astype(data.dtype)
    return out if op.data_layout is None else _to_layout(out, "NCHW", op.data_layout.data)


def _layouts(op: Operation) -> tuple[str, str]:
    data = op.data_layout.data if op.data_layout is not None else "NCHW"
    kernel = op.kernel_layout.data if op.kernel_layout is not None else "OIHW"
    return data, kernel


def _to_layout(x: Array, src: str, dst: str) -> Array:
    return np.transpose(x, [src.index(c) for c in dst])


def _pool(op: Operation, args: list[Array], kind: str) -> Array:
    x = args[0].astype(np.float64)
    kh, kw = _ints(op.kernel, ())
    sh, sw = _ints(op.strides, (1, 1))
    top, left, bottom, right = graph.normalize_padding2d(_ints(op.padding, (0, 0, 0, 0)))
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=fill)
    valid = np.pad(np.ones(x.shape[2:]), ((top, bottom), (left, right)))
    oh, ow = _result_shape(op)[2:]
    out = np.empty((x.shape[0], x.shape[1], oh, ow))
    for i in range(oh):
        for j in range(ow):
            win = xp[:, :, i * sh : i * sh + kh, j * sw : j * sw + kw]
            if kind == "max":
                out[:, :, i, j] = win.max(axis=(2, 3))
            else:
                count = valid[i * sh : i * sh + kh, j * sw : j * sw + kw].sum()
                out[:, :, i, j] = win.sum(axis=(2, 3)) / count
    return out.astype(args[0].dtype)


def _softmax(op: Operation, args: list[Array]) -> Array:
    x = args[0].astype(np.float64)
    axis = _int(op.axis, -1)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return (e / e.sum(axis=axis, keepdims=True)).astype(args[0].dtype)


def _layer_norm(op: Operation, args: list[Array]) -> Array:
    x, gamma, beta = (a.astype(np.float64) for a in args)
    axes = tuple(range(graph.normalize_axis(_int(op.axis, -1), x.ndim), x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    y = (x - mean) / np.sqrt(var + op.epsilon_value) * gamma + beta
    return y.astype(args[0].dtype)


_COMPARE = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
            "gt": np.greater, "ge": np.greater_equal}  # fmt: skip


def _reduce(fn: Callable[..., Array]) -> Callable[[Operation, list[Array]], Array]:
    def apply(op: Operation, args: list[Array]) -> Array:
        x = args[0]
        axes = tuple(range(x.ndim)) if op.axes is None else _ints(op.axes, ())
        axes = tuple(a % x.ndim for a in axes) if x.ndim else ()
        keep = isinstance(op.keepdims, UnitAttr)
        return np.asarray(fn(x, axis=axes, keepdims=keep)).astype(_result_dtype(op))

    return apply


def _cast(op: Operation, args: list[Array]) -> Array:
    x, dtype = args[0], _result_dtype(op)
    if x.dtype.kind == "f" and dtype.kind in "iu":
        return np.trunc(x).astype(dtype)
    if dtype == np.bool_:
        return x != 0
    return x.astype(dtype)


def _layout_transform(op: Operation, args: list[Array]) -> Array:
    """Scatter each logical element to MAP(index); padding holds PAD (0 for undef);
    with `crop`, elements mapped outside the result are dropped."""
    from lamina.dialects.layout_maps import apply_layout

    constraint = op.constraint
    pad = 0 if isinstance(constraint.pad, UndefAttr) else constraint.pad.value.data
    return apply_layout(args[0], constraint.index_map.data, _result_shape(op), pad)


def _gather(op: Operation, args: list[Array]) -> Array:
    """`np.take` along `axis`; negative indices count from the end, and an index
    out of range reads the nearest element (the kernels clamp, never fault)."""
    data, indices = args
    extent = data.shape[op.axis_value]
    wrapped = np.where(indices < 0, indices + extent, indices)
    return np.take(data, np.clip(wrapped, 0, max(extent - 1, 0)), axis=op.axis_value)


def _slice(op: Operation, args: list[Array]) -> Array:
    index = tuple(
        np.arange(start, start + size * step, step)[:size] if size else np.arange(0)
        for start, size, step in zip(
            op.starts_value, op.sizes_value, op.steps_value, strict=True
        )  # fmt: skip
    )
    return args[0][np.ix_(*index)] if index else args[0]


_COMPUTE: dict[str, Callable[[Operation, list[Array]], Array]] = {
    "graph.add": _binary(np.add),
    "graph.sub": _binary(np.subtract),
    "graph.mul": _binary(np.multiply),
    "graph.div": _binary(_div),
    "graph.maximum": _binary(np.maximum),
    "graph.minimum": _binary(np.minimum),
    "graph.neg": lambda op, a: -a[0],
    "graph.exp": _unary(np.exp),
    "graph.log": _unary(np.log),
    "graph.sqrt": _unary(np.sqrt),
    "graph.rsqrt": _unary(lambda x: 1 / np.sqrt(x)),
    "graph.tanh": _unary(np.tanh),
    "graph.sigmoid": _unary(lambda x: 1 / (1 + np.exp(-x))),
    "graph.erf": _unary(_erf),
    "graph.relu": lambda op, a: np.maximum(a[0], 0).astype(a[0].dtype),
    "graph.gelu": _gelu,
    "graph.matmul": _binary(lambda a, b: np.matmul(a.astype(np.float64), b).astype(a.dtype)),
    "graph.conv2d": _conv2d,
    "graph.max_pool2d": lambda op, a: _pool(op, a, "max"),
    "graph.avg_pool2d": lambda op, a: _pool(op, a, "avg"),
    "graph.global_avg_pool2d": lambda op, a: (
        a[0].mean(axis=(2, 3), keepdims=True).astype(a[0].dtype)
    ),
    "graph.softmax": _softmax,
    "graph.layer_norm": _layer_norm,
    "graph.reduce_sum": _reduce(np.sum),
    "graph.reduce_mean": _reduce(np.mean),
    "graph.reduce_max": _reduce(np.max),
    "graph.reduce_min": _reduce(np.min),
    "graph.pow": _binary(np.power),
    "graph.compare": lambda op, a: _COMPARE[op.predicate.data](a[0], a[1]),
    "graph.reshape": lambda op, a: a[0].reshape(_result_shape(op)),
    "graph.transpose": lambda op, a: np.ascontiguousarray(np.transpose(a[0], _ints(op.perm, ()))),
    "graph.concat": lambda op, a: np.concatenate(a, axis=_int(op.axis, 0)),
    "graph.broadcast_to": lambda op, a: np.ascontiguousarray(
        np.broadcast_to(a[0], _result_shape(op))
    ),
    "graph.cast": _cast,
    "graph.layout_transform": _layout_transform,
    "graph.gather": _gather,
    "graph.slice": _slice,
    "graph.where": lambda op, a: np.where(a[0], a[1], a[2]).astype(_result_dtype(op)),
    "graph.on_device": lambda op, a: a[0],
    "graph.device_copy": lambda op, a: a[0].copy(),
}


# ------------------------------------------------------------------ interpreter


class Evaluator:
    """Interprets graph functions of one module."""

    def __init__(self, module: ModuleOp):
        self.funcs = {op.sym_name.data: op for op in module.walk() if isinstance(op, graph.FuncOp)}

    def call(self, name: str, args: Sequence[object]) -> tuple[object, ...]:
        if name not in self.funcs:
            raise ReferenceError(f"no graph.func @{name}")
        func = self.funcs[name]
        if not func.body.blocks:
            raise ReferenceError(f"@{name} has no body")
        return self.run_block(func.body.blocks[0], list(args), {})

    def run_block(self, block: Block, args: list[object], env: dict) -> tuple[object, ...]:
        env = dict(env)
        if len(args) != len(block.args):
            raise ReferenceError(f"expected {len(block.args)} arguments, got {len(args)}")
        env.update(zip(block.args, args, strict=True))
        for op in block.ops:
            if op.name in ("graph.return", "graph.output"):
                return tuple(env[v] for v in op.operands)
            results = self.run_op(op, env)
            env.update(zip(op.results, results, strict=True))
        raise ReferenceError("block without terminator")

    def run_op(self, op: Operation, env: dict) -> Sequence[object]:
        args = [env[v] for v in op.operands]
        if op.name in _COMPUTE:
            return [np.asarray(_COMPUTE[op.name](op, args))]
        match op.name:
            case "graph.constant":
                return [_constant(op)]
            case "graph.call":
                return self.call(op.callee.root_reference.data, args)
            case "graph.dataflow":
                return self.run_block(op.body.blocks[0], [], env)
            case "graph.lambda":
                return [Closure(op.body.blocks[0], env)]
            case "graph.closure":
                func = self.funcs[op.callee.root_reference.data]
                return [Closure(func.body.blocks[0], {}, tuple(args))]
            case "graph.invoke":
                fn: Closure = args[0]
                return self.run_block(fn.block, [*fn.captured, *args[1:]], fn.env)
        raise ReferenceError(f"'{op.name}' has no reference semantics (evaluate before legalize)")


def _constant(op: Operation) -> Array:
    return dense_value(op.value)  # bytes, not a Python list per element


def evaluate_op(op: Operation, args: Sequence[Array]) -> Array | None:
    """One compute op (or layout/device op) on NumPy arrays; None if it has no
    value semantics here. `fold-constants` evaluates constants with this."""
    fn = _COMPUTE.get(op.name)
    return None if fn is None else np.asarray(fn(op, list(args)))


def evaluate(module: ModuleOp, name: str, *args: Array) -> tuple[Array, ...]:
    """Evaluate graph function `name` of `module` on NumPy arrays."""
    return tuple(Evaluator(module).call(name, args))
