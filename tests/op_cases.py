"""One-op graph programs with NumPy references, shared by the numerics tests.

`CASES` holds, for every graph compute op, several shapes (broadcast edge
cases, size-1 and 0-d tensors, odd sizes) and element types (f32, f64, some
integers). `test_legalize.py` runs each case through legalize and a
reference te evaluator; `test_numerics_ops.py` compiles it to native code.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects.builtin import (
    AffineMapAttr,
    AnyFloat,
    FloatAttr,
    ModuleOp,
    TensorType,
    f16,
    f32,
    f64,
    i1,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineMap

from lamina.core.context import make_context
from lamina.core.diagnostics import parse_module, verify_module
from lamina.dialects import graph
from lamina.dialects.lamina import ConstraintAttr, Phase, set_phase

DTYPES = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "i1": np.bool_,
          "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64}  # fmt: skip


def np_dtype(t: Attribute) -> type:
    return DTYPES[str(t)]


def tensor(shape: Sequence[int], element: Attribute = f32) -> TensorType:
    return TensorType(element, list(shape))


def random_input(t: Attribute, rng: np.random.Generator) -> np.ndarray:
    """Uniform in [-2, 2] for floats, integers in [-9, 9], random booleans."""
    assert isinstance(t, TensorType)
    shape, e = tuple(t.get_shape()), t.get_element_type()
    if isinstance(e, AnyFloat):
        return np.asarray(rng.uniform(-2.0, 2.0, size=shape).astype(np_dtype(e)))
    if e == i1:
        return np.asarray(rng.integers(0, 2, size=shape).astype(np.bool_))
    return np.asarray(rng.integers(-9, 10, size=shape).astype(np_dtype(e)))


@dataclass(frozen=True)
class OpCase:
    """`graph.func @main(args) { %r = make(args); graph.return %r }` and its NumPy meaning."""

    id: str
    arg_types: tuple[TensorType, ...]
    make: Callable[[list[SSAValue]], Operation]
    ref: Callable[..., np.ndarray]
    inputs: Callable[[np.random.Generator], list[np.ndarray]] | None = None
    rtol: float = 1e-5
    atol: float = 1e-5
    exact: bool = False
    tags: frozenset[str] = field(default_factory=frozenset)

    @property
    def op_name(self) -> str:
        return self.id.split("-", 1)[0]

    def func(self, name: str = "main") -> graph.FuncOp:
        """`graph.func @name(args) { %r = make(args); graph.return %r }`."""
        block = Block(arg_types=self.arg_types)
        op = self.make(list(block.args))
        block.add_ops([op, graph.ReturnOp(op.results[0])])
        return graph.FuncOp(name, (self.arg_types, [op.results[0].type]), Region(block))

    def module(self) -> ModuleOp:
        """The case as a verified one-function module in phase optimization."""
        return module_of([self.func()])

    def sample(self, seed: int = 0) -> list[np.ndarray]:
        rng = np.random.default_rng(seed)
        if self.inputs is not None:
            return [np.asarray(a) for a in self.inputs(rng)]
        return [random_input(t, rng) for t in self.arg_types]

    def check(self, got: np.ndarray, arrays: Sequence[np.ndarray]) -> None:
        want = np.asarray(self.ref(*arrays))
        assert got.shape == want.shape, f"{self.id}: shape {got.shape} != {want.shape}"
        if self.exact:
            np.testing.assert_array_equal(got, want, err_msg=self.id)
        else:
            np.testing.assert_allclose(got, want, rtol=self.rtol, atol=self.atol, err_msg=self.id)


def module_of(funcs: Sequence[Operation]) -> ModuleOp:
    """A verified module of `funcs` in phase optimization."""
    module = ModuleOp(list(funcs))
    set_phase(module, Phase.OPTIMIZATION)
    verify_module(module)
    return module


def _tol(element: Attribute) -> dict[str, float]:
    """1e-5 for f32, 1e-10 for f64 (both relative and absolute)."""
    return {"rtol": 1e-5, "atol": 1e-5} if element == f32 else {"rtol": 1e-10, "atol": 1e-10}


# ---------------------------------------------------------------------------
# NumPy references
# ---------------------------------------------------------------------------


def ref_conv2d(
    x: np.ndarray, w: np.ndarray, strides=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1
) -> np.ndarray:
    """NCHW / OIHW convolution, by explicit zero padding and window sums."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    top, left, bottom, right = padding
    xp = np.zeros((n, c, h + top + bottom, wd + left + right), dtype=np.float64)
    xp[:, :, top : top + h, left : left + wd] = x
    oh = (h + top + bottom - dilation[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (wd + left + right - dilation[1] * (kw - 1) - 1) // strides[1] + 1
    out = np.zeros((n, o, oh, ow), dtype=np.float64)
    og = o // groups
    for oc, i, j in itertools.product(range(o), range(oh), range(ow)):
        g = oc // og
        for ci, p, q in itertools.product(range(cg), range(kh), range(kw)):
            hh, ww = i * strides[0] + p * dilation[0], j * strides[1] + q * dilation[1]
            out[:, oc, i, j] += xp[:, g * cg + ci, hh, ww] * w[oc, ci, p, q]
    return out.astype(x.dtype)


def ref_pool(x: np.ndarray, kernel, strides, padding, kind: str) -> np.ndarray:
    """Max (padding = -inf) or average over the non-padding elements (ONNX default)."""
    n, c, h, w = x.shape
    top, left, bottom, right = padding
    oh = (h + top + bottom - kernel[0]) // strides[0] + 1
    ow = (w + left + right - kernel[1]) // strides[1] + 1
    out = np.zeros((n, c, oh, ow), dtype=x.dtype)
    for i, j in itertools.product(range(oh), range(ow)):
        h0, w0 = i * strides[0] - top, j * strides[1] - left
        win = x[:, :, max(h0, 0) : min(h0 + kernel[0], h), max(w0, 0) : min(w0 + kernel[1], w)]
        out[:, :, i, j] = win.max(axis=(2, 3)) if kind == "max" else win.mean(axis=(2, 3))
    return out


def np_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def np_layer_norm(x, g, b, axis: int, eps: float) -> np.ndarray:
    axes = tuple(range(axis % x.ndim, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * g + b


_erf = np.vectorize(math.erf, otypes=[np.float64])


def np_gelu(x: np.ndarray) -> np.ndarray:
    return (0.5 * x * (1 + _erf(x / np.sqrt(2)))).astype(x.dtype)


def np_gelu_tanh(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


def ref_layout_transform(x: np.ndarray, amap: AffineMap, physical: tuple, pad: float) -> np.ndarray:
    out = np.full(physical, pad, dtype=x.dtype)
    for idx in np.ndindex(*x.shape):
        out[amap.eval(idx, ())] = x[idx]
    return out


def parse_map(text: str) -> AffineMapAttr:
    module = parse_module(make_context(), f"builtin.module attributes {{m = {text}}} {{}}")
    attr = module.attributes["m"]
    assert isinstance(attr, AffineMapAttr)
    return attr


# ---------------------------------------------------------------------------
# The cases
# ---------------------------------------------------------------------------

FLOATS = (f32, f64)

BINARY = {
    graph.AddOp: np.add,
    graph.SubOp: np.subtract,
    graph.MulOp: np.multiply,
    graph.DivOp: np.divide,
    graph.MaximumOp: np.maximum,
    graph.MinimumOp: np.minimum,
}
BROADCAST_SHAPES = [((2, 3), (3,)), ((4, 1, 3), (2, 1)), ((), (2, 2)), ((1,), (5,)),
                    ((3, 1), (1, 4)), ((7,), (7,)), ((2, 1, 1), ())]  # fmt: skip


def _trunc_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer division toward zero; `x / 0` is 0 and `MIN / -1` wraps (no trap)."""
    a64, b64 = np.broadcast_arrays(a.astype(np.int64), b.astype(np.int64))
    safe = np.where(b64 == 0, 1, b64)
    q = np.where(b64 == 0, 0, np.abs(a64) // np.abs(safe) * np.sign(a64) * np.sign(safe))
    return q.astype(a.dtype)


def _bool_cases() -> list[OpCase]:
    """NumPy's bool arithmetic: + is or, * is and; max/min are or/and."""
    a = np.array([True, True, False, False])
    b = np.array([True, False, True, False])
    table = {graph.AddOp: np.add, graph.MulOp: np.multiply, graph.MaximumOp: np.maximum,
             graph.MinimumOp: np.minimum}  # fmt: skip
    return [
        OpCase(
            f"{cls.name}-i1",
            (tensor((4,), i1), tensor((4,), i1)),
            lambda args, c=cls: c(*args),
            ref,
            inputs=lambda _rng: [a, b],
            exact=True,
        )
        for cls, ref in table.items()
    ]


def _binary_cases() -> list[OpCase]:
    cases = []
    for (cls, ref), shapes, e in itertools.product(BINARY.items(), BROADCAST_SHAPES, FLOATS):
        cases.append(
            OpCase(
                f"{cls.name}-{shapes}-{e}",
                tuple(tensor(s, e) for s in shapes),
                lambda a, c=cls: c(*a),
                ref,
                **_tol(e),
            )
        )
    ints = [
        np.array([[7, -7, 5, -(2**31)], [-9, 8, 0, 6]], dtype=np.int32),
        np.array([2, 0, -3, -1], np.int32),
    ]
    int_refs = {**BINARY, graph.DivOp: _trunc_divide}
    for cls, ref in int_refs.items():
        cases.append(
            OpCase(
                f"{cls.name}-i32",
                (tensor((2, 4), i32), tensor((4,), i32)),
                lambda a, c=cls: c(*a),
                ref,
                inputs=lambda _rng: ints,
                exact=True,
            )
        )
    return cases


UNARY: dict[str, tuple[Callable[[SSAValue], Operation], Callable[[np.ndarray], np.ndarray]]] = {
    "neg": (graph.NegOp, np.negative),
    "exp": (graph.ExpOp, np.exp),
    "log": (graph.LogOp, np.log),
    "sqrt": (graph.SqrtOp, np.sqrt),
    "rsqrt": (graph.RsqrtOp, lambda x: 1 / np.sqrt(x)),
    "tanh": (graph.TanhOp, np.tanh),
    "sigmoid": (graph.SigmoidOp, lambda x: 1 / (1 + np.exp(-x))),
    "erf": (graph.ErfOp, lambda x: _erf(x).astype(x.dtype)),
    "relu": (graph.ReluOp, lambda x: np.maximum(x, 0)),
    "gelu": (graph.GeluOp, np_gelu),
    "gelu_tanh": (lambda v: graph.GeluOp(v, approximate="tanh"), np_gelu_tanh),
}
POSITIVE_ONLY = {"log", "sqrt", "rsqrt"}


def _unary_cases() -> list[OpCase]:
    cases = []
    for (name, (make, ref)), shape, e in itertools.product(
        UNARY.items(), [(), (1,), (3, 5)], FLOATS
    ):

        def inputs(rng, shape=shape, e=e, positive=name in POSITIVE_ONLY):
            x = rng.uniform(-3, 3, size=shape).astype(np_dtype(e))
            return [np.abs(x) + np_dtype(e)(0.1) if positive else x]

        cases.append(
            OpCase(
                f"graph.{name}-{shape}-{e}",
                (tensor(shape, e),),
                lambda a, m=make: m(a[0]),
                ref,
                inputs=inputs,
                **_tol(e),
            )
        )
    x = np.array([-3, 0, 4], dtype=np.int32)
    for cls, ref in ((graph.NegOp, np.negative), (graph.ReluOp, lambda v: np.maximum(v, 0))):
        cases.append(
            OpCase(
                f"{cls.name}-i32",
                (tensor((3,), i32),),
                lambda a, c=cls: c(a[0]),
                ref,
                inputs=lambda _rng: [x],
                exact=True,
            )
        )
    return cases


MATMUL_SHAPES = [((2, 3), (3, 4)), ((3,), (3, 4)), ((2, 3), (3,)), ((5,), (5,)),
                 ((2, 1, 3, 4), (5, 4, 2)), ((1, 1), (1, 1)), ((3, 2, 5), (5, 1))]  # fmt: skip

CONV = [
    # data, weight, strides, padding, dilation, groups
    ((1, 2, 5, 5), (3, 2, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
    ((2, 1, 4, 6), (2, 1, 2, 3), (2, 1), (0, 0, 0, 0), (1, 1), 1),
    ((1, 4, 5, 4), (4, 2, 3, 2), (2, 2), (2, 1, 0, 1), (1, 2), 2),
    ((1, 3, 6, 6), (3, 1, 3, 3), (1, 1), (1, 0, 1, 2), (2, 1), 3),
    ((1, 1, 1, 1), (1, 1, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    # padding materialised by legalize: unread bottom/right padding and input tail (stride 2),
    # dilated padding, depthwise with padding, windows wholly in padding, a vectorized row
    ((1, 2, 6, 6), (2, 2, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1),
    ((1, 2, 7, 7), (2, 2, 3, 3), (1, 1), (2, 2, 2, 2), (2, 2), 1),
    ((2, 4, 5, 5), (4, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 4),
    ((1, 1, 3, 4), (2, 1, 2, 2), (1, 1), (3, 0, 0, 3), (1, 1), 1),
    ((1, 3, 9, 21), (4, 3, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
    # strided columns split into phases: with padding (a vectorized row), and without
    # padding, dilated (phase (kw*2) mod 3, a partial last phase column)
    ((1, 3, 8, 37), (4, 3, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1),
    ((1, 2, 5, 17), (3, 2, 2, 3), (1, 3), (0, 0, 0, 0), (1, 2), 1),
]

POOL = [
    ((1, 2, 5, 5), (3, 3), (1, 1), (1, 1, 1, 1)),
    ((2, 1, 6, 7), (2, 2), (2, 2), (0, 0, 0, 0)),
    ((1, 1, 5, 4), (3, 2), (2, 1), (1, 0, 2, 1)),
    ((1, 3, 1, 1), (1, 1), (1, 1), (0, 0, 0, 0)),
    # padding materialised by legalize: unread bottom/right padding, a vectorized row
    ((1, 2, 6, 7), (3, 3), (2, 2), (1, 1, 1, 1)),
    ((1, 1, 6, 20), (3, 3), (1, 1), (1, 2, 1, 2)),
    ((1, 1, 5, 23), (2, 3), (1, 3), (0, 0, 0, 0)),
]


def _window_cases() -> list[OpCase]:
    cases = [
        OpCase(
            f"graph.matmul-{shapes}-{e}",
            tuple(tensor(s, e) for s in shapes),
            lambda a: graph.MatmulOp(*a),
            np.matmul,
            **_tol(e),
        )
        for shapes, e in itertools.product(MATMUL_SHAPES, FLOATS)
    ]
    for ds, ws, strides, padding, dilation, groups in CONV:
        for e in FLOATS:
            cases.append(
                OpCase(
                    f"graph.conv2d-{ds}-{ws}-s{strides}-p{padding}-d{dilation}-g{groups}-{e}",
                    (tensor(ds, e), tensor(ws, e)),
                    lambda a, s=strides, p=padding, d=dilation, g=groups: graph.Conv2dOp(
                        a[0], a[1], strides=s, padding=p, dilation=d, groups=g
                    ),
                    lambda x, w, s=strides, p=padding, d=dilation, g=groups: ref_conv2d(
                        x, w, s, p, d, g
                    ),
                    **_tol(e),
                )
            )
    for (shape, kernel, strides, padding), kind, e in itertools.product(
        POOL, ("max", "avg"), FLOATS
    ):
        cls = graph.MaxPool2dOp if kind == "max" else graph.AvgPool2dOp
        cases.append(
            OpCase(
                f"{cls.name}-{shape}-k{kernel}-s{strides}-p{padding}-{e}",
                (tensor(shape, e),),
                lambda a, c=cls, k=kernel, s=strides, p=padding: c(a[0], k, strides=s, padding=p),
                lambda x, k=kernel, s=strides, p=padding, kind=kind: ref_pool(x, k, s, p, kind),
                **_tol(e),
            )
        )
    for shape, e in itertools.product([(1, 1, 1, 1), (2, 3, 4, 5)], FLOATS):
        cases.append(
            OpCase(
                f"graph.global_avg_pool2d-{shape}-{e}",
                (tensor(shape, e),),
                lambda a: graph.GlobalAvgPool2dOp(a[0]),
                lambda x: x.mean(axis=(2, 3), keepdims=True),
                **_tol(e),
            )
        )
    return cases


REDUCE = {graph.ReduceSumOp: np.sum, graph.ReduceMeanOp: np.mean, graph.ReduceMaxOp: np.max}
REDUCE_SHAPES = [((2, 3, 4), None, False), ((2, 3, 4), (1,), True), ((2, 3, 4), (-1, 0), False),
                 ((5,), (0,), True), ((3, 1), None, True), ((2, 3), (), False)]  # fmt: skip


def _normalization_cases() -> list[OpCase]:
    cases = []
    for (shape, axis), e in itertools.product(
        [((4,), -1), ((2, 3), 0), ((2, 3, 4), 1), ((1, 5), -1)], FLOATS
    ):
        cases.append(
            OpCase(
                f"graph.softmax-{shape}-axis{axis}-{e}",
                (tensor(shape, e),),
                lambda a, ax=axis: graph.SoftmaxOp(a[0], ax),
                lambda x, ax=axis: np_softmax(x, ax),
                **_tol(e),
            )
        )
    for (shape, axis), e in itertools.product(
        [((2, 6), -1), ((2, 3, 4), 1), ((3,), 0), ((2, 3), 0)], FLOATS
    ):
        norm = shape[axis % len(shape) :]
        cases.append(
            OpCase(
                f"graph.layer_norm-{shape}-axis{axis}-{e}",
                (tensor(shape, e), tensor(norm, e), tensor(norm, e)),
                lambda a, ax=axis: graph.LayerNormOp(*a, axis=ax, epsilon=1e-3),
                lambda x, g, b, ax=axis: np_layer_norm(x, g, b, ax, 1e-3),
                rtol=1e-4,
                atol=1e-5,
            )
        )
    for (cls, ref), (shape, axes, keep), e in itertools.product(
        REDUCE.items(), REDUCE_SHAPES, FLOATS
    ):
        cases.append(
            OpCase(
                f"{cls.name}-{shape}-axes{axes}-keep{keep}-{e}",
                (tensor(shape, e),),
                lambda a, c=cls, ax=axes, k=keep: c(a[0], ax, k),
                lambda x, r=ref, ax=axes, k=keep: r(x, axis=None if ax is None else ax, keepdims=k),
                **_tol(e),
            )
        )
    return cases


RESHAPES = [((2, 3), (3, 2)), ((2, 3, 4), (4, 6)), ((6,), (1, 2, 1, 3)), ((1,), ()),
            ((), (1, 1)), ((4, 1, 5), (20,)), ((3, 4), (2, 2, 3))]  # fmt: skip
CASTS = [(f32, i32), (f32, f64), (f64, f32), (i32, f32), (i32, i64), (i64, i32), (i1, f32),
         (f32, i1), (i1, i32), (i32, i1), (f64, i64), (f32, f32)]  # fmt: skip
LAYOUTS = [
    ("affine_map<(d0, d1) -> (d0 floordiv 8, d1, d0 mod 8)>", (20, 3)),
    ("affine_map<(d0) -> (d0 floordiv 4, d0 mod 4)>", (8,)),
    ("affine_map<(d0, d1) -> (d1, d0)>", (2, 3)),
    ("affine_map<(d0, d1, d2, d3) -> (d0, d1 floordiv 4, d2, d3, d1 mod 4)>", (1, 6, 2, 2)),
    ("affine_map<(d0) -> (d0 floordiv 8, d0 mod 8)>", (5,)),
    ("affine_map<(d0) -> (d0 + 2)>", (5,)),
    ("affine_map<(d0, d1) -> ((d0 + 3) floordiv 4, d1, (d0 + 3) mod 4)>", (6, 2)),
    ("affine_map<(d0, d1) -> (d1 mod 2, 1 + d0, d1 floordiv 2)>", (3, 5)),
]


def _cast_inputs(src: Attribute) -> Callable[[np.random.Generator], list[np.ndarray]]:
    def inputs(_rng: np.random.Generator) -> list[np.ndarray]:
        if src == i1:
            return [np.array([True, False, True, True, False, False])]
        if isinstance(src, AnyFloat):
            return [np.array([-2.7, -0.5, 0.0, 0.4, 1.9, 3.0], dtype=np_dtype(src))]
        big = 2**40 + 5 if src == i64 else 2**20  # i64 -> i32 wraps like NumPy astype
        return [np.array([-300, -1, 0, 1, 7, big], dtype=np_dtype(src))]

    return inputs


def _movement_cases() -> list[OpCase]:
    cases = [
        OpCase(
            f"graph.reshape-{src}-{dst}",
            (tensor(src),),
            lambda a, d=dst: graph.ReshapeOp(a[0], tensor(d)),
            lambda x, d=dst: x.reshape(d),
            exact=True,
        )
        for src, dst in RESHAPES
    ]
    for shape, perm in [((2, 3), (1, 0)), ((2, 3, 4), (2, 0, 1)), ((5,), (0,))]:
        cases.append(
            OpCase(
                f"graph.transpose-{shape}-{perm}",
                (tensor(shape),),
                lambda a, p=perm: graph.TransposeOp(a[0], p),
                lambda x, p=perm: x.transpose(p),
                exact=True,
            )
        )
    for shapes, axis in [([(2, 3), (4, 3)], 0), ([(2, 1), (2, 3), (2, 2)], 1), ([(3,)], 0),
                         ([(1, 2), (1, 2)], -1)]:  # fmt: skip
        cases.append(
            OpCase(
                f"graph.concat-{shapes}-axis{axis}",
                tuple(tensor(s) for s in shapes),
                lambda a, ax=axis: graph.ConcatOp(a, ax),
                lambda *xs, ax=axis: np.concatenate(xs, axis=ax),
                exact=True,
            )
        )
    for src, dst in [((3,), (2, 3)), ((), (2, 2)), ((2, 1), (2, 4)), ((1, 1), (3, 1, 2))]:
        cases.append(
            OpCase(
                f"graph.broadcast_to-{src}-{dst}",
                (tensor(src),),
                lambda a, d=dst: graph.BroadcastToOp(a[0], tensor(d)),
                lambda x, d=dst: np.broadcast_to(x, d),
                exact=True,
            )
        )
    for src, dst in CASTS:
        cases.append(
            OpCase(
                f"graph.cast-{src}-{dst}",
                (tensor((6,), src),),
                lambda a, d=dst: graph.CastOp(a[0], tensor((6,), d)),
                lambda x, d=dst: x.astype(np_dtype(d)),
                inputs=_cast_inputs(src),
                exact=True,
            )
        )
    for text, shape in LAYOUTS:
        amap = parse_map(text)
        constraint = ConstraintAttr(amap, FloatAttr(-1.5, f32))
        physical = graph.layout_transform_shape(shape, amap.data)
        cases.append(
            OpCase(
                f"graph.layout_transform-{shape}-{text}",
                (tensor(shape),),
                lambda a, c=constraint: graph.LayoutTransformOp(a[0], c),
                lambda x, m=amap.data, p=physical: ref_layout_transform(x, m, p, -1.5),
                exact=True,
            )
        )
    return cases


def _f16_cases() -> list[OpCase]:
    """Half precision, where the target supports it (tolerances of f16's 11-bit mantissa)."""
    h = {"rtol": 2e-3, "atol": 2e-3}
    return [
        OpCase("graph.add-(2, 3)-(3,)-f16", (tensor((2, 3), f16), tensor((3,), f16)),
               lambda a: graph.AddOp(*a), np.add, **h),
        OpCase("graph.exp-(5,)-f16", (tensor((5,), f16),), lambda a: graph.ExpOp(a[0]),
               np.exp, **h),
        OpCase("graph.softmax-(2, 4)-f16", (tensor((2, 4), f16),),
               lambda a: graph.SoftmaxOp(a[0]), lambda x: np_softmax(x, -1), **h),
        OpCase("graph.matmul-(2, 3)-(3, 2)-f16", (tensor((2, 3), f16), tensor((3, 2), f16)),
               lambda a: graph.MatmulOp(*a), np.matmul, rtol=1e-2, atol=1e-2),
        OpCase("graph.cast-f16-f32", (tensor((5,), f16),),
               lambda a: graph.CastOp(a[0], tensor((5,), f32)), lambda x: x.astype(np.float32),
               exact=True),
        OpCase("graph.cast-f32-f16", (tensor((5,), f32),),
               lambda a: graph.CastOp(a[0], tensor((5,), f16)), lambda x: x.astype(np.float16),
               exact=True),
    ]  # fmt: skip


def _zero_size_cases() -> list[OpCase]:
    """Tensors with a 0 extent: empty results, and reductions over an empty domain."""
    table = [
        ("graph.reduce_sum", [(0, 3)], lambda a: graph.ReduceSumOp(a[0], (0,)),
         lambda x: x.sum(axis=0)),
        ("graph.reduce_max", [(2, 0, 3)], lambda a: graph.ReduceMaxOp(a[0], (0,)),
         lambda x: x.max(axis=0)),
        ("graph.matmul", [(2, 0), (0, 3)], lambda a: graph.MatmulOp(*a), np.matmul),
        ("graph.concat", [(0, 2), (0, 2)], lambda a: graph.ConcatOp(a, 0),
         lambda *xs: np.concatenate(xs)),
        ("graph.add", [(0, 3), (3,)], lambda a: graph.AddOp(*a), np.add),
        ("graph.conv2d", [(0, 2, 5, 5), (3, 2, 3, 3)],
         lambda a: graph.Conv2dOp(*a, padding=(1, 1, 1, 1)),
         lambda x, w: ref_conv2d(x, w, padding=(1, 1, 1, 1))),
        ("graph.conv2d", [(1, 2, 0, 4), (3, 2, 1, 1)],
         lambda a: graph.Conv2dOp(*a, padding=(1, 0, 1, 0)),
         lambda x, w: ref_conv2d(x, w, padding=(1, 0, 1, 0))),
    ]  # fmt: skip
    return [
        OpCase(f"{name}-zero-size-{shapes}", tuple(tensor(s) for s in shapes), make, ref)
        for name, shapes, make, ref in table
    ]


def _data_cases() -> list[OpCase]:
    """gather (negative and embedding-style indices), slice (strided, reversed), where."""

    def gather_inputs(data, idx):
        def inputs(rng: np.random.Generator) -> list[np.ndarray]:
            return [rng.uniform(-2, 2, size=data).astype(np.float32), np.asarray(idx)]

        return inputs

    cases = []
    for data, idx, axis in [
        ((5, 3), np.array([4, -1, 0], dtype=np.int64), 0),
        ((2, 5, 3), np.array([[1, -2], [0, 4]], dtype=np.int32), 1),
        ((10, 4), np.array([[7, 2, 9], [0, 0, 3]], dtype=np.int64), 0),
        ((4,), np.array(2, dtype=np.int64), 0),
    ]:
        itype = i64 if idx.dtype == np.int64 else i32
        cases.append(
            OpCase(
                f"graph.gather-{data}-{idx.shape}-axis{axis}",
                (tensor(data), tensor(idx.shape, itype)),
                lambda a, ax=axis: graph.GatherOp(a[0], a[1], ax),
                lambda x, i, ax=axis: np.take(x, i, axis=ax),
                inputs=gather_inputs(data, idx),
                exact=True,
            )
        )
    for shape, starts, sizes, steps in [
        ((6, 5), (1, 0), (3, 5), (2, 1)),
        ((4, 7), (3, 6), (4, 3), (-1, -3)),
        ((3, 4), (0, 1), (0, 2), (1, 1)),
    ]:
        cases.append(
            OpCase(
                f"graph.slice-{shape}-{starts}-{sizes}-{steps}",
                (tensor(shape),),
                lambda a, st=starts, si=sizes, sp=steps: graph.SliceOp(a[0], st, si, sp),
                lambda x, st=starts, si=sizes, sp=steps: x[
                    tuple(
                        np.arange(s, s + n * p, p)[:n].reshape(
                            [-1 if d == k else 1 for d in range(len(si))]
                        )
                        for k, (s, n, p) in enumerate(zip(st, si, sp, strict=True))
                    )
                ],
                exact=True,
            )
        )
    for shapes, element in [([(2, 3), (2, 3), (2, 3)], f32), ([(3,), (2, 1), ()], f32),
                            ([(4,), (4,), (1,)], i32)]:  # fmt: skip
        types = (tensor(shapes[0], i1), tensor(shapes[1], element), tensor(shapes[2], element))
        cases.append(
            OpCase(
                f"graph.where-{shapes}-{element}",
                types,
                lambda a: graph.WhereOp(*a),
                np.where,
                exact=True,
            )
        )
    return cases


_COMPARE_REFS = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
                 "gt": np.greater, "ge": np.greater_equal}  # fmt: skip


def _compare_pow_min_cases() -> list[OpCase]:
    """compare (every predicate; NaN on floats, signed integers, i1 as 0 < 1), pow
    (positive bases, any exponent) and reduce_min."""
    nan = np.float32("nan")
    floats = [np.array([[1.0, nan, -2.0, 3.0], [0.5, 2.0, nan, -0.0]], np.float32),
              np.array([1.0, 1.0, nan, 0.0], np.float32)]  # fmt: skip
    ints = [np.array([[-(2**31), 5, -3], [7, 0, 2**31 - 1]], np.int32),
            np.array([-1, 5, 2**31 - 1], np.int32)]  # fmt: skip
    bools = [np.array([True, True, False, False]), np.array([True, False, True, False])]
    cases = []
    for pred, ref in _COMPARE_REFS.items():
        for arrays, e in ((floats, f32), (ints, i32), (bools, i1)):
            cases.append(
                OpCase(
                    f"graph.compare-{pred}-{e}",
                    tuple(tensor(a.shape, e) for a in arrays),
                    lambda a, p=pred: graph.CompareOp(a[0], a[1], p),
                    ref,
                    inputs=lambda _rng, arrays=arrays: arrays,
                    exact=True,
                )
            )
    for shapes, e in itertools.product(BROADCAST_SHAPES[:3], FLOATS):

        def pow_inputs(rng, shapes=shapes, e=e):
            base = rng.uniform(0.1, 3.0, size=shapes[0]).astype(np_dtype(e))
            return [base, rng.uniform(-3.0, 3.0, size=shapes[1]).astype(np_dtype(e))]

        cases.append(
            OpCase(
                f"graph.pow-{shapes}-{e}",
                tuple(tensor(s, e) for s in shapes),
                lambda a: graph.PowOp(*a),
                np.power,
                inputs=pow_inputs,
                **_tol(e),
            )
        )
    for shape, axes, e in (((3, 5), (1,), f32), ((2, 3, 4), None, f64), ((2, 3), (0,), i32)):
        cases.append(
            OpCase(
                f"graph.reduce_min-{shape}-{axes}-{e}",
                (tensor(shape, e),),
                lambda a, ax=axes: graph.ReduceMinOp(a[0], ax),
                lambda x, ax=axes: x.min(axis=ax),
                exact=True,
            )
        )
    return cases


CASES: list[OpCase] = [
    *_binary_cases(),
    *_bool_cases(),
    *_unary_cases(),
    *_window_cases(),
    *_normalization_cases(),
    *_movement_cases(),
    *_zero_size_cases(),
    *_f16_cases(),
    *_data_cases(),
    *_compare_pow_min_cases(),
]
"""Every graph compute op over several shapes and element types."""

CASE_IDS = [c.id for c in CASES]
