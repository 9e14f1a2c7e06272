"""Which loop of a `te.compute` `lower-te` puts innermost: the one walking memory contiguously.

A `te.compute` evaluates its region at every point of its spatial × reduction
domain, and any of its index variables can drive the innermost loop. LLVM's
loop vectorizer turns that loop into `<8 x float>` code only when its loads
and stores move by one element per iteration (or not at all), so for each
candidate index variable `v` every memory access of the innermost body is
classified by how its address moves when `v` steps by one:

    contiguous  row-major element stride ±1 (e.g. the last index is `v + c`,
                `c` not depending on `v`)                              +1
    invariant   the address does not depend on `v` (LICM hoists it)     0
    strided     any other stride, or an index that is not affine in `v`
                (a clamp through `arith.select`, a division, ...)       -1

The accesses are the region's `te.read`s plus, for a spatial candidate, the
result element (stored once per point; in a reduction loaded, combined and
stored once per point). A reduction candidate keeps the accumulator in a
register (`iter_args`), so the result access leaves the innermost loop.

The candidate with the best total wins; loops of extent 1 only when nothing
else is left; a contraction whose column has one operand invariant and the
other strided (attention's `Q @ K^T`) takes the column before any score
(`_contraction_column`: `schedule` blocks it in registers over a packed,
transposed panel); ties go to the candidate with fewer strided accesses (a
strided access in a vectorized loop is a gather: layer_norm's variance
`sum((x[i, k] - mean[i])^2)` scores +1 along `i`, with the mean and the
result contiguous, and +1 along `k`, but `i` gathers a column of `x` --
the reduction along `k` keeps its accumulator in a register), then to the
candidate whose strided accesses do not alias in the cache (a stride of a
multiple of `set_aliasing_bytes` (`target/schedule_knobs.py`) puts every lane's line in the same L1 set:
NCHW -> NCHW16c of 64x64 planes then walks `w`, reading rows and storing
64 bytes apart, instead of gathering 16 lines of one set), then to the
result's last dimension, then to the last reduction dimension (the
unscheduled row-major order), then to later dimensions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.dialects import arith
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.traits import ConstantLike

from lamina.dialects import te
from lamina.schedule.int_analysis import int_constant
from lamina.target.schedule_knobs import ScheduleKnobs

DEFAULT_KNOBS = ScheduleKnobs()
"""The knobs when the caller has no target (the measured defaults)."""

CONTIGUOUS, INVARIANT, STRIDED = 1, 0, -1
"""Scores of one access for a candidate innermost loop."""


@dataclass(frozen=True)
class Innermost:
    """The chosen innermost loop: block argument `axis` of the compute's region
    (spatial dimensions first, then reduction dimensions)."""

    axis: int
    is_reduction: bool


@dataclass
class AffineIndex:
    """Coefficients of index values in one induction variable `iv` of `block`.

    `coefficient(x)` is `k` when `x = k * iv + c` with `c` independent of `iv`
    (found through `arith.addi`, `subi` and `muli` by a constant), else None.
    Values defined outside the region and the other index variables are
    independent of `iv` (coefficient 0).
    """

    block: Block
    iv: BlockArgument
    cache: dict[SSAValue, int | None] = field(default_factory=dict)

    def coefficient(self, value: SSAValue) -> int | None:
        if value is self.iv:
            return 1
        if value not in self.cache:
            self.cache[value] = self._compute(value)
        return self.cache[value]

    def _compute(self, value: SSAValue) -> int | None:
        if isinstance(value, BlockArgument):
            return 0 if value.block is self.block else None
        op = value.owner
        assert isinstance(op, Operation)
        if self.block.find_ancestor_op_in_block(op) is None or op.has_trait(ConstantLike):
            return 0  # defined outside the region, or a constant
        if isinstance(op, arith.AddiOp | arith.SubiOp):
            lhs, rhs = self.coefficient(op.lhs), self.coefficient(op.rhs)
            if lhs is None or rhs is None:
                return None
            return lhs + rhs if isinstance(op, arith.AddiOp) else lhs - rhs
        if isinstance(op, arith.MuliOp):
            return self._product(op.lhs, op.rhs)
        return 0 if self._independent(op) else None

    def _product(self, lhs: SSAValue, rhs: SSAValue) -> int | None:
        """Coefficient of `lhs * rhs`: linear only if one factor is a constant."""
        for factor, other in ((lhs, rhs), (rhs, lhs)):
            k = int_constant(factor)
            if k is not None:
                c = self.coefficient(other)
                return None if c is None else k * c
        if self.coefficient(lhs) == 0 and self.coefficient(rhs) == 0:
            return 0
        return None

    def _independent(self, op: Operation) -> bool:
        """Does no value that `op` (or an op nested in it) uses depend on `iv`?"""
        inside: set[SSAValue] = set()
        for inner in op.walk():
            for region in inner.regions:
                for nested_block in region.blocks:
                    inside.update(nested_block.args)
            if inner is not op:
                inside.update(inner.results)
        return all(
            self.coefficient(operand) == 0
            for inner in op.walk()
            for operand in inner.operands
            if operand not in inside
        )


def row_major_strides(shape: Sequence[int]) -> list[int]:
    strides, step = [], 1
    for extent in reversed(shape):
        strides.append(step)
        step *= extent
    return strides[::-1]


def element_stride(
    shape: Sequence[int], indices: Sequence[SSAValue], affine: AffineIndex
) -> int | None:
    """How many elements `buffer[indices]` moves as the iv steps (None: not affine)."""
    stride = 0
    for index, dim_stride in zip(indices, row_major_strides(shape), strict=True):
        k = affine.coefficient(index)
        if k is None:
            return None
        stride += k * dim_stride
    return stride


def access_score(shape: Sequence[int], indices: Sequence[SSAValue], affine: AffineIndex) -> int:
    """CONTIGUOUS, INVARIANT or STRIDED: how `buffer[indices]` moves as the iv steps."""
    stride = element_stride(shape, indices, affine)
    if stride is None:
        return STRIDED
    if stride == 0:
        return INVARIANT
    return CONTIGUOUS if abs(stride) == 1 else STRIDED


def set_aliasing(
    shape: Sequence[int],
    indices: Sequence[SSAValue],
    affine: AffineIndex,
    element_bytes: int,
    aliasing_bytes: int,
) -> bool:
    """Is the access strided by a multiple of `aliasing_bytes` (`set_aliasing_bytes`)?"""
    stride = element_stride(shape, indices, affine)
    return bool(stride) and abs(stride) > 1 and stride * element_bytes % aliasing_bytes == 0


def _reads(compute: te.ComputeOp) -> list[tuple[Sequence[int], Sequence[SSAValue], int]]:
    """(shape, indices, element bytes) of every `te.read` of the region."""
    reads = []
    for op in compute.body.walk():
        if isinstance(op, te.ReadOp):
            ttype = op.tensor.type
            assert isinstance(ttype, TensorType)
            reads.append((ttype.get_shape(), tuple(op.indices), _bytes(ttype.element_type)))
    return reads


def _bytes(element) -> int:
    """Bytes of one element (index and unknown types: 8)."""
    bits = getattr(element, "bitwidth", None) or 64
    return max(1, bits // 8)


def choose_innermost(
    compute: te.ComputeOp, knobs: ScheduleKnobs = DEFAULT_KNOBS
) -> Innermost | None:
    """The index variable whose loop goes innermost (None: the region has none)."""
    block = compute.body.block
    rank = len(compute.shape_values)
    extents = [*compute.shape_values, *compute.reduce_values]
    if not extents:
        return None
    reads = _reads(compute)
    result = (compute.shape_values, compute.spatial_indices, _bytes(compute.element_type))
    last_reduction = len(extents) - 1 if compute.is_reduction else None

    blocked_column = _contraction_column(compute, reads)

    def key(axis: int) -> tuple[bool, bool, int, int, int, int, int]:
        affine = AffineIndex(block, block.args[axis])
        accesses = reads if axis >= rank else [*reads, result]
        scores = [access_score(shape, indices, affine) for shape, indices, _ in accesses]
        aliasing = sum(
            set_aliasing(s, i, affine, b, knobs.set_aliasing_bytes) for s, i, b in accesses
        )
        if axis == rank - 1:
            tier = 3
        elif axis == last_reduction:
            tier = 2
        else:
            tier = 1 if axis < rank else 0
        return (
            extents[axis] > 1,
            axis == blocked_column,
            sum(scores),
            -scores.count(STRIDED),
            -aliasing,
            tier,
            axis,
        )

    best = max(range(len(extents)), key=key)
    return Innermost(best, best >= rank)


CONTRACTION_MIN_ROWS = 8
"""Rows (the result's next-to-last extent) from which a contraction's column
goes innermost even when its other operand is read down its columns: with
fewer, no register block reuses a packed panel enough to pay for the copy."""


def _contraction_column(compute: te.ComputeOp, reads) -> int | None:
    """The result's last axis when `compute` is a contraction `sum(A[.., k] * B[.., k])`
    whose micro-kernel `schedule` should build along it (None otherwise).

    Scored access by access, a product of two operands both contiguous along
    the reduction (attention's `Q @ K^T`: `Q[i, k] * K[j, k]`) puts `k`
    innermost: a dot product per element, two loads per FMA and a horizontal
    sum at the end. Along the column `j` instead, one operand is invariant
    (broadcast) and the other strided, which `register_block` turns into an
    MR x NR micro-kernel over a transposed packed panel (`pack`): one load
    per MR FMAs. Measured, the transformer encoder of examples/onnx_models.py
    (`Q @ K^T`: 8 heads of 128x32 @ 32x128, AVX-512, one thread, perf
    shares): 10 % of the model's time as dot products, 4 % blocked."""
    if compute.combiner is None or compute.combiner.data != "sum":
        return None
    rank = len(compute.shape_values)
    if rank < 2 or len(reads) != 2 or compute.shape_values[-2] < CONTRACTION_MIN_ROWS:
        return None
    yield_op = compute.body.block.last_op
    product = yield_op.operands[0].owner if yield_op is not None and yield_op.operands else None
    if not isinstance(product, arith.MulfOp) or not all(
        isinstance(v.owner, te.ReadOp) for v in product.operands
    ):
        return None
    column = rank - 1
    affine = AffineIndex(compute.body.block, compute.body.block.args[column])
    scores = sorted(access_score(shape, indices, affine) for shape, indices, _ in reads)
    result = access_score(compute.shape_values, compute.spatial_indices, affine)
    return column if scores == [STRIDED, INVARIANT] and result == CONTIGUOUS else None


def gathered_reads(compute: te.ComputeOp, inner: Innermost) -> int:
    """How many of the region's reads the vectorized loop over `inner` gathers
    (strided along it)."""
    affine = AffineIndex(compute.body.block, compute.body.block.args[inner.axis])
    return sum(access_score(s, i, affine) == STRIDED for s, i, _ in _reads(compute))


__all__ = ["AffineIndex", "Innermost", "access_score", "choose_innermost", "gathered_reads"]
