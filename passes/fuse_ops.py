"""`fuse-ops`: groups of graph compute ops become one kernel (TVM's FuseOps).

Every compute op has a *pattern kind* (`pattern_kind`), as in TVM:

    elementwise     same-shape unary/binary ops (`relu`, `add`, `exp`, `cast`, ...)
    broadcast       binary ops whose operands broadcast (`add %x, %bias`), `broadcast_to`
    injective       index remapping (`reshape`, `transpose`, `concat`)
    reduction       `reduce_*`, `global_avg_pool2d`
    output-fusable  `matmul`, `conv2d`, pools, `softmax`, `layer_norm`: an
                    expensive op whose output elementwise ops can follow
    opaque          everything else (`layout_transform`, calls): never fused;
                    a slice read only by a concatenation, a matmul's result's
                    slices, and ShuffleNetV2's layout transforms around its
                    channel shuffle (`_shuffle_layout`) are injective

Walking each block in order, an op joins the group of the producer of one of
its operands when that operand has no other use, both run on the same
device (`device`, after `plan-devices`), and the kinds allow it:

    group so far                      may absorb
    elementwise/broadcast/injective   elementwise, broadcast, injective, a reduction
                                      (a prologue: the reduction reads it once)
    anchored by output-fusable        elementwise, broadcast (an epilogue)
    anchored by a reduction           elementwise, broadcast (an epilogue)
    injective only                    a matmul (a prologue, for every operand)

so `matmul → add(bias) → relu`, `conv2d → add → relu`, `exp → reduce_sum`
and gelu/softmax/layer_norm epilogue chains each become one group. A value
read twice closes a *diamond*: when every reader of a group's result is
either the op being placed or in a free group ending in that op's other
operand (SiLU's `y * sigmoid(y)`, hardswish spelled `y * hardsigmoid(y)`,
exact gelu's `y * 0.5 * (1 + erf(y / √2))`), those groups and the op join
the producer's group, so `y` stays in registers (EfficientNet-B0: 85 → 67
kernels, no separate serial sigmoid-multiply pass over each activation). A
matmul also absorbs every operand's group of reshapes and transposes
(attention's `transpose(reshape(q)) · transpose(reshape(k))`): those only
remap indices, so the matmul reads the original tensors in place instead
of a copy each (`schedule` packs the operand read along the row, which then
does the transposition once per panel). A group of elementwise ops is no
prologue: the matmul reads each operand element N times and would
recompute it each time. A concatenation merges the free remapping groups
of two or more of its operands (`_absorb_remappings`: ShuffleNetV2's
shuffle reads the kept half's slice and the branch's blocked result,
through its cropping layout transform, in place). A group of two or more
ops becomes one `te.func` (`legalize`'s builders, via `build_kernel`)
called with `graph.call_te` where its last op was; inside it a
non-reduction `te.compute` read by exactly one other non-reduction compute
is inlined into that reader, so an elementwise chain is one loop nest, and
in a matmul's group a pure index remapping (one read at remapped indices)
is inlined into the matmul's reduction. Equal
groups (same ops, attributes, types and wiring) share one kernel. `legalize`
then lowers the ops left alone, one kernel each.

Input invariant: phase `optimization`.
Output IR: fused groups replaced by `graph.call_te @te_fused_<ops>_<type>` of
new private `te.func`s (keeping the group's `device`); other ops unchanged.
Invariants: results unchanged; never fuses across devices.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from math import prod
from typing import ClassVar, cast

from xdsl.context import Context
from xdsl.dialects import arith, math
from xdsl.dialects.builtin import IndexType, ModuleOp, TensorType
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from lamina.core.devices import mark_kernel_device, op_device
from lamina.core.locations import fuse
from lamina.core.pass_base import LaminaPass
from lamina.core.phase_invariants import in_codegen
from lamina.dialects import graph, te
from lamina.dialects.lamina import Phase
from lamina.kernels import BUILDERS, build_kernel_deriving
from lamina.passes._constraints import record_arg_constraints
from lamina.passes._derived_prefetch import WinogradPrefetch
from lamina.passes.legalize import KernelTable, kernel_key, type_suffix

ELEMENTWISE, BROADCAST, INJECTIVE = "elementwise", "broadcast", "injective"
REDUCTION, OUTPUT_FUSABLE, OPAQUE = "reduction", "output-fusable", "opaque"

_KINDS: dict[str, str] = {
    **{op.name: ELEMENTWISE for op in graph.UNARY_OPS},
    graph.CastOp.name: ELEMENTWISE,
    graph.BroadcastToOp.name: BROADCAST,
    graph.ReshapeOp.name: INJECTIVE,
    graph.TransposeOp.name: INJECTIVE,
    graph.ConcatOp.name: INJECTIVE,
    graph.ReduceSumOp.name: REDUCTION,
    graph.ReduceMeanOp.name: REDUCTION,
    graph.ReduceMaxOp.name: REDUCTION,
    graph.ReduceMinOp.name: REDUCTION,
    graph.GlobalAvgPool2dOp.name: REDUCTION,
    graph.MatmulOp.name: OUTPUT_FUSABLE,
    graph.Conv2dOp.name: OUTPUT_FUSABLE,
    graph.MaxPool2dOp.name: OUTPUT_FUSABLE,
    graph.AvgPool2dOp.name: OUTPUT_FUSABLE,
    graph.SoftmaxOp.name: OUTPUT_FUSABLE,
    graph.LayerNormOp.name: OUTPUT_FUSABLE,
}

MAX_GROUP_OPS = 16
"""Ops per fused kernel at most (keeps kernels and their compile time small)."""


def pattern_kind(op: Operation) -> str:
    """The op's fusion pattern kind (see the module docstring)."""
    if not op.has_trait(graph.GraphCompute) or op.name not in BUILDERS or in_codegen(op):
        return OPAQUE
    if any(isinstance(op, cls) for cls in (*graph.BINARY_OPS, graph.CompareOp)):
        shape = graph.tensor_shape(op.results[0])
        same = all(graph.tensor_shape(v) == shape for v in op.operands)
        return ELEMENTWISE if same else BROADCAST
    if isinstance(op, graph.SliceOp):
        if _splits_matmul_result(op) or _feeds_concat(op) or _feeds_layout(op):
            return INJECTIVE
        return OPAQUE
    if isinstance(op, graph.LayoutTransformOp):
        return INJECTIVE if _shuffle_layout(op) else OPAQUE
    return _KINDS.get(op.name, OPAQUE)


