"""ATen FX graphs → graph dialect: what `lamina.frontends.torch` compiles.

`import_graph(graph, inputs)` turns a `torch.fx.Graph` of ATen operators
(the graphs AOTAutograd and `torch.export` produce, after the core ATen
decompositions) into a verified module with one entry function `@main`.
Each placeholder of the graph is given as one of:

* a `TensorSpec`-like `(shape, dtype)` pair (`Input`): a parameter of `@main`;
* a NumPy array: a *known constant* (a model weight or buffer), baked into
  the module where a graph op uses it, as the ONNX importer does with
  initializers; computations on known constants only (BatchNorm's scale and
  shift from its statistics) are done here in NumPy;
* a Python int or float (a `SymInt` made concrete): used where an operator
  takes a size;
* `None`: the dynamic batch size itself (a `SymInt` placeholder equal to the
  leading dimension of the inputs whose shape starts with `None`). A size
  argument holding it keeps the batch (`view(x, [s0, -1])` becomes a reshape
  to `(None, -1)`), see docs/dynamic-shapes.md.

Operators are translated by their handlers in `HANDLERS` (keyed by the
`OpOverload`) through `GraphBuilder`. A node the importer cannot represent
exactly — an operator without a handler, an argument value it does not
handle (a transposed convolution, a training-mode batch norm, a dtype
without an element type) — raises `TorchImportError` naming the FX node,
its operator and the user's source line when FX recorded one
(`node.meta["stack_trace"]`). `SUPPORTED` is the set of operators with a
handler: the backend's partitioner asks it which nodes Lamina can take.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from lamina.core.diagnostics import Diagnostic, DiagnosticError, SourceLocation
from lamina.frontends.builder import (
    DYNAMIC_INDEX,
    BuilderError,
    GraphBuilder,
    Value,
    build_module,
    shape_of,
)
from lamina.frontends.sources import DEFAULT_BATCH_BOUNDS

aten = torch.ops.aten


class TorchImportError(DiagnosticError):
    """An FX node Lamina cannot compile; the message names the node, its operator and
    (as the location) the model's source line."""


@dataclass(frozen=True)
class Input:
    """A runtime tensor input of `@main`: its shape and dtype."""

    shape: tuple[int | None, ...]
    """A leading `None` is the dynamic batch."""
    dtype: np.dtype


InputSpec = Input | np.ndarray | int | float | None


# ---------------------------------------------------------------------------
# Source locations of FX nodes
# ---------------------------------------------------------------------------

_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<fn>\S+)\n(?P<code>.*)')


def source_of(node: torch.fx.Node) -> tuple[SourceLocation | None, str]:
    """The user's source line that created `node` (innermost frame FX recorded) and
    its code, or (None, "") when FX has no stack trace for it."""
    trace = node.meta.get("stack_trace") or ""
    frames = list(_FRAME.finditer(trace))
    if not frames:
        return None, ""
    last = frames[-1]
    return SourceLocation(last["file"], int(last["line"]), 1), last["code"].strip()


def op_name(node: torch.fx.Node) -> str:
    """`aten.convolution.default`, `operator.getitem`, ... for messages."""
    target = node.target
    if node.op != "call_function":
        return node.op
    if isinstance(target, torch._ops.OpOverload):
        return str(target)
    return f"{getattr(target, '__module__', '') or ''}.{getattr(target, '__name__', target)}"


def node_error(node: torch.fx.Node, message: str) -> TorchImportError:
    location, code = source_of(node)
    text = f"FX node '{node.name}' ({op_name(node)}): {message}"
    context = [f"  {code}"] if code else []
    return TorchImportError(Diagnostic(text, location=location, context=context))


# ---------------------------------------------------------------------------
# The importer
# ---------------------------------------------------------------------------


def import_graph(
    graph: torch.fx.Graph,
    inputs: Sequence[InputSpec],
    owner=None,
    batch_bounds: tuple[int, int] = DEFAULT_BATCH_BOUNDS,
):
    """A verified module whose `@main` computes `graph` (see the module docstring).

    `owner`: the `GraphModule` holding the graph's `get_attr` constants.
    `batch_bounds`: the bounds of the dynamic batch (inputs whose shape starts
    with `None`).
    Returns `(module, outputs)`: `outputs[k]` is None for a tensor result of
    `@main`, or the Python value (a constant) the graph returns in place `k`.
    """
    return _Importer(graph, list(inputs), owner, batch_bounds).run()


