"""A Python builder for graph programs that reads like NumPy.

    import numpy as np, lamina
    from lamina.frontends.builder import GraphBuilder

    g = GraphBuilder("main")
    x = g.param((1, 3, 32, 32))
    w = g.constant(np.random.rand(8, 3, 3, 3).astype(np.float32))
    y = g.relu(g.conv2d(x, w, strides=(2, 2), padding=1))
    g.ret(g.reshape(y, (1, -1)))
    exe = lamina.compile(g.module())

Every method appends one graph op to the function and returns its result
(an `SSAValue`; `value.type` is its tensor type). Result types are inferred by
the ops' own constructors, which use the same shape rules their verifiers
check (`lamina.dialects.graph`), so a builder never disagrees with the
verifier; a shape error is raised as `BuilderError` naming the op, before
anything is appended. Constants keep their data as bytes (a
`DenseIntOrFPElementsAttr` over the array's buffer): building a module with
millions of weights costs a copy, not a Python float per element.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import prod

import numpy as np
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    DenseArrayBase,
    DictionaryAttr,
    FunctionType,
    ModuleOp,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from lamina.backends.llvm.batch_entries import BOUNDS_ATTR
from lamina.core.dense import DTypeError, dense_attr, dense_value, element_type_of, numpy_dtype
from lamina.core.diagnostics import DiagnosticError, verify_module
from lamina.dialects import graph

Value = SSAValue
Padding = int | Sequence[int]


class BuilderError(ValueError):
    """A builder call that would make an invalid op (bad shape, type or attribute)."""


def element_type(dtype: np.dtype | type | str) -> Attribute:
    """The tensor element type of a NumPy dtype (`float32` → `f32`, `bool` → `i1`)."""
    try:
        return element_type_of(dtype)
    except DTypeError as err:
        raise BuilderError(str(err)) from None


def tensor_type(
    shape: Sequence[int | str | None], dtype: np.dtype | type | str = np.float32
) -> TensorType:
    """A tensor type; a `None` or `str` (symbol) leading dimension is the dynamic batch `?`."""
    dims = [DYNAMIC_INDEX if d is None or isinstance(d, str) else int(d) for d in shape]
    if any(d == DYNAMIC_INDEX for d in dims[1:]):
        raise BuilderError(
            f"only the leading (batch) dimension can be dynamic, got {list(shape)} "
            "(docs/dynamic-shapes.md)"
        )
    return TensorType(element_type(dtype), dims)


def shape_of(value: Value) -> tuple[int, ...]:
    return graph.tensor_shape(value)


def dtype_of(value: Value) -> np.dtype:
    return numpy_dtype(graph.element_type(value))


def normalize_padding(padding: Padding) -> tuple[int, int, int, int]:
    """`p` → all sides; `(h, w)` → symmetric; `(top, left, bottom, right)` as is."""
    if isinstance(padding, int):
        return (padding,) * 4
    values = tuple(int(p) for p in padding)
    if len(values) == 2:
        return (values[0], values[1], values[0], values[1])
    if len(values) == 4:
        return values  # type: ignore[return-value]
    raise BuilderError(f"padding must be an int, 2 or 4 entries, got {list(values)}")


def _pair(value: int | Sequence[int]) -> tuple[int, int]:
    if isinstance(value, int):
        return (value, value)
    a, b = value
    return (int(a), int(b))


def resolve_reshape(shape: Sequence[int], target: Sequence[int | None]) -> tuple[int, ...]:
    """NumPy's reshape target: one `-1` takes the remaining element count. Over a dynamic
    batch the leading dimension stays the batch (`None`, `-1` or the batch itself) and
    the rest is resolved per sample."""
    if shape and shape[0] == DYNAMIC_INDEX:
        if not target or target[0] not in (None, -1, DYNAMIC_INDEX):
            raise BuilderError(
                f"reshape of a dynamic batch must keep the batch first (None), got {list(target)}"
            )
        rest = resolve_reshape(shape[1:], [d for d in target[1:] if d is not None])
        return (DYNAMIC_INDEX, *rest)
    target = [int(d) for d in target]  # pyright: ignore[reportArgumentType]
    if target.count(-1) > 1:
        raise BuilderError(f"reshape target {target} has more than one -1")
    if -1 in target:
        known = prod(d for d in target if d != -1)
        total = prod(shape)
        if known == 0 or total % known:
            raise BuilderError(f"cannot reshape {list(shape)} to {target}")
        target[target.index(-1)] = total // known
    return tuple(target)


def resolve_slice(
    shape: Sequence[int],
    starts: Sequence[int],
    ends: Sequence[int],
    axes: Sequence[int] | None = None,
    steps: Sequence[int] | None = None,
) -> tuple[list[int], list[int], list[int]]:
    """NumPy/ONNX slice bounds (negative and out-of-range values clamp like
    Python's `slice.indices`) → `graph.slice`'s `(starts, sizes, steps)`."""
    rank = len(shape)
    axes = list(range(len(starts))) if axes is None else [int(a) for a in axes]
    steps = [1] * len(starts) if steps is None else [int(s) for s in steps]
    out_starts, sizes, out_steps = [0] * rank, list(shape), [1] * rank
    for axis, start, end, step in zip(axes, starts, ends, steps, strict=True):
        axis = graph.normalize_axis(axis, rank)
        if step == 0:
            raise BuilderError(f"slice step must be non-zero (axis {axis})")
        first, stop, step = slice(int(start), int(end), step).indices(shape[axis])
        count = len(range(first, stop, step))
        out_starts[axis], sizes[axis], out_steps[axis] = (first if count else 0), count, step
    return out_starts, sizes, out_steps


class GraphBuilder:
    """Builds one `graph.func` (default `@main`) op by op, NumPy style."""

    def __init__(self, name: str = "main", batch_bounds: tuple[int, int] = (1, 64)):
        self.name = name
        self.block = Block()
        self.results: list[Value] | None = None
        self.batch_bounds = batch_bounds
        """Bounds of the dynamic batch (a `None`/named leading dimension of a parameter)."""
        self.batch_symbol: str | None = None

    # -- parameters, constants, results -------------------------------------

    def param(
        self,
        shape: Sequence[int | str | None],
        dtype: np.dtype | type | str = np.float32,
        name: str | None = None,
    ) -> Value:
        """A new function parameter (in order of calls). A leading dimension `None` or a
        name (`"N"`) is the dynamic batch (bounds: `batch_bounds`)."""
        if shape and (shape[0] is None or isinstance(shape[0], str)):
            symbol = shape[0] if isinstance(shape[0], str) else "N"
            if self.batch_symbol not in (None, symbol):
                raise BuilderError(
                    f"one batch symbol per function: {self.batch_symbol} and {symbol}"
                )
            self.batch_symbol = symbol
        arg = self.block.insert_arg(tensor_type(shape, dtype), len(self.block.args))
        if name:
            arg.name_hint = ssa_name(name)
        return arg

    def constant(self, value: np.ndarray | float | int | bool, dtype=None, name=None) -> Value:
        """A constant tensor; the data stays binary (see `dense_attr`)."""
        array = np.asarray(value, dtype=dtype)
        element_type(array.dtype)  # a dtype with no element type is a BuilderError
        return self._add(graph.ConstantOp(dense_attr(array)), name)

    def ret(self, *values: Value) -> None:
        """Return `values` from the function (ends it)."""
        if self.results is not None:
            raise BuilderError(f"@{self.name} already returns")
        self.block.add_op(graph.ReturnOp(*values))
        self.results = list(values)

    def function(self) -> graph.FuncOp:
        """The `graph.func`, detached from the builder (call once)."""
        if self.results is None:
            raise BuilderError(f"@{self.name} has no results yet: call ret(...) first")
        signature = FunctionType.from_lists(
            [a.type for a in self.block.args], [v.type for v in self.results]
        )
        func = graph.FuncOp(self.name, signature, Region(self.block))
        if self.batch_symbol is not None:
            lo, hi = self.batch_bounds
            func.attributes[BOUNDS_ATTR] = DictionaryAttr(
                {self.batch_symbol: DenseArrayBase.from_list(i64, [lo, hi])}
            )
        return func

    def module(self) -> ModuleOp:
        """A verified module holding this function (what `lamina.compile` takes)."""
        return build_module(self)

    # -- plumbing ----------------------------------------------------------

    def _add(self, op: Operation, name: str | None = None) -> Value:
        self.block.add_op(op)
        result = op.results[0]
        if name:
            result.name_hint = ssa_name(name)
        return result

    def _make(self, what: str, make: Callable[[], Operation], name: str | None) -> Value:
        """Construct the op (its constructor infers the result type), verify it, append it."""
        try:
            op = make()
            op.verify()
        except (VerifyException, ValueError, IndexError) as err:
            raise BuilderError(f"{what}: {err}") from None
        return self._add(op, name)

    def _operand(self, value: Value | float | int | bool, like: Value | None) -> Value:
        """Python scalars become 0-d constants of `like`'s element type."""
        if isinstance(value, SSAValue):
            return value
        dtype = dtype_of(like) if like is not None else None
        return self.constant(np.asarray(value, dtype=dtype))

    def _binary(self, cls: type, a, b, name: str | None) -> Value:
        like = a if isinstance(a, SSAValue) else b if isinstance(b, SSAValue) else None
        lhs, rhs = self._operand(a, like), self._operand(b, like)
        return self._make(cls.name, lambda: cls(lhs, rhs), name)

    # -- elementwise ---------------------------------------------------------

    def add(self, a, b, name=None) -> Value:
        return self._binary(graph.AddOp, a, b, name)

    def sub(self, a, b, name=None) -> Value:
        return self._binary(graph.SubOp, a, b, name)

    def mul(self, a, b, name=None) -> Value:
        return self._binary(graph.MulOp, a, b, name)

    def div(self, a, b, name=None) -> Value:
        return self._binary(graph.DivOp, a, b, name)

    def maximum(self, a, b, name=None) -> Value:
        return self._binary(graph.MaximumOp, a, b, name)

    def minimum(self, a, b, name=None) -> Value:
        return self._binary(graph.MinimumOp, a, b, name)

    def pow(self, a, b, name=None) -> Value:
        return self._binary(graph.PowOp, a, b, name)

    def compare(self, a, b, predicate: str, name=None) -> Value:
        """`a <predicate> b` as an i1 tensor (predicates: eq ne lt le gt ge)."""
        like = a if isinstance(a, SSAValue) else b if isinstance(b, SSAValue) else None
        lhs, rhs = self._operand(a, like), self._operand(b, like)
        return self._make("graph.compare", lambda: graph.CompareOp(lhs, rhs, predicate), name)

    def _unary(self, cls: type, x: Value, name: str | None) -> Value:
        return self._make(cls.name, lambda: cls(x), name)

    def neg(self, x, name=None) -> Value:
        return self._unary(graph.NegOp, x, name)

    def exp(self, x, name=None) -> Value:
        return self._unary(graph.ExpOp, x, name)

    def log(self, x, name=None) -> Value:
        return self._unary(graph.LogOp, x, name)

    def sqrt(self, x, name=None) -> Value:
        return self._unary(graph.SqrtOp, x, name)

    def rsqrt(self, x, name=None) -> Value:
        return self._unary(graph.RsqrtOp, x, name)

    def tanh(self, x, name=None) -> Value:
        return self._unary(graph.TanhOp, x, name)

    def sigmoid(self, x, name=None) -> Value:
        return self._unary(graph.SigmoidOp, x, name)

    def erf(self, x, name=None) -> Value:
        return self._unary(graph.ErfOp, x, name)

    def relu(self, x, name=None) -> Value:
        return self._unary(graph.ReluOp, x, name)

    def gelu(self, x, approximate: str = "none", name=None) -> Value:
        return self._make("graph.gelu", lambda: graph.GeluOp(x, approximate), name)

    def where(self, condition, a, b, name=None) -> Value:
        like = a if isinstance(a, SSAValue) else b if isinstance(b, SSAValue) else None
        lhs, rhs = self._operand(a, like), self._operand(b, like)
        return self._make("graph.where", lambda: graph.WhereOp(condition, lhs, rhs), name)

    # -- contractions and windows ---------------------------------------------

    def matmul(self, a, b, name=None) -> Value:
        return self._binary(graph.MatmulOp, a, b, name)

    def conv2d(
        self,
        x: Value,
        w: Value,
        strides: int | Sequence[int] = 1,
        padding: Padding = 0,
        dilation: int | Sequence[int] = 1,
        groups: int = 1,
        name=None,
    ) -> Value:
        """NCHW data, OIHW weight; `padding` as in `normalize_padding`."""
        kwargs = {
            "strides": _pair(strides),
            "padding": normalize_padding(padding),
            "dilation": _pair(dilation),
            "groups": groups,
        }
        return self._make("graph.conv2d", lambda: graph.Conv2dOp(x, w, **kwargs), name)

    def _pool(self, cls, x, kernel, strides, padding, name) -> Value:
        kernel = _pair(kernel)
        strides = _pair(strides if strides is not None else kernel)
        pads = normalize_padding(padding)
        return self._make(cls.name, lambda: cls(x, kernel, strides=strides, padding=pads), name)

    def max_pool2d(self, x, kernel, strides=None, padding: Padding = 0, name=None) -> Value:
        """Max pooling; `strides` default to the kernel (as PyTorch)."""
        return self._pool(graph.MaxPool2dOp, x, kernel, strides, padding, name)

    def avg_pool2d(self, x, kernel, strides=None, padding: Padding = 0, name=None) -> Value:
        """Average pooling over non-padding elements; `strides` default to the kernel."""
        return self._pool(graph.AvgPool2dOp, x, kernel, strides, padding, name)

    def global_avg_pool2d(self, x, name=None) -> Value:
        return self._unary(graph.GlobalAvgPool2dOp, x, name)

    # -- normalization and reductions -----------------------------------------

    def softmax(self, x, axis: int = -1, name=None) -> Value:
        return self._make("graph.softmax", lambda: graph.SoftmaxOp(x, axis), name)

    def layer_norm(self, x, gamma, beta, axis: int = -1, epsilon: float = 1e-5, name=None):
        return self._make(
            "graph.layer_norm", lambda: graph.LayerNormOp(x, gamma, beta, axis, epsilon), name
        )

    def _reduce(self, cls, x, axes, keepdims, name) -> Value:
        if isinstance(axes, int):
            axes = (axes,)
        return self._make(cls.name, lambda: cls(x, axes, keepdims), name)

    def reduce_sum(self, x, axes=None, keepdims: bool = False, name=None) -> Value:
        return self._reduce(graph.ReduceSumOp, x, axes, keepdims, name)

    def reduce_mean(self, x, axes=None, keepdims: bool = False, name=None) -> Value:
        return self._reduce(graph.ReduceMeanOp, x, axes, keepdims, name)

    def reduce_max(self, x, axes=None, keepdims: bool = False, name=None) -> Value:
        return self._reduce(graph.ReduceMaxOp, x, axes, keepdims, name)

    def reduce_min(self, x, axes=None, keepdims: bool = False, name=None) -> Value:
        return self._reduce(graph.ReduceMinOp, x, axes, keepdims, name)

    # -- data movement ---------------------------------------------------------

    def reshape(self, x, shape: Sequence[int | None], name=None) -> Value:
        """NumPy reshape (one `-1` allowed; `None` first keeps a dynamic batch)."""
        target = resolve_reshape(shape_of(x), shape)
        result = TensorType(graph.element_type(x), list(target))
        return self._make("graph.reshape", lambda: graph.ReshapeOp(x, result), name)

    def transpose(self, x, perm: Sequence[int] | None = None, name=None) -> Value:
        perm = tuple(reversed(range(len(shape_of(x))))) if perm is None else tuple(perm)
        return self._make("graph.transpose", lambda: graph.TransposeOp(x, perm), name)

    def concat(self, values: Sequence[Value], axis: int = 0, name=None) -> Value:
        return self._make("graph.concat", lambda: graph.ConcatOp(list(values), axis), name)

    def broadcast_to(self, x, shape: Sequence[int | None], name=None) -> Value:
        """NumPy broadcast_to; a `None` leading dimension is the dynamic batch."""
        result = tensor_type(shape, dtype_of(x))
        return self._make("graph.broadcast_to", lambda: graph.BroadcastToOp(x, result), name)

    def cast(self, x, dtype: np.dtype | type | str, name=None) -> Value:
        result = tensor_type(shape_of(x), dtype)
        return self._make("graph.cast", lambda: graph.CastOp(x, result), name)

    def gather(self, x, indices, axis: int = 0, name=None) -> Value:
        """numpy `take`; `indices` may be a value or an integer array (made a constant)."""
        if not isinstance(indices, SSAValue):
            indices = self.constant(np.asarray(indices, dtype=np.int64))
        return self._make("graph.gather", lambda: graph.GatherOp(x, indices, axis), name)

    def slice(self, x, starts, ends, axes=None, steps=None, name=None) -> Value:
        """NumPy/ONNX slicing: `x[starts[k]:ends[k]:steps[k]]` along `axes[k]`."""
        try:
            st, sizes, sp = resolve_slice(shape_of(x), starts, ends, axes, steps)
        except (ValueError, VerifyException) as err:
            raise BuilderError(f"graph.slice: {err}") from None
        return self._make("graph.slice", lambda: graph.SliceOp(x, st, sizes, sp), name)


def ssa_name(name: str) -> str | None:
    """A valid SSA name hint from an arbitrary (e.g. ONNX) name, or None."""
    cleaned = "".join(c if c.isalnum() or c in "_." else "_" for c in name)
    if not cleaned or cleaned[0].isdigit() or cleaned[0] == ".":
        cleaned = "v" + cleaned
    return cleaned


def build_module(*builders: GraphBuilder) -> ModuleOp:
    """A verified module of the builders' functions (raises `BuilderError`)."""
    module = ModuleOp([b.function() for b in builders])
    try:
        verify_module(module)
    except DiagnosticError as err:
        raise BuilderError(str(err)) from None
    return module


__all__ = [
    "ssa_name",
    "BuilderError",
    "GraphBuilder",
    "build_module",
    "dense_attr",
    "dense_value",
    "element_type",
    "tensor_type",
]