def _only_reader(value: SSAValue) -> Operation | None:
    uses = list(value.uses)
    return uses[0].operation if len(uses) == 1 else None


def _feeds_layout(op: graph.SliceOp) -> bool:
    """Whether `op`'s only reader is a layout transform into a blocked layout
    (ShuffleNetV2's split: the half the branch convolves): one kernel slices
    and blocks it instead of a copy and a transform."""
    reader = _only_reader(op.results[0])
    return isinstance(reader, graph.LayoutTransformOp) and reader.crop is None


def _shuffle_layout(op: graph.LayoutTransformOp) -> bool:
    """Whether a layout transform is a prologue of a channel shuffle's or a
    slice's kernel (ShuffleNetV2): a blocked input cropped to `NCHW` read
    only by a concatenation whose only reader is a reshape (the shuffle
    reads the blocked branch in place), or a transform into a blocked layout
    of a slice or a reshape read by nothing else (the next branch's half; a
    stage's last shuffle, which then writes the next stage's blocked input).
    Other layout transforms stay kernels of their own."""
    if op.crop is None:
        producer = op.input.owner
        return isinstance(producer, graph.SliceOp | graph.ReshapeOp) and (
            _only_reader(producer.results[0]) is op
        )
    reader = _only_reader(op.results[0])
    if not isinstance(reader, graph.ConcatOp):
        return False
    return isinstance(_only_reader(reader.results[0]), graph.ReshapeOp)


def _feeds_concat(op: graph.SliceOp) -> bool:
    """Whether `op`'s only reader is a concatenation (ShuffleNetV2's split: the
    half kept unchanged goes into the next unit's concat and channel shuffle),
    which then reads the slice's source in place instead of a copy of it (the
    slice is a prologue of the concat's kernel)."""
    uses = list(op.results[0].uses)
    return len(uses) == 1 and isinstance(uses[0].operation, graph.ConcatOp)