class _Importer:
    def __init__(self, graph: torch.fx.Graph, inputs: list[InputSpec], owner, batch_bounds):
        self.graph = graph
        self.inputs = inputs
        self.owner = owner
        self.g = GraphBuilder("main", batch_bounds=batch_bounds)
        self.env: dict[torch.fx.Node, object] = {}
        self.materialized: dict[int, Value] = {}

    def run(self):
        placeholders = [n for n in self.graph.nodes if n.op == "placeholder"]
        if len(placeholders) != len(self.inputs):
            raise ValueError(f"{len(placeholders)} placeholders but {len(self.inputs)} inputs")
        for node, spec in zip(placeholders, self.inputs, strict=True):
            self.env[node] = self._placeholder(node, spec)
        results = None
        for node in self.graph.nodes:
            if node.op == "call_function":
                self.env[node] = self._call(node)
            elif node.op == "get_attr":
                self.env[node] = _to_numpy(node, _fetch_attr(self.owner, node.target))
            elif node.op == "output":
                results = self._outputs(node)
            elif node.op != "placeholder":
                raise node_error(node, f"'{node.op}' nodes are not supported")
        values = [v for v in results if isinstance(v, Value)]
        self.g.ret(*values)
        try:
            module = build_module(self.g)
        except BuilderError as err:
            raise TorchImportError(f"the imported graph does not verify: {err}") from None
        return module, [None if isinstance(v, Value) else v for v in results]

    def _placeholder(self, node: torch.fx.Node, spec: InputSpec) -> object:
        if isinstance(spec, Input):
            try:
                return self.g.param(spec.shape, spec.dtype, name=node.name)
            except BuilderError as err:
                raise node_error(node, str(err)) from None
        return spec

    def _outputs(self, node: torch.fx.Node) -> list:
        flat = node.args[0]
        flat = list(flat) if isinstance(flat, list | tuple) else [flat]
        results = []
        for item in flat:
            value = self.arg(item)
            if isinstance(value, np.ndarray):
                value = self.value(item)
            results.append(value)
        return results

    def _call(self, node: torch.fx.Node) -> object:
        handler = HANDLERS.get(node.target)
        if handler is None:
            raise node_error(node, "operator is not supported by Lamina")
        try:
            return handler(Ctx(self, node))
        except TorchImportError:
            raise
        except BuilderError as err:
            raise node_error(node, str(err)) from None
        except (ValueError, IndexError, TypeError, KeyError) as err:
            raise node_error(node, f"cannot translate: {err}") from None

    # -- values ----------------------------------------------------------------

    def arg(self, item: object) -> object:
        """An FX argument with its nodes replaced by what they computed."""
        if isinstance(item, torch.fx.Node):
            return self.env[item]
        if isinstance(item, list | tuple):
            return type(item)(self.arg(x) for x in item)
        return item

    def value(self, item: object, like: Value | None = None) -> Value:
        """A graph value: known constants become `graph.constant`s (once each)."""
        value = self.arg(item)
        if isinstance(value, Value):
            return value
        if isinstance(value, np.ndarray):
            key = id(value)
            if key not in self.materialized:
                name = item.name if isinstance(item, torch.fx.Node) else None
                self.materialized[key] = self.g.constant(value, name=name)
            return self.materialized[key]
        if isinstance(value, bool | int | float):
            dtype = _np_dtype_of(like) if like is not None else None
            return self.g.constant(np.asarray(value, dtype=dtype))
        raise TypeError(f"expected a tensor, got {type(value).__name__}")


def _fetch_attr(owner, target: str):
    value = owner
    for part in target.split("."):
        value = getattr(value, part)
    return value


def _np_dtype_of(value: Value) -> np.dtype:
    from lamina.frontends.builder import dtype_of

    return dtype_of(value)


_DTYPES = {
    torch.float32: np.float32, torch.float64: np.float64, torch.float16: np.float16,
    torch.int8: np.int8, torch.int16: np.int16, torch.int32: np.int32, torch.int64: np.int64,
    torch.uint8: np.uint8, torch.bool: np.bool_,
}  # fmt: skip


def numpy_dtype(dtype: torch.dtype) -> np.dtype | None:
    """The NumPy dtype of a torch dtype Lamina has an element type for, else None."""
    found = _DTYPES.get(dtype)
    return np.dtype(found) if found is not None else None


def _to_numpy(node: torch.fx.Node, tensor) -> np.ndarray:
    if not isinstance(tensor, torch.Tensor):
        raise node_error(node, f"constant of type {type(tensor).__name__} is not a tensor")
    if numpy_dtype(tensor.dtype) is None:
        raise node_error(node, f"dtype {tensor.dtype} is not supported")
    return tensor.detach().cpu().contiguous().numpy()


class Ctx:
    """One FX node being translated: its arguments and the builder."""

    def __init__(self, importer: _Importer, node: torch.fx.Node):
        self.importer = importer
        self.node = node
        self.g = importer.g

    def error(self, message: str) -> TorchImportError:
        return node_error(self.node, message)

    def arg(self, i: int, default=None, name: str | None = None) -> object:
        """Argument `i` (or keyword `name`), nodes replaced by their values."""
        node = self.node
        if i < len(node.args):
            return self.importer.arg(node.args[i])
        if name is not None and name in node.kwargs:
            return self.importer.arg(node.kwargs[name])
        return default

    def value(self, i: int, like: Value | None = None) -> Value:
        """Argument `i` as a graph value (a constant is materialized)."""
        return self.importer.value(self.node.args[i], like)

    def is_const(self, i: int) -> bool:
        return isinstance(self.arg(i), np.ndarray)


