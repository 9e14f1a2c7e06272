"""Data movement that changes shape or picks elements: `reshape`,
`transpose`, `concat`, `broadcast_to`, `gather` and `slice`, with their
shape rules (`transpose_result_shape`, `concat_result_shape`,
`broadcast_to_shape`, `gather_result_shape`, `slice_result_shape`).

Their legalization is `kernels/shape.py`.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    I64,
    DenseArrayBase,
    IntegerAttr,
    IntegerType,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    var_operand_def,
)

from lamina.dialects.graph.base import _ComputeOp, _OneInputOp, _RetypeOp
from lamina.dialects.graph.common import (
    ShapeError,
    _axis,
    _axis_value,
    _check_length,
    _check_same_element_type,
    _i64,
    _i64_array,
    _int_values,
    _tensor,
    element_type,
    normalize_axis,
    shape_str,
    tensor_shape,
)
from lamina.dialects.lamina import DeviceAttr


def broadcast_to_shape(shape: Sequence[int], target: Sequence[int]) -> tuple[int, ...]:
    """Check that `shape` broadcasts to exactly `target` (NumPy `broadcast_to`)."""
    if len(shape) > len(target):
        raise ShapeError(
            f"operand shape {shape_str(shape)} cannot be broadcast to {shape_str(target)} "
            f"(operand rank {len(shape)} > target rank {len(target)})"
        )
    padded = (1,) * (len(target) - len(shape)) + tuple(shape)
    for dim, (size, want) in enumerate(zip(padded, target, strict=True)):
        if size not in (1, want):
            raise ShapeError(
                f"operand shape {shape_str(shape)} cannot be broadcast to {shape_str(target)} "
                f"(dim {dim}: {size} vs {want})"
            )
    return tuple(target)


def transpose_result_shape(shape: Sequence[int], perm: Sequence[int]) -> tuple[int, ...]:
    """`shape` permuted by `perm`, which must be a permutation of range(rank)."""
    if sorted(perm) != list(range(len(shape))):
        raise ShapeError(
            f"perm {list(perm)} is not a permutation of {list(range(len(shape)))} "
            f"(operand rank {len(shape)})"
        )
    return tuple(shape[p] for p in perm)


def concat_result_shape(shapes: Sequence[Sequence[int]], axis: int) -> tuple[int, ...]:
    """Shape of the concatenation of `shapes` along `axis`; other dims must agree."""
    if not shapes:
        raise ShapeError("concat needs at least one operand")
    first = tuple(shapes[0])
    axis = normalize_axis(axis, len(first))
    total = 0
    for index, shape in enumerate(shapes):
        if len(shape) != len(first):
            raise ShapeError(
                f"operand #{index} has rank {len(shape)}, expected {len(first)} "
                f"(the rank of operand #0)"
            )
        for dim, (size, want) in enumerate(zip(shape, first, strict=True)):
            if dim != axis and size != want:
                raise ShapeError(
                    f"operand #{index} has shape {shape_str(shape)}, incompatible with "
                    f"{shape_str(first)} outside the concat axis {axis} (dim {dim}: "
                    f"{size} vs {want})"
                )
        total += shape[axis]
    return first[:axis] + (total,) + first[axis + 1 :]


@irdl_op_definition
class ReshapeOp(_RetypeOp):
    """Reshape to the result type's shape (same element count and element type)."""

    name = "graph.reshape"

    def infer_result_type(self) -> Attribute:
        src, dst = tensor_shape(self.input), tensor_shape(self.result)
        if prod(src) != prod(dst):
            raise ShapeError(
                f"element count mismatch: operand {shape_str(src)} has {prod(src)} elements, "
                f"result {shape_str(dst)} has {prod(dst)}"
            )
        return _tensor(element_type(self.input), dst)


@irdl_op_definition
class TransposeOp(_OneInputOp):
    """Permute dimensions: result dim i is operand dim `perm[i]`."""

    name = "graph.transpose"

    perm = prop_def(DenseArrayBase.constr(i64))

    def __init__(
        self,
        input: SSAValue | Operation,
        perm: Sequence[int],
        device: DeviceAttr | None = None,
    ):
        value = SSAValue.get(input)
        result_type = _tensor(
            element_type(value), transpose_result_shape(tensor_shape(value), perm)
        )
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={"perm": _i64_array(perm), "device": device},
        )

    @property
    def perm_value(self) -> tuple[int, ...]:
        return _int_values(self.perm)

    def infer_result_type(self) -> Attribute:
        shape = transpose_result_shape(tensor_shape(self.input), self.perm_value)
        return _tensor(element_type(self.input), shape)


@irdl_op_definition
class ConcatOp(_ComputeOp):
    """Concatenate tensors along `axis` (default 0)."""

    name = "graph.concat"

    inputs = var_operand_def(TensorType)
    result = result_def(TensorType)
    axis = opt_prop_def(IntegerAttr[I64])

    def __init__(
        self,
        inputs: Sequence[SSAValue | Operation],
        axis: int | None = None,
        device: DeviceAttr | None = None,
    ):
        values = [SSAValue.get(v) for v in inputs]
        shape = concat_result_shape([tensor_shape(v) for v in values], axis or 0)
        super().__init__(
            operands=[values],
            result_types=[_tensor(element_type(values[0]), shape)],
            properties={"axis": _i64(axis), "device": device},
        )

    @property
    def axis_value(self) -> int:
        return _axis_value(self.axis, 0, self.inputs[0])

    def infer_result_type(self) -> Attribute:
        values = list(self.inputs)
        if not values:
            raise ShapeError("concat needs at least one operand")
        elem = _check_same_element_type(values, [f"operand #{i}" for i in range(len(values))])
        shape = concat_result_shape([tensor_shape(v) for v in values], _axis(self.axis, 0))
        return _tensor(elem, shape)