def _splits_matmul_result(op: graph.SliceOp) -> bool:
    """Whether `op` slices a matmul's result, directly or after its bias add:
    attention's q, k and v cut from one QKV projection. Such a slice is an
    index remapping the reshapes, transposes and matmuls of the heads that
    read it fuse (each reads the projection in place, its rows 3*d apart)
    instead of a kernel copying each third out (the transformer encoder: six
    copies of 128x256, 57 us of 7.2 ms). Other slices (a channel split
    between convolutions) stay kernels of their own."""
    value = op.operands[0]
    for _ in range(3):
        producer = value.owner
        if isinstance(producer, graph.MatmulOp):
            return True
        if not isinstance(producer, Operation) or pattern_kind(producer) not in (
            ELEMENTWISE,
            BROADCAST,
        ):
            return False
        shape = graph.tensor_shape(value)
        same = [v for v in producer.operands if graph.tensor_shape(v) == shape]
        if not same:
            return False
        value = same[0]
    return False


_FREE = (ELEMENTWISE, BROADCAST, INJECTIVE)


@dataclass
class Group:
    """Ops fused into one kernel, in block order; `anchor` is its reduction or
    output-fusable op's kind (None while it holds only free ops)."""

    ops: list[Operation]
    anchor: str | None
    device: object = None

    def accepts(self, kind: str) -> bool:
        if len(self.ops) >= MAX_GROUP_OPS:
            return False
        if self.anchor is None:
            return kind in (*_FREE, REDUCTION)
        return kind in (ELEMENTWISE, BROADCAST)

    def accepts_all(self, ops: Sequence[Operation]) -> bool:
        """May every op of `ops` (a free group's, in order) join this group?"""
        return all(self.anchor is None or pattern_kind(o) in (ELEMENTWISE, BROADCAST) for o in ops)

    def is_remapping(self) -> bool:
        """Only injective ops: every element is a copy of an input element."""
        return all(pattern_kind(op) == INJECTIVE for op in self.ops)


@dataclass
class Grouping:
    """The groups of one block."""

    group_of: dict[Operation, Group] = field(default_factory=dict)
    groups: list[Group] = field(default_factory=list)

    def place(self, op: Operation) -> None:
        kind = pattern_kind(op)
        if kind == OPAQUE:
            return
        device = _device(op)
        if isinstance(op, graph.ConcatOp) and self._absorb_remappings(op, device):
            return
        if isinstance(op, graph.MatmulOp) and self._absorb_prologues(op, device):
            return
        if isinstance(op, graph.Conv2dOp) and self._absorb_prologues(op, device, reshapes=True):
            return
        if kind in (ELEMENTWISE, BROADCAST) and self._close_diamond(op, kind, device):
            return
        for operand in op.operands:
            group = self._open_group(operand, device)
            if group is not None and group.accepts(kind):
                group.ops.append(op)
                if kind in (REDUCTION, OUTPUT_FUSABLE):
                    group.anchor = kind
                self.group_of[op] = group
                return
        group = Group([op], None if kind in _FREE else kind, device)
        self.groups.append(group)
        self.group_of[op] = group

    def _absorb_remappings(self, op: Operation, device: object) -> bool:
        """Merge two or more free remapping groups of a concatenation's operands
        into one group ending with it (ShuffleNetV2's shuffle reads the kept
        half's slice and the branch's cropped layout transform in place);
        False when fewer than two operands end such a group."""
        prologues: list[Group] = []
        for operand in op.operands:
            group = self._open_group(operand, device)
            if (
                group is not None
                and group.anchor is None
                and group.is_remapping()
                and group not in prologues
            ):
                prologues.append(group)
        if len(prologues) < 2 or sum(len(g.ops) for g in prologues) >= MAX_GROUP_OPS:
            return False
        merged = Group([o for g in prologues for o in g.ops] + [op], None, device)
        self.groups = [g for g in self.groups if g not in prologues] + [merged]
        for member in merged.ops:
            self.group_of[member] = merged
        return True

    def _open_group(self, operand: SSAValue, device: object) -> Group | None:
        """The group `operand`'s producer ends, if a consumer on `device` may join it."""
        producer = operand.owner
        group = self.group_of.get(producer) if isinstance(producer, Operation) else None
        if (
            group is None
            or not operand.has_one_use()
            or group.ops[-1] is not producer
            or group.device != device
        ):
            return None
        return group

    def _close_diamond(self, op: Operation, kind: str, device: object) -> bool:
        """Fuse `op` with the group that produces a value it reads that other ops
        read too, when every other reader belongs to a free group ending in one
        of `op`'s operands (`y * sigmoid(y)`, SiLU; `y * hardsigmoid(y)`; gelu's
        `0.5 * y * (1 + erf(y / sqrt 2))`): the producer's group, those groups
        and `op` become one, so the shared value stays in registers instead of
        being written by one kernel and read back by the next. False when
        `op`'s operands form no such diamond."""
        for operand in op.operands:
            merged = self._diamond(op, operand, device)
            if merged is None:
                continue
            top, sides = merged
            if not all(top.accepts_all(side.ops) for side in sides) or not top.accepts(kind):
                continue
            if len(top.ops) + sum(len(s.ops) for s in sides) >= MAX_GROUP_OPS:
                continue
            for side in sides:
                top.ops += side.ops
                for member in side.ops:
                    self.group_of[member] = top
            self.groups = [g for g in self.groups if g not in sides]
            top.ops.append(op)
            self.group_of[op] = top
            return True
        return False

    def _diamond(
        self, op: Operation, shared: SSAValue, device: object
    ) -> tuple[Group, list[Group]] | None:
        """The group ending in `shared` and the free groups ending in `op`'s other
        operands that hold every other reader of `shared`, if there are such."""
        producer = shared.owner
        top = self.group_of.get(producer) if isinstance(producer, Operation) else None
        if top is None or top.ops[-1] is not producer or top.device != device:
            return None
        if shared.has_one_use():
            return None
        sides: list[Group] = []
        for other in op.operands:
            if other is shared:
                continue
            side = self._open_group(other, device)
            if side is not None and side is not top and side.anchor is None:
                if side not in sides:
                    sides.append(side)
        members = {o for side in sides for o in side.ops} | {op}
        if not sides or any(use.operation not in members for use in shared.uses):
            return None
        return top, sides

    def _absorb_prologues(self, op: Operation, device: object, reshapes: bool = False) -> bool:
        """Merge the remapping groups of the matmul's operands into one group ending
        with it (see the module docstring); False when no operand has one.

        With `reshapes` (a convolution) only groups of reshapes: a stem's
        input, `NCHW` read as `NCHW1c` (`plan-layouts`), is then read in
        place by the convolution instead of copied by a kernel of its own."""
        prologues: list[Group] = []
        for operand in op.operands:
            group = self._open_group(operand, device)
            if reshapes and (
                group is None or not all(isinstance(o, graph.ReshapeOp) for o in group.ops)
            ):
                continue
            if group is not None and group.is_remapping() and group not in prologues:
                prologues.append(group)
        if not prologues or sum(len(g.ops) for g in prologues) >= MAX_GROUP_OPS:
            return False
        merged = Group([o for g in prologues for o in g.ops] + [op], OUTPUT_FUSABLE, device)
        self.groups = [g for g in self.groups if g not in prologues] + [merged]
        for member in merged.ops:
            self.group_of[member] = merged
        return True