Handler = Callable[[Ctx], object]
HANDLERS: dict[object, Handler] = {}


def handles(*targets):
    """Register a handler for the ATen overloads (or Python callables) `targets`."""

    def register(fn: Handler) -> Handler:
        for target in targets:
            HANDLERS[target] = fn
        return fn

    return register


# ---------------------------------------------------------------------------
# Elementwise
# ---------------------------------------------------------------------------

_BINARY = {
    aten.add.Tensor: "add", aten.add.Scalar: "add", aten.sub.Tensor: "sub",
    aten.sub.Scalar: "sub", aten.mul.Tensor: "mul", aten.mul.Scalar: "mul",
    aten.div.Tensor: "div", aten.div.Scalar: "div", aten.maximum.default: "maximum",
    aten.minimum.default: "minimum",
}  # fmt: skip


def _operand(c: Ctx, i: int, like: Value | None) -> object:
    """A graph value, or a Python scalar left for the builder (made `like`'s dtype).

    A 0-d constant tensor is a scalar too: in PyTorch's type promotion it does
    not change the dtype of a tensor with dimensions of the same kind.
    """
    item = c.arg(i)
    if isinstance(item, np.ndarray) and item.ndim == 0 and like is not None:
        if np.dtype(item.dtype).kind == _np_dtype_of(like).kind:
            item = item.item()
    if isinstance(item, bool | int | float):
        return item
    return c.value(i, like)


@handles(*_BINARY)
def _binary(c: Ctx) -> Value:
    a, b = c.arg(0), c.arg(1)
    like = a if isinstance(a, Value) else b if isinstance(b, Value) else None
    lhs, rhs = _operand(c, 0, like), _operand(c, 1, like)
    alpha = c.arg(2, 1, name="alpha")
    if alpha != 1:  # add/sub: a ± alpha · b
        rhs = rhs * alpha if isinstance(rhs, bool | int | float) else c.g.mul(rhs, alpha)
    return getattr(c.g, _BINARY[c.node.target])(lhs, rhs)


@handles(aten.rsub.Scalar, aten.rsub.Tensor)
def _rsub(c: Ctx) -> Value:
    x = c.value(0)
    other = _operand(c, 1, x)
    alpha = c.arg(2, 1, name="alpha")
    return c.g.sub(other, c.g.mul(x, alpha) if alpha != 1 else x)


_UNARY = {
    aten.relu.default: "relu", aten.neg.default: "neg", aten.exp.default: "exp",
    aten.log.default: "log", aten.sqrt.default: "sqrt", aten.rsqrt.default: "rsqrt",
    aten.tanh.default: "tanh", aten.sigmoid.default: "sigmoid", aten.erf.default: "erf",
}  # fmt: skip


@handles(*_UNARY)
def _unary(c: Ctx) -> Value:
    return getattr(c.g, _UNARY[c.node.target])(c.value(0))


@handles(aten.reciprocal.default)
def _reciprocal(c: Ctx) -> Value:
    x = c.value(0)
    return c.g.div(1.0, x)


@handles(aten.abs.default)
def _abs(c: Ctx) -> Value:
    x = c.value(0)
    return c.g.maximum(x, c.g.neg(x))


@handles(aten.gelu.default)
def _gelu(c: Ctx) -> Value:
    return c.g.gelu(c.value(0), c.arg(1, "none", name="approximate"))


@handles(aten.silu.default)
def _silu(c: Ctx) -> Value:
    x = c.value(0)
    return c.g.mul(x, c.g.sigmoid(x))


def _clamp(g: GraphBuilder, x: Value, lo, hi) -> Value:
    if lo is not None:
        x = g.maximum(x, lo)
    if hi is not None:
        x = g.minimum(x, hi)
    return x


@handles(aten.clamp.default, aten.clamp.Tensor)
def _clamp_op(c: Ctx) -> Value:
    x = c.value(0)
    bounds = []
    for i, name in ((1, "min"), (2, "max")):
        item = c.arg(i, name=name)
        bounds.append(c.value(i, x) if isinstance(item, np.ndarray) else item)
    return _clamp(c.g, x, *bounds)


@handles(aten.clamp_min.default)
def _clamp_min(c: Ctx) -> Value:
    return _clamp(c.g, c.value(0), c.arg(1), None)


@handles(aten.clamp_max.default)
def _clamp_max(c: Ctx) -> Value:
    return _clamp(c.g, c.value(0), None, c.arg(1))


@handles(aten.hardtanh.default)
def _hardtanh(c: Ctx) -> Value:
    return _clamp(c.g, c.value(0), float(c.arg(1, -1.0)), float(c.arg(2, 1.0)))


@handles(aten.hardsigmoid.default)
def _hardsigmoid(c: Ctx) -> Value:
    """relu6(x + 3) / 6."""
    g = c.g
    return g.div(_clamp(g, g.add(c.value(0), 3.0), 0.0, 6.0), 6.0)


