"""The `graph` dialect: value-semantics functions over tensors (docs/design.md §3.2).

This is the Relax/Relay level of Lamina. A model enters as `graph.func`s whose
bodies are compute ops on whole tensors (`graph.add`, `graph.matmul`,
`graph.conv2d`, ...), structured by calls, function values (`graph.lambda`,
`graph.closure`, `graph.invoke`) and pure `graph.dataflow` blocks. Devices and
layout constraints are attributes in the IR (`device`, `#lamina.constraint`).

Every op checks shapes and element types in `verify_()`, so that a wrong
shape is a diagnostic at the op and never a crash in a later pass. The shape
rules are module-level helpers (`broadcast_shapes`, `matmul_result_shape`,
`conv2d_output_shape`, `pool2d_output_shape`, `reduce_result_shape`,
`layout_transform_shape`, ...) that legalization reuses; they raise
`ShapeError` (a `VerifyException`) with an expected-vs-got message.

The dialect is a package with one module per op family, so that an op's
definition, its shape rule and (under `kernels/`, same module
names) its legalization are found together:

* `common` — message helpers, shared shape rules, property encoders;
* `base` — the `GraphCompute` trait and the base classes of compute ops;
* `types` — `!graph.fn`;
* `control` — func, return, call, lambda, closure, invoke, dataflow, constant;
* `kernel_calls` — call_te, call_loop, call_extern;
* `devices` — on_device, device_copy;
* `elementwise` — binary and unary arithmetic, cast, where;
* `linalg` — matmul;
* `nn` — conv2d, pooling, softmax, layer_norm;
* `reduce` — reduce_sum/mean/max;
* `shape` — reshape, transpose, concat, broadcast_to, gather, slice;
* `layout` — layout_transform.

This module re-exports every op, type and shape rule, so `graph.Conv2dOp`,
`graph.tensor_shape` or `graph.blocked_conv_layout` work without knowing the
family, and defines the `Graph` dialect object.

Syntax::

    graph.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
      %c = graph.constant dense<1.0> : tensor<4xf32>
      %r = graph.dataflow -> tensor<4xf32> {
        %s = graph.add %x, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
        graph.output %s : tensor<4xf32>
      }
      %f = graph.lambda (%y: tensor<4xf32>) -> tensor<4xf32> {
        %z = graph.relu %y : (tensor<4xf32>) -> tensor<4xf32>
        graph.return %z : tensor<4xf32>
      }
      %o = graph.invoke %f(%r) : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, tensor<4xf32>) -> tensor<4xf32>
      graph.return %o : tensor<4xf32>
    }
"""

from __future__ import annotations

from xdsl.ir import Dialect
from xdsl.irdl import IRDLOperation

from lamina.dialects.graph.base import COMPUTE_FORMAT, GraphCompute
from lamina.dialects.graph.common import (
    ShapeError,
    attr_syntax,
    broadcast_shapes,
    element_type,
    normalize_axes,
    normalize_axis,
    shape_str,
    tensor_shape,
)
from lamina.dialects.graph.control import (
    CALL_FORMAT,
    CallOp,
    ClosureOp,
    ConstantOp,
    DataflowOp,
    FuncOp,
    InvokeOp,
    LambdaOp,
    OutputOp,
    ReturnOp,
)
from lamina.dialects.graph.devices import DeviceCopyOp, OnDeviceOp
from lamina.dialects.graph.elementwise import (
    BINARY_OPS,
    COMPARE_PREDICATES,
    GELU_APPROXIMATIONS,
    UNARY_OPS,
    AddOp,
    CastOp,
    CompareOp,
    DivOp,
    ErfOp,
    ExpOp,
    GeluOp,
    LogOp,
    MaximumOp,
    MinimumOp,
    MulOp,
    NegOp,
    PowOp,
    ReluOp,
    RsqrtOp,
    SigmoidOp,
    SqrtOp,
    SubOp,
    TanhOp,
    WhereOp,
)
from lamina.dialects.graph.kernel_calls import CallExternOp, CallLoopOp, CallTeOp
from lamina.dialects.graph.layout import (
    EXACT_BOUNDS_LIMIT,
    LayoutTransformOp,
    layout_transform_shape,
)
from lamina.dialects.graph.linalg import MatmulOp, matmul_result_shape
from lamina.dialects.graph.nn import (
    CONV_ALGORITHM_ATTR,
    CONV_ALGORITHMS,
    AvgPool2dOp,
    Conv2dOp,
    GlobalAvgPool2dOp,
    LayerNormOp,
    MaxPool2dOp,
    SoftmaxOp,
    blocked_conv_layout,
    conv2d_output_shape,
    normalize_padding2d,
    pool2d_output_shape,
    winograd_shape_unsupported,
    winograd_unsupported,
)
from lamina.dialects.graph.reduce import (
    ReduceMaxOp,
    ReduceMeanOp,
    ReduceMinOp,
    ReduceSumOp,
    reduce_result_shape,
)
from lamina.dialects.graph.shape import (
    BroadcastToOp,
    ConcatOp,
    GatherOp,
    ReshapeOp,
    SliceOp,
    TransposeOp,
    broadcast_to_shape,
    concat_result_shape,
    gather_result_shape,
    slice_result_shape,
    transpose_result_shape,
)
from lamina.dialects.graph.types import FnType

