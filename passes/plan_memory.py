"""`plan-memory`: liveness-based buffer reuse, per device (TVM's StaticPlanBlockMemory).

Both levels the pass can meet in phase `lowering` use one algorithm, a
linear scan over a function's straight-line top-level block:

    for each op, in order:
        1. release: every planned buffer whose last use came *before* this op
           goes back to the free pool of its key;
        2. assign: every buffer this op defines takes a pooled buffer of the
           same key (the most recently released one) or a fresh one.

The key is (memref type = shape + element type, device, layout constraint,
memory scope): only identical buffers are shared, never across devices (a
buffer without `device` is on the module's `lamina.default_device`).
Because a buffer is released only *after* its last use, an op never writes
a result over one of its own inputs, and two buffers that share storage are
never live at the same time. A use inside a nested region counts as a use
by the top-level op containing it.

* Graph level (`graph.func`, before `lower-graph`, the default pipeline):
  the buffers are the intermediates `lower-graph` will allocate
  (`lower_graph.result_buffer_spec`; returned values live in the caller's
  output buffers and are not planned). The plan is written into the IR as
  `lamina.storage = array<i64: slot, ...>` on each producing op, one slot
  per result (-1: not planned); `lower-graph` allocates one buffer per slot.
* Loop level (`loop.func`, e.g. after `lower-graph`, and the temporaries of
  `lower-te` kernels): a `loop.alloc` whose buffer was `loop.free`d earlier
  in the same block is replaced by that buffer; the earlier `loop.free`
  goes, so each buffer is still freed exactly once, after its last use.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from math import prod
from typing import ClassVar, Generic, TypeVar

from xdsl.context import Context
from xdsl.dialects.builtin import DenseArrayBase, ModuleOp, i64
from xdsl.ir import Block, SSAValue
from xdsl.rewriter import Rewriter

from lamina.core.devices import arg_device
from lamina.core.diagnostics import Diagnostic, Severity, emit_remark
from lamina.core.liveness import BlockOrder
from lamina.core.pass_base import LaminaPass
from lamina.dialects import graph, loop
from lamina.dialects.lamina import CPU0, DeviceAttr, Phase, get_default_device
from lamina.passes.concat_in_place import keeps_own_buffer
from lamina.passes.lower_graph import STORAGE_ATTR, result_buffer_spec

T = TypeVar("T")


# ---------------------------------------------------------------------------
# The shared algorithm
# ---------------------------------------------------------------------------


@dataclass
class FreePool(Generic[T]):
    """Released buffers by key; the most recently released one is reused first
    (it is the most likely to still be in cache)."""

    pools: dict[Hashable, list[T]] = field(default_factory=dict)

    def release(self, key: Hashable, item: T) -> None:
        self.pools.setdefault(key, []).append(item)

    def take(self, key: Hashable) -> T | None:
        pool = self.pools.get(key)
        return pool.pop() if pool else None


# ---------------------------------------------------------------------------
# Graph level: storage slots for lower-graph
# ---------------------------------------------------------------------------


def _aliases(block: Block) -> dict[SSAValue, list[SSAValue]]:
    """Each value → the values sharing its buffer (itself and `graph.on_device` results)."""
    groups: dict[SSAValue, list[SSAValue]] = {}
    root: dict[SSAValue, SSAValue] = {}
    for op in block.ops:
        if isinstance(op, graph.OnDeviceOp):
            r = root.get(op.input, op.input)
            root[op.result] = r
            groups.setdefault(r, [r]).append(op.result)
    return groups


def plan_graph_function(func: graph.FuncOp, default_device: DeviceAttr = CPU0) -> int:
    """Write `lamina.storage` slots on the intermediates of `func`; return the slot count.

    A buffer without `device` lives on `default_device` (the module's).
    """
    if func.is_declaration:
        return 0
    block = func.body.block
    returned = set(block.last_op.operands) if block.last_op is not None else set()
    groups = _aliases(block)
    pool: FreePool[int] = FreePool()
    live: list[tuple[int, Hashable, int]] = []  # (last use index, key, slot)
    n_slots = 0
    order = BlockOrder(block)
    for index, op in enumerate(block.ops):
        still_live = []
        for end, key, slot in live:
            if end < index:
                pool.release(key, slot)
            else:
                still_live.append((end, key, slot))
        live = still_live
        slots: list[int] = []
        own = keeps_own_buffer(op)  # concat-in-place: its producers write it before the op
        for i, result in enumerate(op.results):
            spec = result_buffer_spec(op, i)
            if own or spec is None or any(v in returned for v in groups.get(result, [result])):
                slots.append(-1)
                continue
            key = (spec.type, spec.device or default_device, spec.constraint)
            slot = pool.take(key)
            if slot is None:
                slot, n_slots = n_slots, n_slots + 1
            slots.append(slot)
            live.append((order.last_use_index(groups.get(result, [result]), index), key, slot))
        if any(s >= 0 for s in slots):
            op.attributes[STORAGE_ATTR] = DenseArrayBase.from_list(i64, slots)
        else:
            op.attributes.pop(STORAGE_ATTR, None)
    return n_slots


# ---------------------------------------------------------------------------
# Loop level: reuse of freed allocations
# ---------------------------------------------------------------------------


def _alloc_key(alloc: loop.AllocOp, default_device: DeviceAttr) -> Hashable:
    device = alloc.device or default_device
    return (alloc.result.type, device, alloc.constraint, alloc.scope.data)


def plan_loop_function(func: loop.FuncOp, default_device: DeviceAttr = CPU0) -> int:
    """Reuse freed top-level allocations of `func` in later allocations; return how many.

    An alloc without `device` is on `default_device` (the module's).
    """
    if func.is_declaration:
        return 0
    block = func.body.block
    pool: FreePool[tuple[SSAValue, loop.FreeOp]] = FreePool()
    reused = 0
    for op in list(block.ops):
        if isinstance(op, loop.FreeOp):
            owner = op.buffer.owner
            if isinstance(owner, loop.AllocOp) and owner.parent_block() is block:
                pool.release(_alloc_key(owner, default_device), (op.buffer, op))
        elif isinstance(op, loop.AllocOp):
            found = pool.take(_alloc_key(op, default_device))
            if found is None:
                continue
            buffer, free = found
            Rewriter.erase_op(free)
            op.result.replace_all_uses_with(buffer)
            Rewriter.erase_op(op)
            reused += 1
    return reused


# ---------------------------------------------------------------------------
# The pass
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class PlanMemoryPass(LaminaPass):
    """Share buffers whose lifetimes do not overlap (same shape, element type, device, layout).

    Input invariant: phase `lowering`, after `lower-te`; host code either
    still as `graph.func` (before `lower-graph`) or as `loop.func` (after).

    Output IR: graph level: each op producing an intermediate that
    `lower-graph` will allocate carries `lamina.storage = array<i64: ...>`
    (one storage slot per result, -1 for none); values with the same slot
    are never live at the same time and have identical buffer types and
    devices. Loop level: a top-level `loop.alloc` identical (type, device,
    constraint, scope) to a buffer `loop.free`d earlier in the same block
    reuses that buffer; its earlier `loop.free` is removed.

    With `report=true`, prints a remark per host function with the planned
    peak bytes of each device's pool (`loc: remark: plan-memory: @f: peak
    bytes per device: cpu:0 = 192 B, cpu:1 = 64 B`) on stderr, which
    `lamina-opt --verify-diagnostics` matches with `expected-remark`.

    Invariants: nothing else changes; a buffer is never shared across
    devices or with a function's parameters; every buffer is freed exactly
    once, after its last use; running the pass twice equals running it once.
    """

    name = "plan-memory"

    phases: ClassVar[frozenset[Phase]] = frozenset({Phase.LOWERING})
    requires: ClassVar[tuple[str, ...]] = ("lower-te",)

    report: bool = False
    """Print a remark per host function: the planned peak bytes of each device's pool."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        device = get_default_device(op)
        for func in op.ops:
            if isinstance(func, graph.FuncOp):
                plan_graph_function(func, device)
            elif isinstance(func, loop.FuncOp):
                plan_loop_function(func, device)
            else:
                continue
            if self.report and not func.is_declaration:
                _report(func, _kernel_device(func) or device)


def pool_bytes(func: graph.FuncOp | loop.FuncOp, default_device: DeviceAttr) -> dict[str, int]:
    """Planned peak bytes per device, read back from the IR: the sum of the sizes
    of the distinct buffers the function's body allocates on each device (graph
    level: one per storage slot; loop level: one per top-level `loop.alloc`)."""
    sizes: dict[str, int] = {}
    block = func.body.block
    seen: set[int] = set()
    for op in block.ops:
        if isinstance(op, loop.AllocOp):
            key = str(op.device or default_device)
            sizes[key] = sizes.get(key, 0) + _bytes(op.result.type)
            continue
        slots = op.attributes.get(STORAGE_ATTR)
        if not isinstance(slots, DenseArrayBase):
            continue
        for index, slot in enumerate(slots.get_values()):
            spec = result_buffer_spec(op, index)
            if slot < 0 or slot in seen or spec is None:
                continue
            seen.add(slot)
            key = str(spec.device or default_device)
            sizes[key] = sizes.get(key, 0) + _bytes(spec.type)
    return sizes


def _kernel_device(func: graph.FuncOp | loop.FuncOp) -> DeviceAttr | None:
    """A kernel's temporaries are on the device the kernel learned (its parameters')."""
    return arg_device(func, 0) if isinstance(func, loop.FuncOp) else None


def _bytes(mtype) -> int:
    from lamina.backends.llvm.conversion import element_size

    return prod(mtype.get_shape()) * element_size(mtype.element_type)


def _report(func: graph.FuncOp | loop.FuncOp, default_device: DeviceAttr) -> None:
    sizes = pool_bytes(func, default_device)
    if not sizes:
        return
    per_device = ", ".join(f"{d} = {b} B" for d, b in sorted(sizes.items()))
    message = f"plan-memory: @{func.sym_name.data}: peak bytes per device: {per_device}"
    emit_remark(Diagnostic(message, func, Severity.REMARK))


__all__ = ["PlanMemoryPass", "plan_graph_function", "plan_loop_function"]