@handles(aten.hardswish.default)
def _hardswish(c: Ctx) -> Value:
    """x · relu6(x + 3) / 6."""
    g, x = c.g, c.value(0)
    return g.mul(x, g.div(_clamp(g, g.add(x, 3.0), 0.0, 6.0), 6.0))


_POW_EXPONENTS = {
    0.5: lambda g, x: g.sqrt(x), -0.5: lambda g, x: g.rsqrt(x), 1.0: lambda g, x: x,
    2.0: lambda g, x: g.mul(x, x), 3.0: lambda g, x: g.mul(g.mul(x, x), x),
    -1.0: lambda g, x: g.div(1.0, x),
}  # fmt: skip


@handles(aten.pow.Tensor_Scalar)
def _pow(c: Ctx) -> Value:
    exponent = float(c.arg(1))
    if exponent not in _POW_EXPONENTS:
        raise c.error(f"exponent {exponent} is not supported (supported: {list(_POW_EXPONENTS)})")
    return _POW_EXPONENTS[exponent](c.g, c.value(0))


@handles(aten.clone.default, aten.alias.default, aten.detach.default, aten.contiguous.default)
def _identity(c: Ctx) -> object:
    return c.arg(0)


@handles(aten._to_copy.default)
def _to_copy(c: Ctx) -> object:
    dtype = c.node.kwargs.get("dtype")
    x = c.arg(0)
    if dtype is None:
        return x
    target = numpy_dtype(dtype)
    if target is None:
        raise c.error(f"dtype {dtype} is not supported")
    if isinstance(x, np.ndarray):
        return x.astype(target)
    return c.g.cast(x, target) if _np_dtype_of(x) != target else x


# ---------------------------------------------------------------------------
# Contractions and convolution
# ---------------------------------------------------------------------------


@handles(aten.mm.default, aten.bmm.default, aten.matmul.default)
def _matmul(c: Ctx) -> Value:
    return c.g.matmul(c.value(0), c.value(1))


@handles(aten.addmm.default)
def _addmm(c: Ctx) -> Value:
    """beta · input + alpha · (mat1 @ mat2)."""
    g = c.g
    y = g.matmul(c.value(1), c.value(2))
    alpha, beta = c.arg(4, 1, name="alpha"), c.arg(3, 1, name="beta")
    if alpha != 1:
        y = g.mul(y, float(alpha))
    if beta == 0:
        return y
    bias = c.value(0, y)
    return g.add(y, g.mul(bias, float(beta)) if beta != 1 else bias)


@handles(aten.convolution.default)
def _convolution(c: Ctx) -> Value:
    """2-D convolution (a 1-D one runs as 2-D with a unit height); bias added after."""
    g = c.g
    x, w = c.value(0), c.value(1)
    stride, padding, dilation = c.arg(3), c.arg(4), c.arg(5)
    transposed, groups = c.arg(6), c.arg(8)
    if transposed:
        raise c.error("transposed convolution is not supported")
    rank = len(shape_of(x))
    if rank == 3:
        x = g.reshape(x, (*shape_of(x)[:2], 1, shape_of(x)[2]))
        w = g.reshape(w, (*shape_of(w)[:2], 1, shape_of(w)[2]))
        stride, padding, dilation = [1, *stride], [0, *padding], [1, *dilation]
    elif rank != 4:
        raise c.error(f"only 1-D and 2-D convolution is supported, got a rank-{rank} input")
    pads = (padding[0], padding[1], padding[0], padding[1])
    y = g.conv2d(x, w, tuple(stride), pads, tuple(dilation), int(groups))
    if c.arg(2) is not None:
        y = g.add(y, g.reshape(c.value(2), (-1, 1, 1)))
    if rank == 3:
        shape = shape_of(y)
        y = g.reshape(y, (shape[0], shape[1], shape[3]))
    return y


# ---------------------------------------------------------------------------
# Normalization and softmax
# ---------------------------------------------------------------------------


@handles(aten._native_batch_norm_legit_no_training.default)
def _batch_norm(c: Ctx) -> tuple:
    """Inference batch norm `x · s + t`, `s = w / sqrt(var + eps)`, `t = b - mean · s`:
    folded here when the statistics are known constants. Only output 0 exists."""
    g, x = c.g, c.value(0)
    rank = len(shape_of(x))
    channel = (-1,) + (1,) * (rank - 2)
    eps = float(c.arg(6))
    weight, bias, mean, var = (c.arg(i) for i in (1, 2, 3, 4))
    dtype = _np_dtype_of(x)
    if all(isinstance(v, np.ndarray) or v is None for v in (weight, bias)) and all(
        isinstance(v, np.ndarray) for v in (mean, var)
    ):
        w64 = np.ones_like(mean, np.float64) if weight is None else weight.astype(np.float64)
        b64 = np.zeros_like(mean, np.float64) if bias is None else bias.astype(np.float64)
        s = w64 / np.sqrt(var.astype(np.float64) + eps)
        t = b64 - mean.astype(np.float64) * s
        y = g.add(g.mul(x, g.constant(s.astype(dtype).reshape(channel))),
                  g.constant(t.astype(dtype).reshape(channel)))  # fmt: skip
        return (y, None, None)
    mean_v, var_v = g.reshape(c.value(3), channel), g.reshape(c.value(4), channel)
    y = g.div(g.sub(x, mean_v), g.sqrt(g.add(var_v, eps)))
    if weight is not None:
        y = g.mul(y, g.reshape(c.value(1), channel))
    if bias is not None:
        y = g.add(y, g.reshape(c.value(2), channel))
    return (y, None, None)