COMPUTE_OPS: tuple[type[IRDLOperation], ...] = (
    AddOp, SubOp, MulOp, DivOp, MaximumOp, MinimumOp, PowOp, CompareOp,
    NegOp, ExpOp, LogOp, SqrtOp, RsqrtOp, TanhOp, SigmoidOp, ErfOp, ReluOp, GeluOp,
    MatmulOp, Conv2dOp, MaxPool2dOp, AvgPool2dOp, GlobalAvgPool2dOp, SoftmaxOp, LayerNormOp,
    ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp,
    ReshapeOp, TransposeOp, ConcatOp, BroadcastToOp, CastOp, LayoutTransformOp,
    GatherOp, SliceOp, WhereOp,
)  # fmt: skip
"""Every op with the `GraphCompute` trait."""

Graph = Dialect(
    "graph",
    [
        FuncOp, ReturnOp, CallOp, LambdaOp, ClosureOp, InvokeOp, DataflowOp, OutputOp,
        ConstantOp, OnDeviceOp, DeviceCopyOp, CallTeOp, CallLoopOp, CallExternOp,
        *COMPUTE_OPS,
    ],
    [FnType],
)  # fmt: skip
"""The graph dialect (docs/design.md §3.2)."""

__all__ = [
    "BINARY_OPS", "CALL_FORMAT", "COMPUTE_FORMAT", "COMPUTE_OPS", "EXACT_BOUNDS_LIMIT",
    "COMPARE_PREDICATES", "GELU_APPROXIMATIONS", "UNARY_OPS",
    "Graph", "GraphCompute", "FnType", "ShapeError",
    "FuncOp", "ReturnOp", "CallOp", "LambdaOp", "ClosureOp", "InvokeOp", "DataflowOp",
    "OutputOp", "ConstantOp", "OnDeviceOp", "DeviceCopyOp", "CallTeOp", "CallLoopOp",
    "CallExternOp",
    "AddOp", "SubOp", "MulOp", "DivOp", "MaximumOp", "MinimumOp", "PowOp", "CompareOp",
    "NegOp", "ExpOp", "LogOp", "SqrtOp", "RsqrtOp", "TanhOp", "SigmoidOp", "ErfOp", "ReluOp",
    "GeluOp", "CastOp", "WhereOp",
    "MatmulOp", "Conv2dOp", "MaxPool2dOp", "AvgPool2dOp", "GlobalAvgPool2dOp", "SoftmaxOp",
    "LayerNormOp", "ReduceSumOp", "ReduceMeanOp", "ReduceMaxOp", "ReduceMinOp",
    "ReshapeOp", "TransposeOp", "ConcatOp", "BroadcastToOp", "GatherOp", "SliceOp",
    "LayoutTransformOp",
    "attr_syntax", "element_type", "shape_str", "tensor_shape",
    "normalize_axis", "normalize_axes", "normalize_padding2d",
    "broadcast_shapes", "broadcast_to_shape", "matmul_result_shape", "conv2d_output_shape",
    "blocked_conv_layout", "pool2d_output_shape", "reduce_result_shape",
    "CONV_ALGORITHM_ATTR", "CONV_ALGORITHMS", "winograd_shape_unsupported", "winograd_unsupported",
    "transpose_result_shape", "concat_result_shape", "gather_result_shape",
    "slice_result_shape", "layout_transform_shape",
]  # fmt: skip