@irdl_op_definition
class BroadcastToOp(_RetypeOp):
    """Broadcast (NumPy rules) to the result type's shape."""

    name = "graph.broadcast_to"

    def infer_result_type(self) -> Attribute:
        shape = broadcast_to_shape(tensor_shape(self.input), tensor_shape(self.result))
        return _tensor(element_type(self.input), shape)


def gather_result_shape(data: Sequence[int], indices: Sequence[int], axis: int) -> tuple[int, ...]:
    """`data.shape[:axis] + indices.shape + data.shape[axis + 1:]` (numpy `take`)."""
    axis = normalize_axis(axis, len(data))
    return (*data[:axis], *indices, *data[axis + 1 :])


def slice_result_shape(
    shape: Sequence[int], starts: Sequence[int], sizes: Sequence[int], steps: Sequence[int]
) -> tuple[int, ...]:
    """The shape of a strided window: `sizes`, checked to stay inside `shape`.

    A size `?` (MLIR's dynamic sentinel, `DYNAMIC_INDEX`) in dim 0 takes the
    whole dynamic batch (start 0, step 1): the result keeps the operand's
    leading dimension (docs/dynamic-shapes.md).
    """
    rank = len(shape)
    if rank and sizes and sizes[0] == DYNAMIC_INDEX:
        if starts[0] != 0 or steps[0] != 1:
            raise ShapeError("a slice of the whole batch (size ?) has start 0 and step 1 in dim 0")
        rest = slice_result_shape(shape[1:], starts[1:], sizes[1:], steps[1:])
        return (shape[0], *rest)
    _check_length("starts", starts, [rank])
    _check_length("sizes", sizes, [rank])
    _check_length("steps", steps, [rank])
    for dim, (extent, start, size, step) in enumerate(
        zip(shape, starts, sizes, steps, strict=True)
    ):
        if step == 0:
            raise ShapeError(f"steps must be non-zero, got 0 in dim {dim}")
        if size < 0:
            raise ShapeError(f"sizes must be non-negative, got {size} in dim {dim}")
        last = start + (size - 1) * step
        if size > 0 and not (0 <= start < extent and 0 <= last < extent):
            raise ShapeError(
                f"dim {dim}: elements {start} to {last} (step {step}) leave the "
                f"operand extent {extent}"
            )
    return tuple(sizes)


@irdl_op_definition
class GatherOp(_ComputeOp):
    """Take elements along `axis` (default 0) at integer `indices` (numpy `take`,
    ONNX `Gather`): the result is `data.shape[:axis] + indices.shape +
    data.shape[axis+1:]`. A negative index counts from the end; an index out of
    range reads the nearest element (ONNX leaves it undefined), so a read never
    leaves the buffer.
    """

    name = "graph.gather"

    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    result = result_def(TensorType)
    axis = opt_prop_def(IntegerAttr[I64])

    def __init__(
        self,
        data: SSAValue | Operation,
        indices: SSAValue | Operation,
        axis: int | None = None,
        device: DeviceAttr | None = None,
    ):
        dv, iv = SSAValue.get(data), SSAValue.get(indices)
        shape = gather_result_shape(tensor_shape(dv), tensor_shape(iv), axis or 0)
        super().__init__(
            operands=[data, indices],
            result_types=[_tensor(element_type(dv), shape)],
            properties={"axis": _i64(axis), "device": device},
        )

    @property
    def axis_value(self) -> int:
        return _axis_value(self.axis, 0, self.data)

    def infer_result_type(self) -> Attribute:
        index_type = element_type(self.indices)
        if not isinstance(index_type, IntegerType) or index_type.width.data == 1:
            raise ShapeError(f"indices must have an integer element type, got {index_type}")
        shape = gather_result_shape(
            tensor_shape(self.data), tensor_shape(self.indices), _axis(self.axis, 0)
        )
        return _tensor(element_type(self.data), shape)


@irdl_op_definition
class SliceOp(_OneInputOp):
    """A strided window: `result[i] = input[starts + i * steps]` per dimension,
    with `sizes` elements along each (`array<i64>`s, one entry per dimension;
    steps may be negative). Every element read must lie inside the operand,
    so out-of-range ONNX/NumPy slice bounds are resolved by the builder."""

    name = "graph.slice"

    starts = prop_def(DenseArrayBase.constr(i64))
    sizes = prop_def(DenseArrayBase.constr(i64))
    steps = prop_def(DenseArrayBase.constr(i64))

    def __init__(
        self,
        input: SSAValue | Operation,
        starts: Sequence[int],
        sizes: Sequence[int],
        steps: Sequence[int] | None = None,
        device: DeviceAttr | None = None,
    ):
        value = SSAValue.get(input)
        steps = tuple(steps) if steps is not None else (1,) * len(sizes)
        shape = slice_result_shape(tensor_shape(value), starts, sizes, steps)
        super().__init__(
            operands=[input],
            result_types=[_tensor(element_type(value), shape)],
            properties={
                "starts": _i64_array(starts),
                "sizes": _i64_array(sizes),
                "steps": _i64_array(steps),
                "device": device,
            },
        )

    @property
    def starts_value(self) -> tuple[int, ...]:
        return _int_values(self.starts)

    @property
    def sizes_value(self) -> tuple[int, ...]:
        return _int_values(self.sizes)

    @property
    def steps_value(self) -> tuple[int, ...]:
        return _int_values(self.steps)

    def infer_result_type(self) -> Attribute:
        shape = slice_result_shape(
            tensor_shape(self.input),
            self.starts_value,
            self.sizes_value,
            self.steps_value,
        )
        return _tensor(element_type(self.input), shape)