@handles(aten.native_layer_norm.default)
def _layer_norm(c: Ctx) -> tuple:
    """`graph.layer_norm` over the trailing `normalized_shape`; outputs 1 and 2 (mean,
    rstd) are for training and not produced."""
    g, x = c.g, c.value(0)
    norm_shape = tuple(int(d) for d in c.arg(1))
    axis = len(shape_of(x)) - len(norm_shape)
    dtype = _np_dtype_of(x)
    gamma = c.value(2) if c.arg(2) is not None else g.constant(np.ones(norm_shape, dtype))
    beta = c.value(3) if c.arg(3) is not None else g.constant(np.zeros(norm_shape, dtype))
    return (g.layer_norm(x, gamma, beta, axis, float(c.arg(4))), None, None)


@handles(aten._softmax.default, aten.softmax.int)
def _softmax(c: Ctx) -> Value:
    return c.g.softmax(c.value(0), int(c.arg(1)))


@handles(aten._log_softmax.default)
def _log_softmax(c: Ctx) -> Value:
    return c.g.log(c.g.softmax(c.value(0), int(c.arg(1))))


@handles(aten._safe_softmax.default)
def _safe_softmax(c: Ctx) -> Value:
    """Softmax whose rows of only -inf (fully masked attention) are 0, not NaN.

    With m the row maximum: m - m is NaN exactly when m is ±inf or NaN, and
    then the row is `exp(m) · 0`: 0 for -inf, NaN for +inf or NaN (what
    softmax gives there). The cast to i1 is NumPy's `x != 0` (NaN is true).
    """
    g, x = c.g, c.value(0)
    axis = int(c.arg(1))
    m = g.reduce_max(x, axis, keepdims=True)
    non_finite = g.cast(g.sub(m, m), np.bool_)
    return g.where(non_finite, g.mul(g.exp(m), 0.0), g.softmax(x, axis))


# ---------------------------------------------------------------------------
# Pooling and reductions
# ---------------------------------------------------------------------------


