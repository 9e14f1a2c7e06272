"""ONNX → graph dialect: `import_model(model) → ModuleOp`.

The result has one entry function `@main` whose parameters are the graph's
inputs (initializers excluded) in ONNX order and whose results are its
outputs in order. Opsets 13–21 of the default domain are read with their own
semantics; an older model is first upgraded with `onnx.version_converter`
(and a note says so).

How a node becomes graph IR:

* Initializers and `Constant` nodes are *known constants* (NumPy arrays).
  They become `graph.constant`s only where a graph op uses them, and their
  data stays binary (`lamina.frontends.builder.dense_attr`).
* A node whose inputs are all small known constants (shape arithmetic:
  `Shape`, `Gather`, `Concat`, `Unsqueeze`, `Equal`, `Where`, ...) is
  evaluated at import time with ONNX's reference evaluator, so static-shape
  models come out without shape computations. `Shape` of a runtime value is
  a constant too: shapes are static.
* Every other node is translated by its handler in `HANDLERS` into graph
  ops through `GraphBuilder`, whose ops infer their result types with the
  verifiers' shape rules. Larger constant computations (transposed weights,
  BatchNorm scales) are left to `fold-constants`.
* Anything the importer cannot represent exactly — an unknown op, an
  attribute it does not handle, a dynamic dimension, an opset out of range,
  a malformed file — raises `OnnxImportError` naming the node (name, op
  type, opset) and what is missing. It never imports a graph that would
  compute something else.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from lamina.core.diagnostics import Diagnostic, DiagnosticError
from lamina.frontends.builder import BuilderError, GraphBuilder, Value, build_module, shape_of

MIN_OPSET, MAX_OPSET = 13, 21
"""The default-domain opsets whose semantics the importer implements."""

FOLD_LIMIT = 1 << 16
"""Nodes whose constant inputs have at most this many elements in all are
evaluated at import time (shape arithmetic); bigger ones become graph ops."""

_NEVER_FOLD = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
               "Bernoulli", "Multinomial"}  # fmt: skip


@dataclass
class ModelLocation:
    """Where an import diagnostic points: the model file (ONNX has no lines)."""

    file: str

    def __str__(self) -> str:
        return self.file


class OnnxImportError(DiagnosticError):
    """The model cannot be imported; the message names the node and what is missing."""


def _error(path: str, message: str) -> OnnxImportError:
    return OnnxImportError(Diagnostic(message, location=ModelLocation(path)))  # type: ignore[arg-type]


# ---------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------


@dataclass
class ImportResult:
    module: ModuleOp
    notes: list[str] = field(default_factory=list)


def load_model(path: str):
    """Read an ONNX file (with external data next to it), as a user error if it is not one."""
    import onnx
    from google.protobuf.message import DecodeError

    if not os.path.isfile(path):
        raise _error(path, "no such file")
    try:
        return onnx.load(path)
    except (DecodeError, ValueError, RuntimeError, OSError) as err:
        raise _error(path, f"not a valid ONNX model: {err}") from None


def import_file(path: str, input_shapes: dict[str, Sequence[int]] | None = None) -> ImportResult:
    """Import the ONNX model at `path` (see `import_model`)."""
    return import_model(load_model(path), input_shapes=input_shapes, path=path)


def import_model(
    model, input_shapes: dict[str, Sequence[int]] | None = None, path: str = "<model>"
) -> ImportResult:
    """Translate an `onnx.ModelProto` into a verified graph-dialect module.

    `input_shapes` fixes dynamic input dimensions (`{"input": (1, 3, 224, 224)}`).
    Raises `OnnxImportError`.
    """
    notes: list[str] = []
    model = _checked_opset(model, path, notes)
    importer = _Importer(model, path, input_shapes or {})
    return ImportResult(importer.run(), notes)


def _checked_opset(model, path: str, notes: list[str]):
    import onnx

    opset = _default_opset(model)
    if opset is None:
        raise _error(path, "the model imports no default-domain ('ai.onnx') opset")
    if opset > MAX_OPSET:
        raise _error(
            path, f"opset {opset} is not supported (supported: {MIN_OPSET} to {MAX_OPSET})"
        )
    if opset < MIN_OPSET:
        try:
            model = onnx.version_converter.convert_version(model, MIN_OPSET)
        except Exception as err:  # the converter raises bare RuntimeErrors and more
            raise _error(
                path, f"cannot upgrade opset {opset} to {MIN_OPSET}: {err}".strip()
            ) from None
        notes.append(f"the model was upgraded from opset {opset} to {MIN_OPSET}")
    return model


def _default_opset(model) -> int | None:
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            return entry.version
    return None


# ---------------------------------------------------------------------------
# The importer
# ---------------------------------------------------------------------------


class _Importer:
    def __init__(self, model, path: str, input_shapes: dict[str, Sequence[int]]):
        self.model = model
        self.path = path
        self.opset = _default_opset(model) or MIN_OPSET
        self.input_shapes = input_shapes
        self.g = GraphBuilder("main")
        self.env: dict[str, Value | np.ndarray] = {}
        self.materialized: dict[str, Value] = {}

    def run(self):
        from onnx import numpy_helper

        graph = self.model.graph
        for init in graph.initializer:
            self.env[init.name] = numpy_helper.to_array(init)
        for sparse in graph.sparse_initializer:
            self.env[sparse.values.name] = numpy_helper.to_array(sparse)
        for info in graph.input:
            if info.name not in self.env:
                self.env[info.name] = self._param(info)
        for index, node in enumerate(graph.node):
            self._node(node, index)
        results = [self._output(info) for info in graph.output]
        if not results:
            raise _error(self.path, "the graph has no outputs")
        self.g.ret(*results)
        try:
            return build_module(self.g)
        except BuilderError as err:
            raise _error(self.path, f"the imported graph does not verify: {err}") from None

    # -- inputs and outputs ----------------------------------------------------

    def _param(self, info) -> Value:
        ttype = info.type.tensor_type
        if not info.type.HasField("tensor_type"):
            raise _error(self.path, f"input '{info.name}' is not a tensor")
        dtype = _np_dtype(ttype.elem_type, self.path, f"input '{info.name}'")
        if info.name in self.input_shapes:
            shape = tuple(int(d) for d in self.input_shapes[info.name])
        else:
            if not ttype.HasField("shape"):
                raise _error(self.path, f"input '{info.name}' has no shape (pass its shape)")
            shape = []
            for k, dim in enumerate(ttype.shape.dim):
                if not dim.HasField("dim_value"):
                    what = f"'{dim.dim_param}'" if dim.dim_param else "unknown"
                    raise _error(
                        self.path,
                        f"input '{info.name}' has a dynamic dimension {k} ({what}); Lamina "
                        "needs static shapes: give the input's shape (lamina-import-onnx "
                        f"--input-shape {info.name}=D0,D1,...)",
                    )
                shape.append(dim.dim_value)
        return self.g.param(shape, dtype, name=info.name)

    def _output(self, info) -> Value:
        if info.name not in self.env:
            raise _error(self.path, f"graph output '{info.name}' is never computed")
        value = self.value(info.name)
        ttype = info.type.tensor_type
        if ttype.elem_type:
            want = _np_dtype(ttype.elem_type, self.path, f"output '{info.name}'")
            got = np.dtype(_dtype_of(value))
            if want != got:
                raise _error(
                    self.path, f"output '{info.name}' is declared {want} but computes {got}"
                )
        if ttype.HasField("shape"):
            declared = [d.dim_value if d.HasField("dim_value") else None for d in ttype.shape.dim]
            got_shape = shape_of(value)
            if len(declared) != len(got_shape) or any(
                d is not None and d != g for d, g in zip(declared, got_shape, strict=False)
            ):
                raise _error(
                    self.path,
                    f"output '{info.name}' is declared with shape {declared} but computes "
                    f"{list(got_shape)}",
                )
        return value

    # -- values ----------------------------------------------------------------

    def value(self, name: str) -> Value:
        """The graph value of `name`, making a known constant a `graph.constant` once."""
        item = self.env[name]
        if isinstance(item, np.ndarray):
            if name not in self.materialized:
                self.materialized[name] = self.g.constant(item, name=name)
            return self.materialized[name]
        return item

    # -- nodes -----------------------------------------------------------------

    def _node(self, node, index: int) -> None:
        from onnx import helper

        ctx = Node(self, node, index)
        if node.domain not in ("", "ai.onnx"):
            raise ctx.error(f"operators of domain '{node.domain}' are not supported")
        for name in node.input:
            if name and name not in self.env:
                raise ctx.error(f"input '{name}' is not computed before this node")
        if self._foldable(node):
            outputs = self._fold(ctx)
        else:
            handler = HANDLERS.get(node.op_type)
            if handler is None:
                raise ctx.error(
                    "operator is not supported (supported: "
                    f"{', '.join(sorted(HANDLERS))}, and any operator on constants)"
                )
            fn, known_attrs = handler
            for attr in node.attribute:
                if attr.name not in known_attrs:
                    value = helper.get_attribute_value(attr)
                    raise ctx.error(f"attribute '{attr.name}' (= {value!r}) is not supported")
            try:
                outputs = fn(ctx)
            except BuilderError as err:
                raise ctx.error(str(err)) from None
            except (ValueError, IndexError, TypeError) as err:
                # Inconsistent attributes or shapes (a malformed model), as a diagnostic.
                raise ctx.error(f"invalid node: {err}") from None
        for k, name in enumerate(node.output):
            if not name:
                continue
            if k >= len(outputs) or outputs[k] is None:
                raise ctx.error(f"output #{k} ('{name}') is not supported")
            self.env[name] = outputs[k]

    def _foldable(self, node) -> bool:
        if node.op_type in _NEVER_FOLD or node.op_type in ("Identity", "Dropout"):
            return False
        inputs = [self.env[n] for n in node.input if n]
        if not all(isinstance(v, np.ndarray) for v in inputs):
            return False
        return sum(v.size for v in inputs) <= FOLD_LIMIT  # type: ignore[union-attr]

    def _fold(self, ctx: Node) -> list[np.ndarray]:
        from onnx.reference import ReferenceEvaluator

        node = ctx.node
        feeds = {n: self.env[n] for n in node.input if n}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # NumPy's overflow/divide warnings
                evaluator = ReferenceEvaluator(node, opsets={"": self.opset})
                return [np.asarray(v) for v in evaluator.run(None, feeds)]
        except Exception as err:  # the reference runtime raises anything
            raise ctx.error(f"cannot evaluate the node on its constant inputs: {err}") from None


def _np_dtype(elem_type: int, path: str, what: str) -> np.dtype:
    from onnx import TensorProto, helper

    supported = (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.INT8,
                 TensorProto.INT16, TensorProto.INT32, TensorProto.INT64, TensorProto.BOOL)  # fmt: skip
    if elem_type not in supported:
        name = TensorProto.DataType.Name(elem_type) if elem_type else "undefined"
        raise _error(path, f"{what} has element type {name}, which Lamina does not support")
    return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type))


def _dtype_of(value: Value | np.ndarray) -> np.dtype:
    if isinstance(value, np.ndarray):
        return value.dtype
    from lamina.frontends.builder import dtype_of

    return dtype_of(value)


# ---------------------------------------------------------------------------
# Per-node context
# ---------------------------------------------------------------------------


class Node:
    """One ONNX node being translated: its inputs, attributes and diagnostics."""

    def __init__(self, importer: _Importer, node, index: int):
        from onnx import helper

        self.importer = importer
        self.node = node
        self.g = importer.g
        self.opset = importer.opset
        self.attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        self.label = node.name or f"#{index}"

    def error(self, message: str) -> OnnxImportError:
        return _error(
            self.importer.path,
            f"node '{self.label}' ({self.node.op_type}, opset {self.opset}): {message}",
        )

    def has(self, i: int) -> bool:
        return i < len(self.node.input) and bool(self.node.input[i])

    def input(self, i: int) -> Value:
        if not self.has(i):
            raise self.error(f"input #{i} is required")
        return self.importer.value(self.node.input[i])

    def inputs(self) -> list[Value]:
        return [self.input(i) for i in range(len(self.node.input)) if self.has(i)]

    def const(self, i: int, what: str) -> np.ndarray:
        """Input `i` as a known constant (a user error if it is computed at run time)."""
        if not self.has(i):
            raise self.error(f"input #{i} ({what}) is required")
        item = self.importer.env[self.node.input[i]]
        if not isinstance(item, np.ndarray):
            raise self.error(
                f"input #{i} ({what}) must be a constant (an initializer or computed from "
                "constants and static shapes), but it is computed at run time"
            )
        return item

    def opt_const(self, i: int, what: str) -> np.ndarray | None:
        return self.const(i, what) if self.has(i) else None

    def is_const(self, i: int) -> bool:
        return self.has(i) and isinstance(self.importer.env[self.node.input[i]], np.ndarray)

    def attr(self, name: str, default=None):
        value = self.attrs.get(name, default)
        return value.decode() if isinstance(value, bytes) else value

    def only_outputs(self, count: int) -> None:
        """Outputs beyond the first `count` (e.g. BatchNorm's running stats) must be unused."""
        extra = [n for n in self.node.output[count:] if n]
        if extra:
            raise self.error(f"output '{extra[0]}' is not supported (only the first {count})")

    def scalar(self, value: float, like: Value) -> Value:
        return self.g.constant(np.asarray(value, dtype=_dtype_of(like)))


Handler = Callable[[Node], list]
HANDLERS: dict[str, tuple[Handler, frozenset[str]]] = {}


def handles(*op_types: str, attrs: Sequence[str] = ()):
    """Register a handler for `op_types`, accepting the attributes `attrs`."""

    def register(fn: Handler) -> Handler:
        for op_type in op_types:
            HANDLERS[op_type] = (fn, frozenset(attrs))
        return fn

    return register


# ---------------------------------------------------------------------------
# Elementwise
# ---------------------------------------------------------------------------

_BINARY = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div"}
_VARIADIC = {"Sum": "add", "Max": "maximum", "Min": "minimum", "Mean": "add"}
_UNARY = {"Neg": "neg", "Exp": "exp", "Log": "log", "Sqrt": "sqrt", "Tanh": "tanh",
          "Sigmoid": "sigmoid", "Erf": "erf", "Relu": "relu"}  # fmt: skip


@handles(*_BINARY)
def _binary(n: Node) -> list:
    return [getattr(n.g, _BINARY[n.node.op_type])(n.input(0), n.input(1))]


@handles(*_VARIADIC)
def _variadic(n: Node) -> list:
    values = n.inputs()
    if not values:
        raise n.error("needs at least one input")
    method = getattr(n.g, _VARIADIC[n.node.op_type])
    acc = values[0]
    for v in values[1:]:
        acc = method(acc, v)
    if n.node.op_type == "Mean" and len(values) > 1:
        acc = n.g.div(acc, n.scalar(len(values), acc))
    return [acc]


@handles(*_UNARY)
def _unary(n: Node) -> list:
    return [getattr(n.g, _UNARY[n.node.op_type])(n.input(0))]


@handles("Reciprocal")
def _reciprocal(n: Node) -> list:
    x = n.input(0)
    return [n.g.div(n.scalar(1, x), x)]


@handles("Abs")
def _abs(n: Node) -> list:
    x = n.input(0)
    return [n.g.maximum(x, n.g.neg(x))]


@handles("Gelu", attrs=["approximate"])
def _gelu(n: Node) -> list:
    return [n.g.gelu(n.input(0), n.attr("approximate", "none"))]


@handles("Identity")
def _identity(n: Node) -> list:
    return [n.importer.env[n.node.input[0]]]


@handles("Dropout", attrs=["seed"])
def _dropout(n: Node) -> list:
    """Inference: the identity, and an all-true mask."""
    training = n.opt_const(2, "training_mode")
    if training is not None and bool(training):
        raise n.error("training_mode = true is not supported (inference only)")
    data = n.importer.env[n.node.input[0]]
    mask = np.ones(data.shape if isinstance(data, np.ndarray) else shape_of(data), dtype=bool)
    return [data, mask]


_POW_EXPONENTS = (0.5, -0.5, 1.0, 2.0, 3.0, -1.0)


@handles("Pow")
def _pow(n: Node) -> list:
    """Constant scalar exponents only (x², √x, 1/x, ...): what LayerNorm patterns use."""
    x = n.input(0)
    if not n.is_const(1) or n.const(1, "exponent").size != 1:
        raise n.error("only a constant scalar exponent is supported")
    e = float(n.const(1, "exponent").reshape(()))
    if e not in _POW_EXPONENTS:
        raise n.error(f"exponent {e} is not supported (supported: {list(_POW_EXPONENTS)})")
    g = n.g
    table = {
        0.5: lambda: g.sqrt(x),
        -0.5: lambda: g.rsqrt(x),
        1.0: lambda: x,
        2.0: lambda: g.mul(x, x),
        3.0: lambda: g.mul(g.mul(x, x), x),
        -1.0: lambda: g.div(n.scalar(1, x), x),
    }
    return [table[e]()]


@handles("Clip")
def _clip(n: Node) -> list:
    """`min(max(x, lo), hi)`: bounds may be constants or run-time scalars."""
    x = n.input(0)
    if n.has(1):
        x = n.g.maximum(x, n.input(1))
    if n.has(2):
        x = n.g.minimum(x, n.input(2))
    return [x]


@handles("Where")
def _where(n: Node) -> list:
    return [n.g.where(n.input(0), n.input(1), n.input(2))]


@handles("Cast", attrs=["to", "saturate"])
def _cast(n: Node) -> list:
    dtype = _np_dtype(n.attr("to"), n.importer.path, f"node '{n.label}' Cast target")
    source = n.importer.env[n.node.input[0]]
    if isinstance(source, np.ndarray):
        return [source.astype(dtype)]
    return [n.g.cast(source, dtype)]


@handles("Constant", attrs=["value", "value_float", "value_floats", "value_int", "value_ints"])
def _constant(n: Node) -> list:
    from onnx import numpy_helper

    if "value" in n.attrs:
        return [numpy_helper.to_array(n.attrs["value"])]
    for name, dtype in (("value_float", np.float32), ("value_floats", np.float32),
                        ("value_int", np.int64), ("value_ints", np.int64)):  # fmt: skip
        if name in n.attrs:
            return [np.asarray(n.attrs[name], dtype=dtype)]
    raise n.error("has no value")


@handles("ConstantOfShape", attrs=["value"])
def _constant_of_shape(n: Node) -> list:
    from onnx import numpy_helper

    shape = [int(d) for d in n.const(0, "shape")]
    fill = (
        numpy_helper.to_array(n.attrs["value"]).reshape(-1)[0]
        if "value" in n.attrs
        else np.float32(0)
    )
    return [np.full(shape, fill, dtype=np.asarray(fill).dtype)]


@handles("Shape", attrs=["start", "end"])
def _shape(n: Node) -> list:
    """Shapes are static: `Shape` of any value is a constant."""
    item = n.importer.env[n.node.input[0]]
    shape = item.shape if isinstance(item, np.ndarray) else shape_of(item)
    start, end = n.attr("start", 0), n.attr("end", None)
    return [np.asarray(shape[slice(start, end)], dtype=np.int64)]


@handles("Size")
def _size(n: Node) -> list:
    item = n.importer.env[n.node.input[0]]
    shape = item.shape if isinstance(item, np.ndarray) else shape_of(item)
    return [np.asarray(math.prod(shape), dtype=np.int64)]


# ---------------------------------------------------------------------------
# Contractions, convolution, normalization
# ---------------------------------------------------------------------------


@handles("MatMul")
def _matmul(n: Node) -> list:
    return [n.g.matmul(n.input(0), n.input(1))]


@handles("Gemm", attrs=["alpha", "beta", "transA", "transB"])
def _gemm(n: Node) -> list:
    g = n.g
    a, b = n.input(0), n.input(1)
    if n.attr("transA", 0):
        a = g.transpose(a, (1, 0))
    if n.attr("transB", 0):
        b = g.transpose(b, (1, 0))
    y = g.matmul(a, b)
    alpha, beta = float(n.attr("alpha", 1.0)), float(n.attr("beta", 1.0))
    if alpha != 1.0:
        y = g.mul(y, n.scalar(alpha, y))
    if n.has(2) and beta != 0.0:
        if n.is_const(2):
            c = g.constant((n.const(2, "C") * beta).astype(_dtype_of(y)))
        else:
            c = n.input(2)
            c = g.mul(c, n.scalar(beta, c)) if beta != 1.0 else c
        y = g.add(y, c)
    return [y]


def _spatial(n: Node, x: Value, kernel: Sequence[int], what: str) -> tuple:
    """(strides, dilations, (top, left, bottom, right)) of a 2-D window op."""
    rank = len(shape_of(x))
    if rank != 4 or len(kernel) != 2:
        raise n.error(f"only 2-D {what} (4-D NCHW input) is supported, got a rank-{rank} input")
    strides = tuple(n.attr("strides", [1, 1]))
    dilations = tuple(n.attr("dilations", [1, 1]))
    auto_pad = n.attr("auto_pad", "NOTSET")
    if auto_pad == "NOTSET":
        p = list(n.attr("pads", [0, 0, 0, 0]))
        return strides, dilations, (p[0], p[1], p[2], p[3])
    if auto_pad == "VALID":
        return strides, dilations, (0, 0, 0, 0)
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        raise n.error(f"auto_pad '{auto_pad}' is not supported")
    begin, end = [], []
    for size, k, s, d in zip(shape_of(x)[2:], kernel, strides, dilations, strict=True):
        total = max((math.ceil(size / s) - 1) * s + (k - 1) * d + 1 - size, 0)
        small, big = total // 2, total - total // 2
        begin.append(small if auto_pad == "SAME_UPPER" else big)
        end.append(big if auto_pad == "SAME_UPPER" else small)
    return strides, dilations, (begin[0], begin[1], end[0], end[1])


def _as_2d(n: Node, x: Value) -> Value:
    """A 1-D (N, C, L) tensor viewed as 2-D (N, C, 1, L); others unchanged."""
    shape = shape_of(x)
    return n.g.reshape(x, (*shape[:2], 1, shape[2])) if len(shape) == 3 else x


def _attrs_2d(n: Node, names: Sequence[str], one_d: bool) -> None:
    """Give the 1-D spatial attributes of `n` a leading unit H entry."""
    if not one_d:
        return
    for name in names:
        if name in n.attrs:
            v = list(n.attrs[name])
            n.attrs[name] = [0, v[0], 0, v[1]] if name == "pads" else [1, *v]


def _from_2d(n: Node, y: Value, one_d: bool) -> Value:
    shape = shape_of(y)
    return n.g.reshape(y, (*shape[:2], shape[3])) if one_d else y


@handles("Conv", attrs=["auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"])
def _conv(n: Node) -> list:
    """2-D convolution; a 1-D one runs as 2-D with a unit height."""
    one_d = len(shape_of(n.input(0))) == 3
    x, w = _as_2d(n, n.input(0)), _as_2d(n, n.input(1))
    _attrs_2d(n, ("dilations", "kernel_shape", "pads", "strides"), one_d)
    kernel = n.attr("kernel_shape", list(shape_of(w)[2:]))
    strides, dilations, pads = _spatial(n, x, kernel, "convolution")
    y = n.g.conv2d(x, w, strides, pads, dilations, n.attr("group", 1))
    if n.has(2):
        y = n.g.add(y, n.g.reshape(n.input(2), (-1, 1, 1)))
    return [_from_2d(n, y, one_d)]


@handles("BatchNormalization", attrs=["epsilon", "momentum", "training_mode"])
def _batch_norm(n: Node) -> list:
    """Inference: `x * s + t` with `s = scale / sqrt(var + eps)`, `t = B - mean * s`
    (computed at import when the statistics are constants)."""
    if n.attr("training_mode", 0):
        raise n.error("training_mode = 1 is not supported (inference only)")
    n.only_outputs(1)
    x = n.input(0)
    rank = len(shape_of(x))
    if rank < 2:
        raise n.error(f"expected an input of rank >= 2, got rank {rank}")
    channel_shape = (-1,) + (1,) * (rank - 2)
    eps = float(n.attr("epsilon", 1e-5))
    dtype = _dtype_of(x)
    if all(n.is_const(i) for i in range(1, 5)):
        scale, bias, mean, var = (n.const(i, "statistics").astype(np.float64) for i in range(1, 5))
        s = scale / np.sqrt(var + eps)
        t = bias - mean * s
        s_val = n.g.constant(s.astype(dtype).reshape(channel_shape))
        t_val = n.g.constant(t.astype(dtype).reshape(channel_shape))
        return [n.g.add(n.g.mul(x, s_val), t_val)]
    scale, bias, mean, var = (n.g.reshape(n.input(i), channel_shape) for i in range(1, 5))
    s = n.g.div(scale, n.g.sqrt(n.g.add(var, n.scalar(eps, var))))
    return [n.g.add(n.g.mul(n.g.sub(x, mean), s), bias)]


@handles("LayerNormalization", attrs=["axis", "epsilon", "stash_type"])
def _layer_norm(n: Node) -> list:
    """`graph.layer_norm`; the optional Mean and InvStdDev outputs are computed
    separately (reductions over the normalized axes, kept as size 1)."""
    x = n.input(0)
    shape = shape_of(x)
    axis = n.attr("axis", -1)
    axis = axis + len(shape) if axis < 0 else axis
    norm_shape = shape[axis:]
    eps = float(n.attr("epsilon", 1e-5))
    scale = n.g.broadcast_to(n.input(1), norm_shape)
    if n.has(2):
        bias = n.g.broadcast_to(n.input(2), norm_shape)
    else:
        bias = n.g.constant(np.zeros(norm_shape, dtype=_dtype_of(x)))
    outputs = [n.g.layer_norm(x, scale, bias, axis, eps)]
    if any(n.node.output[1:]):
        axes = tuple(range(axis, len(shape)))
        mean = n.g.reduce_mean(x, axes, keepdims=True)
        centered = n.g.sub(x, mean)
        var = n.g.reduce_mean(n.g.mul(centered, centered), axes, keepdims=True)
        outputs += [mean, n.g.rsqrt(n.g.add(var, n.scalar(eps, var)))]
    return outputs


@handles("Softmax", attrs=["axis"])
def _softmax(n: Node) -> list:
    return [n.g.softmax(n.input(0), n.attr("axis", -1))]


@handles("LRN", attrs=["alpha", "beta", "bias", "size"])
def _lrn(n: Node) -> list:
    """`x / (bias + alpha/size * sum_{window} x²)^beta`; the channel-window sum is a
    convolution of x² (viewed N×1×C×HW) with a column of ones."""
    g, x = n.g, n.input(0)
    shape = shape_of(x)
    if len(shape) != 4:
        raise n.error(f"only 4-D NCHW input is supported, got rank {len(shape)}")
    size = int(n.attr("size"))
    alpha, beta, bias = (float(n.attr(k, d)) for k, d in (("alpha", 1e-4), ("beta", 0.75),
                                                           ("bias", 1.0)))  # fmt: skip
    nb, c, h, w = shape
    squares = g.reshape(g.mul(x, x), (nb, 1, c, h * w))
    ones = g.constant(np.ones((1, 1, size, 1), dtype=_dtype_of(x)))
    pad_lo, pad_hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    window = g.reshape(g.conv2d(squares, ones, padding=(pad_lo, 0, pad_hi, 0)), shape)
    base = g.add(g.mul(window, n.scalar(alpha / size, x)), n.scalar(bias, x))
    return [g.div(x, g.exp(g.mul(g.log(base), n.scalar(beta, x))))]


# ---------------------------------------------------------------------------
# Pooling
# ---------------------------------------------------------------------------


def _pool_geometry(n: Node, x: Value) -> tuple:
    """kernel, strides, pads (with ceil_mode's extra bottom/right padding), base pads."""
    kernel = tuple(n.attr("kernel_shape"))
    if any(d != 1 for d in n.attr("dilations", [1, 1])):
        raise n.error("dilated pooling is not supported")
    strides, _, pads = _spatial(n, x, kernel, "pooling")
    base = pads
    if n.attr("ceil_mode", 0):
        extra = []
        for size, k, s, lo, hi in zip(shape_of(x)[2:], kernel, strides, pads[:2], pads[2:],
                                      strict=True):  # fmt: skip
            span = size + lo + hi - k
            out = -(-span // s) + 1
            if (out - 1) * s >= size + lo:  # the last window would start in the padding
                out -= 1
            extra.append(max((out - 1) * s + k - (size + lo + hi), 0))
        pads = (pads[0], pads[1], pads[2] + extra[0], pads[3] + extra[1])
    return kernel, strides, pads, base


@handles("MaxPool", attrs=["auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads",
                           "storage_order", "strides"])  # fmt: skip
def _max_pool(n: Node) -> list:
    n.only_outputs(1)
    one_d = len(shape_of(n.input(0))) == 3
    x = _as_2d(n, n.input(0))
    _attrs_2d(n, _POOL_ATTRS, one_d)
    kernel, strides, pads, _ = _pool_geometry(n, x)
    return [_from_2d(n, n.g.max_pool2d(x, kernel, strides, pads), one_d)]


_POOL_ATTRS = ("dilations", "kernel_shape", "pads", "strides")


@handles("AveragePool", attrs=["auto_pad", "ceil_mode", "count_include_pad", "dilations",
                               "kernel_shape", "pads", "strides"])  # fmt: skip
def _avg_pool(n: Node) -> list:
    """`graph.avg_pool2d` divides by the in-image elements; `count_include_pad`
    rescales by (in-image count / in-padded-area count), a constant."""
    one_d = len(shape_of(n.input(0))) == 3
    x = _as_2d(n, n.input(0))
    _attrs_2d(n, _POOL_ATTRS, one_d)
    kernel, strides, pads, base = _pool_geometry(n, x)
    y = n.g.avg_pool2d(x, kernel, strides, pads)
    if n.attr("count_include_pad", 0) and any(base):
        ratio = _window_count_ratio(shape_of(x)[2:], shape_of(y)[2:], kernel, strides, pads, base)
        y = n.g.mul(y, n.g.constant(ratio.astype(_dtype_of(x))))
    return [_from_2d(n, y, one_d)]


def _window_count_ratio(size, out, kernel, strides, pads, base) -> np.ndarray:
    """Per output position: elements inside the image / inside the padded image."""
    counts = []
    for axis in range(2):
        start = np.arange(out[axis]) * strides[axis] - pads[axis]
        stop = start + kernel[axis]
        inside = np.minimum(stop, size[axis]) - np.maximum(start, 0)
        padded = np.minimum(stop, size[axis] + base[axis + 2]) - np.maximum(start, -base[axis])
        counts.append((np.maximum(inside, 0), np.maximum(padded, 1)))
    (ih, ph), (iw, pw) = counts
    return (np.outer(ih, iw) / np.outer(ph, pw)).reshape(1, 1, out[0], out[1])


@handles("GlobalAveragePool")
def _global_avg_pool(n: Node) -> list:
    return [n.g.global_avg_pool2d(n.input(0))]


@handles("GlobalMaxPool")
def _global_max_pool(n: Node) -> list:
    x = n.input(0)
    return [n.g.reduce_max(x, tuple(range(2, len(shape_of(x)))), keepdims=True)]


# ---------------------------------------------------------------------------
# Reductions
# ---------------------------------------------------------------------------

_REDUCE = {"ReduceMean": "reduce_mean", "ReduceSum": "reduce_sum", "ReduceMax": "reduce_max"}


@handles(*_REDUCE, attrs=["axes", "keepdims", "noop_with_empty_axes"])
def _reduce(n: Node) -> list:
    x = n.input(0)
    axes = n.attr("axes")
    if n.has(1):
        axes = [int(a) for a in n.const(1, "axes")]
    if not axes:
        if n.attr("noop_with_empty_axes", 0):
            return [x]
        axes = None
    method = getattr(n.g, _REDUCE[n.node.op_type])
    return [method(x, axes, keepdims=bool(n.attr("keepdims", 1)))]


# ---------------------------------------------------------------------------
# Shapes and data movement
# ---------------------------------------------------------------------------


@handles("Reshape", attrs=["allowzero"])
def _reshape(n: Node) -> list:
    x = n.input(0)
    target = [int(d) for d in n.const(1, "shape")]
    if not n.attr("allowzero", 0):
        target = [shape_of(x)[k] if d == 0 else d for k, d in enumerate(target)]
    return [n.g.reshape(x, target)]


@handles("Flatten", attrs=["axis"])
def _flatten(n: Node) -> list:
    x = n.input(0)
    shape = shape_of(x)
    axis = n.attr("axis", 1)
    axis = axis + len(shape) if axis < 0 else axis
    return [n.g.reshape(x, (math.prod(shape[:axis]), math.prod(shape[axis:])))]


def _axes(n: Node, rank: int) -> list[int] | None:
    """The `axes` input (opset 13+), normalized for `rank`; None when absent."""
    if not n.has(1):
        return None
    axes = [int(a) + rank if a < 0 else int(a) for a in n.const(1, "axes")]
    if any(not 0 <= a < rank for a in axes):
        raise n.error(f"axes {list(n.const(1, 'axes'))} out of range for rank {rank}")
    return axes


@handles("Squeeze")
def _squeeze(n: Node) -> list:
    x = n.input(0)
    shape = shape_of(x)
    axes = _axes(n, len(shape))
    if axes is None:
        axes = [k for k, d in enumerate(shape) if d == 1]
    if any(shape[a] != 1 for a in axes):
        raise n.error(f"cannot squeeze axes {axes} of shape {list(shape)}")
    return [n.g.reshape(x, [d for k, d in enumerate(shape) if k not in axes])]


@handles("Unsqueeze")
def _unsqueeze(n: Node) -> list:
    x = n.input(0)
    shape = list(shape_of(x))
    axes = _axes(n, len(shape) + len(n.const(1, "axes")))
    for a in sorted(axes or []):
        shape.insert(a, 1)
    return [n.g.reshape(x, shape)]


@handles("Transpose", attrs=["perm"])
def _transpose(n: Node) -> list:
    perm = n.attr("perm")
    return [n.g.transpose(n.input(0), tuple(perm) if perm is not None else None)]


@handles("Concat", attrs=["axis"])
def _concat(n: Node) -> list:
    return [n.g.concat(n.inputs(), n.attr("axis"))]


@handles("Expand")
def _expand(n: Node) -> list:
    x = n.input(0)
    target = [int(d) for d in n.const(1, "shape")]
    return [n.g.broadcast_to(x, np.broadcast_shapes(shape_of(x), tuple(target)))]


@handles("Slice")
def _slice(n: Node) -> list:
    starts, ends = n.const(1, "starts"), n.const(2, "ends")
    axes, steps = n.opt_const(3, "axes"), n.opt_const(4, "steps")
    big = np.iinfo(np.int64)
    clip = [int(np.clip(v, big.min + 1, big.max)) for v in ends]
    return [n.g.slice(n.input(0), [int(s) for s in starts], clip, axes, steps)]


@handles("Gather", attrs=["axis"])
def _gather(n: Node) -> list:
    return [n.g.gather(n.input(0), n.input(1), n.attr("axis", 0))]


@handles("Split", attrs=["axis", "num_outputs"])
def _split(n: Node) -> list:
    x = n.input(0)
    shape = shape_of(x)
    axis = n.attr("axis", 0)
    axis = axis + len(shape) if axis < 0 else axis
    count = len(n.node.output)
    if n.has(1):
        sizes = [int(s) for s in n.const(1, "split")]
    else:
        chunk = -(-shape[axis] // count)
        sizes = [min(chunk, shape[axis] - k * chunk) for k in range(count)]
    if sum(sizes) != shape[axis] or len(sizes) != count:
        raise n.error(f"split sizes {sizes} do not cover axis {axis} of extent {shape[axis]}")
    outputs, offset = [], 0
    for size in sizes:
        outputs.append(n.g.slice(x, [offset], [offset + size], [axis]))
        offset += size
    return outputs


__all__ = [
    "HANDLERS",
    "MAX_OPSET",
    "MIN_OPSET",
    "ImportResult",
    "OnnxImportError",
    "import_file",
    "import_model",
    "load_model",
]