def _device(op: Operation) -> object:
    """The op's device; a layout transform `plan-layouts` inserted (after
    `plan-devices`) runs on the device of the value it transforms."""
    device = op.properties.get("device")
    if device is None and isinstance(op, graph.LayoutTransformOp):
        producer = op.input.owner
        if isinstance(producer, Operation):
            return producer.properties.get("device")
    return device


def group_blocks(module: ModuleOp) -> list[Group]:
    """Fusable groups (two or more ops) of every block of every graph.func."""
    groups: list[Group] = []
    for func in module.ops:
        if not isinstance(func, graph.FuncOp) or in_codegen(func):
            continue
        for op in func.walk():
            for region in op.regions:
                for block in region.blocks:
                    groups += _group_block(block)
    return groups


def _group_block(block: Block) -> list[Group]:
    grouping = Grouping()
    for op in block.ops:
        if len(op.results) == 1:
            grouping.place(op)
    return [g for g in grouping.groups if len(g.ops) > 1]


def group_inputs(ops: Sequence[Operation]) -> list[SSAValue]:
    """Values the group reads from outside, in order of first use."""
    inside = {r for op in ops for r in op.results}
    seen: list[SSAValue] = []
    for op in ops:
        for v in op.operands:
            if v not in inside and v not in seen:
                seen.append(v)
    return seen


def group_key(ops: Sequence[Operation], inputs: Sequence[SSAValue]) -> tuple[object, ...]:
    """Two groups share a kernel when their ops' keys and their wiring are equal."""
    position = {v: ("in", i) for i, v in enumerate(inputs)}
    for index, op in enumerate(ops):
        position[op.results[0]] = ("op", index)
    return tuple((kernel_key(op), tuple(position[v] for v in op.operands)) for op in ops)


