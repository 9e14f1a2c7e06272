"""Per-device memory at run time: one allocator and one set of counters per device.

`lower-to-llvm` turns every heap `loop.alloc {device}` into
`__lamina_device_alloc(slot, bytes)`, every `loop.free` into
`__lamina_device_free(ptr)` and a `loop.copy` between two different devices
into `__lamina_device_copy(dst_slot, src_slot, to, from, bytes)`. This module
holds those three functions as LLVM IR (so they are part of every JIT module,
`.o` and `.so` that needs them — no separate library to ship), linked in by
the code generator, and reads their counters back for the user.

The slot of a device is its index (`cpu:1` → 1): only the `cpu` kind is
compiled today (other kinds are refused at compile time), so the index
identifies the device. Each slot has its own counters — bytes allocated in
total, bytes live now, peak live bytes, bytes copied *to* it — updated with
atomic instructions (kernels may allocate temporaries on several threads).
Each allocation carries a 64-byte header recording its slot and size, so a
free is accounted to the device that allocated it.

`cpu:0` and `cpu:1` share the host's physical memory, but every buffer
belongs to exactly one device's allocator and a copy between them is a real
copy (a `memcpy` into the other device's buffer), counted on the destination.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

import llvmlite.binding as llvm
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from lamina.core.devices import arg_device
from lamina.core.diagnostics import op_error
from lamina.dialects.lamina import DeviceAttr, get_default_device

MAX_DEVICES = 16
"""Device slots per process-wide table (device indices 0..15)."""
COUNTERS = ("allocated", "live", "peak", "copied")
STATS_SYMBOL = "__lamina_device_stats"
ALLOC_SYMBOL = "__lamina_device_alloc"
FREE_SYMBOL = "__lamina_device_free"
COPY_SYMBOL = "__lamina_device_copy"
HEADER_BYTES = 64

RUNTIME_IR = f"""
@{STATS_SYMBOL} = linkonce_odr hidden global [{MAX_DEVICES * len(COUNTERS)} x i64] zeroinitializer, align 64

declare ptr @aligned_alloc(i64, i64)
declare void @free(ptr)
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)

define linkonce_odr hidden ptr @{ALLOC_SYMBOL}(i64 %slot, i64 %size) {{
  %total = add i64 %size, {HEADER_BYTES}
  %raw = call ptr @aligned_alloc(i64 {HEADER_BYTES}, i64 %total)
  %failed = icmp eq ptr %raw, null
  br i1 %failed, label %oom, label %ok
oom:                                      ; the caller reports it (backends/llvm_errors.py)
  ret ptr null
ok:
  store i64 %slot, ptr %raw
  %sizep = getelementptr i8, ptr %raw, i64 8
  store i64 %size, ptr %sizep
  %base = mul i64 %slot, {len(COUNTERS)}
  %allocp = getelementptr i64, ptr @{STATS_SYMBOL}, i64 %base
  %a = atomicrmw add ptr %allocp, i64 %size monotonic
  %livei = add i64 %base, 1
  %livep = getelementptr i64, ptr @{STATS_SYMBOL}, i64 %livei
  %old = atomicrmw add ptr %livep, i64 %size monotonic
  %new = add i64 %old, %size
  %peaki = add i64 %base, 2
  %peakp = getelementptr i64, ptr @{STATS_SYMBOL}, i64 %peaki
  %p = atomicrmw umax ptr %peakp, i64 %new monotonic
  %user = getelementptr i8, ptr %raw, i64 {HEADER_BYTES}
  ret ptr %user
}}

define linkonce_odr hidden void @{FREE_SYMBOL}(ptr %user) {{
  %raw = getelementptr i8, ptr %user, i64 -{HEADER_BYTES}
  %slot = load i64, ptr %raw
  %sizep = getelementptr i8, ptr %raw, i64 8
  %size = load i64, ptr %sizep
  %base = mul i64 %slot, {len(COUNTERS)}
  %livei = add i64 %base, 1
  %livep = getelementptr i64, ptr @{STATS_SYMBOL}, i64 %livei
  %old = atomicrmw sub ptr %livep, i64 %size monotonic
  call void @free(ptr %raw)
  ret void
}}

define linkonce_odr hidden void @{COPY_SYMBOL}(i64 %dst, i64 %src, ptr %to, ptr %from, i64 %size) {{
  call void @llvm.memcpy.p0.p0.i64(ptr %to, ptr %from, i64 %size, i1 false)
  %base = mul i64 %dst, {len(COUNTERS)}
  %copiedi = add i64 %base, 3
  %copiedp = getelementptr i64, ptr @{STATS_SYMBOL}, i64 %copiedi
  %c = atomicrmw add ptr %copiedp, i64 %size monotonic
  ret void
}}
"""


def device_slot(op: Operation, device: DeviceAttr | None) -> int:
    """The runtime slot of the device an allocation belongs to: its own `device`,
    else the device its kernel learned (`device` of the enclosing function's
    first parameter), else the module's default device."""
    func = op.parent_op()
    while device is None and func is not None:
        if func.name in ("loop.func", "llvm.func") and func.properties.get("arg_attrs"):
            device = arg_device(func, 0)
            break
        func = func.parent_op()
    if device is None:
        module = op.get_toplevel_object()
        device = get_default_device(module) if isinstance(module, ModuleOp) else None
    index = device.index.data if device is not None else 0
    if index >= MAX_DEVICES:
        raise op_error(op, f"device index {index} is out of range (at most {MAX_DEVICES} devices)")
    return index


def link_device_runtime(ref: llvm.ModuleRef) -> None:
    """Link the device runtime into `ref` if its code calls it (before optimization,
    so LLVM can inline the accounting into the host code)."""
    if not _declared(ref):
        return
    runtime = llvm.parse_assembly(RUNTIME_IR)
    runtime.triple = ref.triple
    runtime.data_layout = ref.data_layout
    ref.link_in(runtime)


def _declared(ref: llvm.ModuleRef) -> list[str]:
    names = {f.name for f in ref.functions}
    return [n for n in (ALLOC_SYMBOL, FREE_SYMBOL, COPY_SYMBOL) if n in names]


@dataclass(frozen=True)
class DeviceStats:
    """Counters of one device's allocator (bytes)."""

    allocated: int
    live: int
    peak: int
    copied: int


def read_device_stats(engine: llvm.ExecutionEngine) -> dict[int, DeviceStats]:
    """The counters of every device slot that was used, by slot (empty if the
    module never allocated on or copied to a device)."""
    address = engine.get_global_value_address(STATS_SYMBOL)
    if not address:
        return {}
    table = (ctypes.c_int64 * (MAX_DEVICES * len(COUNTERS))).from_address(address)
    stats = {}
    for slot in range(MAX_DEVICES):
        values = table[slot * len(COUNTERS) : (slot + 1) * len(COUNTERS)]
        if any(values):
            stats[slot] = DeviceStats(*values)
    return stats


def reset_device_stats(engine: llvm.ExecutionEngine) -> None:
    """Zero the counters (live bytes too: call between runs, when nothing is allocated)."""
    address = engine.get_global_value_address(STATS_SYMBOL)
    if address:
        ctypes.memset(address, 0, MAX_DEVICES * len(COUNTERS) * 8)


__all__ = [
    "device_slot",
    "ALLOC_SYMBOL",
    "COPY_SYMBOL",
    "FREE_SYMBOL",
    "MAX_DEVICES",
    "DeviceStats",
    "link_device_runtime",
    "read_device_stats",
    "reset_device_stats",
]