def _pool_args(c: Ctx, x: Value, kernel, stride, padding, ceil_mode: bool) -> tuple:
    """(kernel, strides, (top, left, bottom, right)) with ceil_mode's extra padding."""
    kernel = _pair(kernel)
    strides = _pair(stride) if stride else kernel
    pad = _pair(padding)
    pads = [pad[0], pad[1], pad[0], pad[1]]
    if ceil_mode:
        for axis, size in enumerate(shape_of(x)[2:]):
            k, s, p = kernel[axis], strides[axis], pad[axis]
            out = -(-(size + 2 * p - k) // s) + 1
            if (out - 1) * s >= size + p:  # PyTorch: the last window must start inside
                out -= 1
            pads[axis + 2] += max((out - 1) * s + k - (size + 2 * p), 0)
    return kernel, strides, tuple(pads)


def _pair(value) -> tuple[int, int]:
    if isinstance(value, int):
        return (value, value)
    values = [int(v) for v in value]
    return (values[0], values[0]) if len(values) == 1 else (values[0], values[1])


@handles(aten.max_pool2d_with_indices.default, aten.max_pool2d.default)
def _max_pool(c: Ctx) -> object:
    """Values only: a use of the indices (output 1) is refused by `getitem`."""
    x = c.value(0)
    if any(d != 1 for d in _pair(c.arg(4, 1, name="dilation"))):
        raise c.error("dilated pooling is not supported")
    kernel, strides, pads = _pool_args(c, x, c.arg(1), c.arg(2, None, name="stride"),
                                       c.arg(3, 0, name="padding"),
                                       bool(c.arg(5, False, name="ceil_mode")))  # fmt: skip
    y = c.g.max_pool2d(x, kernel, strides, pads)
    return (y, None) if c.node.target == aten.max_pool2d_with_indices.default else y


@handles(aten.avg_pool2d.default)
def _avg_pool(c: Ctx) -> Value:
    """`graph.avg_pool2d` divides by the in-image elements; PyTorch's default
    `count_include_pad` divides by the window inside the padded image instead."""
    x = c.value(0)
    padding = c.arg(3, 0, name="padding")
    ceil_mode = bool(c.arg(4, False, name="ceil_mode"))
    include_pad = bool(c.arg(5, True, name="count_include_pad"))
    if c.arg(6, None, name="divisor_override") is not None:
        raise c.error("divisor_override is not supported")
    kernel, strides, pads = _pool_args(c, x, c.arg(1), c.arg(2, None, name="stride"),
                                       padding, ceil_mode)  # fmt: skip
    y = c.g.avg_pool2d(x, kernel, strides, pads)
    base = _pair(padding)
    if include_pad and any(base):
        from lamina.frontends.onnx import _window_count_ratio  # ONNX's count_include_pad

        size, out = shape_of(x)[2:], shape_of(y)[2:]
        ratio = _window_count_ratio(size, out, kernel, strides, pads, base + base)
        y = c.g.mul(y, c.g.constant(ratio.astype(_np_dtype_of(x))))
    return y


@handles(aten._adaptive_avg_pool2d.default, aten.adaptive_avg_pool2d.default)
def _adaptive_avg_pool(c: Ctx) -> Value:
    """Global pooling, or a plain one when the output size divides the input's."""
    x = c.value(0)
    out = _pair(c.arg(1))
    size = shape_of(x)[-2:]
    if out == (1, 1) and len(shape_of(x)) == 4:
        return c.g.global_avg_pool2d(x)
    if any(s % o for s, o in zip(size, out, strict=True)):
        raise c.error(f"output size {list(out)} does not divide the input size {list(size)}")
    kernel = tuple(s // o for s, o in zip(size, out, strict=True))
    return c.g.avg_pool2d(x, kernel, kernel, 0)


def _dims(c: Ctx, i: int, x: Value) -> tuple[int, ...] | None:
    dims = c.arg(i, None, name="dim")
    if dims is None or (isinstance(dims, list | tuple) and not dims):
        return None
    if isinstance(dims, int):
        dims = [dims]
    rank = max(len(shape_of(x)), 1)
    return tuple(int(d) % rank for d in dims)


def _reduce(method: str):
    def handler(c: Ctx) -> Value:
        if c.node.kwargs.get("dtype") is not None:
            raise c.error("a reduction with a dtype is not supported")
        x = c.value(0)
        keepdim = bool(c.arg(2, False, name="keepdim"))
        return getattr(c.g, method)(x, _dims(c, 1, x), keepdims=keepdim)

    return handler


HANDLERS[aten.mean.dim] = _reduce("reduce_mean")
HANDLERS[aten.sum.dim_IntList] = _reduce("reduce_sum")
HANDLERS[aten.amax.default] = _reduce("reduce_max")


@handles(aten.mean.default, aten.sum.default)
def _reduce_all(c: Ctx) -> Value:
    method = "reduce_mean" if c.node.target == aten.mean.default else "reduce_sum"
    return getattr(c.g, method)(c.value(0), None, keepdims=False)


# ---------------------------------------------------------------------------
# Shapes and data movement
# ---------------------------------------------------------------------------


def _ints(values) -> list:
    """Sizes as ints; `None` (the dynamic batch size) stays `None`."""
    return [None if v is None else int(v) for v in values]


@handles(aten.sym_size.int)
def _sym_size(c: Ctx) -> int | None:
    """A dimension of a tensor: an int, or `None` for the dynamic batch."""
    x = c.arg(0)
    shape = x.shape if isinstance(x, np.ndarray) else shape_of(c.value(0))
    size = shape[int(c.arg(1)) % len(shape)]
    return None if size == DYNAMIC_INDEX else int(size)


@handles(aten.view.default, aten._unsafe_view.default, aten.reshape.default)
def _reshape(c: Ctx) -> object:
    x = c.arg(0)
    shape = _ints(c.arg(1))
    if isinstance(x, np.ndarray):
        return x.reshape(shape)
    return c.g.reshape(c.value(0), shape)


@handles(aten.permute.default)
def _permute(c: Ctx) -> object:
    x = c.arg(0)
    perm = _ints(c.arg(1))
    if isinstance(x, np.ndarray):  # a transposed weight: done here, once
        return np.ascontiguousarray(x.transpose(perm))
    rank = len(shape_of(x))
    return c.g.transpose(c.value(0), tuple(p % rank for p in perm))


@handles(aten.t.default, aten.transpose.int)
def _transpose(c: Ctx) -> object:
    x = c.arg(0)
    rank = x.ndim if isinstance(x, np.ndarray) else len(shape_of(x))
    if rank < 2:
        return x
    d0, d1 = (c.arg(1) % rank, c.arg(2) % rank) if len(c.node.args) > 1 else (0, 1)
    perm = list(range(rank))
    perm[d0], perm[d1] = perm[d1], perm[d0]
    if isinstance(x, np.ndarray):
        return np.ascontiguousarray(x.transpose(perm))
    return c.g.transpose(x, tuple(perm))


@handles(aten.expand.default)
def _expand(c: Ctx) -> Value:
    x = c.value(0)
    shape = list(shape_of(x))
    sizes = _ints(c.arg(1))
    shape = [1] * (len(sizes) - len(shape)) + shape
    target = [s if d in (-1, None) else d for s, d in zip(shape, sizes, strict=True)]
    if target == list(shape_of(x)):
        return x
    return c.g.broadcast_to(x, target)


@handles(aten.cat.default)
def _cat(c: Ctx) -> Value:
    items = [c.importer.value(n) for n in c.node.args[0]]
    rank = len(shape_of(items[0]))
    return c.g.concat(items, int(c.arg(1, 0, name="dim")) % rank)


_INT64_MAX = (1 << 63) - 1


@handles(aten.slice.Tensor)
def _slice(c: Ctx) -> Value:
    x = c.value(0)
    dim = int(c.arg(1, 0, name="dim"))
    start = c.arg(2, None, name="start")
    end = c.arg(3, None, name="end")
    step = int(c.arg(4, 1, name="step"))
    start = 0 if start is None else int(start)
    end = _INT64_MAX if end is None else min(int(end), _INT64_MAX)
    return c.g.slice(x, [start], [end], [dim], [step])


@handles(aten.select.int)
def _select(c: Ctx) -> Value:
    x = c.value(0)
    shape = shape_of(x)
    dim = int(c.arg(1)) % len(shape)
    index = int(c.arg(2)) % shape[dim]
    y = c.g.slice(x, [index], [index + 1], [dim])
    return c.g.reshape(y, [d for k, d in enumerate(shape) if k != dim])


@handles(aten.split_with_sizes.default, aten.split.Tensor)
def _split(c: Ctx) -> list:
    x = c.value(0)
    shape = shape_of(x)
    dim = int(c.arg(2, 0, name="dim")) % len(shape)
    sizes = c.arg(1)
    if isinstance(sizes, int):
        sizes = [min(sizes, shape[dim] - k) for k in range(0, shape[dim], sizes)]
    outputs, offset = [], 0
    for size in _ints(sizes):
        outputs.append(c.g.slice(x, [offset], [offset + size], [dim]))
        offset += size
    return outputs


@handles(aten.unsqueeze.default)
def _unsqueeze(c: Ctx) -> Value:
    x = c.value(0)
    shape = list(shape_of(x))
    shape.insert(int(c.arg(1)) % (len(shape) + 1), 1)
    return c.g.reshape(x, shape)


@handles(aten.squeeze.dim, aten.squeeze.dims, aten.squeeze.default)
def _squeeze(c: Ctx) -> Value:
    x = c.value(0)
    shape = shape_of(x)
    dims = c.arg(1, None)
    if dims is None:
        drop = {k for k, d in enumerate(shape) if d == 1}
    else:
        dims = [dims] if isinstance(dims, int) else dims
        drop = {int(d) % len(shape) for d in dims if shape[int(d) % len(shape)] == 1}
    return c.g.reshape(x, [d for k, d in enumerate(shape) if k not in drop])


@handles(aten.embedding.default)
def _embedding(c: Ctx) -> Value:
    return c.g.gather(c.value(0), c.value(1), 0)


@handles(aten.full.default)
def _full(c: Ctx) -> np.ndarray:
    dtype = c.node.kwargs.get("dtype") or torch.get_default_dtype()
    target = numpy_dtype(dtype)
    if target is None:
        raise c.error(f"dtype {dtype} is not supported")
    return np.full(_ints(c.arg(0)), c.arg(1), dtype=target)


@handles(operator.getitem)
def _getitem(c: Ctx) -> object:
    items = c.arg(0)
    index = c.arg(1)
    value = items[index]
    if value is None:
        raise c.error(f"output {index} of its operator is not supported (only its values)")
    return value


# ---------------------------------------------------------------------------
# PyTorch's fused inference kernels
# ---------------------------------------------------------------------------


@handles(aten._transformer_encoder_layer_fwd.default)
def _encoder_layer(c: Ctx) -> Value:
    """`nn.TransformerEncoderLayer`'s fast path (eval, batch-first) as graph ops:
    self-attention with fused QKV projection, then the feed-forward block, each
    with a residual and layer norm (before or after, per `norm_first`)."""
    names = ("src", "embed_dim", "num_heads", "qkv_weight", "qkv_bias", "proj_weight",
             "proj_bias", "use_gelu", "norm_first", "eps", "norm_weight_1", "norm_bias_1",
             "norm_weight_2", "norm_bias_2", "ffn_weight_1", "ffn_bias_1", "ffn_weight_2",
             "ffn_bias_2", "mask", "mask_type")  # fmt: skip
    a = {name: c.arg(i, None, name=name) for i, name in enumerate(names)}
    if a["mask"] is not None:
        raise c.error("an attention mask is not supported")
    g = c.g
    v = dict(zip(names, range(len(names)), strict=True))

    def val(name: str) -> Value:
        return c.value(v[name])

    eps = float(a["eps"])

    def norm(x: Value, k: int) -> Value:
        return g.layer_norm(x, val(f"norm_weight_{k}"), val(f"norm_bias_{k}"), -1, eps)

    def linear(x: Value, w: str, b: str) -> Value:
        return g.add(g.matmul(x, g.transpose(val(w), (1, 0))), val(b))

    x = val("src")
    first = bool(a["norm_first"])
    h = _attention(g, norm(x, 1) if first else x, int(a["num_heads"]), linear)
    x = g.add(x, h) if first else norm(g.add(x, h), 1)
    inner = linear(norm(x, 2) if first else x, "ffn_weight_1", "ffn_bias_1")
    inner = g.gelu(inner) if a["use_gelu"] else g.relu(inner)
    h = linear(inner, "ffn_weight_2", "ffn_bias_2")
    return g.add(x, h) if first else norm(g.add(x, h), 2)


def _attention(g: GraphBuilder, x: Value, heads: int, linear) -> Value:
    """Multi-head self-attention of a (batch, seq, embed) tensor."""
    batch, seq, embed = shape_of(x)
    head = embed // heads
    qkv = linear(x, "qkv_weight", "qkv_bias")  # (batch, seq, 3·embed)
    qkv = g.transpose(g.reshape(qkv, (batch, seq, 3, heads, head)), (2, 0, 3, 1, 4))
    q, k, v = (g.reshape(g.slice(qkv, [i], [i + 1], [0]), (batch, heads, seq, head))
               for i in range(3))  # fmt: skip
    scores = g.matmul(g.mul(q, 1.0 / math.sqrt(head)), g.transpose(k, (0, 1, 3, 2)))
    out = g.matmul(g.softmax(scores, -1), v)  # (batch, heads, seq, head)
    out = g.reshape(g.transpose(out, (0, 2, 1, 3)), (batch, seq, embed))
    return linear(out, "proj_weight", "proj_bias")


SUPPORTED = frozenset(HANDLERS)
"""Every operator (`OpOverload` or Python callable) the importer translates."""

VALUES_ONLY = frozenset(
    {
        aten.max_pool2d_with_indices.default,
        aten._native_batch_norm_legit_no_training.default,
        aten.native_layer_norm.default,
    }
)
"""Operators of which only output 0 is translated (not pooling indices, not the
saved statistics a training graph keeps for its backward pass)."""


def unsupported(node: torch.fx.Node) -> str | None:
    """Why the importer does not translate `node` (its operator, the outputs used,
    a dtype), or None when it does."""
    if node.op != "call_function":
        return f"'{node.op}' nodes are not translated"
    if node.target not in SUPPORTED:
        return "operator not supported"
    if node.target is operator.getitem:
        source = node.args[0]
        return unsupported(source) if isinstance(source, torch.fx.Node) else None
    if node.target in VALUES_ONLY:
        used = sorted({u.args[1] for u in node.users if u.target is operator.getitem} - {0})
        if used:
            return f"output {', '.join(map(str, used))} used (only output 0 is translated)"
        if any(u.target is not operator.getitem for u in node.users):
            return "its tuple of outputs used whole (only output 0 is translated)"
    value = node.meta.get("val")
    for item in value if isinstance(value, list | tuple) else [value]:
        if isinstance(item, torch.Tensor) and numpy_dtype(item.dtype) is None:
            return f"dtype {item.dtype} not supported"
        if isinstance(item, torch.SymInt | torch.SymFloat | torch.SymBool):
            return "shape arithmetic (left to PyTorch)"
    check = _ARGUMENT_CHECKS.get(node.target)
    return check(node) if check is not None else None


def _static_shape(item: object) -> tuple | None:
    """The static shape FX recorded for an argument node, if any."""
    value = item.meta.get("val") if isinstance(item, torch.fx.Node) else None
    if not isinstance(value, torch.Tensor) or not all(type(d) is int for d in value.shape):
        return None
    return tuple(value.shape)


def _check_convolution(node: torch.fx.Node) -> str | None:
    if len(node.args) > 6 and node.args[6]:
        return "transposed convolution not supported"
    shape = _static_shape(node.args[0])
    if shape is not None and len(shape) not in (3, 4):
        return f"{len(shape) - 2}-D convolution not supported (1-D and 2-D are)"
    return None


def _check_adaptive_pool(node: torch.fx.Node) -> str | None:
    shape = _static_shape(node.args[0])
    out = _pair(node.args[1]) if len(node.args) > 1 else None
    if shape is None or out is None or out == (1, 1):
        return None
    if any(s % o for s, o in zip(shape[-2:], out, strict=True)):
        return f"output size {list(out)} does not divide the input size {list(shape[-2:])}"
    return None


def _check_pow(node: torch.fx.Node) -> str | None:
    exponent = node.args[1] if len(node.args) > 1 else None
    if not isinstance(exponent, int | float) or float(exponent) not in _POW_EXPONENTS:
        return f"exponent {exponent} not supported"
    return None


_ARGUMENT_CHECKS: dict[object, Callable[[torch.fx.Node], str | None]] = {
    aten.convolution.default: _check_convolution,
    aten.adaptive_avg_pool2d.default: _check_adaptive_pool,
    aten._adaptive_avg_pool2d.default: _check_adaptive_pool,
    aten.pow.Tensor_Scalar: _check_pow,
}
"""Argument values a handler refuses, checked before partitioning: such a node runs
in eager PyTorch alone instead of failing its whole partition's import."""


__all__ = [
    "HANDLERS",
    "SUPPORTED",
    "Input",
    "TorchImportError",
    "import_graph",
    "unsupported",
    "node_error",
    "numpy_dtype",
    "op_name",
    "source_of",
]