# ---------------------------------------------------------------------------
# te-level inlining of elementwise stages
# ---------------------------------------------------------------------------


def inline_elementwise(func: te.FuncOp, remap_into_reductions: bool = False) -> None:
    """Inline every non-reduction compute read by exactly one other non-reduction
    compute (and not returned) into that reader -- unless the producer costs a
    division or a transcendental per element and the reader iterates over more
    elements (a broadcast: a squeeze-excitation block's sigmoid, read by the
    multiply with the whole feature map, would be evaluated at every pixel
    instead of once per channel); with `remap_into_reductions`
    (a matmul's prologue), also a pure index remapping into a reduction. A
    compute carrying attributes (`te.MATERIALIZE_ATTR` asks for its own
    buffer) or a constraint is never inlined."""
    changed = True
    while changed:
        changed = False
        for compute in [op for op in func.body.block.ops if isinstance(op, te.ComputeOp)]:
            reader = _single_reader(compute, remap_into_reductions)
            if reader is not None:
                _inline_into(compute, reader)
                changed = True
                break


def _single_reader(compute: te.ComputeOp, remap_into_reductions: bool) -> te.ComputeOp | None:
    if compute.is_reduction or compute.attributes or _has_constraint(compute):
        return None
    readers = {_enclosing_compute(use.operation) for use in compute.results[0].uses}
    if len(readers) != 1:
        return None
    reader = readers.pop()
    if reader is None or (
        reader.is_reduction and not (remap_into_reductions and _is_remapping(compute))
    ):
        return None
    if not all(isinstance(use.operation, te.ReadOp) for use in compute.results[0].uses):
        return None
    if _costly(compute) and _elements(compute) < _elements(reader):
        return None
    return reader


_COSTLY_OPS = (arith.DivfOp, math.ExpOp, math.TanhOp, math.ErfOp, math.LogOp, math.SqrtOp)
"""Element ops that cost a polynomial or a division (several vector instructions each)."""


def _costly(compute: te.ComputeOp) -> bool:
    return any(isinstance(o, _COSTLY_OPS) for o in compute.body.walk())


def _elements(compute: te.ComputeOp) -> int:
    return prod(cast(TensorType[Attribute], compute.results[0].type).get_shape())


def _is_remapping(compute: te.ComputeOp) -> bool:
    """Is the compute one read at indices computed from its own (a reshape, a
    transpose)? Inlined into a reduction, it costs index arithmetic, no flops."""
    ops = list(compute.body.block.ops)
    reads = [o for o in ops if isinstance(o, te.ReadOp)]
    if (
        len(reads) != 1
        or not isinstance(ops[-1], te.YieldOp)
        or ops[-1].value is not reads[0].result
    ):
        return False
    return all(
        isinstance(r.type, IndexType)
        for o in ops
        if o is not ops[-1] and o is not reads[0]
        for r in o.results
    ) and not any(o.regions for o in ops)


def _has_constraint(compute: te.ComputeOp) -> bool:
    return any("constraint" in key for key in compute.properties)


def _enclosing_compute(op: Operation) -> te.ComputeOp | None:
    while op is not None and not isinstance(op, te.ComputeOp):
        op = op.parent_op()  # type: ignore[assignment]
    return op


def _inline_into(producer: te.ComputeOp, reader: te.ComputeOp) -> None:
    """Replace each `te.read %producer[idx]` in `reader` by the producer's region at idx.

    The last read takes the producer's ops themselves (moved, not cloned: the
    producer is erased after it), the others clones: the same IR, without
    cloning each op once more (a concatenation's select chain, inlined into
    DenseNet-121's batch norms, was most of `fuse-ops`)."""
    reads = [u.operation for u in producer.results[0].uses]
    for read in reads[:-1]:
        assert isinstance(read, te.ReadOp)
        mapper: dict[SSAValue, SSAValue] = dict(
            zip(producer.body.block.args, read.indices, strict=True)
        )
        at = InsertPoint.before(read)
        for op in producer.body.block.ops:
            if isinstance(op, te.YieldOp):
                read.result.replace_all_uses_with(mapper.get(op.value, op.value))
                break
            new = op.clone(value_mapper=mapper)
            Rewriter.insert_op(new, at)
        Rewriter.erase_op(read)
    _move_into(producer, reads[-1])
    Rewriter.erase_op(producer)


def _move_into(producer: te.ComputeOp, read: Operation) -> None:
    """Replace `read` (`te.read %producer[idx]`) by the producer's ops, moved before it
    with the producer's indices replaced by `idx`."""
    assert isinstance(read, te.ReadOp)
    block = producer.body.block
    for arg, index in zip(block.args, read.indices, strict=True):
        for use in tuple(arg.uses):  # not `replace_all_uses_with`: it names `index` after `arg`
            use.operation.operands[use.index] = index
    moved: list[Operation] = []
    for op in list(block.ops):
        if isinstance(op, te.YieldOp):
            read.result.replace_all_uses_with(op.value)
            break
        block.detach_op(op)
        moved.append(op)
    target = read.parent_block()
    assert target is not None
    target.insert_ops_before(moved, read)  # one insertion of all, in order
    Rewriter.erase_op(read)


# ---------------------------------------------------------------------------
# Pass
# ---------------------------------------------------------------------------


class FusedKernels(KernelTable):
    """legalize's kernel table, for groups: one te.func per distinct `group_key`."""

    def kernel_for_group(self, ops: Sequence[Operation], inputs: Sequence[SSAValue]) -> str:
        key = group_key(ops, inputs)
        if key in self.by_key:
            return self.by_key[key]
        names = "_".join(op.name.removeprefix("graph.") for op in ops)
        name = self._fresh(f"te_fused_{names}_{type_suffix(ops[-1].results[0].type)}")
        func, params = build_kernel_deriving(name, ops, inputs, [ops[-1].results[0]])
        self.parameters[name] = params
        record_arg_constraints(func, params.arg_constraints([None] * len(inputs)))
        inline_elementwise(func, any(isinstance(op, graph.MatmulOp) for op in ops))
        mark_kernel_device(func, op_device(ops[-1]))  # the group's device (never mixed)
        self.new_funcs.append(func)
        self.by_key[key] = name
        return name


def fuse_group(group: Group, table: FusedKernels) -> None:
    """Replace the group's ops by one `graph.call_te` where its last op was.

    A group whose kernel cannot be built is left unfused: `legalize` then
    reports the offending op with its own diagnostic.
    """
    last = group.ops[-1]
    inputs = group_inputs(group.ops)
    try:
        callee = table.kernel_for_group(group.ops, inputs)
    except Exception:  # noqa: BLE001 - any builder failure: legalize reports it per op
        return
    result_type = last.results[0].type
    assert isinstance(result_type, TensorType)
    operands = table.call_operands(callee, inputs, last)
    call = graph.CallTeOp(callee, operands, [result_type], device=group.device)  # type: ignore[arg-type]
    call.results[0].name_hint = last.results[0].name_hint
    # The call stands for every op of the group, in order (MLIR's fused location): a
    # diagnostic points at the first one's line (core/locations.py, file_line_col).
    call.location = fuse([op.location for op in group.ops])
    Rewriter.insert_op(call, InsertPoint.before(last))
    last.results[0].replace_all_uses_with(call.results[0])
    for op in reversed(group.ops):
        Rewriter.erase_op(op)


@dataclass(frozen=True)
class FuseOpsPass(LaminaPass):
    """Fuse elementwise/broadcast chains into their producers: one te.func per group (TVM FuseOps).

    Input invariant: phase `optimization`.
    Output IR: each group (an output-fusable or reduction op with its
    elementwise/broadcast epilogue, a reduction with its elementwise prologue,
    a matmul with its operands' reshapes/transposes, a chain of
    elementwise/broadcast/injective ops, or any of these closed over a
    diamond such as SiLU's `y * sigmoid(y)`) is one `graph.call_te`
    of a private `te.func` built by legalize's op builders, with single-reader
    elementwise stages (and, into a matmul, pure index remappings) inlined;
    equal groups share a kernel.
    Invariants: results unchanged; ops on different devices never fuse; ops
    claimed by a target and opaque ops are left alone.
    """

    name = "fuse-ops"
    phases: ClassVar[frozenset[Phase]] = frozenset({Phase.OPTIMIZATION})

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        table = FusedKernels(op)
        table.prefetch = WinogradPrefetch(op)  # Winograd's weights on threads meanwhile
        try:
            for group in group_blocks(op):
                fuse_group(group, table)
        finally:
            table.prefetch.close()
        table.erase_unused_constants()
        for func in table.new_funcs:
            op.body.block.add_op(func)
